"""capture_json's secret pre-check: every credential the careful walk redacts sends the value to it."""

from __future__ import annotations

import json

from openprogram._capture import REDACTED, capture, capture_json

# One credential per alternative of the careful walk's credential pattern: the pre-check's
# substring scans must send each of them to the careful walk, wherever it sits.
_CREDENTIALS = (
    "Bearer abcdefgh12", "Bearer\tabcdefgh12", "Basic dXNlcjpwYXNz", "sk-abcdefghijklmnop1234",
    "ghp_" + "a" * 20, "gho_" + "b" * 20, "ghs_" + "c" * 20, "xoxb-1234567890", "xoxp-abcdefghij",
    "AKIA" + "A1B2C3D4E5F6G7H8", "AIza" + "x" * 30,
)  # fmt: skip


def test_every_kind_of_credential_string_is_redacted_by_the_fast_path() -> None:
    for credential in _CREDENTIALS:
        value = {"note": credential, "deep": [{"text": credential}], "n": [1, 2]}
        text = capture_json(value)
        assert credential not in text, credential
        assert json.loads(text) == json.loads(json.dumps(capture(value))) == {
            "note": REDACTED, "deep": [{"text": REDACTED}], "n": [1, 2],
        }, credential  # fmt: skip
