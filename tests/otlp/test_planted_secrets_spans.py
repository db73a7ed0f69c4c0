"""The 50 planted secrets of ``tests/core/test_planted_secrets.py`` reach no span built from their record."""

from __future__ import annotations

from pathlib import Path

import openprogram
from openprogram._otlp import default_resource, spans_of_calls

from tests.core.test_planted_secrets import leaked, record_planted


def test_planted_secrets_do_not_reach_the_spans(tmp_path: Path) -> None:
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'planted.db'}")
    session_id = record_planted(store)
    assert openprogram.flush()
    spans = spans_of_calls(store.iter_calls(session_id), default_resource(), content=True)
    assert len(spans) > 40
    assert leaked(repr([(span.name, dict(span.attributes or {})) for span in spans])) == []
