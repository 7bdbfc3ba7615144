"""workflow/scripts/setup.sh: argument handling, the plan it prints, and clear offline failures.

The script is copied into a throwaway directory laid out like the repository, so that nothing
here touches the project's virtual environment or its third_party/ directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "workflow" / "scripts" / "setup.sh"
MINIWOB_REV = "7fd85d71a4b60325c6585396ec4f48377d049838"


@pytest.fixture
def checkout(tmp_path) -> Path:
    (tmp_path / "repo" / "workflow" / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / "repo" / "workflow" / "scripts" / "setup.sh")
    return tmp_path / "repo"


def setup(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(repo / "workflow" / "scripts" / "setup.sh"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


def test_help_names_every_step_and_the_miniwob_commit(checkout):
    proc = setup(checkout, "--help")
    assert proc.returncode == 0
    for step in ("--smoke", "--core", "--web", "--atari-roms", "--no-system", "--dry-run"):
        assert step in proc.stdout
    assert MINIWOB_REV in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Usage:"),
        (("--no-system",), "choose at least one step"),
        (("--core", "--bogus"), "unknown option --bogus"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(checkout, args, message):
    proc = setup(checkout, *args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_dry_run_plans_one_locked_sync_with_all_requested_extras(checkout):
    proc = setup(checkout, "--smoke", "--core", "--atari-roms", "--no-system", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    syncs = [line for line in proc.stdout.splitlines() if line.startswith("+ uv sync")]
    assert syncs == [
        "+ uv sync --locked --inexact --compile-bytecode --extra dev --extra core --extra cluster"
        " --extra atari"
    ]
    # --no-system lists the Debian packages instead of installing them, each once.
    listed = next(line for line in proc.stdout.splitlines() if "install them yourself" in line)
    packages = listed.split(": ", 1)[1].split()
    assert len(packages) == len(set(packages))
    assert {"bubblewrap", "ffmpeg", "libegl1", "libosmesa6", "swig"} <= set(packages)
    assert "apt-get" not in proc.stdout
    assert not (checkout / "third_party").exists()


def test_dry_run_web_plans_the_pinned_checkout_and_chromium(checkout):
    proc = setup(checkout, "--web", "--no-system", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    target = checkout / "third_party" / "miniwob-plusplus"
    assert f"checkout --quiet {MINIWOB_REV}" in proc.stdout
    assert (
        f"git clone --quiet https://github.com/Farama-Foundation/miniwob-plusplus.git {target}"
        in proc.stdout
    )
    assert f"MiniWoB++ pages: {target}/miniwob/html/miniwob/" in proc.stdout
    listed = next(line for line in proc.stdout.splitlines() if "install them yourself" in line)
    assert "chromium" in listed.split(": ", 1)[1].split()
    assert "playwright install" not in proc.stdout


def _no_uv_sync(checkout: Path, tmp_path: Path) -> dict[str, str]:
    """PATH with a uv that only records its arguments, so the test never installs anything."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text('#!/bin/sh\necho "uv $*" >> "$UV_CALLS"\n')
    (bin_dir / "uv").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "UV_CALLS": str(tmp_path / "uv.calls")}


def test_web_falls_back_to_the_wheel_pages_when_the_source_is_unreachable(checkout, tmp_path):
    env = _no_uv_sync(checkout, tmp_path)
    proc = setup(
        checkout,
        "--web",
        "--no-system",
        EVOPOLICYGYM_MINIWOB_SOURCE=str(tmp_path / "nowhere"),
        **env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "could not clone MiniWoB++" in proc.stdout
    assert "EVOPOLICYGYM_MINIWOB_SOURCE" in proc.stdout
    assert "MiniWoB++ pages: the miniwob wheel's" in proc.stdout
    assert "--extra web" in (tmp_path / "uv.calls").read_text()
    assert not (checkout / "third_party" / "miniwob-plusplus").exists()


def test_web_drops_a_clone_without_the_pinned_commit(checkout, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=mirror, check=True)
    (mirror / "README").write_text("not MiniWoB++\n")
    subprocess.run([*git, "add", "README"], cwd=mirror, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=mirror, check=True)
    env = _no_uv_sync(checkout, tmp_path)
    proc = setup(checkout, "--web", "--no-system", EVOPOLICYGYM_MINIWOB_SOURCE=str(mirror), **env)
    assert proc.returncode == 0, proc.stderr
    assert f"commit {MINIWOB_REV} is not in {mirror}" in proc.stdout
    assert not (checkout / "third_party" / "miniwob-plusplus").exists()


def test_missing_uv_is_reported_with_the_install_command(checkout, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "git", "grep", "sort", "env"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    proc = setup(checkout, "--smoke", "--no-system", PATH=str(bin_dir))
    assert proc.returncode == 1
    assert "uv is not installed" in proc.stderr
    assert "pip install uv" in proc.stderr
