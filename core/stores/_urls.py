"""Store URLs as they may be shown: passwords found as libpq finds them, and masked."""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["password_span", "safe_url"]

# A URL's user info: a user, then ":" and a password up to an "@" (user names with "@" included, to be safe).
_USER = re.compile(r"[a-z][a-z0-9+.-]*://[^:/]*:", re.IGNORECASE)
_PARAMETER = re.compile(r"(?P<head>[?&](?P<key>[^=&]*)=)(?P<value>[^&]*)")
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def password_span(url: str) -> tuple[int, int] | None:
    """Where the password of ``url``'s user info is (start, end), or None if it has none.

    Read as libpq reads a URL (a password may hold ``?`` or ``#``), but never narrower: one
    holding an unencoded ``@`` runs to the last ``@`` before the path, one holding an unencoded
    ``/`` (libpq would see no password, and take its parts for a host, port and database) to the
    last ``@`` of the URL.
    """
    head = _USER.match(url)
    if head is None:
        return None
    start = head.end()
    slash = url.find("/", start)
    authority = url[start:] if slash < 0 else url[start:slash]
    at = authority.rfind("@")
    if at >= 0:
        return start, start + at
    if slash >= 0 and not authority.isdigit():  # "host:port/db" has no password
        at = url.rfind("@", slash)
        if at >= 0:
            return start, at
    return None


def _masked_parameter(found: re.Match[str]) -> str:
    # libpq decodes parameter names too: "pass%77ord=" is a password.
    if unquote(found["key"]).lower() in _SECRET_PARAMETERS:
        return f"{found['head']}***"
    return found.group()


def safe_url(url: str) -> str:
    """``url`` with any password replaced by ``***``: safe to log or print.

    The password of the user info (see :func:`password_span`) and the values of the
    ``password`` and ``sslpassword`` query parameters are masked.
    """
    span = password_span(url)
    if span is not None:
        url = f"{url[: span[0]]}***{url[span[1] :]}"
    return _PARAMETER.sub(_masked_parameter, url)
