"""A coding agent for the viewer tests, recorded offline: a real LangGraph ReAct loop over a scripted chat model.

The model reads files with a tool, then answers; which files and what answer is scripted per turn
(the number of user messages so far says which turn it is). It records a multi-turn chat, whose
later requests repeat the earlier turns as history, and a 500-step run whose last request holds
1,001 messages.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import openprogram
from openprogram.stores import Store

CHAT_AGENT = "coder"
#: (question, files read, answer) of each turn of the chat
CHAT = [
    (
        "Which file defines the retry policy?",
        ["src/retry.py"],
        "The retry policy is in src/retry.py: RetryPolicy makes 3 attempts, waiting 0.5 s, then twice as long.",
    ),
    (
        "Does the HTTP client use it?",
        ["src/http_client.py", "tests/test_http_client.py"],
        "Yes. HttpClient.send wraps every request in RetryPolicy.run, and test_retries_on_503 checks it.",
    ),
    (
        "Make the first wait one second.",
        ["src/retry.py"],
        "Change first_wait in RetryPolicy from 0.5 to 1.0; the waits become 1 s, 2 s and 4 s.",
    ),
]
FILES = {
    "src/retry.py": (
        "import time\n\n\nclass RetryPolicy:\n    attempts = 3\n    first_wait = 0.5\n\n"
        "    def run(self, send):\n        wait = self.first_wait\n        for attempt in range(self.attempts):\n"
        "            try:\n                return send()\n            except TransientError:\n"
        "                time.sleep(wait)\n                wait *= 2\n"
    ),
    "src/http_client.py": (
        "from .retry import RetryPolicy\n\n\nclass HttpClient:\n    def __init__(self):\n"
        "        self.retry = RetryPolicy()\n\n    def send(self, request):\n"
        "        return self.retry.run(lambda: self._transport(request))\n"
    ),
    "tests/test_http_client.py": (
        "def test_retries_on_503(server):\n    server.fail_next(2, status=503)\n"
        "    assert HttpClient().send(GET('/')).ok\n"
    ),
}
LONG_STEPS = 500
LONG_QUESTION = "Find where the answer is."
LONG_ANSWER = f"Read {LONG_STEPS} files; the answer is in file {LONG_STEPS - 1}."


def long_file(path: str) -> str:
    """A ~1,500-character file, different for every path (nothing in two requests alike by accident)."""
    line = f"def function_{path}(value):  # returns value scaled by the number in {path}\n"
    return (line * (1500 // len(line) + 1))[:1500]


def _graph(script: list[tuple[str, list[str], str]], checkpointer: Any = None) -> Any:
    """A ReAct loop (model, then its tool calls, until it answers) over a model that follows ``script``."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    class ScriptedCoder(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted-coder"

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            asked = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
            _, files, answer = script[len(asked) - 1]
            done = sum(isinstance(m, ToolMessage) for m in messages[asked[-1] :])
            # Tokens as words, so the session's figures look like a model's.
            read = sum(len(str(m.content).split()) + 4 for m in messages)
            if done < len(files):
                call = {"name": "read_file", "args": {"path": files[done]}, "id": f"call_{len(messages)}"}
                usage = {"input_tokens": read, "output_tokens": 12, "total_tokens": read + 12}
                reply = AIMessage("", tool_calls=[{**call, "type": "tool_call"}], usage_metadata=usage)
            else:
                said = len(answer.split())
                usage = {"input_tokens": read, "output_tokens": said, "total_tokens": read + said}
                reply = AIMessage(answer, usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return FILES.get(path) or long_file(path)

    model = ScriptedCoder()
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([read_file]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer, name="coder")


@dataclasses.dataclass
class Conversations:
    store: Store
    #: the three-turn chat
    chat: str
    #: the 500-step run
    long: str


def record_chat(store: Store) -> str:
    """Three turns of one conversation, each a ``session_context`` entry; the checkpointer keeps its history."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    agent = _graph(CHAT, InMemorySaver())
    session_id = None
    for question, _, _ in CHAT:
        with openprogram.session_context(session_id, store=store, agent_id=CHAT_AGENT) as handle:
            agent.invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "chat"}})
        session_id = handle.session_id
    assert session_id is not None
    return session_id


def record_long(store: Store, steps: int = LONG_STEPS) -> str:
    """One turn in which the agent reads ``steps`` files before it answers: ``steps`` + 1 model calls."""
    from langchain_core.messages import HumanMessage

    files = [f"src/file_{i}.py" for i in range(steps)]
    agent = _graph([(LONG_QUESTION, files, LONG_ANSWER)])
    with openprogram.session_context(store=store, agent_id="reader") as handle:
        agent.invoke({"messages": [HumanMessage(LONG_QUESTION)]}, {"recursion_limit": 2 * steps + 10})
    return handle.session_id


def record_conversations(store: Store) -> Conversations:
    """The chat and the long run, recorded with the LangGraph adapter on."""
    enabled = openprogram.instrument("langgraph")
    try:
        chat = record_chat(store)
        long = record_long(store)
    finally:
        openprogram.uninstrument(*enabled)
    openprogram.flush()
    return Conversations(store, chat, long)
