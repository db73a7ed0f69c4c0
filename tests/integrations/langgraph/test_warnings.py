"""A deprecation LangGraph or LangChain issues inside a patched entry point names the same line as without openprogram.

Each case runs the same line twice, with the adapter off and on, and compares the location
``warnings`` reports (what module-keyed filters and once-per-location de-duplication see).
Where the plain run names this file, so must the instrumented one.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import openprogram
import pytest

from tests.integrations.langgraph.fakes import chain_graph

Location = tuple[str, int]


def _caught(message: str, caught: list[warnings.WarningMessage]) -> Location | None:
    found = [(w.filename, w.lineno) for w in caught if message in str(w.message)]
    assert len(found) <= 1, found
    return found[0] if found else None


def _where(message: str, run: Callable[[], Any]) -> Location | None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return _caught(message, caught)


async def _awhere(message: str, run: Callable[[], Awaitable[Any]]) -> Location | None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await run()
    return _caught(message, caught)


def _stream(graph: Any) -> None:
    for _ in graph.stream({"log": []}, checkpoint_during=False):
        pass


async def _astream(graph: Any) -> None:
    async for _ in graph.astream({"log": []}, checkpoint_during=False):
        pass


async def _astream_log(graph: Any) -> None:
    async for _ in graph.astream_log({"log": []}):
        pass


async def _astream_events_v1(graph: Any) -> None:
    async for _ in graph.astream_events({"log": []}, version="v1"):
        pass


@pytest.mark.parametrize("entry", ["stream", "invoke"])
def test_checkpoint_during_is_reported_where_it_is_without_openprogram(store: Any, entry: str) -> None:
    graph = chain_graph(("a",))

    def run() -> None:
        with openprogram.session_context(store=store):
            if entry == "stream":
                _stream(graph)
            else:
                graph.invoke({"log": []}, checkpoint_during=True)

    openprogram.uninstrument()
    plain = _where("checkpoint_during", run)
    assert plain is not None
    openprogram.instrument("langgraph")
    assert _where("checkpoint_during", run) == plain
    if entry == "stream":  # the user's loop; invoke's own frame (LangGraph's) for invoke
        assert plain[0] == __file__


@pytest.mark.parametrize("entry", ["astream", "ainvoke"])
async def test_checkpoint_during_is_reported_where_it_is_without_openprogram_async(store: Any, entry: str) -> None:
    graph = chain_graph(("a",))

    async def run() -> None:
        async with openprogram.session_context(store=store):
            if entry == "astream":
                await _astream(graph)
            else:
                await graph.ainvoke({"log": []}, checkpoint_during=True)

    openprogram.uninstrument()
    plain = await _awhere("checkpoint_during", run)
    assert plain is not None
    openprogram.instrument("langgraph")
    assert await _awhere("checkpoint_during", run) == plain
    if entry == "astream":
        assert plain[0] == __file__


@pytest.mark.parametrize(
    ("consume", "message"),
    [(_astream_log, "astream_log is deprecated"), (_astream_events_v1, "version='v1' is deprecated")],
    ids=["astream_log", "astream_events v1"],
)
async def test_langchains_stream_deprecations_are_reported_where_they_are_without_openprogram(
    store: Any, consume: Callable[[Any], Awaitable[None]], message: str
) -> None:
    graph = chain_graph(("a",))

    async def run() -> None:
        async with openprogram.session_context(store=store):
            await consume(graph)  # LangChain's stacklevel names the frame that awaits the consumer: this one

    openprogram.uninstrument()
    plain = await _awhere(message, run)
    if plain is None:
        pytest.skip("this langchain-core has no such deprecation (it came with 1.3.3)")
    openprogram.instrument("langgraph")
    assert await _awhere(message, run) == plain
    assert plain[0] == __file__
