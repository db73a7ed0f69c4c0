"""Framework adapters, one package per framework; none imports its framework at module scope.

Enable them with :func:`openprogram.instrument`. This module is the registry: it names each
adapter and its demo by import string, so reading it imports no adapter and no framework.
"""

from __future__ import annotations

__all__ = ["ALIASES", "DEMOS", "INTEGRATIONS"]

#: framework name -> import string of its Integration subclass
INTEGRATIONS: dict[str, str] = {
    "langgraph": "openprogram.integrations.langgraph:LangGraphIntegration",
    "langchain": "openprogram.integrations.langchain:LangChainIntegration",
    "crewai": "openprogram.integrations.crewai:CrewAIIntegration",
    "semantic_kernel": "openprogram.integrations.semantic_kernel:SemanticKernelIntegration",
    "pydantic_ai": "openprogram.integrations.pydantic_ai:PydanticAIIntegration",
    "agents": "openprogram.integrations.openai_agents:OpenAIAgentsIntegration",
    "mcp": "openprogram.integrations.mcp:MCPIntegration",
    "llama_index": "openprogram.integrations.llama_index:LlamaIndexIntegration",
    "google_adk": "openprogram.integrations.google_adk:GoogleADKIntegration",
}
#: other spellings ``instrument()`` accepts
ALIASES: dict[str, str] = {
    "semantic-kernel": "semantic_kernel",
    "openai_agents": "agents",
    "openai-agents": "agents",
    "llama-index": "llama_index",
    "google-adk": "google_adk",
    "langchain-core": "langchain",  # its distribution
}
#: framework name -> module with ``run_demo(emit)`` (and an optional ``prepare()``), for ``openprogram demo``
DEMOS: dict[str, str] = {
    "langgraph": "openprogram.integrations.langgraph.demo",
    "langchain": "openprogram.integrations.langchain.demo",
    "crewai": "openprogram.integrations.crewai.demo",
    "semantic_kernel": "openprogram.integrations.semantic_kernel.demo",
    "pydantic_ai": "openprogram.integrations.pydantic_ai.demo",
    "agents": "openprogram.integrations.openai_agents.demo",
    "llama_index": "openprogram.integrations.llama_index.demo",
    "google_adk": "openprogram.integrations.google_adk.demo",
}
