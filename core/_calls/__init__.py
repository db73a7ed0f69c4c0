"""Calls: recording a call, whatever makes it.

- ``scope``: a call around a block (resolve its session, begin it, make it current, end it);
- ``tool``: ``@openprogram.tool``;
- ``later``: calls that outlive the block that began them (ended from a callback or a stream);
- ``model``: a request to a chat model as an ``llm`` call, in one shape for every framework;
- ``rejected``: a model's tool call its framework refused, as a failed ``tool`` call.
"""

from __future__ import annotations

from .later import CallsByKey, LaterCall, StreamCall
from .model import ModelCall, ModelStream, message, messages_of, model_inputs, reply, tool_call, usage
from .rejected import ToolCallRejected, rejected_tool_call
from .scope import Opened, call_scope, close_call, detach_call, open_call, resolve
from .tool import UndoDeclarer, declare_undo_with, injected_arguments, records_itself, tool

__all__ = [
    "CallsByKey",
    "LaterCall",
    "ModelCall",
    "ModelStream",
    "Opened",
    "StreamCall",
    "ToolCallRejected",
    "UndoDeclarer",
    "call_scope",
    "close_call",
    "declare_undo_with",
    "detach_call",
    "injected_arguments",
    "message",
    "messages_of",
    "model_inputs",
    "open_call",
    "records_itself",
    "rejected_tool_call",
    "reply",
    "resolve",
    "tool",
    "tool_call",
    "usage",
]
