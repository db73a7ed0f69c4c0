"""Identifiers: cheap unique call ids and validated session ids."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import secrets
import socket
from collections.abc import Callable
from typing import overload

from .errors import InvalidSessionId

__all__ = [
    "MAX_ID_LENGTH",
    "derive_session_id",
    "every_4096_calls",
    "new_call_id",
    "new_session_id",
    "process_owner",
    "set_pressure_check",
    "validate_session_id",
]

MAX_ID_LENGTH = 128
_VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*")


def validate_session_id(value: object, *, what: str = "session id") -> str:
    """Return ``value`` if it is a usable id, else raise :class:`InvalidSessionId`.

    Ids are 1-128 characters of letters, digits and ``. _ : @ + -``, starting with
    a letter or digit: safe in file names, URLs, shells and log lines.
    """
    if not isinstance(value, str):
        raise InvalidSessionId(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise InvalidSessionId(f"{what} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidSessionId(f"{what} is {len(value)} characters long; the limit is {MAX_ID_LENGTH}")
    if _VALID_ID.fullmatch(value) is None:
        raise InvalidSessionId(
            f"{what} {value[:40]!r} may only contain letters, digits and '._:@+-' and must start with a letter or digit"
        )
    return value


def new_session_id() -> str:
    """A fresh random session id (22 url-safe characters, 128 bits)."""
    return secrets.token_hex(11)


def derive_session_id(namespace: str, key: str) -> str:
    """A stable session id for a framework's own run identity (e.g. a LangGraph thread).

    The same ``(namespace, key)`` always maps to the same id, in any process, so a
    conversation resumed elsewhere lands in the same session without a lookup.
    """
    candidate = f"{namespace}-{key}"
    if len(candidate) <= MAX_ID_LENGTH and _VALID_ID.fullmatch(candidate):
        return candidate
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{namespace}-{digest}"


# Call ids: a per-process random prefix plus a counter. ``next()`` on an
# itertools.count is atomic under the GIL, so this is thread-safe and far cheaper
# than ``uuid4()``. The prefix is renewed after ``fork()`` so parent and child
# never mint the same id.
#
# The counter starts at 2**40 so ids have the same length (and sort in
# creation order) for the first 16 trillion calls; ``hex()`` is the cheapest
# int-to-text conversion CPython has.
#
# The compiled ``@openprogram.tool`` wrapper keeps a call's id as its counter value (an
# int) and the writer spells it out (:func:`as_text`), off the caller's thread. A forked child gets a new prefix for the
# values it mints from then on; values minted before the fork (its inherited context may
# hold some) keep the parent's prefix: ``_epochs`` lists (first value, prefix) per process
# generation.
prefix = ""
counter = itertools.count(1 << 40)
_owner = ""
_epochs: list[tuple[int, str]] = []


def _renew() -> None:
    global prefix, _owner
    prefix = secrets.token_hex(6) + "-"
    _owner = f"{socket.gethostname()}:{os.getpid()}:{prefix[:-1]}"
    _epochs.append((next(counter), prefix))


_renew()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew)


def _no_pressure() -> None:
    pass


_pressure_check: Callable[[], None] = _no_pressure


def set_pressure_check(check: Callable[[], None]) -> None:
    """Have ``check()`` run once every 4096 call ids (the background writer's back-pressure)."""
    global _pressure_check
    _pressure_check = check


def every_4096_calls() -> None:
    """Run the pressure check; whoever mints call ids inline calls this when the counter's low 12 bits are 0."""
    _pressure_check()


def new_call_id() -> str:
    """A call id unique across threads and processes (prefix + counter)."""
    n = next(counter)
    if not n & 0xFFF:
        every_4096_calls()
    return prefix + hex(n)


@overload
def as_text(call_id: str | int) -> str: ...
@overload
def as_text(call_id: str | int | None) -> str | None: ...


def as_text(call_id: str | int | None) -> str | None:
    """A call id as text: ids kept as counter values are spelled as :func:`new_call_id` spells them."""
    if type(call_id) is not int:
        return call_id  # type: ignore[return-value]
    for first, text in reversed(_epochs):  # the latest first: values minted before a fork are rare
        if call_id >= first:
            return text + hex(call_id)
    return _epochs[0][1] + hex(call_id)  # below every epoch: cannot be minted here; spelled as the first


def process_owner() -> str:
    """``host:pid:nonce`` of this process, stamped on running calls to detect dead writers."""
    return _owner
