"""Suite files -> run matrix: the checked-in configs, expansion order, labels, and errors that
name the file and key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evopolicygym.suites import (
    SuiteConfigError,
    exact_pattern,
    load_suite,
    load_suites,
    merged_data_requests,
    suite_job_config,
    target_slug,
)

REPO = Path(__file__).resolve().parents[1]
CORE16 = {
    "gym/acrobot",
    "gym/continuouscar",
    "gym/bipedal",
    "gym/racing",
    "gym/halfcheetah5",
    "gym/ant5",
    "gym/pusher5",
    "gym/reacher5",
    "gymnasium/MiniGrid-DoorKey-16x16-v0",
    "gymnasium/MiniGrid-KeyCorridorS4R3-v0",
    "gymnasium/MiniGrid-FourRooms-v0",
    "gymnasium/MiniGrid-ObstructedMaze-1Q-v1",
    "gymnasium/parking-v0",
    "gymnasium/roundabout-v0",
    "gymnasium/FetchPush-v4",
    "gymnasium/FetchPickAndPlace-v4",
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("provider", ["codex", "claude", "kimi"])
def test_main_128_suites_follow_the_published_protocol(provider):
    suite = load_suite(REPO / f"config/main-128-{provider}-suite.toml")
    assert suite.slug == f"main128_{provider}"
    assert {job.env for job in suite.jobs} == CORE16
    assert len(suite.jobs) == 16
    for job in suite.jobs:
        run, agent = job.config.run, job.config.agent
        assert (run.budget, run.minimum, run.maximum) == (128, 1, 128)
        assert (run.valid_size, run.final_size) == (64, 256)
        assert run.bulk is True
        assert run.data == Path("data/main-128") / job.env
        assert (agent.kind, agent.retries, agent.retry_backoff) == (provider, 5, 4.0)
        assert (
            job.root
            == Path(f"runs/main-128/{provider}/{provider}") / job.root.parent.name / job.name
        )
        assert run.root == job.root.absolute()
    assert suite.jobs[0].name == f"000_gym_acrobot_{provider}_r00"
    requests = suite.data_requests()
    assert len(requests) == 16
    assert {(r.seed, r.train_size, r.valid_size, r.heldout_size) for r in requests} == {
        (0, 1024, 64, 256)
    }


def test_smoke_suites():
    smoke8 = load_suite(REPO / "config/smoke-8-suite.toml")
    assert smoke8.slug == "smoke8"
    assert [(j.env, j.agent_label) for j in smoke8.jobs] == [
        ("toy", "codex"),
        ("toy", "claude"),
        ("toy", "kimi"),
        ("gym/cartpole", "codex"),
        ("gym/cartpole", "claude"),
        ("gym/cartpole", "kimi"),
    ]
    assert all(j.config.run.budget == 8 for j in smoke8.jobs)
    smoke = load_suite(REPO / "config/smoke-suite.toml")
    assert smoke.slug == "smoke"
    assert {j.config.agent.kind for j in smoke.jobs} == {"builtin:random", "builtin:hillclimb"}
    assert smoke.data_requests() == []  # offline: environments' own seed-0 pools


def test_expansion_order_names_roots_and_labels(tmp_path):
    suite = load_suite(
        write(
            tmp_path,
            """
[suite]
root = "runs/x"
name = "x"
repeats = 2
threads = 3

[[run]]
env = "toy"
budget = 4

[[run]]
env = "gym/cartpole"
budget = 4
model = "m1"

[[agent]]
kind = "command"
argv = ["python", "agent.py"]

