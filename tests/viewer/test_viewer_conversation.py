"""The conversation view of a session page: each turn's input and answer, the call tree one click away."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from openprogram._runtime import process_owner
from openprogram.stores import CallRows, Store
from selenium.webdriver.common.by import By

from .coder import CHAT, Conversations
from .viewer_support import FRAMEWORKS, HOSTILE_TEXT, Recorded, wait_for

#: What each framework's offline demo asks and answers, run by run (CrewAI's input is its task's prompt).
DEMO_EXCHANGES = {
    "langgraph": [("Weather in Paris, population of Oslo?", "Paris is sunny (21C); Oslo has 710,000 people.")],
    "crewai": [("Current Task: note what crews are", "report: sessions record crews")],
    "semantic_kernel": [
        ("Weather in Lisbon?", "Lisbon: sunny, 19 C."),
        ("Plan a day trip to Oslo.", "Oslo: light snow; 3 trains today; Oslo Central has rooms."),
        ("A weekend in Lisbon.", "Take a morning train, stay at Lisbon Central, enjoy the sun."),
    ],
    "pydantic_ai": [
        ("what is a session?", "sessions keep every call; context follows tasks"),
        ("summarize", "one tree per run, streamed"),
    ],
    "openai_agents": [
        ("I was charged twice for order A-17.", "You were charged twice: a full refund is on its way."),
        ("Charged twice for A-17?", "You were charged twice: a full refund is on its way."),
    ],
}


def _open_conversation(browser: Any, base: str, session_id: str) -> None:
    browser.get(f"{base}sessions/{session_id}")
    wait_for(lambda: browser.find_element(By.ID, "tree").get_attribute("data-ready"), what="the tree")
    browser.find_element(By.ID, "view-conversation").click()
    wait_for(lambda: browser.find_element(By.ID, "conversation").get_attribute("data-ready"), what="the conversation")


def _turns(browser: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each turn's name and its exchanges' (input, answer) texts, as the page shows them."""
    return [
        (
            section.find_element(By.CLASS_NAME, "turn-name").text,
            [
                (
                    exchange.find_element(By.CSS_SELECTOR, ".bubble.asked .text").text,
                    exchange.find_element(By.CSS_SELECTOR, ".bubble.answer .text").text,
                )
                for exchange in section.find_elements(By.CLASS_NAME, "exchange")
            ],
        )
        for section in browser.find_elements(By.CLASS_NAME, "talk-turn")
    ]


def test_a_multi_turn_chat_shows_each_turns_question_and_answer(
    browser: Any, talk_viewer: str, conversations: Conversations
) -> None:
    _open_conversation(browser, talk_viewer, conversations.chat)
    # Later turns' prompts repeat the earlier turns: each turn shows only the question it was asked.
    assert _turns(browser) == [(f"Turn {n}", [(question, answer)]) for n, (question, _, answer) in enumerate(CHAT, 1)]
    assert browser.find_element(By.ID, "conversation").is_displayed()
    assert not browser.find_element(By.ID, "tree").is_displayed()
    assert browser.current_url.endswith("#view=conversation")
    first = browser.find_element(By.CSS_SELECTOR, ".talk-turn .exchange-foot").text
    assert first.startswith("2 model calls · ")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_frameworks_session_reads_as_a_conversation(
    browser: Any, demo_viewer: str, recorded: Recorded, framework: str
) -> None:
    _open_conversation(browser, demo_viewer, recorded.sessions[framework])
    ((turn, exchanges),) = _turns(browser)
    assert turn == "Turn 1"
    assert len(exchanges) == len(DEMO_EXCHANGES[framework])
    for (asked, answered), (question, answer) in zip(exchanges, DEMO_EXCHANGES[framework], strict=True):
        assert question in asked and answered.strip() == answer


def test_a_turn_without_model_calls_shows_what_its_calls_took_and_returned_as_text(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    _open_conversation(browser, demo_viewer, recorded.sessions["plain"])
    asked = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".bubble.asked .text, .bubble.asked pre")]
    answered = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".bubble.answer .text, .bubble.answer pre")]
    assert asked[0] == HOSTILE_TEXT and answered[0] == HOSTILE_TEXT.upper()
    assert json.loads(asked[1]) == {"texts": ["invoice 1", "invoice 2"]} and answered[1] == "0"
    assert browser.execute_script("return window.__injected === undefined") is True


