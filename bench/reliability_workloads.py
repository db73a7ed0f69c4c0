"""Workloads shared by ``tests/reliability`` (small counts) and ``bench.reliability`` (full counts).

Every workload records tool calls whose inputs say where they belong (``who``: the
owning session's tag, ``path``: the call's position in its tree), so a checker can
verify every session and parent link from the store alone. Framework workloads are
functions that raise :class:`WorkloadUnavailable` (a skip reason) when their adapter
module is not installed.

Child-process roles (crash, writer, locker, fault) run as
``python -m bench.reliability_workloads ROLE ...`` from the repository root.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openprogram
from openprogram import Store
from openprogram.stores.sqlite import SQLiteStore

# --- tools used by every workload -------------------------------------------------------


@openprogram.tool
def leaf(who: str, path: str) -> str:
    """A sync tool with nothing below it."""
    return path


@openprogram.tool
def branch(who: str, path: str) -> str:
    """A sync tool that calls two tools below itself, one in a propagated thread."""
    leaf(who, path + "/l")

    def in_thread() -> None:
        leaf(who, path + "/t")

    worker = threading.Thread(target=openprogram.propagate(in_thread))
    worker.start()
    worker.join()
    return path


@openprogram.tool
async def async_branch(who: str, path: str) -> str:
    """An async tool that nests a sync tool, a to_thread tool and a child task."""
    leaf(who, path + "/l")
    await asyncio.sleep(0)  # let other sessions interleave
    await asyncio.to_thread(branch, who, path + "/b")
    await asyncio.create_task(async_leaf(who, path + "/c"))
    return path


@openprogram.tool
async def async_leaf(who: str, path: str) -> str:
    await asyncio.sleep(0)
    return path


TOOL_KINDS = {"tool"}
TRANSPARENT_KINDS = {"graph", "node", "crew", "task", "agent", "flow", "function", "call", "interrupt"}


# --- isolation -------------------------------------------------------------------------


@dataclass
class Expected:
    """What a workload recorded: session id -> (owner tag, set of tool paths)."""

    sessions: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, session_id: str, who: str, paths: set[str]) -> None:
        with self.lock:
            self.sessions[session_id] = (who, paths)


ASYNC_PATHS = {"a", "a/l", "a/b", "a/b/l", "a/b/t", "a/c"}
THREAD_PATHS = {"s", "s/l", "s/t", "p", "p/l", "p/t"}


async def _async_session(store: Store, who: str, expected: Expected, extra: list[AsyncWorkload]) -> None:
    async with openprogram.session_context(store=store, agent_id="iso") as h:
        await async_branch(who, "a")
        paths = set(ASYNC_PATHS)
        for work in extra:
            paths |= await work(who)
    expected.add(h.session_id, who, paths)


def _thread_sessions(store: Store, tag: str, rounds: int, expected: Expected) -> None:
    for r in range(rounds):
        who = f"{tag}.{r}"
        with openprogram.session_context(store=store, agent_id="iso") as h:
            branch(who, "s")
            with openprogram.ContextThreadPoolExecutor(2) as pool:
                pool.submit(branch, who, "p").result()
        expected.add(h.session_id, who, set(THREAD_PATHS))


AsyncWorkload = Callable[[str], Awaitable[set[str]]]


def run_isolation(
    store: Store, sessions: int, threads: int, thread_rounds: int, extra: list[AsyncWorkload] | None = None
) -> Expected:
    """``sessions`` concurrent asyncio sessions while ``threads`` threads run sessions too."""
    expected = Expected()
    workers = [
        threading.Thread(target=_thread_sessions, args=(store, f"t{n}", thread_rounds, expected))
        for n in range(threads)
    ]
    for w in workers:
        w.start()

    async def main() -> None:
        await asyncio.gather(*(_async_session(store, f"a{n}", expected, extra or []) for n in range(sessions)))

    asyncio.run(main())
    for w in workers:
        w.join()
    openprogram.flush()
    return expected


def check_isolation(store: Store, expected: Expected) -> list[str]:
    """Every problem found (empty when every call is in the right session under the right parent)."""
    problems: list[str] = []
    for session_id, (who, paths) in expected.sessions.items():
        calls = {c.call_id: c for c in store.iter_calls(session_id)}
        turns = [c for c in calls.values() if c.kind == "turn"]
        if len(turns) != 1:
            problems.append(f"{session_id}: {len(turns)} turns")
            continue
        turn = turns[0]
        by_path: dict[str, Any] = {}
        for c in calls.values():
            if c.session_id != session_id:
                problems.append(f"{c.call_id} listed under {session_id} but has session {c.session_id}")
            if c.status != "ok":
                problems.append(f"{c.call_id} {c.kind} {c.name} status {c.status}")
            if c.kind == "tool":
                inputs = c.inputs or {}
                if inputs.get("who") != who:
                    problems.append(f"{session_id}: tool {c.name} of {inputs.get('who')!r} in session of {who!r}")
                    continue
                path = str(inputs.get("path"))
                if path in by_path:
                    problems.append(f"{session_id}: duplicate call at {path}")
                by_path[path] = c
        if set(by_path) != paths:
            problems.append(f"{session_id}: tool paths {sorted(set(by_path) ^ paths)} missing or unexpected")
        for path, c in by_path.items():
            # Walk up through framework calls (graph, node, ...) to the nearest tool or turn.
            parent = calls.get(c.parent_id) if c.parent_id else None
            while parent is not None and parent.kind in TRANSPARENT_KINDS:
                parent = calls.get(parent.parent_id) if parent.parent_id else None
            want = path.rpartition("/")[0]
            if parent is None:
                problems.append(f"{session_id}: {path} has parent {c.parent_id} not in the session")
            elif want == "":
                if parent.call_id != turn.call_id:
                    problems.append(f"{session_id}: {path} should hang under the turn, not {parent.name}")
            elif (parent.inputs or {}).get("path") != want:
                problems.append(f"{session_id}: {path} under {(parent.inputs or {}).get('path')!r}, want {want!r}")
    return problems


# --- framework workloads (plug in when the adapters are merged) --------------------------------


class WorkloadUnavailable(Exception):
    """The framework or its adapter is not installed here; the message is the skip reason."""


def _require(framework_module: str, adapter: str) -> None:
    if importlib.util.find_spec(framework_module) is None:
        raise WorkloadUnavailable(f"{framework_module} is not installed")
    if importlib.util.find_spec(f"openprogram.integrations.{adapter}") is None:
        raise WorkloadUnavailable(f"adapter openprogram.integrations.{adapter} is not merged into this branch yet")


def langgraph_workload() -> AsyncWorkload:
    """A LangGraph graph with a sync and an async node, each calling tools."""
    _require("langgraph", "langgraph")
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    openprogram.instrument("langgraph")

    class State(TypedDict):
        who: str

    def sync_node(state: State) -> State:
        branch(state["who"], "g1")
        return state

    async def async_node(state: State) -> State:
        await async_leaf(state["who"], "g2")
        return state

    builder = StateGraph(State)
    builder.add_node("sync_node", sync_node)
    builder.add_node("async_node", async_node)
    builder.add_edge(START, "sync_node")
    builder.add_edge("sync_node", "async_node")
    builder.add_edge("async_node", END)
    graph = builder.compile()

    async def run(who: str) -> set[str]:
        await graph.ainvoke({"who": who})
        return {"g1", "g1/l", "g1/t", "g2"}

    return run


def semantic_kernel_workload() -> AsyncWorkload:
    """A Semantic Kernel function (no model needed) that calls tools."""
    _require("semantic_kernel", "semantic_kernel")
    from semantic_kernel import Kernel
    from semantic_kernel.functions import kernel_function

    openprogram.instrument("semantic_kernel")

    class Plugin:
        @kernel_function(name="work")
        async def work(self, who: str) -> str:
            branch(who, "k1")
            await async_leaf(who, "k2")
            return who

    kernel = Kernel()
    kernel.add_plugin(Plugin(), plugin_name="rel")

    async def run(who: str) -> set[str]:
        await kernel.invoke(plugin_name="rel", function_name="work", who=who)
        return {"k1", "k1/l", "k1/t", "k2"}

    return run


def crewai_workload() -> AsyncWorkload:
    """A crew with one agent driven by the scripted offline LLM, whose tool calls our tools."""
    _require("crewai", "crewai")
    from openprogram.integrations.crewai.fakes import offline_environment, scripted_llm

    offline_environment()  # telemetry and tracing off before crewai is imported
    from crewai import Agent, Crew, Task
    from crewai.tools import tool as crewai_tool

    openprogram.instrument("crewai")

    @crewai_tool("crew_branch")
    def crew_branch(who: str, path: str) -> str:
        """Run the branch tool under ``path``."""
        return branch(who, path + "/x")

    async def run(who: str) -> set[str]:
        # The model's script names this session's owner, so a tool call that landed in
        # another session would carry the wrong ``who`` and be caught by the checker.
        llm = scripted_llm([("crew_branch", {"who": who, "path": "c1"})], final=f"done {who}")
        agent = Agent(role="Worker", goal="run the tool", backstory="offline", llm=llm, tools=[crew_branch])
        task = Task(description="run the branch tool", expected_output="text", agent=agent)
        await Crew(agents=[agent], tasks=[task]).kickoff_async()
        return {"c1", "c1/x", "c1/x/l", "c1/x/t"}

    return run


# The agent workloads below register these two as framework tools and ask for both in one
# model turn; the paths below each are branch's and async_branch's.
BRANCH_PATHS = {"", "/x", "/x/l", "/x/t"}
ASYNC_BRANCH_PATHS = {"", "/x", "/x/l", "/x/b", "/x/b/l", "/x/b/t", "/x/c"}


def agent_branch(who: str, path: str) -> str:
    """Run the branch tool under ``path``."""
    return branch(who, path + "/x")


async def agent_async_branch(who: str, path: str) -> str:
    """Run the async branch tool under ``path``."""
    return await async_branch(who, path + "/x")


def _asks(who: str, first: str, second: str) -> list[tuple[str, dict[str, str]]]:
    return [("agent_branch", {"who": who, "path": first}), ("agent_async_branch", {"who": who, "path": second})]


def _expected_paths(first: str, second: str) -> set[str]:
    return {first + p for p in BRANCH_PATHS} | {second + p for p in ASYNC_BRANCH_PATHS}


def pydantic_ai_workload() -> AsyncWorkload:
    """One Pydantic AI agent shared by every session; its scripted model reads the owner from the prompt."""
    _require("pydantic_ai", "pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    openprogram.instrument("pydantic_ai")

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        (who,) = [part.content for part in messages[0].parts if isinstance(part, UserPromptPart)]
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in _asks(who, "p1", "p2")])

    agent = Agent(FunctionModel(script), name="worker", tools=[agent_branch, agent_async_branch])

    async def run(who: str) -> set[str]:
        await agent.run(who)
        return _expected_paths("p1", "p2")

    return run


def openai_agents_workload() -> AsyncWorkload:
    """An OpenAI Agents SDK agent per session, its scripted model naming the session's owner."""
    _require("agents", "openai_agents")
    from agents import Agent, Runner, function_tool
    from openprogram.integrations.openai_agents.demo import prepare, scripted_model

    prepare()  # the SDK's tracing off: it would export to OpenAI's servers
    openprogram.instrument("agents")
    tools = [function_tool(agent_branch), function_tool(agent_async_branch)]

    async def run(who: str) -> set[str]:
        model = scripted_model([_asks(who, "o1", "o2"), f"done {who}"])
        await Runner.run(Agent(name="worker", instructions="run the tools", model=model, tools=tools), who)
        return _expected_paths("o1", "o2")

    return run


