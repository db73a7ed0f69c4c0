"""``openprogram undo SESSION_ID [--turn TURN_ID] [--dry-run] [--import MODULE] [--unknown stop|undo|skip] [--yes]``.

The modules named by ``--import`` declare the compensations (they are imported as the program
that recorded the session imports them). The plan is printed before anything runs, and the
undo asks for confirmation unless ``--yes`` is given (a stdin that is not a terminal and holds
no answer undoes nothing and says ``--yes`` is needed; ``yes | openprogram undo ...`` answers);
then exactly the effects printed are undone. Recorded text is printed escaped (:func:`printable`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import TextIO

from .._runtime import UndoError, validate_session_id
from .._undo import Effect, compensation_for, describe_effect, run_plan, undo
from ..stores import Store
from .printable import printable
from .session_ids import find_session

__all__ = ["run"]


def _short(value: object, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_FILE_ACTIONS = {
    "absent": "remove it (it did not exist)",
    "directory": "restore the directory whole (what was created in it is removed)",
}


def _line(effect: Effect) -> str:
    text = describe_effect(effect)
    if effect.refused:
        return f"{text}  REFUSED: {effect.refused}"
    if effect.kind == "file":
        text += "  " + _FILE_ACTIONS.get(effect.inputs["type"], "restore it")
    else:
        text += f"  inputs {_short(effect.inputs)}"
        if effect.state == "applied":
            text += f"  output {_short(effect.output)}"
    if effect.state == "unknown":
        text += "  OUTCOME UNKNOWN: it was interrupted, or its process died, mid-call"
    elif effect.state == "undoing":
        text += "  being undone by another process"
    elif effect.state == "interrupted":
        text += "  an earlier undo of it was interrupted: it is retried"
    if effect.kind != "file" and compensation_for(effect.name) is None:
        text += "  !! no compensation declared (--import the module that declares it)"
    return text


def _confirm(count: int, out: TextIO) -> bool | None:
    """The answer to the prompt; None when there is none to read (no terminal, and stdin at its end)."""
    out.write(f"Undo {'this effect' if count == 1 else f'these {count} effects'}? [y/N] ")
    out.flush()
    answer = sys.stdin.readline() if sys.stdin is not None else ""
    if not answer and not _terminal():  # at its end at once: nobody to ask (cron, CI, `< /dev/null`)
        out.write("\n")
        return None
    return answer.strip().lower() in ("y", "yes")


def _terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # stdin closed or replaced
        return False


def run(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    """Print the plan, confirm, undo; the exit status."""
    validate_session_id(args.session_id)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: --import finds the program's own modules
    for module in args.imports:
        try:
            importlib.import_module(module)
        except Exception as exc:  # the module's own failure too (a variable it needs, say): said, no traceback
            sys.stderr.write(f"openprogram: cannot import {module!r}: {type(exc).__name__}: {printable(str(exc))}\n")
            return 2
    session_id = find_session(store, args.session_id).session_id
    plan = undo(session_id, args.turn_id, dry_run=True, store=store)
    scope = f"turn {args.turn_id} of session {session_id}" if args.turn_id else f"the whole of session {session_id}"
    if plan.running:
        out.write(
            f"{len(plan.running)} effect(s) of calls still running are not planned: "
            f"{printable(', '.join(describe_effect(e) for e in plan.running))}\n"
        )
    if not plan:
        out.write(f"nothing to undo in {scope}\n")
        return 0
    out.write(f"undo plan for {scope}: {len(plan)} effect(s), newest first\n")
    for n, effect in enumerate(plan, 1):
        out.write(f"  {n}. {printable(_line(effect))}\n")
    if args.dry_run:
        return 0
    answer = True if args.yes else _confirm(len(plan), out)
    if answer is None:
        sys.stderr.write(
            "openprogram: no terminal to confirm on (stdin is not a terminal and holds no answer): "
            "give --yes to undo these effects; nothing was undone\n"
        )
        return 1
    if not answer:
        out.write("nothing was undone\n")
        return 1
    try:
        done = run_plan(store, plan, args.unknown)  # the effects printed, not whatever is planned by now
    except UndoError as exc:
        if exc.done:
            out.write(f"undid {len(exc.done)} effect(s) before stopping\n")
        sys.stderr.write(f"openprogram: undo stopped: {printable(str(exc))}\n")
        return 1
    if not done:
        out.write("nothing was undone\n")
        return 0
    out.write(
        f"undid {len(done)} effect(s) in turn {done.undo_turn_id} of session {session_id} "
        f"(`openprogram show {session_id}` shows them)\n"
    )
    return 0