def test_a_bubble_opens_its_call_and_show_in_tree_goes_back_to_the_tree(
    browser: Any, talk_viewer: str, conversations: Conversations
) -> None:
    _open_conversation(browser, talk_viewer, conversations.chat)
    calls = conversations.store.list_calls(conversations.chat)
    turns = [c for c in calls if c.kind == "turn"]
    last_reply = [c for c in calls if c.kind == "llm"][-1]
    answer = browser.find_elements(By.CSS_SELECTOR, ".bubble.answer")[-1]
    assert answer.get_attribute("data-call") == last_reply.call_id
    answer.click()
    wait_for(lambda: CHAT[2][2] in browser.find_element(By.CSS_SELECTOR, ".section.output").text, what="the reply")
    assert "selected" in (answer.get_attribute("class") or "")
    assert browser.current_url.endswith(f"#call={last_reply.call_id}&view=conversation")

    browser.find_element(By.ID, "view-tree").click()  # the tree opens on the call the bubble came from
    reply_row = f'.row[data-id="{last_reply.call_id}"]'
    wait_for(lambda: "selected" in (browser.find_element(By.CSS_SELECTOR, reply_row).get_attribute("class") or ""))
    assert browser.find_element(By.CSS_SELECTOR, reply_row).is_displayed()
    assert browser.current_url.endswith(f"#call={last_reply.call_id}")

    browser.find_element(By.ID, "view-conversation").click()
    browser.find_elements(By.CSS_SELECTOR, ".talk-head [data-tree]")[1].click()
    row = f'.row[data-id="{turns[1].call_id}"]'
    wait_for(lambda: "selected" in (browser.find_element(By.CSS_SELECTOR, row).get_attribute("class") or ""))
    assert (
        browser.find_element(By.ID, "tree").is_displayed()
        and not browser.find_element(By.ID, "conversation").is_displayed()
    )
    assert browser.find_element(By.ID, "view-tree").get_attribute("aria-pressed") == "true"
    assert browser.current_url.endswith(f"#call={turns[1].call_id}")


def test_a_link_can_open_the_conversation(browser: Any, talk_viewer: str, conversations: Conversations) -> None:
    browser.get(f"{talk_viewer}sessions/{conversations.chat}#view=conversation")
    wait_for(lambda: browser.find_element(By.ID, "conversation").get_attribute("data-ready"), what="the conversation")
    assert len(browser.find_elements(By.CLASS_NAME, "talk-turn")) == len(CHAT)
    browser.find_element(By.ID, "view-tree").click()
    assert browser.find_element(By.ID, "tree").is_displayed()


def _many_turns(store: Store, session_id: str, turns: int) -> None:
    """A session of ``turns`` turns, each one model call with its messages whole (as older versions stored them)."""
    owner, start, rows = process_owner(), time.time() - 3600, CallRows()
    for n in range(turns):
        at = start + n * 10
        messages = [{"role": "user", "content": "question 0"}]
        for m in range(1, n + 1):
            messages += [
                {"role": "assistant", "content": f"answer {m - 1}"},
                {"role": "user", "content": f"question {m}"},
            ]
        rows.append(
            (
                f"turn-{n}",
                session_id,
                f"turn-{n}",
                None,
                "turn",
                "main",
                None,
                "ok",
                None,
                None,
                None,
                None,
                at,
                at + 2,
                owner,
            )
        )
        rows.append(
            (
                f"llm-{n}",
                session_id,
                f"turn-{n}",
                f"turn-{n}",
                "llm",
                "gpt-fake",
                "plain",
                "ok",
                json.dumps({"messages": messages}),
                json.dumps({"role": "assistant", "content": f"answer {n}"}),
                None,
                json.dumps({"model": "gpt-fake"}),
                at + 0.5,
                at + 1.5,
                owner,
            )
        )
    store.write([(session_id, "main", start, start + turns * 10)], rows)


def test_a_long_conversation_opens_on_its_newest_turns_and_loads_earlier_ones_on_request(
    browser: Any, serve: Callable[[Store], str], tmp_path: Any
) -> None:
    import openprogram

    store = openprogram.open_store(f"sqlite:///{tmp_path / 'many.db'}")
    _many_turns(store, "many-turns", 25)
    base = serve(store)
    _open_conversation(browser, base, "many-turns")
    assert [name for name, _ in _turns(browser)] == [f"Turn {n}" for n in range(6, 26)]
    assert _turns(browser)[-1][1] == [("question 24", "answer 24")]  # only the question that ends the prompt
    earlier = browser.find_element(By.ID, "earlier-turns")
    assert earlier.text == "Show 5 of 5 earlier turns"
    earlier.click()
    wait_for(lambda: len(_turns(browser)) == 25, what="the earlier turns")
    assert [exchanges for _, exchanges in _turns(browser)] == [[(f"question {n}", f"answer {n}")] for n in range(25)]
    assert not browser.find_element(By.ID, "earlier-turns").is_displayed()


def test_the_conversation_api_pages_turns_newest_first(talk_viewer: str, conversations: Conversations) -> None:
    def page(query: str) -> Any:
        with urllib.request.urlopen(f"{talk_viewer}api/sessions/{conversations.chat}/conversation{query}") as response:
            return json.load(response)

    newest = page("")
    assert (newest["total"], newest["offset"], len(newest["turns"])) == (3, 0, 3)
    last = page("?limit=1")
    assert (last["offset"], [t["node"]["turn_number"] for t in last["turns"]]) == (2, [3])
    (exchange,) = last["turns"][0]["exchanges"]
    assert exchange["input"]["parts"] == [{"text": CHAT[2][0], "json": False, "cut": False}]
    assert exchange["answer"]["parts"] == [{"text": CHAT[2][2], "json": False, "cut": False}]
    assert (exchange["run"]["kind"], exchange["model_calls"]) == ("graph", 2)
    assert [t["node"]["turn_number"] for t in page("?offset=0&limit=2")["turns"]] == [1, 2]
