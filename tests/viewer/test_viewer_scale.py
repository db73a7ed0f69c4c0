"""A session of 100,000 calls opens in the browser in under 2 s and stays responsive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openprogram.stores import Store
from selenium.webdriver.common.by import By

from .viewer_support import BIG_CALLS, BIG_ERRORS, BIG_SESSION, NEEDLE, NEEDLE_NODE, timed

OPEN_WITHIN = 2.0  # seconds, from navigation to the tree drawn, with nothing read beforehand
#: Cold opens tried, each in a new `openprogram ui` process, before the best must be within the bound:
#: a shared 2-core machine can be busy for the length of one open.
OPEN_TRIES = 3
RESPOND_WITHIN = 1.0  # seconds for an expand, a details pane or a search that opens a far-away call


def _row(browser: Any, call_id: str) -> Any:
    rows = browser.find_elements(By.CSS_SELECTOR, f'.row[data-id="{call_id}"]')
    return rows[0] if rows and rows[0].is_displayed() else None


def _shown(call_id: str) -> str:
    return f"document.querySelector('.row[data-id=\"{call_id}\"]')?.offsetParent"


def _details_have(text: str) -> str:
    return f"document.getElementById('details').textContent.includes({text!r})"


def test_a_100k_call_session_opens_in_under_two_seconds_and_stays_responsive(
    big_store: Store, ui_process: Callable[[Store], str], browser: Any
) -> None:
    tries: list[float] = []
    while len(tries) < OPEN_TRIES and (not tries or min(tries) >= OPEN_WITHIN):
        page = f"{ui_process(big_store)}sessions/{BIG_SESSION}"  # a new `openprogram ui`: nothing read yet
        tries.append(
            timed(
                browser,
                lambda page=page: browser.get(page),
                f"document.getElementById('tree')?.dataset.ready && {_shown('node-0')}",
                "the tree of the 100k session",
            )
        )
    opened = min(tries)
    in_page = browser.execute_script("return Number(document.getElementById('tree').dataset.readyMs)")
    print(f"\n100k-call session: tree drawn {opened:.2f}s after navigation (page's own clock: {in_page / 1000:.2f}s)")
    assert opened < OPEN_WITHIN, f"opening took {', '.join(f'{t:.2f}s' for t in tries)}"
    assert browser.find_element(By.ID, "session-id").text == BIG_SESSION
    assert f"{BIG_CALLS:,}" in browser.find_element(By.CLASS_NAME, "stats").text
    assert "research_graph" in _row(browser, "graph-0").text
    # Only what is expanded is in the page: the graph's first page of children, not 100,000 rows.
    assert len(browser.find_elements(By.CSS_SELECTOR, ".row")) <= 300

    toggle = _row(browser, "node-3").find_element(By.CLASS_NAME, "toggle")
    expand = timed(browser, toggle.click, _shown("tool-3-96"), "the children of node-3")
    llm = _row(browser, "llm-3")
    details = timed(browser, llm.click, _details_have("question 3"), "llm-3's details")
    assert "gpt-fake" in browser.find_element(By.ID, "details").text
    assert browser.find_element(By.ID, "usage").text.split("\n") == [
        "12",
        "INPUT TOKENS",
        "8",
        "OUTPUT TOKENS",
        "20",
        "TOTAL TOKENS",
    ]

    search = browser.find_element(By.ID, "call-search")
    needle = f"tool-{NEEDLE_NODE}-50"  # node 900 of 1,000+: far beyond the graph's first page of children
    search.send_keys(NEEDLE)  # timed from the last key: the page waits for typing to pause, then searches
    found = timed(
        browser, lambda: None, f"document.getElementById('details-name')?.textContent === {NEEDLE!r}", "the needle"
    )
    assert "selected" in (_row(browser, needle).get_attribute("class") or "")
    assert browser.find_element(By.ID, "match-note").text == "1 of 1 match"

    next_error = browser.find_element(By.ID, "next-error")
    error = timed(browser, next_error.click, _details_have("TimeoutError"), "the first error")
    assert browser.find_element(By.ID, "error-note").text == f"error 1 of {BIG_ERRORS}"
    print(f"expand {expand:.2f}s, details {details:.2f}s, search to a far call {found:.2f}s, next error {error:.2f}s")
    assert max(expand, details, found, error) < RESPOND_WITHIN
    assert len(browser.find_elements(By.CSS_SELECTOR, ".row")) <= 1000
