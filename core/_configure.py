"""``configure(...)``: the process-wide settings, each kept by the module it governs."""

from __future__ import annotations

from ._capture import set_content_capture
from ._otlp import set_export
from ._sessions import set_policy

__all__ = ["configure"]


def configure(*, no_session: str | None = None, capture_content: bool | None = None, export: str | None = None) -> None:
    """Process-wide settings; an argument left out keeps its current value.

    ``no_session`` decides what a recorded call does with no session open:

    - ``"auto"`` (default): join the session exported by a parent process, or open
      one implicit session for this process, log its id once and record there
      (see :func:`openprogram.implicit_session`);
    - ``"warn"``: run unrecorded and log one warning;
    - ``"error"``: raise :class:`openprogram.NoSessionError`.

    The ``OPENPROGRAM_NO_SESSION`` environment variable sets the default.

    ``capture_content=False`` records every call with its name, kind, status, timing
    and attributes (a model call's model and token usage) but writes no inputs, outputs
    or message text, for calls of every kind. The ``OPENPROGRAM_CAPTURE_CONTENT``
    environment variable (``false``) sets the default; ``True`` is the default's default.

    ``export="otlp"`` sends every call, once it has ended and its store has written it, as an
    OpenTelemetry span to the OTLP/HTTP endpoint of the standard ``OTEL_EXPORTER_OTLP_*``
    variables, from a background thread (it needs ``openprogram[otlp]``; without it
    :class:`openprogram.DidNotEnable` is raised); ``"none"`` stops that. The
    ``OPENPROGRAM_EXPORT`` environment variable (``otlp``) sets the default.
    """
    if no_session is not None:
        set_policy(no_session)
    if capture_content is not None:
        if not isinstance(capture_content, bool):
            raise TypeError(f"capture_content must be True or False, not {capture_content!r}")
        set_content_capture(capture_content)
    if export is not None:
        set_export(export)
