"""Opening a store: what is refused at once, what is only warned of, and how a store is named to a person."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import openprogram
import pytest
from openprogram.stores import describe_store, is_default_store, open_store
from openprogram.stores.postgres import MISSING_DRIVER

from .conftest import run_python

PG_URL = "postgresql://agent:s3cret-pw@127.0.0.1:1/app"

# psycopg IS installed in the test environment. The child interpreter puts this finder
# first on sys.meta_path, so any `import psycopg` fails exactly as it does where the
# package is absent: the import system itself raises, nothing in sys.modules is faked.
HIDE_PSYCOPG = """
import sys

class HidePsycopg:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("psycopg", "psycopg_binary", "psycopg_c"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, HidePsycopg())
"""


def _without_psycopg(code: str, **env: str) -> tuple[int, str, str]:
    result = run_python(HIDE_PSYCOPG + code, env={**os.environ, **env})
    return result.returncode, result.stdout, result.stderr


def test_the_child_really_cannot_import_psycopg() -> None:
    """The hiding finder works (else the tests below would pass for the wrong reason)."""
    code, out, err = _without_psycopg(
        "try:\n    import psycopg\n    print('imported')\nexcept ModuleNotFoundError:\n    print('missing')\n"
    )
    assert (code, out.strip()) == (0, "missing"), err


def test_cli_without_psycopg_says_one_sentence() -> None:
    code, out, err = _without_psycopg(
        f"from openprogram._cli import main\nraise SystemExit(main(['--store', {PG_URL!r}, 'sessions']))\n"
    )
    assert code == 1
    assert err.strip() == f"openprogram: {MISSING_DRIVER}", err
    assert "pip install -e '.[postgres]'" in err
    assert "Traceback" not in err and "s3cret-pw" not in err + out


def test_session_context_without_psycopg_raises_at_entry_and_spills_nothing(isolated_home: Path) -> None:
    code, out, err = _without_psycopg(
        f"""
import json, openprogram

@openprogram.tool
def ping(i):
    return i

ran = False
try:
    with openprogram.session_context(store={PG_URL!r}):
        ran = True
        ping(1)
except openprogram.StoreError as exc:
    error = str(exc)
else:
    error = None
openprogram.flush()
print(json.dumps({{"ran": ran, "error": error}}))
"""
    )
    assert code == 0, err
    assert json.loads(out.splitlines()[-1]) == {"ran": False, "error": MISSING_DRIVER}
    assert "retried" not in err and "spill" not in err, err
    assert not (isolated_home / "spill").exists()


def test_default_postgres_store_without_psycopg_runs_unrecorded_with_that_sentence() -> None:
    """With no session open, a default store that cannot be opened leaves the agent running, unrecorded."""
    code, out, err = _without_psycopg(
        """
import openprogram

@openprogram.tool
def ping(i):
    return i

print(ping(1) + ping(2))
""",
        OPENPROGRAM_STORE=PG_URL,
    )
    assert code == 0, err
    assert out.strip() == "3"
    warnings = [line for line in err.splitlines() if MISSING_DRIVER in line]
    assert len(warnings) == 1, err
    assert "Traceback" not in err and "s3cret-pw" not in err


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A plain file: nothing can be created under it."""
    path = tmp_path / "a-file"
    path.write_text("not a directory")
    return path


def test_strict_open_names_the_path_and_why(tmp_path: Path, blocker: Path) -> None:
    under_file = blocker / "deeper" / "sessions.db"
    with pytest.raises(openprogram.StoreError) as raised:
        open_store(f"sqlite:///{under_file}", strict=True)
    assert str(under_file) in str(raised.value) and f"{blocker} is not a directory" in str(raised.value)

    directory = tmp_path / "a-dir"
    directory.mkdir()
    with pytest.raises(openprogram.StoreError, match="it is a directory") as raised:
        open_store(str(directory), strict=True)
    assert str(directory) in str(raised.value)


def test_open_warns_once_of_a_file_that_cannot_be_created(blocker: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="openprogram")
    url = f"sqlite:///{blocker / 'sessions.db'}"
    first = open_store(url)
    assert open_store(url) is first
    warnings = [r.getMessage() for r in caplog.records if str(blocker / "sessions.db") in r.getMessage()]
    assert len(warnings) == 1 and "is not a directory" in warnings[0], warnings


