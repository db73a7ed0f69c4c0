"""``openprogram.testing``, the pytest plugin for users' own tests, run on a user's test file by ``pytester``.

No framework: the user's "agent" is ``@openprogram.tool`` functions and ``call_scope`` blocks.
"""

from __future__ import annotations

import textwrap

import openprogram
import pytest

from .conftest import run_python

pytest_plugins = ["pytester"]

AGENT = """
import asyncio

import openprogram
import pytest


@openprogram.tool
def search(query: str) -> str:
    return f"results for {query}"


@openprogram.tool
def answer(text: str) -> str:
    return text.upper()


@openprogram.tool
async def lookup(key: str) -> str:
    await asyncio.sleep(0)
    return key


@openprogram.tool
def broken() -> None:
    raise ValueError("the index is down")


def agent(question: str) -> str:
    # Run with no session open, as a user's agent usually is: the test's implicit session records it.
    with openprogram.call_scope("agent", "researcher"):
        found = search(question)
        with openprogram.call_scope("llm", "scripted-model") as scope:
            scope.set_output({"role": "assistant", "content": found})
        return answer(found)
"""


@pytest.fixture
def user_tests(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(agent=AGENT)
    return pytester


def test_a_users_tests_assert_on_the_tree_each_in_a_store_of_its_own(user_tests: pytest.Pytester) -> None:
    user_tests.makepyfile(
        test_agent=textwrap.dedent(
            """
            import openprogram
            from agent import agent, broken, lookup

            def test_the_agent_searches_before_answering(recorded):
                assert agent("sessions") == "RESULTS FOR SESSIONS"
                recorded.assert_order("search", "answer", kind="tool")
                assert recorded.names("tool") == ["search", "answer"]
                llm = recorded.one("llm", under="researcher")
                assert recorded.parent(llm).name == "researcher"
                children = recorded.children(recorded.one("agent"))
                assert [c.name for c in children] == ["search", "scripted-model", "answer"]
                recorded.assert_no_errors()
                [session] = recorded.sessions()
                assert openprogram.implicit_session().session_id == session.session_id

            def test_the_next_test_sees_only_its_own_calls(recorded):
                assert recorded.calls() == []
                agent("again")
                assert len(recorded.calls("tool")) == 2

            async def test_an_async_test(recorded):
                assert await lookup("k") == "k"
                assert recorded.one("tool", "lookup").output == "k"

            def test_a_session_context_records_in_the_tests_store(recorded):
                with openprogram.session_context() as handle:
                    agent("inside")
                assert [s.session_id for s in recorded.sessions()] == [handle.session_id]
                assert recorded.one("tool", "search").session_id == handle.session_id

            def test_errors_are_found(recorded):
                try:
                    broken()
                except ValueError:
                    pass
                [failed] = recorded.errors()
                assert failed.name == "broken" and "the index is down" in failed.error
            """
        )
    )
    result = user_tests.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    # Nothing reached the default store of the process that ran them.
    openprogram.flush()
    assert openprogram.open_store().list_sessions() == []


def test_a_failed_assertion_says_what_was_expected_and_shows_the_tree(user_tests: pytest.Pytester) -> None:
    user_tests.makepyfile(
        test_agent=textwrap.dedent(
            """
            from agent import agent, broken

            def test_wrong_order(recorded):
                agent("x")
                recorded.assert_order("answer", "search", kind="tool")

            def test_missing_call(recorded):
                agent("x")
                recorded.one("llm", under="planner")

            def test_an_error(recorded):
                agent("x")
                try:
                    broken()
                except ValueError:
                    pass
                recorded.assert_no_errors()
            """
        )
    )
    result = user_tests.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert (
        "AssertionError: expected tool calls named 'answer' then 'search' in that order; 'search' was not found"
        " after ['answer']. They started in this order: ['search', 'answer']"
    ) in out
    assert "AssertionError: expected one llm call under 'planner', found 0" in out
    assert (
        "AssertionError: 1 call ended with an error:\nE             tool broken error: ValueError: the index is down"
        in out
    )
    result.stdout.fnmatch_lines(  # each message goes on with the tree of what was recorded
        [
            "*AssertionError: expected one llm call under 'planner', found 0",
            "*recorded in sqlite:///*openprogram-*.db (1 session):",
            "*session *",
            "*  turn main running",
            "*    agent researcher ok",
            "*      tool search ok",
            "*      llm scripted-model ok",
            "*      tool answer ok",
        ]
    )


def test_openprogram_itself_never_imports_pytest() -> None:
    result = run_python(
        """
        import sys
        import openprogram
        openprogram.instrument()
        openprogram.tool(lambda: 1)()
        openprogram.flush()
        print(sorted(name for name in sys.modules if name.split(".")[0] in ("pytest", "_pytest")))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
