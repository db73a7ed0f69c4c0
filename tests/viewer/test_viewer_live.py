"""A running session's page updates by itself as calls are added and end."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openprogram
from openprogram._runtime import process_owner
from openprogram.stores import CallRow, Store
from selenium.webdriver.common.by import By

from .viewer_support import wait_for

SESSION = "live-session"


def _call(call_id: str, parent: str | None, kind: str, name: str, started: float, ended: float | None) -> CallRow:
    status = "running" if ended is None else "ok"
    return (
        call_id,
        SESSION,
        "turn-1",
        parent,
        kind,
        name,
        None,
        status,
        None,
        None,
        None,
        None,
        started,
        ended,
        process_owner(),
    )


def test_a_running_session_page_updates_live_until_the_session_ends(
    browser: Any, serve: Callable[[Store], str], tmp_path: Path
) -> None:
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'live.db'}")
    t0 = time.time()
    store.write(
        [(SESSION, "main", t0, t0)],
        [
            _call("turn-1", None, "turn", "main", t0, None),
            _call("step-1", "turn-1", "tool", "first_step", t0 + 0.1, None),
        ],
    )
    base = serve(store)
    browser.get(f"{base}sessions/{SESSION}")
    live = wait_for(lambda: browser.find_element(By.CLASS_NAME, "live"), what="the page")
    wait_for(live.is_displayed, what="the live marker")
    step = browser.find_element(By.CSS_SELECTOR, '.row[data-id="step-1"]')
    assert step.get_attribute("data-status") == "running" and step.text.count("…") == 1  # running for ...
    assert browser.find_element(By.CSS_SELECTOR, ".title-row .badge").text == "running"

    store.write(
        [],
        [
            _call("step-1", "turn-1", "tool", "first_step", t0 + 0.1, t0 + 0.5),
            _call("step-2", "turn-1", "tool", "second_step", t0 + 0.6, None),
        ],
    )
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, '.row[data-id="step-2"]'), what="the new call")
    assert browser.find_element(By.CSS_SELECTOR, '.row[data-id="step-1"]').get_attribute("data-status") == "ok"

    done = time.time()
    store.write(
        [(SESSION, "main", t0, done)],
        [
            _call("step-2", "turn-1", "tool", "second_step", t0 + 0.6, done),
            _call("turn-1", None, "turn", "main", t0, done),
        ],
    )
    wait_for(lambda: browser.find_element(By.CSS_SELECTOR, ".title-row .badge").text == "ok", what="the end")
    wait_for(lambda: not browser.find_element(By.CLASS_NAME, "live").is_displayed(), what="polling to stop")
    rows = {
        r.get_attribute("data-id"): r.get_attribute("data-status")
        for r in browser.find_elements(By.CSS_SELECTOR, ".row")
    }
    assert rows == {"turn-1": "ok", "step-1": "ok", "step-2": "ok"}


def test_the_list_marks_a_running_session(browser: Any, serve: Callable[[Store], str], tmp_path: Path) -> None:
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'live.db'}")
    t0 = time.time()
    store.write([(SESSION, "main", t0, t0)], [_call("turn-1", None, "turn", "main", t0, None)])
    browser.get(serve(store))
    row = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'tr[data-session="{SESSION}"]'), what="the row")
    wait_for(lambda: "running" in row.text, what="the running badge")
    assert browser.find_element(By.CSS_SELECTOR, '[data-filter="running"] .n').text == "1"
