"""Hostile input: captures stay JSON-safe, bounded and redacted; bad session ids get a clear error."""

from __future__ import annotations

import io
import json
import string
import tempfile
from pathlib import Path
from typing import Any

import openprogram
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openprogram._capture import REDACTED, capture, capture_arguments, dumps, limits
from openprogram._cli import main as cli_main
from openprogram._runtime import MAX_ID_LENGTH

#: The last-resort bound enforced by ``dumps``: twice ``max_chars`` of JSON, plus its small wrapper
#: (a preview of escape-heavy JSON doubles in size once escaped again).
HARD_BOUND = 2 * limits().max_chars + 64

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")

    def __str__(self) -> str:
        raise RuntimeError("str exploded")


class ReprReturnsNonStr:
    def __repr__(self) -> Any:
        return 42


class EqRaises:
    def __eq__(self, other: object) -> bool:
        raise TypeError("no eq")

    def __lt__(self, other: object) -> bool:
        raise TypeError("no order")

    __hash__ = object.__hash__


class HugeRepr:
    def __repr__(self) -> str:
        return "r" * 5_000_000


class BadMapping(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items exploded")


def recursive_list() -> list[Any]:
    a: list[Any] = [1]
    a.append(a)
    return a


def recursive_dict() -> dict[str, Any]:
    d: dict[str, Any] = {"k": 1}
    d["self"] = {"again": d}
    return d


odd_text = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()),  # includes lone surrogates and controls
    max_size=200,
)
huge_text = st.integers(min_value=10_000, max_value=3_000_000).map(lambda n: '\ud800x\x00"\\é' * (n // 6))
hostile_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(10**4000),
    st.floats(allow_nan=True, allow_infinity=True),
    odd_text,
    huge_text,
    st.binary(max_size=64),
    st.builds(ReprRaises),
    st.builds(ReprReturnsNonStr),
    st.builds(EqRaises),
    st.builds(HugeRepr),
    st.builds(lambda: BadMapping(a=1)),
    st.builds(recursive_list),
    st.builds(recursive_dict),
    st.builds(lambda: frozenset({EqRaises(), EqRaises()})),
    st.builds(lambda: ValueError("\udcff")),
    st.builds(lambda: list(range(1_000_000))),
    st.builds(lambda: {str(i): i for i in range(200_000)}),
)
hostile = st.recursive(
    hostile_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=8),
        st.dictionaries(st.one_of(odd_text, st.integers(), st.builds(ReprRaises)), children, max_size=8),
        st.tuples(children, children),
        st.sets(st.integers(), max_size=5),
    ),
    max_leaves=30,
)


@SETTINGS
@given(hostile)
def test_capture_is_json_safe_and_bounded(value: Any) -> None:
    captured = capture(value)
    text = dumps(captured)
    assert len(text) <= HARD_BOUND
    json.loads(text)  # valid JSON
    text.encode("utf-8")  # valid UTF-8: no lone surrogate survives into a store


SECRET_KEYS = [
    "password",
    "PASSWORD",
    "api_key",
    "apiKey",
    "x-api-key",
    "Api Key",
    "client_secret",
    "Authorization",
    "db_password",
    "accessToken",
    "refresh_token",
    "cookie",
    "privateKey",
    "private-key",
    "AWS_SECRET_ACCESS_KEY",
]
SECRET_VALUES = ["Bearer abcdefghijklmnop", "sk-" + "a" * 32, "ghp_" + "b" * 36, "AKIA" + "C" * 16]


@st.composite
def with_secrets(draw: st.DrawFn) -> tuple[Any, str]:
    marker = "S3CR3T" + draw(st.text(alphabet=string.ascii_letters, min_size=8, max_size=8))
    key = draw(st.sampled_from(SECRET_KEYS))
    depth = draw(st.integers(min_value=0, max_value=limits().max_depth - 2))
    value: Any = {key: marker}
    for _ in range(depth):
        wrap = draw(st.sampled_from(["dict", "list", "tuple"]))
        noise = draw(st.text(max_size=5))
        value = {noise + "x": value, "n": 1} if wrap == "dict" else [value, noise] if wrap == "list" else (noise, value)
    return value, marker


