"""The writer encodes a batch of call records column by column: the rows are what it makes of each record alone.

Records come from the real builders (``open_call`` / ``close_call``, ``begin_call`` /
``end_call``, ``@openprogram.tool`` with scalar and mutable arguments), taken off the
queue while the writer is held; each batch is a mixture of them in any order.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import openprogram
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openprogram import _writer
from openprogram._record import RECORD_WIDTH, SESSION, begin_call, end_call, queue
from openprogram._scopes import close_call, open_call

Record = tuple[Any, ...]


@contextlib.contextmanager
def writer_paused() -> Iterator[None]:
    with _writer._cycle_lock:
        yield


@openprogram.tool
def add(a: int, b: int) -> int:
    return a + b


@openprogram.tool
def total(values: list[int]) -> dict[str, int]:
    return {"total": sum(values)}


def _node() -> None:
    opened = open_call("node", "agent", "langgraph", {"messages": ["hi"]}, '{"step":1}')
    assert opened is not None
    close_call(opened, None, {"messages": ["hello"], "n": 2})


def _tool_scalars() -> None:
    add(1, 2)


def _tool_mutable() -> None:
    total([1, 2, 3])


def _failed() -> None:
    handle = openprogram.get_current_session()
    assert handle is not None
    rec = begin_call(handle, "parent-1", "tool", "lookup", None, None, {"try": 1})
    end_call(rec, ValueError("no such city"), None, {"retried": True})


def _no_inputs() -> None:
    opened = open_call("node", "step_1", "langgraph")
    assert opened is not None
    close_call(opened, None, 3.5)


def _odd_name() -> None:
    opened = open_call("node", "n\x00\u00e9" + "x" * 2000, "langgraph", {"a": 1})
    assert opened is not None
    close_call(opened, None, "done")


def _interrupted() -> None:
    opened = open_call("node", "paused", "langgraph", None, {"attempt": 2})
    assert opened is not None
    close_call(opened, KeyboardInterrupt(), None, "interrupted")


BUILDERS: list[Callable[[], None]] = [_node, _tool_scalars, _tool_mutable, _failed, _no_inputs, _odd_name, _interrupted]


def queued(builders: list[Callable[[], None]], store: openprogram.Store) -> list[Any]:
    """The queue's entries the builders add (flat), taken off the queue before the writer sees them."""
    with openprogram.session_context(store=store), writer_paused():
        before = len(queue)
        for build in builders:
            build()
        records = queue[before:]
        del queue[before:]
    assert len(records) == RECORD_WIDTH * len(builders)
    return records


def one_by_one(records: list[Any]) -> list[Any]:
    rows = (_writer._encode(record, "owner") for record in zip(*(iter(records),) * RECORD_WIDTH, strict=True))
    return list(itertools.chain.from_iterable(rows))


@pytest.fixture(scope="module")
def store() -> openprogram.Store:
    return openprogram.open_store("memory://")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(BUILDERS), min_size=1, max_size=12))
def test_a_batch_encoded_by_column_is_each_record_encoded_alone(store: openprogram.Store, builders: Any) -> None:
    records = queued(builders, store)
    by_column = _writer._encode_columns(records, records[SESSION::RECORD_WIDTH], "owner")
    if _odd_name in builders:
        assert by_column is None  # a name a store cannot take as it is: encoded record by record
    else:
        assert by_column == one_by_one(records)


def test_content_capture_off_writes_no_inputs_or_outputs(store: openprogram.Store) -> None:
    records = queued([_node, _tool_mutable, _tool_scalars], store)
    _writer._content[0] = False
    try:
        by_column = _writer._encode_columns(records, records[SESSION::RECORD_WIDTH], "owner")
        assert by_column == one_by_one(records)
    finally:
        _writer._content[0] = True
    assert by_column is not None and by_column[8::15] == [None] * 3 and by_column[9::15] == [None] * 3


def test_batches_mixing_stores_odd_names_and_flush_markers_store_every_row(tmp_path: Any) -> None:
    first, second = openprogram.open_store(f"sqlite:///{tmp_path}/a.db"), openprogram.open_store("memory://")
    with openprogram.session_context(store=first) as one:
        with writer_paused():
            _node()
            with openprogram.session_context(store=second) as other:
                _tool_scalars()
                _odd_name()
            _failed()
            _interrupted()
        assert openprogram.flush()
        for build in (_no_inputs, _tool_mutable):
            build()
    assert openprogram.flush()
    names = sorted(call.name for call in first.list_calls(one.session_id) if call.kind != "turn")
    assert names == ["agent", "lookup", "paused", "step_1", "total"]
    odd = [call for call in second.list_calls(other.session_id) if call.kind == "node"]
    assert [call.name[:4] for call in odd] == ["n\\x00\u00e9"[:4]] and odd[0].name.endswith("...[truncated]")
