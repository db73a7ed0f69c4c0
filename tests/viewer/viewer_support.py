"""Sessions for the viewer tests, and helpers to wait on a page in the browser."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import openprogram
from openprogram._runtime import process_owner
from openprogram.stores import CallRows, Store

FRAMEWORKS = ("langgraph", "crewai", "semantic_kernel", "pydantic_ai", "openai_agents")
#: the module each framework's demo imports, where it is not the framework's own name
FRAMEWORK_MODULES = {"openai_agents": "agents"}
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

#: A name and a capture that would run script if the page ever parsed them as HTML.
HOSTILE_NAME = '<img src=x onerror="window.__injected=1">'
HOSTILE_TEXT = "<script>window.__injected=2</script><b>bold?</b>"

BIG_SESSION = "big-100k"
BIG_CALLS = 100_000
BIG_ERRORS = 20  # every 5,000th tool fails
#: A call of the big session far from the first page of its parent's children.
NEEDLE = "needle_in_the_haystack"
NEEDLE_NODE = 900

T = TypeVar("T")


@dataclasses.dataclass
class Recorded:
    store: Store
    #: each of FRAMEWORKS / "plain" -> session id
    sessions: dict[str, str]


def record_demo_sessions(store: Store) -> dict[str, str]:
    """Run each adapter's offline demo (``run_demo(emit)``) in a session of its own; framework -> session id."""
    modules = {name: importlib.import_module(f"openprogram.integrations.{name}.demo") for name in FRAMEWORKS}
    for name, module in modules.items():
        getattr(module, "prepare", lambda: None)()  # CrewAI's switches its telemetry off before it is imported
        # imported before the turn starts: a turn's time is the agent's own
        importlib.import_module(FRAMEWORK_MODULES.get(name, name))
    enabled = openprogram.instrument(*FRAMEWORKS)
    sessions: dict[str, str] = {}
    try:
        for name, module in modules.items():
            with openprogram.session_context(store=store, agent_id=name) as handle:
                module.run_demo(lambda line: None)
            sessions[name] = handle.session_id
    finally:
        openprogram.uninstrument(*enabled)
    return sessions


def children_by_parent(store: Store, session_id: str) -> dict[str | None, list[openprogram.CallRecord]]:
    """The recorded calls of a session under each parent id (None: the roots), in start order."""
    found: dict[str | None, list[openprogram.CallRecord]] = {}
    for call in store.list_calls(session_id):
        found.setdefault(call.parent_id, []).append(call)
    return found


def write_plain_session(store: Store) -> str:
    """A plain-Python session, recorded for real: a tool with an HTML-like name, one that fails, one nested call."""

    @openprogram.tool(name=HOSTILE_NAME)
    def render(text: str) -> str:
        return text.upper()

    @openprogram.tool
    def parse_invoice(text: str) -> dict[str, Any]:
        raise ValueError(f"no total in {text!r}")

    @openprogram.tool
    def check_invoices(texts: list[str]) -> int:
        ok = 0
        for text in texts:
            try:
                parse_invoice(text)
                ok += 1
            except ValueError:
                pass
        return ok

    with openprogram.session_context(store=store, agent_id="plain") as handle:
        render(HOSTILE_TEXT)
        check_invoices(["invoice 1", "invoice 2"])
    return handle.session_id


def write_big_session(store: Store, session_id: str = BIG_SESSION, count: int = BIG_CALLS) -> None:
    """One turn, one graph, nodes of one model call and ~97 tools each; every 5,000th tool fails."""
    owner = process_owner()
    start = time.time() - 600
    rows = CallRows()

    def add(call_id: str, parent: str | None, kind: str, name: str, at: float, took: float, **extra: Any) -> None:
        rows.append(
            (
                call_id,
                session_id,
                "turn-0",
                parent,
                kind,
                name,
                "langgraph" if parent else None,
                extra.get("status", "ok"),
                extra.get("inputs"),
                extra.get("output"),
                extra.get("error"),
                extra.get("attributes"),
                start + at,
                start + at + took,
                owner,
            )
        )

    add("turn-0", None, "turn", "main", 0.0, 120.0)
    add("graph-0", "turn-0", "graph", "research_graph", 0.001, 119.9)
    usage = json.dumps(
        {
            "model": "gpt-fake",
            "provider": "offline",
            "usage": {"input_tokens": 12, "output_tokens": 8, "total_tokens": 20},
        }
    )
    node = 0
    while len(rows) < count:
        at = 0.01 + node * 0.1
        add(f"node-{node}", "graph-0", "node", f"step_{node % 9}", at, 0.099, inputs=json.dumps({"node": node}))
        add(
            f"llm-{node}",
            f"node-{node}",
            "llm",
            "gpt-fake",
            at + 0.001,
            0.02,
            attributes=usage,
            inputs=json.dumps({"messages": [{"role": "user", "content": f"question {node}"}]}),
            output=json.dumps({"role": "assistant", "content": f"answer {node}"}),
        )
        for j in range(97):
            if len(rows) >= count:
                break
            number = node * 97 + j
            failed = number % 5000 == 0
            name = NEEDLE if (node, j) == (NEEDLE_NODE, 50) else f"search_{j % 6}"
            add(
                f"tool-{node}-{j}",
                f"node-{node}",
                "tool",
                name,
                at + 0.022 + j * 0.0007,
                0.0005,
                status="error" if failed else "ok",
                error=f"TimeoutError: search {number} timed out" if failed else None,
                inputs=json.dumps({"query": f"q{number}"}),
                output=None if failed else json.dumps(f"result {number}"),
            )
        node += 1
    store.write([(session_id, "main", start, start + 120)], rows)


def start_chromium(width: int = 1440, height: int = 900) -> Any:
    """Debian's Chromium, headless, driven through Debian's chromedriver: nothing is downloaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for a driver online
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--lang=en-US"]
    arguments += [f"--window-size={width},{height}", "--force-device-scale-factor=1", "--hide-scrollbars"]
    for argument in arguments:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    return driver


def timed(browser: Any, action: Callable[[], object], done: str, what: str) -> float:
    """Seconds from ``action`` until the JavaScript expression ``done`` holds, checked with one light probe
    every 50 ms (WebDriver's own element commands run heavy scripts on the page and would slow it down)."""
    started = time.perf_counter()
    action()
    wait_for(lambda: browser.execute_script(f"return Boolean({done})"), timeout=30, what=what, interval=0.05)
    return time.perf_counter() - started


def wait_for(
    condition: Callable[[], T | None], timeout: float = 10.0, what: str = "condition", interval: float = 0.02
) -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = condition()
        except Exception:  # the element is not there yet, or was re-rendered
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
