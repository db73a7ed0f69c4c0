"""Isolation under load: concurrent asyncio sessions and threads, every parent link checked in the store."""

from __future__ import annotations

import openprogram
import pytest
from reliability_support import scaled

from bench.reliability_workloads import FRAMEWORK_WORKLOADS, WorkloadUnavailable, check_isolation, run_isolation


def test_sessions_and_threads_never_mix(any_store: openprogram.Store) -> None:
    expected = run_isolation(any_store, sessions=scaled(300), threads=16, thread_rounds=scaled(3))
    assert len(expected.sessions) == scaled(300) + 16 * scaled(3)
    assert check_isolation(any_store, expected) == []


def test_checker_catches_a_misattributed_call(any_store: openprogram.Store) -> None:
    # The checker itself must be able to fail: record a call under another session's turn.
    from bench.reliability_workloads import leaf

    expected = run_isolation(any_store, sessions=2, threads=0, thread_rounds=0)
    (_first, (who, _)), (second, _) = list(expected.sessions.items())[:2]
    with openprogram.session_context(second, store=any_store):
        leaf(who, "a/l")  # claims to belong to `first`, recorded in `second`
    openprogram.flush()
    problems = check_isolation(any_store, expected)
    assert any(second in p for p in problems), problems


@pytest.mark.parametrize("framework", sorted(FRAMEWORK_WORKLOADS))
def test_framework_sessions_never_mix(framework: str, any_store: openprogram.Store) -> None:
    try:
        work = FRAMEWORK_WORKLOADS[framework]()
    except WorkloadUnavailable as exc:
        pytest.skip(str(exc))
    try:
        expected = run_isolation(any_store, sessions=scaled(100), threads=16, thread_rounds=1, extra=[work])
    finally:
        openprogram.uninstrument()
    assert check_isolation(any_store, expected) == []
