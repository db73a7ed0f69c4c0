"""File effects: a snapshot before a tool changes a file or a directory, put back by undo; private and bounded."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import openprogram
import pytest
from openprogram.stores import Store

from tests.support import calls


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _snapshots(home: Path) -> list[Path]:
    root = home / "snapshots"
    return sorted(p for p in root.rglob("*")) if root.exists() else []


def test_an_existing_file_is_restored_with_its_mode_and_its_snapshot_is_deleted(
    store: Store, tmp_path: Path, isolated_home: Path
) -> None:
    config = tmp_path / "work" / "config.yaml"
    config.parent.mkdir()
    config.write_text("debug: false\n")
    config.chmod(0o640)

    @openprogram.tool
    def set_debug() -> str:
        with openprogram.file_effect(config) as path:
            path.write_text("debug: true\n")
            path.chmod(0o666)
        return "on"

    with openprogram.session_context(store=store) as h:
        set_debug()
    assert config.read_text() == "debug: true\n"
    (effect,) = openprogram.undo(h.session_id, dry_run=True, store=store)
    assert effect.kind == "file" and effect.inputs["type"] == "file" and effect.name == f"file {config}"
    assert effect.call_id == next(c.call_id for c in calls(store, h.session_id) if c.name == "set_debug")
    assert _snapshots(isolated_home)

    openprogram.undo(h.session_id, store=store)

    assert config.read_text() == "debug: false\n" and _mode(config) == 0o640
    assert not [p for p in _snapshots(isolated_home) if p.is_file()], "the snapshot outlived its undo"
    assert [p.name for p in config.parent.iterdir()] == ["config.yaml"]  # no temporary file left behind


def test_a_file_that_did_not_exist_is_removed(store: Store, tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.txt"

    @openprogram.tool
    def write_report(text: str) -> None:
        with openprogram.file_effect(report):
            report.parent.mkdir(exist_ok=True)
            report.write_text(text)

    with openprogram.session_context(store=store) as h:
        write_report("numbers")
    assert report.exists()

    plan = openprogram.undo(h.session_id, store=store)

    assert not report.exists() and [e.inputs["type"] for e in plan] == ["absent"]


def test_a_directory_is_restored_whole(store: Store, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "README").write_text("hello\n")
    (project / "latest").symlink_to("src/app.py")

    @openprogram.tool
    def refactor() -> None:
        with openprogram.file_effect(project):
            (project / "src" / "app.py").write_text("print('v2')\n")
            (project / "README").unlink()
            (project / "src" / "new.py").write_text("new\n")
            (project / "build").mkdir()
            (project / "build" / "out.o").write_bytes(b"\x00\x01")
            (project / "latest").unlink()
            (project / "latest").symlink_to("src/new.py")

    with openprogram.session_context(store=store) as h:
        refactor()

    openprogram.undo(h.session_id, store=store)

    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == ["README", "latest", "src", "src/app.py"]
    assert (project / "src" / "app.py").read_text() == "print('v1')\n"
    assert (project / "README").read_text() == "hello\n"
    assert os.readlink(project / "latest") == "src/app.py"


def test_snapshots_are_private(store: Store, tmp_path: Path, isolated_home: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("a")
    (tmp_path / "notes.txt").write_text("secret plans")

    @openprogram.tool
    def edit() -> None:
        with openprogram.file_effect(tmp_path / "notes.txt"), openprogram.file_effect(tmp_path / "tree"):
            (tmp_path / "notes.txt").write_text("")
            (tmp_path / "tree" / "a.txt").write_text("b")

    with openprogram.session_context(store=store):
        edit()
    found = _snapshots(isolated_home)
    assert found and _mode(isolated_home / "snapshots") == 0o700
    assert all(_mode(p) == (0o700 if p.is_dir() else 0o600) for p in found), {str(p): oct(_mode(p)) for p in found}


def test_snapshots_are_bounded_and_past_the_bound_the_change_still_runs_with_a_warning(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 2000)
    small = tmp_path / "small.txt"
    small.write_text("s" * 600)
    monkeypatch.setenv("OPENPROGRAM_UNDO_SNAPSHOT_LIMIT", "1000")
    monkeypatch.setenv("OPENPROGRAM_UNDO_SNAPSHOTS_LIMIT", "1000")

    @openprogram.tool
    def overwrite(path: str) -> None:
        with openprogram.file_effect(path):
            Path(path).write_text("changed")

    with caplog.at_level(logging.WARNING, "openprogram"), openprogram.session_context(store=store) as h:
        overwrite(str(big))  # over the per-snapshot bound
        overwrite(str(small))  # within both bounds
        small.write_text("s" * 600)
        overwrite(str(small))  # would take the snapshots past their total bound
    assert big.read_text() == "changed" and small.read_text() == "changed"
    warnings = [r.getMessage() for r in caplog.records if "cannot be undone" in r.getMessage()]
    assert len(warnings) == 2
    assert "over the snapshot limit of 1000" in warnings[0] and "OPENPROGRAM_UNDO_SNAPSHOT_LIMIT" in warnings[0]
    assert "OPENPROGRAM_UNDO_SNAPSHOTS_LIMIT" in warnings[1]
    assert [e.inputs["path"] for e in openprogram.undo(h.session_id, dry_run=True, store=store)] == [str(small)]


def test_a_block_that_raised_leaves_an_effect_only_if_it_changed_the_file(store: Store, tmp_path: Path) -> None:
    untouched = tmp_path / "untouched.txt"
    untouched.write_text("same")
    half = tmp_path / "half.txt"
    half.write_text("whole")

    @openprogram.tool
    def fail_before_writing() -> None:
        with openprogram.file_effect(untouched):
            raise OSError("no space left")

    @openprogram.tool
    def fail_after_writing() -> None:
        with openprogram.file_effect(half):
            half.write_text("ha")
            raise OSError("no space left")

    with openprogram.session_context(store=store) as h:
        for tool in (fail_before_writing, fail_after_writing):
            with pytest.raises(OSError):
                tool()

    assert [e.inputs["path"] for e in openprogram.undo(h.session_id, store=store)] == [str(half)]
    assert half.read_text() == "whole" and untouched.read_text() == "same"


def test_outside_a_session_a_file_effect_records_nothing(tmp_path: Path, isolated_home: Path) -> None:
    target = tmp_path / "f.txt"
    with openprogram.file_effect(target) as path:
        path.write_text("x")
    assert path == target and target.read_text() == "x"
    assert _snapshots(isolated_home) == []


def test_file_effects_are_undone_newest_first_with_the_tools_effects(store: Store, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    ledger.write_text("")
    undone: list[str] = []

    @openprogram.tool
    def post(entry: str) -> str:
        with openprogram.file_effect(ledger):
            ledger.write_text(ledger.read_text() + entry + "\n")
        return entry

    post.undo(lambda effect: undone.append(f"{effect.output}: {ledger.read_text()!r}"))
    with openprogram.session_context(store=store) as h:
        post("one")
        post("two")

    plan = openprogram.undo(h.session_id, store=store)

    assert [e.kind for e in plan] == ["file", "tool", "file", "tool"]
    assert undone == ["two: 'one\\n'", "one: ''"]  # each file was put back before its tool's compensation ran
    assert ledger.read_text() == ""
