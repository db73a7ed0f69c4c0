"""What every store promises, checked against memory, SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from typing import Any

import openprogram
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openprogram.stores import HEARTBEAT_STALE_SECONDS, CallRow, CallRows, Store


def row(
    call_id: str,
    session_id: str = "s1",
    *,
    status: str = "ok",
    started: float = 1.0,
    parent: str | None = None,
    output: Any = '"out"',
    owner: str = "h:1:x",
    ended: float | None = 2.0,
    name: str = "t",
) -> CallRow:
    return (
        call_id,
        session_id,
        "turn1",
        parent,
        "tool",
        name,
        None,
        status,
        '{"a": 1}',
        output,
        None,
        None,
        started,
        None if status == "running" else ended,
        owner,
    )


def live_owner() -> str:
    return openprogram._runtime.process_owner()


def test_empty_store_reads(store: Store) -> None:
    assert store.list_sessions() == []
    assert store.get_session("nope") is None
    assert not store.session_exists("nope")
    assert store.list_calls("nope") == []
    assert store.resolve_alias("langgraph", "t1") is None


def test_session_upsert_keeps_first_created_and_latest_updated(store: Store) -> None:
    store.write([("s1", "agent-a", 10.0, 10.0)], [])
    store.write([("s1", "agent-b", 5.0, 30.0)], [])
    store.write([("s1", "agent-c", 20.0, 20.0)], [])  # an older update never moves updated_at back
    info = store.get_session("s1")
    assert info is not None
    assert (info.agent_id, info.created_at, info.updated_at) == ("agent-a", 10.0, 30.0)
    assert store.session_exists("s1")


def test_duplicate_session_rows_in_one_batch(store: Store) -> None:
    store.write([("s1", "a", 1.0, 1.0), ("s1", "b", 2.0, 5.0), ("s1", "c", 3.0, 3.0)], [])
    info = store.get_session("s1")
    assert info is not None and (info.agent_id, info.created_at, info.updated_at) == ("a", 1.0, 5.0)


def test_final_row_replaces_running_but_is_never_replaced(store: Store) -> None:
    me = live_owner()
    store.write([("s1", "a", 1.0, 1.0)], [row("c1", status="running", output=None, owner=me)])
    assert [c.status for c in store.list_calls("s1")] == ["running"]
    store.write([], [row("c1", status="ok", output='"first"', ended=3.0)])
    store.write([], [row("c1", status="error", output='"second"', ended=4.0)])
    store.write([], [row("c1", status="running", output=None)])
    [call] = store.list_calls("s1")
    assert (call.status, call.output, call.ended_at) == ("ok", "first", 3.0)


def test_running_and_final_row_of_one_call_in_one_batch(store: Store) -> None:
    # A backlog written after an outage holds both rows of a call, in either order.
    store.write(
        [("s1", "a", 1.0, 1.0)],
        [
            row("c1", status="running", output=None),
            row("c1", output='"done"'),
            row("c2", output='"done"'),
            row("c2", status="running", output=None),
        ],
    )
    calls = {c.call_id: c for c in store.list_calls("s1")}
    assert calls["c1"].status == "ok" and calls["c1"].output == "done"
    assert calls["c2"].status == "ok" and calls["c2"].output == "done"


def test_calls_in_start_order_ties_by_call_id(store: Store) -> None:
    rows = [
        row("b", started=2.0),
        row("c", started=1.0),
        row("a", started=2.0),
        row("z", started=0.5),
        row("other", session_id="s2", started=0.1),
    ]
    store.write([("s1", "a", 1.0, 1.0), ("s2", "a", 1.0, 1.0)], rows[:2])
    store.write([], rows[2:])
    assert [c.call_id for c in store.list_calls("s1")] == ["z", "c", "a", "b"]
    assert [c.call_id for c in store.list_calls("s2")] == ["other"]


def test_record_fields_round_trip(store: Store) -> None:
    started = time.time()
    full: CallRow = (
        "c1",
        "s1",
        "turn9",
        "p0",
        "node",
        "agent",
        "langgraph",
        "error",
        '{"x": [1, 2.5, null]}',
        None,
        "ValueError: boom",
        '{"step": 3}',
        started,
        started + 0.25,
        "h:1:x",
    )
    store.write([("s1", "a", started, started)], [full])
    [call] = store.list_calls("s1")
    assert call.to_dict() == {
        "call_id": "c1",
        "session_id": "s1",
        "turn_id": "turn9",
        "parent_id": "p0",
        "kind": "node",
        "name": "agent",
        "framework": "langgraph",
        "status": "error",
        "inputs": {"x": [1, 2.5, None]},
        "output": None,
        "error": "ValueError: boom",
        "started_at": started,
        "ended_at": started + 0.25,
        "attributes": {"step": 3},
    }


def test_tree_rows_keep_a_model_calls_attributes_and_a_retried_calls_attempt_only(store: Store) -> None:
    llm = (
        *row("m", started=1.0)[:4],
        "llm",
        "gpt",
        None,
        "ok",
        None,
        None,
        None,
        '{"model": "gpt"}',
        1.0,
        2.0,
        "h:1:x",
    )
    retried = (*row("n", started=1.5)[:11], '{"attempt": 2, "thread_id": "t"}', *row("n", started=1.5)[12:])
    mentions = (*row("o", started=1.7)[:11], '{"note": "no \\"attempt\\" key here"}', *row("o", started=1.7)[12:])
    other = (*row("p", started=1.8)[:11], '{"thread_id": "t"}', *row("p", started=1.8)[12:])
    store.write([("s1", "a", 1.0, 1.0)], [llm, retried, mentions, other])
    attributes = {found[0]: found[11] for found in store.iter_tree_rows("s1")}
    assert json.loads(attributes["m"]) == {"model": "gpt"}
    assert json.loads(attributes["n"]) == {"attempt": 2}
    assert attributes["o"] is None and attributes["p"] is None


def test_list_sessions_most_recent_first_with_counts_and_limit(store: Store) -> None:
    store.write(
        [("old", "a", 1.0, 1.0), ("new", "b", 2.0, 9.0), ("mid", "c", 3.0, 5.0), ("tie", "d", 1.0, 5.0)],
        [row("x1", "new"), row("x2", "new"), row("x3", "mid")],
    )
    sessions = store.list_sessions()
    assert [s.session_id for s in sessions] == ["new", "tie", "mid", "old"]
    assert [s.call_count for s in sessions] == [2, 0, 1, 0]
    assert [s.session_id for s in store.list_sessions(limit=2)] == ["new", "tie"]
    info = store.get_session("new")
    assert info is not None and info.call_count == 2 and info.agent_id == "b"


def test_alias_is_replaced_by_a_later_bind(store: Store) -> None:
    store.write([], [], [("langgraph", "thread-1", "s1", 1.0)])
    assert store.resolve_alias("langgraph", "thread-1") == "s1"
    store.write([], [], [("langgraph", "thread-1", "s2", 2.0), ("crewai", "thread-1", "s3", 2.0)])
    assert store.resolve_alias("langgraph", "thread-1") == "s2"
    assert store.resolve_alias("crewai", "thread-1") == "s3"
    store.write([], [], [("ns", "k", "a", 1.0), ("ns", "k", "b", 2.0)])  # the later one in a batch wins
    assert store.resolve_alias("ns", "k") == "b"


def test_running_call_of_a_dead_owner_reads_as_interrupted(store: Store) -> None:
    host = socket.gethostname()
    dead_pid = _exited_pid()
    rows = [
        row("mine", status="running", output=None, owner=live_owner()),
        row("dead-local", status="running", output=None, owner=f"{host}:{dead_pid}:abc"),
        row("remote-fresh", status="running", output=None, owner="elsewhere:42:fresh"),
        row("remote-stale", status="running", output=None, owner="elsewhere:43:stale"),
        row("remote-silent", status="running", output=None, owner="elsewhere:44:never"),
        row("finished", status="ok", owner=f"{host}:{dead_pid}:abc"),
    ]
    store.write([("s1", "a", 1.0, 1.0)], rows)
    store.heartbeat("elsewhere:42:fresh", time.time())
    store.heartbeat("elsewhere:43:stale", time.time() - HEARTBEAT_STALE_SECONDS - 5)
    status = {c.call_id: c.status for c in store.list_calls("s1")}
    assert status == {
        "mine": "running",
        "dead-local": "interrupted",
        "remote-fresh": "running",
        "remote-stale": "interrupted",
        "remote-silent": "interrupted",
        "finished": "ok",
    }


def _exited_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_many_calls_stream_in_order(store: Store) -> None:
    n = 5_003  # more than one fetch batch of a streaming cursor
    rows = [row(f"c{i:05d}", started=float(i // 3)) for i in range(n)]
    store.write([("s1", "a", 1.0, 1.0)], rows[::-1])
    seen = 0
    last = (-1.0, "")
    for call in store.iter_calls("s1"):
        key = (call.started_at, call.call_id)
        assert key > last
        last = key
        seen += 1
    assert seen == n
    assert store.get_session("s1").call_count == n  # type: ignore[union-attr]


def test_flat_batches_across_sessions_turns_and_owners(store: Store) -> None:
    """The writer hands rows over flat (CallRows). Batches whose chunks share session, turn and
    owner, chunks that do not, and a remainder all store exactly what the reference keeps."""
    reference = openprogram.open_store("memory://")
    owner = live_owner()
    rows: list[CallRow] = []
    for i in range(64 * 3 + 10):
        # first chunk: one session; second: two sessions; third: one odd turn and one odd owner
        session = "s2" if 64 <= i < 128 and i % 2 else ("s2" if i >= 128 else "s1")
        r = row(f"c{i:04d}", session, started=float(i), owner=owner, output=f'"{i}"')
        if i == 130:
            r = r[:2] + ("turn2",) + r[3:]
        if i == 20:  # running, of an owner with no heartbeat: reads as interrupted, so the owner is checked
            r = row(f"c{i:04d}", session, started=float(i), owner="elsewhere:2:y", status="running")
        rows.append(r)
    # a running row and its final row in one shared chunk, and in the remainder
    rows[5] = row("c0005", "s1", started=5.0, owner=owner, status="running")
    rows.insert(9, row("c0005", "s1", started=5.0, owner=owner, output='"done"'))
    rows.append(row("c9999", "s2", started=999.0, owner=owner, status="running"))
    rows.append(row("c9999", "s2", started=999.0, owner=owner, output='"late"'))
    sessions = [("s1", "a", 1.0, 2.0), ("s2", "a", 1.0, 2.0)]
    store.write(sessions, CallRows(rows))
    reference.write(sessions, rows)
    for session in ("s1", "s2"):
        got = [c.to_dict() for c in store.list_calls(session)]
        assert got == [c.to_dict() for c in reference.list_calls(session)]
        assert got
    assert {c.turn_id for c in store.list_calls("s2")} == {"turn1", "turn2"}
    assert [c.output for c in store.list_calls("s1") if c.call_id == "c0005"] == ["done"]
    assert [c.status for c in store.list_calls("s2") if c.call_id == "c9999"] == ["ok"]
    assert [c.status for c in store.list_calls("s1") if c.call_id == "c0020"] == ["interrupted"]


def test_call_rows_is_a_sequence_of_rows() -> None:
    rows = [row(f"c{i}") for i in range(3)]
    flat = CallRows(rows)
    assert len(flat) == 3 and list(flat) == rows and flat[1] == rows[1] and flat[-1] == rows[2]
    assert flat[1:] == rows[1:] and bool(CallRows()) is False
    assert len(flat.flat) == 45
    with pytest.raises(IndexError):
        flat[3]
    with pytest.raises(ValueError, match="15 fields"):
        flat.append(rows[0][:14])  # type: ignore[arg-type]
    assert len(flat) == 3


def test_recording_through_tools_and_threads(store_url: str) -> None:
    @openprogram.tool
    def leaf(i: int) -> int:
        return i * 2

    @openprogram.tool
    def branch(i: int) -> list[int]:
        with openprogram.ContextThreadPoolExecutor(2) as pool:
            return list(pool.map(leaf, range(i)))

    with openprogram.session_context(store=store_url, agent_id="worker") as h:
        assert branch(3) == [0, 2, 4]
        with pytest.raises(KeyError):
            openprogram.tool(lambda: {}["missing"])()
    assert openprogram.flush()
    store = openprogram.open_store(store_url)
    calls = store.list_calls(h.session_id)
    by_id = {c.call_id: c for c in calls}
    kinds = [(c.kind, c.name, c.status) for c in calls]
    assert kinds[0] == ("turn", "worker", "ok")
    assert sorted(kinds[1:]) == sorted(
        [("tool", "branch", "ok"), ("tool", "<lambda>", "error")] + [("tool", "leaf", "ok")] * 3
    )
    turn = calls[0]
    for call in calls[1:]:
        parent = by_id[call.parent_id]  # type: ignore[index]
        assert parent.kind == ("tool" if call.name == "leaf" else "turn")
        assert call.turn_id == turn.turn_id == h.turn_id
    assert sorted(c.output for c in calls if c.name == "leaf") == [0, 2, 4]
    info = store.get_session(h.session_id)
    assert info is not None and info.call_count == 6 and info.agent_id == "worker"

    # The same id continues the session: a second turn, created=False.
    with openprogram.session_context(h.session_id, store=store_url) as again:
        leaf(5)
    assert not again.created and h.created
    turns = [c for c in store.list_calls(h.session_id) if c.kind == "turn"]
    assert [t.turn_id for t in turns] == [h.turn_id, again.turn_id]
    assert store.get_session(h.session_id).call_count == 8  # type: ignore[union-attr]


def test_store_selected_by_environment(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", store_url)
    with openprogram.session_context() as h:
        openprogram.tool(lambda: 1)()
    assert openprogram.flush()
    assert h.store is openprogram.open_store(store_url) is openprogram.open_store()
    assert len(openprogram.open_store(store_url).list_calls(h.session_id)) == 2


_calls = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2", "c3"]),
        st.sampled_from(["running", "ok", "error", "interrupted"]),
        st.integers(0, 3),
    ),
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(_calls, min_size=1, max_size=4))
def test_batches_merge_like_the_reference(store: Store, batches: list[list[tuple[str, str, int]]]) -> None:
    """Any sequence of batches leaves the same rows as the memory store, the reference semantics.

    (A call's rows share its start time, as the writer produces them; outputs differ per row.)
    """
    reference = openprogram.open_store("memory://")
    session = f"h{os.urandom(6).hex()}"
    for batch in batches:
        rows = [
            row(
                f"{session}-{cid}",
                session,
                status=status,
                output=f'"{n}"',
                started=float(ord(cid[1])),
                owner=live_owner(),
            )
            for cid, status, n in batch
        ]
        sessions = [(session, "a", 1.0, float(len(rows)))]
        store.write(sessions, rows)
        reference.write(sessions, rows)
    got = [c.to_dict() for c in store.list_calls(session)]
    want = [c.to_dict() for c in reference.list_calls(session)]
    assert got == want
    assert store.get_session(session) == reference.get_session(session) or not any(batches)


# Each column drawn from a pool of one or two values, so that in a 64-row chunk some
# columns are shared by every row and others are not, in every combination.
def _column(*values: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(values).flatmap(lambda v: st.sampled_from([[v], [v, values[-1]]]))


_chunk_shapes = st.fixed_dictionaries(
    {
        "turn": _column("t1", "t2"),
        "parent": _column(None, "p1", "p2"),
        "kind": _column("tool", "node"),
        "name": _column("search", "é-name"),
        "framework": _column(None, "langgraph"),
        "status": _column("ok", "error", "running"),
        "inputs": _column('{"a": 1}', None),
        "output": _column('"x"', None, "1"),
        "error": _column(None, "ValueError: no"),
        "attributes": _column(None, '{"step": 1}'),
        "ended": _column(5.0, 6.0),
        "owner": _column("live", "elsewhere:2:y"),
    }
)
_ODD = {
    "turn": "t3",
    "parent": "p3",
    "kind": "llm",
    "name": "odd",
    "framework": "crewai",
    "inputs": "[]",
    "output": '"y"',
    "error": "E",
    "attributes": "{}",
    "owner": "elsewhere:3:z",
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=st.lists(_chunk_shapes, min_size=1, max_size=3),
    odd=st.none() | st.tuples(st.sampled_from(sorted(_ODD)), st.integers(0, 63)),
    extra=st.integers(0, 70),
    seed=st.randoms(),
)
def test_chunks_with_any_shared_columns_store_what_the_reference_keeps(
    store: Store, shapes: list[dict[str, list[Any]]], odd: tuple[str, int] | None, extra: int, seed: Any
) -> None:
    """Whichever columns the rows of a 64-row chunk share (and bound once by a store), what is
    read back is what the reference keeps, for chunks of different shapes in one batch, and
    for a chunk where one row alone differs in one column (``odd``)."""
    reference = openprogram.open_store("memory://")
    session = f"h{os.urandom(6).hex()}"
    owners = {"live": live_owner(), "elsewhere:2:y": "elsewhere:2:y", "elsewhere:3:z": "elsewhere:3:z"}
    rows: list[CallRow] = []
    for shape in shapes + [shapes[-1]] * (extra > 0):
        for _ in range(64 if len(rows) < 64 * len(shapes) else extra):
            n = len(rows)
            pools = shape if odd is None or n != odd[1] else {**shape, odd[0]: [_ODD[odd[0]]]}
            status = seed.choice(pools["status"])
            started: float = float(n) if n % 3 else n  # an int start time binds like a float
            rows.append(
                (
                    f"{session}-{n:04d}",
                    session,
                    seed.choice(pools["turn"]),
                    seed.choice(pools["parent"]),
                    seed.choice(pools["kind"]),
                    seed.choice(pools["name"]),
                    seed.choice(pools["framework"]),
                    status,
                    seed.choice(pools["inputs"]),
                    seed.choice(pools["output"]),
                    seed.choice(pools["error"]),
                    seed.choice(pools["attributes"]),
                    started,
                    None if status == "running" else seed.choice(pools["ended"]),
                    owners[seed.choice(pools["owner"])],
                )
            )
    sessions = [(session, "a", 1.0, 2.0)]
    store.write(sessions, CallRows(rows))
    reference.write(sessions, rows)
    got = [c.to_dict() for c in store.list_calls(session)]
    assert got == [c.to_dict() for c in reference.list_calls(session)]
    assert len(got) == len(rows)


def test_a_session_is_claimed_once(store: Store) -> None:
    """claim_session records an absent session at once and says so; a second claim (of any
    process) finds it; the writer's later rows keep the claimed creation time."""
    assert store.claim_session("claimed", "agent-a", 10.0) is True
    assert store.session_exists("claimed")
    assert store.claim_session("claimed", "agent-b", 11.0) is False
    store.write([("claimed", "agent-a", 12.0, 20.0)], [row("c1", "claimed")])
    info = store.get_session("claimed")
    assert info is not None
    assert (info.agent_id, info.created_at, info.updated_at, info.call_count) == ("agent-a", 10.0, 20.0, 1)


def test_a_claim_is_seen_by_another_store_object(durable_url: str) -> None:
    first = openprogram.open_store(durable_url)
    second = type(first)(first.path if hasattr(first, "path") else first.connect_url)  # type: ignore[attr-defined]
    try:
        session = f"h{os.urandom(6).hex()}"
        assert first.claim_session(session, "a", 1.0) is True
        assert second.claim_session(session, "a", 2.0) is False
    finally:
        second.close()


def test_final_row_from_another_store_object_replaces_running(durable_url: str) -> None:
    """Another process (here: another store object on the same database) finishes a running call."""
    first = openprogram.open_store(durable_url)
    first.write([("s1", "a", 1.0, 1.0)], [row("c1", status="running", output=None), row("c2", output='"kept"')])
    second = type(first)(first.path if hasattr(first, "path") else first.connect_url)  # type: ignore[attr-defined]
    try:
        # A re-imported spill file: one row finishes c1, one repeats c2 with a different output, one is new.
        second.write([], [row("c1", output='"done"'), row("c2", output='"other"'), row("c3", output='"new"')])
    finally:
        second.close()
    got = {c.call_id: (c.status, c.output) for c in first.list_calls("s1")}
    assert got == {"c1": ("ok", "done"), "c2": ("ok", "kept"), "c3": ("ok", "new")}


def test_connection_string_passwords_never_reach_a_session(store_url: str) -> None:
    secret = "hunter2-Secret"

    @openprogram.tool
    def connect(dsn: str, options: dict[str, str]) -> str:
        raise ConnectionError(f"cannot reach {dsn}")

    @openprogram.tool
    def describe(target: str) -> str:
        return f"connected to {target}"

    with openprogram.session_context(store=store_url) as h:
        with pytest.raises(ConnectionError) as caught:
            connect(f"postgresql://app:{secret}@db.internal/prod", {"kv": f"host=db password={secret} user=app"})
        describe(f"mysql://root:{secret}@10.0.0.1:3306/x?sslpassword={secret}")
    assert secret in str(caught.value)  # the user's own exception is untouched
    assert openprogram.flush()
    calls = openprogram.open_store(store_url).list_calls(h.session_id)
    recorded = repr([c.to_dict() for c in calls])
    assert secret not in recorded
    assert "postgresql://app:[redacted]@db.internal/prod" in recorded and "password=[redacted]" in recorded


async def test_async_tools_record_concurrently(store_url: str) -> None:
    @openprogram.tool
    async def fetch(i: int) -> int:
        await asyncio.sleep(0.001 * (i % 3))
        return i

    async with openprogram.session_context(store=store_url) as h:
        assert await asyncio.gather(*(fetch(i) for i in range(20))) == list(range(20))
    assert await openprogram.flush_async()
    calls = openprogram.open_store(store_url).list_calls(h.session_id)
    assert len(calls) == 21 and sorted(c.output for c in calls[1:]) == list(range(20))
    assert all(c.parent_id == calls[0].call_id for c in calls[1:])


def test_nul_in_a_name_or_an_error_is_stored_escaped_and_blocks_nothing(store_url: str) -> None:
    # PostgreSQL's text cannot hold NUL: one such error message once made every later write
    # to the store fail (and spill). Names and errors keep it spelled out, as a backslash and "x00".
    @openprogram.tool(name="odd\x00name")
    def odd() -> None:
        raise ValueError("bad \x00 byte")

    store = openprogram.open_store(store_url)
    with openprogram.session_context(store=store) as h:
        with pytest.raises(ValueError):
            odd()
    with openprogram.session_context(store=store) as later:
        pass
    assert openprogram.flush()
    (call,) = [c for c in store.list_calls(h.session_id) if c.kind == "tool"]
    assert call.name == "odd\\x00name"
    assert call.status == "error" and call.error == "ValueError: bad \\x00 byte"
    assert store.get_session(later.session_id) is not None


def _model_row(call_id: str, attributes: str | None, session_id: str = "s1") -> CallRow:
    return (
        call_id,
        session_id,
        "turn1",
        None,
        "llm",
        "gpt",
        None,
        "ok",
        '{"messages": []}',
        '{"content": "x"}',
        None,
        attributes,
        1.0,
        2.0,
        "h:1:x",
    )


def test_a_session_lists_the_tokens_its_model_calls_report(store: Store) -> None:
    store.write(
        [("s1", "main", 1.0, 2.0), ("s2", "main", 1.0, 3.0)],
        [
            _model_row("m1", '{"model": "gpt", "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}'),
            _model_row("m2", '{"usage": {"input_tokens": 3, "output_tokens": 4}}'),  # no total: input + output
            _model_row("m3", '{"model": "gpt"}'),  # no usage reported
            _model_row("m4", None),
            row("t1"),  # a tool's attributes never count
        ],
    )
    infos = {info.session_id: info for info in store.list_sessions()}
    assert infos["s1"].tokens == 22
    assert infos["s2"].tokens == 0
    found = store.get_session("s1")
    assert found is not None and found.tokens == 22 and found.call_count == 5


def test_tree_rows_keep_the_attributes_of_model_calls_only(store: Store) -> None:
    usage = '{"usage": {"total_tokens": 7}}'
    tool = row("t1")
    store.write([("s1", "main", 1.0, 2.0)], [_model_row("m1", usage), (*tool[:11], '{"x": 1}', *tool[12:])])
    rows = {r[0]: r for r in store.iter_tree_rows("s1")}
    assert rows["m1"][11] == usage and rows["m1"][8] is None and rows["m1"][9] is None
    assert rows["t1"][11] is None and rows["t1"][8] is None


def test_get_call_finds_one_call_by_its_key_with_its_captures(store: Store) -> None:
    store.write([("s1", "main", 1.0, 2.0)], [row("a", started=1.0), row("b", started=1.5, output='{"x": [1]}')])
    found = store.get_call("s1", "b", 1.5)
    assert found is not None and found.call_id == "b" and found.output == {"x": [1]}
    assert found.inputs == {"a": 1}
    assert store.get_call("s1", "b") == found  # without its start: found all the same
    assert store.get_call("s1", "nope") is None and store.get_call("s2", "a") is None
