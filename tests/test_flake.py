"""flake.nix: parses, and evaluates against a stub nixpkgs to the shells the docs promise.

Nixpkgs cannot be fetched here, so the flake is evaluated with ``--override-input`` pointing
``nixpkgs`` at ``tests/fixtures/nixpkgs-stub`` (which records what each shell asks for) and
``miniwob`` at a stand-in directory. Flakes only see git-tracked files, so the evaluation runs in
a throwaway git repository holding a copy of ``flake.nix``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
MINIWOB_REV = "7fd85d71a4b60325c6585396ec4f48377d049838"
LINUX = ("x86_64-linux", "aarch64-linux")
DARWIN = ("x86_64-darwin", "aarch64-darwin")
FAMILIES = ("core", "jax", "mario", "multi", "heavy", "visual", "web")
# Shells that need Mesa (EGL) or nixpkgs' Chromium: Linux only.
LINUX_ONLY = ("visual", "web")
NIX_FLAGS = ["--extra-experimental-features", "nix-command flakes"]

needs_nix = pytest.mark.skipif(
    shutil.which("nix") is None or shutil.which("nix-instantiate") is None,
    reason="nix is not installed (CI installs it with: apt-get install -y nix-bin)",
)

# What the stub's mkShell received, minus the bookkeeping it adds itself.
SUMMARY = """shells: builtins.mapAttrs (_: s: {
  inherit (s) name shellHook;
  packages = map (p: p.pname) s.packages;
  env = removeAttrs s [ "packages" "shellHook" "name" "stubShell" "inputDerivation" ];
}) shells"""


def _nix_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["HOME"] = str(tmp / "home")
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    return env


@pytest.fixture(scope="module")
def flake_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("flake")
    shutil.copy(REPO / "flake.nix", repo / "flake.nix")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "flake.nix"], cwd=repo, check=True)
    return repo


def nix_eval(repo: Path, attr: str, apply: str | None = None):
    cmd = [
        "nix",
        *NIX_FLAGS,
        "eval",
        "--json",
        "--no-write-lock-file",
        f".#{attr}",
        "--override-input",
        "nixpkgs",
        f"path:{FIXTURES / 'nixpkgs-stub'}",
        "--override-input",
        "miniwob",
        f"path:{FIXTURES / 'miniwob-stub'}",
    ]
    if apply:
        cmd += ["--apply", apply]
    proc = subprocess.run(
        cmd, cwd=repo, capture_output=True, text=True, env=_nix_env(repo.parent), timeout=120
    )
    assert proc.returncode == 0, f"nix eval .#{attr} failed:\n{proc.stderr}"
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def shells(flake_repo) -> dict[str, dict]:
    return {
        system: nix_eval(flake_repo, f"devShells.{system}", SUMMARY) for system in LINUX + DARWIN
    }


def sync_extras(shell: dict) -> list[str]:
    match = re.search(r"uv sync --locked((?: --extra [\w.-]+)+)", shell["shellHook"])
    assert match, "shell hook does not run 'uv sync --locked --extra ...'"
    return match.group(1).split()[1::2]


@needs_nix
def test_flake_parses():
    proc = subprocess.run(
        ["nix-instantiate", "--parse", str(REPO / "flake.nix")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


@needs_nix
def test_miniwob_input_is_pinned_to_the_commit(tmp_path):
    expr = f"(import {REPO / 'flake.nix'}).inputs.miniwob"
    proc = subprocess.run(
        ["nix-instantiate", "--eval", "--json", "--strict", "--expr", expr],
        capture_output=True,
        text=True,
        env=_nix_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    miniwob = json.loads(proc.stdout)
    assert miniwob["flake"] is False
    assert miniwob["url"].endswith(f"/miniwob-plusplus/{MINIWOB_REV}")


@needs_nix
def test_shell_names_per_system(shells):
    for system in LINUX:
        assert set(shells[system]) == {*FAMILIES, "default"}, system
    for system in DARWIN:
        # No Mesa/EGL or Playwright browsers from nixpkgs on macOS: no web or visual shell there.
        assert set(shells[system]) == {*FAMILIES, "default"} - set(LINUX_ONLY), system


@needs_nix
def test_default_shell_is_core(shells):
    for system in LINUX + DARWIN:
        assert shells[system]["default"] == shells[system]["core"]


@needs_nix
def test_every_shell_provides_python_uv_and_media_tools(shells):
    for system, by_name in shells.items():
        for name, shell in by_name.items():
            packages = shell["packages"]
            # gym-super-mario-bros 9 and nes-py 9 publish only for Python 3.13.
            python = "python3.13" if name == "mario" else "python3.11"
            for wanted in (python, "uv", "ffmpeg", "swig"):
                assert wanted in packages, f"{system}.{name} lacks {wanted}"
            assert shell["env"]["UV_PYTHON"].endswith(f"-{python}/bin/{python}")
            assert shell["env"]["UV_PYTHON_DOWNLOADS"] == "never"


@needs_nix
def test_each_family_syncs_its_own_venv_from_its_extras(shells):
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = set(pyproject["project"]["optional-dependencies"])
    for family in FAMILIES:
        shell = shells["x86_64-linux"][family]
        assert shell["name"] == f"evopolicygym-{family}"
        assert shell["env"]["UV_PROJECT_ENVIRONMENT"] == f".venv-{family}"
        extras = sync_extras(shell)
        assert extras[0] == family
        assert "dev" in extras, "every shell must be able to run the tests"
        assert set(extras) <= declared, f"{family} syncs undeclared extras {set(extras) - declared}"
        assert '. "$UV_PROJECT_ENVIRONMENT/bin/activate"' in shell["shellHook"]


@needs_nix
def test_no_shell_syncs_extras_that_uv_declares_conflicting(shells):
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    conflicts = [
        {item["extra"] for item in group} for group in pyproject["tool"]["uv"]["conflicts"]
    ]
    assert {"mario", "visual"} in conflicts and {"mario", "web"} in conflicts
    for family in FAMILIES:
        extras = set(sync_extras(shells["x86_64-linux"][family]))
        for group in conflicts:
            assert not group <= extras, f"{family} shell syncs conflicting extras {group}"


@needs_nix
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed (pip install uv)")
def test_shell_sync_commands_resolve_from_uv_lock(shells, tmp_path):
    def dry_run(extras: list[str]) -> subprocess.CompletedProcess:
        flags = [arg for extra in extras for arg in ("--extra", extra)]
        env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(tmp_path / "venv")}
        return subprocess.run(
            ["uv", "sync", "--locked", "--dry-run", "--offline", *flags],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    for family in FAMILIES:
        proc = dry_run(sync_extras(shells["x86_64-linux"][family]))
        assert proc.returncode == 0, f"{family}: {proc.stderr}"
    # The same check refuses a combination the lock cannot satisfy.
    assert dry_run(["mario", "visual"]).returncode != 0
    assert not (tmp_path / "venv").exists()


@needs_nix
def test_linux_shells_render_mujoco_through_egl(shells):
    for system in LINUX:
        for name, shell in shells[system].items():
            assert shell["env"]["MUJOCO_GL"] == "egl", f"{system}.{name}"
            hook = shell["shellHook"]
            ld_path = re.search(r'export LD_LIBRARY_PATH="([^"]*)"', hook).group(1)
            for lib in ("-mesa/lib", "-libglvnd/lib", "-libGL/lib", "-gcc-lib/lib"):
                assert lib in ld_path, f"{system}.{name} LD_LIBRARY_PATH lacks {lib}"
            assert "-mesa/share/glvnd/egl_vendor.d" in hook
    for system in DARWIN:
        for name, shell in shells[system].items():
            assert "MUJOCO_GL" not in shell["env"], f"{system}.{name}"
            assert "-mesa/" not in shell["shellHook"]


@needs_nix
def test_web_shell_serves_miniwob_and_nixpkgs_chromium(shells):
    for system in LINUX:
        web = shells[system]["web"]
        assert "chromium" in web["packages"]
        env = web["env"]
        assert re.fullmatch(r"file:///nix/store/[^/]+/miniwob/html/miniwob/", env["MINIWOB_URL"])
        assert re.fullmatch(r"/nix/store/[^/]+-chromium/bin/chromium", env["EVOPOLICYGYM_CHROMIUM"])
        assert env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] == "1"
        for family in set(FAMILIES) - {"web"}:
            assert "MINIWOB_URL" not in shells[system][family]["env"]


@needs_nix
def test_checks_run_the_tests_and_build_every_shell(flake_repo, shells):
    summary = """checks: builtins.mapAttrs (_: c: {
      tests = { inherit (c.tests) script inputs; };
      shells = c.shells.entries;
    }) checks"""
    checks = nix_eval(flake_repo, "checks", summary)
    assert set(checks) == set(LINUX)
    for system in LINUX:
        assert sorted(checks[system]["shells"]) == sorted(shells[system])
        assert "python -m pytest" in checks[system]["tests"]["script"]
        assert "python3.11-env" in checks[system]["tests"]["inputs"]
