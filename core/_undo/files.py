"""File effects: ``file_effect(path)`` snapshots a file or a directory before a tool changes it; undo restores it.

Inside a session, entering ``file_effect(path)`` copies what is at ``path`` now — a file, a
symbolic link, a directory tree, or nothing — into ``$OPENPROGRAM_HOME/snapshots/<session id>/``
(directories ``0700``, files ``0600``), then journals a ``file`` effect of the current call.
Undoing it puts the snapshot back (or removes what was created) and deletes the snapshot.
A block that raises having changed nothing leaves no effect. The path is recorded with the
links above it resolved and the identity of its directory; undo acts only in that directory,
reached without following links, and reads snapshots only from the session's own folder.

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
import secrets
import shutil
import socket
import stat
from pathlib import Path
from types import TracebackType
from typing import Any

from .._recording import session_var
from .._runtime import new_call_id, validate_session_id
from ..stores import openprogram_home
from .effects import Effect, Pending, compensating, pending_row, settle, write_pending

__all__ = [
    "RefusedRestore",
    "file_effect",
    "forget_snapshot",
    "restore",
    "snapshot_directory",
    "snapshot_limit",
    "snapshots_limit",
]

logger = logging.getLogger("openprogram")

_CHUNK = 1 << 20
_MANIFEST = "manifest.json"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows, where restores are refused
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


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
        self._snapshot: Path | None = None

    def __enter__(self) -> Path:
        handle = session_var.get()
        if handle is None or compensating.get():
            return self.path
        effect_id = new_call_id()
        target = snapshot_directory() / handle.session_id / effect_id
        try:
            meta = _snapshot(_resolved(self.path), target)
        except (OSError, _TooBig) as exc:
            logger.warning("openprogram: cannot snapshot %s (%s); this change cannot be undone", self.path, exc)
            return self.path
        row = pending_row("file", f"file {meta['path']}", lambda: json.dumps(meta), effect_id)
        pending = None if row is None else write_pending(handle.store, row)
        if pending is None:
            _remove_snapshot(target)
            return self.path
        self._pending, self._meta, self._snapshot = pending, meta, target
        return self.path

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        pending, meta, target = self._pending, self._meta, self._snapshot
        self._pending = self._meta = self._snapshot = None
        if pending is None or meta is None or target is None:
            return
        if exc is not None and _unchanged(self.path, meta):
            store, effect_id = pending
            try:
                if store.drop_effect(effect_id, "pending"):
                    _remove_snapshot(target)
            except Exception as error:  # it stays pending; undoing it would restore what is there
                logger.warning("openprogram: cannot drop the unchanged file effect of %s (%s)", self.path, error)
            return
        settle(pending, None)  # changed or not, the snapshot is what undo puts back


# --- taking a snapshot -------------------------------------------------------------------------


def _private_directory(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def _copy(source: Path, target: Path) -> str:
    """Copy a regular file (not a link swapped in for it) into a new private file, durably; return its SHA-256."""
    digest = hashlib.sha256()
    with os.fdopen(os.open(source, os.O_RDONLY | _NOFOLLOW), "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            raise _TooBig(f"{source} is no longer a regular file")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
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


def _resolved(path: Path) -> Path:
    """``path`` in its directory with every symbolic link above it resolved (``path`` itself is not followed)."""
    if not path.name:
        raise _TooBig("it is a file system's root")
    return Path(os.path.realpath(path.parent)) / path.name


def _anchor(path: Path) -> dict[str, Any]:
    """The nearest directory above ``path`` that exists: how many levels above its parent, and its identity
    (undo acts only in that same directory)."""
    for depth, directory in enumerate(path.parents):
        try:
            fd = os.open(directory, _DIRECTORY)
        except FileNotFoundError:
            continue
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        return {"depth": depth, "dev": info.st_dev, "ino": info.st_ino}
    raise _TooBig("none of the directories above it exists")


def _snapshot(path: Path, target: Path) -> dict[str, Any]:
    """Copy what is at ``path`` to ``target``; return what restoring it needs."""
    meta: dict[str, Any] = {"path": str(path), "host": socket.gethostname(), "anchor": _anchor(path)}
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
    _private_directory(target.parent)
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
        manifest = json.dumps(entries).encode()
        meta["manifest_sha256"] = hashlib.sha256(manifest).hexdigest()
        fd = os.open(target / _MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(manifest)
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


def _remove_snapshot(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)
    try:
        target.parent.rmdir()  # the session's directory, once empty
    except OSError:
        pass


# --- restoring ---------------------------------------------------------------------------
#
# Undo acts only inside the directory it snapshotted: it opens that directory, checks it is the same
# one (device and inode), and works from its file descriptor with no-follow opens. A symbolic link
# swapped in for a directory since the snapshot makes undo refuse, having written nothing.


class RefusedRestore(OSError):
    """Undo refuses to restore a file effect: what is on disk (or in the row) is not what was snapshotted."""


def _snapshot_of(effect: Effect) -> Path:
    """The effect's snapshot, in its session's own snapshot folder, whatever its row says."""
    session_id = validate_session_id(effect.session_id)
    effect_id = validate_session_id(effect.effect_id, what="effect id")
    return snapshot_directory() / session_id / effect_id


def _opened_parent(path: Path, anchor: dict[str, Any], create: bool) -> int | None:
    """A descriptor of ``path``'s directory, reached from the directory identified when the snapshot was
    taken (``anchor``: its device, inode and depth above the parent) by no-follow opens; None when a
    directory below the anchor is gone and ``create`` is false. Raises :class:`RefusedRestore`."""
    depth = int(anchor["depth"])
    if not 0 <= depth < len(path.parents):
        raise RefusedRestore(f"the snapshot of {path} names no directory above it")
    top = path.parents[depth]
    try:
        fd = os.open(top, _DIRECTORY)
    except FileNotFoundError as exc:
        raise RefusedRestore(f"{top}, the directory snapshotted, no longer exists; nothing was written") from exc
    except OSError as exc:
        raise RefusedRestore(
            f"{top} is not the directory snapshotted (a symbolic link or a file replaced it); nothing was written"
        ) from exc
    try:
        found = os.fstat(fd)
        if (found.st_dev, found.st_ino) != (anchor["dev"], anchor["ino"]):
            raise RefusedRestore(
                f"{top} is not the directory snapshotted (it was replaced or moved since); nothing was written"
            )
        for name in path.parent.parts[len(top.parts) :]:
            try:
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                os.mkdir(name, 0o777, dir_fd=fd)
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            except OSError as exc:
                raise RefusedRestore(
                    f"{top.joinpath(name)} is no longer a directory (a symbolic link or a file replaced it); "
                    "nothing was written"
                ) from exc
            os.close(fd)
            fd, top = child, top / name
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kind_at(directory: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _remove_at(directory: int, name: str) -> bool:
    """Remove ``name`` in ``directory`` (a whole tree, links not followed); whether there was one."""
    mode = _kind_at(directory, name)
    if mode is None:
        return False
    if stat.S_ISDIR(mode):
        fd = os.open(name, _DIRECTORY, dir_fd=directory)
        try:
            with os.scandir(fd) as found:
                names = [entry.name for entry in found]
            for child in names:
                _remove_at(fd, child)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=directory)
    else:
        os.unlink(name, dir_fd=directory)
    return True


def _open_new(directory: int) -> tuple[int, str]:
    """A new file with a random name in ``directory``, created exclusively (a name planted there is not used)."""
    for _ in range(100):
        name = f".openprogram-undo-{secrets.token_hex(12)}"
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=directory), name
        except FileExistsError:
            continue
    raise FileExistsError("cannot create a temporary file for the restore")


def _put_file(directory: int, name: str, copy: Path, mode: int, sha256: str) -> None:
    """Replace ``name`` with the snapshot's copy, atomically (a new file renamed over it)."""
    fd, temporary = _open_new(directory)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, os.fdopen(os.open(copy, os.O_RDONLY | _NOFOLLOW), "rb") as src:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            raise OSError(f"the snapshot {copy} is damaged (its SHA-256 changed)")
        existing = _kind_at(directory, name)
        if existing is not None and stat.S_ISDIR(existing):
            _remove_at(directory, name)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=directory)
        except OSError:
            pass
        raise


