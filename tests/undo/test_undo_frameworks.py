"""Framework-native tools undone by their recorded names: a LangChain tool in LangGraph, CrewAI tools, SK functions.

Each framework runs for real, its model replaced by an offline fake at the model boundary.
Needs ``openprogram[all]``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from typing import Any

import openprogram
from openprogram.integrations.crewai.fakes import CREWAI_OFFLINE_ENV  # imports no crewai
from openprogram.stores import Store

from tests.support import calls

# CrewAI reads these when it is imported (and writes under HOME): in place before any test imports it.
_crewai_home = tempfile.mkdtemp(prefix="openprogram_undo_crewai_")
os.environ.update(
    {
        "HOME": _crewai_home,
        "XDG_DATA_HOME": f"{_crewai_home}/.local/share",
        "CREWAI_STORAGE_DIR": f"{_crewai_home}/storage",
        **CREWAI_OFFLINE_ENV,
    }
)


class Bookings:
    """A stand-in for an external booking system."""

    def __init__(self) -> None:
        self.held: dict[str, str] = {}
        self.released: list[str] = []

    def hold(self, what: str) -> str:
        self.held[what] = f"booking-{what}"
        return self.held[what]

    def release(self, what: str, booking: str) -> str:
        assert self.held.pop(what) == booking
        self.released.append(what)
        return f"released {booking}"


def _newest_first(store: Store, session_id: str, name: str) -> list[str]:
    """Call ids of the session's ``name`` calls, newest first: the order undo compensates them."""
    found = [c for c in calls(store, session_id) if c.name == name and c.kind in ("tool", "function")]
    return [c.call_id for c in sorted(found, key=lambda c: (c.started_at, c.call_id), reverse=True)]