def test_a_creatable_file_opens_quietly_and_lazily(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="openprogram")
    path = tmp_path / "new" / "dirs" / "sessions.db"
    open_store(f"sqlite:///{path}", strict=True)
    assert not caplog.records
    assert not (tmp_path / "new").exists()  # nothing is created before the first read or write


def test_an_unusable_default_store_warns_at_open_and_the_agent_keeps_running(
    blocker: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    discard_stores: list[openprogram.Store],
) -> None:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(blocker / "home"))
    caplog.set_level(logging.WARNING, logger="openprogram")

    @openprogram.tool
    def ping(i: int) -> int:
        return i

    with openprogram.session_context() as handle:
        discard_stores.append(handle.store)
        assert ping(7) == 7
    assert openprogram.flush() is False
    opened = [r.getMessage() for r in caplog.records if r.getMessage().endswith("until it can be written")]
    assert len(opened) == 1 and str(blocker / "home" / "sessions.db") in opened[0], opened
    assert any("cannot write to store" in r.getMessage() for r in caplog.records)  # then an outage, as promised


def test_describe_store_names_a_file_a_person_can_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    inside = tmp_path / "proj" / "demo.db"
    assert describe_store(f"sqlite:///{inside}") == "~/proj/demo.db"
    assert describe_store(open_store(inside)) == "~/proj/demo.db"
    assert describe_store("/srv/openprogram/sessions.db") == "/srv/openprogram/sessions.db"
    assert describe_store("sqlite:////srv/x.db") == "/srv/x.db"
    assert describe_store(open_store("memory://shared-demo")) == "memory://shared-demo"
    assert describe_store(PG_URL) == "postgresql://agent:***@127.0.0.1:1/app"
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / ".openprogram"))
    assert describe_store(None) == "~/.openprogram/sessions.db"


def test_is_default_store_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = open_store()
    other = open_store(tmp_path / "other.db")
    assert is_default_store(default) and not is_default_store(other)
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'other.db'}")
    assert is_default_store(other) and not is_default_store(default)
    monkeypatch.setenv("OPENPROGRAM_STORE", "sqlite://no-slash")
    assert not is_default_store(other)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:////abs/x.db", "/abs/x.db"),  # SQLAlchemy's absolute form
        ("sqlite:///rel/x.db", "rel/x.db"),  # SQLAlchemy's relative form
        ("sqlite:/abs/x.db", "/abs/x.db"),  # a URL's path with no host part: absolute (was a file named "sqlite:")
        ("sqlite:rel/x.db", "rel/x.db"),
        ("SQLITE:/abs/x.db", "/abs/x.db"),
        ("/abs/x.db", "/abs/x.db"),
        ("rel/x.db", "rel/x.db"),
    ],
)
def test_sqlite_urls_name_the_file_they_read(url: str, path: str, tmp_path: Path) -> None:
    from openprogram.stores import path_from_url

    assert path_from_url(url) == Path(path)
    store = open_store(url)
    assert store.url == f"sqlite:///{Path(path).absolute()}"


@pytest.mark.parametrize("url", ["sqlite://host/x.db", "sqlite://", "sqlite:", "sqlite:/", "sqlite:///"])
def test_sqlite_urls_naming_no_file_are_refused(url: str) -> None:
    with pytest.raises(openprogram.StoreError, match="bad SQLite URL"):
        open_store(url)


def test_opening_for_reading_refuses_a_file_that_is_not_there_and_creates_nothing(tmp_path: Path) -> None:
    from openprogram.stores import NoSuchStore

    missing = tmp_path / "no" / "such" / "x.db"
    with pytest.raises(NoSuchStore, match=f"no store at {missing}: there is no such file"):
        open_store(f"sqlite:{missing}", strict=True, existing=True)
    assert not (tmp_path / "no").exists()
    open_store(f"sqlite:{missing}", strict=True)  # a command that writes may still create it
    open_store("memory://", existing=True)  # nothing to look for: a memory store is there once opened
