"""A model's call of a tool the agent does not have (issue 46) is a ``tool`` call ending ``error``, whether the SDK
fails the run (its default) or tells the model (``tool_not_found_behavior="return_error_to_model"``); arguments the
SDK rejects stay the failed tool call they were."""

from __future__ import annotations

import pytest
from agents import Agent, ModelBehaviorError, RunConfig, Runner, function_tool
from openprogram import session_context
from openprogram.integrations.openai_agents.demo import scripted_model
from openprogram.stores import Store

from tests.integrations.openai_agents.helpers import parent_of
from tests.support import attributes, by_kind, calls, one


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_a_call_of_a_tool_the_agent_does_not_have_fails_the_run_and_is_a_failed_tool_call(
    store: Store, streamed: bool
) -> None:
    agent = Agent(name="Clerk", tools=[lookup], model=scripted_model([[("lookup", {"key": "a"}), ("cancel", {})]]))
    async with session_context(store=store) as h:
        with pytest.raises(ModelBehaviorError) as raised:  # the SDK's own failure, unchanged
            if streamed:
                async for _ in Runner.run_streamed(agent, "cancel it").stream_events():
                    pass
            else:
                await Runner.run(agent, "cancel it")
    assert str(raised.value) == "Tool cancel not found in agent Clerk"
    records = calls(store, h.session_id)
    refused = one(records, "cancel", "tool")
    assert (refused.status, refused.error) == ("error", "ModelBehaviorError: Tool cancel not found in agent Clerk")
    assert refused.inputs == {"arguments": {}} and attributes(refused)["tool_call_id"]
    assert parent_of(records, refused) == one(records, "Clerk", "agent")
    assert "traceback" in (refused.attributes or {})  # where the SDK raised it


@pytest.mark.skipif(
    "tool_not_found_behavior" not in RunConfig.__dataclass_fields__, reason="the SDK's choice is newer than 0.14"
)
async def test_a_call_of_a_tool_the_agent_does_not_have_told_to_the_model_is_a_failed_tool_call(store: Store) -> None:
    agent = Agent(name="Clerk", tools=[lookup], model=scripted_model([[("cancel", {"order": 7})], "cannot cancel"]))
    config = RunConfig(tool_not_found_behavior="return_error_to_model")
    async with session_context(store=store) as h:
        assert (await Runner.run(agent, "cancel it", run_config=config)).final_output == "cannot cancel"
    records = calls(store, h.session_id)
    refused = one(records, "cancel", "tool")
    told = by_kind(records, "llm")[1].inputs["messages"][-1]
    assert told["role"] == "tool" and told["tool_call_id"] == attributes(refused)["tool_call_id"]
    assert (refused.status, refused.error) == ("error", f"ToolCallRejected: {told['content']}")
    assert refused.inputs == {"arguments": {"order": 7}}
    assert one(records, "Clerk", "agent").status == "ok"
    assert [c.name for c in records if c.status == "error"] == ["cancel"]


async def test_arguments_the_sdk_rejects_are_one_failed_call_of_that_tool(store: Store) -> None:
    agent = Agent(name="Clerk", tools=[lookup], model=scripted_model([[("lookup", {"id": "a"})], "no key"]))
    async with session_context(store=store) as h:
        assert (await Runner.run(agent, "look a up")).final_output == "no key"
    (rejected,) = by_kind(calls(store, h.session_id), "tool")
    assert (rejected.name, rejected.status) == ("lookup", "error")
    assert rejected.error is not None and rejected.error.startswith("ModelBehaviorError: Invalid JSON input for tool")
