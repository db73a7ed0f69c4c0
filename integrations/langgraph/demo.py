"""The LangGraph part of ``openprogram demo``: an offline ReAct agent with parallel tools and one interrupt.

A scripted chat model (each request an ``llm`` call with its token usage) asks
for three tools at once (run in parallel by a ``ToolNode``), the agent loops back, and a review node pauses with
``interrupt()``; the demo answers with ``Command(resume=...)`` on the same
thread, so both runs land in the demo's session. Continued (``openprogram demo --session ID``), the agent
is given the session's history (``openprogram.history()``) and its answer says what it was asked before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["run_demo"]

QUESTION = "Weather in Paris, population of Oslo?"


def _build_graph() -> Any:
    import operator
    from typing import Annotated, TypedDict

    import openprogram
    from langchain_core.language_models import LangSmithParams
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
    from langchain_core.outputs import ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import interrupt

    @tool
    def weather(city: str) -> str:
        """Today's weather in a city (offline)."""
        return {"Paris": "sunny, 21C", "Oslo": "rain, 9C"}.get(city, "unknown")

    @tool
    def population(city: str) -> int:
        """Population of a city (offline)."""
        return {"Paris": 2_100_000, "Oslo": 710_000}.get(city, 0)

    @tool
    @openprogram.tool
    def note(text: str) -> str:
        """Keep a note in the session (an @openprogram.tool used as a LangChain tool)."""
        handle = openprogram.require_current_session()
        return f"noted in session {handle.session_id}: {text}"

    class DemoChatModel(GenericFakeChatModel):
        """Scripted replies, reported as a provider's model reports them: a name and token usage."""

        model_name: str = "demo-chat"

        def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
            return LangSmithParams(ls_provider="offline", ls_model_name=self.model_name, ls_model_type="chat")

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            # The scripted answer, and what the model remembers: the questions it was given before this one.
            result = super()._generate(messages, *args, **kwargs)
            answer = result.generations[0].message
            asked = [str(m.content) for m in messages if m.type == "human"][:-1]
            if asked and not getattr(answer, "tool_calls", None):
                remembered = f"{answer.content} (You asked me before: {asked[-1]!r}.)"
                result.generations[0].message = answer.model_copy(update={"content": remembered})
            return result

    model = DemoChatModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "weather", "args": {"city": "Paris"}, "id": "call-1", "type": "tool_call"},
                        {"name": "population", "args": {"city": "Oslo"}, "id": "call-2", "type": "tool_call"},
                        {
                            "name": "note",
                            "args": {"text": "compare Paris and Oslo"},
                            "id": "call-3",
                            "type": "tool_call",
                        },
                    ],
                    usage_metadata={"input_tokens": 9, "output_tokens": 42, "total_tokens": 51},
                    response_metadata={"finish_reason": "tool_calls"},
                ),
                AIMessage(
                    "Paris is sunny (21C); Oslo has 710,000 people.",
                    usage_metadata={"input_tokens": 88, "output_tokens": 12, "total_tokens": 100},
                    response_metadata={"finish_reason": "stop"},
                ),
            ]
        )
    )

    # Functional form: the annotations are objects, not strings to resolve in this function's scope.
    State = TypedDict(  # noqa: UP013
        "State",
        {"messages": Annotated[list[AnyMessage], add_messages], "decisions": Annotated[list[str], operator.add]},
    )

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def review(state: Any) -> dict[str, Any]:
        answer = interrupt({"question": "Publish this answer?", "draft": state["messages"][-1].content})
        return {"decisions": [str(answer)]}

    def route(state: Any) -> str:
        return "tools" if tools_condition(state) == "tools" else "review"

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([weather, population, note]))
    graph.add_node("review", review)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", "review"])
    graph.add_edge("tools", "agent")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=InMemorySaver(), name="demo_agent")


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the offline LangGraph agent in the current session, answer its interrupt, report on ``emit``."""
    from langchain_core.messages import HumanMessage
    from langgraph.types import Command
    from openprogram.integrations.langchain import as_messages

    graph = _build_graph()
    config = {"configurable": {"thread_id": f"demo-{uuid.uuid4().hex[:12]}"}}
    earlier = _earlier_conversation(emit)
    if earlier:
        emit(f"langgraph: agent given openprogram.history(agent='demo_agent'): {len(earlier)} earlier messages")
    paused = graph.invoke({"messages": [*as_messages(earlier), HumanMessage(QUESTION)]}, config)
    question = paused["__interrupt__"][0].value
    emit(f"langgraph: agent paused: {question['question']} (draft: {question['draft']!r})")
    done = graph.invoke(Command(resume="approved"), config)
    thread = config["configurable"]["thread_id"]
    emit(f"langgraph: resumed with 'approved' -> decisions {done['decisions']}; thread {thread}")


def _earlier_conversation(emit: Callable[[str], None]) -> list[dict[str, Any]]:
    """The demo agent's conversation in the session's earlier turns (none in a new session)."""
    import openprogram

    try:
        return openprogram.history(agent="demo_agent")
    except ValueError as exc:  # recorded with content capture off: the agent starts afresh
        emit(f"langgraph: agent not given the history: {exc}")
        return []
