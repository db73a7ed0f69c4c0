"""Take the viewer's screenshots for the docs: ``python -m tests.viewer.make_screenshots [DIRECTORY]``.

Records the adapters' offline demos, a plain-Python session with a failing tool and a session still
running, serves them on a free port and saves ``viewer-list.png``, ``viewer-session.png`` and
``viewer-details.png`` (default: docs/images) from headless Chromium.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import openprogram
from openprogram._runtime import process_owner
from openprogram._viewer import make_server
from openprogram.stores import Store
from selenium.webdriver.common.by import By

from .viewer_support import record_demo_sessions, start_chromium, wait_for


def _support_session(store: Store) -> str:
    @openprogram.tool
    def find_order(order_id: str) -> dict[str, Any]:
        return {"order_id": order_id, "total": 129.0, "status": "delivered"}

    @openprogram.tool
    def issue_refund(order_id: str, amount: float) -> str:
        raise PermissionError(f"refund of {amount} for {order_id} needs a supervisor")

    @openprogram.tool
    def handle_ticket(text: str) -> str:
        order = find_order("A-1042")
        try:
            return issue_refund(order["order_id"], order["total"])
        except PermissionError:
            return "escalated to a supervisor"

    with openprogram.session_context(store=store, agent_id="support") as handle:
        handle_ticket("My order A-1042 arrived broken, please refund it.")
    return handle.session_id


def _running_session(store: Store) -> None:
    started = time.time() - 42
    row = (
        "nightly-turn",
        "nightly-report",
        "nightly-turn",
        None,
        "turn",
        "main",
        None,
        "running",
        None,
        None,
        None,
        None,
        started,
        None,
        process_owner(),
    )
    graph = (
        "nightly-graph",
        "nightly-report",
        "nightly-turn",
        "nightly-turn",
        "graph",
        "report_pipeline",
        "langgraph",
        "running",
        None,
        None,
        None,
        None,
        started + 0.01,
        None,
        process_owner(),
    )
    store.write([("nightly-report", "scheduler", started, started)], [row, graph])


def _click_row(browser: Any, call_id: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f'.row[data-id="{call_id}"]').click()


def main(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["OPENPROGRAM_HOME"] = str(Path(scratch) / "home")
        store = openprogram.open_store(f"sqlite:///{Path(scratch) / 'sessions.db'}")
        sessions = record_demo_sessions(store)
        _support_session(store)
        _running_session(store)
        openprogram.flush()
        server = make_server(store, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        browser = start_chromium(1440, 640)
        try:
            browser.get(server.url)
            wait_for(lambda: "demo_agent" in browser.find_element(By.ID, "sessions").text, what="the list")
            time.sleep(0.3)
            browser.save_screenshot(str(directory / "viewer-list.png"))

            browser.set_window_size(1440, 900)
            calls = store.list_calls(sessions["crewai"])
            flow = next(c for c in calls if c.kind == "flow")
            lead_llm = [c for c in calls if c.kind == "llm"][2]
            browser.get(f"{server.url}sessions/{sessions['crewai']}")
            wait_for(lambda: browser.find_element(By.ID, "tree").get_attribute("data-ready"), what="the tree")
            _click_row(browser, flow.call_id)
            browser.find_element(By.ID, "zoom").click()  # the timeline scaled to the flow
            _click_row(browser, lead_llm.call_id)
            wait_for(lambda: browser.find_elements(By.ID, "usage"), what="the details")
            time.sleep(0.3)
            browser.save_screenshot(str(directory / "viewer-session.png"))

            llm = next(c for c in store.list_calls(sessions["langgraph"]) if c.kind == "llm")
            browser.set_window_size(1440, 1240)
            browser.get(f"{server.url}sessions/{sessions['langgraph']}#call={llm.call_id}")
            wait_for(lambda: browser.find_elements(By.ID, "usage"), what="the llm call's details")
            time.sleep(0.3)
            browser.find_element(By.ID, "details").screenshot(str(directory / "viewer-details.png"))
        finally:
            browser.quit()
            server.shutdown()
            server.server_close()
    for name in ("viewer-list.png", "viewer-session.png", "viewer-details.png"):
        print(directory / name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs" / "images")
