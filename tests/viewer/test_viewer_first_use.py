"""What a first user met in the viewer (issue 46): cut names and headers, misleading notes, missing glyphs.

Each test drives the real headless Chromium over sessions the real adapters recorded.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram.stores import Store
from selenium.webdriver.common.by import By

from .viewer_support import FRAMEWORKS, Recorded, wait_for

STATIC = Path(openprogram.__file__).parent / "_viewer" / "static"
#: Unicode blocks whose symbols are drawn from an emoji font when the text font lacks them (as Debian's does):
#: miscellaneous technical (U+23F8 pause), miscellaneous symbols, dingbats (U+2715 cross), arrows-B and
#: symbols, pictographs and emoji proper; plus the variation selector asking for the emoji presentation.
EMOJI = re.compile("[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]")


@contextlib.contextmanager
def _viewport(browser: Any, width: int, height: int = 800) -> Iterator[None]:
    """The page laid out as in a browser window ``width`` CSS pixels wide."""
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        yield
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _open_session(browser: Any, base: str, session_id: str) -> None:
    browser.get(f"{base}sessions/{session_id}")
    wait_for(lambda: browser.find_element(By.ID, "tree").get_attribute("data-ready"), what="the tree")


def _select(browser: Any, call_id: str, name: str) -> str:
    browser.find_element(By.CSS_SELECTOR, f'.row[data-id="{call_id}"] .label').click()
    wait_for(lambda: browser.find_element(By.ID, "details-name").text == name, what=f"the details of {name}")
    return str(browser.find_element(By.ID, "details").text)


# For each shown row: the width the name has, the width it needs, and the widths of the notes beside it.
_ROW_WIDTHS = """return [...document.querySelectorAll('.row')].filter((row) => row.offsetParent).map((row) => {
  const width = (selector) => {
    const e = row.querySelector(selector);
    return e ? e.getBoundingClientRect().width : 0;
  };
  const label = row.querySelector('.label');
  return {name: label.textContent, has: label.clientWidth, needs: label.scrollWidth,
          framework: width('.sub'), tokens: width('.tok')};
})"""


def test_at_1024_px_a_call_name_wins_over_the_framework_and_token_notes(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    cut_short: list[dict[str, Any]] = []
    with _viewport(browser, 1024):
        for framework in FRAMEWORKS:
            _open_session(browser, demo_viewer, recorded.sessions[framework])
            rows = browser.execute_script(_ROW_WIDTHS)
            assert len(rows) > 5, framework
            for row in rows:
                if row["needs"] > row["has"] + 1 and (row["framework"] > 1 or row["tokens"] > 1 or row["has"] < 100):
                    cut_short.append({"session": framework, **row})
    assert cut_short == []


@pytest.mark.parametrize("width", [1024, 1400])
def test_the_tree_column_headers_are_never_cut(browser: Any, demo_viewer: str, recorded: Recorded, width: int) -> None:
    headers = """
      const shown = '.tree-head > div:not(.timeline-head), .timeline-head .head-label, #zoom';
      return [...document.querySelectorAll(shown)].map((e) => {
        const box = e.getBoundingClientRect(), head = e.closest('.tree-head').getBoundingClientRect();
        return {text: e.textContent, has: e.clientWidth, needs: e.scrollWidth, inside: box.right <= head.right + 0.5};
      })"""
    with _viewport(browser, width):
        _open_session(browser, demo_viewer, recorded.sessions["langgraph"])
        shown = browser.execute_script(headers)
    assert [h["text"] for h in shown] == ["Call", "Start", "Duration", "Timeline", "Zoom"]
    assert [h for h in shown if h["needs"] > h["has"] or not h["inside"]] == []


def test_a_call_that_raised_says_so_where_its_output_would_be(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    session_id = recorded.sessions["plain"]
    failed = next(c for c in recorded.store.list_calls(session_id) if c.status == "error")
    assert failed.output is None and failed.inputs is not None  # capture was on: it simply raised
    _open_session(browser, demo_viewer, session_id)
    _select(browser, failed.call_id, failed.name)
    output = browser.find_element(By.CSS_SELECTOR, "#details .section.output").text
    assert output == "OUTPUT\nNo output: the call raised an error instead of returning."


def test_status_icons_are_drawn_and_the_viewer_holds_no_emoji(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    for path in sorted(STATIC.iterdir()):
        found = EMOJI.findall(path.read_text(encoding="utf-8"))
        assert found == [], f"{path.name} needs an emoji font for {found}"
    session_id = recorded.sessions["langgraph"]
    interrupted = [c for c in recorded.store.list_calls(session_id) if c.status == "interrupted"]
    assert interrupted
    _open_session(browser, demo_viewer, session_id)
    for call in interrupted:
        icon = browser.find_element(By.CSS_SELECTOR, f'.row[data-id="{call.call_id}"] .status-icon')
        assert icon.text == ""  # no character for a font to miss
        drawn = icon.find_element(By.TAG_NAME, "svg")
        assert drawn.size["width"] > 0 and drawn.find_elements(By.TAG_NAME, "rect")
    # and every shown row, pill and badge is free of emoji too
    assert EMOJI.findall(browser.find_element(By.TAG_NAME, "body").text) == []


@pytest.fixture(scope="module")
def two_turns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, str]:
    """A session of exactly two turns: one more than the root the list names."""
    store = openprogram.open_store(f"sqlite:///{tmp_path_factory.mktemp('two-turns') / 'sessions.db'}")

    @openprogram.tool
    def step(n: int) -> int:
        return n + 1

    with openprogram.session_context(store=store, agent_id="two-turns") as first:
        step(1)
    with openprogram.session_context(first.session_id, store=store):
        step(2)
    openprogram.flush()
    return store, first.session_id


def test_counts_agree_with_their_nouns(
    browser: Any, two_turns: tuple[Store, str], serve: Callable[[Store], str]
) -> None:
    store, session_id = two_turns
    browser.get(serve(store))
    row = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'tr[data-session="{session_id}"]'))
    wait_for(lambda: "+1" in row.text, what="the count of the other turns")
    assert "+1 turn" in row.text and "+1 turns" not in row.text
    assert browser.find_element(By.CSS_SELECTOR, ".page-head .muted").text == "1 session"
    _open_session(browser, browser.current_url, session_id)
    search = browser.find_element(By.ID, "call-search")
    search.send_keys("step")
    wait_for(lambda: browser.find_element(By.ID, "match-note").text == "1 of 2 matches", what="two matches")


def test_a_graph_output_of_langchain_messages_is_drawn_as_the_chat(
    browser: Any, demo_viewer: str, recorded: Recorded
) -> None:
    session_id = recorded.sessions["langgraph"]
    calls = recorded.store.list_calls(session_id)
    graph = next(c for c in calls if c.kind == "graph" and c.output)
    held = graph.output["messages"][0]
    assert {"type", "content", "additional_kwargs"} <= set(
        held
    )  # what the store holds: LangChain's serialized messages
    _open_session(browser, demo_viewer, session_id)
    _select(browser, graph.call_id, graph.name)
    output = browser.find_element(By.CSS_SELECTOR, "#details .section.output")
    roles = [e.text for e in output.find_elements(By.CSS_SELECTOR, ".msg .role > span:first-child")]
    assert roles[0] == "USER" and "ASSISTANT" in roles and "TOOL" in roles, roles
    assert "Weather in Paris, population of Oslo?" in output.text
    calls_shown = [e.text for e in output.find_elements(By.CSS_SELECTOR, ".tool-call .fn")]
    assert "weather" in calls_shown and "population" in calls_shown
    assert "additional_kwargs" not in output.text and "response_metadata" not in output.text
    # a node's state update is drawn the same way
    node = next(
        c
        for c in calls
        if c.kind == "node" and c.output and any(m["type"] == "tool" for m in c.output.get("messages", []))
    )
    _select(browser, node.call_id, node.name)
    output = browser.find_element(By.CSS_SELECTOR, "#details .section.output")
    assert output.find_elements(By.CSS_SELECTOR, ".msg.role-tool") and "additional_kwargs" not in output.text