FRAMEWORK_WORKLOADS: dict[str, Callable[[], AsyncWorkload]] = {
    "langgraph": langgraph_workload,
    "crewai": crewai_workload,
    "semantic_kernel": semantic_kernel_workload,
    "pydantic_ai": pydantic_ai_workload,
    "openai_agents": openai_agents_workload,
}


# --- multi-process runs (used by the tests and the bench) ----------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def crash_once(url: str, session_id: str, seed: int, progress: Path, home: Path) -> None:
    """Start a recording child, wait until it has flushed something, SIGKILL it at a seeded moment."""
    rng = random.Random(seed)
    env = dict(os.environ, OPENPROGRAM_HOME=str(home), PYTHONPATH=str(ROOT))
    before = progress.read_text().count("\n") if progress.exists() else 0
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.reliability_workloads", "crash", url, session_id, str(seed), str(progress)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while (progress.read_text().count("\n") if progress.exists() else 0) <= before:
        if child.poll() is not None:
            raise AssertionError(f"crash child exited early: {child.stderr.read().decode() if child.stderr else ''}")
        if time.monotonic() > deadline:
            child.kill()
            raise AssertionError("crash child never flushed")
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.6))
    child.send_signal(signal.SIGKILL)
    child.wait()  # reaped: its pid is gone, so its running calls read as interrupted
    assert child.returncode == -signal.SIGKILL


