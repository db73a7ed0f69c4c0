"""Each chat request keeps the whole prompt its service sent, however long the chat, stored once.

SK's real OpenAI connector answers offline (``fake_openai``): what each request's record reads
back is compared with the messages of the request body that went over the wire, translated to
the one message shape here. The adapter translates a chat history afresh at every request (it
does not remember messages by identity): SK's connectors change messages in place, as the last
test shows.
"""

from __future__ import annotations

import json
from typing import Any

import openprogram
import pytest
from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, calls_message, text_message
from pydantic import PrivateAttr
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import (
    AuthorRole,
    ChatHistory,
    ChatHistoryTruncationReducer,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
)
from semantic_kernel.functions import kernel_function

from tests.integrations.prompts import (
    MESSAGE_BOUND,
    assert_cut_inside,
    assert_stored_once,
    openai_shape,
    recorded_prompts,
    stored_references,
    stored_rows,
)
from tests.integrations.semantic_kernel.fake_openai import ScriptedOpenAI, text, tool_calls

pytestmark = pytest.mark.usefixtures("instrumented")


def file_text(index: int, size: int = 1_500) -> str:
    """A deterministic file of ``size`` characters, different for every index."""
    line = f"def function_{index}(value):  # file {index}: returns value scaled by {index}\n"
    return (line * (size // len(line) + 1))[:size]


class Files:
    """The plugin the model reads files with (file n of ``sizes[n]`` characters where given)."""

    def __init__(self, sizes: dict[int, int] | None = None) -> None:
        self.sizes = sizes or {}

    @kernel_function(description="read a file of the repository")
    def read(self, index: int) -> str:
        return file_text(index, self.sizes.get(index, 1_500))


def sent(openai: ScriptedOpenAI) -> list[list[dict[str, Any]]]:
    """What went over the wire, request by request, in the one shape."""
    return [[openai_shape(m) for m in body["messages"]] for body in openai.bodies]


def reading_turns(turns: int) -> list[dict[str, Any]]:
    """The replies of ``turns`` turns: each reads file n, then says what it read."""
    script: list[dict[str, Any]] = []
    for n in range(turns):
        script += [tool_calls((f"call_{n}", "files-read", {"index": n})), text(f"File {n} read.")]
    return script


async def chat(
    store: openprogram.Store, openai: ScriptedOpenAI, history: ChatHistory, turns: int, files: Files | None = None
) -> str:
    """``turns`` turns of a chat in ``history`` with auto function calling (two requests a turn); the session id."""
    kernel = Kernel()
    kernel.add_plugin(files or Files(), "files")
    service = openai.service()
    settings = OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    async with openprogram.session_context(store=store) as h:
        for n in range(turns):
            if isinstance(history, ChatHistoryTruncationReducer):
                await history.reduce()
            history.add_user_message(f"Read file {n}.")
            (answer,) = await service.get_chat_message_contents(history, settings, kernel=kernel)
            history.add_message(answer)
    return h.session_id


async def test_every_request_of_a_32_request_chat_is_recorded_as_sent(sqlite_store: openprogram.Store) -> None:
    openai = ScriptedOpenAI(*reading_turns(16))
    session_id = await chat(sqlite_store, openai, ChatHistory(system_message="Read what you are asked to."), 16)
    prompts = recorded_prompts(sqlite_store, session_id)
    assert len(prompts) == 32 and prompts == sent(openai)
    assert prompts[-1][-1] == {"role": "tool", "content": file_text(15), "tool_call_id": "call_15"}
    assert_stored_once(sqlite_store, session_id, prompts)


async def test_a_history_truncated_by_its_reducer_is_recorded_as_sent_and_stored_once(
    sqlite_store: openprogram.Store,
) -> None:
    openai = ScriptedOpenAI(*reading_turns(16))
    history = ChatHistoryTruncationReducer(target_count=6, threshold_count=2)
    session_id = await chat(sqlite_store, openai, history, 16)
    prompts = recorded_prompts(sqlite_store, session_id)
    assert len(prompts) == 32 and prompts == sent(openai)
    assert max(len(p) for p in prompts) < 16  # truncated: 16 turns hold 64 messages
    assert_stored_once(sqlite_store, session_id, prompts)
    # A turn's second request repeats its first and adds the tool call and its result.
    references = stored_references(sqlite_store, session_id)
    seconds = zip(references[1::2], prompts[1::2], strict=True)
    assert all(r is not None and r.get("keep") == len(p) - 2 for r, p in seconds)


async def test_a_2_mb_tool_result_is_cut_inside_its_message_and_the_messages_after_it_are_whole(
    sqlite_store: openprogram.Store,
) -> None:
    openai = ScriptedOpenAI(*reading_turns(6))
    session_id = await chat(sqlite_store, openai, ChatHistory(), 6, Files({2: 2_000_000}))
    huge = {"role": "tool", "content": file_text(2, 2_000_000), "tool_call_id": "call_2"}
    at = 10  # two turns of four messages, the question of the third and the call
    expected = sent(openai)
    assert expected[-1][at] == huge  # all of it went over the wire
    prompts = recorded_prompts(sqlite_store, session_id)
    for recorded, body in zip(prompts, expected, strict=True):
        assert len(recorded) == len(body)
        if len(body) > at:
            assert_cut_inside(recorded[at], huge)
        assert [m for i, m in enumerate(recorded) if i != at] == [m for i, m in enumerate(body) if i != at]
    assert all(len(row) <= MESSAGE_BOUND for row in stored_rows(sqlite_store, session_id))


# --- messages a connector changes in place ----------------------------------------------------------------


def translated(history: ChatHistory) -> list[dict[str, Any]]:
    """A chat history in the one shape, as connectors send it: a tool message per function result."""
    shaped: list[dict[str, Any]] = []
    for sent_message in history.messages:
        results = [item for item in sent_message.items if isinstance(item, FunctionResultContent)]
        if results:
            shaped += [{"role": "tool", "content": str(r.result), "tool_call_id": r.id} for r in results]
            continue
        calls = [
            {"id": c.id, "name": c.name, "arguments": json.loads(str(c.arguments))}
            for c in sent_message.items
            if isinstance(c, FunctionCallContent)
        ]
        one: dict[str, Any] = {"role": str(sent_message.role.value), "content": sent_message.content or None}
        if calls:
            one["tool_calls"] = calls
        shaped.append(one)
    return shaped


class MergingService(ScriptedChatService):
    """A service that, as SK's Google AI and Vertex AI connectors do, merges consecutive tool messages of the
    history it is sent into the first of them, in place; ``sent`` keeps each request as it was sent."""

    _sent: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)

    @property
    def sent(self) -> list[list[dict[str, Any]]]:
        return self._sent

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        index = 1
        while index < len(chat_history.messages):
            before, current = chat_history.messages[index - 1], chat_history.messages[index]
            if before.role == current.role == AuthorRole.TOOL:
                before.items.extend(current.items)
                chat_history.remove_message(current)
            else:
                index += 1
        self.sent.append(translated(chat_history))
        return await super()._inner_get_chat_message_contents(chat_history, settings)


async def test_tool_messages_a_connector_merges_in_place_are_recorded_as_each_request_sent_them(
    sqlite_store: openprogram.Store,
) -> None:
    pairs = [(("files", "read", {"index": 2 * n}), ("files", "read", {"index": 2 * n + 1})) for n in range(16)]
    script = [*(calls_message(*pair) for pair in pairs), text_message("All read.")]
    service = MergingService(script=script, ai_model_id="scripted-model")
    kernel = Kernel()
    kernel.add_plugin(Files(), "files")
    settings = OpenAIChatPromptExecutionSettings(
        function_choice_behavior=FunctionChoiceBehavior.Auto(maximum_auto_invoke_attempts=20)
    )
    history = ChatHistory()
    history.add_user_message("Read files 0 to 31.")
    async with openprogram.session_context(store=sqlite_store) as h:
        await service.get_chat_message_contents(history, settings, kernel=kernel)
    prompts = recorded_prompts(sqlite_store, h.session_id)
    assert len(prompts) == 17 and prompts == service.sent
    # The two results of each round, in one message since the round after: both are still sent.
    assert [m["tool_call_id"] for m in prompts[-1] if m["role"] == "tool"] == [
        call.id for message in history.messages for call in message.items if isinstance(call, FunctionCallContent)
    ]
    assert_stored_once(sqlite_store, h.session_id, prompts)
