"""A node run under a RetryPolicy: every attempt is its own node call, with the real framework."""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from typing import Any

import langgraph.errors
import openprogram
import openprogram._runtime
import pytest
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, interrupt
from openprogram.integrations.langgraph import adapter

from tests.integrations.langgraph.fakes import Log, add, chain_graph
from tests.support import attributes, by_kind, calls, one

#: Retries at once: no backoff, no jitter (tests never sleep).
POLICY = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False)


class Flaky(Exception):
    """Retried by LangGraph's default ``retry_on`` (unlike ValueError, RuntimeError, ...)."""


def _flaky(failures: int, raised: list[Flaky], also: Any = None) -> Any:
    """A sync node failing its first ``failures`` runs (each with a new exception, kept in ``raised``)."""

    def flaky(state: Log) -> dict[str, Any]:
        if also is not None:
            also(len(raised) + 1)
        if len(raised) < failures:
            raised.append(Flaky(f"boom {len(raised) + 1}"))
            raise raised[-1]
        return {"log": ["flaky"]}

    return flaky


def _graph(node: Any, *, policy: RetryPolicy | None = POLICY, name: str = "flaky") -> Any:
    g = StateGraph(Log)
    g.add_node(name, node, retry_policy=policy)
    g.add_edge(START, name)
    g.add_edge(name, END)
    return g.compile()


def _attempts(records: list[Any], name: str = "flaky") -> list[Any]:
    return [c for c in by_kind(records, "node") if c.name == name]


def _check_retried_then_ok(records: list[Any]) -> None:
    graph_call = one(records, "LangGraph", "graph")
    nodes = _attempts(records)
    assert [attributes(n).get("attempt") for n in nodes] == [1, 2, 3]
    assert [n.status for n in nodes] == ["error", "error", "ok"]
    assert [n.error for n in nodes[:2]] == ["Flaky: boom 1", "Flaky: boom 2"]
    assert nodes[2].error is None and nodes[2].output == {"log": ["flaky"]}
    assert all(n.parent_id == graph_call.call_id for n in nodes)
    # The same task: LangGraph's step number and task id on every attempt.
    assert len({(attributes(n)["step"], attributes(n)["task_id"]) for n in nodes}) == 1
    assert all(a.ended_at is not None and b.started_at >= a.ended_at for a, b in itertools.pairwise(nodes))
    assert graph_call.status == "ok"


def test_sync_node_failing_twice_records_three_attempts(store: Any) -> None:
    raised: list[Flaky] = []
    with openprogram.session_context(store=store) as h:
        assert _graph(_flaky(2, raised)).invoke({"log": []}) == {"log": ["flaky"]}
    assert len(raised) == 2
    _check_retried_then_ok(calls(store, h.session_id))


def test_exhausted_attempts_are_all_errors_and_the_exception_propagates_unchanged(store: Any) -> None:
    raised: list[Flaky] = []
    with openprogram.session_context(store=store) as h, pytest.raises(Flaky) as info:
        _graph(_flaky(99, raised)).invoke({"log": []})
    assert len(raised) == 3 and info.value is raised[-1]
    records = calls(store, h.session_id)
    nodes = _attempts(records)
    assert [(attributes(n)["attempt"], n.status, n.error) for n in nodes] == [
        (i, "error", f"Flaky: boom {i}") for i in (1, 2, 3)
    ]
    assert one(records, "LangGraph", "graph").status == "error"


def test_an_exception_the_policy_does_not_retry_is_one_failed_attempt(store: Any) -> None:
    raised = ValueError("not retried")  # LangGraph's default retry_on gives up on a ValueError

    def bad(state: Log) -> dict[str, Any]:
        raise raised

    with openprogram.session_context(store=store) as h, pytest.raises(ValueError) as info:
        _graph(bad, name="bad").invoke({"log": []})
    assert info.value is raised
    (node,) = _attempts(calls(store, h.session_id), "bad")
    assert (attributes(node)["attempt"], node.status, node.error) == (1, "error", "ValueError: not retried")


async def test_async_node_failing_twice_records_three_attempts(store: Any) -> None:
    raised: list[Flaky] = []
    sync = _flaky(2, raised)

    async def flaky(state: Log) -> dict[str, Any]:
        await asyncio.sleep(0)
        return sync(state)

    async with openprogram.session_context(store=store) as h:
        assert await _graph(flaky).ainvoke({"log": []}) == {"log": ["flaky"]}
    _check_retried_then_ok(calls(store, h.session_id))


