"""``evopolicygym suite``: a suite through the repository's Snakemake workflow, via Snakemake's
Python API, so that it runs the same rules, caching and report as ``snakemake suite_<slug>``.

The suite model the Snakefile reads is :mod:`evopolicygym.suites`; this module only drives
Snakemake.
"""

from __future__ import annotations

import os
from pathlib import Path

from snakemake.api import SnakemakeApi
from snakemake.settings.enums import RerunTrigger
from snakemake.settings.types import (
    ConfigSettings,
    DAGSettings,
    ExecutionSettings,
    OutputSettings,
    ResourceSettings,
)

from .suites import load_suite

__all__ = ["RERUN_TRIGGERS", "WORKFLOW_VARIABLE", "run_suite_workflow", "workflow_snakefile"]

WORKFLOW_VARIABLE = "EVOPOLICYGYM_WORKFLOW"
# What workflow/profiles/default sets for the `snakemake` command line; the API does not read
# profiles, so `run_suite_workflow` applies the same settings itself.
RERUN_TRIGGERS = ("mtime", "params", "input")


def workflow_snakefile() -> Path:
    """The repository's Snakefile: ``$EVOPOLICYGYM_WORKFLOW`` (a Snakefile or the directory
    holding it), else the checkout this package was imported from. Raises
    ``FileNotFoundError`` saying how to point at a checkout."""
    explicit = os.environ.get(WORKFLOW_VARIABLE)
    candidates = [Path(explicit)] if explicit else [Path(__file__).resolve().parents[2]]
    for candidate in candidates:
        snakefile = candidate if candidate.is_file() else candidate / "Snakefile"
        if snakefile.is_file():
            return snakefile
    raise FileNotFoundError(
        f"no Snakefile found (looked in {', '.join(map(str, candidates))}); run from a "
        f"repository checkout or set {WORKFLOW_VARIABLE} to the checkout's Snakefile"
    )


def run_suite_workflow(
    suite_path: str | Path, *, cores: int | None = None, dry_run: bool = False
) -> bool:
    """Run (or with ``dry_run`` only plan) the suite's ``suite_<slug>`` target through the
    Snakemake workflow, in the current directory, via Snakemake's Python API: the same rules,
    caching and report as ``snakemake suite_<slug>``. ``cores`` defaults to the suite's
    ``jobs * threads``. Returns ``True`` when every job succeeded (or the plan was made).
    Raises :class:`~evopolicygym.suites.SuiteConfigError` for a bad suite file before Snakemake
    starts."""
    suite = load_suite(suite_path)
    snakefile = workflow_snakefile()
    path = str(suite.path.resolve())  # the workflow reads suite paths relative to the repo
    config = ConfigSettings(
        configfiles=[snakefile.parent / "config" / "config.yaml"],
        config={"suites": [path], "smoke_suite": path},
    )
    triggers = frozenset(RerunTrigger.parse_choice(t) for t in RERUN_TRIGGERS)
    with SnakemakeApi(OutputSettings(dryrun=dry_run, show_failed_logs=True)) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(
                cores=cores or suite.section.jobs * suite.section.threads
            ),
            config_settings=config,
            snakefile=snakefile,
            workdir=Path.cwd(),
        )
        dag = workflow.dag(DAGSettings(targets={f"suite_{suite.slug}"}, rerun_triggers=triggers))
        try:
            dag.execute_workflow(
                executor="dryrun" if dry_run else "local",
                execution_settings=ExecutionSettings(keep_going=True),
            )
        except Exception as error:  # Snakemake reports failed jobs by raising
            api.print_exception(error)
            return False
    return True
