# Shared wiring: the suite matrices (from evopolicygym.suites, the code the CLI uses), the
# split directories they read, the environments to check, and lookups used by the rules.
# Kept light: every cluster job re-executes this file.

import shutil
from pathlib import Path

from snakemake.exceptions import WorkflowError

from evopolicygym.protocol import HARNESS_VERSION
from evopolicygym.suites import (
    exact_pattern,
    load_suite,
    load_suites,
    merged_data_requests,
)

REPO = Path(workflow.basedir)
SUITES = load_suites([*config["suites"], config["smoke_suite"]], base=REPO)
SMOKE = load_suite(REPO / config["smoke_suite"]).slug
JOB_BY_ROOT = {str(job.root): job for suite in SUITES.values() for job in suite.jobs}
DATA = merged_data_requests(SUITES)
if shutil.which("evopolicygym") is None:
    raise WorkflowError(
        "`evopolicygym` is not on PATH: activate the project environment "
        "(source .venv/bin/activate) or run `uv run snakemake ...`"
    )
RESULTS = config["results"]
LOGS = config["logs"]
ARCHIVE = REPO / config["report"]["archive"]
# Output patterns shared by a producing step and the steps that expand them (plain strings: a
# default storage provider turns rules.<name>.output into objects that expand() rejects).
CHECK_RESULT = f"{RESULTS}/check-envs/envs/{{env}}.json"
REPORT = f"{RESULTS}/{{suite}}"


def checked_envs():
    """Ids for check_envs: the configured list, else every curated environment."""
    if config["check_envs"]["envs"]:
        return config["check_envs"]["envs"]
    from evopolicygym.envs import default_registry

    return default_registry().ids()


def split_files(job):
    """The split files a run reads (none when it uses the environment's own pools)."""
    data = job.config.run.data
    if data is None:
        return []
    return [f"{data}/{split}.json" for split in ("train", "valid", "heldout")]


def suite_records(wildcards):
    return [str(job.record_path) for job in SUITES[wildcards.suite].jobs]


def preflight(dag):
    """Stop before any job when a suite with a run to do has a missing agent CLI or an
    environment that cannot be built (one message naming each)."""
    from evopolicygym.preflight import PreflightError, require_ready

    slugs = {
        job.rule.name.removeprefix("run_")
        for job in dag.needrun_jobs()
        if job.rule.name.startswith("run_")
    }
    try:
        require_ready(SUITES[slug] for slug in sorted(slugs) if slug in SUITES)
    except PreflightError as error:
        raise WorkflowError(str(error)) from None