@SETTINGS
@given(with_secrets())
def test_secret_keys_are_redacted_at_any_depth(case: tuple[Any, str]) -> None:
    value, marker = case
    text = dumps(capture(value))
    assert marker not in text
    assert REDACTED in text or "nested too deep" in text or "truncated" in text


@SETTINGS
@given(st.sampled_from(SECRET_VALUES), st.text(max_size=20))
def test_secret_looking_values_are_redacted(secret: str, key: str) -> None:
    assume(key)
    text = dumps(capture({"key" + key: secret, "list": [secret]}))
    assert secret not in text


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_every_listed_secret_key_is_redacted(key: str) -> None:
    assert capture({key: "hunter2-value"}) == {key: REDACTED}


def test_positional_secret_argument_is_redacted() -> None:
    captured = capture_arguments(("user", "password"), ("ann", "hunter2-long"), None)
    assert captured == {"user": "ann", "password": REDACTED}


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_tool_records_hostile_arguments_and_results(kind: str, sqlite_store: openprogram.Store) -> None:
    # The tool gets the very objects it was passed and returns its result unchanged; the store keeps
    # bounded, valid captures of both, and every call is recorded.
    args: list[Any] = [
        ReprRaises(),
        recursive_list(),
        "\ud800" * 100_000,
        {"password": "hunter2", "k": HugeRepr()},
        10**5000,
        list(range(500_000)),
    ]
    received: list[Any] = []

    @openprogram.tool
    def sync_echo(*values: Any, **named: Any) -> Any:
        received.extend(values)
        return values

    @openprogram.tool
    async def async_echo(*values: Any, **named: Any) -> Any:
        received.extend(values)
        return values

    async with openprogram.session_context(store=sqlite_store) as h:
        for value in args:
            result = sync_echo(value, token="abc") if kind == "sync" else await async_echo(value, token="abc")
            assert result[0] is value
        with pytest.raises(ValueError):
            await _raise_odd(kind)
    assert all(a is b for a, b in zip(received, args, strict=True))
    assert await openprogram.flush_async()
    calls = [c for c in sqlite_store.list_calls(h.session_id) if c.kind == "tool"]
    assert len(calls) == len(args) + 1
    for call in calls:
        for field in (call.inputs, call.output):
            assert len(json.dumps(field)) <= HARD_BOUND
        assert "hunter2" not in json.dumps(call.inputs)
        assert "abc" not in json.dumps(call.inputs)
    assert calls[-1].status == "error" and calls[-1].error is not None


async def _raise_odd(kind: str) -> None:
    @openprogram.tool
    def odd() -> None:
        raise ValueError("\udcff" * 10_000)

    odd()


# --- session ids --------------------------------------------------------------------------------

VALID_ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}", fullmatch=True)
BAD_IDS = st.one_of(
    st.just(""),
    st.text(min_size=MAX_ID_LENGTH + 1, max_size=5000, alphabet=string.ascii_letters),
    st.builds(lambda a, b: a + "/" + b, VALID_ID, st.text(max_size=5)),
    st.builds(lambda a: "../" + a, VALID_ID),
    st.builds(lambda a: a + "\\x", VALID_ID),
    st.builds(lambda a, c: a + c, VALID_ID, st.sampled_from(["\x00", "\n", "\r", "\x1b[31m", "\t", " ", "\u202e"])),
    st.builds(lambda a: a + "\ud800", VALID_ID),
    st.builds(lambda a: "-" + a, VALID_ID),
    st.builds(lambda a: "." + a, VALID_ID),
)


@SETTINGS
@given(BAD_IDS)
def test_invalid_session_ids_get_a_clear_error(session_id: str) -> None:
    store = openprogram.open_store("memory://")
    with pytest.raises(openprogram.InvalidSessionId) as info:
        openprogram.session_context(session_id, store=store)
    message = str(info.value)
    assert "session id" in message
    assert "\n" not in message and "\x00" not in message and len(message) < 400
    with pytest.raises(openprogram.InvalidSessionId):
        openprogram.session_context("ok", turn_id=session_id, store=store)
    with pytest.raises(openprogram.InvalidSessionId):
        openprogram.session_context("ok", agent_id=session_id, store=store)


