"""The P3 workloads, one per framework, as ``p3-floor`` and ``p3-instructions`` run them.

Each entry names the module its framework needs installed and what builds it: a
builder returns the adapter's identifier and one run (a callable returning the
run's result or a coroutine), each benchmark's own workload.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

Built = tuple[str, Callable[[], Any]]


def _langgraph() -> Built:
    from langchain_core.messages import HumanMessage
    from p3_langgraph import build_graph

    graph = build_graph()
    inputs = {"messages": [HumanMessage("weather in Paris, population of Oslo, distance?")], "steps": []}
    return "langgraph", lambda: graph.invoke(inputs)


def _semantic_kernel() -> Built:
    from p3_semantic_kernel import PROMPT, make_kernel, sk_diagnostics

    sk_diagnostics(False)
    kernel, arguments = make_kernel()
    return "semantic_kernel", lambda: kernel.invoke_prompt(PROMPT, arguments=arguments)


def _crewai() -> Built:
    # A fresh crew a run, as p3-crewai runs it: a reused crew keeps state between kickoffs.
    from p3_crewai import build_crew

    return "crewai", lambda: build_crew().kickoff()


def _pydantic_ai() -> Built:
    from p3_pydantic_ai import build_agent

    agent = build_agent()
    return "pydantic_ai", lambda: agent.run("go")


def _openai_agents() -> Built:
    from agents import Runner, set_tracing_disabled
    from p3_openai_agents import build_triage

    set_tracing_disabled(True)  # the SDK's own tracing is p3-openai-agents' peer, not part of the run
    return "agents", lambda: Runner.run(build_triage(), "I was charged twice")


#: name -> (the module its framework needs, what builds it)
WORKLOADS: dict[str, tuple[str, Callable[[], Built]]] = {
    "langgraph": ("langgraph", _langgraph),
    "semantic-kernel": ("semantic_kernel", _semantic_kernel),
    "crewai": ("crewai", _crewai),
    "pydantic-ai": ("pydantic_ai", _pydantic_ai),
    "openai-agents": ("agents", _openai_agents),
}


def installed() -> list[str]:
    """The workloads whose framework is installed."""
    return [name for name, (module, _) in WORKLOADS.items() if importlib.util.find_spec(module) is not None]
