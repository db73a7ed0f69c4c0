"""File effects: ``file_effect(path)`` snapshots a file or a directory before a tool changes it; undo restores it.

Inside a session, entering ``file_effect(path)`` copies what is at ``path`` now — a file, a
symbolic link, a directory tree, or nothing — into ``$OPENPROGRAM_HOME/snapshots/<session id>/``
(directories ``0700``, files ``0600``), then journals a ``file`` effect of the current call.
Undoing it puts the snapshot back (or removes what was created) and deletes the snapshot.
A block that raises having changed nothing leaves no effect.

Snapshots are bounded: one ``file_effect`` copies at most :func:`snapshot_limit` bytes
(``OPENPROGRAM_UNDO_SNAPSHOT_LIMIT``, default 64 MiB) and all snapshots together take at
most :func:`snapshots_limit` (``OPENPROGRAM_UNDO_SNAPSHOTS_LIMIT``, default 1 GiB). Past a
bound, or when the store cannot journal, the block still runs — openprogram never stops the
agent — and a warning says that this change cannot be undone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import stat
from pathlib import Path
from types import TracebackType
from typing import Any

from .._recording import session_var
from .._runtime import new_call_id
from ..stores import openprogram_home
from .effects import Effect, Pending, compensating, pending_row, settle, write_pending

__all__ = ["file_effect", "forget_snapshot", "restore", "snapshot_directory", "snapshot_limit", "snapshots_limit"]

logger = logging.getLogger("openprogram")

_CHUNK = 1 << 20
_MANIFEST = "manifest.json"


def snapshot_directory() -> Path:
    """Where file snapshots are kept: ``$OPENPROGRAM_HOME/snapshots``."""
    return openprogram_home() / "snapshots"


def _limit(variable: str, default: int) -> int:
    text = os.environ.get(variable, "").strip().replace("_", "")
    try:
        return int(text) if text else default
    except ValueError:
        logger.warning("openprogram: %s=%r is not a number of bytes; using %d", variable, text, default)
        return default


def snapshot_limit() -> int:
    """Bytes one ``file_effect`` may copy (``OPENPROGRAM_UNDO_SNAPSHOT_LIMIT``, default 64 MiB)."""
    return _limit("OPENPROGRAM_UNDO_SNAPSHOT_LIMIT", 64 << 20)


def snapshots_limit() -> int:
    """Bytes all snapshots together may take (``OPENPROGRAM_UNDO_SNAPSHOTS_LIMIT``, default 1 GiB)."""
    return _limit("OPENPROGRAM_UNDO_SNAPSHOTS_LIMIT", 1 << 30)


class _TooBig(Exception):
    pass


class file_effect:
    """``with openprogram.file_effect(path):`` — snapshot ``path`` (a file or a directory) before the block changes it.

    Inside a session the change becomes an effect of the current call, undone by
    :func:`openprogram.undo`: the file is restored, or removed if it did not exist (a directory
    is restored whole: files created in it are removed). Outside a session, nothing is recorded.
    ``as`` gives the absolute path.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(os.path.abspath(os.fspath(path)))
        self._pending: Pending | None = None
        self._meta: dict[str, Any] | None = None

    def __enter__(self) -> Path:
        handle = session_var.get()
        if handle is None or compensating.get():
            return self.path
        effect_id = new_call_id()
        home = snapshot_directory() / handle.session_id
        try:
            meta = _snapshot(self.path, home, effect_id)
        except (OSError, _TooBig) as exc:
            logger.warning("openprogram: cannot snapshot %s (%s); this change cannot be undone", self.path, exc)
            return self.path
        row = pending_row("file", f"file {self.path}", lambda: json.dumps(meta), effect_id)
        pending = None if row is None else write_pending(handle.store, row)
        if pending is None:
            _remove_snapshot(meta)
            return self.path
        self._pending, self._meta = pending, meta
        return self.path

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        pending, meta = self._pending, self._meta
        self._pending = self._meta = None
        if pending is None or meta is None:
            return
        if exc is not None and _unchanged(self.path, meta):
            store, effect_id = pending
            try:
                if store.drop_effect(effect_id, "pending"):
                    _remove_snapshot(meta)
            except Exception as error:  # it stays pending; undoing it would restore what is there
                logger.warning("openprogram: cannot drop the unchanged file effect of %s (%s)", self.path, error)
            return
        settle(pending, None)  # changed or not, the snapshot is what undo puts back


