"""A model call opens on what was new: the history it repeats from the previous request is one folded row."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

from openprogram.stores import CallRecord
from selenium.webdriver.common.by import By

from .coder import CHAT, Conversations
from .viewer_support import wait_for


def _llm_calls(conversations: Conversations, session_id: str) -> list[CallRecord]:
    return [c for c in conversations.store.list_calls(session_id) if c.kind == "llm"]


def _open_call(browser: Any, base: str, session_id: str, call: CallRecord) -> None:
    browser.get(f"{base}sessions/{session_id}#call={call.call_id}")
    wait_for(lambda: browser.find_element(By.ID, "details-name").text == call.name, what="the call's details")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".section.inputs .msg"), what="its messages")


def _messages(browser: Any) -> list[tuple[int, str, str]]:
    """(index in the prompt, role, text) of each message drawn in the inputs, in page order."""
    found = browser.execute_script(
        "return [...document.querySelectorAll('.section.inputs .msg')].map("
        "m => [Number(m.dataset.index), m.querySelector('.role span').textContent, m.textContent])"
    )
    return [(index, role, text) for index, role, text in found]


def _expected(call: CallRecord) -> list[tuple[int, str]]:
    return [(i, m["role"]) for i, m in enumerate(call.inputs["messages"])]


def test_a_model_call_opens_on_its_new_messages_and_the_shared_history_expands_in_order(
    browser: Any, talk_viewer: str, conversations: Conversations
) -> None:
    # Turn 2's first request repeats turn 1's last one (question, tool call, file) and adds two messages:
    # turn 1's answer and the new question.
    calls = _llm_calls(conversations, conversations.chat)
    second_turn = next(c for c in calls if c.inputs["messages"][-1]["content"] == CHAT[1][0])
    assert len(second_turn.inputs["messages"]) == 5
    _open_call(browser, talk_viewer, conversations.chat, second_turn)

    fold = browser.find_element(By.CSS_SELECTOR, ".section.inputs .fold")
    assert fold.text == "3 earlier messages" and fold.get_attribute("aria-expanded") == "false"
    assert browser.find_element(By.CSS_SELECTOR, ".section.inputs h3").text == "INPUTS · 2 NEW OF 5 MESSAGES"
    drawn = _messages(browser)
    assert [(i, role) for i, role, _ in drawn] == [(3, "assistant"), (4, "user")]
    assert CHAT[0][2] in drawn[0][2] and CHAT[1][0] in drawn[1][2]

    fold.click()
    wait_for(lambda: len(_messages(browser)) == 5, what="the earlier messages")
    assert [(i, role) for i, role, _ in _messages(browser)] == _expected(second_turn)
    assert 'read_file({"path":"src/retry.py"})' in [text for _, _, text in _messages(browser)][1]
    assert "class RetryPolicy:" in _messages(browser)[2][2]  # the file the tool read, in its place
    assert fold.text == "Hide 3 earlier messages" and fold.get_attribute("aria-expanded") == "true"
    fold.click()
    wait_for(
        lambda: (
            len([m for m in browser.find_elements(By.CSS_SELECTOR, ".section.inputs .msg") if m.is_displayed()]) == 2
        )
    )


def test_a_model_call_that_repeats_nothing_shows_every_message_and_no_fold(
    browser: Any, talk_viewer: str, conversations: Conversations
) -> None:
    first = _llm_calls(conversations, conversations.chat)[0]
    _open_call(browser, talk_viewer, conversations.chat, first)
    assert browser.find_elements(By.CSS_SELECTOR, ".section.inputs .fold") == []
    assert browser.find_element(By.CSS_SELECTOR, ".section.inputs").text == f"INPUTS\nUSER\n{CHAT[0][0]}"


def test_the_fold_links_to_the_request_it_repeats(browser: Any, talk_viewer: str, conversations: Conversations) -> None:
    calls = _llm_calls(conversations, conversations.chat)
    last = calls[-1]
    links = conversations.store.prompt_reader(conversations.chat).links()
    earlier = next(c for c in calls if c.call_id == links[last.call_id][0])
    _open_call(browser, talk_viewer, conversations.chat, last)
    assert (
        browser.find_element(By.CSS_SELECTOR, ".section.inputs .fold").text
        == f"{links[last.call_id][1]} earlier messages"
    )
    browser.find_element(By.CSS_SELECTOR, ".fold-row [data-goto]").click()
    wait_for(lambda: browser.current_url.endswith(f"#call={earlier.call_id}"), what="the earlier request")
    wait_for(
        lambda: (
            [i for i, _, _ in _messages(browser)]
            == list(range(links[earlier.call_id][1], len(earlier.inputs["messages"])))
        ),
        what="the earlier request's own new messages",
    )


def test_the_call_api_says_which_messages_are_shared_and_keeps_the_whole_prompt(
    talk_viewer: str, conversations: Conversations
) -> None:
    links = conversations.store.prompt_reader(conversations.chat).links()
    assert links  # the chat was stored by reference
    for call in conversations.store.list_calls(conversations.chat):
        quoted = urllib.parse.quote(call.call_id)
        with urllib.request.urlopen(f"{talk_viewer}api/sessions/{conversations.chat}/call?id={quoted}") as response:
            found = json.load(response)
        if call.kind != "llm":
            assert "prompt" not in found
            continue
        after, keep = links.get(call.call_id, (None, 0))
        assert found["prompt"] == {
            "after": after if keep else None,
            "shared": keep,
            "messages": len(call.inputs["messages"]),
        }
        assert found["inputs"] == call.inputs  # the whole prompt, as before
