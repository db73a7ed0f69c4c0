"""A session named by a unique start of its id (``openprogram show 9c52``), on every backend."""

from __future__ import annotations

import openprogram
import pytest
from openprogram._cli import SessionNotFound, find_session
from openprogram.stores import Store


def _record(store: Store, *session_ids: str) -> None:
    for session_id in session_ids:
        with openprogram.session_context(session_id, store=store):
            pass
    assert openprogram.flush()


def test_a_unique_prefix_finds_its_session_and_a_shared_one_names_every_candidate(store: Store) -> None:
    _record(store, "run-a1", "run-a2", "run_b", "solo", "abc")

    assert find_session(store, "so").session_id == "solo"
    assert find_session(store, "run_").session_id == "run_b"  # "_" is a character of the id, never a wildcard
    assert find_session(store, "run-a1").session_id == "run-a1"
    with pytest.raises(SessionNotFound, match=r"'run-a' is the start of 2 session ids") as shared:
        find_session(store, "run-a")
    assert "run-a1" in str(shared.value) and "run-a2" in str(shared.value) and "run_b" not in str(shared.value)
    with pytest.raises(SessionNotFound, match=r"no session 'zzz' \(nor one whose id starts with it\)"):
        find_session(store, "zzz")


def test_a_whole_id_wins_over_the_longer_ids_it_starts(store: Store) -> None:
    _record(store, "job", "job-2", "job-3")

    assert find_session(store, "job").session_id == "job"
    with pytest.raises(openprogram.InvalidSessionId):
        find_session(store, "bad id!")
