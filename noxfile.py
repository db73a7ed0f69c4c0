"""Test, lint and benchmark sessions. ``nox`` runs the default set (what CI runs).

Each framework is tested at the lowest version we declare and at the latest.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests", "postgres", "langgraph", "crewai", "semantic_kernel", "reliability", "lint"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHON = os.environ.get("OPENPROGRAM_NOX_PYTHON", "3.11")
TEST_DEPS = ["pytest>=8", "pytest-asyncio>=0.23", "hypothesis>=6.100"]

# framework -> {"lowest": the lowest declared set, pinned together; "latest": unpinned}
FRAMEWORKS: dict[str, dict[str, list[str]]] = {
    # langgraph-prebuilt is a separate package: its newest release needs a newer langgraph.
    "langgraph": {
        "lowest": ["langgraph==1.0.0", "langgraph-prebuilt==1.0.2", "langchain-core==1.0.0"],
        "latest": ["langgraph", "langchain-core"],
    },
    "crewai": {"lowest": ["crewai==1.15.0"], "latest": ["crewai"]},
    "semantic_kernel": {"lowest": ["semantic-kernel==1.30.0"], "latest": ["semantic-kernel"]},
}
# Extra packages a framework's tests need beyond TEST_DEPS.
# langgraph: the SQLite checkpointer for the resume-from-a-fresh-process test.
# semantic_kernel: SK 1.30 imports httpx, which the newest openai no longer installs.
TEST_EXTRAS: dict[str, list[str]] = {
    "langgraph": ["langgraph-checkpoint-sqlite>=2.0"],
    "crewai": [],
    "semantic_kernel": ["httpx"],
}
EXTRAS = {"langgraph": "langgraph", "crewai": "crewai", "semantic_kernel": "semantic-kernel"}


def _pytest(session: nox.Session, *paths: str) -> None:
    session.run("pytest", *paths, *session.posargs)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Core tests: no framework installed (this also proves `import openprogram` needs none)."""
    session.install("-e", ".", *TEST_DEPS)
    _pytest(session, "tests/core")


@nox.session(python=PYTHON)
def postgres(session: nox.Session) -> None:
    """The store suite against PostgreSQL (skips with a reason when no server is reachable)."""
    session.install("-e", ".[postgres]", *TEST_DEPS)
    _pytest(session, "tests/stores")


def _framework_session(name: str) -> None:
    @nox.session(name=name, python=PYTHON)
    @nox.parametrize("version", list(FRAMEWORKS[name]))
    def run(session: nox.Session, version: str) -> None:
        session.install("-e", f".[{EXTRAS[name]}]", *FRAMEWORKS[name][version], *TEST_DEPS, *TEST_EXTRAS[name])
        _pytest(session, f"tests/integrations/{name}")

    run.__doc__ = f"{name} adapter tests at the lowest declared and the latest version."


for _name in FRAMEWORKS:
    _framework_session(_name)


@nox.session(python=PYTHON)
def reliability(session: nox.Session) -> None:
    """The fast subset of the load, fault and bad-input suite, with every framework and PostgreSQL."""
    session.install("-e", ".[all]", *TEST_DEPS)
    _pytest(session, "tests/reliability", "tests/integrations/cross")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, and mypy --strict over the installed package with every framework (so their types are checked)."""
    # Not editable: core/ is installed as `openprogram`, a mapping mypy can only follow in an installed copy.
    session.install(".[all]", "ruff>=0.6", "mypy>=1.10")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "--strict", "-p", "openprogram")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """All benchmarks (figures printed as ratios against baselines measured in the same run)."""
    session.install(
        "-e", ".[all]", *TEST_DEPS, "opentelemetry-sdk",
        "openinference-instrumentation-langchain", "openinference-instrumentation-crewai",
    )  # fmt: skip
    session.run("python", "-m", "bench", *session.posargs)
