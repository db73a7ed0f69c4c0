"""A 500-step agent's session opens in under 2 s: its page with its last model call showing only what was new."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openprogram.stores import Store
from selenium.webdriver.common.by import By

from .coder import LONG_ANSWER, LONG_QUESTION, LONG_STEPS, Conversations
from .viewer_support import timed

OPEN_WITHIN = 2.0  # seconds, from navigation to the last model call's details drawn, nothing read beforehand
#: Cold opens tried, each in a new `openprogram ui` process, before the best must be within the bound:
#: a shared 2-core machine can be busy for the length of one open.
OPEN_TRIES = 3
#: Seconds to unfold 999 messages, or to show the conversation (about 0.2 s idle, 0.65 s with both cores busy).
RESPOND_WITHIN = 1.5

_DRAWN = "document.querySelectorAll('#details .section.inputs .msg')"


def test_the_last_model_call_of_a_500_step_session_opens_in_under_two_seconds_on_what_was_new(
    conversations: Conversations, ui_process: Callable[[Store], str], browser: Any
) -> None:
    store, session_id = conversations.store, conversations.long
    llms = [c for c in store.list_calls(session_id) if c.kind == "llm"]
    last = llms[-1]
    prompt = last.inputs["messages"]
    assert (len(llms), len(prompt)) == (LONG_STEPS + 1, 2 * LONG_STEPS + 1)

    tries: list[float] = []
    while len(tries) < OPEN_TRIES and (not tries or min(tries) >= OPEN_WITHIN):
        page = (
            f"{ui_process(store)}sessions/{session_id}#call={last.call_id}"  # a new `openprogram ui`: nothing read yet
        )
        tries.append(
            timed(
                browser,
                lambda page=page: browser.get(page),
                f"document.querySelector('#details .fold') && {_DRAWN}.length === 2",
                "the last model call's details",
            )
        )
    print(f"\n500-step session: last model call drawn {min(tries):.2f}s after navigation")
    assert min(tries) < OPEN_WITHIN, f"opening took {', '.join(f'{t:.2f}s' for t in tries)}"

    # The work done: the two new messages and one row for the 999 the request repeats, not 1,001 messages.
    fold = browser.find_element(By.CSS_SELECTOR, "#details .fold")
    assert fold.text == f"{2 * LONG_STEPS - 1:,} earlier messages"
    assert len(browser.find_elements(By.CSS_SELECTOR, ".msg")) == 3  # the two new ones and the reply
    assert len(browser.find_elements(By.CSS_SELECTOR, ".row")) <= 500  # the tree too: a page of it, not 2,000 rows

    unfolded = timed(browser, fold.click, f"{_DRAWN}.length === {len(prompt)}", "the whole prompt")
    drawn = browser.execute_script(
        f"return [...{_DRAWN}].map(m => [Number(m.dataset.index), m.querySelector('.role span').textContent,"
        " m.querySelector('.content')?.textContent ?? null])"
    )
    assert [(index, role) for index, role, _ in drawn] == [(i, m["role"]) for i, m in enumerate(prompt)]
    assert [text for _, _, text in drawn] == [m["content"] or None for m in prompt]

    conversation = timed(
        browser,
        browser.find_element(By.ID, "view-conversation").click,
        "document.getElementById('conversation').dataset.ready",
        "the conversation",
    )
    bubbles = [b.text for b in browser.find_elements(By.CSS_SELECTOR, ".bubble .text")]
    assert bubbles == [LONG_QUESTION, LONG_ANSWER]
    print(f"unfold 999 messages {unfolded:.2f}s, conversation {conversation:.2f}s")
    assert max(unfolded, conversation) < RESPOND_WITHIN