@pytest.mark.parametrize("bad", [12, b"abc", ["x"]])
def test_non_string_ids_are_rejected(bad: Any) -> None:
    with pytest.raises(openprogram.InvalidSessionId, match="must be a str"):
        openprogram.session_context(bad)


@settings(max_examples=60, deadline=None)
@given(VALID_ID)
def test_valid_session_ids_round_trip(session_id: str) -> None:
    store = openprogram.open_store("memory://")
    with openprogram.session_context(session_id, store=store) as h:
        assert h.session_id == session_id
    assert openprogram.flush()
    info = store.get_session(session_id)
    assert info is not None and info.call_count == 1


@pytest.mark.parametrize("bad", ["../../etc/passwd", "a/b", "x" * 500, "a\nb", "\x1b[2J"])
def test_cli_show_rejects_bad_ids(bad: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli_main(["--store", f"sqlite:///{tmp_path / 'cli.db'}", "show", bad], out=io.StringIO())
    assert status == 2
    err = capsys.readouterr().err
    assert "session id" in err and err.count("\n") == 1


def test_one_huge_int_does_not_lose_the_other_arguments() -> None:
    captured = capture({"n": 10**5000, "query": "kept"})
    assert captured["query"] == "kept"
    assert "bits" in captured["n"]


# --- spill files --------------------------------------------------------------------------------

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    odd_text,
    st.sampled_from(["ok", "running", "llm", "turn", "s1", "c1", "{not json", '{"usage": {"input_tokens": 1e999}}']),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)),
    max_leaves=12,
)
GOOD_CALL = ["c1", "s1", "t1", None, "tool", "step", None, "ok", '{"i":1}', "1", None, None, 1.7e9, 1.7e9 + 1, "o"]


@st.composite
def spill_lines(draw: st.DrawFn) -> str:
    """A spill line: a record of the writer's with some fields replaced by anything JSON can hold, or garbage."""
    kind = draw(st.sampled_from(["call", "session", "alias", "message", "garbage"]))
    if kind == "garbage":
        return draw(st.one_of(odd_text, st.just("[" * 5000), st.just('{"call": "' + "x" * 100_000)))
    row: list[Any] = {
        "call": list(GOOD_CALL),
        "session": ["s1", "main", 1.7e9, 1.7e9 + 1],
        "alias": ["ns", "key", "s1", 1.7e9],
        "message": ["s1", "m1", '{"role":"user"}'],
    }[kind]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        row[draw(st.integers(min_value=0, max_value=len(row) - 1))] = draw(json_value)
    if draw(st.booleans()):
        row[0] = draw(st.sampled_from(["c1", "c2", "s1"]))
        if kind == "call":
            row[3] = draw(st.sampled_from([None, "c1", "c2"]))  # parents that may loop
    return json.dumps({kind: row}, allow_nan=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(spill_lines(), max_size=8))
def test_import_of_any_spill_file_answers_and_what_it_imports_sessions_and_show_read(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        spill = Path(folder) / "spill.jsonl"
        spill.write_text("\n".join(lines) + "\n", errors="surrogatepass")
        url = f"sqlite:///{folder}/target.db"
        assert cli_main(["--store", url, "import", str(spill)], out=io.StringIO()) in (0, 1)
        store = openprogram.open_store(url)
        for info in store.list_sessions():
            out = io.StringIO()
            assert cli_main(["--store", url, "show", info.session_id], out=out) == 0
            assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()
            assert cli_main(["--store", url, "show", info.session_id, "--json"], out=out) == 0
        written = (Path(folder) / "target.db").exists()  # nothing imported, nothing written: no store to read
        assert cli_main(["--store", url, "sessions"], out=io.StringIO()) == (0 if written else 1)
        if written:
            json.loads(_sessions_json(url))
        store.close()


def _sessions_json(url: str) -> str:
    out = io.StringIO()
    assert cli_main(["--store", url, "sessions", "--json"], out=out) == 0
    return out.getvalue()
