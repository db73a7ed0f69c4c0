"""The LangChain part of ``openprogram demo``: an LCEL chain and a tool, offline, with no LangGraph.

A prompt piped into langchain-core's own fake chat model (one ``llm`` call with its whole prompt),
then the tool the answer names, invoked directly (one ``tool`` call); both ``framework``
``"langchain"``, under the demo's turn.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["run_demo"]


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the chain and the tool in the current session; report on ``emit``."""
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.tools import tool

    @tool
    def distance_km(origin: str, destination: str) -> int:
        """Distance between two cities by road (offline)."""
        return {("Oslo", "Bergen"): 463}.get((origin, destination), 0)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You plan trips. Name the one tool to call."), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=["distance_km from Oslo to Bergen"])
    plan = (prompt | model | StrOutputParser()).invoke({"question": "How far is Bergen from Oslo?"})
    km = distance_km.invoke({"origin": "Oslo", "destination": "Bergen"})
    emit(f"langchain: the chain planned {plan!r}; the tool says {km} km")
