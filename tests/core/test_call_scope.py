"""``call_scope``: the recording primitive adapters use (sync, async, enter/exit pairs)."""

from __future__ import annotations

import openprogram
import pytest
from openprogram._recording import call_var

from .conftest import one


@openprogram.tool
def inner(x: int) -> int:
    return x


def test_sync_scope_records_a_node_with_output_and_attributes(store: openprogram.Store) -> None:
    messages = ["hi"]
    state = {"messages": messages, "api_key": "sk-should-not-appear-anywhere"}
    with openprogram.session_context(store=store) as h:
        with openprogram.call_scope(
            "node", "agent", framework="langgraph", inputs={"state": state}, attributes={"step": 1}
        ) as scope:
            assert scope.recording
            assert call_var.get() == scope.call_id
            messages.append("mutated after entry")
            inner(1)
            scope.set_output({"reply": "ok"})
            scope.set_attributes(task_id="t-9")
        assert call_var.get() == h.root_call_id
    node = one(store, h.session_id, "agent")
    assert (node.kind, node.framework, node.status) == ("node", "langgraph", "ok")
    assert node.inputs == {"state": {"messages": ["hi"], "api_key": "[redacted]"}}  # snapshot at entry
    assert node.output == {"reply": "ok"}
    assert node.attributes == {"step": 1, "task_id": "t-9"}
    assert node.parent_id == h.root_call_id
    assert one(store, h.session_id, "inner").parent_id == node.call_id


async def test_async_scope_and_exception_passthrough(store: openprogram.Store) -> None:
    boom = LookupError("nope")
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(LookupError) as info:
            async with openprogram.call_scope("function", "plugin-fn", framework="semantic_kernel"):
                raise boom
        assert info.value is boom
    fn = one(store, h.session_id, "plugin-fn")
    assert (fn.status, fn.error) == ("error", "LookupError: nope")


def test_enter_exit_pair_for_hooks(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        scope = openprogram.call_scope("task", "write-report", framework="crewai").enter()
        inner(2)
        scope.exit()
        scope.exit()  # idempotent
        failing = openprogram.call_scope("task", "failing").enter()
        failing.exit(ValueError("x"))
    task = one(store, h.session_id, "write-report")
    assert task.status == "ok"
    assert one(store, h.session_id, "inner").parent_id == task.call_id
    assert one(store, h.session_id, "failing").status == "error"


def test_explicit_session_and_parent(store: openprogram.Store) -> None:
    with openprogram.session_context("target-s", store=store) as target:
        pass
    with openprogram.session_context("other-s", store=store):
        with openprogram.call_scope("graph", "g", session=target) as g:
            assert openprogram.get_current_session() is target
            inner(3)
        with openprogram.call_scope("node", "n", session=target, parent_id=g.call_id):
            pass
    graph = one(store, "target-s", "g")
    assert graph.parent_id == target.root_call_id
    assert one(store, "target-s", "inner").parent_id == graph.call_id
    assert one(store, "target-s", "n").parent_id == graph.call_id
