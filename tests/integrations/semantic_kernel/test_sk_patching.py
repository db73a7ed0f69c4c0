"""What patching leaves visible on Semantic Kernel: each patched attribute keeps the original's metadata
(SK's own decorators mark agent methods), and ``instrument()`` patches SK only when the program imports it."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openprogram._kit import ORIGINAL, shape_of
from openprogram.integrations.semantic_kernel import SemanticKernelIntegration
from semantic_kernel.agents import ChatCompletionAgent

pytest.importorskip("google.protobuf", reason="SK orchestrations need protobuf")

# A row that leaves its owner's own definition alone (an abstract base) is checked on a connector that overrides it.
_CONNECTOR = "semantic_kernel.connectors.ai.open_ai.services.open_ai_chat_completion_base:OpenAIChatCompletionBase"
TABLE = [
    (_CONNECTOR if target.skip_owner else target.owner, target.attribute)
    for target in SemanticKernelIntegration().targets()
]


def _owner(owner: str) -> Any:
    module_name, _, class_name = owner.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in filter(None, class_name.split(".")):
        found = getattr(found, part)
    return found


@pytest.mark.parametrize(("owner", "attribute"), TABLE, ids=[f"{o.rpartition(':')[2]}.{a}" for o, a in TABLE])
def test_every_patched_attribute_keeps_the_originals_metadata(
    instrument: Callable[..., set[str]], owner: str, attribute: str
) -> None:
    cls = _owner(owner)
    original = inspect.getattr_static(cls, attribute)
    instrument("semantic_kernel")
    replacement = inspect.getattr_static(cls, attribute)
    assert getattr(replacement, ORIGINAL) is original  # patched, by us
    assert replacement.__wrapped__ is original
    for name in ("__name__", "__qualname__", "__doc__", "__module__"):
        assert getattr(replacement, name) == getattr(original, name), name
    markers = {k: v for k, v in vars(original).items() if k != "__wrapped__"}
    assert markers.items() <= vars(replacement).items()  # SK's __agent_diagnostics__, typing's __override__
    assert shape_of(replacement) == shape_of(original)
    assert inspect.iscoroutinefunction(replacement) == inspect.iscoroutinefunction(original)
    assert inspect.isasyncgenfunction(replacement) == inspect.isasyncgenfunction(original)


@pytest.mark.parametrize("method", ["get_response", "invoke", "invoke_stream"])
def test_agent_methods_keep_sks_diagnostics_and_override_markers(instrumented: None, method: str) -> None:
    # What SK's own test_agent_decorated asserts, with the adapter on.
    decorated = getattr(ChatCompletionAgent, method)
    assert hasattr(decorated, ORIGINAL)
    assert hasattr(decorated, "__agent_diagnostics__") and decorated.__agent_diagnostics__
    assert decorated.__override__ is True


def _run(code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENPROGRAM_")}
    env["OPENPROGRAM_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


def test_instrument_imports_no_sk_and_a_kernel_imported_later_is_patched_and_recorded(tmp_path: Path) -> None:
    _run(
        """
        import asyncio, sys
        import openprogram
        assert "semantic_kernel" in openprogram.instrument()
        assert "semantic_kernel" not in sys.modules
        from semantic_kernel import Kernel
        from semantic_kernel.filters.kernel_filters_extension import KernelFilterExtension
        from semantic_kernel.functions import kernel_function
        assert hasattr(KernelFilterExtension.__dict__["construct_call_stack"], "__openprogram_original__")
        assert "semantic_kernel.agents.chat_completion.chat_completion_agent" not in sys.modules
        from semantic_kernel.agents import ChatCompletionAgent  # SK loads its agent modules on first use
        assert hasattr(ChatCompletionAgent.__dict__["invoke"], "__openprogram_original__")

        @kernel_function
        def echo(text: str) -> str:
            return text

        kernel = Kernel()
        kernel.add_function("tools", echo)
        store = openprogram.open_store("memory://")
        async def main():
            async with openprogram.session_context(store=store) as h:
                await kernel.invoke(plugin_name="tools", function_name="echo", text="hi")
            return h
        h = asyncio.run(main())
        openprogram.flush()
        assert [(c.kind, c.name) for c in store.list_calls(h.session_id)][1:] == [("function", "tools.echo")]
        openprogram.uninstrument()
        assert not hasattr(KernelFilterExtension.__dict__["construct_call_stack"], "__openprogram_original__")
        """,
        tmp_path,
    )


def test_instrument_accepts_the_distribution_spelling(tmp_path: Path) -> None:
    _run(
        """
        import openprogram
        from semantic_kernel.filters.kernel_filters_extension import KernelFilterExtension
        assert openprogram.instrument("semantic-kernel") == {"semantic_kernel"}
        assert hasattr(KernelFilterExtension.__dict__["construct_call_stack"], "__openprogram_original__")
        openprogram.uninstrument("semantic-kernel")
        assert openprogram.instrumented() == set()
        """,
        tmp_path,
    )
