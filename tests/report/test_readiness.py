"""Aggregated readiness table from per-environment check-envs results."""

from __future__ import annotations

import json

from evopolicygym.report import write_readiness


def test_readiness_table_keeps_failures_and_unreadable_results(tmp_path):
    ok = tmp_path / "toy.json"
    ok.write_text(
        json.dumps(
            {
                "envs": [
                    {"name": "toy", "level": "L3", "family": "builtin", "ok": True, "issues": []}
                ]
            }
        )
    )
    bad = tmp_path / "cart.json"
    bad.write_text(
        json.dumps(
            {
                "envs": [
                    {
                        "name": "gym/cartpole",
                        "level": "L2",
                        "family": "classic_control",
                        "ok": False,
                        "issues": [{"code": "world_smoke", "path": "step", "message": "boom"}],
                    }
                ]
            }
        )
    )
    broken = tmp_path / "x.json"
    broken.write_text("[")
    table = write_readiness([ok, bad, broken], tmp_path / "r.md", tmp_path / "r.csv")
    assert list(table["env"]) == ["toy", "gym/cartpole", "x"]
    assert list(table["ok"]) == [True, False, False]
    assert table.loc[1, "first_issue"] == "world_smoke: boom"
    assert "unreadable result" in table.loc[2, "first_issue"]
    assert "1 of 3 environments pass" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.csv").read_text().startswith("env,level,family,ok,issues")
