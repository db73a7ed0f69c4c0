"""Calls made with no session open: the ``auto`` (default), ``warn`` and ``error`` policies."""

from __future__ import annotations

import logging
from pathlib import Path

import openprogram
import pytest
from openprogram._calls import close_call, open_call
from openprogram._recording import CALL_ID

from .conftest import one, run_python


@openprogram.tool
def orphan(x: int) -> int:
    return x + 1


def test_auto_is_the_default_logs_the_id_and_exposes_it(caplog: pytest.LogCaptureFixture, isolated_home: Path) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    assert openprogram.implicit_session() is None
    assert orphan(1) == 2
    assert orphan(2) == 3
    handle = openprogram.implicit_session()
    assert handle is not None
    assert openprogram.get_current_session() is None  # nothing left installed
    messages = [r.getMessage() for r in caplog.records if handle.session_id in r.getMessage()]
    assert len(messages) == 1, "the id is logged once"
    assert f"openprogram show {handle.session_id}" in messages[0]
    assert "session_context" in messages[0]
    # Recorded in the default store, under the implicit turn.
    store = openprogram.open_store()
    assert store.url.endswith(str(isolated_home / "sessions.db"))
    calls = [c for c in store.list_calls(handle.session_id) if c.name == "orphan"]
    assert [c.output for c in calls] == [2, 3]
    assert {c.parent_id for c in calls} == {handle.root_call_id}


def test_auto_session_can_be_continued_by_id(store: openprogram.Store) -> None:
    orphan(0)
    handle = openprogram.implicit_session()
    assert handle is not None
    openprogram.flush()
    with openprogram.session_context(handle.session_id) as h:
        assert h.created is False


def test_warn_runs_unrecorded_with_one_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_NO_SESSION", "warn")
    caplog.set_level(logging.WARNING, logger="openprogram")
    assert orphan(1) == 2
    assert orphan(2) == 3
    assert openprogram.implicit_session() is None
    warnings = [r for r in caplog.records if "no session open" in r.getMessage()]
    assert len(warnings) == 1
    assert "session_context" in warnings[0].getMessage()


def test_error_policy_raises_naming_the_fix() -> None:
    openprogram.configure(no_session="error")
    ran: list[int] = []

    @openprogram.tool
    def guarded() -> None:
        ran.append(1)

    with pytest.raises(openprogram.NoSessionError, match="session_context") as info:
        guarded()
    assert isinstance(info.value, RuntimeError)
    assert "run_with_session" in str(info.value)
    assert ran == []
    with pytest.raises(openprogram.NoSessionError):
        with openprogram.call_scope("node", "n"):
            pass
    with pytest.raises(openprogram.NoSessionError):
        open_call("node", "n")


def test_a_policy_configured_after_the_implicit_session_opened_applies(isolated_home: Path) -> None:
    assert orphan(1) == 2  # opens the implicit session (policy auto)
    handle = openprogram.implicit_session()
    assert handle is not None
    openprogram.configure(no_session="error")
    with pytest.raises(openprogram.NoSessionError):  # used to record into the implicit session
        orphan(2)
    openprogram.configure(no_session="warn")
    assert orphan(3) == 4  # runs, unrecorded
    openprogram.configure(no_session="auto")
    assert orphan(4) == 5
    openprogram.flush()
    calls = [c for c in openprogram.open_store().list_calls(handle.session_id) if c.name == "orphan"]
    assert [c.output for c in calls] == [2, 5]


def test_policies_do_not_apply_inside_a_session(store: openprogram.Store) -> None:
    openprogram.configure(no_session="error")
    with openprogram.session_context(store=store) as h:
        assert orphan(1) == 2
    assert one(store, h.session_id, "orphan").output == 2


def test_configure_rejects_unknown_policies() -> None:
    with pytest.raises(ValueError, match="auto, warn, error"):
        openprogram.configure(no_session="silent")


def test_call_scope_follows_the_policy() -> None:
    with openprogram.call_scope("node", "lonely") as scope:
        assert scope.recording
    handle = openprogram.implicit_session()
    assert handle is not None
    [node] = [c for c in openprogram.open_store().list_calls(handle.session_id) if c.kind == "node"]
    assert node.parent_id == handle.root_call_id


