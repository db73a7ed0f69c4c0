"""Model calls: each request an agent sends to a chat model is one ``llm`` call, in one shape for every framework.

Adapters translate their framework's messages with :func:`message` and
:func:`tool_call`, its reply with :func:`reply`, its token counts with
:func:`usage`, and record the request with :class:`ModelCall` — or
:class:`ModelStream` for a streamed one, which joins what arrives into one reply.

The shapes (README.md, "Model calls")::

    inputs     {"messages": [{"role", "content", "tool_calls"?, "tool_call_id"?}], "tools"?: [names], "params"?: {...}}
    output     {"role": "assistant", "content", "tool_calls"?: [{"id", "name", "arguments"}], "finish_reason"?}
    attributes {"model", "provider"?, "stream"?: True, "usage"?: {"input_tokens", "output_tokens", "total_tokens"}}

With content capture off (``configure(capture_content=False)``) no message is
even built: the call keeps its model, usage, status and timing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from contextvars import Token
from types import TracebackType
from typing import Any, TypeVar

from .._capture import capture_json, content_captured, mapping_json
from .._recording import (
    ATTRIBUTES,
    CALL_ID,
    SESSION,
    begin_call,
    call_var,
    inflight,
    queue,
    session_var,
)
from .._runtime import NoSessionError, log_once, new_call_id
from .later import LaterCall
from .prompts import prompt_inputs, whole_inputs_json
from .scope import resolve

__all__ = [
    "ModelCall",
    "ModelStream",
    "message",
    "messages_of",
    "model_inputs",
    "reply",
    "role",
    "tool_call",
    "usage",
]

_Call = TypeVar("_Call", bound="ModelCall")
_Reply = TypeVar("_Reply")

_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}

# The client of each request being recorded, by the request's call id: a request that the same
# client makes again inside it (a ``stream()`` falling back to ``invoke()``, a subclass's
# ``call`` calling ``super().call``) is the same request, not a second one.
_clients: dict[Any, int] = {}


def role(raw: Any) -> str:
    """One of ``system``, ``user``, ``assistant``, ``tool`` for a framework's role name (``human``, ``ai``, ...)."""
    known = _ROLES.get(raw) if type(raw) is str else None
    if known is not None:
        return known
    text = str(getattr(raw, "value", raw) or "").lower()
    return _ROLES.get(text, text or "user")


def tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A tool call a model asked for; ``arguments`` given as JSON text are decoded when they are valid JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass  # a model's malformed arguments are recorded as it sent them
    return {
        "id": None if call_id is None else str(call_id),
        "name": None if name is None else str(name),
        "arguments": arguments,
    }


def message(
    message_role: Any,
    content: Any = None,
    *,
    tool_calls: Collection[dict[str, Any]] = (),
    tool_call_id: Any = None,
) -> dict[str, Any]:
    """One message of a request, in the one shape (``tool_calls`` as made by :func:`tool_call`)."""
    made: dict[str, Any] = {"role": role(message_role), "content": content}
    if tool_calls:
        made["tool_calls"] = list(tool_calls)
    if tool_call_id is not None:
        made["tool_call_id"] = str(tool_call_id)
    return made


def reply(
    content: Any = None, *, tool_calls: Collection[dict[str, Any]] = (), finish_reason: Any = None
) -> dict[str, Any]:
    """A model's reply: an ``llm`` call's output."""
    made: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        made["tool_calls"] = list(tool_calls)
    if finish_reason is not None:
        made["finish_reason"] = str(getattr(finish_reason, "value", finish_reason))
    return made


def usage(input_tokens: Any = None, output_tokens: Any = None, total_tokens: Any = None) -> dict[str, int] | None:
    """Token counts as the one ``usage`` attribute; None when the model reported none."""
    counts = {"input_tokens": _count(input_tokens), "output_tokens": _count(output_tokens)}
    total = _count(total_tokens)
    if total is None and None not in counts.values():
        total = counts["input_tokens"] + counts["output_tokens"]  # type: ignore[operator]
    counts["total_tokens"] = total
    found = {key: value for key, value in counts.items() if value is not None}
    return found or None


