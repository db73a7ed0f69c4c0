"""``session_for_run``: a framework's own run identity (a thread id, a flow id) maps to one session."""

from __future__ import annotations

import openprogram
import pytest
from openprogram._session import session_for_run

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
    openprogram._ids.validate_session_id(weird.session_id)


def test_inside_a_session_the_identity_is_bound_to_it_across_processes() -> None:
    with openprogram.session_context() as h:
        assert session_for_run("langgraph", "thread-bound") is None
    result = run_python(
        """
        from openprogram._session import session_for_run
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
        from openprogram._session import session_for_run
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
