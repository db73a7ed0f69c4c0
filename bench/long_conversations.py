"""Long conversations: what a ReAct agent's record costs on disk as its conversation grows, and what it keeps.

A LangGraph ReAct agent (``create_react_agent``) whose scripted model reads one file a step (each
result about 1,500 characters) and answers after N steps, recorded into a fresh SQLite store. For
each N it prints the store's bytes, the bytes of the conversation's distinct messages encoded once
(JSON in the one message shape, the baseline), their ratio, and what the last model call's record
kept of the messages the model was sent.

``--instructions`` counts instead, under callgrind, the instructions one model call costs until
durable (the writer included) with 10, 100 and 400 messages of history (new messages: 2 a request),
its messages described as an adapter does (``messages_of`` over message objects).

    python bench/long_conversations.py [--steps 50 100 200 500]
    python bench/long_conversations.py --instructions
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from typing import Any

STEPS = (50, 100, 200, 500)
HISTORIES = (10, 100, 400)
RESULT_CHARS = 1_500
REQUESTS = 20  # model calls counted at each history length


def _file_text(index: int) -> str:
    """A deterministic ~1,500-character file, different for every index (nothing shared by accident)."""
    line = f"def function_{index}(value):  # file {index}: returns value scaled by {index}\n"
    return (line * (RESULT_CHARS // len(line) + 1))[:RESULT_CHARS]


def _agent(steps: int) -> tuple[Any, list[Any]]:
    """The ReAct agent and the list the model appends each request's messages to."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    requests: list[Any] = []

    class Reader(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted-reader"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Reader:
            return self

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            requests.append(list(messages))
            done = sum(isinstance(m, ToolMessage) for m in messages)
            if done >= steps:
                reply = AIMessage(f"Read {done} files; the answer is in file {done - 1}.")
            else:
                call = {"name": "read_file", "args": {"path": f"src/file_{done}.py"}, "id": f"call_{done}"}
                reply = AIMessage("", tool_calls=[{**call, "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return _file_text(int(path.rsplit("_", 1)[1].split(".", maxsplit=1)[0]))

    return create_react_agent(Reader(), [read_file]), requests


def _shape(message: Any) -> dict[str, Any]:
    """A LangChain message in the one message shape (role, content, tool_calls, tool_call_id)."""
    role = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}[message.type]
    shaped: dict[str, Any] = {"role": role, "content": message.content}
    if getattr(message, "tool_calls", None):
        shaped["tool_calls"] = [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in message.tool_calls]
    if getattr(message, "tool_call_id", None):
        shaped["tool_call_id"] = message.tool_call_id
    return shaped


def _store_bytes(path: str) -> int:
    """The SQLite file's size with its write-ahead log folded in."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path)


def measure(steps: int) -> dict[str, Any]:
    """Record one conversation of ``steps`` tool steps; its bytes on disk and what its last request kept."""
    import openprogram
    from langchain_core.messages import HumanMessage

    agent, requests = _agent(steps)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "sessions.db")
        store = openprogram.open_store(f"sqlite:///{path}")
        with openprogram.session_context(store=store) as handle:
            result = agent.invoke(
                {"messages": [HumanMessage("Find where the answer is.")]}, {"recursion_limit": 4 * steps + 10}
            )
        openprogram.flush()
        model_calls = [c for c in store.list_calls(handle.session_id) if c.kind == "llm"]
        store.close()
        on_disk = _store_bytes(path)
    distinct = [*requests[-1], result["messages"][-1]]
    baseline = sum(len(json.dumps(_shape(m))) for m in distinct)
    sent = [_shape(m) for m in requests[-1]]
    kept = model_calls[-1].inputs.get("messages", []) if model_calls else []
    intact = sum(k == m for k, m in zip(kept, sent, strict=False))  # exactly as sent
    return {
        "steps": steps,
        "requests": len(requests),
        "bytes": on_disk,
        "distinct_bytes": baseline,
        "ratio": on_disk / baseline,
        "last_sent": len(sent),
        "last_kept": len(kept),
        "last_intact": intact,
        "newest_kept": len(kept) == len(sent) and kept[-1] == sent[-1],
    }


class _Message:
    """A framework's message object, as a LangChain or Pydantic AI history holds them."""

    __slots__ = ("call_id", "role", "text")

    def __init__(self, role: str, text: str, call_id: str | None = None) -> None:
        self.role, self.text, self.call_id = role, text, call_id


def _translate(item: _Message) -> list[dict[str, Any]]:
    """An adapter's translation of one message into the one shape."""
    from openprogram._kit import message, tool_call

    if item.role == "assistant":
        arguments = {"path": f"src/file_{item.call_id}.py"}
        return [message("assistant", "", tool_calls=[tool_call(item.call_id, "read_file", arguments)])]
    return [message(item.role, item.text, tool_call_id=item.call_id)]


def _step(index: int) -> list[_Message]:
    """One step of the conversation: the model's tool call and the tool's result."""
    return [_Message("assistant", "", f"call_{index}"), _Message("tool", _file_text(index), f"call_{index}")]


def _child(history: int, requests: int) -> None:
    """A conversation of ``history`` messages, then ``requests`` model calls that each add 2, made durable.

    Each request is described as an adapter does (``messages_of`` over the history's message
    objects) and recorded until durable; the warm-up request with the history alone runs in
    both counts, so the difference is what the added requests cost.
    """
    import openprogram
    from openprogram import _kit
    from openprogram._kit import ModelCall, model_inputs, reply, usage

    # Before messages_of (issue 41) an adapter translated the whole history at every request.
    messages_of = getattr(_kit, "messages_of", None) or (lambda items, each: [m for i in items for m in each(i)])

    conversation = [_Message("user", "Find where the answer is.")]
    index = 0
    while len(conversation) < history:
        conversation += _step(index)
        index += 1
    with openprogram.session_context(store="memory://"):
        for request in range(requests + 1):
            if request:
                conversation += _step(index)
                index += 1
            sent = list(conversation)
            describe = lambda sent=sent: model_inputs(messages_of(sent, _translate))  # noqa: E731
            call = ModelCall.request("bench", "fake-model", describe)
            assert call is not None
            with call:
                pass
            call.answered(reply("next"), usage(100 * len(sent), 10))
            if request == 0:
                openprogram.flush()
        openprogram.flush()


def instructions() -> dict[int, float]:
    """Instructions per model call at each history length: callgrind totals at 0 and REQUESTS calls, differenced."""
    per_request: dict[int, float] = {}
    for history in HISTORIES:
        totals = []
        for requests in (0, REQUESTS):
            out = tempfile.mktemp(prefix="op-long-", suffix=".out")
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__]
            subprocess.run([*command, "--child", str(history), str(requests)], check=True, capture_output=True)
            with open(out) as file:
                totals.append(next(int(line.split()[1]) for line in file if line.startswith("totals:")))
            os.unlink(out)
        per_request[history] = (totals[1] - totals[0]) / REQUESTS
        print(f"{history:>4} messages of history: {per_request[history] / 1000:8.1f}k instructions a model call")
    return per_request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS))
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    if args.instructions:
        instructions()
        return 0
    import warnings

    import openprogram

    warnings.simplefilter(
        "ignore", DeprecationWarning
    )  # create_react_agent, as a user of LangGraph 1.x still writes it
    openprogram.instrument("langgraph")
    print("steps  requests  store bytes  distinct once  ratio  last request: sent / kept / intact / newest intact")
    for steps in args.steps:
        r = measure(steps)
        print(
            f"{r['steps']:>5}  {r['requests']:>8}  {r['bytes']:>11,}  {r['distinct_bytes']:>13,}  {r['ratio']:>5.1f}"
            f"  {r['last_sent']} / {r['last_kept']} / {r['last_intact']} / {'yes' if r['newest_kept'] else 'no'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
