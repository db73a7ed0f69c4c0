"""LangChain adapter: every chat model request an ``llm`` call, every tool call a ``tool`` call.

For programs that use LangChain without LangGraph (an LCEL chain, ``model.invoke``,
``tool.invoke``, a LangChain model called inside another framework's tool) and for LangGraph,
which needs it (``LangGraphIntegration.needs``): inside a graph run the calls carry
``"langgraph"`` (:mod:`.caller`). Chat model requests: :mod:`.chat_models`; tools: :mod:`.tools`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from openprogram._kit import Integration, Target

from .caller import FRAMEWORK
from .chat_models import CHAT_MODEL_TARGETS
from .tools import TOOL_TARGETS

__all__ = ["LangChainIntegration"]


class LangChainIntegration(Integration):
    """Records LangChain chat model requests and tool calls, under whatever called them."""

    identifier: ClassVar[str] = "langchain"
    framework: ClassVar[str] = FRAMEWORK
    distribution: ClassVar[str] = "langchain-core"
    extra: ClassVar[str] = "langchain"
    trigger: ClassVar[str] = "langchain_core"  # every model and tool module of LangChain imports it first

    def targets(self) -> Sequence[Target]:
        return [*TOOL_TARGETS, *CHAT_MODEL_TARGETS]
