"""``openprogram demo``'s Agents SDK demo runs offline and ``openprogram show`` draws its tree."""

from __future__ import annotations

import io
from pathlib import Path

import openprogram
from openprogram._cli import main
from openprogram.integrations.openai_agents.demo import run_demo
from openprogram.stores import Store

from tests.integrations.openai_agents.helpers import tree
from tests.support import by_kind, calls

DEMO_RUN = [
    "  agent Triage",
    "    call on_topic",
    "    llm scripted-offline",
    "    tool find_order",
    "    llm scripted-offline",
    "    call transfer_to_billing",
    "      agent Billing",
    "        llm scripted-offline",
    "        tool refund_policy",
    "        llm scripted-offline",
    "        tool ask_policy",
    "          agent Policy",
    "            llm scripted-offline",
    "        llm scripted-offline",
]


def test_demo_records_a_guarded_triage_handing_off_to_billing_run_and_streamed(store: Store) -> None:
    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        run_demo(lines.append)
    assert len(lines) == 2 and all("a full refund is on its way" in line for line in lines)
    records = calls(store, h.session_id)
    assert tree(records) == ["turn main", *DEMO_RUN, *DEMO_RUN]
    assert all(r.status == "ok" for r in records)
    assert len(by_kind(records, "llm")) == 12 and all("usage" in (r.attributes or {}) for r in by_kind(records, "llm"))


def test_cli_demo_and_show_draw_the_agents_tree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    out = io.StringIO()
    assert main(["--store", url, "demo"], out=out) == 0
    assert "openai_agents run (Triage -> hand-off -> Billing" in out.getvalue()
    session_id = next(line.split()[-1] for line in out.getvalue().splitlines() if line.startswith("see it:"))
    shown = io.StringIO()
    assert main(["--store", url, "show", session_id], out=shown) == 0
    drawn = shown.getvalue()
    for fragment in (
        "agent Triage (openai_agents) [ok]",
        "call transfer_to_billing (openai_agents) [ok]",
        "agent Billing (openai_agents) [ok]",
        "tool ask_policy (openai_agents) [ok]",
    ):
        assert fragment in drawn, drawn