def check_after_crashes(store: SQLiteStore, session_id: str, progress: Path, rounds: int) -> dict[str, int]:
    assert store.integrity_check() == "ok"
    calls = store.list_calls(session_id)
    ids = [c.call_id for c in calls]
    assert len(ids) == len(set(ids)), "duplicate calls"
    turns = [c for c in calls if c.kind == "turn"]
    assert len(turns) == rounds, f"{len(turns)} turns for {rounds} processes"
    assert all(t.status == "interrupted" for t in turns), [t.status for t in turns]
    assert [c for c in calls if c.status == "running"] == [], "a killed process left calls running"
    by_turn: dict[str, set[int]] = {t.turn_id: set() for t in turns}
    for c in calls:
        if c.kind == "tool" and c.name == "leaf":
            assert c.status == "ok"
            by_turn[c.turn_id].add(int(c.inputs["path"]))
    # Every leaf flushed before the last progress line of its process is in the store.
    durable: dict[str, int] = {}
    for line in progress.read_text().splitlines():
        entry = json.loads(line)
        durable[entry["turn"]] = entry["durable_leafs_upto"]
    assert set(durable) == set(by_turn)
    lost = 0
    for turn_id, upto in durable.items():
        missing = set(range(1, upto + 1)) - by_turn[turn_id]
        lost += len(missing)
    assert lost == 0, f"{lost} flushed records lost"
    interrupted = sum(1 for c in calls if c.status == "interrupted")
    return {"calls": len(calls), "interrupted": interrupted, "turns": len(turns)}


