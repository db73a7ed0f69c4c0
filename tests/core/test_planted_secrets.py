"""Fifty planted secrets go through a recorded session (tools and model calls): none reaches the
store's rows, a spill file or the spans OTLP export would send."""

from __future__ import annotations

import random
import sqlite3
import string
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram import _recording
from openprogram._kit import ModelCall, message, model_inputs, reply, tool_call, usage


def _random(n: int, seed: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    pick = random.Random(seed)
    return "".join(pick.choice(alphabet) for _ in range(n))


def _secret(seed: int) -> str:
    """A value no text of the record holds by chance: a planted secret is found by it."""
    return "Q" + _random(23, seed)


S = [_secret(n) for n in range(50)]
_AWS_ID = "AKIA" + _random(16, 99, string.ascii_uppercase + string.digits)
_PEM = f"-----BEGIN PRIVATE KEY-----\nMIIEvQ{S[12]}\n{_random(64, 7)}\n-----END PRIVATE KEY-----"

# (where it is planted, the text or value): each holds one secret of S (or the AWS id).
IN_MESSAGES = [
    f"my key is sk-proj-{S[0]}, please use it",
    f"Here is the Anthropic key sk-ant-api03-{S[1]} for the job",
    f"Session token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{S[2]}",
    f"push with github_pat_11A{S[3]}_{S[3]}",
    f"ghp_{S[4]}abcdefghijkl is the PAT",
    f"the OAuth app token gho_{S[5]}abcdefghijkl",
    f"gitlab: glpat-{S[6]}",
    f"Slack bot xoxb-1234567890-{S[7]}",
    f"stripe sk_live_{S[8]}",
    f"maps AIza{S[9]}abcdefghijklm",
    f"curl -H 'Authorization: Bearer {S[10]}' https://api.example.com",
    f"my AWS key id is {_AWS_ID}",
    f"and the private key:\n{_PEM}",
    f"aws_secret_access_key = {S[13]}/{S[13]}",
    f"DSN: postgresql://app:{S[14]}/x@db.internal/prod",
    f"Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={S[15]};Encrypt=yes",
    f"Server=db;User Id=sa;Password={S[16]};",
    f"export OPENAI_API_KEY={S[17]}",
    f"db:\n  password: {S[18]}\n  host: db",
    f"Cookie: session={S[19]}; theme=dark",
]
MODEL_REPLIES = [
    f"Sure, I stored your key sk-proj-{S[0]} in the vault.",  # repeated by the model
    f"Use `mysql --password {S[20]} -u root` to connect.",
    f'{{"client_secret": "{S[21]}"}}',
]
TOOL_INPUTS: list[Any] = [
    {"headers": [("Authorization", f"Bearer {S[22]}"), ("X-Api-Key", S[23])]},
    {"argv": ["deploy", "--token", S[24], "--verbose"]},
    {"argv": ["deploy", f"--api-key={S[25]}"]},
    {"url": f"https://api.example.com/v1?q=x&api_key={S[26]}&page=2"},
    {"text": "x" * 4090 + f" sk-{S[27]} " + "y" * 3000},  # a secret at the cut of a long string
    {"request": f'{{"password": "{S[28]}"}}'},  # JSON text inside a string
    {"nested": {"deep": [{"note": f"rk_live_{S[29]}"}]}},
    f"a plain str argument holding xoxp-{S[30]}",
    {"proxy": f"http://user:{S[31]}@proxy:3128"},
    {"form": f"grant_type=client_credentials&client_secret={S[32]}"},
]
TOOL_OUTPUTS: list[Any] = [
    f"a plain str result with ghs_{S[33]}abcdefghijkl",
    {"file": f"[default]\naws_access_key_id = {_AWS_ID}\naws_secret_access_key = {S[34]}\n"},
    ValueError(f"returned, not raised: bad key sk-{S[35]}"),  # an exception as a value
    {"error": PermissionError(f"401 Bearer {S[36]}")},
    {"log": "\n".join(f"line {n}: ok" for n in range(40)) + f"\nAuthorization: Basic {S[37]}=="},
    [("Authorization", S[38])],
    {"env": ["PGPASSWORD", S[39]]},
    {"yaml": f"token: {S[40]}"},
    {"jwt": f"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhIn0.{S[41]}"},
    {"pem": _PEM.replace(S[12], S[42])},
]
RAISED = [
    f"connection to mysql://root:{S[43]}@db failed",
    f"401 Unauthorized for key sk-{S[44]}",
    f"token ghu_{S[45]}abcdefghijkl was revoked",
]
MODEL_FAILURES = [f"gateway said: invalid x-api-key: {S[46]}", f"bad Authorization: Bearer {S[47]}"]
TOOL_CALL_ARGUMENTS = [f'{{"api_key": "{S[48]}", "q": "weather"}}', f'{{"query": "use sk-{S[49]}"}}']


class Client:
    model = "fake-model"


def record_planted(store: openprogram.Store) -> str:
    """A session that carries every planted secret through tools and model calls; its id."""
    client = Client()

    @openprogram.tool
    def use(value: Any) -> Any:
        return value

    @openprogram.tool
    def fail(text: str) -> None:
        raise RuntimeError(text)

    with openprogram.session_context(store=store) as h:
        history = [message("system", "You are helpful.")]
        for n, text in enumerate(IN_MESSAGES):
            history.append(message("user", text))
            answer = MODEL_REPLIES[n % len(MODEL_REPLIES)]
            arguments = TOOL_CALL_ARGUMENTS[n % len(TOOL_CALL_ARGUMENTS)]
            call = ModelCall.request("tests", "fake-model", lambda: model_inputs(list(history)), client=client)
            assert call is not None
            with call:
                pass
            call.answered(reply(answer, tool_calls=[tool_call(f"c{n}", "use", arguments)]), usage(10, 3))
            history.append(message("assistant", answer))
        for text in MODEL_FAILURES:
            call = ModelCall.request("tests", "fake-model", lambda: model_inputs(list(history)), client=client)
            assert call is not None
            call.failed(ConnectionError(text))
        for value in TOOL_INPUTS + TOOL_OUTPUTS:
            use(value)
        for text in RAISED:
            with pytest.raises(RuntimeError):
                fail(text)
    return h.session_id


def leaked(text: str) -> list[str]:
    return [secret for secret in [*S, _AWS_ID] if secret in text]


def _all_rows(path: Path) -> str:
    with sqlite3.connect(path) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"'))


def test_planted_secrets_do_not_reach_the_store(tmp_path: Path) -> None:
    """The spans built from the same record are checked in ``tests/otlp`` (OpenTelemetry is not installed here)."""
    path = tmp_path / "planted.db"
    store = openprogram.open_store(f"sqlite:///{path}")
    record_planted(store)
    assert openprogram.flush()
    rows = _all_rows(path)
    assert "fake-model" in rows and "please use it" in rows and "returned, not raised" in rows  # the record is there
    assert leaked(rows) == []


def test_planted_secrets_do_not_reach_a_spill_file(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 5)
    unwritable = tmp_path / "not-a-file.db"
    unwritable.mkdir()  # SQLite cannot open a directory: every write fails, as root too
    store = openprogram.open_store(f"sqlite:///{unwritable}")
    try:
        record_planted(store)
        openprogram.flush()
        spills = sorted((isolated_home / "spill").glob("*.jsonl"))
        assert spills, "nothing spilled"
        spilled = "\n".join(spill.read_text() for spill in spills)
        assert "fake-model" in spilled and "please use it" in spilled
        assert leaked(spilled) == []
    finally:
        unwritable.rmdir()  # the store works again: what is still pending is written, not spilled forever
        for state in list(_recording.writer._states.values()):
            state.retry_at = 0.0
        openprogram.flush()