async def test_async_exhausted_attempts_propagate_the_exception_unchanged(store: Any) -> None:
    raised: list[Flaky] = []
    sync = _flaky(99, raised)

    async def flaky(state: Log) -> dict[str, Any]:
        return sync(state)

    with pytest.raises(Flaky) as info:
        async with openprogram.session_context(store=store) as h:
            await _graph(flaky).ainvoke({"log": []})
    assert info.value is raised[-1]
    nodes = _attempts(calls(store, h.session_id))
    assert [(attributes(n)["attempt"], n.status) for n in nodes] == [(1, "error"), (2, "error"), (3, "error")]


async def test_astream_events_drives_each_attempt_as_its_own_call(store: Any) -> None:
    # astream_events makes LangGraph run each task with proc.astream instead of proc.ainvoke.
    raised: list[Flaky] = []
    async with openprogram.session_context(store=store) as h:
        events = [e async for e in _graph(_flaky(2, raised)).astream_events({"log": []}, version="v2")]
    assert events
    _check_retried_then_ok(calls(store, h.session_id))


def test_a_tool_nests_under_the_attempt_that_called_it(store: Any) -> None:
    raised: list[Flaky] = []

    @openprogram.tool
    def audit(attempt: int) -> str:
        return f"audit {attempt}"

    def call_tools(attempt: int) -> None:
        add.invoke({"a": attempt, "b": 10})
        audit(attempt)

    with openprogram.session_context(store=store) as h:
        _graph(_flaky(1, raised, also=call_tools)).invoke({"log": []})
    records = calls(store, h.session_id)
    first, second = _attempts(records)
    assert (first.status, second.status) == ("error", "ok")
    adds = by_kind(records, "tool")
    audits = [c for c in records if c.name == "audit"]
    assert [(c.parent_id, c.output) for c in adds if c.name == "add"] == [(first.call_id, 11), (second.call_id, 12)]
    assert [(c.parent_id, c.output) for c in audits] == [(first.call_id, "audit 1"), (second.call_id, "audit 2")]


def test_a_subgraph_run_nests_under_its_attempt(store: Any) -> None:
    inner = chain_graph(("inner",))
    runs: list[int] = []

    def outer(state: Log) -> dict[str, Any]:
        runs.append(len(runs) + 1)
        result = inner.invoke({"log": []})
        if len(runs) == 1:
            raise Flaky("after the subgraph")
        return {"log": result["log"]}

    with openprogram.session_context(store=store) as h:
        assert _graph(outer, name="outer").invoke({"log": []}) == {"log": ["inner"]}
    records = calls(store, h.session_id)
    first, second = _attempts(records, "outer")
    sub_graphs = [c for c in by_kind(records, "graph") if c.parent_id in (first.call_id, second.call_id)]
    assert [g.parent_id for g in sub_graphs] == [first.call_id, second.call_id]
    inner_nodes = _attempts(records, "inner")
    assert [n.parent_id for n in inner_nodes] == [g.call_id for g in sub_graphs]
    assert all("attempt" not in attributes(n) for n in inner_nodes)  # no policy of their own


def test_a_subgraph_node_with_a_policy_retries_the_whole_subgraph(store: Any) -> None:
    raised: list[Flaky] = []
    inner = StateGraph(Log)
    inner.add_node("step", _flaky(1, raised))
    inner.add_edge(START, "step")
    outer = StateGraph(Log)
    outer.add_node("sub", inner.compile(name="inner"), retry_policy=POLICY)
    outer.add_edge(START, "sub")
    with openprogram.session_context(store=store) as h:
        assert outer.compile().invoke({"log": []}) == {"log": ["flaky"]}
    records = calls(store, h.session_id)
    first, second = _attempts(records, "sub")
    assert (first.status, second.status) == ("error", "ok")
    inner_graphs = [c for c in by_kind(records, "graph") if c.name == "inner"]
    assert [(g.parent_id, g.status) for g in inner_graphs] == [(first.call_id, "error"), (second.call_id, "ok")]


def test_a_graph_level_policy_applies_to_every_node(store: Any) -> None:
    raised: list[Flaky] = []
    graph = _graph(_flaky(2, raised), policy=None)
    graph.retry_policy = [POLICY]  # Pregel's graph-wide policy, used for nodes without their own
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []})
    _check_retried_then_ok(calls(store, h.session_id))


