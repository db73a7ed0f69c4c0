"""The layers of ``core/`` (see CONTRIBUTING.md, "The house"): every import points down a layer, and
goes into another subpackage only through its ``__init__``, for names its ``__all__`` lists.

Imports are read with ``ast`` from the source, function-level and ``TYPE_CHECKING`` ones included.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]

#: Bottom to top. A unit imports units of lower layers only; the units of one layer never import each other.
LAYERS: list[set[str]] = [
    {"_runtime"},  # ids, errors, the guard, propagation, step drivers, own threads
    {"_capture"},  # settings, redaction, the pre-check, the walk, the encoder
    {"stores"},  # the public store interface and its backends
    {"_recording"},  # the current session and call, the record, the writer, the spill
    {"_sessions"},  # entry, the no-session policy, run identity
    {"_calls"},  # call scopes, @tool, later calls, model calls
    {"_undo", "_instrumentation", "_otlp", "_viewer", "_history"},  # the features
    {"_configure", "_kit"},  # the facades: configure() and the adapter kit
    {"__init__"},  # the public API
    {"_cli", "testing"},  # the command line; the pytest plugin for users' tests
    {"__main__"},
]
LAYER_OF = {unit: n for n, units in enumerate(LAYERS) for unit in units}
#: The most modules a folder of ``core/`` holds.
MAX_MODULES = 12


def _modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``root`` (the package ``package``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def _imports(name: str, path: Path) -> list[tuple[int, str, str | None]]:
    """(line, imported module, imported name or None) for each import in the file, relative ones resolved."""
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found += [(node.lineno, module, alias.name) for alias in node.names]
    return found


def _unit(module: str, package: str) -> str | None:
    """The unit of the layering a module of ``package`` belongs to (its subpackage, or itself at the top)."""
    if module == package:
        return "__init__"
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1 :].split(".", maxsplit=1)[0]


def _exports(path: Path) -> set[str]:
    """The names a package's ``__init__`` lists in ``__all__``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def layering_problems(root: Path, package: str = "openprogram") -> list[str]:
    """Every import of the tree at ``root`` that breaks the layering, as ``file:line: what``."""
    modules = _modules(root, package)
    doors = {m: _exports(p) for m, p in modules.items() if p.name == "__init__.py" and m != package}
    problems = []
    for name, path in modules.items():
        source = _unit(name, package)
        where = f"{path.relative_to(root.parent)}"
        for line, module, imported in _imports(name, path):
            target = module if f"{module}.{imported}" not in modules else f"{module}.{imported}"
            if target.startswith(f"{package}.integrations"):
                if module != f"{package}.integrations":
                    problems.append(f"{where}:{line}: imports an adapter ({target}); the core reads only the registry")
                continue
            unit = _unit(target, package)
            if unit is None:
                continue
            if unit not in LAYER_OF or source not in LAYER_OF:
                problems.append(f"{where}:{line}: {unit if unit not in LAYER_OF else source} is in no layer")
                continue
            if unit == source:
                continue
            if LAYER_OF[unit] > LAYER_OF[source]:
                problems.append(f"{where}:{line}: {source} imports {target}, a layer up")
            elif LAYER_OF[unit] == LAYER_OF[source]:
                problems.append(f"{where}:{line}: {source} imports {target}, beside it in its layer")
            door = f"{package}.{unit}"
            if door in doors:
                if door not in (target, module):
                    problems.append(f"{where}:{line}: reaches past {door}'s __init__ to {target}")
                elif imported is not None and imported not in doors[door]:
                    problems.append(f"{where}:{line}: {imported} is not in {door}.__all__")
    return problems


def test_every_import_of_the_core_points_down_and_through_a_door() -> None:
    assert layering_problems(ROOT / "core") == []