# --- taking a snapshot -------------------------------------------------------------------------


def _private_directory(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def _copy(source: Path, target: Path) -> str:
    """Copy a regular file into a new private file, durably; return its SHA-256."""
    digest = hashlib.sha256()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _used(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total


def _entries(path: Path) -> list[dict[str, Any]]:
    """What a directory holds, as relative paths, parents first (symbolic links are not followed)."""
    entries: list[dict[str, Any]] = []
    for directory, dirs, files in os.walk(path):
        dirs.sort()  # walked in a stable order
        entries.extend(_listed(path, directory, dirs, sorted(files)))
    return entries


def _listed(root: Path, directory: str, dirs: list[str], files: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in dirs + files:
        full = Path(directory) / name
        info = os.lstat(full)
        entry: dict[str, Any] = {"path": str(full.relative_to(root)), "mode": stat.S_IMODE(info.st_mode)}
        if stat.S_ISLNK(info.st_mode):
            entry.update(type="link", target=os.readlink(full))
        elif stat.S_ISDIR(info.st_mode):
            entry["type"] = "directory"
        elif stat.S_ISREG(info.st_mode):
            entry.update(type="file", size=info.st_size)
        else:
            raise _TooBig(f"{full} is neither a file, a directory nor a symbolic link")
        out.append(entry)
    return out


def _snapshot(path: Path, home: Path, effect_id: str) -> dict[str, Any]:
    """Copy what is at ``path`` into ``home``; return what restoring it needs."""
    meta: dict[str, Any] = {"path": str(path), "host": socket.gethostname()}
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        meta["type"] = "absent"
        return meta
    meta["mode"] = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        meta.update(type="link", target=os.readlink(path))
        return meta
    if stat.S_ISREG(info.st_mode):
        entries: list[dict[str, Any]] = []
        size = info.st_size
    elif stat.S_ISDIR(info.st_mode):
        entries = _entries(path)
        size = sum(e.get("size", 0) for e in entries)
    else:
        raise _TooBig("it is neither a file, a directory nor a symbolic link")
    if size > snapshot_limit():
        raise _TooBig(f"{size} bytes, over the snapshot limit of {snapshot_limit()} (OPENPROGRAM_UNDO_SNAPSHOT_LIMIT)")
    root = snapshot_directory()
    if _used(root) + size > snapshots_limit():
        raise _TooBig(f"snapshots under {root} would pass {snapshots_limit()} bytes (OPENPROGRAM_UNDO_SNAPSHOTS_LIMIT)")
    _private_directory(root)
    _private_directory(home)
    target = home / effect_id
    meta["snapshot"] = str(target)
    if not entries and stat.S_ISREG(info.st_mode):
        meta.update(type="file", size=size, sha256=_copy(path, target))
        return meta
    meta.update(type="directory", size=size)
    os.mkdir(target, 0o700)
    try:
        for n, entry in enumerate(entries):
            if entry["type"] == "file":
                entry["copy"] = str(n)
                entry["sha256"] = _copy(path / entry["path"], target / str(n))
        fd = os.open(target / _MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return meta


def _unchanged(path: Path, meta: dict[str, Any]) -> bool:
    """Whether ``path`` still holds what its snapshot does."""
    try:
        kind = meta["type"]
        if kind == "absent":
            return not os.path.lexists(path)
        info = os.lstat(path)
        if kind == "link":
            return stat.S_ISLNK(info.st_mode) and os.readlink(path) == meta["target"]
        if kind == "file":
            return stat.S_ISREG(info.st_mode) and info.st_size == meta["size"] and _sha256(path) == meta["sha256"]
        if not stat.S_ISDIR(info.st_mode):
            return False
        saved = _manifest(meta)
        now = _entries(path)
        if [(e["path"], e["type"], e.get("target")) for e in now] != [
            (e["path"], e["type"], e.get("target")) for e in saved
        ]:
            return False
        return all(e["type"] != "file" or _sha256(path / e["path"]) == e["sha256"] for e in saved)
    except (OSError, _TooBig, KeyError, ValueError):
        return False


def _manifest(meta: dict[str, Any]) -> list[dict[str, Any]]:
    with open(Path(meta["snapshot"]) / _MANIFEST, encoding="utf-8") as src:
        entries: list[dict[str, Any]] = json.load(src)
    return entries


def _remove_snapshot(meta: dict[str, Any]) -> None:
    snapshot = meta.get("snapshot")
    if not snapshot:
        return
    target = Path(snapshot)
    if target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)
    try:
        target.parent.rmdir()  # the session's directory, once empty
    except OSError:
        pass


# --- restoring -------------------------------------------------------------------------------


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _put_file(path: Path, copy: Path, mode: int, sha256: str) -> None:
    """Replace ``path`` with the snapshot's copy, atomically (a new file renamed over it)."""
    if _sha256(copy) != sha256:
        raise OSError(f"the snapshot {copy} of {path} is damaged (its SHA-256 changed)")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    temporary = path.with_name(f".{path.name}.openprogram-undo-{os.getpid()}")
    shutil.copyfile(copy, temporary)
    os.chmod(temporary, mode)
    with open(temporary, "rb") as written:
        os.fsync(written.fileno())
    os.replace(temporary, path)


def _put_tree(path: Path, meta: dict[str, Any]) -> None:
    entries = _manifest(meta)
    kept = {e["path"] for e in entries}
    if os.path.lexists(path) and not (path.is_dir() and not path.is_symlink()):
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, meta["mode"])
    for found in reversed(_entries(path)):  # children before their directories
        if found["path"] not in kept:
            _remove(path / found["path"])
    copies = Path(meta["snapshot"])
    for entry in entries:
        target = path / entry["path"]
        if entry["type"] == "directory":
            if os.path.lexists(target) and not (target.is_dir() and not target.is_symlink()):
                target.unlink()
            target.mkdir(exist_ok=True)
            os.chmod(target, entry["mode"])
        elif entry["type"] == "link":
            _remove(target)
            os.symlink(entry["target"], target)
        elif not (target.is_file() and not target.is_symlink() and _sha256(target) == entry["sha256"]):
            _put_file(target, copies / entry["copy"], entry["mode"], entry["sha256"])
        else:
            os.chmod(target, entry["mode"])


def restore(effect: Effect) -> dict[str, Any]:
    """The compensation of a ``file`` effect: put back what its snapshot holds; returns what was done."""
    meta: dict[str, Any] = effect.inputs
    path = Path(meta["path"])
    if meta.get("host") != socket.gethostname():
        raise OSError(f"the snapshot of {path} is on host {meta.get('host')!r}: undo this session there")
    kind = meta["type"]
    if kind == "absent":
        existed = os.path.lexists(path)
        _remove(path)
        return {"path": str(path), "removed": existed}
    if kind == "link":
        _remove(path)
        os.symlink(meta["target"], path)
    elif kind == "file":
        _put_file(path, Path(meta["snapshot"]), meta["mode"], meta["sha256"])
    else:
        _put_tree(path, meta)
    return {"path": str(path), "restored": kind}


def forget_snapshot(effect: Effect) -> None:
    """Delete an undone file effect's snapshot (it has been put back)."""
    if isinstance(effect.inputs, dict):
        _remove_snapshot(effect.inputs)
