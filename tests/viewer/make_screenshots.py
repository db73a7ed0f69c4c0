"""Take the viewer's screenshots for the docs: ``python -m tests.viewer.make_screenshots [DIR] [--only NAME ...]``.

Records the adapters' offline demos, a plain-Python session with a failing tool, a session still
running and the coding agent's three-turn chat (``coder``), serves them on a free port and saves
``viewer-list.png``, ``viewer-session.png``, ``viewer-details.png``, ``viewer-conversation.png`` and
``viewer-model-call-fold.png`` (default: docs/images) from headless Chromium.
"""

from __future__ import annotations

import argparse
import os
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

from .coder import record_chat
from .viewer_support import record_demo_sessions, start_chromium, wait_for

DEMO_SHOTS = ("viewer-list.png", "viewer-session.png", "viewer-details.png")
CHAT_SHOTS = ("viewer-conversation.png", "viewer-model-call-fold.png")


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


def _demo_shots(browser: Any, url: str, store: Store, sessions: dict[str, str], directory: Path) -> None:
    browser.set_window_size(1440, 640)
    browser.get(url)
    wait_for(lambda: "demo_agent" in browser.find_element(By.ID, "sessions").text, what="the list")
    time.sleep(0.3)
    browser.save_screenshot(str(directory / "viewer-list.png"))

    browser.set_window_size(1440, 900)
    calls = store.list_calls(sessions["crewai"])
    flow = next(c for c in calls if c.kind == "flow")
    lead_llm = [c for c in calls if c.kind == "llm"][2]
    browser.get(f"{url}sessions/{sessions['crewai']}")
    wait_for(lambda: browser.find_element(By.ID, "tree").get_attribute("data-ready"), what="the tree")
    _click_row(browser, flow.call_id)
    browser.find_element(By.ID, "zoom").click()  # the timeline scaled to the flow
    _click_row(browser, lead_llm.call_id)
    wait_for(lambda: browser.find_elements(By.ID, "usage"), what="the details")
    time.sleep(0.3)
    browser.save_screenshot(str(directory / "viewer-session.png"))

    llm = next(c for c in store.list_calls(sessions["langgraph"]) if c.kind == "llm")
    browser.set_window_size(1440, 1240)
    browser.get(f"{url}sessions/{sessions['langgraph']}#call={llm.call_id}")
    wait_for(lambda: browser.find_elements(By.ID, "usage"), what="the llm call's details")
    time.sleep(0.3)
    browser.find_element(By.ID, "details").screenshot(str(directory / "viewer-details.png"))


def _chat_shots(browser: Any, url: str, store: Store, chat: str, directory: Path) -> None:
    """The chat as a conversation, its last answer opened; then that model call in the tree, its history folded."""
    browser.set_window_size(1440, 1000)
    browser.get(f"{url}sessions/{chat}#view=conversation")
    wait_for(lambda: browser.find_element(By.ID, "conversation").get_attribute("data-ready"), what="the chat")
    browser.find_elements(By.CSS_SELECTOR, ".bubble.answer")[-1].click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#details .fold"), what="the answer's details")
    time.sleep(0.3)
    browser.save_screenshot(str(directory / "viewer-conversation.png"))

    last = [c for c in store.list_calls(chat) if c.kind == "llm"][-1]
    browser.get("about:blank")  # a fresh page: the tree as it opens
    browser.get(f"{url}sessions/{chat}#call={last.call_id}")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#details .fold"), what="the folded history")
    time.sleep(0.3)
    browser.save_screenshot(str(directory / "viewer-model-call-fold.png"))


def main(directory: Path, only: tuple[str, ...] = DEMO_SHOTS + CHAT_SHOTS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["OPENPROGRAM_HOME"] = str(Path(scratch) / "home")
        store = openprogram.open_store(f"sqlite:///{Path(scratch) / 'sessions.db'}")
        demos = set(only) & set(DEMO_SHOTS)
        sessions = record_demo_sessions(store) if demos else {}
        if demos:
            _support_session(store)
            _running_session(store)
        chat = None
        if set(only) & set(CHAT_SHOTS):
            enabled = openprogram.instrument("langgraph")
            try:
                chat = record_chat(store)
            finally:
                openprogram.uninstrument(*enabled)
        openprogram.flush()
        server = make_server(store, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        browser = start_chromium(1440, 640)
        try:
            if demos:
                _demo_shots(browser, server.url, store, sessions, directory)
            if chat is not None:
                _chat_shots(browser, server.url, store, chat, directory)
        finally:
            browser.quit()
            server.shutdown()
            server.server_close()
    for name in only:
        print(directory / name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "directory", nargs="?", type=Path, default=Path(__file__).resolve().parents[2] / "docs" / "images"
    )
    parser.add_argument("--only", nargs="+", choices=DEMO_SHOTS + CHAT_SHOTS, default=DEMO_SHOTS + CHAT_SHOTS)
    arguments = parser.parse_args()
    main(arguments.directory, tuple(arguments.only))
