"""Bad inputs: unserializable, huge, recursive, secret, hostile ``repr`` — recorded safely, never raised."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import subprocess
import sys
import textwrap
from typing import Any

import openprogram
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openprogram._calls import close_call, open_call
from openprogram._capture import REDACTED, capture, capture_json, dumps

from .conftest import one

SECRET = "hunter2-very-secret-value"


@openprogram.tool
def take(*args: Any, **kwargs: Any) -> Any:
    return kwargs.get("ret")


@openprogram.tool
def login(user: str, password: str, options: dict[str, Any] | None = None) -> str:
    return "ok"


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class StrRaisesError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


class Opaque:
    __slots__ = ("x",)

    def __init__(self) -> None:
        self.x = 1


@dataclasses.dataclass
class Creds:
    user: str
    api_key: str


def stored_text(store: openprogram.Store, session_id: str) -> str:
    """Everything recorded for the session, as one JSON string."""
    return json.dumps([c.to_dict() for c in store.list_calls(session_id)])


def test_unserializable_and_hostile_objects_are_described(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        take(ReprRaises(), Opaque(), {1, 2}, b"bytes", math.nan, 10**30, ret=ReprRaises())
        take(k=object())
    calls = [c for c in store.list_calls(h.session_id) if c.name == "take"]
    assert [c.status for c in calls] == ["ok", "ok"]
    first = calls[0].inputs
    assert first["*args[0]"] == "<ReprRaises object (repr failed)>"
    assert "Opaque object" in first["*args[1]"]
    assert first["*args[2]"] == [1, 2]
    assert first["*args[3]"] == "<bytes len=5>"
    assert first["*args[4]"] == "nan"
    assert first["*args[5]"] == str(10**30)
    assert calls[0].output == "<ReprRaises object (repr failed)>"
    assert "object object" in calls[1].inputs["k"]


def test_exception_whose_str_raises_is_recorded() -> None:
    err = StrRaisesError()
    assert capture(err) == "StrRaisesError: <str() failed>"
    from openprogram._recording import describe_error

    assert describe_error(err) == "StrRaisesError: <str() failed>"


def test_tool_raising_exception_whose_str_raises(store: openprogram.Store) -> None:
    err = StrRaisesError()

    @openprogram.tool
    def bad() -> None:
        raise err

    with openprogram.session_context(store=store) as h:
        try:
            bad()
        except StrRaisesError as caught:
            assert caught is err
    assert one(store, h.session_id, "bad").error == "StrRaisesError: <str() failed>"


def test_recursive_structures(store: openprogram.Store) -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    mapping: dict[str, Any] = {"a": 1}
    mapping["self"] = mapping
    with openprogram.session_context(store=store) as h:
        take(loop, m=mapping, ret=loop)
    call = one(store, h.session_id, "take")
    assert call.inputs["*args[0]"] == [1, "<recursive>"]
    assert call.inputs["m"] == {"a": 1, "self": "<recursive>"}
    assert call.output == [1, "<recursive>"]


def test_deep_nesting_is_bounded(store: openprogram.Store) -> None:
    deep: Any = "bottom"
    for _ in range(10_000):  # deeper than the interpreter's recursion limit
        deep = [deep]
    with openprogram.session_context(store=store) as h:
        take(deep)
    call = one(store, h.session_id, "take")
    assert call.status == "ok"
    assert "nested too deep" in json.dumps(call.inputs)


def test_huge_inputs_and_outputs_are_bounded(store: openprogram.Store) -> None:
    huge_text = "x" * 5_000_000
    many = {f"k{i}": "y" * 10_000 for i in range(1_000)}
    with openprogram.session_context(store=store) as h:
        take(huge_text, many=many, ret=list(range(1_000_000)))
    call = one(store, h.session_id, "take")
    assert len(json.dumps(call.inputs)) < 100_000
    assert len(json.dumps(call.output)) < 100_000
    assert call.inputs["*args[0]"].startswith("xxxx")
    assert "more chars" in call.inputs["*args[0]"]
    assert any("more items" in str(v) for v in call.output[-1:])
    assert len(stored_text(store, h.session_id)) < 1_000_000


def test_secrets_redacted_at_any_depth(store: openprogram.Store) -> None:
    payload = {
        "config": {"nested": [{"api_key": SECRET}, {"Authorization": SECRET}]},
        "headers": {"X-Auth-Token": SECRET, "cookie": SECRET},
        "clientSecret": SECRET,
        "db": {"PASSWORD": SECRET, "user": "bob"},
        "creds": Creds("bob", SECRET),
        "bearer": "Bearer abcdefghijklmnop",
        "openai": "sk-abcdefghijklmnopqrstuvwxyz",
    }
    with openprogram.session_context(store=store) as h:
        take(payload, token=SECRET, ret={"refresh_token": SECRET, "ok": True})
        login("bob", SECRET)  # positional: redacted by parameter name
        login(user="bob", password=SECRET, options={"secret": SECRET})
    assert SECRET not in stored_text(store, h.session_id)
    assert "abcdefghijklmnop" not in stored_text(store, h.session_id)
    call = one(store, h.session_id, "take")
    assert call.inputs["token"] == REDACTED
    assert call.inputs["*args[0]"]["db"] == {"PASSWORD": REDACTED, "user": "bob"}
    assert call.inputs["*args[0]"]["creds"] == {"user": "bob", "api_key": REDACTED}
    assert call.output == {"refresh_token": REDACTED, "ok": True}
    logins = [c for c in store.list_calls(h.session_id) if c.name == "login"]
    assert [c.inputs["password"] for c in logins] == [REDACTED, REDACTED]
    assert logins[0].inputs["user"] == "bob"


def test_secret_keys_spelled_with_acronyms_or_plurals_are_redacted() -> None:
    keys = ["DBPassword", "SMTPPassword", "APIToken", "JWTSecret", "OAuthToken", "passwords", "dbPassword"]
    captured = capture({key: "hunter2" for key in keys} | {"HTTPSProxy": "p", "maxTokens": 5})
    assert {key: captured[key] for key in keys} == dict.fromkeys(keys, REDACTED)
    assert captured["HTTPSProxy"] == "p" and captured["maxTokens"] == 5
    assert "hunter2" not in capture_json({"config": [{"user": "bob", "SMTPPassword": "hunter2"}]})


class _Connection:
    """An object the capture can only describe by its repr."""

    def __init__(self, **fields: str) -> None:
        self.fields = fields

    def __repr__(self) -> str:
        return "Connection(" + ", ".join(f"{k}={v!r}" for k, v in self.fields.items()) + ")"


class _Repr:
    """An object whose repr is the given text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def test_secret_fields_in_an_objects_repr_are_redacted() -> None:
    conn = _Connection(host="db", apiKey="k-1234567", dbPassword="hunter2", note="Bearer abcdefgh12345678")
    for text in (capture_json({"conn": conn}), capture_json([conn]), dumps(capture(conn))):
        assert "k-1234567" not in text and "hunter2" not in text and "abcdefgh12345678" not in text
        assert "host='db'" in text and f"apiKey={REDACTED}" in text
    nested = [
        _Connection(db="DB(password='hunter2', host='db')"),  # a field inside a field's value
        _Connection(options="{'password': 'hunter2'}"),  # a dict key
        _Connection(auth="('bob', 'hunter2')", port="5432"),  # a secret value that is a tuple
    ]
    for value in nested:
        text = capture_json({"value": value})
        assert "hunter2" not in text and REDACTED in text, text
    assert "5432" in capture_json([nested[2]])  # what follows the redacted group is kept
    more = [
        _Connection(token="Token(kind='bearer', value='hunter2')"),  # the whole object, not up to its first comma
        _Connection(password="b'hunter2 and more'"),  # a bytes literal, spaces and all
        _Connection(dsn="'postgres://admin:hunter2@db/app'"),
        "<User name: bob, password: hunter2>",  # a hand-written repr's name: value
        "{\"user's password\": 'hunter2'}",  # a quoted key with the other quote inside
    ]
    for value in more:
        captured = capture_json([_Repr(value) if isinstance(value, str) else value])
        assert "hunter2" not in captured and REDACTED in captured, captured
    ordinary = _Connection(equal="a==b", url="'https://example.com/x'", time="'12:30'")
    assert REDACTED not in capture_json([ordinary])  # comparisons, URLs and times are not fields


