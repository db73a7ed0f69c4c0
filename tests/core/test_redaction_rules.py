"""The credential rule set: each format is found anywhere in a text, benign text is left alone, and
the encoder's fast path sends every text a rule matches to the careful walk."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from typing import Any

import pytest
from openprogram._capture import REDACTED, capture, capture_json, dumps, fast_encode, needs_care, redact_text


def _random(alphabet: str, n: int, seed: int) -> str:
    pick = random.Random(seed)
    return "".join(pick.choice(alphabet) for _ in range(n))


_B62 = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_PEM_BODY = "\n".join(_random(_B62 + "+/", 64, n) for n in range(6))
_RSA_BLOCK = f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM_BODY}\n-----END RSA PRIVATE KEY-----"
_KEY = _random(_B62, 40, 1)

# (rule, text holding a secret, the secret): every rule has a case, and the secret is somewhere in the text.
CASES = [
    ("private key block", f"key:\n{_RSA_BLOCK}\nok", _PEM_BODY),
    ("private key block", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_PEM_BODY}", _PEM_BODY),  # cut short
    ("URL password", "connect to postgresql://app:pa/ss#w0rd@db.internal/prod now", "pa/ss#w0rd"),
    ("URL password", "mysql://root:p@ssw0rd@db:3306/x", "p@ssw0rd"),
    ("OpenAI, Anthropic and other sk- keys", f"my key is sk-proj-{_KEY}, use it", _KEY),
    ("OpenAI, Anthropic and other sk- keys", "sk-ant-api03-" + _random(_B62, 48, 2), _random(_B62, 48, 2)),
    ("Stripe key", "STRIPE=sk_live_" + _random(_B62, 24, 3), _random(_B62, 24, 3)),
    ("Stripe key", "restricted rk_live_" + _random(_B62, 24, 4) + " key", _random(_B62, 24, 4)),
    ("AWS access key id", "id AKIA" + _random(_UPPER, 16, 5) + " region us-east-1", "AKIA" + _random(_UPPER, 16, 5)),
    ("AWS access key id", "temporary ASIA" + _random(_UPPER, 16, 6), "ASIA" + _random(_UPPER, 16, 6)),
    ("GitHub token", "push with ghp_" + _random(_B62, 36, 7), _random(_B62, 36, 7)),
    ("GitHub token", "gho_" + _random(_B62, 36, 8) + " ghu_" + _random(_B62, 36, 9), _random(_B62, 36, 9)),
    ("GitHub token", "ghs_" + _random(_B62, 36, 10) + "; ghr_" + _random(_B62, 36, 11), _random(_B62, 36, 11)),
    ("GitHub token", "token github_pat_11A" + _random(_B62 + "_", 79, 12), _random(_B62 + "_", 79, 12)),
    ("GitLab token", "glpat-" + _random(_B62, 20, 13) + " for the runner", _random(_B62, 20, 13)),
    ("Slack token", "bot xoxb-1234567890-" + _random(_B62, 24, 14), _random(_B62, 24, 14)),
    ("Slack token", "app xapp-1-A0" + _random(_UPPER, 10, 15) + "-1234-" + _random(_B62, 30, 15), "-1234-"),
    ("Google API key", "maps key AIza" + _random(_B62 + "_-", 35, 16), _random(_B62 + "_-", 35, 16)),
    (
        "JWT",
        "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _random(_B62 + "_-", 43, 17) + " expired",
        _random(_B62 + "_-", 43, 17),
    ),
    ("Bearer or Basic credentials", "curl -H 'x: Bearer " + _random(_B62, 32, 18) + "' url", _random(_B62, 32, 18)),
    ("Bearer or Basic credentials", "sent Basic dXNlcjpodW50ZXIy to the proxy", "dXNlcjpodW50ZXIy"),
    ("secret-named command-line option", "mysql -u root --password hunter2secret db", "hunter2secret"),
    ("secret-named command-line option", "gh auth login --with-token 'tok en value'", "tok en value"),
    ("secret-named value", "aws_secret_access_key = " + _random(_B62 + "/+", 40, 19), _random(_B62 + "/+", 40, 19)),
    ("secret-named value", "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=Sup3r;Secret;Encrypt=yes", "Sup3r"),
    ("secret-named value", "Server=db;Database=app;User Id=sa;Password={p;w;d};", "{p;w;d}"),
    ("secret-named value", '{"client_secret": "cs-value-1234", "grant_type": "client_credentials"}', "cs-value-1234"),
    ("secret-named value", 'args: {\\"api_key\\": \\"escaped-9876\\"}', "escaped-9876"),
    ("secret-named value", "export PGPASSWORD=pg-pass-42 && psql", "pg-pass-42"),
    ("secret-named value", "GET /v1?q=1&api_key=qk-value-77&page=2", "qk-value-77"),
    ("secret-named value", "Authorization: token opaque-value-55\nAccept: */*", "opaque-value-55"),
    ("secret-named value", "Cookie: session=abc123; csrf=def456\nHost: x", "csrf=def456"),
    ("secret-named value", "run --token=tk-value-31 now", "tk-value-31"),
    ("secret-named value", "db:\n  password: yaml-pass-8\n  host: db", "yaml-pass-8"),
    ("secret-named value", "settings(passwd='py-pass-3', user='ann')", "py-pass-3"),
    ("secret-named value", "clientSecret => 'rb-secret-5'", "rb-secret-5"),
]

# Ordinary text no rule may touch: prose, ids, hashes, paths, code, logs, URLs without passwords.
BENIGN = [
    "The agent read the report and summarised its key points for the user.",
    "Basic Configuration and Bearer authentication are described in section 4.",
    "Bearer tokens expire after an hour; the password policy asks for 12 characters.",
    "The token count was 1,204 (input_tokens: 900, output_tokens: 304).",
    "token_count: 12, max_tokens=256, tokens_used: 40",
    "password_policy: strict; password_min_length = 12",
    "Use the key: the one under the mat. Key: value pairs are fine.",
    "The sk-learn-style estimators and the task-management tool are ready.",
    "Ask the author: she knows the authentication flow.",
    "PWD=/home/ann/projects/openprogram",
    "pwd: /srv/app",
    "password: null, token: None, secret = true, auth: false",
    "See https://example.com/docs/auth?page=2#tokens and mailto:ann@example.com",
    "ops@example.com reported the outage at 12:30 UTC",
    "git clone git@github.com:org/repo.git",
    "http://svc1.internal:8080/health, http://svc2.internal:8080/health",
    "/usr/lib/python3.11/site-packages/openprogram/_capture/credentials.py",
    "C:\\Users\\ann\\AppData\\Local\\Temp\\token_cache.json",
    "~/.ssh/id_ed25519.pub and ~/.aws/config",
    "def authenticate(user: str, password_hash: bytes) -> bool: ...",
    "if token == expected and key in cache: return cache[key]",
    "x = {'a': 1, 'b': [1, 2, 3]}; y = x['a'] + 2",
    "2026-12-07T01:13:55Z INFO worker-3 request_id=5f0c2a1e status=200 duration_ms=41",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Ann <ann@example.com>",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Key points:\n- retention\n- access\n- cost",
    "| name | value |\n|---|---|\n| key | 3 |",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0D\n-----END PUBLIC KEY-----",
    "AKIA is the prefix of AWS access key ids; ASIA of temporary ones.",
    "eyJ is how base64 of a JSON object starts.",
    "Signed-off-by: Ann <ann@example.com>",
    "ghp_ and github_pat_ are GitHub token prefixes; glpat- is GitLab's.",
    "The cookie banner and the secret garden are both unrelated.",
    "--verbose --output out.json --keys-file keys.txt",
]
BENIGN += [str(uuid.UUID(int=random.Random(n).getrandbits(128))) for n in range(40)]
BENIGN += [hashlib.sha1(str(n).encode()).hexdigest() for n in range(40)]
BENIGN += [hashlib.sha256(str(n).encode()).hexdigest() for n in range(20)]
BENIGN += [
    base64.b64encode(f"an ordinary sentence number {n}, nothing secret in it".encode()).decode() for n in range(30)
]
BENIGN += [f"/var/log/app/{n:04d}/worker-{n % 7}.log" for n in range(20)]


@pytest.mark.parametrize(("rule", "text", "secret"), CASES)
def test_each_rule_finds_its_credential_anywhere_in_a_text(rule: str, text: str, secret: str) -> None:
    from openprogram._capture import may_hold_credential

    redacted = redact_text(text)
    assert secret not in redacted and REDACTED in redacted, redacted
    assert may_hold_credential(text)


def test_every_rule_has_a_case() -> None:
    from openprogram._capture import RULES

    assert {rule.name for rule in RULES} == {case[0] for case in CASES}


def test_what_names_a_secret_and_what_frames_it_is_kept() -> None:
    assert redact_text("my key is sk-proj-" + "Ab3dEf6hIj9kLmNoPqRs") == f"my key is {REDACTED}"
    assert redact_text("postgres://bob:hunter2@db/x") == f"postgres://bob:{REDACTED}@db/x"
    assert redact_text('{"password": "hunter2", "user": "ann"}') == f'{{"password": "{REDACTED}", "user": "ann"}}'
    assert redact_text("Uid=sa;Pwd=hunter2;Database=y") == f"Uid=sa;Pwd={REDACTED};Database=y"
    assert redact_text("mysql --password hunter2 -u root") == f"mysql --password {REDACTED} -u root"
    assert redact_text("Authorization: Bearer abc123def456") == f"Authorization: {REDACTED}"
    assert redact_text("Bearer abcdefghijklmnop") == REDACTED  # a text that is one credential goes whole


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text
    assert json.loads(capture_json({"text": text, "items": [text]})) == {"text": text, "items": [text]}


def test_the_benign_corpus_is_large() -> None:
    assert len(BENIGN) >= 180


def _planted(text: str) -> list[Any]:
    return [{"note": text}, {"deep": [{"text": text}]}, [text], {"messages": [{"role": "user", "content": text}]}]


@pytest.mark.parametrize(("rule", "text", "secret"), CASES)
def test_the_fast_path_sends_every_credential_to_the_careful_walk(rule: str, text: str, secret: str) -> None:
    for value in _planted(text):
        assert needs_care(fast_encode(value)), value
        captured = capture_json(value)
        assert secret not in captured
        assert captured == dumps(capture(value))


def test_header_lists_and_argv_name_their_secret_values() -> None:
    value = {
        "headers": [("Authorization", "opaque-1"), ("Accept", "*/*"), ["X-Api-Key", "opaque-2"]],
        "argv": ["mysql", "-u", "root", "--password", "opaque-3", "--db", "app"],
        "env": ["--token", "opaque-4"],
    }
    captured = capture_json(value)
    assert all(f"opaque-{n}" not in captured for n in range(1, 5)), captured
    assert json.loads(captured) == {
        "headers": [["Authorization", REDACTED], ["Accept", "*/*"], ["X-Api-Key", REDACTED]],
        "argv": ["mysql", "-u", "root", "--password", REDACTED, "--db", "app"],
        "env": ["--token", REDACTED],
    }
    assert json.loads(capture_json(["--verbose", "x", ["tokens", 3]])) == ["--verbose", "x", ["tokens", 3]]


def test_an_exception_returned_as_a_value_is_redacted_like_an_error() -> None:
    key = "sk-" + "A1b2" * 8
    for value in (PermissionError(f"401 for key {key}"), {"result": ValueError(f"bad key {key}")}):
        captured = capture_json(value)
        assert key[3:] not in captured and REDACTED in captured, captured


def test_a_url_password_holding_a_slash_is_redacted_inside_a_dict() -> None:
    captured = capture_json({"dsn": "postgresql://app:pa/ss@db/prod"})
    assert "pa/ss" not in captured and json.loads(captured) == {"dsn": f"postgresql://app:{REDACTED}@db/prod"}


def test_a_secret_at_the_cut_of_a_long_string_is_not_shown() -> None:
    key = "sk-" + "Z9y8" * 10
    text = "x" * 4090 + " " + key + " " + "y" * 2000
    captured = capture_json({"text": text})
    assert "Z9y8" not in captured
