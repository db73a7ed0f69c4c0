"""``openprogram.history()``: a session's conversation so far, read from the record, for the next turn."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from typing import Any

import openprogram
import pytest
from openprogram._kit import ModelCall, message, model_inputs, reply, tool_call


def ask(messages: list[dict[str, Any]], answer: dict[str, Any], model: str = "fake-model") -> dict[str, Any]:
    """One recorded model request of ``messages`` answered with ``answer`` (the core API every adapter uses)."""

    def inputs() -> dict[str, Any]:
        return model_inputs([message(m["role"], m.get("content"), **_extra(m)) for m in messages])

    call = ModelCall.request("toy", model, inputs)
    with call:
        pass
    call.answered(answer)
    return answer


def _extra(m: dict[str, Any]) -> dict[str, Any]:
    return {key: m[key] for key in ("tool_calls", "tool_call_id") if key in m}


def agent(question: str, before: list[dict[str, Any]] = (), name: str = "agent") -> str:  # type: ignore[assignment]
    """A toy agent: one tool round-trip then an answer, recorded under an ``agent``-like call."""

    @openprogram.tool(name=name)
    def run() -> str:
        sent = [{"role": "system", "content": "be brief"}, *before, {"role": "user", "content": question}]
        first = ask(sent, reply("", tool_calls=[tool_call("c1", "search", {"q": question})]))
        sent += [first, {"role": "tool", "content": "found", "tool_call_id": "c1"}]
        return str(ask(sent, reply(f"answer to {question}"))["content"])

    return run()


def shape(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"role": role, "content": content} for role, content in pairs]


def turn_of(question: str) -> list[dict[str, Any]]:
    """What one run of ``agent(question)`` leaves in the conversation (system messages left out)."""
    return [
        {"role": "user", "content": question},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": question}}],
        },
        {"role": "tool", "content": "found", "tool_call_id": "c1"},
        {"role": "assistant", "content": f"answer to {question}"},
    ]


def test_a_second_turn_given_the_history_continues_it(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as first:
        agent("weather in Paris?")
        assert openprogram.history() == turn_of("weather in Paris?")
    with openprogram.session_context(first.session_id, store=store):
        agent("and Oslo?", before=openprogram.history())
    assert openprogram.history(first.session_id, store=store) == turn_of("weather in Paris?") + turn_of("and Oslo?")


def test_a_turn_run_without_the_history_is_added_after_it(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as first:
        agent("weather in Paris?")
    with openprogram.session_context(first.session_id, store=store):
        agent("and Oslo?")  # the agent was not given the history: its request starts afresh
        assert openprogram.history() == turn_of("weather in Paris?") + turn_of("and Oslo?")


def test_a_reply_without_text_repeated_as_empty_text_by_another_framework_is_joined(
    store: openprogram.Store,
) -> None:
    # Pydantic AI records a reply of tool calls only with no content; LangChain re-sends it as "".
    call = tool_call("c1", "search", {"q": "Paris"})
    asked = [{"role": "user", "content": "Paris?"}]
    with openprogram.session_context(store=store) as h:
        first = ask(asked, reply(None, tool_calls=[call]))
        asked += [first, {"role": "tool", "content": "found", "tool_call_id": "c1"}]
        asked.append(ask(asked, reply("sunny")))
        again = [{**m, "content": m["content"] or ""} for m in asked]
        ask([*again, {"role": "user", "content": "Oslo?"}], reply("rainy"))
    assert [m["content"] for m in openprogram.history(h.session_id, store=store)] == [
        "Paris?",
        "",
        "found",
        "sunny",
        "Oslo?",
        "rainy",
    ]


def test_a_structured_tool_result_repeated_as_json_text_by_another_framework_is_joined(
    store: openprogram.Store,
) -> None:
    # Pydantic AI records a tool's dict as it was returned; the Semantic Kernel converter re-sends it as JSON text.
    call = tool_call("c1", "forecast", {"city": "Paris"})
    result = {"sky": "sunny", "celsius": 21}
    asked: list[dict[str, Any]] = [{"role": "user", "content": "Paris?"}]
    with openprogram.session_context(store=store) as h:
        asked += [ask(asked, reply("", tool_calls=[call])), {"role": "tool", "content": result, "tool_call_id": "c1"}]
        asked.append(ask(asked, reply("sunny")))
        again = [{**m, "content": json.dumps(m["content"])} if m["role"] == "tool" else m for m in asked]
        ask([*again, {"role": "user", "content": "Oslo?"}], reply("rainy"))
    assert [m["role"] for m in openprogram.history(h.session_id, store=store)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_system_true_keeps_the_system_prompt_once(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        agent("one")
        agent("two")
    found = openprogram.history(h.session_id, store=store, system=True)
    assert found[0] == {"role": "system", "content": "be brief"}
    assert [m for m in found if m["role"] == "system"] == [found[0]]
    assert found[1:] == turn_of("one") + turn_of("two")


def test_a_sub_agents_requests_are_not_the_conversation_but_agent_picks_them(store: openprogram.Store) -> None:
    @openprogram.tool(name="planner")
    def planner() -> str:
        helper = agent("sub question", name="researcher")  # a sub-agent, one level deeper
        ask([{"role": "user", "content": "plan"}], reply(f"plan using {helper}"))
        return helper

    with openprogram.session_context(store=store) as h:
        planner()
    assert openprogram.history(h.session_id, store=store) == shape(
        ("user", "plan"), ("assistant", "plan using answer to sub question")
    )
    assert openprogram.history(h.session_id, store=store, agent="researcher") == turn_of("sub question")
    assert openprogram.history(h.session_id, store=store, agent="nobody") == []


def test_a_failed_last_request_leaves_the_answered_one(store: openprogram.Store) -> None:
    @openprogram.tool
    def flaky() -> None:
        ask([{"role": "user", "content": "hi"}], reply("hello"))
        call = ModelCall.request("toy", "fake-model", lambda: model_inputs([message("user", "hi again")]))
        with pytest.raises(TimeoutError), call:
            raise TimeoutError("the model did not answer")

    with openprogram.session_context(store=store) as h:
        flaky()
    assert openprogram.history(h.session_id, store=store) == shape(("user", "hi"), ("assistant", "hello"))


def test_an_unknown_or_model_less_session_has_no_history(store: openprogram.Store) -> None:
    assert openprogram.history("no-such-session", store=store) == []

    @openprogram.tool
    def plain() -> int:
        return 1

    with openprogram.session_context(store=store) as h:
        plain()
        assert openprogram.history() == []
    assert openprogram.history(h.session_id, store=store) == []


def test_no_session_and_no_id_names_session_context() -> None:
    with pytest.raises(openprogram.NoSessionError, match="session_context"):
        openprogram.history()


def test_a_conversation_recorded_without_content_is_an_error_not_an_empty_history(store: openprogram.Store) -> None:
    openprogram.configure(capture_content=False)
    try:
        with openprogram.session_context(store=store) as h:
            agent("secret question")
    finally:
        openprogram.configure(capture_content=True)
    with pytest.raises(ValueError, match="content capture"):
        openprogram.history(h.session_id, store=store)


def test_another_process_reads_the_history_from_the_default_store(tmp_path: Any) -> None:
    with openprogram.session_context() as h:
        agent("weather in Paris?")
    openprogram.flush()
    script = textwrap.dedent(
        f"""
        import json, openprogram
        print(json.dumps(openprogram.history({h.session_id!r})))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == turn_of("weather in Paris?")