def test_a_functional_task_with_a_policy_records_its_attempts(store: Any) -> None:
    raised: list[Flaky] = []

    @task(retry_policy=POLICY)
    def fetch(x: int) -> int:
        if len(raised) < 2:
            raised.append(Flaky(f"boom {len(raised) + 1}"))
            raise raised[-1]
        return 2 * x

    @entrypoint()
    def workflow(x: int) -> int:
        return fetch(x).result()

    with openprogram.session_context(store=store) as h:
        assert workflow.invoke(21) == 42
    records = calls(store, h.session_id)
    entry = one(records, "workflow", "node")
    assert "attempt" not in attributes(entry)
    attempts = _attempts(records, "fetch")
    assert [(attributes(a)["attempt"], a.status, a.parent_id) for a in attempts] == [
        (1, "error", entry.call_id),
        (2, "error", entry.call_id),
        (3, "ok", entry.call_id),
    ]
    assert attempts[-1].output == 42 and all(a.inputs == {"input": attempts[0].inputs["input"]} for a in attempts)


def test_an_interrupt_in_a_retried_node_ends_that_attempt_interrupted(store: Any) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    def review(state: Log) -> dict[str, Any]:
        return {"log": [f"answer:{interrupt('publish?')}"]}

    g = StateGraph(Log)
    g.add_node("review", review, retry_policy=POLICY)
    g.add_edge(START, "review")
    graph = g.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "retry-interrupt"}}
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []}, cfg)
        assert graph.invoke(Command(resume="yes"), cfg)["log"] == ["answer:yes"]
    records = calls(store, h.session_id)
    paused, resumed = _attempts(records, "review")
    assert [(attributes(n)["attempt"], n.status, n.error) for n in (paused, resumed)] == [
        (1, "interrupted", None),
        (1, "ok", None),
    ]
    asked = next(c for c in by_kind(records, "interrupt") if c.status == "interrupted")
    assert asked.parent_id == paused.call_id and asked.inputs["value"] == "publish?"
    assert resumed.output == {"log": ["answer:yes"]}


def test_a_parent_command_from_a_retried_subgraph_node_keeps_its_output(store: Any) -> None:
    def handoff(state: Log) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="after", update={"log": ["handoff"]})

    inner = StateGraph(Log)
    inner.add_node("handoff", handoff, retry_policy=POLICY)
    inner.add_edge(START, "handoff")
    outer = StateGraph(Log)
    outer.add_node("sub", inner.compile(name="inner"), retry_policy=POLICY)
    outer.add_node("after", lambda state: {"log": ["after"]})
    outer.add_edge(START, "sub")
    with openprogram.session_context(store=store) as h:
        assert outer.compile().invoke({"log": []})["log"] == ["handoff", "after"]
    records = calls(store, h.session_id)
    handoff_call, sub = one(records, "handoff", "node"), one(records, "sub", "node")
    # Passed on to the parent graph: registered control flow, not an error (as without a policy).
    assert (attributes(handoff_call)["attempt"], handoff_call.status) == (1, "ok")
    assert attributes(handoff_call)["command"] == "parent"
    # Handled by the parent graph after the attempt: the node's output is the command's update.
    assert (attributes(sub)["attempt"], sub.status, sub.output["log"]) == (1, "ok", ["handoff"])
    assert one(records, "inner", "graph").status == "ok"


def test_a_node_without_a_policy_is_one_call_without_an_attempt(store: Any) -> None:
    raised: list[Flaky] = []
    g = StateGraph(Log)
    g.add_node("plain", lambda state: {"log": ["plain"]})
    g.add_node("flaky", _flaky(1, raised), retry_policy=POLICY)
    g.add_edge(START, "plain")
    g.add_edge("plain", "flaky")
    with openprogram.session_context(store=store) as h:
        assert g.compile().invoke({"log": []}) == {"log": ["plain", "flaky"]}
    records = calls(store, h.session_id)
    plain = one(records, "plain", "node")
    assert plain.status == "ok" and "attempt" not in attributes(plain)
    assert [attributes(n)["attempt"] for n in _attempts(records)] == [1, 2]  # its neighbour's policy is its own
    # A failing node without a policy: one call, the exception propagates unchanged.
    failed: list[Flaky] = []
    with openprogram.session_context(store=store) as h, pytest.raises(Flaky) as info:
        _graph(_flaky(1, failed), policy=None).invoke({"log": []})
    assert info.value is failed[0]
    (node,) = _attempts(calls(store, h.session_id))
    assert (node.status, node.error) == ("error", "Flaky: boom 1") and "attempt" not in attributes(node)


