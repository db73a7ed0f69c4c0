"""Spill files: a write torn by a full disk loses that line only; ``import`` applies the writer's rules and reports
the lines it rejects; what it imports, ``sessions`` and ``show`` read."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram._cli import main as cli

from .conftest import python_env, run_python

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

T0 = 1_765_000_000.0


def call_row(call_id: str, parent: str | None = None, **changes: Any) -> list[Any]:
    row: dict[str, Any] = {
        "call_id": call_id,
        "session_id": "spilled",
        "turn_id": "turn-1",
        "parent_id": parent,
        "kind": "tool",
        "name": "step",
        "framework": None,
        "status": "ok",
        "inputs": '{"i":1}',
        "output": "1",
        "error": None,
        "attributes": None,
        "started_at": T0,
        "ended_at": T0 + 0.5,
        "owner": "host:1:abc",
    }
    row.update(changes)
    return list(row.values())


def spill_file(path: Path, *lines: str) -> Path:
    session = json.dumps({"session": ["spilled", "main", T0, T0 + 1]})
    root = json.dumps({"call": call_row("root")})
    path.write_text("\n".join([json.dumps({"store": "sqlite:///x.db"}), session, root, *lines]) + "\n")
    return path


def import_file(target: str, path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = StringIO()
    code = cli(["--store", target, "import", str(path)], out=out)
    return code, out.getvalue(), capsys.readouterr().err


# --- torn writes ----------------------------------------------------------------------------------------------------

AGENT_ON_A_FULL_DISK = """
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, resource.RLIM_INFINITY))
    import openprogram

    @openprogram.tool
    def kept(i):
        return i

    with openprogram.session_context("outage", store={url!r}):
        for i in range(600):
            kept(i)
    print("agent finished")
"""


def test_a_spill_torn_by_a_full_disk_imports_every_whole_line(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = python_env(OPENPROGRAM_HOME=str(isolated_home), OPENPROGRAM_MAX_PENDING_ROWS="100")
    agent = run_python(AGENT_ON_A_FULL_DISK.format(url=f"sqlite:///{blocker / 's.db'}"), env=env)
    assert agent.returncode == 0 and "agent finished" in agent.stdout, agent.stderr
    (spill,) = (isolated_home / "spill").glob("*.jsonl")
    whole = [line for line in spill.read_text().splitlines(keepends=True) if line.endswith("\n")]
    whole_calls = sum(1 for line in whole if line.startswith('{"call"'))
    assert whole_calls >= 100  # the spills before the disk filled up (a batch that did not fit is taken back whole)

    target = f"sqlite:///{tmp_path / 'recovered.db'}"
    code, out, err = import_file(target, spill, capsys)

    assert len(openprogram.open_store(target).list_calls("outage")) == whole_calls
    torn = spill.stat().st_size > sum(map(len, whole))
    assert (code, err.count("not a spill record")) == ((1, 1) if torn else (0, 0)), err
    assert f"{spill.name}:{len(whole) + 1}:" in err if torn else "rejected" not in out


APPEND_ON_A_FULL_DISK = """
    import resource, signal, sys
    from openprogram import _recording

    path, limit, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    rows = [
        (f"c{i}", "spilled", "turn-1", None, "tool", "step", None, "ok", "{}", str(i), None, None, 1.0, 2.0, "o")
        for i in range(first, first + count)
    ]
    try:
        _recording.append_spill(path, "sqlite:///x.db", [("spilled", "main", 1.0, 2.0)], rows, [], [])
    except OSError as exc:
        print(exc.errno)
