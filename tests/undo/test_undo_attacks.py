"""Undo cannot be turned against its user: symbolic links swapped in after a snapshot, a link planted at a
temporary name, and effect rows forged, edited or journaled elsewhere are refused, writing nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram import _cli
from openprogram.stores import EffectRow, Store

from tests.support import calls


def _changed_by_a_tool(store: Store, path: Path, change: Any) -> str:
    """Run a tool that changes ``path`` inside ``file_effect``; the session's id."""

    @openprogram.tool
    def edit() -> None:
        with openprogram.file_effect(path):
            change()

    with openprogram.session_context(store=store) as h:
        edit()
    return h.session_id


def _swap_for_a_link(directory: Path, to: Path) -> None:
    """What the agent (or anyone who can write there) does between the snapshot and the undo."""
    directory.rename(directory.with_name(directory.name + ".moved"))
    directory.symlink_to(to, target_is_directory=True)


def _refused(store: Store, session_id: str, match: str) -> None:
    with pytest.raises(openprogram.UndoError, match=match):
        openprogram.undo(session_id, store=store)


def test_a_parent_directory_swapped_for_a_symlink_makes_the_file_restore_refuse(store: Store, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.yaml").write_text("debug: false\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.yaml").write_text("the user's other file\n")
    session_id = _changed_by_a_tool(store, work / "config.yaml", lambda: (work / "config.yaml").write_text("x"))

    _swap_for_a_link(work, elsewhere)

    _refused(store, session_id, f"{work} is not the directory snapshotted")
    assert (elsewhere / "config.yaml").read_text() == "the user's other file\n"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["config.yaml"]


def test_a_parent_directory_swapped_for_a_symlink_makes_the_directory_restore_refuse(
    store: Store, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "project").mkdir(parents=True)
    (workspace / "project" / "a.txt").write_text("a")
    outside = tmp_path / "outside"
    (outside / "project").mkdir(parents=True)
    (outside / "project" / "keys.txt").write_text("not in the snapshot")
    session_id = _changed_by_a_tool(
        store, workspace / "project", lambda: (workspace / "project" / "a.txt").write_text("b")
    )

    _swap_for_a_link(workspace, outside)

    _refused(store, session_id, "is not the directory snapshotted")
    assert sorted(p.name for p in (outside / "project").iterdir()) == ["keys.txt"]


def test_an_absent_snapshot_never_removes_through_a_swapped_parent(store: Store, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside"
    (outside / "build").mkdir(parents=True)
    (outside / "build" / "thesis.tex").write_text("years of work")
    session_id = _changed_by_a_tool(store, workspace / "build", (workspace / "build").mkdir)

    _swap_for_a_link(workspace, outside)

    _refused(store, session_id, "is not the directory snapshotted")
    assert (outside / "build" / "thesis.tex").read_text() == "years of work"


def test_a_directory_below_the_snapshotted_one_swapped_for_a_symlink_is_refused(store: Store, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "report.txt").write_text("someone else's report")
    report = workspace / "out" / "report.txt"  # `out` does not exist yet when the snapshot is taken

    def write() -> None:
        report.parent.mkdir()
        report.write_text("new")

    session_id = _changed_by_a_tool(store, report, write)
    _swap_for_a_link(workspace / "out", outside)

    _refused(store, session_id, "out is no longer a directory")
    assert (outside / "report.txt").read_text() == "someone else's report"


def test_a_symlink_planted_at_the_old_temporary_name_is_not_written_through(store: Store, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("debug: false\n")
    config.chmod(0o644)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    victim.chmod(0o600)
    session_id = _changed_by_a_tool(store, config, lambda: config.write_text("debug: true\n"))
    planted = tmp_path / f".config.yaml.openprogram-undo-{os.getpid()}"
    planted.symlink_to(victim)

    openprogram.undo(session_id, store=store)

    assert victim.read_text() == "the user's file\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert not config.is_symlink() and config.read_text() == "debug: false\n"
    assert stat.S_IMODE(config.stat().st_mode) == 0o644


# --- rows in the store -----------------------------------------------------------------------------


def _row(session_id: str, turn_id: str, kind: str, name: str, inputs: object, **columns: Any) -> EffectRow:
    """An effect row as another program (or a worker of another machine) could write it into a shared store."""
    values: dict[str, Any] = dict(
        effect_id=f"forged-{time.monotonic_ns()}",
        call_id="c-forged",
        session_id=session_id,
        turn_id=turn_id,
        kind=kind,
        name=name,
        framework=None,
        state="applied",
        inputs=json.dumps(inputs),
        output=None,
        started_at=time.time(),
        ended_at=time.time(),
        owner=f"{socket.gethostname()}:1:x",
        claimed_by=None,
        claimed_at=None,
        undo_call_id=None,
        error=None,
    )
    values.update(columns)
    return tuple(values.values())  # type: ignore[return-value]


def _session_with_a_turn(store: Store) -> tuple[str, str]:
    with openprogram.session_context(store=store) as h:
        pass
    return h.session_id, h.turn_id


def test_a_forged_row_pointing_its_snapshot_at_a_private_file_is_refused(store: Store, tmp_path: Path) -> None:
    secret = tmp_path / "ssh" / "id_ed25519"
    secret.parent.mkdir()
    secret.write_bytes(b"PRIVATE KEY")
    secret.chmod(0o600)
    leaked = tmp_path / "public" / "key.txt"
    leaked.parent.mkdir()
    session_id, turn_id = _session_with_a_turn(store)
    meta = {
        "path": str(leaked),
        "host": socket.gethostname(),
        "type": "file",
        "mode": 0o644,
        "size": 11,
        "sha256": hashlib.sha256(b"PRIVATE KEY").hexdigest(),
        "snapshot": str(secret),
    }
    store.add_effects([_row(session_id, turn_id, "file", f"file {leaked}", meta)])

    _refused(store, session_id, "undo refuses unverified effect forged-.*: its journal row is not signed")
    assert not leaked.exists()


def test_the_plan_shows_the_path_restore_acts_on_and_a_forged_row_is_refused_there(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    important = tmp_path / "important"
    important.mkdir()
    (important / "data").write_text("keep")
    session_id, turn_id = _session_with_a_turn(store)
    harmless = tmp_path / "scratch.tmp"
    meta = {"path": str(important), "host": socket.gethostname(), "type": "absent"}
    store.add_effects([_row(session_id, turn_id, "file", f"file {harmless}", meta)])

    out = io.StringIO()
    status = _cli.main(["--store", store.url, "undo", session_id, "--yes"], out=out)

    assert status == 1 and (important / "data").read_text() == "keep"
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("  1. ")]
    assert "REFUSED: its journal row is not signed" in line and "remove it" not in line
    assert "undo refuses unverified effect" in capsys.readouterr().err


def test_the_plan_of_a_file_effect_names_the_path_its_restore_touches(store: Store, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    notes = tmp_path / "alias" / "notes.txt"
    notes.write_text("v1")
    session_id = _changed_by_a_tool(store, notes, lambda: notes.write_text("v2"))

    out = io.StringIO()
    assert _cli.main(["--store", store.url, "undo", session_id, "--dry-run"], out=out) == 0

    (effect,) = openprogram.undo(session_id, dry_run=True, store=store)
    assert effect.inputs["path"] == str(real / "notes.txt")
    assert f"1. file {real / 'notes.txt'} (call {effect.call_id})  restore it" in out.getvalue()


def test_an_effect_row_edited_in_the_store_is_refused(stores: Any, tmp_path: Path) -> None:
    url = stores.url("sqlite")
    store = openprogram.open_store(url)
    target = tmp_path / "notes.txt"
    target.write_text("v1")
    elsewhere = tmp_path / "elsewhere.txt"
    session_id = _changed_by_a_tool(store, target, lambda: target.write_text("v2"))
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        (inputs,) = conn.execute("SELECT inputs FROM effects WHERE session_id = ?", (session_id,)).fetchone()
        conn.execute("UPDATE effects SET inputs = ?", (inputs.replace(str(target), str(elsewhere)),))

    _refused(store, session_id, "signature does not match this machine's undo key")
    assert not elsewhere.exists() and target.read_text() == "v2"


def test_an_effect_output_edited_in_the_store_is_refused(stores: Any) -> None:
    url = stores.url("sqlite")
    store = openprogram.open_store(url)
    deleted: list[object] = []

    @openprogram.tool
    def create_ticket(title: str) -> str:
        return "T1"

    create_ticket.undo(lambda effect: deleted.append(effect.output))
    with openprogram.session_context(store=store) as h:
        create_ticket("a")
    openprogram.flush()
    (row,) = store.list_effects(h.session_id)
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE effects SET output = ?", (row[9].replace('"T1"', '"T-other-team"'),))

    _refused(store, h.session_id, "signature does not match")
    assert deleted == []


def test_a_row_journaled_on_another_machine_is_refused_even_when_it_names_this_host(
    shared_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = openprogram.open_store(shared_url)
    target = tmp_path / "notes.txt"
    target.write_text("v1")
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "other-machine"))  # its own undo key
    session_id = _changed_by_a_tool(store, target, lambda: target.write_text("v2"))
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "this-machine"))
    (effect,) = openprogram.undo(session_id, dry_run=True, store=store)
    assert effect.inputs["host"] == socket.gethostname()  # what the row says

    _refused(store, session_id, "journaled on another machine sharing this store")
    assert target.read_text() == "v2"


def test_a_row_without_a_signature_is_refused_with_the_reason(store: Store) -> None:
    cancelled: list[object] = []

    @openprogram.tool
    def order(item: str) -> str:
        return item

    order.undo(cancelled.append)
    session_id, turn_id = _session_with_a_turn(store)
    store.add_effects([_row(session_id, turn_id, "tool", "order", {"item": "a"}, output='"a"')])

    (planned,) = openprogram.undo(session_id, dry_run=True, store=store)
    assert planned.refused is not None and "older than signed effects" in planned.refused

    _refused(store, session_id, "journaled by an openprogram older than signed effects")
    assert cancelled == [] and [c.kind for c in calls(store, session_id)].count("undo") == 0


def test_unknown_undo_does_not_override_a_refusal(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    cancelled: list[object] = []

    @openprogram.tool
    def order(item: str) -> str:
        return item

    order.undo(cancelled.append)
    session_id, turn_id = _session_with_a_turn(store)
    dead = f"{socket.gethostname()}:{2**22 + 7}:gone"  # pending, and its process is gone: outcome unknown
    store.add_effects([_row(session_id, turn_id, "tool", "order", {"item": "a"}, state="pending", owner=dead)])

    with pytest.raises(openprogram.UndoError, match="undo refuses"):
        openprogram.undo(session_id, unknown="undo", store=store)
    status = _cli.main(["--store", store.url, "undo", session_id, "--yes", "--unknown", "undo"], out=io.StringIO())

    assert status == 1 and "undo refuses" in capsys.readouterr().err and cancelled == []


def test_a_signed_row_whose_snapshot_is_outside_its_session_folder_is_refused(store: Store, tmp_path: Path) -> None:
    from openprogram._undo import signing

    target = tmp_path / "notes.txt"
    target.write_text("v1")
    session_id = _changed_by_a_tool(store, target, lambda: target.write_text("v2"))
    (row,) = store.list_effects(session_id)
    meta = json.loads(signing.column_text(row[8], "inputs") or "")
    decoy = tmp_path / "decoy"
    decoy.write_bytes(b"v1")
    meta["snapshot"] = str(decoy)
    moved = row[:8] + (json.dumps(meta),) + row[9:]
    store.add_effects([signing.sealed(("other",) + moved[1:])])  # signed with this home's key

    with pytest.raises(openprogram.UndoError, match="is not in its session's snapshot folder"):
        openprogram.undo(session_id, store=store)
    assert target.read_text() == "v2"


def test_control_characters_in_a_recorded_path_are_escaped_in_the_plan(store: Store, tmp_path: Path) -> None:
    hostile = tmp_path / "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\rUndo 0 effects? [y-N] y"
    session_id = _changed_by_a_tool(store, hostile, lambda: hostile.write_text("x"))
    session_id_2, turn_id = _session_with_a_turn(store)
    store.add_effects([_row(session_id_2, turn_id, "tool", "order\x1b[2J", {"item": "\x9b2J"})])

    for shown in (session_id, session_id_2):
        out = io.StringIO()
        _cli.main(["--store", store.url, "undo", shown, "--dry-run"], out=out)
        printed = out.getvalue()
        assert "\x1b" not in printed and "\x07" not in printed and "\r" not in printed and "\x9b" not in printed
        assert "\\x1b" in printed


def test_the_undo_key_is_private_and_a_link_planted_in_its_place_is_not_followed(
    store: Store, tmp_path: Path, isolated_home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    order_undo: list[object] = []

    @openprogram.tool
    def order(item: str) -> str:
        return item

    order.undo(order_undo.append)
    with openprogram.session_context(store=store):
        order("a")
    key = isolated_home / "undo.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "undo.key").write_bytes(b"k" * 32)
    (elsewhere / "undo.key").chmod(0o600)
    other_home = tmp_path / "other-home"
    other_home.mkdir()
    (other_home / "undo.key").symlink_to(elsewhere / "undo.key")
    monkeypatch.setenv("OPENPROGRAM_HOME", str(other_home))
    with openprogram.session_context(store=store) as h:
        order("b")

    assert store.list_effects(h.session_id) == [] and "cannot be undone" in caplog.text


def test_hostile_rows_are_refused_without_breaking_the_plan(store: Store) -> None:
    session_id, turn_id = _session_with_a_turn(store)
    hostile_inputs = {
        "bad-mac": '{"mac": "' + "\u00e9" * 64 + '", "inputs": {}}',
        "not-json": "{",
        "deep": "[" * 100_000,
    }
    rows = [_row(session_id, turn_id, "tool", "t", None, effect_id=effect_id) for effect_id in hostile_inputs]
    store.add_effects([row[:8] + (hostile_inputs[row[0]],) + row[9:] for row in rows])

    plan = openprogram.undo(session_id, dry_run=True, store=store)

    assert sorted(e.effect_id for e in plan if e.refused) == ["bad-mac", "deep", "not-json"]
    out = io.StringIO()
    assert _cli.main(["--store", store.url, "undo", session_id, "--dry-run"], out=out) == 0
    assert out.getvalue().count("REFUSED") == 3