def test_per_attempt_instrumentation_errors_are_logged_once_never_raised(
    store: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug in the adapter")

    monkeypatch.setattr(adapter, "_node_output", failing)
    openprogram._runtime.forget_logged()  # each failure is logged once per process
    caplog.set_level(logging.ERROR, logger="openprogram")
    raised: list[Flaky] = []
    with openprogram.session_context(store=store) as h:
        assert _graph(_flaky(1, raised)).invoke({"log": []}) == {"log": ["flaky"]}
    nodes = _attempts(calls(store, h.session_id))
    assert [(attributes(n)["attempt"], n.status) for n in nodes] == [(1, "error"), (2, "ok")]  # without its output
    # Failing at every attempt: logged the first time, the attempts run unrecorded, the graph goes on.
    monkeypatch.setattr(adapter, "json_string", failing)
    raised.clear()
    with openprogram.session_context(store=store) as h:
        assert _graph(_flaky(2, raised)).invoke({"log": []}) == {"log": ["flaky"]}
    assert len(raised) == 2
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        "openprogram: langgraph instrumentation failed in run_with_retry (ending the node call); "
        "the program is unaffected",
        "openprogram: langgraph instrumentation failed in run_with_retry (starting the node call); "
        "the program is unaffected",
    ]
    records = calls(store, h.session_id)
    assert _attempts(records) == [] and one(records, "LangGraph", "graph").status == "ok"


def test_uninstrument_stops_recording_attempts(store: Any) -> None:
    raised: list[Flaky] = []
    graph = _graph(_flaky(1, raised))
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []})
    assert [attributes(n)["attempt"] for n in _attempts(calls(store, h.session_id))] == [1, 2]
    openprogram.uninstrument()
    raised.clear()
    with openprogram.session_context(store=store) as h:
        assert graph.invoke({"log": []}) == {"log": ["flaky"]}
    assert len(raised) == 1
    assert [c.kind for c in calls(store, h.session_id)] == ["turn"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="LangGraph's async @task needs Python 3.11 task context")
async def test_parallel_retried_tasks_keep_their_attempts_apart(store: Any) -> None:
    failed: set[int] = set()

    @task(retry_policy=POLICY)
    async def fetch(x: int) -> int:
        await asyncio.sleep(0)
        if x not in failed:
            failed.add(x)
            raise Flaky(f"first try of {x}")
        return x

    @entrypoint()
    async def workflow(xs: list[int]) -> int:
        return sum(await asyncio.gather(*(fetch(x) for x in xs)))

    async with openprogram.session_context(store=store) as h:
        assert await workflow.ainvoke([1, 2, 3]) == 6
    records = calls(store, h.session_id)
    by_task: dict[str, list[Any]] = {}
    for c in _attempts(records, "fetch"):
        by_task.setdefault(attributes(c)["task_id"], []).append(c)
    assert len(by_task) == 3
    for attempts in by_task.values():
        assert [(attributes(a)["attempt"], a.status) for a in attempts] == [(1, "error"), (2, "ok")]
        assert attempts[0].error == f"Flaky: first try of {attempts[1].output}"


#: LangGraph tells an async node's own CancelledError from the run's cancellation with Task.cancelling().
_own_cancellation_async = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="LangGraph needs Task.cancelling() (Python 3.11) to tell a node's own cancellation",
)

_timeouts = pytest.mark.skipif(
    not hasattr(langgraph.errors, "NodeTimeoutError"), reason="TimeoutPolicy is newer than this langgraph"
)


def _timing_out(slow_attempts: int, begun: list[int]) -> Any:
    """An async node whose first ``slow_attempts`` attempts outlast its timeout."""

    async def slow(state: Log) -> dict[str, Any]:
        begun.append(len(begun) + 1)
        if len(begun) <= slow_attempts:
            await asyncio.sleep(5)  # cut short by the timeout
        return {"log": ["slow"]}

    return slow


def _timed_graph(node: Any) -> Any:
    g = StateGraph(Log)
    g.add_node(
        "slow",
        node,
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False, retry_on=lambda exc: True),
        timeout=0.5,
    )
    g.add_edge(START, "slow")
    g.add_edge("slow", END)
    return g.compile()