"""


def append_in_child(path: Path, limit: int, first: int, count: int) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            APPEND_ON_A_FULL_DISK.replace("\n    ", "\n"),
            str(path),
            str(limit),
            str(first),
            str(count),
        ],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_spill_write_cut_short_by_a_full_disk_leaves_the_file_whole_and_appendable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spill = tmp_path / "spill.jsonl"
    assert append_in_child(spill, 1 << 30, 0, 100) == ""
    size = spill.stat().st_size
    assert append_in_child(spill, size + 5000, 100, 600) == "27"  # EFBIG: 600 calls do not fit in 5000 bytes
    assert spill.stat().st_size == size  # taken back: no torn line
    spill.write_bytes(spill.read_bytes() + b'{"call": ["torn')  # a write torn where it could not be taken back
    assert append_in_child(spill, 1 << 30, 700, 50) == ""

    target = f"sqlite:///{tmp_path / 'recovered.db'}"
    code, _, err = import_file(target, spill, capsys)

    outputs = sorted(c.output for c in openprogram.open_store(target).list_calls("spilled"))
    assert outputs == [*range(100), *range(700, 750)]
    assert code == 1 and err.count("not a spill record") == 1  # the torn line only


# --- the writer's rules ---------------------------------------------------------------------------------------------

HOSTILE = {
    "a wrong type": json.dumps({"call": call_row("c", "root", started_at="yesterday")}),
    "a huge number as a time": json.dumps({"call": call_row("c", "root", ended_at=12.5)}).replace("12.5", "1e999"),
    "an absurd time": json.dumps({"call": call_row("c", "root", started_at=1e300, ended_at=None)}),
    "NaN": json.dumps({"call": call_row("c", "root", ended_at=float("nan"))}),
    "a huge integer": '{"session": ["s2", "main", ' + "9" * 5000 + ", 1]}",
    "nested garbage": '{"call": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "a capture nested too deep": json.dumps({"call": call_row("c", "root", output="[" * 500 + "]" * 500)}),
    "a capture that is not JSON": json.dumps({"call": call_row("c", "root", output="{not json")}),
    "NaN in a capture": json.dumps({"call": call_row("c", "root", output="[NaN]")}),
    "attributes that are not an object": json.dumps({"call": call_row("c", "root", attributes="[1]")}),
    "tokens past 64 bits": json.dumps(
        {"call": call_row("c", "root", kind="llm", attributes=json.dumps({"usage": {"input_tokens": 2**64}}))}
    ),
    "a NUL in a name": json.dumps({"call": call_row("c", "root", name="a\x00b")}),
    "a lone surrogate in a name": json.dumps({"call": call_row("c", "root", name="a\ud800b")}),
    "a lone surrogate in a capture's text": json.dumps({"call": call_row("c", "root", output='"\ud800"')}),
    "an id with a path in it": json.dumps({"call": call_row("../../x", "root")}),
    "an id too long": json.dumps({"call": call_row("c" * 500, "root")}),
    "an unknown status": json.dumps({"call": call_row("c", "root", status="pwned")}),
    "a name past the writer's cut": json.dumps({"call": call_row("c", "root", name="n" * 5000)}),
    "a 10 MB capture": json.dumps({"call": call_row("c", "root", output=json.dumps("x" * 10_000_000))}),
    "a line past the longest": '{"call": "' + "x" * ((16 << 20) + 10) + '"}',
    "an unknown record": json.dumps({"effect": [1, 2, 3]}),
    "not UTF-8": '{"call": "\xff\xfe"}',
    "a call that is its own parent": json.dumps({"call": call_row("self", "self")}),
}


@pytest.mark.parametrize("line", HOSTILE.values(), ids=HOSTILE.keys())
def test_import_rejects_a_line_the_writer_could_not_have_written_and_keeps_the_rest(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hostile.jsonl"
    good = json.dumps({"call": call_row("after", "root")})
    spill_file(path, line, good)
    if line.startswith('{"call": "\xff'):
        path.write_bytes(path.read_bytes().replace("\xff\xfe".encode(), b"\xff\xfe"))
    target = f"sqlite:///{tmp_path / 'target.db'}"

    code, out, err = import_file(target, path, capsys)

    assert code == 1 and "imported 3 records" in out and "1 line rejected" in out
    assert "hostile.jsonl:4: not a spill record (" in err and len(err) < 2000
    store = openprogram.open_store(target)
    assert sorted(c.call_id for c in store.list_calls("spilled")) == ["after", "root"]
    assert cli(["--store", target, "sessions"], out=StringIO()) == 0
    assert cli(["--store", target, "show", "spilled"], out=StringIO()) == 0


def test_import_rejects_calls_whose_parents_loop_and_keeps_the_calls_below_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = spill_file(
        tmp_path / "loops.jsonl",
        json.dumps({"call": call_row("a", "b")}),
        json.dumps({"call": call_row("b", "c")}),
        json.dumps({"call": call_row("c", "a")}),
        json.dumps({"call": call_row("below", "a")}),
        json.dumps({"call": call_row("fine", "root")}),
    )
    target = f"sqlite:///{tmp_path / 'target.db'}"

    code, out, err = import_file(target, path, capsys)

    assert code == 1 and "3 lines rejected" in out
    assert err.count("its parents lead back to it") == 3
    store = openprogram.open_store(target)
    assert sorted(c.call_id for c in store.list_calls("spilled")) == ["below", "fine", "root"]


def test_import_reports_the_first_rejected_lines_and_how_many_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = spill_file(tmp_path / "many.jsonl", *["{bad"] * 40)

    code, out, err = import_file(f"sqlite:///{tmp_path / 't.db'}", path, capsys)

    assert code == 1 and "imported 2 records" in out and "40 lines rejected" in out
    assert err.count("not a spill record") == 5 and "and 35 more lines rejected" in err
