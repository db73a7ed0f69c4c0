"""OTLP export: recorded calls as OpenTelemetry spans, sent with the official exporter (``openprogram[otlp]``).

- ``spans``: recorded calls as finished spans, one trace per turn, one span per call;
- ``messages``: a model call's messages as span attributes (OpenInference, GenAI), and their cut;
- ``prompts``: what raw rows refer to (model calls' prompts, long texts) put back for live export;
- ``sender``: sending spans over OTLP/HTTP, and describing why a send failed;
- ``live``: live export, every call its store has written sent from one background thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._runtime import span_id_of, trace_id_of  # the ids need no OpenTelemetry
from . import live
from .live import BATCH_DELAY, EXIT_SECONDS, export_choice, flush_export, set_export
from .messages import DEFAULT_MAX_MESSAGES, ENV_MAX_MESSAGES
from .sender import INSTALL_HINT, MAX_BATCH, Sender, describe_failure, require_otlp, safe_endpoint, traces_endpoint

if TYPE_CHECKING:
    from .spans import default_resource, spans_of, spans_of_calls

__all__ = [
    "BATCH_DELAY",
    "DEFAULT_MAX_MESSAGES",
    "ENV_MAX_MESSAGES",
    "EXIT_SECONDS",
    "INSTALL_HINT",
    "MAX_BATCH",
    "Sender",
    "default_resource",
    "describe_failure",
    "export_choice",
    "flush_export",
    "live",
    "require_otlp",
    "safe_endpoint",
    "set_export",
    "span_id_of",
    "spans_of",
    "spans_of_calls",
    "trace_id_of",
    "traces_endpoint",
]

# The span builders need OpenTelemetry, which openprogram does not require: imported when first used.
_SPAN_BUILDERS = frozenset({"default_resource", "spans_of", "spans_of_calls"})


def __getattr__(name: str) -> Any:
    if name in _SPAN_BUILDERS:
        from . import spans

        return getattr(spans, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
