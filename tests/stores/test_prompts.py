"""Model calls keep their whole prompt, each distinct message stored once, in every store."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram import _kit
from openprogram.stores import Store, StoreError, prompt_reference
from openprogram.stores.memory import MemoryStore

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]


def ask(history: list[dict[str, Any]], tools: list[str] | None = None) -> None:
    """One request to a fake model with ``history`` as its prompt (a copy: the caller keeps appending)."""
    sent = list(history)
    call = _kit.ModelCall.request("tests", "fake-model", lambda: _kit.model_inputs(sent, tools))
    assert call is not None
    with call:
        pass
    call.answered(_kit.reply(f"answer {len(sent)}"), _kit.usage(len(sent), 1))


def tool_result(step: int) -> dict[str, Any]:
    return _kit.message("tool", f"contents of file {step}: " + "x" * 200, tool_call_id=f"c{step}")


def tool_request(step: int) -> dict[str, Any]:
    calls = [_kit.tool_call(f"c{step}", "read", {"name": f"file {step}"})]
    return _kit.message("assistant", None, tool_calls=calls)


def prompts(store: Store, session_id: str) -> list[list[dict[str, Any]]]:
    return [c.inputs["messages"] for c in store.list_calls(session_id) if c.kind == "llm"]


def distinct(sent: list[list[dict[str, Any]]]) -> int:
    return len({json.dumps(m, sort_keys=True) for messages in sent for m in messages})


def test_a_growing_conversation_reads_back_whole_and_stores_each_message_once(store: Store) -> None:
    history = [_kit.message("system", "You read files."), _kit.message("user", "read them all")]
    sent = []
    with openprogram.session_context(store=store) as h:
        for step in range(150):
            sent.append(list(history))
            ask(history, ["read"])
            history += [tool_request(step), tool_result(step)]
    openprogram.flush()
    assert prompts(store, h.session_id) == sent
    assert len(sent[-1]) == 300  # past every container bound a single capture has
    calls = [c for c in store.list_calls(h.session_id) if c.kind == "llm"]
    assert all(c.inputs["tools"] == ["read"] for c in calls)
    assert len(store.messages(h.session_id)) == distinct(sent) == 300
    last = store.get_call(h.session_id, calls[-1].call_id)  # read alone, not after the others
    assert last is not None and last.inputs["messages"] == sent[-1]


def test_a_request_stores_a_reference_and_only_its_new_messages(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    history = [_kit.message("user", "go")]
    with openprogram.session_context(store=f"sqlite:///{path}"):
        for step in range(40):
            ask(history)
            history += [tool_request(step), tool_result(step)]
    openprogram.flush()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT inputs FROM calls WHERE kind = 'llm' ORDER BY started_at")
        stored = [json.loads(row[0]) for row in rows]
    references = [prompt_reference(inputs) for inputs in stored]
    assert references[0] == {"add": [references[0]["add"][0]]}  # type: ignore[index]
    for reference in references[1:]:
        assert reference is not None and reference["keep"] >= 1 and len(reference["add"]) == 2


def test_a_rewritten_history_is_recorded_as_sent_and_shares_its_messages(store: Store) -> None:
    system = _kit.message("system", "Be brief.")
    history = [system, _kit.message("user", "start")]
    sent = []
    with openprogram.session_context(store=store) as h:
        for step in range(30):
            if step in (10, 20):  # trimmed to the system message and the four newest, as trim_messages does
                history = [system, *history[-4:]]
            if step == 25:  # a summary replaces everything but the system message
                history = [system, _kit.message("user", "summary of the first 25 steps")]
            sent.append(list(history))
            ask(history)
            history += [tool_request(step), tool_result(step)]
    openprogram.flush()
    assert prompts(store, h.session_id) == sent
    assert len(store.messages(h.session_id)) == distinct(sent)


def test_conversations_taking_turns_in_one_session_each_read_back_whole(store: Store) -> None:
    histories = {name: [_kit.message("system", f"You are {name}.")] for name in ("planner", "coder", "critic")}
    sent: list[list[dict[str, Any]]] = []
    with openprogram.session_context(store=store) as h:
        for step in range(20):
            for name, history in histories.items():
                history.append(_kit.message("user", f"{name} step {step}"))
                sent.append(list(history))
                ask(history)
                history.append(_kit.message("assistant", f"{name} answer {step}"))
    openprogram.flush()
    assert prompts(store, h.session_id) == sent


def test_requests_from_many_threads_each_read_back_whole(store: Store) -> None:
    sent: dict[str, list[list[dict[str, Any]]]] = {}

    def agent(name: str, handle: openprogram.SessionHandle) -> None:
        history = [_kit.message("user", f"task for {name}")]
        sent[name] = []
        with openprogram.run_with_session(handle):
            for step in range(25):
                sent[name].append(list(history))
                ask(history)
                history += [_kit.message("assistant", f"{name} {step}"), _kit.message("user", f"more {step}")]

    with openprogram.session_context(store=store) as h:
        threads = [threading.Thread(target=agent, args=(f"agent{i}", h)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    openprogram.flush()
    recorded = prompts(store, h.session_id)
    assert sorted(map(json.dumps, recorded)) == sorted(json.dumps(m) for ms in sent.values() for m in ms)


def test_a_huge_message_is_cut_inside_and_the_newer_ones_stay_whole(store: Store) -> None:
    huge = _kit.message("tool", "y" * 2_000_000, tool_call_id="big")
    history = [_kit.message("user", "read the big file"), huge, _kit.message("user", "and now?")]
    with openprogram.session_context(store=store) as h:
        ask(history)
        history += [_kit.message("assistant", "it is big"), _kit.message("user", "thanks")]
        ask(history)
    openprogram.flush()
    first, second = prompts(store, h.session_id)
    assert len(second) == 5 and second[:3] == first
    assert second[0] == history[0] and second[2:] == history[2:]
    cut = second[1]
    assert len(json.dumps(cut)) <= 32 * 1024 and cut["content"].endswith("[1995904 more chars]")


def test_with_content_capture_off_no_message_is_written(store: Store) -> None:
    openprogram.configure(capture_content=False)
    try:
        with openprogram.session_context(store=store) as h:
            ask([_kit.message("user", "secret plans")])
        openprogram.flush()
    finally:
        openprogram.configure(capture_content=True)
    (call,) = [c for c in store.list_calls(h.session_id) if c.kind == "llm"]
    assert (
        call.inputs is None
        and call.output is None
        and call.attributes
        == {
            "model": "fake-model",
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        }
    )
    assert store.messages(h.session_id) == {}


class _OlderStore(MemoryStore):
    """A store subclass written before message rows existed."""

    keeps_messages = False

    def write(self, sessions: Any, calls: Any, aliases: Any = ()) -> None:  # type: ignore[override]
        super().write(sessions, calls, aliases)


def test_a_store_that_keeps_no_messages_gets_every_prompt_whole() -> None:
    store = _OlderStore("memory://older")
    history = [_kit.message("user", "go")]
    sent = []
    with openprogram.session_context(store=store) as h:
        for step in range(60):
            sent.append(list(history))
            ask(history)
            history += [tool_request(step), tool_result(step)]
    openprogram.flush()
    assert prompts(store, h.session_id) == sent


def test_a_session_continued_in_another_process_reads_back_whole(durable_url: str) -> None:
    history = [_kit.message("user", "first turn")]
    with openprogram.session_context(store=durable_url) as h:
        for step in range(5):
            ask(history)
            history += [tool_request(step), tool_result(step)]
    openprogram.flush()
    script = f"""