def test_a_repr_cut_through_a_secret_shows_none_of_it() -> None:
    # Redacting a long secret shrinks the text: what lay at the cut must not move into view.
    dsn = "postgres://admin:hunter2" + "x" * 400 + "@db/app"
    text = f"Conn(private_key='{'k' * 16_000}', dsn='{dsn}')"
    limit = 4096
    assert text.index("@") > 4 * limit > text.index("hunter2")  # the cut falls inside the DSN's password
    captured = capture_json([_Repr(text)])
    assert "hunter2" not in captured and "k" * 100 not in captured


def test_huge_texts_with_credential_markers_are_captured_in_linear_time() -> None:
    # A URL-password or repr-field scan tried at every letter of a long run, or run to the
    # end from every "x://", was quadratic: 40,000 letters and an "@" took 30 s inside the
    # recorded call, 150k chars of URLs 10 s; these would take hours.
    # In a child process: a regex holds the GIL, so no thread of this one could time it out.
    script = textwrap.dedent(
        """
        from openprogram._capture import capture_json, redact_error_text

        class Blob:
            def __init__(self, text): self.text = text
            def __repr__(self): return f"Blob(blob={self.text!r})"

        many_urls = "ops@example.com " + ",".join(f"http://svc{i}.internal:8080/health" for i in range(20_000))
        for text in ["a" * 400_000 + "@", "x://" + "a" * 400_000 + "@", "deadbeef" * 50_000, many_urls,
                     many_urls.replace(" ", "")]:
            capture_json({"text": text}), capture_json([Blob(text)]), redact_error_text(text)
        print("done")
        """
    )
    # A liveness bound, not a speed target: linear takes well under a second.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "done"


