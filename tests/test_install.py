"""netrepro installs like a package: a plain `pip install` into a fresh virtualenv and a `pip install --target`
both carry platforms/, reports/ and firmware/ (read through importlib.resources), run from a folder outside the
checkout, and report the one version harness/__init__.py writes.

The wheel is built once from a copy of the checkout's tracked files (the checkout itself gets no build/ or
egg-info); the installs take their dependencies from this environment (--no-deps), so they need no network.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from conftest import PACKAGE_SOURCES, copy_checkout

import harness

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = {"ethernut2", "openmv-n6", "openmv-rt1060", "xbox"}
# This environment's own netrepro (its editable install) must not stand in for the one under test.
NOT_SHARED = re.compile(r"^(netrepro|__editable__|harness|__pycache__)", re.I)
PIP = ("-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-index")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source, dist = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    copy_checkout(source, *PACKAGE_SOURCES)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                            "-w", str(dist), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (whl,) = dist.glob("netrepro-*.whl")
    return whl


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def _venv_with_this_environments_packages(where: Path) -> Path:
    """A fresh virtualenv that sees this environment's dependencies (no network), not its netrepro."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    deps = where / "shared-deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not NOT_SHARED.match(entry.name) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    (site,) = (where / "lib").glob("python3*/site-packages")
    (site / "netrepro-deps.pth").write_text(f"{deps}\n")
    return where / "bin" / "python"


def _run(argv: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _listed_platforms(out: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^(\S+): ", out, re.M)}


def _where_data_is(python: Path | str, cwd: Path, env: dict[str, str]) -> list[Path]:
    out = _run([python, "-c", "import harness; from harness.core.paths import PROJECT_ROOT as p; "
                "print(harness.__file__); print(p)"], cwd, env)
    return [Path(line) for line in out.split()]


def test_a_plain_install_runs_from_any_folder(wheel, tmp_path):
    python = _venv_with_this_environments_packages(tmp_path / "venv")
    env = _clean_env()
    _run([python, *PIP, wheel], tmp_path, env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    module, data = _where_data_is(python, elsewhere, env)
    assert module.is_relative_to(tmp_path / "venv") and data.is_relative_to(module.parent), (module, data)
    assert ROOT not in (data, *data.parents)
    assert _listed_platforms(_run([tmp_path / "venv" / "bin" / "netrepro", "platforms"], elsewhere, env)) == PLATFORMS
    version = _run([tmp_path / "venv" / "bin" / "netrepro", "--version"], elsewhere, env)
    assert version.strip() == f"netrepro {harness.__version__}"


def test_a_target_install_runs_from_pythonpath(wheel, tmp_path):
    target = tmp_path / "target"
    _run([sys.executable, *PIP, "--target", target, wheel], tmp_path, _clean_env())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _clean_env(PYTHONPATH=str(target))
    module, data = _where_data_is(sys.executable, elsewhere, env)
    assert module.is_relative_to(target) and data.is_relative_to(target), (module, data)
    out = _run([sys.executable, "-m", "harness.cli", "platforms"], elsewhere, env)
    assert _listed_platforms(out) == PLATFORMS
    # what the data folders hold installed is what the checkout's hold (nothing left out, nothing extra)
    for folder in ("platforms", "reports", "firmware"):
        installed = sorted(p.relative_to(data) for p in (data / folder).rglob("*") if p.is_file())
        tracked = subprocess.run(["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split()
        assert installed == sorted(Path(t) for t in tracked), folder


def test_the_version_is_written_once_and_is_the_wheels(wheel):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "harness.__version__"}
    assert wheel.name.startswith(f"netrepro-{harness.__version__}-")
    out = _run([sys.executable, "-m", "harness.cli", "--version"], ROOT, _clean_env(PYTHONPATH=str(ROOT)))
    assert out.strip() == f"netrepro {harness.__version__}"