def _same_file(directory: int, name: str, sha256: str) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=directory)
    except OSError:
        return False
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            return False
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest() == sha256


def _put_directory(directory: int, name: str, mode: int, children: dict[str, list[dict[str, Any]]], at: str) -> None:
    """Make ``name`` hold what the manifest lists under ``at`` (``children``: entries by their directory)."""
    existing = _kind_at(directory, name)
    if existing is not None and not stat.S_ISDIR(existing):
        os.unlink(name, dir_fd=directory)
        existing = None
    if existing is None:
        os.mkdir(name, 0o700, dir_fd=directory)
    fd = os.open(name, _DIRECTORY, dir_fd=directory)
    try:
        wanted = {entry["name"]: entry for entry in children.get(at, [])}
        with os.scandir(fd) as found:
            extra = [entry.name for entry in found if entry.name not in wanted]
        for child in extra:
            _remove_at(fd, child)
        for child, entry in wanted.items():
            if entry["type"] == "directory":
                _put_directory(fd, child, entry["mode"], children, entry["path"])
            elif entry["type"] == "link":
                _remove_at(fd, child)
                os.symlink(entry["target"], child, dir_fd=fd)
            elif _same_file(fd, child, entry["sha256"]):
                _chmod_at(fd, child, entry["mode"])
            else:
                _put_file(fd, child, entry["copy"], entry["mode"], entry["sha256"])
        os.fchmod(fd, mode)  # last: a read-only directory is filled first
    finally:
        os.close(fd)


