"""Offline LangChain pieces for the adapter tests: langchain-core's own fake chat models and real tools."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import FakeListChatModel, FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable
from langchain_core.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def negate(a: int) -> int:
    """Negate an integer (an async tool)."""
    return -a


@tool
def broken(x: int) -> int:
    """Always fails."""
    raise ValueError("broken tool")


def listed(*replies: str) -> FakeListChatModel:
    """A model answering each request with the next reply (streamed a character at a time)."""
    return FakeListChatModel(responses=list(replies))


def counted(text: str, input_tokens: int, output_tokens: int) -> GenericFakeChatModel:
    """A model that answers ``text`` once, with its usage."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
    return GenericFakeChatModel(messages=iter([AIMessage(text, usage_metadata=usage)]))


def calling(*calls: tuple[str, dict[str, Any]], then: str = "done") -> FakeMessagesListChatModel:
    """A model asking for the tool calls first, then answering ``then``."""
    asked = AIMessage("", tool_calls=[{"id": f"call-{i}", "name": n, "args": a} for i, (n, a) in enumerate(calls)])
    return FakeMessagesListChatModel(responses=[asked, AIMessage(then)])


def chain(model: Runnable[Any, Any]) -> Runnable[Any, str]:
    """An LCEL chain: a prompt, the model, a parser."""
    prompt = ChatPromptTemplate.from_messages([("system", "You answer briefly."), ("human", "{question}")])
    return prompt | model | StrOutputParser()
