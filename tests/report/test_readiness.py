"""Aggregated readiness table from per-environment ``check-envs --output`` files."""

from __future__ import annotations

import json

from evopolicygym.report import write_readiness


def check_file(path, env, ok, checks):
    path.write_text(
        json.dumps(
            {
                "total": 1,
                "envs": [
                    {
                        "env": env,
                        "family": "builtin",
                        "core16": False,
                        "declared_level": "L3",
                        "reached_level": "L3" if ok else "L0",
                        "ok": ok,
                        "checks": checks,
                    }
                ],
            }
        )
    )
    return path


def test_readiness_table_keeps_failures_and_unreadable_results(tmp_path):
    passed = check_file(
        tmp_path / "toy.json",
        "toy",
        True,
        [{"name": "builds", "level": "L1", "ok": True, "message": ""}],
    )
    failed = check_file(
        tmp_path / "cart.json",
        "gym/cartpole",
        False,
        [
            {"name": "builds", "level": "L1", "ok": True, "message": "CartPole"},
            {"name": "resets_and_steps", "level": "L1", "ok": False, "message": "boom"},
        ],
    )
    broken = tmp_path / "x.json"
    broken.write_text("[")
    table = write_readiness([passed, failed, broken], tmp_path / "r.md", tmp_path / "r.csv")
    assert list(table["env"]) == ["toy", "gym/cartpole", "x"]
    assert list(table["ok"]) == [True, False, False]
    assert table.loc[1, "first_failure"] == "resets_and_steps: boom"
    assert table.loc[1, "reached_level"] == "L0"
    assert "unreadable result" in table.loc[2, "first_failure"]
    assert "1 of 3 environments pass" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.csv").read_text().startswith("env,family,core16,declared_level")