[[agent]]
kind = "codex"
model = "gpt-x"
""",
        )
    )
    names = [job.name for job in suite.jobs]
    assert names == [
        "000_toy_command_r00",
        "001_toy_codex_gpt-x_r00",
        "002_gym_cartpole_m1_r00",
        "003_gym_cartpole_m1_r00",
        "004_toy_command_r01",
        "005_toy_codex_gpt-x_r01",
        "006_gym_cartpole_m1_r01",
        "007_gym_cartpole_m1_r01",
    ]
    assert [job.repeat for job in suite.jobs] == [0] * 4 + [1] * 4
    assert [job.agent_label for job in suite.jobs[:2]] == ["command", "codex_gpt-x"]
    job = suite.job("002_gym_cartpole_m1_r00")
    assert job.root == Path("runs/x/m1/gym_cartpole/002_gym_cartpole_m1_r00")
    assert (job.config.run.key, job.config.run.exp_id, job.config.run.model) == (job.name,) * 2 + (
        "m1",
    )
    assert job.config.run.jobs == 3  # the suite's threads feed the rollout worker pool
    with pytest.raises(KeyError, match="has no job 'nope'"):
        suite.job("nope")


def test_a_job_config_takes_the_directory_and_threads_snakemake_grants(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nroot = "runs/x"\nthreads = 3\n[[run]]\nenv = "toy"\nbudget = 4\n'
        '[[agent]]\nkind = "builtin:random"\n'
    )
    (job,) = load_suite(path).jobs
    as_given = suite_job_config(path, job.name)
    assert as_given == job.config and as_given.run.jobs == 3
    granted = suite_job_config(path, job.name, root=tmp_path / "elsewhere", jobs=1)
    assert granted.run.root == tmp_path / "elsewhere" and granted.run.jobs == 1
    assert granted.run.exp_id == job.name and granted.agent.kind == "builtin:random"
    with pytest.raises(KeyError, match="has no job 'nope'"):
        suite_job_config(path, "nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[run]]\nenv='toy'\nbudget=1\n[[agent]]\nkind='codex'\n", r"needs a \[suite\] table"),
        ("[suite]\nname='x'\n[[run]]\nbudget=1\n[[agent]]\n", r"\[suite\]: key 'root'"),
        ("[suite]\nroot='r'\nrepeats=0\n[[run]]\nbudget=1\n[[agent]]\n", r"key 'repeats'"),
        ("[suite]\nroot='r'\n[[agent]]\nkind='codex'\n", r"at least one \[\[run\]\]"),
        ("[suite]\nroot='r'\n[[run]]\nenv='toy'\n[[agent]]\n", r"\[\[run\]\] #1: key 'budget'"),
        ("[suite]\nroot='r'\n[[run]]\nbudget=1\nbudgte=2\n[[agent]]\n", r"key 'budgte'"),
        ("[suite]\nroot='r'\n[[run]]\nbudget=1\nroot='x'\n[[agent]]\n", r"set by the suite"),
        (
            "[suite]\nroot='r'\n[[run]]\nbudget=1\n[[agent]]\nretries=-1\n",
            r"\[\[agent\]\] #1: key 'retries'",
        ),
        ("[suite]\nroot='r'\n[[run]]\nbudget=1\n[[agent]]\n[extra]\n", r"unknown top-level"),
        ("[suite\n", r"not valid TOML"),
    ],
)
def test_errors_name_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(SuiteConfigError, match=message) as error:
        load_suite(path)
    assert str(path) in str(error.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SuiteConfigError, match="does not exist"):
        load_suite(tmp_path / "absent.toml")


def test_target_slugs():
    assert target_slug("smoke-8") == "smoke8"
    assert target_slug("main-128-codex") == "main128_codex"
    assert target_slug("My Suite v2") == "my_suite_v2"


def test_load_suites_rejects_duplicate_slugs_and_shared_roots(tmp_path):
    one = tmp_path / "a-suite.toml"
    two = tmp_path / "b-suite.toml"
    body = "[[run]]\nenv='toy'\nbudget=1\n[[agent]]\nkind='builtin:random'\n"
    one.write_text("[suite]\nroot='runs/a'\nname='same'\n" + body)
    two.write_text("[suite]\nroot='runs/b'\nname='same'\n" + body)
    with pytest.raises(SuiteConfigError, match="both have slug 'same'"):
        load_suites(["*-suite.toml"], base=tmp_path)
    two.write_text("[suite]\nroot='runs/a'\nname='other'\n" + body)
    with pytest.raises(SuiteConfigError, match="both write"):
        load_suites(["*-suite.toml"], base=tmp_path)
    with pytest.raises(SuiteConfigError, match="matches no file"):
        load_suites(["nothing-*.toml"], base=tmp_path)


def test_all_checked_in_suites_load_together_and_share_data_dirs():
    suites = load_suites(["config/*-suite.toml"], base=REPO)
    assert set(suites) == {
        "smoke",
        "smoke8",
        "main128_codex",
        "main128_claude",
        "main128_kimi",
        "core16_builtin",
        "core16_explore",
    }
    data = merged_data_requests(suites)
    assert len(data) == 16  # the main-128 and built-in Core-16 suites read the same splits


def test_conflicting_data_settings_are_rejected(tmp_path):
    for name, seed in (("a", 0), ("b", 1)):
        (tmp_path / f"{name}-suite.toml").write_text(
            f"[suite]\nroot='runs/{name}'\nname='{name}'\n[data]\nseed={seed}\n"
            "[[run]]\nenv='toy'\nbudget=1\ndata='data/toy'\n[[agent]]\nkind='builtin:random'\n"
        )
    with pytest.raises(SuiteConfigError, match="different settings"):
        merged_data_requests(load_suites(["*-suite.toml"], base=tmp_path))


def test_exact_pattern_matches_only_the_given_strings():
    pattern = re.compile(exact_pattern(["runs/a.b/x", "runs/c"]))
    assert pattern.fullmatch("runs/a.b/x") and pattern.fullmatch("runs/c")
    assert not pattern.fullmatch("runs/aXb/x")
    assert not re.compile(exact_pattern([])).fullmatch("")


def test_data_private_selects_os_drawn_splits(tmp_path):
    path = tmp_path / "p-suite.toml"
    path.write_text(
        "[suite]\nroot='runs/p'\nname='p'\n[data]\nprivate=true\n"
        "[[run]]\nenv='toy'\nbudget=1\ndata='data/p'\n[[agent]]\nkind='builtin:random'\n"
    )
    (request,) = load_suite(path).data_requests()
    assert request.private and request.root == Path("data/p")
