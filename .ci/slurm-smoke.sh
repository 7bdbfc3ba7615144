#!/usr/bin/env bash
# The smoke suite on a real one-node SLURM cluster: bring it up, run the `slurm`-marked pytest
# (Snakemake with workflow/profiles/slurm, every job an sbatch job), always tear it down.
# Needs root and apt (Debian/Ubuntu). Usage: bash .ci/slurm-smoke.sh [extra pytest args]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
export SLURM_DIR=${SLURM_DIR:-/tmp/evopolicygym-slurm}
trap 'bash "$REPO/.ci/slurm-down.sh"' EXIT
bash "$REPO/.ci/slurm-up.sh"
cd "$REPO"
.venv/bin/pytest -m slurm tests/e2e/test_snakemake_slurm.py "$@"
