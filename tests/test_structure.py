"""The harness's shape: a package per stage, imports only downward, argparse only in the CLI, small modules."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness"
# The stages in data-flow order: a package may import its own modules and those of the packages before it.
STAGES = ("core", "link", "analysis", "rig", "runs", "studies", "cli", "pytest_plugin")
# The most lines a file may have before it is split, and the folders each limit covers.
MAX_LINES = 600  # a Python file
MAX_C_LINES = 800  # a C source or header
PYTHON_FOLDERS = ("harness", "tests", "tools", "benchmarks")
C_FOLDERS = ("harness", "firmware")


def _modules() -> list[Path]:
    return sorted(p for p in HARNESS.rglob("*.py") if ".venv" not in p.parts)


def _package(path: Path) -> str:
    parts = path.relative_to(HARNESS).parts
    return parts[0] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every `import harness.X` / `from harness.X import names` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("harness")]
    return found


def test_every_package_is_a_known_stage():
    packages = {p.name for p in HARNESS.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(STAGES)
    assert {p.name for p in HARNESS.glob("*.py")} == {"__init__.py"}, "every module belongs to a stage's package"


def test_imports_only_go_downward():
    upward = []
    for path in _modules():
        own = _package(path)
        for module, _ in _imports(path):
            parts = module.split(".")
            if len(parts) < 2 or parts[1] not in STAGES:
                continue
            if STAGES.index(parts[1]) > STAGES.index(own):
                upward.append(f"{path.relative_to(HARNESS)} imports {module}")
    assert not upward, upward


def test_no_private_name_crosses_a_package():
    crossing = []
    for path in _modules():
        for module, names in _imports(path):
            parts = module.split(".")
            if len(parts) >= 2 and parts[1] != _package(path):
                crossing += [f"{path.relative_to(HARNESS)}: {module}.{n}" for n in names if n.startswith("_")]
    assert not crossing, crossing


def test_argparse_lives_in_the_cli_only():
    users = [str(p.relative_to(HARNESS)) for p in _modules()
             if _package(p) != "cli" and any(m == "argparse" for m in _stdlib_imports(p))]
    assert not users, users


def _stdlib_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names] + \
        [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]


def _files(folders: tuple[str, ...], suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*")
                  if p.suffix in suffixes and p.is_file() and ".venv" not in p.parts)


def _too_long(paths: list[Path], limit: int, root: Path = ROOT) -> dict[str, int]:
    """{file under root: lines} for every file of paths over limit lines."""
    lines = {p: len(p.read_text(errors="replace").splitlines()) for p in paths}
    return {str(p.relative_to(root)): n for p, n in lines.items() if n > limit}


def test_no_file_is_too_long_to_read():
    """No Python file under harness/, tests/, tools/, benchmarks/ over MAX_LINES, no C source or header under
    harness/ and firmware/ over MAX_C_LINES: every offender in one message."""
    long = {**_too_long(_files(PYTHON_FOLDERS, (".py",)), MAX_LINES),
            **_too_long(_files(C_FOLDERS, (".c", ".h")), MAX_C_LINES)}
    assert not long, f"files over {MAX_LINES} lines (Python) or {MAX_C_LINES} lines (C): {long}"


def test_the_rules_catch_what_they_are_for(tmp_path):
    """The checks above read real imports: an upward and a private import in a scratch module are seen."""
    scratch = tmp_path / "m.py"
    scratch.write_text("from harness.runs.plan import _amount\nimport argparse\n")
    assert _imports(scratch) == [("harness.runs.plan", ["_amount"])]
    assert "argparse" in _stdlib_imports(scratch)
    (tmp_path / "long.c").write_text("x\n" * (MAX_C_LINES + 1))
    (tmp_path / "short.h").write_text("x\n" * MAX_C_LINES)
    assert _too_long(sorted(tmp_path.glob("*.[ch]")), MAX_C_LINES, tmp_path) == {"long.c": MAX_C_LINES + 1}
