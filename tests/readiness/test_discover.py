import json
import subprocess
import sys

import pytest

from evopolicygym.readiness.discover import bulk_ids, discover, discovery_markdown


def test_bulk_ids_cover_the_installed_registry_except_adapters():
    ids = bulk_ids()
    assert "gymnasium/CartPole-v1" in ids
    assert "gymnasium/GymV26Environment-v0" not in ids
    assert ids == sorted(ids)


def test_discover_groups_the_registry_and_marks_curated_ids():
    found = discover()
    families = {family.key: family for family in found.families}
    assert found.total == sum(f.count for f in found.families)
    assert "CartPole-v1" in families["classic_control"].curated
    assert "MountainCar-v0" in families["classic_control"].ids
    packages = {p.name: p for p in found.packages}
    assert packages["gymnasium"].status == "installed" and packages["gymnasium"].version
    markdown = discovery_markdown(found)
    assert "- [x] `CartPole-v1`" in markdown
    assert "| Classic Control | base |" in markdown


@pytest.mark.slow
def test_cli_writes_json_and_markdown(tmp_path):
    output, markdown = tmp_path / "d.json", tmp_path / "list.md"
    command = [sys.executable, "-m", "evopolicygym.cli", "discover-envs"]
    command += ["--output", str(output), "--markdown", str(markdown)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    totals = json.loads(done.stdout)
    document = json.loads(output.read_text())
    assert totals["total"] == document["total"] > 0
    assert markdown.read_text().startswith("# Installed environments")