def test_a_parent_cycle_in_a_hostile_store_does_not_hang(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        agent("q")
    rows = list(store.iter_tree_rows(h.session_id))
    llm = next(r for r in rows if r[4] == "llm")
    looped = (f"{llm[0]}x", *llm[1:3], f"{llm[0]}x", *llm[4:])  # a call that is its own parent
    store.write([], [looped])
    started = time.perf_counter()
    assert openprogram.history(h.session_id, store=store) == turn_of("q")
    assert time.perf_counter() - started < 5


def test_a_500_request_session_is_read_quickly(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        sent: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
        for step in range(500):
            answer = ask(sent, reply(f"step {step}"))
            sent = [*sent, answer, {"role": "user", "content": f"go on {step}"}]
    openprogram.flush()
    best = min(_timed(lambda: openprogram.history(h.session_id, store=store)) for _ in range(3))
    assert len(openprogram.history(h.session_id, store=store)) == 1000
    print(f"history() of a 500-request session: {best * 1000:.1f} ms")


def _timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def test_answered_gives_each_tool_call_left_without_a_result_one_saying_so() -> None:
    from openprogram._kit import NO_RESULT, answered

    history = [
        {"role": "assistant", "content": "", "tool_calls": [tool_call("a", "f", {}), tool_call("b", "g", {})]},
        {"role": "tool", "content": "1", "tool_call_id": "a"},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "", "tool_calls": [tool_call("c", "h", {})]},
    ]
    assert answered(history) == [
        history[0],
        history[1],
        {"role": "tool", "content": NO_RESULT, "tool_call_id": "b"},
        history[2],
        history[3],
        {"role": "tool", "content": NO_RESULT, "tool_call_id": "c"},
    ]
    assert answered(history[:2]) == [*history[:2], {"role": "tool", "content": NO_RESULT, "tool_call_id": "b"}]