def test_credentials_quoted_in_error_messages_are_redacted(store: openprogram.Store) -> None:
    key = "sk-" + "A1b2" * 8

    @openprogram.tool
    def call_api(api_key: str) -> None:
        raise PermissionError(f"401 for key {key}; retry with Authorization: Bearer {key[3:]}")

    with openprogram.session_context(store=store) as h:
        with pytest.raises(PermissionError):
            call_api(key)
    openprogram.flush()
    assert key[3:] not in stored_text(store, h.session_id)
    assert one(store, h.session_id, "call_api").error == (
        f"PermissionError: 401 for key {REDACTED}; retry with Authorization: {REDACTED}"
    )


@pytest.mark.parametrize("value", [["\\" * 4096] * 20, ['"' * 4096] * 20, ["\\" * 4096] * 9])
def test_captures_of_quotes_and_backslashes_stay_under_the_bound(value: Any, store: openprogram.Store) -> None:
    # Escaping doubles these characters; the last-resort cut once went a few characters over 64 KiB.
    with openprogram.session_context(store=store) as h:
        take(value)
    openprogram.flush()
    call = one(store, h.session_id, "take")
    assert len(json.dumps(call.inputs, separators=(",", ":"))) <= 2 * 32 * 1024


def test_non_secret_keys_are_kept() -> None:
    kept = capture({"tokens_used": 5, "author": "ann", "max_tokens": 10, "query": "q"})
    # "token" and "auth" inside longer words are secrets only when they are whole words
    assert kept["author"] == "ann"
    assert kept["query"] == "q"


def test_invalid_unicode_survives_the_store(sqlite_url: str) -> None:
    with openprogram.session_context(store=sqlite_url) as h:
        take("lone surrogate \ud800 here", emoji="\U0001f600")
    call = one(openprogram.open_store(sqlite_url), h.session_id, "take")
    assert call.status == "ok"
    assert call.inputs["emoji"] == "\U0001f600"
    assert "lone surrogate" in call.inputs["*args[0]"]


def test_mutating_collection_while_capturing_never_raises() -> None:
    class Exploding(dict[str, int]):
        def items(self) -> Any:
            raise RuntimeError("items exploded")

    assert isinstance(capture(Exploding(a=1)), str)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(max_size=8),
    lambda children: (
        st.lists(children, max_size=6)
        | st.tuples(children, children)
        | st.dictionaries(
            st.text(max_size=12) | st.sampled_from(["password", "api_key", "Token", "x"]), children, max_size=6
        )
    ),
    max_leaves=40,
)


def _no_secret_values(value: Any) -> bool:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("password", "api_key", "Token") and item != REDACTED:
                return False
            if not _no_secret_values(item):
                return False
    elif isinstance(value, list):
        return all(_no_secret_values(v) for v in value)
    return True


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_capture_is_json_safe_bounded_and_redacted(value: Any) -> None:
    captured = capture(value)
    text = dumps(captured)
    assert json.loads(text) is not None or text == "null"
    json.dumps(captured, allow_nan=False)  # strictly JSON
    assert len(text) <= 2 * openprogram._capture.limits().max_chars
    assert _no_secret_values(captured)