def run_writers(url: str, processes: int, calls: int, home: Path) -> list[dict[str, object]]:
    env = dict(os.environ, OPENPROGRAM_HOME=str(home), PYTHONPATH=str(ROOT))
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.reliability_workloads", "writer", url, str(calls), f"w{n}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(processes)
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def check_writers(store: openprogram.Store, results: list[dict[str, object]], calls: int) -> int:
    total = 0
    for n, result in enumerate(results):
        assert result["ok"] is True
        records = store.list_calls(str(result["session_id"]))
        total += len(records)
        paths = Counter(c.inputs["path"] for c in records if c.kind == "tool")
        assert all(c.inputs["who"] == f"w{n}" for c in records if c.kind == "tool")
        assert [p for p, k in paths.items() if k > 1] == [], "duplicated records"
        assert set(paths) == {str(i) for i in range(calls)}, f"{calls - len(paths)} records lost"
        assert len(records) == calls + 1  # plus the turn
    return total


# --- child-process roles -----------------------------------------------------------------------


def role_crash(url: str, session_id: str, seed: int, progress: str) -> None:
    """Record tool calls forever; after each flush, append how many are durable to ``progress``.

    The parent SIGKILLs this process at a seeded random moment. Calls alternate
    between quick ones and ones that are still running (sleeping) at any moment.
    """
    rng = random.Random(seed)
    store = openprogram.open_store(url)

    @openprogram.tool
    def slow(n: int) -> int:
        time.sleep(rng.random() * 0.02)
        return n

    with (
        openprogram.session_context(session_id, store=store, agent_id=f"crash{seed}") as h,
        open(progress, "a", encoding="utf-8") as out,
    ):
        done = 0
        n = 0
        while True:
            for _ in range(rng.randint(1, 50)):
                n += 1
                leaf(h.session_id, str(n))
                done += 1
            # Flushed while the long-running call below is open: it must be found "interrupted".
            with openprogram.call_scope("call", f"open{n}"):
                slow(n)
                done += 1
                if openprogram.flush():
                    out.write(json.dumps({"durable_leafs_upto": n, "turn": h.turn_id}) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                time.sleep(rng.random() * 0.01)


def role_writer(url: str, calls: int, tag: str) -> None:
    """Record ``calls`` tool calls (plus one turn) into a new session; print its id."""
    store = openprogram.open_store(url)
    with openprogram.session_context(store=store, agent_id=tag) as h:
        for n in range(calls):
            leaf(tag, str(n))
    ok = openprogram.flush()
    print(json.dumps({"session_id": h.session_id, "ok": ok}), flush=True)


def role_locker(path: str, seconds: str) -> None:
    """Hold an exclusive write lock on a SQLite file for ``seconds`` seconds."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    time.sleep(float(seconds))
    conn.execute("COMMIT")
    conn.close()


def role_fsize(url: str, calls: int) -> None:
    """Disk full without root: lower RLIMIT_FSIZE below what the next batch needs, then lift it.

    Prints whether flush failed while the limit held and recovered once it was lifted.
    """
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
    store = openprogram.open_store(url)
    assert isinstance(store, SQLiteStore)
    with openprogram.session_context(store=store):
        leaf("warm", "0")
    assert openprogram.flush()
    files = [p for p in store.path.parent.iterdir() if p.name.startswith(store.path.name)]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max(p.stat().st_size for p in files) + 4096, hard))
    with openprogram.session_context(store=store) as h:
        for n in range(calls):
            leaf("x" * 3000, str(n))  # ~1 MB of captures: cannot fit under the limit
    failed = not openprogram.flush()
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    for state in list(openprogram._recording.writer._states.values()):
        state.retry_at = 0.0
    deadline = time.monotonic() + 60
    recovered = openprogram.flush()
    while not recovered and time.monotonic() < deadline:
        time.sleep(0.2)
        recovered = openprogram.flush()
    print(json.dumps({"session_id": h.session_id, "failed": failed, "recovered": recovered}), flush=True)


def main(argv: list[str]) -> None:
    role, *args = argv
    if role == "crash":
        role_crash(args[0], args[1], int(args[2]), args[3])
    elif role == "writer":
        role_writer(args[0], int(args[1]), args[2])
    elif role == "fsize":
        role_fsize(args[0], int(args[1]))
    elif role == "locker":
        role_locker(args[0], args[1])
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])


# --- scale ----------------------------------------------------------------------------------------


@openprogram.tool
def step(n: int) -> int:
    """The cheapest recorded tool: immutable argument and result (the fast path)."""
    return n


def record_wide_session(store: Store, nodes: int, tools_per_node: int) -> str:
    """turn -> graph -> ``nodes`` alike nodes -> ``tools_per_node`` alike tools each."""
    with openprogram.session_context(store=store, agent_id="scale") as h, openprogram.call_scope("graph", "g"):
        for _n in range(nodes):
            with openprogram.call_scope("node", "agent"):
                for t in range(tools_per_node):
                    step(t)
    return h.session_id


def rss_bytes() -> int:
    """Resident set size of this process now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def record_flat(calls: int, sample_every: int = 10_000) -> dict[str, float]:
    """Record ``calls`` tool calls in one session of the current default store; RSS and queue figures."""
    from openprogram import _recording

    baseline = 0
    peak = 0
    max_queue = 0
    started = time.perf_counter()
    with openprogram.session_context(agent_id="p4") as h:
        for n in range(calls):
            step(n)
            if n % sample_every == 0:
                if n == sample_every:  # after warm-up: imports, caches, first batch
                    baseline = rss_bytes()
                peak = max(peak, rss_bytes())
                max_queue = max(max_queue, len(_recording.queue) // _recording.record.RECORD_WIDTH)
    elapsed = time.perf_counter() - started
    openprogram.flush()
    peak = max(peak, rss_bytes())
    return {
        "session": h.session_id,
        "calls": calls,
        "seconds": elapsed,
        "baseline_rss": baseline,  # type: ignore[dict-item]
        "peak_rss": peak,
        "growth": peak - baseline,
        "max_queue": max_queue,
    }
