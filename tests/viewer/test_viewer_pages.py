"""The viewer's pages in a real headless Chromium, over sessions recorded by the real adapters."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from .viewer_support import FRAMEWORKS, HOSTILE_NAME, HOSTILE_TEXT, Recorded, children_by_parent, wait_for


def _open_session(browser: Any, base: str, session_id: str, fragment: str = "") -> None:
    browser.get(f"{base}sessions/{session_id}{fragment}")
    wait_for(lambda: browser.find_element(By.ID, "tree").get_attribute("data-ready"), what="the tree")


def _labels(browser: Any) -> list[str]:
    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".row .label") if e.is_displayed()]


def _row(browser: Any, call_id: str) -> Any:
    return browser.find_element(By.CSS_SELECTOR, f'.row[data-id="{call_id}"]')


def _details(browser: Any, name: str) -> str:
    wait_for(lambda: browser.find_element(By.ID, "details-name").text == name, what=f"the details of {name}")
    return str(browser.find_element(By.ID, "details").text)


def test_the_list_shows_each_recorded_session_with_its_root_status_calls_and_tokens(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    browser.get(demo_viewer)
    for name, session_id in recorded.sessions.items():
        row = wait_for(lambda sid=session_id: browser.find_element(By.CSS_SELECTOR, f'tr[data-session="{sid}"]'))
        tree = children_by_parent(recorded.store, session_id)
        entry = tree[tree[None][0].call_id][0]
        info = recorded.store.get_session(session_id)
        assert info is not None
        wait_for(lambda r=row, e=entry: e.name in r.text, what=f"the root of the {name} session")
        cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        assert cells[0] == session_id
        assert cells[1] == f"{entry.kind.upper()}\n{entry.name}"
        assert cells[2] == name
        assert cells[3].startswith("ok")
        assert cells[4] == f"{info.call_count:,}" and cells[5] == (f"{info.tokens:,}" if info.tokens else "—")
    assert browser.find_element(By.CSS_SELECTOR, "tr[data-session] .pill").text == "2 errors"
    assert browser.title == "Sessions · openprogram"


def test_the_list_filters_by_text_and_by_status(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    browser.get(demo_viewer)

    def shown() -> set[str]:
        return {r.get_attribute("data-session") for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-session]")}

    wait_for(lambda: shown() >= set(recorded.sessions.values()), what="the sessions")
    browser.find_element(By.ID, "session-filter").send_keys("reportflow")
    wait_for(lambda: shown() == {recorded.sessions["crewai"]}, what="the text filter")
    browser.find_element(By.ID, "session-filter").clear()
    browser.find_element(By.ID, "session-filter").send_keys(" ")  # input event with an empty filter
    wait_for(lambda: shown() >= set(recorded.sessions.values()), what="the filter cleared")
    browser.find_element(By.CSS_SELECTOR, '[data-filter="errors"]').click()
    wait_for(lambda: shown() == {recorded.sessions["plain"]}, what="the sessions with errors")
    browser.find_element(By.CSS_SELECTOR, '[data-filter="running"]').click()
    wait_for(lambda: shown() == set(), what="no running session")
    assert browser.find_element(By.CSS_SELECTOR, ".empty").text == "No session matches the filter."


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_session_page_draws_the_whole_call_tree_of_a_real_session(
    browser: Any, demo_viewer: str, recorded: Recorded, framework: str
) -> None:
    session_id = recorded.sessions[framework]
    _open_session(browser, demo_viewer, session_id)
    assert browser.find_element(By.ID, "session-id").text == session_id
    assert browser.title == f"{session_id} · openprogram"
    records = recorded.store.list_calls(session_id)
    (turn,) = [c for c in records if c.kind == "turn"]
    # A small session is shown opened whole: every call's name is on the page as text, in tree order.
    tree = children_by_parent(recorded.store, session_id)
    in_order: list[str] = []

    def walk(parent: str) -> None:
        for call in tree.get(parent, []):
            in_order.append(call.name)
            walk(call.call_id)

    walk(turn.call_id)
    assert _labels(browser) == ["Turn 1", *in_order]
    assert "Turn 1" in browser.find_element(By.CLASS_NAME, "turns").text
    for call in records:
        row = _row(browser, call.call_id)
        assert row.get_attribute("data-status") == call.status and row.get_attribute("data-kind") == call.kind
    stats = browser.find_element(By.CLASS_NAME, "stats").text
    assert f"CALLS\n{len(records):,}" in stats


def test_a_node_expands_and_collapses(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["crewai"]
    _open_session(browser, demo_viewer, session_id)
    tree = children_by_parent(recorded.store, session_id)
    crew = next(c for calls in tree.values() for c in calls if c.kind == "crew")
    tasks = [c.name for c in tree[crew.call_id]]
    assert set(tasks) <= set(_labels(browser))
    _row(browser, crew.call_id).find_element(By.CLASS_NAME, "toggle").click()
    wait_for(lambda: not set(tasks) & set(_labels(browser)), what="the crew collapsed")
    assert _row(browser, crew.call_id).get_attribute("aria-expanded") == "false"
    _row(browser, crew.call_id).find_element(By.CLASS_NAME, "toggle").click()
    wait_for(lambda: set(tasks) <= set(_labels(browser)), what="the crew expanded")
    browser.find_element(By.XPATH, "//button[text()='Collapse all']").click()
    wait_for(lambda: _labels(browser) == ["Turn 1"], what="everything collapsed")
    _row(browser, tree[None][0].call_id).find_element(By.CLASS_NAME, "toggle").click()
    wait_for(lambda: _labels(browser) == ["Turn 1", *[c.name for c in tree[tree[None][0].call_id]]], what="one level")


def test_the_details_of_an_llm_call_show_model_tokens_messages_and_reply(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    session_id = recorded.sessions["langgraph"]
    _open_session(browser, demo_viewer, session_id)
    llm = next(c for c in recorded.store.list_calls(session_id) if c.kind == "llm")
    _row(browser, llm.call_id).click()
    text = _details(browser, "demo-chat")
    assert "Model\ndemo-chat" in text and "Provider\noffline" in text
    assert browser.find_element(By.ID, "usage").text.split("\n") == [
        "9",
        "INPUT TOKENS",
        "42",
        "OUTPUT TOKENS",
        "51",
        "TOTAL TOKENS",
    ]
    question = llm.inputs["messages"][-1]
    assert browser.find_element(By.CSS_SELECTOR, ".section.inputs").text == f"INPUTS\nUSER\n{question['content']}"
    output = browser.find_element(By.CSS_SELECTOR, ".section.output").text
    assert output.startswith('OUTPUT\nASSISTANT\nfinish: tool_calls\nweather({"city":"Paris"}) call-1\n')
    assert [e.text.split("(")[0] for e in browser.find_elements(By.CSS_SELECTOR, ".section.output .tool-call .fn")] == [
        "weather",
        "population",
        "note",
    ]
    assert "ATTRIBUTES" in browser.find_element(By.CSS_SELECTOR, ".section.attributes").text
    assert browser.current_url.endswith(f"#call={llm.call_id}")
    # The parent link opens the node that asked.
    browser.find_element(By.CSS_SELECTOR, "#details [data-goto]").click()
    assert "Kind\nnode" in _details(browser, "agent")


def test_the_details_of_a_tool_show_its_inputs_and_output(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["crewai"]
    _open_session(browser, demo_viewer, session_id)
    lookup = next(c for c in recorded.store.list_calls(session_id) if c.name == "lookup")
    _row(browser, lookup.call_id).click()
    text = _details(browser, "lookup")
    assert "Kind\ntool" in text and "Framework\ncrewai" in text
    assert "crews" in browser.find_element(By.CSS_SELECTOR, ".section.inputs pre").text
    assert str(lookup.output) in browser.find_element(By.CSS_SELECTOR, ".section.output").text


def test_search_within_a_session_highlights_and_opens_each_match(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    session_id = recorded.sessions["crewai"]
    _open_session(browser, demo_viewer, session_id)
    lookups = [c.call_id for c in recorded.store.list_calls(session_id) if c.name == "lookup"]
    assert len(lookups) == 2
    browser.find_element(By.ID, "call-search").send_keys("LOOKUP")
    wait_for(lambda: browser.find_element(By.ID, "match-note").text == "1 of 2 matches", what="the matches")
    assert {r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, ".row.match")} == set(lookups)
    wait_for(lambda: "selected" in (_row(browser, lookups[0]).get_attribute("class") or ""), what="the first match")
    browser.find_element(By.ID, "call-search").send_keys(Keys.ENTER)
    wait_for(lambda: browser.find_element(By.ID, "match-note").text == "2 of 2 matches", what="the next match")
    wait_for(lambda: "selected" in (_row(browser, lookups[1]).get_attribute("class") or ""), what="the second match")
    browser.find_element(By.ID, "call-search").clear()
    browser.find_element(By.ID, "call-search").send_keys("no such call anywhere")
    wait_for(lambda: browser.find_element(By.ID, "match-note").text == "no calls match", what="no match")
    assert browser.find_elements(By.CSS_SELECTOR, ".row.match") == []


def test_error_calls_are_marked_and_next_error_opens_each(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["plain"]
    _open_session(browser, demo_viewer, session_id)
    records = recorded.store.list_calls(session_id)
    failed = [c for c in records if c.status == "error"]
    assert [c.name for c in failed] == ["parse_invoice", "parse_invoice"]
    for call in failed:
        assert "error" in (_row(browser, call.call_id).get_attribute("class") or "").split()
    checker = next(c for c in records if c.name == "check_invoices")
    pill = _row(browser, checker.call_id).find_element(By.CLASS_NAME, "pill")
    assert (
        pill.text == "2" and pill.get_attribute("title") == "2 errors below" and pill.find_elements(By.TAG_NAME, "svg")
    )
    assert browser.find_element(By.ID, "error-note").text == "2 errors"
    browser.find_element(By.ID, "next-error").click()
    text = _details(browser, "parse_invoice")
    assert "ERROR\nValueError: no total in 'invoice 1'" in text
    assert browser.find_element(By.ID, "error-note").text == "error 1 of 2"
    browser.find_element(By.TAG_NAME, "body").send_keys("e")  # the keyboard shortcut
    wait_for(lambda: "invoice 2" in browser.find_element(By.ID, "details").text, what="the second error")
    assert browser.find_element(By.ID, "error-note").text == "error 2 of 2"


def test_names_and_captures_that_look_like_html_are_shown_as_text_and_never_run(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    session_id = recorded.sessions["plain"]
    browser.get(demo_viewer)
    wait_for(lambda: HOSTILE_NAME in browser.find_element(By.ID, "sessions").text, what="the name in the list")
    _open_session(browser, demo_viewer, session_id)
    assert HOSTILE_NAME in _labels(browser)
    render = next(c for c in recorded.store.list_calls(session_id) if c.name == HOSTILE_NAME)
    _row(browser, render.call_id).click()
    _details(browser, HOSTILE_NAME)
    assert HOSTILE_TEXT in browser.find_element(By.CSS_SELECTOR, ".section.inputs").text
    assert HOSTILE_TEXT.upper() in browser.find_element(By.CSS_SELECTOR, ".section.output").text
    assert browser.execute_script("return window.__injected === undefined") is True
    assert browser.find_elements(By.CSS_SELECTOR, "#app img, #app script, #app b") == []


def test_a_link_to_a_call_opens_the_session_at_that_call(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["semantic_kernel"]
    last_llm = [c for c in recorded.store.list_calls(session_id) if c.kind == "llm"][-1]
    _open_session(browser, demo_viewer, session_id, f"#call={last_llm.call_id}")
    wait_for(lambda: "selected" in (_row(browser, last_llm.call_id).get_attribute("class") or ""), what="the call")
    assert "Model\n" in _details(browser, last_llm.name)


def test_the_keyboard_moves_through_the_tree(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["langgraph"]
    _open_session(browser, demo_viewer, session_id)
    tree = children_by_parent(recorded.store, session_id)
    (turn,) = tree[None]
    _row(browser, turn.call_id).click()
    browser.find_element(By.ID, "tree").send_keys(Keys.ARROW_DOWN)
    first = tree[turn.call_id][0]
    _details(browser, first.name)
    browser.find_element(By.ID, "tree").send_keys(Keys.ARROW_LEFT)  # an open call closes
    wait_for(lambda: _row(browser, first.call_id).get_attribute("aria-expanded") == "false", what="collapse")
    browser.find_element(By.ID, "tree").send_keys(Keys.ARROW_LEFT)  # a closed one goes to its parent
    wait_for(lambda: "selected" in (_row(browser, turn.call_id).get_attribute("class") or ""), what="the parent")


def test_an_unknown_session_in_the_browser_is_a_page_that_says_not_found(browser: Any, demo_viewer: str) -> None:
    browser.get(f"{demo_viewer}sessions/not-recorded-here")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Session not found"
    assert "There is no session 'not-recorded-here'" in browser.find_element(By.TAG_NAME, "main").text
