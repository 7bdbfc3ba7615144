# Shared wiring: the suite matrices (from evopolicygym.suites, the code the CLI uses), the
# split directories they read, the environments to check, and lookups used by the rules.
# Kept light: every cluster job re-executes this file.

import shlex
import sys
from pathlib import Path

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
# The CLI of the interpreter running Snakemake (also on cluster nodes): works without an
# activated environment, and is not a param, so moving the environment re-runs nothing.
EVOPOLICYGYM = f"{shlex.quote(sys.executable)} -m evopolicygym.cli"
RESULTS = config["results"]
LOGS = config["logs"]
ARCHIVE = REPO / config["report"]["archive"]
# Output patterns shared by a rule and the rules that expand them (plain strings: with a
# default storage provider, rules.<name>.output holds storage objects that expand() rejects).
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
