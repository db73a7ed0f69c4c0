"""``OpenProgramSession``: the Agents SDK's ``Session`` protocol over openprogram's store.

Modelled on the SDK's own session tests (``tests/memory/test_session.py``,
``tests/memory/test_session_limit.py`` in openai/openai-agents-python): the same steps and
assertions, over ``OpenProgramSession`` instead of ``SQLiteSession``, with the real runner and
the SDK's own ``OpenAIResponsesModel`` answering offline.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest
from agents import Agent, Runner, function_tool
from agents.memory import Session, SessionSettings
from openprogram.integrations.openai_agents import OpenProgramSession

from tests.integrations.openai_agents.fake_openai import chat_model, responses_model
from tests.integrations.openai_agents.helpers import tree
from tests.stores.store_support import Backends

ROOT = Path(__file__).resolve().parents[3]
RUNNER_METHODS = ["run", "run_sync"]  # streamed: over the streaming chat model, below


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def run_agent(method: str, agent: Agent[Any], given: Any, **kwargs: Any) -> Any:
    """``Runner.run``, or ``run_sync`` (in a thread of its own: it runs its own event loop)."""
    if method == "run":
        return await Runner.run(agent, given, **kwargs)
    return await asyncio.to_thread(Runner.run_sync, agent, given, **kwargs)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Backends]:
    made = Backends(tmp_path)
    yield made
    made.cleanup()


@pytest.fixture(params=[pytest.param("sqlite"), pytest.param("postgresql", marks=pytest.mark.postgres)])
def shared_url(request: pytest.FixtureRequest, stores: Backends) -> str:
    """A fresh store that other processes can reach (PostgreSQL: a schema of its own)."""
    return stores.url(str(request.param))


def texts(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


# --- the protocol, called directly (the SDK's SQLiteSession tests) ---------------------------------


async def test_it_is_an_sdk_session_and_its_items_come_back_in_order_until_cleared(store: openprogram.Store) -> None:
    session = OpenProgramSession("direct_test", store=store)
    assert isinstance(session, Session) and session.session_id == "direct_test"
    items: list[Any] = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
    await session.add_items(items)
    assert await session.get_items() == items
    await session.clear_session()
    assert await session.get_items() == []
    await session.add_items([{"role": "user", "content": "again"}])
    assert texts(await session.get_items()) == ["again"]


async def test_pop_item_returns_the_latest_and_removes_it(store: openprogram.Store) -> None:
    session = OpenProgramSession("pop_test", store=store)
    assert await session.pop_item() is None
    await session.add_items(
        [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
    )
    assert await session.pop_item() == {"role": "user", "content": "How are you?"}
    assert texts(await session.get_items()) == ["Hello", "Hi there!"]
    assert await session.pop_item() == {"role": "assistant", "content": "Hi there!"}
    await session.add_items([{"role": "assistant", "content": "Hi again!"}])
    assert texts(await session.get_items()) == ["Hello", "Hi again!"]
    assert (await session.pop_item() or {}).get("content") == "Hi again!"
    assert (await session.pop_item() or {}).get("content") == "Hello"
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_two_sessions_keep_their_items_apart(store: openprogram.Store) -> None:
    one, two = OpenProgramSession("session_1", store=store), OpenProgramSession("session_2", store=store)
    await one.add_items([{"role": "user", "content": "Session 1 message"}])
    await two.add_items(
        [{"role": "user", "content": "Session 2 message 1"}, {"role": "user", "content": "Session 2 message 2"}]
    )
    assert (await two.pop_item() or {}).get("content") == "Session 2 message 2"
    assert texts(await one.get_items()) == ["Session 1 message"]
    assert texts(await two.get_items()) == ["Session 2 message 1"]
    await two.clear_session()
    assert texts(await one.get_items()) == ["Session 1 message"]


async def test_get_items_limit_gives_the_latest_in_order(store: openprogram.Store) -> None:
    session = OpenProgramSession("count_test", store=store)
    replies = [f"{who} {n}" for n in (1, 2, 3) for who in ("Message", "Response")]
    await session.add_items([{"role": "user", "content": text} for text in replies])
    assert texts(await session.get_items()) == replies
    assert texts(await session.get_items(limit=2)) == replies[-2:]
    assert texts(await session.get_items(limit=4)) == replies[-4:]
    assert texts(await session.get_items(limit=10)) == replies
    assert await session.get_items(limit=0) == []
    limited = OpenProgramSession("count_test", store=store, session_settings=SessionSettings(limit=3))
    assert texts(await limited.get_items()) == replies[-3:]
    assert texts(await limited.get_items(limit=1)) == replies[-1:]  # an explicit limit wins


async def test_items_round_trip_exactly_with_unicode_quotes_and_long_texts(store: openprogram.Store) -> None:
    long_output = "".join(f'line {n}: {"é" * (n % 7)} "quoted" \\ back\n' for n in range(600))  # ~20 KB
    assert len(long_output) > openprogram.Limits().max_string
    items: list[Any] = [
        {"role": "user", "content": "こんにちは"},
        {"role": "assistant", "content": "😊👍"},
        {"role": "user", "content": "Robert'); DROP TABLE students;--"},
        {"role": "user", "content": [{"type": "input_text", "text": "parts"}]},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"path": "a.txt"}', "id": "fc_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": long_output},
        {"type": "function_call_output", "call_id": "call_2", "output": {"$pieces": ["not", "ours"]}},
        {"role": "user", "content": "", "extra": None, "n": 1.5, "flag": True},
    ]
    session = OpenProgramSession("round_trip", store=store)
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.pop_item() == items[-1]


async def test_concurrent_adds_keep_every_item(store: openprogram.Store) -> None:
    session = OpenProgramSession("concurrent_test", store=store)
    await asyncio.gather(*(session.add_items([{"role": "user", "content": f"Message {n}"}]) for n in range(10)))
    assert sorted(texts(await session.get_items())) == sorted(f"Message {n}" for n in range(10))


async def test_an_unknown_session_has_no_items(store: openprogram.Store) -> None:
    assert await OpenProgramSession("never_used", store=store).get_items() == []


def test_no_session_and_no_id_names_session_context() -> None:
    with pytest.raises(openprogram.NoSessionError, match="session_context"):
        OpenProgramSession()


async def test_items_cannot_be_kept_with_content_capture_off(store: openprogram.Store) -> None:
    openprogram.configure(capture_content=False)
    try:
        with pytest.raises(ValueError, match="content capture"):
            await OpenProgramSession("no_content", store=store).add_items([{"role": "user", "content": "hi"}])
    finally:
        openprogram.configure(capture_content=True)


# --- with the runner -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", RUNNER_METHODS)
async def test_a_runner_given_the_session_sees_the_first_turn_in_the_second(
    method: str, store: openprogram.Store
) -> None:
    script = [[("weather", {"city": "Paris"})], "It is sunny in Paris.", "Oslo is sunny too."]
    model, bodies = responses_model(script)
    agent = Agent(name="forecaster", instructions="Answer about the weather.", model=model, tools=[weather])
    async with openprogram.session_context(store=store) as h:
        first = await run_agent(method, agent, "What is the weather in Paris?", session=OpenProgramSession())
    assert first.final_output == "It is sunny in Paris."
    async with openprogram.session_context(h.session_id, store=store):
        second = await run_agent(method, agent, "And in Oslo?", session=OpenProgramSession())
    assert second.final_output == "Oslo is sunny too."

    sent = bodies[2]["input"]
    assert [item.get("role") or item["type"] for item in sent] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
    ]
    assert sent[0]["content"] == "What is the weather in Paris?" and sent[-1]["content"] == "And in Oslo?"
    assert sent[1] == {**bodies[1]["input"][1]}  # the tool call as the model asked for it: id, call id, arguments
    assert sent[2]["output"] == "sunny in Paris"
    assert sent[3]["content"][0]["text"] == "It is sunny in Paris."


async def test_a_streamed_run_given_the_session_sees_the_first_turn_in_the_second(store: openprogram.Store) -> None:
    model, bodies = chat_model([[("weather", {"city": "Paris"})], "It is sunny in Paris.", "Oslo is sunny too."])
    agent = Agent(name="forecaster", model=model, tools=[weather])
    for question in ("What is the weather in Paris?", "And in Oslo?"):
        async with openprogram.session_context("streamed", store=store):
            result = Runner.run_streamed(agent, question, session=OpenProgramSession())
            async for _ in result.stream_events():
                pass
    sent = bodies[2]["messages"]
    # A tool-calling assistant message's content: None or "", as the SDK's release converts it.
    assert [(m["role"], m.get("content") or None) for m in sent] == [
        ("user", "What is the weather in Paris?"),
        ("assistant", None),
        ("tool", "sunny in Paris"),
        ("assistant", "It is sunny in Paris."),
        ("user", "And in Oslo?"),
    ]
    assert sent[1]["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city": "Paris"}'}


async def test_the_session_leaves_history_and_records_its_items_under_the_agent(store: openprogram.Store) -> None:
    model, _ = responses_model([[("weather", {"city": "Paris"})], "It is sunny in Paris.", "Oslo is sunny too."])
    agent = Agent(name="forecaster", model=model, tools=[weather])
    async with openprogram.session_context(store=store) as h:
        await Runner.run(agent, "What is the weather in Paris?", session=OpenProgramSession())
    async with openprogram.session_context(h.session_id, store=store):
        await Runner.run(agent, "And in Oslo?", session=OpenProgramSession())

    conversation = openprogram.history(h.session_id, store=store)
    assert [m["role"] for m in conversation] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert conversation[-1]["content"] == "Oslo is sunny too."
    first_turn = tree([r for r in store.iter_calls(h.session_id)])[:9]
    assert first_turn == [
        "turn main",
        "  agent forecaster",
        "    memory openai_agents.session",  # the question
        "    llm gpt-4o-mini",
        "    tool weather",
        "    memory openai_agents.session",  # the tool call
        "    memory openai_agents.session",  # its output
        "    llm gpt-4o-mini",
        "    memory openai_agents.session",  # the answer
    ]


@pytest.mark.parametrize("method", RUNNER_METHODS)
async def test_list_input_is_appended_to_items_added_before(method: str, store: openprogram.Store) -> None:
    model, bodies = responses_model(["This should run"])
    agent = Agent(name="test", model=model)
    session = OpenProgramSession("appends", store=store)
    earlier: list[Any] = [
        {"role": "user", "content": "Earlier message"},
        {"role": "assistant", "content": "Saved reply"},
    ]
    await session.add_items(earlier)
    given: list[Any] = [{"role": "user", "content": "Test message"}]
    async with openprogram.session_context(store=store):
        await run_agent(method, agent, given, session=session)
    assert bodies[-1]["input"] == earlier + given


async def test_different_sessions_keep_different_conversations(store: openprogram.Store) -> None:
    model, bodies = responses_model(["I like cats", "I like dogs", "Yes, you mentioned cats"])
    agent = Agent(name="test", model=model)
    async with openprogram.session_context(store=store) as cats:
        await Runner.run(agent, "I like cats", session=OpenProgramSession())
    async with openprogram.session_context(store=store):
        await Runner.run(agent, "I like dogs", session=OpenProgramSession())
    async with openprogram.session_context(cats.session_id, store=store):
        await Runner.run(agent, "What did I say I like?", session=OpenProgramSession())
    assert [item["content"] for item in bodies[2]["input"] if item.get("role") == "user"] == [
        "I like cats",
        "What did I say I like?",
    ]


async def test_items_added_outside_a_session_are_a_turn_of_their_own_that_a_later_run_continues() -> None:
    session = OpenProgramSession("kept_outside")
    await session.add_items([{"role": "user", "content": "Remember 42."}, {"role": "assistant", "content": "Noted."}])
    model, bodies = responses_model(["42."])
    await Runner.run(Agent(name="test", model=model), "What was the number?", session=session)
    assert texts(bodies[0]["input"]) == ["Remember 42.", "Noted.", "What was the number?"]
    records = list(openprogram.open_store().iter_calls("kept_outside"))
    turns = [r for r in records if r.kind == "turn"]
    assert turns[0].inputs == {"runtime": "openai_agents.session"}
    assert any(r.kind == "llm" for r in records)  # the run continued the session its items are in


async def test_the_first_run_of_a_new_session_id_with_no_session_open_records_into_that_session() -> None:
    """Its id is an openprogram session's: the run's agent, model calls and items are all one turn of it."""
    model, _ = responses_model([[("weather", {"city": "Paris"})], "It is sunny in Paris."])
    agent = Agent(name="forecaster", model=model, tools=[weather])
    await Runner.run(agent, "What is the weather in Paris?", session=OpenProgramSession("brand_new"))
    openprogram.flush()
    kinds = [r.kind for r in openprogram.open_store().iter_calls("brand_new")]
    assert kinds[:2] == ["turn", "agent"] and kinds.count("turn") == 1
    assert {"llm", "tool", "memory"} <= set(kinds)
    assert openprogram.history("brand_new")[-1] == {"role": "assistant", "content": "It is sunny in Paris."}


async def test_another_process_continues_the_session_from_the_store(shared_url: str) -> None:
    store_url = shared_url
    model, _ = responses_model([[("weather", {"city": "Paris"})], "It is sunny in Paris."])
    agent = Agent(name="forecaster", model=model, tools=[weather])
    async with openprogram.session_context(store=store_url) as h:
        await Runner.run(agent, "What is the weather in Paris?", session=OpenProgramSession())

    script = textwrap.dedent(
        f"""
        import asyncio, json, os
        os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
        import openprogram
        from agents import Agent, Runner
        from openprogram.integrations.openai_agents import OpenProgramSession
        from tests.integrations.openai_agents.fake_openai import chat_model, responses_model

        openprogram.instrument("agents")
        model, bodies = responses_model(["Oslo is sunny too."])
        agent = Agent(name="forecaster", model=model)
        asyncio.run(Runner.run(agent, "And in Oslo?", session=OpenProgramSession({h.session_id!r})))
        print(json.dumps(bodies[0]["input"]))
        """
    )
    env = {**os.environ, "OPENPROGRAM_STORE": store_url, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout.strip().splitlines()[-1])
    assert [item.get("role") or item["type"] for item in sent] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
    ]
    assert sent[2]["output"] == "sunny in Paris" and sent[-1]["content"] == "And in Oslo?"
    conversation = openprogram.history(h.session_id, store=store_url)  # the child's run continued this session
    assert conversation[-2:] == [
        {"role": "user", "content": "And in Oslo?"},
        {"role": "assistant", "content": "Oslo is sunny too."},
    ]
    assert len(await OpenProgramSession(h.session_id, store=store_url).get_items()) == 6


async def test_get_items_of_a_500_item_session_is_quick(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'items.db'}"
    session = OpenProgramSession("five_hundred", store=store_url)
    for turn in range(125):
        await session.add_items(
            [
                {"role": "user", "content": f"question {turn}"},
                {"type": "function_call", "call_id": f"c{turn}", "name": "look", "arguments": '{"n": 1}'},
                {"type": "function_call_output", "call_id": f"c{turn}", "output": "found " * 100},
                {"role": "assistant", "content": f"answer {turn}"},
            ]
        )
    assert len(await session.get_items()) == 500
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        await session.get_items()
        best = min(best, time.perf_counter() - started)
    print(f"get_items() of a 500-item session (SQLite): {best * 1000:.1f} ms")
    assert best < 1.0