def _chmod_at(directory: int, name: str, mode: int) -> None:
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=directory)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _tree(meta: dict[str, Any], snapshot: Path) -> dict[str, list[dict[str, Any]]]:
    """The snapshot's manifest, checked against the signed digest, as entries by their directory ('' the top)."""
    with os.fdopen(os.open(snapshot / _MANIFEST, os.O_RDONLY | _NOFOLLOW), "rb") as src:
        text = src.read()
    if hashlib.sha256(text).hexdigest() != meta["manifest_sha256"]:
        raise RefusedRestore(f"the snapshot {snapshot} was changed since it was taken")
    children: dict[str, list[dict[str, Any]]] = {}
    for entry in json.loads(text):
        parent, _, name = entry["path"].rpartition("/")
        if name in ("", ".", "..") or "\0" in name:
            raise RefusedRestore(f"the snapshot {snapshot} lists a bad path {entry['path']!r}")
        if entry["type"] == "file":
            entry["copy"] = snapshot / str(int(entry["copy"]))
        children.setdefault(parent, []).append(dict(entry, name=name))
    return children


def restore(effect: Effect) -> dict[str, Any]:
    """The compensation of a ``file`` effect: put back what its snapshot holds; returns what was done.

    Raises :class:`RefusedRestore`, having written nothing, when the directory snapshotted was replaced
    (by a symbolic link, say) or the snapshot is not in the session's snapshot folder.
    """
    if effect.refused:
        raise RefusedRestore(f"undo refuses {effect.name!r}: {effect.refused}")
    meta: dict[str, Any] = effect.inputs
    path = Path(meta["path"])
    if meta.get("host") != socket.gethostname():
        raise RefusedRestore(f"the snapshot of {path} is on host {meta.get('host')!r}: undo this session there")
    if os.open not in os.supports_dir_fd:
        raise RefusedRestore(f"cannot restore {path} safely on this platform (no directory file descriptors)")
    snapshot = _snapshot_of(effect)
    if meta.get("snapshot", str(snapshot)) != str(snapshot):
        raise RefusedRestore(f"the snapshot of {path} is not in its session's snapshot folder {snapshot.parent}")
    kind = meta["type"]
    directory = _opened_parent(path, meta["anchor"], create=kind != "absent")
    if directory is None:
        return {"path": str(path), "removed": False}
    try:
        if kind == "absent":
            return {"path": str(path), "removed": _remove_at(directory, path.name)}
        if kind == "link":
            _remove_at(directory, path.name)
            os.symlink(meta["target"], path.name, dir_fd=directory)
        elif kind == "file":
            _put_file(directory, path.name, snapshot, meta["mode"], meta["sha256"])
        else:
            _put_directory(directory, path.name, meta["mode"], _tree(meta, snapshot), "")
        os.fsync(directory)
    finally:
        os.close(directory)
    return {"path": str(path), "restored": kind}


def forget_snapshot(effect: Effect) -> None:
    """Delete an undone file effect's snapshot (it has been put back)."""
    _remove_snapshot(_snapshot_of(effect))
