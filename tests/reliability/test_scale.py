"""P4 (scaled down): the writer queue stays bounded; ``show`` summarises; ``show --json`` streams."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import openprogram
import pytest
from openprogram import _cli, _recording
from reliability_support import scaled

from bench.reliability_workloads import record_wide_session, step


def test_queue_stays_bounded_when_recording_outruns_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    high_water = 5_000
    monkeypatch.setattr(_recording.writer, "QUEUE_HIGH_WATER", high_water)
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'bounded.db'}")
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.append(len(_recording.queue) // _recording.record.RECORD_WIDTH)
            stop.wait(0.0005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    threads = 4
    per_thread = scaled(25_000)

    def agent() -> None:
        with openprogram.session_context(store=store):
            for n in range(per_thread):
                step(n)

    try:
        workers = [threading.Thread(target=agent) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        stop.set()
        sampler.join()
    assert openprogram.flush()
    # The check runs every 4,096 call ids, so each thread may overshoot by that much at most.
    assert max(seen) <= high_water + threads * 4096 + 1000, max(seen)
    total = sum(s.call_count for s in store.list_sessions())
    assert total == threads * (per_thread + 1)


@pytest.fixture(scope="module")
def wide_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    path = tmp_path_factory.mktemp("wide") / "wide.db"
    store = openprogram.open_store(f"sqlite:///{path}")
    session_id = record_wide_session(store, nodes=scaled(10_000), tools_per_node=9)
    assert openprogram.flush()
    return store.url, session_id


def test_show_of_a_100k_call_session_is_summarised(wide_session: tuple[str, str]) -> None:
    url, session_id = wide_session
    out = io.StringIO()
    assert _cli.main(["--store", url, "show", session_id], out=out) == 0
    lines = out.getvalue().splitlines()
    assert f"{scaled(10_000) * 10 + 2} calls" in lines[0]
    assert len(lines) < 30, "\n".join(lines)
    text = out.getvalue()
    assert f"... {scaled(10_000) - 3} more node agent [ok]" in text
    assert f"{(scaled(10_000) - 3) * 9} nested calls" in text
    assert "... 6 more tool step [ok]" in text


def test_show_caps_lines_when_siblings_do_not_repeat(tmp_path: Path) -> None:
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'varied.db'}")
    with openprogram.session_context(store=store) as h:
        for n in range(scaled(5_000)):
            with openprogram.call_scope("node", f"n{n % 2}"):  # alternating names never collapse
                pass
    assert openprogram.flush()
    out = io.StringIO()
    assert _cli.main(["--store", store.url, "show", h.session_id, "--max-lines", "500"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) <= 502
    assert "output stopped after 500 lines" in lines[-1] and "--json" in lines[-1]


def test_show_json_streams(wide_session: tuple[str, str]) -> None:
    """Each call is written as soon as it is read: never more than one call held between store and output."""
    url, session_id = wide_session
    store = openprogram.open_store(url)
    read = [0]
    lag: list[int] = []
    original = store._iter_call_rows

    def counting_rows(sid: str, captures: bool = True):  # type: ignore[no-untyped-def]
        for row in original(sid, captures):
            read[0] += captures  # the head's summary reads the tree's rows, without captures, first
            yield row

    class Sink(io.TextIOBase):
        def __init__(self) -> None:
            self.lines = 0
            self.head = io.StringIO()

        def write(self, text: str) -> int:
            if text.startswith(",\n") or text.startswith("\n{"):
                self.lines += 1
                lag.append(read[0] - self.lines)
            if self.head.tell() < 100_000:
                self.head.write(text)
            return len(text)

    sink = Sink()
    store._iter_call_rows = counting_rows  # type: ignore[method-assign,assignment]
    try:
        assert _cli.main(["--store", url, "show", session_id, "--json"], out=sink) == 0  # type: ignore[arg-type]
    finally:
        del store._iter_call_rows
    assert sink.lines == read[0] == scaled(10_000) * 10 + 2
    assert max(lag) == 0, "calls were buffered before being written"
    head = sink.head.getvalue()
    assert head.startswith('{"session": {"session_id": "' + session_id)
    first_call = json.loads(head.split("\n")[1].rstrip(","))
    assert first_call["kind"] == "turn"
