from evopolicygym.judge.checkpoint import code_metrics, mirror, scan, snapshot
from evopolicygym.protocol import Verdict


def test_scan_names_what_is_wrong(tmp_path):
    assert scan(tmp_path).verdict == Verdict.MISSING_POLICY
    (tmp_path / "policy.py").write_text("class Other:\n    pass\n")
    assert "class Policy" in scan(tmp_path).message
    (tmp_path / "helper.py").write_text("def f(:\n")
    problem = scan(tmp_path)
    assert problem.verdict == Verdict.IMPORT_ERROR and "system/helper.py, line 1" in problem.message
    (tmp_path / "helper.py").write_text("def f():\n    return 1\n")
    (tmp_path / "policy.py").write_text("from helper import f\nclass Policy:\n    pass\n")
    assert scan(tmp_path) is None


def test_snapshot_skips_caches_keeps_links_and_mirror_restores(tmp_path):
    system = tmp_path / "system"
    (system / "__pycache__").mkdir(parents=True)
    (system / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (system / "policy.py").write_text(
        "class Policy:\n    def act(self, obs):\n        return 1 if obs else 0\n"
    )
    (system / "link").symlink_to("/etc/hostname")
    snapshot(system, tmp_path / "checkpoints" / "submit_000")
    copy = tmp_path / "checkpoints" / "submit_000"
    assert sorted(p.name for p in copy.iterdir()) == ["link", "policy.py"]
    assert (copy / "link").is_symlink()
    metrics = code_metrics(copy)
    assert metrics["classes"] == 1 and metrics["functions"] == 1 and metrics["cyclomatic_max"] == 2
    assert metrics["tree_hash"] == code_metrics(copy)["tree_hash"]
    (system / "policy.py").write_text("broken")
    mirror(copy, system)
    assert (system / "policy.py").read_text().startswith("class Policy")
