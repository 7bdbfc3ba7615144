import pytest

from evopolicygym.envs import UnknownEnvironmentError, get_env
from evopolicygym.envs.bulk import DEFAULT_STEP_CAP, bulk_spec, miniwob_url
from evopolicygym.envs.tasktext import missing_sections


def test_registry_limit_wins():
    spec = bulk_spec("CartPole-v1")
    assert spec.id == "gymnasium/CartPole-v1"
    assert spec.max_episode_steps == 500
    assert "registry" in spec.step_cap_source
    assert spec.family == "classic_control" and spec.extra == ""


def test_no_registry_limit_and_none_readable_falls_back_explicitly():
    spec = bulk_spec("Blackjack-v1")
    assert spec.max_episode_steps == DEFAULT_STEP_CAP
    assert f"default cap {DEFAULT_STEP_CAP}" in spec.step_cap_source


@pytest.mark.core
def test_minigrid_and_highway_limits_are_read_from_the_env():
    grid = bulk_spec("MiniGrid-Empty-5x5-v0")
    assert grid.max_episode_steps == 100
    assert "max_steps = 100" in grid.step_cap_source
    assert grid.family == "minigrid" and grid.extra == "core" and grid.imports == ["minigrid"]
    assert grid.obs_storage == "external"
    road = bulk_spec("highway-fast-v0")
    assert road.max_episode_steps == 30
    assert "duration x policy_frequency" in road.step_cap_source


def test_generated_task_text_is_complete_and_world_runs():
    spec = get_env("gymnasium/MountainCar-v0", bulk=True)
    assert missing_sections(spec.task) == []
    assert "200" in spec.task and "Discrete" in spec.task
    world = spec.make_world()
    world.reset(0)
    assert world.step(world.sample()).reward == -1.0


def test_bulk_ids_need_the_bulk_flag_and_unknown_ids_are_explained():
    with pytest.raises(UnknownEnvironmentError, match="--bulk"):
        get_env("gymnasium/MountainCar-v0")
    with pytest.raises(UnknownEnvironmentError, match="not a registered Gymnasium environment"):
        get_env("gymnasium/NoSuchEnv-v0", bulk=True)


def test_miniwob_url_prefers_the_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIWOB_URL", "http://localhost:8000/miniwob/")
    assert miniwob_url() == "http://localhost:8000/miniwob/"
    monkeypatch.delenv("MINIWOB_URL")
    pages = tmp_path / "third_party" / "miniwob-plusplus" / "miniwob" / "html" / "miniwob"
    pages.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    url = miniwob_url()
    assert url is not None and url.startswith("file://") and url.endswith("/miniwob/")
