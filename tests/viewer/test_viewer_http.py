"""The viewer over plain HTTP: 404 and 405, the Host check, security headers, the JSON API, and no writes."""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import sqlite3
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openprogram._viewer import json_bytes
from openprogram.stores import Store

from .viewer_support import HOSTILE_NAME, Recorded, children_by_parent


def _request(base: str, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
    address = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def _json(base: str, path: str) -> Any:
    status, _, body = _request(base, "GET", path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_an_unknown_session_is_a_404_page_that_says_so(demo_viewer: str) -> None:
    status, headers, body = _request(demo_viewer, "GET", "/sessions/no-such-session")
    assert status == 404
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    page = body.decode()
    assert "Session not found" in page and "There is no session &#x27;no-such-session&#x27;" in page


def test_a_404_page_escapes_the_id_it_names(demo_viewer: str) -> None:
    status, _, body = _request(demo_viewer, "GET", "/sessions/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert status == 404
    assert b"<script>" not in body and b"&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_the_api_answers_404_for_an_unknown_session_or_call(demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["langgraph"]
    for path in (
        "/api/sessions/nope",
        "/api/sessions/nope/children",
        "/api/sessions/nope/state",
        "/api/sessions/nope/conversation",
        f"/api/sessions/{session_id}/call?id=nope",
        f"/api/sessions/{session_id}/path?id=nope",
        f"/api/sessions/{session_id}/children?parent=nope",
        "/api/nothing",
        "/nothing",
    ):
        status, headers, _ = _request(demo_viewer, "GET", path)
        assert status == 404, path
        assert headers["Content-Type"] in ("application/json", "text/html; charset=utf-8")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND", "BREW"])
@pytest.mark.parametrize("path", ["/", "/api/sessions", "/sessions/anything"])
def test_every_method_but_get_and_head_is_refused_with_405(demo_viewer: str, method: str, path: str) -> None:
    status, headers, _ = _request(demo_viewer, method, path, {"Content-Length": "0"})
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"


def test_head_answers_like_get_without_a_body(demo_viewer: str, recorded: Recorded) -> None:
    path = f"/sessions/{recorded.sessions['crewai']}"
    got, head = _request(demo_viewer, "GET", path), _request(demo_viewer, "HEAD", path)
    assert (head[0], head[2]) == (200, b"")
    assert head[1]["Content-Length"] == got[1]["Content-Length"] == str(len(got[2]))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "192.168.1.20", "this machine's name"])
def test_a_host_header_naming_this_machine_is_served(demo_viewer: str, host: str) -> None:
    port = urllib.parse.urlsplit(demo_viewer).port
    host = socket.gethostname() if host == "this machine's name" else host
    assert _request(demo_viewer, "GET", "/api/sessions", {"Host": f"{host}:{port}"})[0] == 200


def test_a_host_header_naming_another_host_is_refused_against_dns_rebinding(demo_viewer: str) -> None:
    port = urllib.parse.urlsplit(demo_viewer).port
    for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1.nip.io:{port}"):
        status, _, body = _request(demo_viewer, "GET", "/api/sessions", {"Host": host})
        assert (status, body) == (403, b"403 unexpected Host header\n"), host


def test_pages_allow_only_the_viewers_own_script_and_send_no_cors_headers(demo_viewer: str) -> None:
    for path in ("/", "/api/sessions", "/static/app.js"):
        _, headers, _ = _request(demo_viewer, "GET", path, {"Origin": "https://attacker.example"})
        policy = headers["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "unsafe" not in policy and "frame-ancestors 'none'" in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert not [name for name in headers if name.lower().startswith("access-control-")]


def test_the_page_and_its_assets_are_served_from_the_package(demo_viewer: str) -> None:
    assets = {
        "/static/app.js": "text/javascript",
        "/static/app.css": "text/css",
        "/static/favicon.svg": "image/svg+xml",
    }
    for path, kind in assets.items():
        status, headers, body = _request(demo_viewer, "GET", path)
        assert status == 200 and headers["Content-Type"].startswith(kind) and body
    status, _, page = _request(demo_viewer, "GET", "/")
    assert status == 200 and b'<script src="/static/app.js" defer></script>' in page
    assert _request(demo_viewer, "GET", "/static/../_viewer.py")[0] == 404
    assert _request(demo_viewer, "GET", "/static/index.html")[0] == 404


def test_the_sessions_api_lists_each_session_with_its_root_status_and_tokens(
    demo_viewer: str, recorded: Recorded
) -> None:
    listed = {s["session_id"]: s for s in _json(demo_viewer, "/api/sessions")["sessions"]}
    for name, session_id in recorded.sessions.items():
        tree = children_by_parent(recorded.store, session_id)
        (turn,) = tree[None]
        entry = tree[turn.call_id][0]  # the root shown is the first call of the first turn
        summary = listed[session_id]["summary"]
        assert (summary["root"]["kind"], summary["root"]["name"]) == (entry.kind, entry.name), name
        info = recorded.store.get_session(session_id)
        assert info is not None
        assert (listed[session_id]["call_count"], listed[session_id]["tokens"]) == (info.call_count, info.tokens)
        assert summary["status"] == "ok" and summary["turns"] == 1, name
        assert summary["duration"] == pytest.approx(turn.duration)
    roots = {name: listed[sid]["summary"]["root"]["name"] for name, sid in recorded.sessions.items()}
    assert (roots["langgraph"], roots["crewai"], roots["plain"]) == ("demo_agent", "ReportFlow", HOSTILE_NAME)
    assert listed[recorded.sessions["plain"]]["summary"]["errors"] == 2


def test_the_call_api_gives_an_llm_calls_messages_reply_model_and_usage(demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["langgraph"]
    found = _json(demo_viewer, f"/api/sessions/{session_id}/search?q=demo-chat")
    assert found["count"] == 2
    first = found["matches"][0]
    call = _json(demo_viewer, f"/api/sessions/{session_id}/call?id={urllib.parse.quote(first['id'])}")
    assert call["node"]["llm"]["usage"] == {"input_tokens": 9, "output_tokens": 42, "total_tokens": 51}
    assert call["attributes"]["model"] == "demo-chat"
    assert [m["role"] for m in call["inputs"]["messages"]][-1] == "user"
    assert {t["name"] for t in call["output"]["tool_calls"]} == {"weather", "population", "note"}
    assert [step["id"] for step in call["path"]][-1] == first["id"]
    assert call["parent"]["kind"] == "node" and call["parent"]["name"] == "agent"


def test_children_come_a_page_at_a_time_and_nest_on_request(demo_viewer: str, recorded: Recorded) -> None:
    session_id = recorded.sessions["semantic_kernel"]
    tree = children_by_parent(recorded.store, session_id)
    (turn,) = tree[None]
    overview = _json(demo_viewer, f"/api/sessions/{session_id}")
    (root,) = overview["roots"]["nodes"]
    assert (root["id"], root["kind"], root["turn_number"]) == (turn.call_id, "turn", 1)
    assert root["descendants"] == len(recorded.store.list_calls(session_id)) - 1
    pages = [
        _json(demo_viewer, f"/api/sessions/{session_id}/children?parent={turn.call_id}&offset={i}&limit=1")
        for i in range(len(tree[turn.call_id]))
    ]
    assert {page["total"] for page in pages} == {len(tree[turn.call_id])}
    assert [page["nodes"][0]["name"] for page in pages] == [c.name for c in tree[turn.call_id]]
    nested = _json(demo_viewer, f"/api/sessions/{session_id}/children?parent={turn.call_id}&depth=3")
    for node in nested["nodes"]:
        below = tree.get(node["id"], [])
        assert [n["name"] for n in node.get("page", {"nodes": []})["nodes"]] == [c.name for c in below]
        for child in node.get("page", {"nodes": []})["nodes"]:
            assert ("page" in child) == bool(tree.get(child["id"]))


def test_browsing_every_endpoint_writes_nothing_to_the_store(
    recorded: Recorded, serve: Callable[[Store], str], tmp_path: Path
) -> None:
    import openprogram

    copy = tmp_path / "copy.db"
    with sqlite3.connect(recorded.store.url.removeprefix("sqlite:///")) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    store = openprogram.open_store(f"sqlite:///{copy}")
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    rows_before = {sid: list(store.iter_calls(sid)) for sid in recorded.sessions.values()}
    base = serve(store)
    for session_id in recorded.sessions.values():
        overview = _json(base, f"/api/sessions/{session_id}")
        for node in overview["roots"]["nodes"]:
            quoted = urllib.parse.quote(node["id"])
            _json(base, f"/api/sessions/{session_id}/children?parent={quoted}&depth=12")
            _json(base, f"/api/sessions/{session_id}/call?id={quoted}")
            _json(base, f"/api/sessions/{session_id}/path?id={quoted}")
        _json(base, f"/api/sessions/{session_id}/search?q=a")
        _json(base, f"/api/sessions/{session_id}/state")
        _json(base, f"/api/sessions/{session_id}/conversation")
        assert _request(base, "GET", f"/sessions/{session_id}")[0] == 200
    _json(base, "/api/sessions")
    _json(base, "/api/summaries?" + "&".join(f"id={s}" for s in recorded.sessions.values()))
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before
    wal = copy.with_name(copy.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert {sid: list(store.iter_calls(sid)) for sid in recorded.sessions.values()} == rows_before


def test_captured_nan_and_lone_surrogates_still_make_valid_json() -> None:
    text = json_bytes({"value": float("nan"), "big": [float("inf")], "odd": "\ud800"}).decode("ascii")
    assert json.loads(text) == {"value": "nan", "big": ["inf"], "odd": "\ud800"}
    assert "NaN" not in text and "Infinity" not in text
