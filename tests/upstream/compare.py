"""Compare a plain and an instrumented run of an upstream test suite (``nox -s upstream``).

Usage: ``python compare.py PLAIN.xml INSTRUMENTED.xml [--stats DIR]``

Exits non-zero when a test that passed plain failed, errored or went missing with openprogram
instrumented, or (with ``--stats``) when the instrumented run recorded no call at all. With
``--confirm``, each such test is run once more, instrumented and alone: one that passes then is
reported as timing-sensitive (several upstream tests assert wall-clock delays rounded to 0.1 s,
which two parallel workers on two cores can miss), not counted as a failure. Tests that
fail in both runs are upstream's (or this machine's) problem: listed, not a failure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

# Worst first: a test reported twice (a teardown error after a pass) keeps its worst outcome.
_RANK = {"failed": 0, "skipped": 1, "passed": 2}
ALONE_TIMEOUT = 300  # seconds for one test re-run alone


def outcomes(report: Path) -> dict[str, str]:
    """Test id -> "passed" / "failed" / "skipped" from a pytest ``--junitxml`` file."""
    result: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        outcome = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        previous = result.get(test_id)
        if previous is None or _RANK[outcome] < _RANK[previous]:
            result[test_id] = outcome
    return result


def _message(report: Path, test_id: str) -> str:
    for case in ET.parse(report).getroot().iter("testcase"):
        if f"{case.get('classname', '')}::{case.get('name', '')}" == test_id:
            for child in case:
                if child.tag in {"failure", "error"}:
                    return (child.get("message") or "").splitlines()[0][:300] if child.get("message") else child.tag
    return "missing from the instrumented report"


def _counts(result: dict[str, str]) -> str:
    counts = Counter(result.values())
    return f"{counts['passed']} passed, {counts['failed']} failed/errors, {counts['skipped']} skipped"


def _node_id(test_id: str) -> str:
    """``tests.test_pregel::test_x[sqlite]`` -> ``tests/test_pregel.py::test_x[sqlite]`` (a class stays ``::Class``)."""
    classname, _, name = test_id.partition("::")
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = Path(*parts[:cut]).with_suffix(".py")
        if module.exists():
            return "::".join([str(module), *parts[cut:], name])
    return test_id


def _passes_alone(test_id: str) -> bool:
    """The test, instrumented (the plugin), alone in a fresh pytest process: True if it passes."""
    plugin = ["-p", "openprogram_plugin", "-p", "no:cacheprovider"]
    command = [sys.executable, "-m", "pytest", "-q", *plugin, _node_id(test_id)]
    try:
        return subprocess.run(command, check=False, capture_output=True, timeout=ALONE_TIMEOUT).returncode == 0
    except subprocess.TimeoutExpired:  # a test that hangs alone too is a failure, not a stalled CI run
        return False


def _recorded(stats_dir: Path) -> tuple[int, int, int]:
    """(processes, sessions, calls) written by the plugin of the instrumented run."""
    processes = sessions = calls = 0
    for path in sorted(stats_dir.glob("*.json")):
        stats = json.loads(path.read_text(encoding="utf-8"))
        processes += 1
        sessions += stats["sessions"]
        calls += stats["calls"]
    return processes, sessions, calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plain", type=Path)
    parser.add_argument("instrumented", type=Path)
    parser.add_argument("--stats", type=Path, help="folder the plugin wrote its per-process stats to")
    parser.add_argument("--confirm", action="store_true", help="run each regression once more, alone, instrumented")
    args = parser.parse_args(argv)

    plain, instrumented = outcomes(args.plain), outcomes(args.instrumented)
    print(f"plain:        {_counts(plain)}")
    print(f"instrumented: {_counts(instrumented)}")

    # Failed, errored or missing (a crashed worker, a collection error) with openprogram.
    regressions = sorted(t for t, o in plain.items() if o == "passed" and instrumented.get(t, "failed") == "failed")
    both = sorted(t for t, o in plain.items() if o == "failed" and instrumented.get(t) == "failed")
    # Reported for flakiness, never a failure.
    other = sorted(
        t for t in set(plain) | set(instrumented) if plain.get(t) != instrumented.get(t) and t not in regressions
    )

    failed = False
    if args.stats is not None:
        processes, sessions, calls = _recorded(args.stats)
        print(f"recorded:     {calls} calls in {sessions} sessions ({processes} pytest processes)")
        if calls == 0:
            print("FAIL: the instrumented run recorded nothing; openprogram was not really instrumented")
            failed = True
    if both:
        print(f"failing in both runs (not counted against openprogram): {len(both)}")
        for test_id in both:
            print(f"  {test_id}: {_message(args.plain, test_id)}")
    if other:
        print(f"other differences (not a failure): {len(other)}")
        for test_id in other:
            before, after = plain.get(test_id, "missing"), instrumented.get(test_id, "missing")
            print(f"  {test_id}: plain {before}, instrumented {after}")
    if regressions and args.confirm:
        timing = [test_id for test_id in regressions if _passes_alone(test_id)]
        if timing:
            print(f"failed instrumented in parallel, passed alone and instrumented (timing-sensitive): {len(timing)}")
            for test_id in timing:
                print(f"  {test_id}: {_message(args.instrumented, test_id)}")
        regressions = [test_id for test_id in regressions if test_id not in timing]
    if regressions:
        print(f"FAIL: {len(regressions)} tests pass plain and fail with openprogram instrumented:")
        for test_id in regressions:
            print(f"  {test_id}: {instrumented.get(test_id, 'missing')}: {_message(args.instrumented, test_id)}")
        failed = True
    else:
        print("no test passes plain and fails instrumented")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
