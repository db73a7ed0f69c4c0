"""The kit's ``rejected_tool_call``: a tool call a framework refused is a ``tool`` call ending ``error`` under the
current call, and never raises into the framework (issue 46)."""

from __future__ import annotations

import openprogram
import pytest
from openprogram._kit import rejected_tool_call

from tests.support import attributes, calls, one


def test_a_refused_call_with_the_text_the_model_was_told(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h, openprogram.call_scope("agent", "clerk") as agent:
        rejected_tool_call("toy", "cancel", '{"order": 7}', "There is no tool cancel.", "call_1")
    refused = one(calls(store, h.session_id), "cancel")
    assert (refused.kind, refused.status, refused.framework) == ("tool", "error", "toy")
    assert refused.error == "ToolCallRejected: There is no tool cancel."
    assert refused.parent_id == agent.call_id and refused.output is None
    assert refused.inputs == {"arguments": '{"order": 7}'} and attributes(refused) == {"tool_call_id": "call_1"}
    assert "traceback" not in (refused.attributes or {})  # nothing raised: no stack to keep


def test_a_refused_call_with_the_exception_the_framework_raised_keeps_its_traceback(store: openprogram.Store) -> None:
    try:
        raise LookupError("Tool cancel not found")
    except LookupError as exc:
        raised = exc
    with openprogram.session_context(store=store) as h:
        rejected_tool_call("toy", "cancel", reason=raised)
    refused = one(calls(store, h.session_id), "cancel")
    assert refused.error == "LookupError: Tool cancel not found" and refused.inputs is None
    assert (refused.attributes or {})["traceback"].endswith("LookupError: Tool cancel not found\n")


def test_with_no_session_under_the_error_policy_it_records_nothing_and_raises_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    openprogram.configure(no_session="error")
    rejected_tool_call("toy", "cancel", None, "no such tool")  # the framework's own answer goes on
    assert "recording a tool call it refused" in caplog.text
