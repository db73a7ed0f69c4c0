"""Faulty filesystems made on demand: read-only directories and full disks.

As root, permissions do not stop a write, so a read-only *bind mount* is used; as an
ordinary user, ``chmod`` is enough. A full disk is a 2 MiB tmpfs when ``mount`` is
allowed (root), else the test skips and ``RLIMIT_FSIZE`` in a child process stands in
(see :func:`fsize_limited_child`). Every helper undoes itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _run(*cmd: str) -> bool:
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


class ReadOnly:
    """Make ``path`` (a directory) read-only and writable again, repeatedly."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = os.geteuid() == 0
        self.active = False

    def on(self) -> None:
        if self.root:
            if not (
                _run("mount", "--bind", str(self.path), str(self.path))
                and _run("mount", "-o", "remount,bind,ro", str(self.path))
            ):
                _run("umount", "-l", str(self.path))
                pytest.skip("running as root and cannot bind-mount read-only here")
        else:
            self.path.chmod(0o500)
            for child in self.path.iterdir():
                child.chmod(0o400)
        self.active = True

    def off(self) -> None:
        if not self.active:
            return
        if self.root:
            _run("umount", "-l", str(self.path))
        else:
            self.path.chmod(0o700)
            for child in self.path.iterdir():
                child.chmod(0o600)
        self.active = False


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[ReadOnly]:
    path.mkdir(parents=True, exist_ok=True)
    switch = ReadOnly(path)
    try:
        yield switch
    finally:
        switch.off()


@contextlib.contextmanager
def small_filesystem(path: Path, size: str = "2m") -> Iterator[Path]:
    """A size-limited tmpfs mounted at ``path`` (skips when mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)):
        pytest.skip("cannot mount a size-limited tmpfs here (needs root); see the RLIMIT_FSIZE variant")
    try:
        yield path
    finally:
        _run("umount", "-l", str(path))


def fill(directory: Path, leave: int = 0) -> Path:
    """Fill the filesystem of ``directory`` until at most ``leave`` bytes are free."""
    filler = directory / "filler"
    with open(filler, "wb") as out:
        block = b"\0" * 65536
        while True:
            free = shutil.disk_usage(directory).free
            if free <= leave:
                break
            try:
                out.write(block[: max(1, min(len(block), free - leave))])
                out.flush()
            except OSError:
                break
    return filler