def test_the_layering_check_finds_an_import_up_a_layer_and_one_past_a_door(tmp_path: Path) -> None:
    core = tmp_path / "core"
    for package in ("_runtime", "_calls", "_undo", "_otlp"):
        (core / package).mkdir(parents=True)
    (core / "__init__.py").write_text("")
    (core / "_runtime" / "__init__.py").write_text("from .ids import new_id\n__all__ = ['new_id']\n")
    (core / "_runtime" / "ids.py").write_text("from .._calls import tool\n\ndef new_id(): ...\ndef secret(): ...\n")
    (core / "_calls" / "__init__.py").write_text("__all__ = ['tool']\n")
    (core / "_calls" / "tool.py").write_text(
        "from .._runtime.ids import new_id\nfrom .._runtime import secret\nfrom .._undo import undo\n"
    )
    (core / "_undo" / "__init__.py").write_text("__all__ = ['undo']\n")
    (core / "_otlp" / "__init__.py").write_text("def f():\n    from .._undo import undo\n__all__ = []\n")
    problems = layering_problems(core)
    assert any("_runtime/ids.py:1: _runtime imports openprogram._calls.tool, a layer up" in p for p in problems)
    assert any("_calls/tool.py:1: reaches past openprogram._runtime's __init__" in p for p in problems)
    assert any("_calls/tool.py:2: secret is not in openprogram._runtime.__all__" in p for p in problems)
    assert any("_calls/tool.py:3: _calls imports openprogram._undo, a layer up" in p for p in problems)
    assert any("_otlp/__init__.py:2: _otlp imports openprogram._undo, beside it in its layer" in p for p in problems)
    assert len(problems) == 5, problems


@pytest.mark.parametrize(
    "folder", sorted(p for p in (ROOT / "core").rglob("*") if p.is_dir() and p.name != "__pycache__")
)
def test_no_folder_of_the_core_holds_more_than_a_dozen_modules(folder: Path) -> None:
    assert len([p for p in folder.glob("*.py") if p.name != "__init__.py"]) <= MAX_MODULES


def _needed_packages() -> dict[str, set[str]]:
    """Adapter package -> the packages of the adapters it needs (``Integration.needs``), whose doors it may use."""
    import importlib

    from openprogram.integrations import INTEGRATIONS

    def package(name: str) -> str:
        return INTEGRATIONS[name].partition(":")[0].split(".")[2]

    needed: dict[str, set[str]] = {}
    for name, target in INTEGRATIONS.items():
        module, _, attr = target.partition(":")
        needs = getattr(importlib.import_module(module), attr).needs
        needed[package(name)] = {f"openprogram.integrations.{package(need)}" for need in needs}
    return needed


def test_adapters_import_only_the_public_api_and_the_kit_from_the_core() -> None:
    problems = []
    needed = _needed_packages()
    for name, path in _modules(ROOT / "integrations", "openprogram.integrations").items():
        framework = name.split(".")[2] if name.count(".") >= 2 else None
        for line, module, imported in _imports(name, path):
            target = f"{module}.{imported}" if imported else module
            where = f"{path.relative_to(ROOT)}:{line}"
            if module.startswith("openprogram.integrations."):
                if module in needed.get(framework or "", ()):
                    continue  # the door of an adapter it needs (LangGraph's LangChain)
                if module.split(".")[2] != framework:
                    problems.append(f"{where}: imports another framework's adapter ({module})")
            elif module.startswith("openprogram.") and module != "openprogram._kit":
                problems.append(f"{where}: imports {target}; adapters use openprogram and openprogram._kit")
    assert problems == []


def test_tests_and_benchmarks_import_the_core_through_its_doors() -> None:
    # A module path below a private subpackage: `openprogram._recording.writer`, not the door `openprogram._recording`.
    past_a_door = re.compile(r"(?:from|import)\s+openprogram\.(_[a-z]+|stores\._[a-z]+)\.\w+")
    problems = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            if past_a_door.search(text):
                problems.append(f"{path.relative_to(ROOT)}:{number}: {text.strip()}")
    assert problems == []


def test_tests_and_benchmarks_never_rebind_a_name_through_a_door() -> None:
    # Assigning through a door rebinds the door's copy of a name, not the module that reads it: a silent no-op.
    doors = "|".join(sorted(p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").exists()))
    rebinding = re.compile(rf"(?<![\w.])(?:openprogram\.)?({doors})\.\w+\s*=[^=]|setattr\((?:openprogram\.)?({doors}),")
    problems = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            if rebinding.search(text):
                problems.append(f"{path.relative_to(ROOT)}:{number}: {text.strip()}")
    assert problems == []


def test_every_package_of_the_source_is_installed() -> None:
    with open(ROOT / "pyproject.toml", "rb") as file:
        declared = set(tomllib.load(file)["tool"]["setuptools"]["packages"])
    found = {
        name
        for root, package in ((ROOT / "core", "openprogram"), (ROOT / "integrations", "openprogram.integrations"))
        for name, path in _modules(root, package).items()
        if path.name == "__init__.py"
    }
    assert found == declared
