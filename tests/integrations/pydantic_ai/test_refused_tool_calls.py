"""A model's call of a tool that does not exist is a ``tool`` call ending ``error`` (issue 46): Pydantic AI refuses
it before any hook runs and tells the model, which goes on; the session counts it as an error."""

from __future__ import annotations

import openprogram
import pytest
from openprogram.stores import Store
from pydantic_ai import Agent

from tests.integrations.pydantic_ai.fakes import scripted
from tests.integrations.pydantic_ai.helpers import parent_of
from tests.support import attributes, by_kind, calls, one

pytestmark = pytest.mark.usefixtures("instrumented")


def test_a_call_of_a_tool_that_does_not_exist_is_a_failed_tool_call(store: Store) -> None:
    ran: list[int] = []
    agent = Agent(scripted([[("cube", {"n": 2})], [("square", {"n": 3})]]), name="guessing")

    @agent.tool_plain
    def square(n: int) -> int:
        ran.append(n)
        return n * n

    with openprogram.session_context(store=store) as h:
        result = agent.run_sync("go")
    assert result.output == "done" and ran == [3]  # Pydantic AI told the model and went on, as without openprogram
    records = calls(store, h.session_id)
    refused, ran_call = by_kind(records, "tool")
    assert (refused.name, refused.status, refused.framework) == ("cube", "error", "pydantic_ai")
    assert refused.error == "ToolRetryError: Unknown tool name: 'cube'. Available tools: 'square'"
    assert refused.inputs == {"arguments": {"n": 2}} and attributes(refused) == {"tool_call_id": "call-0-0"}
    assert parent_of(records, refused) == one(records, "guessing", "agent")
    assert (ran_call.name, ran_call.status) == ("square", "ok")
    assert [c.name for c in records if c.status == "error"] == ["cube"]  # the session no longer reads "0 errors"


def test_arguments_the_framework_rejects_stay_one_failed_tool_call(store: Store) -> None:
    agent = Agent(scripted([[("square", {"m": 3})], [("square", {"n": 3})]]), name="validating")

    @agent.tool_plain
    def square(n: int) -> int:
        return n * n

    with openprogram.session_context(store=store) as h:
        agent.run_sync("go")
    rejected, valid = by_kind(calls(store, h.session_id), "tool")  # recorded once: by the validation hook
    assert (rejected.status, attributes(rejected)) == ("error", {"tool_call_id": "call-0-0", "executed": False})
    assert "ValidationError" in (rejected.error or "") and "Field required" in (rejected.attributes or {})["traceback"]
    assert valid.status == "ok"
