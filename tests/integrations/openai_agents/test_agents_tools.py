"""Function tools (``@function_tool``, sync and async) are ``tool`` calls with the session visible inside them."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

import openprogram
import pytest
from agents import Agent, RunContextWrapper, Runner, UserError, function_tool
from openprogram.integrations.openai_agents.demo import scripted_model
from openprogram.stores import Store

from tests.integrations.openai_agents.helpers import parent_of
from tests.support import attributes, by_kind, calls, one

SEEN: dict[str, tuple[Any, str | None, str]] = {}  # tool -> (session, current call id, thread name)


def _seen(name: str) -> None:
    SEEN[name] = (openprogram.get_current_session(), openprogram.current_call_id(), threading.current_thread().name)


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    _seen("lookup")
    return f"value of {key}"


@function_tool
async def fetch(url: str) -> str:
    """Fetch a page."""
    await asyncio.sleep(0.001)
    _seen("fetch")
    return f"page {url}"


async def test_sync_and_async_tools_called_in_parallel_are_tool_calls_seeing_their_call_and_session(
    store: Store,
) -> None:
    SEEN.clear()
    agent = Agent(
        name="Researcher",
        tools=[lookup, fetch],
        model=scripted_model([[("lookup", {"key": "a"}), ("fetch", {"url": "u"})], "both done"]),
    )
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(agent, "go")).final_output == "both done"
    records = calls(store, h.session_id)
    agent_call = one(records, "Researcher", "agent")
    for name in ("lookup", "fetch"):
        tool = one(records, name, "tool")
        assert parent_of(records, tool) == agent_call and tool.status == "ok"
        assert attributes(tool)["tool_call_id"].startswith("call_")
        handle, call_id, _ = SEEN[name]
        assert (handle.session_id, call_id) == (h.session_id, tool.call_id)
    assert SEEN["lookup"][2] != threading.current_thread().name  # the SDK runs a sync tool in a worker thread
    first, second = by_kind(records, "llm")
    tools = by_kind(records, "tool")
    assert first.ended_at <= min(t.started_at for t in tools) and max(t.ended_at for t in tools) <= second.started_at


@function_tool
def flaky(order_id: str) -> str:
    """Fetch an order (fails)."""
    raise ValueError(f"no order {order_id}")


async def test_tool_error_the_sdk_turns_into_a_message_for_the_model_is_the_tool_calls_error(store: Store) -> None:
    agent = Agent(name="Clerk", tools=[flaky], model=scripted_model([[("flaky", {"order_id": "A"})], "sorry"]))
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(agent, "order A?")).final_output == "sorry"
    records = calls(store, h.session_id)
    failed = one(records, "flaky", "tool")
    assert failed.status == "error" and "ValueError: no order A" in (failed.error or "")
    told = by_kind(records, "llm")[1].inputs["messages"][-1]
    assert told["role"] == "tool" and failed.output == told["content"]  # what the model was told (wording varies)
    assert one(records, "Clerk", "agent").status == "ok"


async def test_tool_exception_without_a_failure_handler_reaches_the_caller_as_the_same_object(store: Store) -> None:
    boom = KeyError("missing")

    @function_tool(failure_error_function=None)
    def strict(key: str) -> str:
        """Fail loudly."""
        raise boom

    agent = Agent(name="Strict", tools=[strict], model=scripted_model([[("strict", {"key": "k"})], "never"]))
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(UserError) as raised:  # the SDK's own wrapping, as without openprogram
            await Runner.run(agent, "go")
    assert raised.value.__cause__ is boom
    records = calls(store, h.session_id)
    assert one(records, "strict", "tool").status == "error" and "KeyError" in (one(records, "strict").error or "")
    assert one(records, "Strict", "agent").status == "error"


@openprogram.tool
def note(text: str, _session: openprogram.SessionHandle | None = None) -> str:
    """Keep a note in the session."""
    assert _session is not None
    SEEN["note"] = (_session, openprogram.current_call_id(), threading.current_thread().name)
    return f"noted {text} in {_session.session_id}"


async def test_openprogram_tool_as_function_tool_has_a_clean_schema_records_once_and_ignores_a_model_session(
    store: Store,
) -> None:
    SEEN.clear()
    noting = function_tool(note)
    assert "_session" not in noting.params_json_schema["properties"]
    assert "_session" not in noting.params_json_schema.get("required", [])
    agent = Agent(
        name="Scribe",
        tools=[noting],
        model=scripted_model([[("note", {"text": "hi", "_session": "someone-elses"})], "noted"]),
    )
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(agent, "note hi")).final_output == "noted"
    records = calls(store, h.session_id)
    (tool,) = by_kind(records, "tool")  # the @openprogram.tool's own call: not recorded twice
    assert tool.framework is None and tool.output == f"noted hi in {h.session_id}"
    assert parent_of(records, tool) == one(records, "Scribe", "agent")
    assert SEEN["note"][0].session_id == h.session_id and SEEN["note"][1] == tool.call_id


@dataclass
class Shop:
    currency: str


@function_tool
def price(context: RunContextWrapper[Shop], item: str) -> str:
    """The price of an item, in the shop's currency."""
    return f"{item}: 3 {context.context.currency}"


async def test_a_tool_taking_the_run_context_still_receives_it(store: Store) -> None:
    agent = Agent(name="Seller", tools=[price], model=scripted_model([[("price", {"item": "tea"})], "3 EUR"]))
    async with openprogram.session_context(store=store) as h:
        await Runner.run(agent, "price of tea?", context=Shop("EUR"))
    tool = one(calls(store, h.session_id), "price", "tool")
    assert (tool.inputs, tool.output) == ({"item": "tea"}, "tea: 3 EUR")
