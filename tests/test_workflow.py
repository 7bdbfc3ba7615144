"""The Snakemake driver of `evopolicygym suite`: where it finds the workflow, its errors, and a
real plan through Snakemake's API (the whole run is tested in tests/e2e/test_snakemake.py)."""

from pathlib import Path

import pytest

from evopolicygym.suites import SuiteConfigError
from evopolicygym.workflow import WORKFLOW_VARIABLE, run_suite_workflow, workflow_snakefile

REPO = Path(__file__).resolve().parents[1]


def test_the_checkout_snakefile_is_found_by_default(monkeypatch):
    monkeypatch.delenv(WORKFLOW_VARIABLE, raising=False)
    assert workflow_snakefile() == REPO / "Snakefile"


def test_the_variable_names_a_snakefile_or_its_directory(monkeypatch, tmp_path):
    (tmp_path / "Snakefile").write_text("rule all:\n    input: []\n")
    monkeypatch.setenv(WORKFLOW_VARIABLE, str(tmp_path))
    assert workflow_snakefile() == tmp_path / "Snakefile"
    monkeypatch.setenv(WORKFLOW_VARIABLE, str(tmp_path / "Snakefile"))
    assert workflow_snakefile() == tmp_path / "Snakefile"
    monkeypatch.setenv(WORKFLOW_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=WORKFLOW_VARIABLE):
        workflow_snakefile()


def test_a_bad_suite_file_fails_before_snakemake_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad-suite.toml"
    bad.write_text("[suite]\nname = 'x'\n")
    with pytest.raises(SuiteConfigError, match="key 'root'"):
        run_suite_workflow(bad, dry_run=True)
    assert not (tmp_path / ".snakemake").exists()


@pytest.mark.slow
def test_a_dry_run_plans_the_suite_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(WORKFLOW_VARIABLE, raising=False)
    assert run_suite_workflow(REPO / "config" / "smoke-suite.toml", dry_run=True)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "results").exists()
