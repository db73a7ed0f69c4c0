"""An adapter's ``needs``: ``instrument()`` arms what a named adapter builds on, ``uninstrument()`` releases it.

Two toy adapters registered for the test: ``toy_dependent`` needs ``toy_base``, which patches
:class:`Host` (in this module, imported already, so each is enabled at once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import openprogram
import pytest
from openprogram._kit import Integration, Target
from openprogram.integrations import INTEGRATIONS

HERE = __name__


class Host:
    def run(self) -> str:
        return "ran"


def _wrap(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def run(self: Any) -> str:
        return f"{original(self)} (seen)" if integration.active else original(self)

    return run


class ToyBase(Integration):
    identifier: ClassVar[str] = "toy_base"
    distribution: ClassVar[str] = "pytest"  # installed; openprogram's extras declare no floor for it
    extra: ClassVar[str] = "toy"
    trigger: ClassVar[str] = HERE

    def targets(self) -> list[Target]:
        return [Target(f"{HERE}:Host", "run", _wrap)]


class ToyDependent(Integration):
    identifier: ClassVar[str] = "toy_dependent"
    distribution: ClassVar[str] = "pytest"
    extra: ClassVar[str] = "toy"
    trigger: ClassVar[str] = HERE
    needs: ClassVar[tuple[str, ...]] = ("toy_base",)


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(INTEGRATIONS, "toy_base", f"{HERE}:ToyBase")
    monkeypatch.setitem(INTEGRATIONS, "toy_dependent", f"{HERE}:ToyDependent")
    yield
    openprogram.uninstrument("toy_dependent", "toy_base")


def _patched() -> bool:
    return Host().run() == "ran (seen)"


def test_naming_an_adapter_arms_what_it_needs_and_answers_only_the_name() -> None:
    assert openprogram.instrument("toy_dependent") == {"toy_dependent"}
    assert _patched() and openprogram.instrumented() == {"toy_dependent"}
    openprogram.uninstrument("toy_dependent")
    assert not _patched() and "run" in vars(Host) and not hasattr(vars(Host)["run"], "__openprogram_original__")


def test_a_need_named_too_stays_armed_until_it_is_uninstrumented_itself() -> None:
    openprogram.instrument("toy_base")
    openprogram.instrument("toy_dependent")
    openprogram.uninstrument("toy_dependent")
    assert _patched() and openprogram.instrumented() == {"toy_base"}
    openprogram.uninstrument("toy_base")
    assert not _patched() and openprogram.instrumented() == set()


def test_a_need_still_needed_is_kept_when_uninstrumented_by_name() -> None:
    openprogram.instrument("toy_base", "toy_dependent")
    openprogram.uninstrument("toy_base")
    assert _patched()  # toy_dependent still needs it
    openprogram.uninstrument("toy_dependent")
    assert not _patched() and openprogram.instrumented() == set()


def test_instrument_twice_arms_the_need_once() -> None:
    openprogram.instrument("toy_dependent")
    wrapped = vars(Host)["run"]
    openprogram.instrument("toy_dependent", "toy_base")
    assert vars(Host)["run"] is wrapped and Host().run() == "ran (seen)"


def test_a_need_that_cannot_be_enabled_fails_the_named_adapter_and_leaves_nothing_armed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ToyBase, "distribution", "toy-base-not-installed")
    with pytest.raises(openprogram.DidNotEnable, match=r"toy_base: toy-base-not-installed is not installed"):
        openprogram.instrument("toy_dependent")
    assert openprogram.instrumented() == set() and not _patched()


def test_the_named_adapters_own_missing_framework_is_what_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ToyDependent, "distribution", "toy-dependent-not-installed")
    with pytest.raises(openprogram.DidNotEnable, match=r"toy_dependent: toy-dependent-not-installed"):
        openprogram.instrument("toy_dependent")
    assert not _patched()
