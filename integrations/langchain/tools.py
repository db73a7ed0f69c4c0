"""LangChain tools: every ``BaseTool.run`` / ``arun`` (``invoke``, ``ainvoke``, a ToolNode's call) is one ``tool`` call.

Its ``framework`` is the one whose run it is in (:mod:`.caller`). A tool built on an
``@openprogram.tool`` function records itself; if LangChain rejects its arguments before the
function runs, the rejection is recorded here, a ``tool`` call ending ``error``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openprogram import NoSessionError
from openprogram._kit import (
    Integration,
    Opened,
    Target,
    close_call,
    injected_arguments,
    log_once,
    open_call,
    records_itself,
    wraps_like,
)

from .caller import running_framework

__all__ = ["TOOL_TARGETS"]

_BASE_TOOL = "langchain_core.tools:BaseTool"

_visible: dict[int, tuple[Any, frozenset[str]]] = {}  # id(tool) -> (tool, argument names the model sees)
_MAX_VISIBLE = 1024


def _model_arguments(tool: Any) -> frozenset[str]:
    """The argument names in the tool's schema as sent to a model (for langchain-core without
    ``_injected_args_keys``). Cached per tool: building the schema is not free."""
    cached = _visible.get(id(tool))
    if cached is not None and cached[0] is tool:
        return cached[1]
    schema = tool.tool_call_schema
    names = frozenset(schema["properties"] if isinstance(schema, dict) else schema.model_fields)
    if len(_visible) >= _MAX_VISIBLE:
        _visible.clear()
    _visible[id(tool)] = (tool, names)
    return names


def _tool_inputs(tool: Any, tool_input: Any) -> Any:
    """The tool's arguments without injected ones (InjectedState, ToolRuntime, store: plumbing, possibly huge)."""
    if not isinstance(tool_input, dict):
        return tool_input
    try:
        injected = tool._injected_args_keys
    except AttributeError:
        visible = _model_arguments(tool)
        return {k: v for k, v in tool_input.items() if k in visible}
    if injected:
        return {k: v for k, v in tool_input.items() if k not in injected}
    return tool_input


def _injected_hint(tool: Any, tool_input: Any) -> list[tuple[frozenset[str], frozenset[str]]] | None:
    """For a tool that records itself: the injected arguments its ``@openprogram.tool`` wrapper leaves out."""
    try:
        if not isinstance(tool_input, dict):
            return None
        wrapped = (getattr(tool, attribute, None) for attribute in ("func", "coroutine"))
        names = frozenset(n for n in (getattr(f, "__openprogram_tool__", None) for f in wrapped) if n)
        if not names:
            return None
        # What the model does not see was injected (``_injected_args_keys`` misses the
        # annotations of a function wrapped by @openprogram.tool; the model's schema does not).
        visible = _model_arguments(tool)
        keys = frozenset(k for k in tool_input if k not in visible)
        return [(names, keys)] if keys else None
    except Exception as exc:
        log_once(running_framework.get(), "BaseTool.run (finding injected arguments)", exc)
        return None


def _begin_tool(tool: Any, tool_input: Any) -> Opened | None:
    try:
        # A tool built on an ``@openprogram.tool`` function records its own call: not recorded twice.
        if records_itself(tool, "func", "coroutine"):
            return None
        name = tool.name
        return open_call(
            "tool", name if type(name) is str else str(name), running_framework.get(), _tool_inputs(tool, tool_input)
        )
    except NoSessionError:
        raise  # the "error" no-session policy
    except Exception as exc:
        log_once(running_framework.get(), "BaseTool.run (starting the tool call)", exc)
        return None


def _tool_output(result: Any) -> Any:
    # A ToolMessage (a ToolNode call): its content is the result; the whole message is in the node's output.
    return result.content if hasattr(result, "tool_call_id") and hasattr(result, "content") else result


def _wrap_tool_run(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def run(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return original(self, tool_input, *args, **kwargs)
        opened = _begin_tool(self, tool_input)
        if opened is None:
            hint = _injected_hint(self, tool_input)
            if hint is None:
                return original(self, tool_input, *args, **kwargs)
            token = injected_arguments.set(hint)
            try:
                return original(self, tool_input, *args, **kwargs)
            finally:
                injected_arguments.reset(token)
        try:
            result = original(self, tool_input, *args, **kwargs)
        except BaseException as exc:
            close_call(opened, exc)  # interrupt() inside the tool: "interrupted", registered control flow
            raise
        close_call(opened, None, _tool_output(result))
        return result

    return wraps_like(original)(run)


def _wrap_tool_arun(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def arun(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(self, tool_input, *args, **kwargs)
        opened = _begin_tool(self, tool_input)
        if opened is None:
            hint = _injected_hint(self, tool_input)
            if hint is None:
                return await original(self, tool_input, *args, **kwargs)
            token = injected_arguments.set(hint)
            try:
                return await original(self, tool_input, *args, **kwargs)
            finally:
                injected_arguments.reset(token)
        try:
            result = await original(self, tool_input, *args, **kwargs)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        close_call(opened, None, _tool_output(result))
        return result

    return wraps_like(original)(arun)


def _wrap_parse_input(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """Arguments rejected before the function of a tool that records itself ran: that tool's call, ``error``.

    (A tool recorded here has its call open already, and ends it with the same exception.)
    """

    def _parse_input(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, tool_input, *args, **kwargs)
        except Exception as exc:
            if integration.active and records_itself(self, "func", "coroutine"):
                _record_rejection(self, tool_input, exc)
            raise

    return wraps_like(original)(_parse_input)


def _sent_inputs(tool: Any, tool_input: Any) -> Any:
    """Rejected arguments as sent, without injected ones: names the tool's schema lacks are kept (the mistake)."""
    if not isinstance(tool_input, dict):
        return tool_input
    try:
        injected = tool._injected_args_keys
    except AttributeError:  # older langchain-core: what the tool takes and the model does not see
        injected = frozenset(tool.args) - _model_arguments(tool)
    return {k: v for k, v in tool_input.items() if k not in injected}


def _record_rejection(tool: Any, tool_input: Any, exc: BaseException) -> None:
    try:
        name = tool.name
        inputs = _sent_inputs(tool, tool_input)
        opened = open_call("tool", name if type(name) is str else str(name), running_framework.get(), inputs)
    except NoSessionError:
        return  # the "error" no-session policy: the tool's own call would have raised it; the rejection goes on
    except Exception as error:
        log_once(running_framework.get(), "BaseTool._parse_input (recording rejected arguments)", error)
        return
    if opened is not None:
        close_call(opened, exc)


TOOL_TARGETS: Sequence[Target] = (
    Target(_BASE_TOOL, "run", _wrap_tool_run),
    Target(_BASE_TOOL, "arun", _wrap_tool_arun),
    Target(_BASE_TOOL, "_parse_input", _wrap_parse_input),
)
"""The rows of the LangChain adapter's table for tools."""