def test_a_langchain_tool_in_a_langgraph_agent_is_undone_by_its_name(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    instrument("langgraph")
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import MessagesState
    from langgraph.prebuilt import ToolNode, tools_condition

    bookings = Bookings()

    @tool
    def book_room(room: str) -> str:
        """Book a hotel room."""
        return bookings.hold(room)

    @openprogram.tool
    def book_taxi_trip(to: str) -> str:
        return bookings.hold(f"taxi to {to}")

    @tool
    def book_taxi(to: str) -> str:
        """Book a taxi (built on an undoable openprogram tool)."""
        return book_taxi_trip(to)

    book_taxi_trip.undo(lambda effect: bookings.release(f"taxi to {effect.inputs['to']}", effect.output))
    undone: list[openprogram.Effect] = []

    def release_room(effect: openprogram.Effect) -> str:
        undone.append(effect)
        return bookings.release(effect.inputs["room"], effect.output)

    openprogram.register_undo("book_room", release_room)

    class ScriptedModel(BaseChatModel):
        """Asks for one booking per turn, then answers (offline)."""

        replies: list[AIMessage]

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            turn = sum(1 for m in messages if isinstance(m, AIMessage))
            return ChatResult(generations=[ChatGeneration(message=self.replies[turn])])

    def asks(name: str, args: dict[str, str]) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}", "type": "tool_call"}])

    model = ScriptedModel(
        replies=[
            asks("book_room", {"room": "101"}),
            asks("book_taxi", {"to": "airport"}),
            asks("book_room", {"room": "102"}),
            AIMessage("all booked"),
        ]
    )
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([book_room, book_taxi]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    agent = graph.compile()

    with openprogram.session_context(store=store) as h:
        agent.invoke({"messages": [HumanMessage("book my trip")]})
    assert set(bookings.held) == {"101", "102", "taxi to airport"}
    rooms = _newest_first(store, h.session_id, "book_room")

    plan = openprogram.undo(h.session_id, store=store)

    assert bookings.held == {} and bookings.released == ["102", "taxi to airport", "101"]
    assert [e.call_id for e in undone] == rooms and [e.framework for e in undone] == ["langgraph"] * 2
    assert [e.output for e in undone] == ["booking-102", "booking-101"]
    assert [e.name for e in plan] == ["book_room", "book_taxi_trip", "book_room"]
    recorded = calls(store, h.session_id)
    assert all(c.attributes and c.attributes["effect"] == "undone" for c in recorded if c.call_id in rooms)
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0


def test_crewai_tools_are_undone_by_their_names(store: Store, instrument: Callable[..., set[str]]) -> None:
    instrument("crewai")
    from crewai import Agent, Crew, Task
    from crewai.tools import BaseTool, tool
    from openprogram.integrations.crewai.fakes import scripted_llm

    bookings = Bookings()

    @tool("reserve_table")
    def reserve_table(table: str) -> str:
        """Reserve a restaurant table."""
        return bookings.hold(f"table {table}")

    class OrderFlowers(BaseTool):
        name: str = "order_flowers"
        description: str = "Order flowers for the table."

        def _run(self, kind: str) -> str:
            return bookings.hold(f"flowers {kind}")

    undone: list[openprogram.Effect] = []

    def cancel(what: Callable[[openprogram.Effect], str]) -> Callable[[openprogram.Effect], str]:
        def compensation(effect: openprogram.Effect) -> str:
            undone.append(effect)
            return bookings.release(what(effect), f"booking-{what(effect)}")

        return compensation

    openprogram.register_undo("reserve_table", cancel(lambda e: f"table {e.inputs['table']}"))
    openprogram.register_undo("order_flowers", cancel(lambda e: f"flowers {e.inputs['kind']}"))
    llm = scripted_llm([("reserve_table", {"table": "7"}), ("order_flowers", {"kind": "tulips"})], final="set")
    host = Agent(
        role="Host", goal="prepare dinner", backstory="offline", llm=llm, tools=[reserve_table, OrderFlowers()]
    )
    crew = Crew(agents=[host], tasks=[Task(description="prepare dinner", expected_output="text", agent=host)])

    with openprogram.session_context(store=store) as h:
        crew.kickoff()
    assert set(bookings.held) == {"table 7", "flowers tulips"}

    openprogram.undo(h.session_id, store=store)

    assert bookings.held == {} and bookings.released == ["flowers tulips", "table 7"]
    assert [(e.name, e.framework, e.inputs) for e in undone] == [
        ("order_flowers", "crewai", {"kind": "tulips"}),
        ("reserve_table", "crewai", {"table": "7"}),
    ]
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0


def test_semantic_kernel_functions_are_undone_by_their_names(store: Store, instrument: Callable[..., set[str]]) -> None:
    instrument("semantic_kernel")
    from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, tools_then_answer
    from semantic_kernel import Kernel
    from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
    from semantic_kernel.functions import KernelArguments, kernel_function

    bookings = Bookings()

    class Rooms:
        @kernel_function(name="book", description="Book a meeting room.")
        def book(self, room: str) -> str:
            return bookings.hold(room)

    undone: list[openprogram.Effect] = []

    def release(effect: openprogram.Effect) -> str:
        undone.append(effect)
        return bookings.release(effect.inputs["room"], effect.output)

    openprogram.register_undo("rooms.book", release)
    asked = [("rooms", "book", {"room": "A"}), ("rooms", "book", {"room": "B"})]
    service = ScriptedChatService(default_step=tools_then_answer(asked, "booked"))
    kernel = Kernel()
    kernel.add_plugin(Rooms(), "rooms")
    kernel.add_service(service)
    settings = OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())

    async def run() -> str:
        async with openprogram.session_context(store=store) as h:
            await kernel.invoke_prompt("book rooms A and B", arguments=KernelArguments(settings=settings))
            await kernel.invoke(plugin_name="rooms", function_name="book", room="C")
        return h.session_id

    session_id = asyncio.run(run())
    assert set(bookings.held) == {"A", "B", "C"}
    booked = _newest_first(store, session_id, "rooms.book")

    openprogram.undo(session_id, store=store)

    assert bookings.held == {} and [e.call_id for e in undone] == booked
    assert bookings.released[0] == "C" and sorted(bookings.released) == ["A", "B", "C"]
    assert {e.framework for e in undone} == {"semantic_kernel"}
    assert len(openprogram.undo(session_id, dry_run=True, store=store)) == 0