def test_open_call_follows_the_policy_and_restores_the_context() -> None:
    opened = open_call("node", "lonely", "tests", {"x": 1}, '{"step":1}')
    assert opened is not None
    handle = openprogram.get_current_session()
    assert handle is not None and handle is openprogram.implicit_session()
    assert openprogram.current_call_id() == opened[0][CALL_ID]
    close_call(opened, None, {"y": 2}, attributes={"extra": True})
    assert openprogram.get_current_session() is None and openprogram.current_call_id() is None
    [node] = [c for c in openprogram.open_store().list_calls(handle.session_id) if c.kind == "node"]
    assert node.parent_id == handle.root_call_id
    assert (node.inputs, node.output, node.status) == ({"x": 1}, {"y": 2}, "ok")
    assert node.attributes == {"step": 1, "extra": True}


def test_misconfigured_store_does_not_break_tools_outside_a_session(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", "bogus://nowhere")
    caplog.set_level(logging.WARNING, logger="openprogram")
    assert orphan(1) == 2
    assert orphan(2) == 3
    with openprogram.call_scope("node", "n") as scope:
        assert not scope.recording
    assert "bogus://nowhere" in caplog.text
    assert len([r for r in caplog.records if "bogus://nowhere" in r.getMessage()]) == 1


def test_implicit_session_turn_is_closed_at_exit(tmp_path: Path) -> None:
    db = tmp_path / "exit.db"
    result = run_python(
        """
        import openprogram
        @openprogram.tool
        def t(): return 1
        t()
        print(openprogram.implicit_session().session_id)
        """,
        env={**__import__("os").environ, "OPENPROGRAM_STORE": f"sqlite:///{db}"},
    )
    assert result.returncode == 0, result.stderr
    session_id = result.stdout.strip()
    assert session_id in result.stderr  # logged, with how to continue it
    calls = {c.kind: c for c in openprogram.open_store(f"sqlite:///{db}").list_calls(session_id)}
    assert calls["turn"].status == "ok"
    assert calls["tool"].status == "ok"
    assert calls["turn"].attributes == {"implicit": True, "created": True}


def test_the_implicit_session_follows_the_default_store_in_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A suite giving each test its own store: each test's no-session calls land in its own store.
    first_url, second_url = (f"sqlite:///{tmp_path / name / 'sessions.db'}" for name in ("first", "second"))
    monkeypatch.setenv("OPENPROGRAM_STORE", first_url)
    assert orphan(1) == 2
    first = openprogram.implicit_session()
    assert first is not None and first.store is openprogram.open_store(first_url)
    monkeypatch.setenv("OPENPROGRAM_STORE", second_url)
    assert openprogram.implicit_session() is None, "no implicit session in the new store yet"
    assert orphan(2) == 3
    second = openprogram.implicit_session()
    assert second is not None and second.session_id != first.session_id
    assert second.store is openprogram.open_store(second_url)
    openprogram.flush()
    [in_first] = [c for c in first.store.list_calls(first.session_id) if c.name == "orphan"]
    [in_second] = [c for c in second.store.list_calls(second.session_id) if c.name == "orphan"]
    assert (in_first.output, in_second.output) == (2, 3)
    assert [s.session_id for s in second.store.list_sessions()] == [second.session_id]
    # The first implicit session's turn ended when its store stopped being the default.
    [turn] = [c for c in first.store.list_calls(first.session_id) if c.kind == "turn"]
    assert turn.status == "ok" and turn.ended_at is not None


def test_the_implicit_session_follows_openprogram_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "one"))
    orphan(1)
    first = openprogram.implicit_session()
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "two"))
    orphan(2)
    second = openprogram.implicit_session()
    assert first is not None and second is not None and first.session_id != second.session_id
    assert second.store.url.endswith(str(tmp_path / "two" / "sessions.db"))


def test_the_implicit_session_stays_while_its_store_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'kept.db'}")
    orphan(1)
    first = openprogram.implicit_session()
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "elsewhere"))  # OPENPROGRAM_STORE still decides
    orphan(2)
    assert openprogram.implicit_session() is first
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'other.db'}")
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'kept.db'}")  # back before any call
    orphan(3)
    assert openprogram.implicit_session() is first
    openprogram.flush()
    assert first is not None
    assert [c.output for c in first.store.list_calls(first.session_id) if c.name == "orphan"] == [2, 3, 4]


def test_a_session_exported_by_the_parent_is_joined_in_the_new_default_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_SESSION_ID", "parent-session")
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'one.db'}")
    orphan(1)
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'two.db'}")
    orphan(2)
    handle = openprogram.implicit_session()
    assert handle is not None and handle.session_id == "parent-session"
    assert handle.store is openprogram.open_store(f"sqlite:///{tmp_path / 'two.db'}")
    openprogram.flush()
    assert [c.output for c in handle.store.list_calls("parent-session") if c.name == "orphan"] == [3]
