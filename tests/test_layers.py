"""The layers contract in pyproject.toml ([tool.importlinter]): the package keeps it, and an
import that points up a layer, even one hidden inside a function, breaks it. The broken cases
run import-linter on a copy of the package with one module added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "evopolicygym"


def lint_imports(source: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the repository's contract over the package found in ``source``."""
    entry = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    command = [sys.executable, "-c", entry, str(REPO / "pyproject.toml")]
    environment = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        [*command, "--no-cache", "--no-logo"],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def package_copy(tmp_path) -> Path:
    """A copy of ``src/`` (the package only) that import-linter reads instead of the checkout."""
    shutil.copytree(
        PACKAGE, tmp_path / "src" / "evopolicygym", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path / "src"


def test_the_contract_places_every_top_level_module():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = config["contracts"]
    placed = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert placed == modules | packages
    assert contract["exhaustive"] is True


def test_the_package_keeps_its_layers(tmp_path):
    done = lint_imports(REPO / "src", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "evopolicygym layers KEPT" in done.stdout


def test_an_upward_import_inside_a_function_breaks_the_contract(package_copy, tmp_path):
    # The arrow that used to close a cycle: an environment module reaching the readiness tools,
    # imported lazily as the old code did.
    (package_copy / "evopolicygym" / "envs" / "_upward.py").write_text(
        "def calibrate_later(spec):\n"
        "    from evopolicygym.readiness.calibration import calibrate\n\n"
        "    return calibrate(spec)\n"
    )
    done = lint_imports(package_copy, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "evopolicygym layers BROKEN" in done.stdout
    assert "evopolicygym.envs._upward -> evopolicygym.readiness.calibration" in done.stdout


def test_an_import_between_independent_siblings_breaks_the_contract(package_copy, tmp_path):
    (package_copy / "evopolicygym" / "agents" / "_judge_peek.py").write_text(
        "from evopolicygym.judge import Judge\n"
    )
    done = lint_imports(package_copy, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "evopolicygym.agents._judge_peek -> evopolicygym.judge" in done.stdout


def test_a_module_outside_every_layer_breaks_the_contract(package_copy, tmp_path):
    (package_copy / "evopolicygym" / "helpers.py").write_text('"""Placed in no layer."""\n')
    done = lint_imports(package_copy, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "evopolicygym.helpers" in done.stdout
