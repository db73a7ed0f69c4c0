"""Instrumented, Pydantic AI resolves a run's model as it does plain: once a run, the agent's entered model reused.

Pydantic AI caches a model resolved from an id by the identity of the capability that resolved it,
so openprogram's capability is the agent's own rather than one added to each run.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openprogram
import pytest
from openprogram.stores import Store
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.integrations.pydantic_ai.fakes import scripted
from tests.support import calls, tree

needs_model_hooks = pytest.mark.skipif(
    not hasattr(AbstractCapability, "resolve_model_id"), reason="this Pydantic AI has no model-choosing capabilities"
)


@dataclass
class ModelByName(AbstractCapability[Any]):
    """Supplies the agent's model by a name Pydantic AI builds the model from."""

    name: str

    def get_model(self) -> Any:
        return self.name


@dataclass
class ModelByAlias(AbstractCapability[Any]):
    """Chooses the model by an alias before each request, and resolves the alias itself."""

    resolve: Callable[[str], Any]

    def get_model(self) -> Any:
        return lambda ctx: "alias"

    async def resolve_model_id(self, ctx: Any, *, model_id: str) -> Any:
        return self.resolve(model_id)


@dataclass
class SeenModels(AbstractCapability[Any]):
    """Remembers the model object each request went to."""

    seen: list[Any]

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        self.seen.append(request_context.model)
        return request_context


def _tool_then_text(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("advance", {})])
    return ModelResponse(parts=[TextPart("done")])


@needs_model_hooks
@pytest.mark.usefixtures("instrumented")
def test_a_model_id_a_capability_resolves_is_resolved_once_a_run_as_uninstrumented(store: Store) -> None:
    resolved: list[str] = []
    model = FunctionModel(_tool_then_text)

    def resolve(model_id: str) -> Any:
        resolved.append(model_id)
        return model

    agent = Agent(None, capabilities=[ModelByAlias(resolve)], name="chooser")

    @agent.tool_plain
    def advance() -> str:
        return "advanced"

    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("go").output == "done"
    assert resolved == ["alias"]
    assert [kind for _, kind, _ in tree(calls(store, h.session_id))] == ["turn", "agent", "llm", "tool", "llm"]


@needs_model_hooks
@pytest.mark.usefixtures("instrumented")
def test_inside_async_with_agent_each_run_reuses_the_model_the_agent_entered(store: Store) -> None:
    seen: list[Any] = []
    agent = Agent(None, capabilities=[ModelByName("test"), SeenModels(seen)], name="entered")

    async def two_runs() -> None:
        async with agent:
            await agent.run("one")
            await agent.run("two")

    with openprogram.session_context(store=store) as h:
        asyncio.run(two_runs())
    first, second = seen
    assert first is second  # the model built from "test" when the agent was entered
    assert [kind for _, kind, _ in tree(calls(store, h.session_id))] == ["turn", "agent", "llm", "agent", "llm"]


@pytest.mark.skipif(
    "capabilities" not in inspect.signature(Agent.override).parameters, reason="override() replaces no capabilities"
)
@pytest.mark.usefixtures("instrumented")
def test_an_override_replacing_the_agents_capabilities_still_records_its_requests(store: Store) -> None:
    agent = Agent(scripted([]), name="overridden")
    with openprogram.session_context(store=store) as h, agent.override(capabilities=[]):
        assert agent.run_sync("hi").output == "done"
    assert [kind for _, kind, _ in tree(calls(store, h.session_id))] == ["turn", "agent", "llm"]


def test_an_agent_built_under_an_earlier_instrument_is_recorded_once_after_instrumenting_again(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    instrument("pydantic_ai")
    agent = Agent(scripted([]), name="again")
    openprogram.uninstrument("pydantic_ai")
    instrument("pydantic_ai")
    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("hi").output == "done"
    assert [kind for _, kind, _ in tree(calls(store, h.session_id))] == ["turn", "agent", "llm"]
