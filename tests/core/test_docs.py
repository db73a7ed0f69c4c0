"""The README and docs/ tell a newcomer what is true (issue 46): how to install, what `[all]` holds,
what each framework does with no session, and where to read on."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = sorted((ROOT / "docs").glob("*.md"))
FRAMEWORKS = ("LangGraph", "CrewAI", "Semantic Kernel", "OpenAI Agents SDK", "Pydantic AI", "LlamaIndex", "Google ADK")


def _sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, flags=re.MULTILINE)


def test_every_install_line_installs_from_the_checkout() -> None:
    # The name on the package index belongs to another project: `pip install openprogram...` installs it.
    from_index = re.compile(r"pip install\s+(?:-U\s+)?['\"]?openprogram\b")
    why = [paragraph for paragraph in README.split("\n\n") if "belongs to another project" in paragraph]
    assert len(why) == 1  # said once, in the README
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *PAGES]:
        text = path.read_text(encoding="utf-8").replace(why[0], "")
        assert from_index.findall(text) == [], path.name
    assert "pip install -e '.[langgraph]'" in README


def test_all_says_what_it_cannot_hold_where_it_is_offered() -> None:
    setup = " ".join(README.split("## Set up", 1)[1].split("\n## ", 1)[0].split())  # lines joined
    assert "pip install -e '.[all]'" in setup
    assert "CrewAI pins `openai<3`" in setup and "pip install -e '.[crewai]'" in setup
    assert "'.[langgraph,semantic-kernel,openai-agents,pydantic-ai,llama-index,google-adk,postgres,otlp]'" in setup


def test_the_pydantic_ai_page_says_where_a_new_conversation_is_recorded() -> None:
    page = (ROOT / "docs" / "pydantic-ai.md").read_text(encoding="utf-8")
    flat = " ".join(page.split())
    assert "a new conversation gets a new session" not in flat
    assert "A new conversation records into the process's implicit session" in flat


def test_the_package_and_the_contributors_guide_name_every_framework() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    description = re.search(r'^description = "(.*)"$', pyproject, flags=re.MULTILINE)
    assert description is not None
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for name in FRAMEWORKS:
        assert name in description.group(1), name
        assert f"| {name} |" in contributing, name


def test_the_crewai_page_says_crewai_sends_telemetry_and_how_to_stop_it() -> None:
    page = (ROOT / "docs" / "crewai.md").read_text(encoding="utf-8")
    assert "CrewAI sends telemetry by default" in page
    assert "CREWAI_DISABLE_TELEMETRY=true" in page and "CREWAI_TRACING_ENABLED=false" in page


def test_the_readme_gives_the_command_line_right_after_the_demo() -> None:
    sections = _sections(README)
    assert sections[:2] == ["Set up (fresh machine, Python ≥ 3.10)", "Command line"]
    # the writer's batching, spill files and capture limits come after what a newcomer uses
    for later in ("a background writer batches", "spill/*.jsonl", "strings at 4,096"):
        assert README.index(later) > README.index("## Frameworks"), later


def test_the_docs_index_separates_user_pages_from_contributor_pages() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    users, contributors = index.split("## Using openprogram", 1)[1].split("## Working on openprogram", 1)
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    assert {p.name for p in PAGES if p.name != "README.md"} <= linked
    for page in ("testing.md", "fakes.md", "mcp.md", "langchain.md", "google-adk.md", "llama-index.md"):
        assert f"]({page})" in users, page
    for page in ("core-tests.md", "reliability.md"):
        assert f"]({page})" in contributors and f"]({page})" not in users, page
    assert "docs/README.md" in README
