"""The table of docs/baselines.md: built-in agents beside the published Core-16 entrants."""

from __future__ import annotations

from evopolicygym.report import baseline_markdown
from evopolicygym.suites import load_suite

from .conftest import write_record
from .test_build import _core_suite, _published_protocol, make_record


def test_only_runs_of_the_published_protocol_count_and_each_agent_gets_a_rank(tmp_path):
    suite = _core_suite(tmp_path)
    acrobot, car = suite.jobs
    record = make_record(acrobot.env, "hillclimb", final_score=-90.0)
    record.protocol = _published_protocol(acrobot.env)
    record.outcome.heldout_returns = [-91.0, -89.0]
    write_record(acrobot.record_path, record)
    other = make_record(car.env, "hillclimb", final_score=99.0)
    other.protocol = _published_protocol(car.env, budget=64)
    write_record(car.record_path, other)
    text = baseline_markdown([suite.path])
    assert "| Acrobot | -84.69 | -88.59 | -136.41 | -91.16 | -499.16 | -90.00 ± 1.00 |" in text
    assert "| ContinuousCar | 95.22 |" in text and "not measured |" in text
    # Acrobot only, among five published entrants: behind GPT-5.5 and Claude -> (6-3)/5.
    assert "| hillclimb | 1 | 0.600 | 0 |" in text
    assert "001_gym_continuouscar_hillclimb_r00: budget: 64 vs 128" in text
    assert load_suite(suite.path).jobs  # the suite file stays valid