def _count(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# Framework messages already translated, by identity: a conversation's history is the same
# objects request after request, so each is translated once and the translations are the same
# objects too (which makes the prompt's comparison with the previous request an identity check).
# The framework's object is kept with its translation, so its id cannot be reused meanwhile.
_translated: dict[int, tuple[Any, list[dict[str, Any]]]] = {}
_TRANSLATED = 20_000
# The item lists of the latest requests and their translations, newest last: one a conversation's
# next request continues (a few, for agents that take turns).
_recent_requests: list[tuple[list[Any], list[dict[str, Any]]]] = []
_RECENT_REQUESTS = 8


def messages_of(items: Iterable[Any], translate: Callable[[Any], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A request's messages: ``translate(item)`` of each framework message, once per message object.

    For frameworks whose history is a list of message objects kept from request to request
    (LangChain, Pydantic AI, Semantic Kernel): translating the history again at every request
    made a request's cost grow with its history. An item that is a plain ``dict`` or ``str`` is
    translated every time (a framework may build those afresh, or change them in place).
    """
    items = list(items)  # our own: the framework may append to its list after this request
    made: list[dict[str, Any]] = []
    start = 0
    # A request that repeats an earlier request's items and adds some (a conversation growing):
    # the earlier translation is reused whole, checked by one list comparison in C (identity
    # first), so the work is the new items', not a dict lookup per item of the history.
    for earlier, translated in reversed(_recent_requests):
        n = len(earlier)
        if n <= len(items) and items[n - 1] is earlier[n - 1] and items[:n] == earlier:
            made, start = translated.copy(), n
            break
    found = _translated.get
    for item in items[start:] if start else items:
        kept = found(id(item))
        if kept is not None and kept[0] is item:
            made += kept[1]
            continue
        translation = translate(item)
        if type(item) not in (dict, str, list):
            if len(_translated) >= _TRANSLATED:
                _translated.clear()  # a bound, not a cache policy: the next request refills it
            _translated[id(item)] = (item, translation)
        made += translation
    if items:
        _recent_requests.append((items, made.copy()))
        if len(_recent_requests) > _RECENT_REQUESTS:
            del _recent_requests[0]
    return made


def model_inputs(
    messages: Iterable[dict[str, Any]],
    tools: Iterable[Any] | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``llm`` call's inputs: its messages, the names of the tools offered, the model parameters set."""
    inputs: dict[str, Any] = {"messages": list(messages)}
    names = [str(name) for name in tools or () if name is not None]
    if names:
        inputs["tools"] = names
    set_params = {key: value for key, value in (params or {}).items() if value is not None}
    if set_params:
        inputs["params"] = set_params
    return inputs


_USAGE_KEYS = {key: f'"{key}":' for key in ("input_tokens", "output_tokens", "total_tokens")}
_ALL_COUNTS = '"input_tokens":%d,"output_tokens":%d,"total_tokens":%d'
_prefixes: dict[tuple[str, Any, bool], str] = {}


def _attributes_prefix(name: str, provider: Any, stream: bool) -> str:
    """A model call's start attributes as JSON text without its closing brace, worked out once per model."""
    key = (name, provider, stream)
    prefix = _prefixes.get(key)
    if prefix is None:
        attributes: dict[str, Any] = {"model": name}
        if provider:
            attributes["provider"] = str(provider)
        if stream:
            attributes["stream"] = True
        prefix = mapping_json(attributes)[:-1]
        if len(_prefixes) < 1000:
            _prefixes[key] = prefix
    return prefix


def _prompt_inputs(framework: str, handle: Any, call_id: str, captured: dict[str, Any]) -> str:
    try:
        return prompt_inputs(handle, call_id, captured)
    except Exception as exc:  # a bug of ours: the prompt is kept all the same, whole, inline
        log_once(framework, "storing a request's messages once", exc)
        return whole_inputs_json(captured)


class ModelCall(LaterCall):
    """One request to a chat model: begun under the current call, current inside ``with call.current():``."""

    __slots__ = ("_entered", "_prefix", "captures_content")

    def __init__(self, rec: tuple[Any, ...], framework: str, captures_content: bool | None = None) -> None:
        super().__init__(rec, framework)
        self._prefix = "{"
        self._entered: list[tuple[Token[Any], Token[Any]]] = []  # one per ``with call:`` open
        # The content-capture switch read once, when the call began: its inputs and its reply follow
        # the same choice, and the environment is not read again for each.
        self.captures_content = content_captured() if captures_content is None else captures_content

    @classmethod
    def request(
        cls: type[_Call],
        framework: str,
        model: Any,
        inputs: Callable[[], dict[str, Any] | None] | None = None,
        *,
        provider: Any = None,
        stream: bool = False,
        client: object = None,
    ) -> _Call | None:
        """Begin the ``llm`` call of a request to ``model`` made by ``client``; None when it is not recorded.

        ``inputs()`` builds the request's :func:`model_inputs`; it is called only while content
        is captured, under the guard. Not recorded: no session under the policy, or a request the
        same ``client`` makes again inside its own (a fallback path of one request).
        """
        if client is not None and _clients and _clients.get(call_var.get()) == id(client):
            return None
        captures = content_captured()
        captured: dict[str, Any] | None = None
        if inputs is not None and captures:
            try:
                captured = inputs()
            except Exception as exc:
                log_once(framework, f"describing a request to {model!r}", exc)
        name = str(model) if model else "model"
        try:
            resolved = resolve(None, "a model call")
            if resolved is None:
                return None
            prefix = _attributes_prefix(name, provider, stream)
            call_id = new_call_id()
            # The prompt whole, its messages stored once (see prompts).
            inputs_json = None if captured is None else _prompt_inputs(framework, resolved[0], call_id, captured)
            # Begun without becoming current: the adapter makes it current around the request.
            rec = begin_call(resolved[0], resolved[1], "llm", name, framework, None, prefix + "}", call_id, inputs_json)
            call = cls(rec, framework, captures)
        except NoSessionError:
            raise  # the "error" no-session policy, by the user's choice
        except Exception as exc:
            log_once(framework, f"beginning a request to {name!r}", exc)
            return None
        if client is not None:
            _clients[call.rec[CALL_ID]] = id(client)
        call._prefix = prefix
        return call

    def __enter__(self) -> ModelCall:
        rec = self.rec
        call_id = rec[CALL_ID]
        self._entered.append((session_var.set(rec[SESSION]), call_var.set(call_id)))
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        s_token, c_token = self._entered.pop()
        call_var.reset(c_token)  # a ``with`` block leaves in the context it entered
        session_var.reset(s_token)

    def run(self, send: Callable[[], _Reply], answer: Callable[[ModelCall, _Reply], None]) -> _Reply:
        """Send the request as this call: ``answer(call, reply)`` ends it; an exception fails it and propagates."""
        try:
            with self:
                result = send()
        except BaseException as exc:
            self.failed(exc)
            raise
        answer(self, result)
        return result

    async def arun(self, send: Callable[[], Awaitable[_Reply]], answer: Callable[[ModelCall, _Reply], None]) -> _Reply:
        """:meth:`run` for a request that is awaited."""
        try:
            with self:
                result = await send()
        except BaseException as exc:
            self.failed(exc)
            raise
        answer(self, result)
        return result

    def end(
        self,
        exc: BaseException | None = None,
        output: Any = None,
        attributes: dict[str, Any] | None = None,
        status: str | None = None,
    ) -> None:
        _clients.pop(self.rec[CALL_ID], None)
        super().end(exc, output, attributes, status)

    def answered(self, output: dict[str, Any] | None, token_usage: dict[str, int] | None = None) -> None:
        """End the call with the model's reply (dropped while content is not captured) and its usage."""
        self.ended_with(None, output if self.captures_content else None, token_usage)

    def failed(self, exc: BaseException) -> None:
        """End the call with the exception the request raised (the caller re-raises it)."""
        self.ended_with(exc, None, None)

    def ended_with(
        self, exc: BaseException | None, output: Any, token_usage: dict[str, int] | None, status: str | None = None
    ) -> None:
        if token_usage and not self.ended:
            # The final attributes as JSON text: the start's, with the usage's integers appended.
            if len(token_usage) == 3:  # what usage() gives when the model reports both counts
                counts = _ALL_COUNTS % (
                    token_usage["input_tokens"],
                    token_usage["output_tokens"],
                    token_usage["total_tokens"],
                )
            else:
                counts = ",".join(
                    f"{_USAGE_KEYS[key]}{int(value)}" for key, value in token_usage.items() if key in _USAGE_KEYS
                )
            text = self._prefix + ',"usage":{' + counts + "}}"  # the prefix holds the model, at least
            self.rec = self.rec[:ATTRIBUTES] + (text,) + self.rec[ATTRIBUTES + 1 :]
        if exc is not None or status is not None or self.ended:
            self.end(exc, output, None, status)
            return
        # end_call(), inlined for the common case (a request answered): capture_json never raises.
        self.ended = True
        rec = self.rec
        _clients.pop(rec[CALL_ID], None)
        if inflight.pop(rec[CALL_ID], None) is not None:
            queue.extend(rec + ("ok", None if output is None else (capture_json(output),), None, time.time()))


class ModelStream(ModelCall):
    """A streamed request: what arrives is joined into one reply, recorded when the stream ends.

    Usable with the kit's ``steps_under_call``: :meth:`add` takes each item the stream yields
    and passes it to ``absorb(stream, item)``, the adapter's function that calls
    :meth:`add_text`, :meth:`add_tool_call`, :meth:`set_usage` and :meth:`set_finish_reason`.
    A stream the consumer abandons ends ``interrupted`` at once, with what arrived so far.
    """

    __slots__ = ("_calls", "_finish_reason", "_text", "_usage", "absorb", "count", "state")

    def __init__(self, rec: tuple[Any, ...], framework: str, captures_content: bool | None = None) -> None:
        super().__init__(rec, framework, captures_content)
        self._text: list[str] = []
        self._calls: dict[Any, dict[str, Any]] = {}
        self._usage: dict[str, int] | None = None
        self._finish_reason: Any = None
        self.count = 0
        self.absorb: Callable[[ModelStream, Any], None] | None = None
        self.state: Any = None  # the adapter's own running summary, if it keeps one

    def add(self, item: Any) -> None:
        self.count += 1
        if self.absorb is None:
            return
        try:
            self.absorb(self, item)
        except Exception as exc:
            log_once(self.framework, "reading a streamed model reply", exc)

    def add_text(self, text: Any) -> None:
        if text and len(self._text) < 100_000:
            self._text.append(str(text))

    def add_tool_call(self, index: Any, call_id: Any = None, name: Any = None, arguments: Any = None) -> None:
        """A tool call, or a piece of one: pieces with the same ``index`` are joined (their arguments as text)."""
        found = self._calls.get(index)
        if found is None:
            self._calls[index] = {"id": call_id, "name": name, "arguments": arguments}
            return
        found["id"] = found["id"] or call_id
        found["name"] = found["name"] or name
        if arguments:
            previous = found["arguments"]
            if isinstance(previous, str) and isinstance(arguments, str):
                found["arguments"] = previous + arguments
            else:
                found["arguments"] = arguments

    def set_usage(self, token_usage: dict[str, int] | None) -> None:
        if token_usage:
            self._usage = token_usage

    def set_finish_reason(self, finish_reason: Any) -> None:
        if finish_reason is not None:
            self._finish_reason = finish_reason

    def joined(self) -> dict[str, Any]:
        """The reply as far as it has arrived."""
        calls = [tool_call(c["id"], c["name"], c["arguments"]) for c in self._calls.values()]
        return reply("".join(self._text), tool_calls=calls, finish_reason=self._finish_reason)

    def finish(self, exc: BaseException | None) -> None:
        """End the call with the joined reply; a consumer's abandon (``GeneratorExit``) is ``interrupted``."""
        output = self.joined() if self.captures_content else None
        if isinstance(exc, GeneratorExit):
            self.ended_with(None, output, self._usage, status="interrupted")
        else:
            self.ended_with(exc, output, self._usage)
