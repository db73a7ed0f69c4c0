"""Offline LangGraph graphs for the adapter tests: scripted chat models, real graphs, real tools."""

from __future__ import annotations

import asyncio
import itertools
import json
import operator
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Annotated, Any, TypedDict

import openprogram
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field, PrivateAttr

#: Everything a node or tool saw as its session, appended as it ran: (where, session id or None).
seen: list[tuple[str, str | None]] = []


def note(where: str) -> None:
    handle = openprogram.get_current_session()
    seen.append((where, None if handle is None else handle.session_id))


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    note("tool:add")
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    note("tool:multiply")
    return a * b


@tool
def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    note("tool:subtract")
    return a - b


@tool
async def negate(a: int) -> int:
    """Negate an integer (async tool)."""
    note("tool:negate")
    return -a


def one_node_graph(checkpointer: Any = None) -> Any:
    """A graph of one node that notes the session it ran in."""

    def node(state: Log) -> dict[str, Any]:
        note("node")
        return {"log": ["done"]}

    g = StateGraph(Log)
    g.add_node("node", node)
    g.add_edge(START, "node")
    return g.compile(checkpointer=checkpointer)


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call-{i}", "type": "tool_call"} for i, (name, args) in enumerate(calls)
        ],
    )


class ScriptedChatModel(BaseChatModel):
    """A real LangChain chat model that answers with scripted messages in order (offline).

    No ``_stream``: streaming (``stream_mode="messages"``, ``astream_events``) falls
    back to one chunk per reply, tool calls included.
    """

    replies: list[AIMessage]
    position: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        reply = self.replies[self.position % len(self.replies)]
        self.position += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])


def scripted_model(*replies: AIMessage) -> ScriptedChatModel:
    """A chat model that answers with ``replies`` in order, cycling (no network, no bind_tools needed)."""
    return ScriptedChatModel(replies=list(replies))


def agent_graph(model: Runnable[Any, Any], tools: list[Any], checkpointer: Any = None, **tool_node: Any) -> Any:
    """The classic ReAct loop: agent -> (tool calls?) -> tools -> agent ... -> END."""

    def agent(state: Chat) -> dict[str, Any]:
        note("node:agent")
        return {"messages": [model.invoke(state["messages"])]}

    return react_graph(agent, tools, checkpointer, **tool_node)


def react_graph(agent: Any, tools: list[Any], checkpointer: Any = None, **tool_node: Any) -> Any:
    """The ReAct loop around the node ``agent``."""
    g = StateGraph(Chat)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode(tools, **tool_node))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def one_tool_call_graph(a_tool: Any, args: dict[str, Any], state: Any, checkpointer: Any = None) -> Any:
    """A model turn asking for one call of ``a_tool`` with ``args``, a ToolNode running it, the end."""

    def model(_: dict[str, Any]) -> dict[str, Any]:
        call = {"name": a_tool.name, "args": args, "id": "c1", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    g = StateGraph(state)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([a_tool]))
    g.add_edge(START, "model")
    g.add_edge("model", "tools")
    g.add_edge("tools", END)
    return g.compile(checkpointer=checkpointer)


def chain_graph(names: tuple[str, ...] = ("first", "second")) -> Any:
    """Sync nodes in a line; each appends its name and notes its session."""
    g = StateGraph(Log)
    for name in names:

        def node(state: Log, _name: str = name) -> dict[str, Any]:
            note(f"node:{_name}")
            return {"log": [_name]}

        g.add_node(name, node)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def tool_message_contents(result: dict[str, Any]) -> list[str]:
    return [m.content for m in result["messages"] if isinstance(m, ToolMessage)]


# --- chat models reporting what ChatOpenAI reports -----------------------------------

OPENAI_MODEL = "gpt-4o-mini"
OPENAI_SNAPSHOT = "gpt-4o-mini-2024-07-18"  # the name OpenAI answers with


def words(text: Any) -> int:
    """The fakes' token count: words."""
    return len(str(text).split())


def openai_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """``usage_metadata`` as ChatOpenAI fills it."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_token_details": {"audio": 0, "cache_read": 0},
        "output_token_details": {"audio": 0, "reasoning": 0},
    }


class ProviderError(Exception):
    """What a provider's client raises (a rate limit, an outage)."""