import json
import openprogram
from openprogram import _kit
history = json.loads({json.dumps(history)!r})
history.append(_kit.message("user", "second turn"))
with openprogram.session_context({h.session_id!r}, store={durable_url!r}):
    call = _kit.ModelCall.request("tests", "fake-model", lambda: _kit.model_inputs(list(history)))
    with call:
        pass
    call.answered(_kit.reply("done"))
openprogram.flush()
"""
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert child.returncode == 0, child.stderr
    recorded = prompts(openprogram.open_store(durable_url), h.session_id)
    assert len(recorded) == 6 and recorded[-1] == [*history, _kit.message("user", "second turn")]


def test_a_store_written_by_the_previous_version_migrates_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(DATA / "store-schema-3.db", path)
    store = openprogram.open_store(f"sqlite:///{path}")
    old = prompts(store, "schema-3-session")
    assert len(old) == 20 and [len(messages) for messages in old] == list(range(2, 42, 2))
    assert old[-1][-1] == {"role": "tool", "content": "contents of f18", "tool_call_id": "c18"}
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
    history = [*old[-1], _kit.message("user", "and one more")]
    with openprogram.session_context("schema-3-session", store=store):
        ask(history)
    openprogram.flush()
    assert prompts(store, "schema-3-session") == [*old, history]


def test_a_store_of_a_newer_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    shutil.copy(DATA / "store-schema-3.db", path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 5, newer than this openprogram understands"):
        openprogram.open_store(f"sqlite:///{path}", strict=True).list_sessions()


def test_show_json_and_jsonl_print_whole_prompts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    history = [_kit.message("user", "go")]
    sent = []
    with openprogram.session_context(store=url) as h:
        for step in range(30):
            sent.append(list(history))
            ask(history)
            history += [tool_request(step), tool_result(step)]
    openprogram.flush()
    for form in ("--json", "--jsonl"):
        shown = subprocess.run(
            [sys.executable, "-m", "openprogram", "--store", url, "show", h.session_id, form],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        if form == "--json":
            calls = json.loads(shown.stdout)["calls"]
        else:
            calls = [json.loads(line) for line in shown.stdout.splitlines() if line.strip()]
            calls = [c.get("call", c) for c in calls]
        assert [c["inputs"]["messages"] for c in calls if c.get("kind") == "llm"] == sent


def test_a_long_tool_result_is_stored_once_however_many_calls_hold_it(store: Store) -> None:
    @openprogram.tool
    def read(name: str) -> str:
        return f"{name}: " + "line of a long file\n" * 100

    history = [_kit.message("user", "read a and b")]
    with openprogram.session_context(store=store) as h:
        with openprogram.call_scope("node", "tools") as node:  # a step whose output holds the result too
            results = [read("a"), read("b")]
            node.set_output({"messages": [{"type": "tool", "content": text} for text in results]})
        history += [_kit.message("tool", text, tool_call_id=name) for name, text in zip("ab", results, strict=True)]
        ask(history)
        ask([*history, _kit.message("user", "again")])
    openprogram.flush()
    calls = store.list_calls(h.session_id)
    assert [c.output for c in calls if c.kind == "tool"] == results
    (node_call,) = [c for c in calls if c.kind == "node"]
    assert node_call.output == {"messages": [{"type": "tool", "content": text} for text in results]}
    assert prompts(store, h.session_id)[-1][1:3] == history[1:3]
    raw = store.messages(h.session_id).values()
    assert [sum(json.dumps(result)[1:-1] in text for text in raw) for result in results] == [1, 1]  # not 4 times
    assert [[json.loads(text) for text in raw].count(result) for result in results] == [1, 1]


def test_hostile_references_read_back_bounded_and_never_raise() -> None:
    store = MemoryStore("memory://hostile")
    deep: Any = {"$text": "t0"}
    for _ in range(100_000):
        deep = [deep]
    rows = [
        # a reference to a call that is not there, claiming a billion earlier messages
        ("c1", "s", "t", None, "llm", "m", None, "ok",
         '{"messages":{"$prompt":{"after":"gone","keep":1000000000,"add":[]}}}', None, None, None, 1.0, 2.0, "h"),
        # two calls that refer to each other
        ("c2", "s", "t", None, "llm", "m", None, "ok",
         '{"messages":{"$prompt":{"after":"c3","keep":2,"add":[]}}}', None, None, None, 2.0, 3.0, "h"),
        ("c3", "s", "t", None, "llm", "m", None, "ok",
         '{"messages":{"$prompt":{"after":"c2","keep":2,"add":[]}}}', None, None, None, 3.0, 4.0, "h"),
    ]  # fmt: skip
    store.write([("s", "main", 1.0, 4.0)], rows)
    calls = {c.call_id: c for c in store.list_calls("s")}
    assert len(calls["c1"].inputs["messages"]) == 1 and calls["c1"].inputs["messages"][0]["missing"] == 10**9
    assert len(calls["c2"].inputs["messages"]) <= 2 and len(calls["c3"].inputs["messages"]) <= 2
    reader = store.prompt_reader("s")
    assert reader.with_texts(deep) is deep  # too deep to walk: as stored
