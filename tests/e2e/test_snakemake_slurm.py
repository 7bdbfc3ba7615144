"""The offline smoke suite on a real SLURM cluster through workflow/profiles/slurm: every job is
an sbatch job. Needs a running cluster (.ci/slurm-up.sh starts a one-node one as root)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
# Jobs call `evopolicygym` and sbatch exports PATH: put this environment's scripts first.
ENV = {
    **os.environ,
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
}

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("sbatch") is None,
        reason="no SLURM here (sbatch not on PATH); start a one-node cluster with "
        "`bash .ci/slurm-up.sh` (root) or run `bash .ci/slurm-smoke.sh`",
    ),
]


def test_smoke_suite_completes_on_slurm(tmp_path):
    idle = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    if "idle" not in idle.stdout and "mix" not in idle.stdout:
        pytest.skip(
            f"SLURM has no usable node (sinfo: {idle.stdout.strip() or idle.stderr.strip()})"
        )
    started = time.perf_counter()
    # The cluster has no accounting daemon: poll with squeue, account "none", short first wait.
    # SIGKILL on timeout: the plugin ignores SIGTERM while it waits for jobs.
    result = subprocess.run(
        [
            "timeout", "-s", "KILL", "600",
            sys.executable, "-m", "snakemake", "smoke",
            "--snakefile", str(REPO / "Snakefile"),
            "--directory", str(tmp_path),
            "--workflow-profile", str(REPO / "workflow/profiles/slurm"),
            "--jobs", "4",
            "--latency-wait", "5",
            "--slurm-status-command", "squeue",
            "--slurm-init-seconds-before-status-checks", "5",
            "--default-resources", "slurm_partition=debug", "slurm_account=none",
            "mem_mb=1024", "runtime=10",
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    submitted = set(re.findall(r"has been submitted with SLURM jobid (\d+)", output))
    assert len(submitted) == 4, output[-4000:]  # one sbatch job per run; the report is local
    table = pd.read_parquet(tmp_path / "results/smoke/results.parquet")
    assert set(table["status"]) == {"completed"} and len(table) == 4
    assert (tmp_path / "results/smoke/report.html").stat().st_size > 10_000
    print(f"smoke suite on SLURM: {elapsed:.0f} s, {len(submitted)} sbatch jobs")