def test_set_limits_applies() -> None:
    old = openprogram._capture.limits()
    try:
        openprogram.set_limits(openprogram.Limits(max_chars=200, max_string=10, max_items=3, max_depth=2))
        assert capture("abcdefghijklmnop").startswith("abcdefghij...")
        assert capture([1, 2, 3, 4, 5]) == [1, 2, 3, "...[2 more items]"]
        assert capture([[["deep"]]]) == [["<list nested too deep>"]]
        assert len(dumps(capture({str(i): "z" * 10 for i in range(100)}))) <= 400
    finally:
        openprogram.set_limits(old)


@pytest.fixture
def short_strings() -> Any:
    """``max_string=50`` for the test (restored after: the writer encodes scalars with the limits in force)."""
    old = openprogram._capture.limits()
    openprogram.set_limits(openprogram.Limits(max_string=50))
    yield
    openprogram.flush()
    openprogram.set_limits(old)


LONG = "y" * 200
CUT = "y" * 50 + "...[150 more chars]"


def test_max_string_cuts_a_tool_output_like_an_argument(store: openprogram.Store, short_strings: None) -> None:
    @openprogram.tool
    def echo(text: str) -> str:
        return text

    with openprogram.session_context(store=store) as h:
        assert echo(LONG) == LONG  # the caller gets it whole
    openprogram.flush()
    call = one(store, h.session_id, "echo")
    assert call.inputs == {"text": CUT}
    assert call.output == CUT


def test_max_string_cuts_every_path_s_output(store: openprogram.Store, short_strings: None) -> None:
    @openprogram.tool
    async def fetch(key: str) -> str:
        return LONG

    @openprogram.tool
    def lines() -> Any:
        yield LONG
        return LONG

    @openprogram.tool
    def generic(*parts: Any, **named: Any) -> str:  # with a keyword argument: the general sync path
        return LONG

    async def run() -> None:
        assert await fetch("k") == LONG

    with openprogram.session_context(store=store) as h:
        asyncio.run(run())
        assert list(lines()) == [LONG]
        assert generic(1, flag=True) == LONG
        with openprogram.call_scope("node", "scoped") as scope:
            scope.set_output(LONG)
        opened = open_call("node", "opened")
        assert opened is not None
        close_call(opened, output=LONG)
    openprogram.flush()
    assert one(store, h.session_id, "fetch").output == CUT
    assert one(store, h.session_id, "lines").output == {"yielded": [CUT], "count": 1, "returned": CUT}
    assert one(store, h.session_id, "generic").output == CUT
    assert one(store, h.session_id, "scoped").output == CUT
    assert one(store, h.session_id, "opened").output == CUT


SECRET_KEYS = [
    "password", "PASSWORD", "db_password", "pass_word", "passwd", "api_key", "apiKey", "OPENAI_API_KEY",
    "x-api-key", "X-Api-Key", "api-key", "Api Key", "private-key", "privateKey", "access-key", "SessionKey",
    "session_key", "client_secret", "clientSecret", "secret", "token", "refresh_token", "x-auth-token",
    "Authorization", "Proxy-Authorization", "cookie", "set-cookie", "credentials",
]  # fmt: skip
PLAIN_KEYS = ["author", "monkey", "keyboard", "tokenizer", "secretary", "key", "api", "user_id", "query"]


def test_secret_key_spellings_are_redacted() -> None:
    captured = capture({key: SECRET for key in SECRET_KEYS})
    assert {k: v for k, v in captured.items() if v != REDACTED} == {}


def test_plain_keys_are_kept() -> None:
    assert capture({key: "v" for key in PLAIN_KEYS}) == {key: "v" for key in PLAIN_KEYS}


def test_error_messages_are_bounded(store: openprogram.Store) -> None:
    @openprogram.tool
    def loud() -> None:
        raise ValueError("e" * 1_000_000)

    with openprogram.session_context(store=store) as h:
        with pytest.raises(ValueError):
            loud()
    error = one(store, h.session_id, "loud").error
    assert error is not None and error.startswith("ValueError: eee")
    assert len(error) < 10_000


def test_capturing_never_consumes_iterators(store: openprogram.Store) -> None:
    @openprogram.tool
    def total(values: Any) -> int:
        return sum(values)

    with openprogram.session_context(store=store) as h:
        assert total(i for i in range(4)) == 6
        assert total(iter([1, 2])) == 3
        assert total(range(3)) == 3
    assert [c.output for c in store.list_calls(h.session_id) if c.name == "total"] == [6, 3, 3]
