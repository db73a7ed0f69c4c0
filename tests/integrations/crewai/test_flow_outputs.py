"""A flow records the inputs it was kicked off with and what it returned, and each flow method the value it returned."""

from __future__ import annotations

import asyncio
from typing import Any

import openprogram
import pytest
from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, listen, router, start
from openprogram.integrations.crewai.fakes import scripted_llm
from openprogram.stores import Store

from tests.integrations.crewai.helpers import parent_of
from tests.support import by_kind, calls, one


class Triage(Flow):  # type: ignore[type-arg]
    @start()
    def classify(self) -> str:
        return f"ticket about {self.state['topic']}"

    @router(classify)
    def route(self, ticket: str) -> str:
        return "billing" if "invoice" in ticket else "support"

    @listen("billing")
    def to_billing(self) -> dict[str, Any]:
        return {"queue": "billing", "priority": 2}

    @listen("support")
    def to_support(self) -> dict[str, Any]:
        return {"queue": "support", "priority": 1}


@pytest.mark.parametrize("entry", ["kickoff", "kickoff_async"])
def test_flow_records_its_kickoff_inputs(store: Store, entry: str) -> None:
    flow = Triage()
    with openprogram.session_context(store=store) as h:
        if entry == "kickoff":
            flow.kickoff(inputs={"topic": "invoice"})
        else:
            asyncio.run(flow.kickoff_async({"topic": "invoice"}))
    (recorded,) = by_kind(calls(store, h.session_id), "flow")
    assert recorded.inputs == {"inputs": {"topic": "invoice"}}
    assert recorded.output == {"queue": "billing", "priority": 2}  # what the flow returned


def test_each_flow_method_records_its_return_value_and_the_router_its_route(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        assert Triage().kickoff(inputs={"topic": "login"}) == {"queue": "support", "priority": 1}
    records = calls(store, h.session_id)
    (flow,) = by_kind(records, "flow")
    methods = {r.name: r for r in records if r.kind == "call"}
    assert set(methods) == {"classify", "route", "to_support"}  # the route not taken did not run
    assert all(parent_of(records, r) == flow for r in methods.values())
    assert methods["classify"].output == "ticket about login"
    assert methods["route"].output == "support"
    assert methods["to_support"].output == {"queue": "support", "priority": 1}


def test_flow_method_returning_a_crew_output_records_its_text(store: Store) -> None:
    agent = Agent(role="Writer", goal="write", backstory="offline", llm=scripted_llm(final="a short note"))
    crew = Crew(agents=[agent], tasks=[Task(description="write", expected_output="a note", agent=agent)])

    class Writes(Flow):  # type: ignore[type-arg]
        @start()
        def write(self) -> Any:
            return crew.kickoff()  # the CrewOutput itself

    with openprogram.session_context(store=store) as h:
        Writes().kickoff()
    records = calls(store, h.session_id)
    assert one(records, "write", "call").output == "a short note"
    (request,) = by_kind(records, "llm")
    assert parent_of(records, request) == one(records, "Writer", "agent")


def test_content_capture_off_drops_flow_inputs_and_method_outputs(store: Store) -> None:
    openprogram.configure(capture_content=False)
    with openprogram.session_context(store=store) as h:
        Triage().kickoff(inputs={"topic": "invoice"})
    records = calls(store, h.session_id)
    assert [r.kind for r in records].count("call") == 3
    assert all(r.inputs is None and r.output is None for r in records if r.kind in ("flow", "call"))