@_timeouts
async def test_a_timed_out_attempt_is_a_failed_attempt_ended_before_the_next(store: Any) -> None:
    # LangGraph gives up on the attempt and starts the next while its cancellation is still on the way.
    begun: list[int] = []
    async with openprogram.session_context(store=store) as h:
        assert await _timed_graph(_timing_out(1, begun)).ainvoke({"log": []}) == {"log": ["slow"]}
    first, second = _attempts(calls(store, h.session_id), "slow")
    assert (first.status, second.status) == ("error", "ok")
    assert "timed out" in first.error and first.ended_at <= second.started_at
    assert [attributes(n)["attempt"] for n in (first, second)] == [1, 2]


@_timeouts
async def test_exhausted_timeouts_end_the_last_attempt_with_langgraphs_error(store: Any) -> None:
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(langgraph.errors.NodeTimeoutError):
            await _timed_graph(_timing_out(2, [])).ainvoke({"log": []})
    records = calls(store, h.session_id)
    first, second = _attempts(records, "slow")
    assert (first.status, second.status) == ("error", "error")
    assert second.error.startswith("NodeTimeoutError") and "timed out" in first.error
    assert one(records, "LangGraph", "graph").error.startswith("NodeTimeoutError")


@pytest.mark.skipif(
    not hasattr(langgraph.errors, "NodeCancelledError"),
    reason="this langgraph does not turn a node's own CancelledError into a failure",
)
@pytest.mark.parametrize("kind", ["sync", pytest.param("async", marks=_own_cancellation_async)])
async def test_a_nodes_own_cancellation_is_the_failure_langgraph_makes_of_it(store: Any, kind: str) -> None:
    def sync_node(state: Log) -> dict[str, Any]:
        raise asyncio.CancelledError

    async def async_node(state: Log) -> dict[str, Any]:
        raise asyncio.CancelledError

    graph = _graph(sync_node if kind == "sync" else async_node)
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(langgraph.errors.NodeCancelledError):
            if kind == "sync":
                graph.invoke({"log": []})
            else:
                await graph.ainvoke({"log": []})
    (attempt,) = _attempts(calls(store, h.session_id))
    assert attempt.status == "error" and attempt.error.startswith("NodeCancelledError")


@_timeouts
@pytest.mark.parametrize("cleanup", [0.0, 0.6], ids=["prompt cleanup", "still cleaning up when the run fails"])
async def test_a_timed_out_attempt_is_an_error_even_when_the_run_fails_before_the_retry(
    store: Any, cleanup: float
) -> None:
    # The attempt times out at 0.2 s; while LangGraph waits to retry, a sibling node fails (0.6 s) and
    # the retry never comes. The attempt timed out all the same: "error", not "interrupted" (also
    # when its own cleanup, after the cancellation, still runs when the run fails).
    async def slow(state: Log) -> dict[str, Any]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.sleep(cleanup))  # closing a connection, say
            raise
        return {"log": ["slow"]}

    async def bad(state: Log) -> dict[str, Any]:
        await asyncio.sleep(0.6)
        raise ValueError("sibling fails")

    g = StateGraph(Log)
    waits = RetryPolicy(max_attempts=3, initial_interval=5.0, jitter=False, retry_on=lambda exc: True)
    g.add_node("slow", slow, retry_policy=waits, timeout=0.2)
    g.add_node("bad", bad)
    g.add_edge(START, "slow")
    g.add_edge(START, "bad")
    g.add_edge("slow", END)
    g.add_edge("bad", END)
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(ValueError, match="sibling fails"):
            await g.compile().ainvoke({"log": []})
    (attempt,) = _attempts(calls(store, h.session_id), "slow")
    assert attempt.status == "error" and "timed out" in attempt.error


@_timeouts
@_own_cancellation_async
async def test_a_nodes_own_cancellation_under_a_timeout_policy_is_not_a_timeout(store: Any) -> None:
    # The node cancels a task it started and lets the CancelledError out, well within its timeout:
    # LangGraph raises NodeCancelledError, and so does the attempt's record.
    async def node(state: Log) -> dict[str, Any]:
        helper = asyncio.ensure_future(asyncio.sleep(5))
        await asyncio.sleep(0.01)
        helper.cancel()
        await helper
        return {"log": ["never"]}

    g = StateGraph(Log)
    g.add_node("n", node, retry_policy=POLICY, timeout=2.0)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(langgraph.errors.NodeCancelledError):
            await g.compile().ainvoke({"log": []})
    (attempt,) = _attempts(calls(store, h.session_id), "n")
    assert attempt.status == "error" and attempt.error.startswith("NodeCancelledError")
