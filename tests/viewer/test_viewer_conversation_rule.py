"""Which call gives a turn's input and answer, on records shaped like the adapters' (hand-offs, guardrails, ...)."""

from __future__ import annotations

import json
from typing import Any

from openprogram._runtime import process_owner
from openprogram._viewer import Conversation, SessionTree
from openprogram.stores import CallRow
from openprogram.stores.memory import MemoryStore

T0 = 1_800_000_000.0
MAX_EXCHANGES = 20  # listed per turn


class _Session:
    """Calls written one by one, each starting after the one before."""

    def __init__(self) -> None:
        self.rows: list[CallRow] = []

    def add(
        self,
        call_id: str,
        parent: str | None,
        kind: str,
        name: str = "",
        *,
        inputs: Any = None,
        output: Any = None,
        status: str = "ok",
        error: str | None = None,
        ended: bool = True,
    ) -> str:
        at = T0 + len(self.rows)
        encode = lambda value: None if value is None else json.dumps(value)  # noqa: E731
        row = (call_id, "s1", "turn", parent, kind, name or call_id, None, status, encode(inputs), encode(output))
        self.rows.append((*row, error, None, at, at + 100 if ended else None, process_owner()))
        return call_id

    def turn(self) -> dict[str, Any]:
        """The exchanges of the session's only root."""
        store = MemoryStore("memory://")
        store.write([("s1", "main", T0, T0)], self.rows)
        tree = SessionTree.read(store, "s1")
        (root,) = tree.roots
        return Conversation(store).turn(tree, root)


def _said(said: Any) -> Any:
    return None if said is None else (said["call"], [part["text"] for part in said["parts"]])


def _prompt(*messages: tuple[str, str]) -> dict[str, Any]:
    return {"messages": [{"role": role, "content": content} for role, content in messages]}


def test_the_input_is_the_agents_own_first_prompt_and_the_answer_the_last_reply_after_a_hand_off() -> None:
    s = _Session()
    s.add("turn", None, "turn")
    triage = s.add("triage", "turn", "agent", inputs={"input": "refund?"}, output={"final": "object"})
    s.add("guard", triage, "agent")  # a guardrail's model call starts first, deeper down
    s.add("guard-llm", "guard", "llm", inputs=_prompt(("system", "on topic?"), ("user", "refund?")))
    s.add(
        "llm-1",
        triage,
        "llm",
        inputs=_prompt(("system", "triage"), ("user", "hi"), ("assistant", "hello"), ("user", "refund?")),
        output={"role": "assistant", "content": None, "tool_calls": [{"id": "1", "name": "to_billing"}]},
    )
    s.add("handoff", triage, "call", "to_billing")
    s.add("billing", "handoff", "agent")
    s.add(
        "llm-2", "billing", "llm", inputs=_prompt(("user", "refund?")), output={"role": "assistant", "content": "done"}
    )
    found = s.turn()
    (exchange,) = found["exchanges"]
    assert (found["runs"], found["more"]) == (1, 0)
    assert _said(exchange["input"]) == ("llm-1", ["refund?"])  # only the question ending the prompt
    assert _said(exchange["answer"]) == ("llm-2", ["done"])
    assert (exchange["run"]["name"], exchange["model_calls"], exchange["calls"]) == ("triage", 3, 7)


def test_text_the_run_returned_is_its_answer_and_runs_without_model_calls_are_left_out() -> None:
    s = _Session()
    s.add("turn", None, "turn")
    s.add("graph", "turn", "graph", output="the answer")
    s.add(
        "llm",
        "graph",
        "llm",
        inputs=_prompt(("user", "q")),
        output={"role": "assistant", "content": "Final: the answer"},
    )
    s.add("resume", "turn", "graph", inputs={"resume": "yes"}, output={"state": 1})  # asked no model
    (exchange,) = s.turn()["exchanges"]
    assert _said(exchange["answer"]) == ("graph", ["the answer"])


def test_without_a_user_message_or_a_text_reply_the_runs_own_inputs_and_output_are_shown() -> None:
    s = _Session()
    s.add("turn", None, "turn")
    s.add("agent", "turn", "agent", inputs={"prompt": "plan it"}, output={"steps": [1, 2]})
    s.add("llm", "agent", "llm", inputs=_prompt(("system", "s"), ("assistant", "a")), output={"role": "assistant"})
    (exchange,) = s.turn()["exchanges"]
    assert _said(exchange["input"]) == ("agent", ["plan it"])  # one text field reads as its text
    assert exchange["answer"]["parts"][0]["json"] is True
    assert json.loads(exchange["answer"]["parts"][0]["text"]) == {"steps": [1, 2]}


def test_with_content_capture_off_nothing_is_shown_and_nothing_fails() -> None:
    s = _Session()
    s.add("turn", None, "turn")
    s.add("agent", "turn", "agent")
    s.add("llm", "agent", "llm")
    (exchange,) = s.turn()["exchanges"]
    assert (exchange["input"], exchange["answer"], exchange["model_calls"]) == (None, None, 1)


def test_a_failed_run_says_why_and_a_running_one_has_no_answer_yet() -> None:
    s = _Session()
    s.add("turn", None, "turn", status="running", ended=False)
    s.add("failed", "turn", "agent", status="error", error="ValueError: no model\nTraceback ...")
    s.add("llm-1", "failed", "llm", inputs=_prompt(("user", "first")), status="error", error="ValueError: no model")
    s.add("running", "turn", "agent", status="running", ended=False)
    s.add("llm-2", "running", "llm", inputs=_prompt(("user", "second")), status="running", ended=False)
    failed, running = s.turn()["exchanges"]
    assert (failed["error"], failed["answer"]) == ("ValueError: no model", None)
    assert (running["run"]["status"], _said(running["input"]), running["answer"]) == (
        "running",
        ("llm-2", ["second"]),
        None,
    )


def test_a_turn_of_many_plain_calls_lists_the_first_ones_and_counts_the_rest() -> None:
    s = _Session()
    s.add("turn", None, "turn")
    for n in range(MAX_EXCHANGES + 5):
        s.add(f"tool-{n}", "turn", "tool", inputs={"n": n}, output=n * 2)
    found = s.turn()
    assert (found["runs"], len(found["exchanges"]), found["more"]) == (MAX_EXCHANGES + 5, MAX_EXCHANGES, 5)
    assert [_said(e["answer"]) for e in found["exchanges"][:2]] == [("tool-0", ["0"]), ("tool-1", ["2"])]


def test_long_texts_are_cut_for_the_bubble() -> None:
    s = _Session()
    s.add("turn", None, "turn")
    s.add("agent", "turn", "agent", output="x" * 10_000)
    (exchange,) = s.turn()["exchanges"]
    (part,) = exchange["answer"]["parts"]
    assert (len(part["text"]), part["cut"]) == (4000, True)
