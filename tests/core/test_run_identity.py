"""``session_for_run``: a framework's own run identity (a thread id, a flow id) maps to one session."""

from __future__ import annotations

import logging
import uuid

import openprogram
import pytest
from openprogram._sessions import session_for_run

from .conftest import run_python


def test_outside_a_session_the_identity_derives_a_stable_session() -> None:
    ctx = session_for_run("langgraph", "thread-derive")
    assert ctx is not None
    with ctx as h:
        pass
    assert h.session_id == "langgraph-thread-derive"
    again = session_for_run("langgraph", "thread-derive")
    assert again is not None
    with again as h2:
        assert h2.created is False
    weird = session_for_run("crewai", "has spaces/and slashes " * 10)
    assert weird is not None
    openprogram._runtime.validate_session_id(weird.session_id)


def test_inside_a_session_the_identity_is_bound_to_it_across_processes() -> None:
    with openprogram.session_context() as h:
        assert session_for_run("langgraph", "thread-bound") is None
    result = run_python(
        """
        from openprogram._sessions import session_for_run
        ctx = session_for_run("langgraph", "thread-bound")
        with ctx as h:
            print(h.session_id, h.created)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [h.session_id, "False"]


def test_an_identity_bound_in_another_store_continues_there_in_this_process() -> None:
    first, second = openprogram.open_store("memory://"), openprogram.open_store("memory://")
    with openprogram.session_context(store=first) as h:
        assert session_for_run("langgraph", "thread-elsewhere") is None
    ctx = session_for_run("langgraph", "thread-elsewhere")
    assert ctx is not None
    with ctx as resumed:
        assert (resumed.session_id, resumed.store, resumed.created) == (h.session_id, first, False)
    with openprogram.session_context("moved", store=second):  # bound again: the last binding wins
        assert session_for_run("langgraph", "thread-elsewhere") is None
    again = session_for_run("langgraph", "thread-elsewhere")
    assert again is not None
    with again as moved:
        assert (moved.session_id, moved.store) == ("moved", second)
    result = run_python(  # another process only has the default store to look in
        """
        from openprogram._sessions import session_for_run
        with session_for_run("langgraph", "thread-elsewhere") as h:
            print(h.session_id, h.created)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["langgraph-thread-elsewhere", "True"]


def test_not_auto_policy_returns_none() -> None:
    openprogram.configure(no_session="warn")
    assert session_for_run("langgraph", "thread-warn") is None


def test_misconfigured_store_never_raises_into_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", "bogus://nowhere")
    assert session_for_run("langgraph", "thread-misconfigured") is None


# --- run_session: the one no-session rule ------------------------------------------------------


def test_a_run_without_a_conversation_records_into_the_implicit_session(caplog: pytest.LogCaptureFixture) -> None:
    from openprogram._sessions import last_run_session_id, run_session

    caplog.set_level(logging.INFO, logger="openprogram")
    assert run_session("toy", "run 'a'") is None  # nothing to enter: the run's calls take the implicit session
    implicit = openprogram.implicit_session()
    assert implicit is not None and last_run_session_id("toy") == implicit.session_id
    assert run_session("toy", "run 'b'") is None
    said = [r for r in caplog.records if implicit.session_id in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]
    assert "configure(no_session=" in said[0].getMessage()


def test_a_conversation_session_is_announced_once_per_session(caplog: pytest.LogCaptureFixture) -> None:
    from openprogram._sessions import last_run_session_id, run_session

    caplog.set_level(logging.INFO, logger="openprogram")
    for _ in range(3):
        entry = run_session("toy", "run 'c'", "conversation-1", conversation="chat 'conversation-1'")
        assert entry is not None
        with entry as handle:
            pass
    assert last_run_session_id("toy") == handle.session_id == "toy-conversation-1"
    said = [r.getMessage() for r in caplog.records if handle.session_id in r.getMessage()]
    assert len(said) == 1 and "chat 'conversation-1'" in said[0] and "openprogram show toy-conversation-1" in said[0]


def test_a_new_conversation_gets_a_new_session_named_after_its_key() -> None:
    from openprogram._sessions import run_session

    sessions = []
    for _ in range(2):
        entry = run_session("toy", "run 'd'", "1", new=True)
        assert entry is not None
        with entry as handle:
            sessions.append(handle.session_id)
    assert sessions[0] != sessions[1] and all(s.startswith("toy-1-") for s in sessions)


def test_a_new_conversation_draws_nothing_from_uuid4(monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs make ``uuid4`` deterministic in their tests (LangGraph's own suite does); a draw of
    ours would shift every id the program makes after it."""
    from openprogram._sessions import run_session

    drawn: list[uuid.UUID] = []
    real = uuid.uuid4
    monkeypatch.setattr(uuid, "uuid4", lambda: drawn.append(real()) or drawn[-1])
    entry = run_session("toy", "run 'g'", "2", new=True)
    assert entry is not None
    with entry:
        pass
    assert drawn == []


def test_an_unbound_key_continues_the_session_of_an_earlier_identity() -> None:
    from openprogram._sessions import run_session

    with openprogram.session_context() as h:
        assert session_for_run("toy.state", "older") is None  # bound to h
    entry = run_session("toy", "run 'e'", "newer", namespace="toy.state", earlier=["unknown", "older"])
    assert entry is not None
    with entry as resumed:
        assert resumed.session_id == h.session_id
    fresh = run_session("toy", "run 'f'", "newest", namespace="toy.state", earlier=["unknown"])
    assert fresh is not None
    with fresh as derived:
        assert derived.session_id == "toy.state-newest"
