"""capture_json: the C-encoder fast path agrees with the careful walk wherever redaction or bounds matter."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openprogram._capture import REDACTED, capture, capture_json, limits


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Weird:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_plain_data_is_encoded_as_is() -> None:
    value = {"query": "weather", "n": 3, "tags": ["a", "b"], "point": Point(1, 2), "ok": True, "none": None}
    assert json.loads(capture_json(value)) == {
        "query": "weather", "n": 3, "tags": ["a", "b"], "point": {"x": 1, "y": 2}, "ok": True, "none": None,
    }  # fmt: skip


def test_secrets_are_redacted_at_any_depth() -> None:
    value = {"outer": [{"api_key": "k-123", "inner": {"Authorization": "x"}}], "note": "Bearer abcdefghijklmnop"}
    text = capture_json(value)
    assert "k-123" not in text and "abcdefghijklmnop" not in text
    decoded = json.loads(text)
    assert decoded["outer"][0]["api_key"] == REDACTED
    assert decoded["outer"][0]["inner"]["Authorization"] == REDACTED
    assert decoded["note"] == REDACTED


def test_connection_string_passwords_are_redacted() -> None:
    text = capture_json({"dsn": "postgresql://bob:hunter2@db/x"})
    assert "hunter2" not in text


def test_recursive_and_unrepresentable_values_fall_back_safely() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert json.loads(capture_json(loop)) == [1, "<recursive>"]
    assert "repr failed" in json.loads(capture_json(Weird()))
    assert json.loads(capture_json({1: float("nan")})) == {"1": "nan"}


def test_huge_values_are_bounded() -> None:
    text = capture_json({"blob": "x" * 1_000_000, "many": list(range(100_000))})
    assert len(text) <= 2 * limits().max_chars


json_values = st.recursive(
    # integers within int64: beyond it the careful walk writes them as strings, the encoder as exact numbers
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_agrees_with_the_careful_walk_on_small_values(value: Any) -> None:
    assert json.loads(capture_json(value)) == json.loads(json.dumps(capture(value)))


def test_captures_are_plain_str_and_attributes_match_the_careful_walk() -> None:
    from openprogram._capture import mapping_json

    assert type(capture_json({"a": [1, 2]})) is str
    for value in (
        {"step": 3, "task_id": "abc", "ns": None, "ok": True, "ratio": 0.5},
        {"api_key": "sk-123456789012345678901234", "note": "Bearer abcdefghijklmnop"},
        {"dsn": "postgresql://bob:hunter2@db/x"},
        {"nested": {"a": 1}},
        {1: "non-str key"},
    ):
        assert type(mapping_json(value)) is str
        assert json.loads(mapping_json(value)) == json.loads(json.dumps(capture(value))), value


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(["sk-" + "a" * 24, "Bearer abcdefghijklmnop", "postgresql://u:pw@h/db", "my password is x"]),
)  # fmt: skip
_names = st.lists(
    st.one_of(st.text(min_size=1, max_size=12), st.sampled_from(["api_key", "token", "a%s", "%", "password"])),
    min_size=1, max_size=5, unique=True,
)  # fmt: skip


@given(_names, st.data())
@settings(max_examples=300, deadline=None)
def test_the_writers_argument_json_agrees_with_the_careful_walk(names: list[str], data: st.DataObject) -> None:
    from openprogram._capture import arguments_json, capture_arguments, dumps

    args = tuple(data.draw(st.lists(_scalars, max_size=len(names))))
    got = arguments_json(tuple(names), args, None)
    assert json.loads(got) == json.loads(dumps(capture_arguments(tuple(names), args, None)))


# Keys and texts built to probe the secret-key scan: secret keys, harmless keys holding a key
# word ("input_tokens", "keyboard"), key words inside values, and quotes, backslashes, colons
# and non-ASCII characters next to them.
_key_parts = st.sampled_from(
    ["api_key", "apiKey", "token", "input_tokens", "keyboard", "author", "Authorization", "passage",
     "x-api-key", "secret", "pwd", "cookie", "signature", "name", "id", '"', "\\", ":", '":', "é", " ", "_"]
)  # fmt: skip
_probe_text = st.lists(_key_parts, min_size=1, max_size=4).map("".join)
_probe_values = st.recursive(
    st.none() | st.integers(-5, 5) | _probe_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_probe_text, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_probe_values)
def test_secret_keys_are_found_wherever_key_words_appear(value: Any) -> None:
    assert json.loads(capture_json(value)) == json.loads(json.dumps(capture(value)))


def test_key_words_in_values_and_harmless_keys_keep_the_fast_text() -> None:
    from openprogram._capture import fast_encode, needs_care

    harmless = {"usage": {"input_tokens": 3, "output_tokens": 5}, "note": 'the "tokens": in a value', "k": "keyboard",
                "arguments": '{"api_keys_used": 2, "q": "a\\\\"}', "path\\": 'C:\\'}  # fmt: skip
    assert not needs_care(fast_encode(harmless))
    # A secret's name inside a string is free text the rules redact (a model's tool-call arguments).
    for secret in ({"arguments": '{"api_key": "x", "q": "a\\\\"}'}, {"note": 'the "token": is in a value'},
                   {"usage": {"input_tokens": 3}, "x-api-key": "v"}, {"a": {"refreshToken": "v"}}, {'q"token': "v"},
                   {'token"q': "v"}, {"note": 'x\\', "api_key\\": "v"}, {"k": '"', "secret": "v"},
                   {"clé_secret": "v"}):  # fmt: skip
        assert needs_care(fast_encode(secret)), secret
    assert capture(secret)["clé_secret"] == REDACTED
    assert json.loads(capture_json({"outer": {"input_tokens": 1, "apiToken": "s3cr3t"}})) == {
        "outer": {"input_tokens": 1, "apiToken": REDACTED}
    }


def test_every_secret_word_spelled_as_a_key_is_redacted_on_the_fast_path_too() -> None:
    # needs_care spells its key words out as one expression (cheaper than any() over them); a
    # secret word holding none of them would let a secret key keep the fast, unredacted text.
    from openprogram._capture import SECRET_COMPOUNDS, SECRET_WORDS, dumps

    for word in (*SECRET_WORDS, *SECRET_COMPOUNDS):
        for key in (word, word.upper(), f"x-{word}", f"my{word.capitalize()}"):
            # alone, and beside a harmless key holding a key word ("input_tokens")
            for value in ({key: "s3cr3t-value"}, {"usage": {"input_tokens": 3}, "outer": {key: "s3cr3t-value"}}):
                text = capture_json(value)
                assert "s3cr3t-value" not in text, key
                assert text == dumps(capture(value)), key


def test_a_secret_named_after_an_escaped_letter_is_redacted_on_the_fast_path() -> None:
    # The encoder writes "é" as \u00e9: its last digit read as a letter of "api_key", so the precheck let it pass.
    assert json.loads(capture_json("éapi_key:api_key")) == "éapi_key:[redacted]"