class OpenAIStyleChatModel(BaseChatModel):
    """Answers with ``replies`` in order, cycling, as ChatOpenAI reports them (offline).

    ``bind_tools`` binds the tools in OpenAI's format; every reply carries ``usage_metadata``
    (input tokens: the words of the request, output tokens: the words of the reply), its
    finish reason and the model's dated name, as ChatOpenAI's do. Every request's messages
    and keywords are kept in ``requests``.
    """

    model_name: str = OPENAI_MODEL
    temperature: float | None = None
    max_tokens: int | None = None
    replies: list[AIMessage]
    requests: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)
    _next: Iterator[int] = PrivateAttr(default_factory=itertools.count)  # batch() asks from threads

    @property
    def _llm_type(self) -> str:
        return "openai-chat"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        model = kwargs.get("model", self.model_name)
        temperature = kwargs.get("temperature", self.temperature)
        params = LangSmithParams(ls_provider="openai", ls_model_name=model, ls_model_type="chat")
        if temperature is not None:
            params["ls_temperature"] = temperature
        if self.max_tokens is not None:
            params["ls_max_tokens"] = self.max_tokens
        if stop:
            params["ls_stop"] = stop
        return params

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def answer(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        """The next scripted reply, with the metadata ChatOpenAI gives a reply."""
        self.requests.append((list(messages), kwargs))
        scripted = self.replies[next(self._next) % len(self.replies)]
        asked = sum(words(m.content) for m in messages)
        finish = "tool_calls" if scripted.tool_calls else "stop"
        return scripted.model_copy(
            update={
                "usage_metadata": openai_usage(asked, words(scripted.content) + len(scripted.tool_calls)),
                "response_metadata": {"model_name": OPENAI_SNAPSHOT, "finish_reason": finish},
            }
        )

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.answer(messages, kwargs))])


class StreamingChatModel(OpenAIStyleChatModel):
    """Streams its replies as ChatOpenAI does with ``stream_usage=True``: a chunk per word or per piece
    of a tool call's arguments, the finish reason on the last content chunk, then an empty chunk
    carrying the usage."""

    def chunks(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> list[AIMessageChunk]:
        whole = self.answer(messages, kwargs)
        text = str(whole.content)
        pieces = [AIMessageChunk(content=word) for word in text.replace(" ", "\0 ").split("\0") if text]
        for index, call in enumerate(whole.tool_calls):
            arguments = json.dumps(call["args"])
            half = len(arguments) // 2
            pieces.append(_tool_call_piece(index, call["id"], call["name"], ""))
            pieces.append(_tool_call_piece(index, None, None, arguments[:half]))
            pieces.append(_tool_call_piece(index, None, None, arguments[half:]))
        pieces.append(AIMessageChunk(content="", response_metadata=dict(whole.response_metadata)))
        pieces.append(AIMessageChunk(content="", usage_metadata=whole.usage_metadata))
        return pieces

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for piece in self.chunks(messages, kwargs):
            yield ChatGenerationChunk(message=piece)

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for piece in self.chunks(messages, kwargs):
            await asyncio.sleep(0)
            yield ChatGenerationChunk(message=piece)


def _tool_call_piece(index: int, call_id: str | None, name: str | None, arguments: str) -> AIMessageChunk:
    piece = {"name": name, "args": arguments, "id": call_id, "index": index, "type": "tool_call_chunk"}
    return AIMessageChunk(content="", tool_call_chunks=[piece])


class FailingChatModel(StreamingChatModel):
    """Raises ``error`` (the same object every time): at once when invoked, after ``streamed`` chunks when streamed."""

    streamed: int = 1
    _error: ProviderError = PrivateAttr(default_factory=lambda: ProviderError("429: rate limit reached"))

    @property
    def error(self) -> ProviderError:
        return self._error

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        raise self._error

    def chunks(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> list[AIMessageChunk]:
        return super().chunks(messages, kwargs)[: self.streamed]

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        yield from super()._stream(messages, stop, run_manager, **kwargs)
        raise self._error

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
        raise self._error


def openai_model(*replies: AIMessage, streaming: bool = False, **fields: Any) -> OpenAIStyleChatModel:
    """A ChatOpenAI-like model answering ``replies`` in order (``streaming``: one that streams them)."""
    cls = StreamingChatModel if streaming else OpenAIStyleChatModel
    return cls(replies=list(replies), requests=[], **fields)


# --- a long conversation: a ReAct agent reading one file a step -------------------------------


def file_text(index: int, size: int = 1_500) -> str:
    """A deterministic file of ``size`` characters, different for every index."""
    line = f"def function_{index}(value):  # file {index}: returns value scaled by {index}\n"
    return (line * (size // len(line) + 1))[:size]


class FileReader(BaseChatModel):
    """Asks to read ``src/file_<n>.py`` at its n-th request for ``steps`` requests, then answers (offline).

    The step is the count of requests, not of the tool results it is sent, so it reads on even when
    a hook trims what it is sent. Every request's messages are kept in ``requests``, as received.
    """

    steps: int
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "file-reader"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        done = len(self.requests)
        self.requests.append(list(messages))
        if done >= self.steps:
            reply = AIMessage(f"Read {done} files.")
        else:
            call = {"name": "read_file", "args": {"path": f"src/file_{done}.py"}, "id": f"call_{done}"}
            reply = AIMessage("", tool_calls=[{**call, "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def read_file_tool(sizes: dict[int, int] | None = None) -> Any:
    """The ``read_file`` tool: file n is ``file_text(n)``, of ``sizes[n]`` characters where given."""

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        index = int(path.removeprefix("src/file_").removesuffix(".py"))
        return file_text(index, (sizes or {}).get(index, 1_500))

    return read_file
