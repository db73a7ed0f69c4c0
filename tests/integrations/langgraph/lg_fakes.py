"""Offline LangGraph graphs for the adapter tests: a scripted chat model, real graphs, real tools."""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

import openprogram
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

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


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[{"name": name, "args": args, "id": f"call-{i}", "type": "tool_call"}
                    for i, (name, args) in enumerate(calls)],
    )  # fmt: skip


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

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        reply = self.replies[self.position % len(self.replies)]
        self.position += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])


def scripted_model(*replies: AIMessage) -> ScriptedChatModel:
    """A chat model that answers with ``replies`` in order, cycling (no network, no bind_tools needed)."""
    return ScriptedChatModel(replies=list(replies))


def agent_graph(model: BaseChatModel, tools: list[Any], checkpointer: Any = None, **tool_node: Any) -> Any:
    """The classic ReAct loop: agent -> (tool calls?) -> tools -> agent ... -> END."""

    def agent(state: Chat) -> dict[str, Any]:
        note("node:agent")
        return {"messages": [model.invoke(state["messages"])]}

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
