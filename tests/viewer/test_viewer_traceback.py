"""A failed call's traceback in the details pane (issue 46: errors kept ``Type: message`` only), in a real
headless Chromium: under its error, monospace, folded and unfolded with a click, not repeated in its attributes."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By

from .viewer_support import Recorded, wait_for


def test_a_failed_call_shows_its_traceback_under_its_error(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["plain"]
    browser.get(f"{demo_viewer}sessions/{session_id}")
    wait_for(lambda: browser.find_element(By.ID, "tree").get_attribute("data-ready"), what="the tree")
    browser.find_element(By.ID, "next-error").click()  # the first parse_invoice, which raised
    stack = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#details .error-section #traceback"), what="it")
    failed = next(c for c in recorded.store.list_calls(session_id) if c.status == "error")
    kept = (failed.attributes or {})["traceback"]
    text = stack.find_element(By.CSS_SELECTOR, "pre.traceback-text")
    assert text.get_attribute("textContent") == kept  # as recorded, as text
    assert kept.startswith("Traceback (most recent call last):\n") and ", in parse_invoice\n" in kept
    assert '    raise ValueError(f"no total in {text!r}")\n' in kept
    assert kept.endswith("ValueError: no total in 'invoice 1'\n")
    # below the error line, in the pane's monospace, its lines kept as they are
    error = browser.find_element(By.CSS_SELECTOR, "#details .error-section pre.error-text")
    assert error.location["y"] < stack.location["y"]
    style = browser.execute_script(
        "const s = getComputedStyle(arguments[0]); return [s.fontFamily, s.whiteSpace];", text
    )
    assert "monospace" in style[0] and style[1] == "pre"
    # open at first; its summary folds it and unfolds it
    assert stack.get_attribute("open") is not None and text.is_displayed()
    summary = stack.find_element(By.TAG_NAME, "summary")
    assert summary.text == "Traceback"
    summary.click()
    wait_for(lambda: stack.get_attribute("open") is None and not text.is_displayed(), what="the traceback folded")
    summary.click()
    wait_for(text.is_displayed, what="the traceback unfolded")
    # the attributes section does not repeat it (this call has no other attribute: no section at all)
    assert browser.find_elements(By.CSS_SELECTOR, "#details .section.attributes") == []
    assert "Traceback (most recent" not in browser.find_element(By.CSS_SELECTOR, "#details").text.split("OUTPUT")[-1]


def test_a_call_that_did_not_fail_has_no_traceback(browser: Any, demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["plain"]
    checker = next(c for c in recorded.store.list_calls(session_id) if c.name == "check_invoices")
    browser.get(f"{demo_viewer}sessions/{session_id}#call={checker.call_id}")
    wait_for(lambda: browser.find_element(By.ID, "details-name").text == "check_invoices", what="the details")
    assert browser.find_elements(By.CSS_SELECTOR, "#details #traceback") == []
