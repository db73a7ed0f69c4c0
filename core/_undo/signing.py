"""Signed journal rows: undo acts only on effects a process sharing this ``$OPENPROGRAM_HOME`` journaled.

A store may be shared (PostgreSQL, by workers on many machines) or written by other programs:
an effect row read from it says which file to restore and from where, and what a compensation
receives. So each row is signed when it is journaled, with HMAC-SHA256 and a random key kept
in ``$OPENPROGRAM_HOME/undo.key`` (created once, ``0600``), over the columns fixed at that time;
its output, written later, is signed with its effect's id. The signatures live in the columns
they cover: ``{"mac": "<hex>", "inputs": <the inputs' JSON text>}``, and likewise ``"output"``.
Undo refuses a row whose signatures are missing or do not match.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import stat
import threading
from pathlib import Path

from ..stores import EffectRow, openprogram_home

__all__ = ["KEY_FILE", "column_text", "key_path", "refusal", "sealed", "sealed_output", "signing_key"]

KEY_FILE = "undo.key"
_KEY_BYTES = 32
_HEAD = '{"mac": "'
_MAC_LENGTH = 64  # hex digits of an HMAC-SHA256
_HEX = frozenset("0123456789abcdef")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

# Keyed HMAC states (copied per row: the key is set up once), by the variables that place the home.
_keys: dict[tuple[str | None, str | None], hmac.HMAC] = {}
_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_keys_lock = threading.Lock()


def key_path() -> Path:
    """Where the signing key is kept: ``$OPENPROGRAM_HOME/undo.key``."""
    return openprogram_home() / KEY_FILE


def signing_key() -> hmac.HMAC:
    """This home's signing key, created on first use (exclusively, ``0600``), as an HMAC-SHA256 state to
    copy; OSError when unusable."""
    home = (os.environ.get("OPENPROGRAM_HOME"), os.environ.get("HOME"))
    key = _keys.get(home)
    if key is None:
        with _keys_lock:
            key = _keys.get(home)
            if key is None:
                key = _keys[home] = hmac.new(_read_or_create(key_path()), digestmod="sha256")
    return key


def _read_or_create(path: Path) -> bytes:
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Written whole under a random name, then linked into place: a racing process reads a whole key, its own
    # or the one linked first.
    fd, temporary = _exclusive_file(path.parent)
    try:
        os.write(fd, secrets.token_bytes(_KEY_BYTES))
        os.fsync(fd)
        os.close(fd)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)
    return _read(path)


def _exclusive_file(directory: Path) -> tuple[int, str]:
    for _ in range(100):
        name = str(directory / f".{KEY_FILE}.{secrets.token_hex(8)}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file in {directory}")


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != _KEY_BYTES:
            raise OSError(f"{path} is not an undo key ({_KEY_BYTES} bytes in a regular file)")
        if hasattr(os, "geteuid") and (info.st_uid != os.geteuid() or info.st_mode & 0o077):
            raise OSError(f"{path} must belong to this user and be readable by no one else (mode 0600)")
        key = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != _KEY_BYTES:
        raise OSError(f"{path} is not an undo key ({_KEY_BYTES} bytes in a regular file)")
    return key


def _mac(key: hmac.HMAC, row: EffectRow, inputs: str) -> str:
    """HMAC-SHA256 over the columns fixed when an effect is journaled (the id, its call, session, turn, kind,
    name, framework, inputs, start and owner), encoded unambiguously."""
    fixed = [1, row[0], row[1], row[2], row[3], row[4], row[5], row[6], inputs, float(row[10]).hex(), row[12]]
    return _hmac(key, fixed)


def _output_mac(key: hmac.HMAC, effect_id: str, output: str) -> str:
    return _hmac(key, [2, effect_id, output])


def _hmac(key: hmac.HMAC, fields: list[object]) -> str:
    mac = key.copy()
    mac.update(_encode(fields).encode("ascii"))
    return mac.hexdigest()


def _envelope(field: str, mac: str, text: str) -> str:
    return f'{_HEAD}{mac}", "{field}": {text}}}'


def sealed(row: EffectRow) -> EffectRow:
    """``row`` with its ``inputs`` (and ``output``, if any) signed; OSError when the key cannot be read or made."""
    key = signing_key()
    inputs = row[8] if row[8] is not None else "null"
    output = None if row[9] is None else _envelope("output", _output_mac(key, row[0], row[9]), row[9])
    return row[:8] + (_envelope("inputs", _mac(key, row, inputs), inputs), output) + row[10:]


def sealed_output(effect_id: str, output: str) -> str:
    """The ``output`` column of an effect's outcome, signed with its effect's id."""
    return _envelope("output", _output_mac(signing_key(), effect_id, output), output)


def _split(text: str | None, field: str) -> tuple[str | None, str | None]:
    """(the signature, the JSON text) of an ``inputs`` or ``output`` column; no signature when it is not signed."""
    middle = f'", "{field}": '
    at = len(_HEAD) + _MAC_LENGTH + len(middle)
    if (
        text is not None
        and text.startswith(_HEAD)
        and text.endswith("}")
        and text[len(_HEAD) + _MAC_LENGTH : at] == middle
        and _HEX.issuperset(text[len(_HEAD) : len(_HEAD) + _MAC_LENGTH])
    ):
        return text[len(_HEAD) : len(_HEAD) + _MAC_LENGTH], text[at:-1]
    return None, text


def column_text(text: str | None, field: str) -> str | None:
    """The JSON text an ``inputs`` or ``output`` column holds, signed or not."""
    return _split(text, field)[1]


def refusal(row: EffectRow) -> str | None:
    """Why undo must not act on ``row`` (a signature is missing or wrong), or None: it is this home's."""
    mac, inputs = _split(row[8], "inputs")
    output_mac, output = _split(row[9], "output")
    if mac is None or (output is not None and output_mac is None):
        return (
            "its journal row is not signed: it was journaled by an openprogram older than signed effects "
            "(undo it with that version), or written into the store by another program"
        )
    try:
        key = signing_key()
    except OSError as exc:
        return f"the undo key {key_path()} cannot be read ({exc})"
    if (
        inputs is None
        or not hmac.compare_digest(mac, _mac(key, row, inputs))
        or (output is not None and not hmac.compare_digest(output_mac or "", _output_mac(key, row[0], output)))
    ):
        host = row[12].split(":", 1)[0]
        return (
            f"its journal row's signature does not match this machine's undo key ({key_path()}): it was "
            f"journaled on another machine sharing this store (it says host {host!r}: undo the session "
            "there), or it was edited or forged"
        )
    return None
