"""The web family (BrowserGym MiniWoB++): where the pages and the browser are found, the errors
when they are not, and real episodes in Chromium (marked ``web``)."""

import json
import re
import stat

import numpy as np
import pytest

from evopolicygym.envs import MissingExtraError, get_env
from evopolicygym.envs.web import (
    CHROMIUM_VARIABLE,
    MAX_ACTION_CHARS,
    MINIWOB_CHECKOUT,
    MissingBrowserError,
    MissingPagesError,
    coerce_action,
    find_chromium,
    miniwob_url,
)
from evopolicygym.readiness.checks import check_env
from web_support import WEB_MODULES, needs_web, web_unavailable

CURATED = ["browsergym/miniwob.click-button", "browsergym/miniwob.enter-text"]


def _checkout(root):
    pages = root / MINIWOB_CHECKOUT / "miniwob" / "html" / "miniwob"
    pages.mkdir(parents=True)
    (pages / "click-test.html").write_text("<html></html>")
    return pages


def _executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# -- where the MiniWoB++ pages are ------------------------------------------------------------


def test_the_variable_comes_first(tmp_path):
    _checkout(tmp_path)
    environ = {"MINIWOB_URL": "http://localhost:8000/miniwob/"}
    assert miniwob_url([tmp_path], environ) == "http://localhost:8000/miniwob/"


def test_a_checkout_comes_next_as_a_file_url_with_a_trailing_slash(tmp_path):
    pages = _checkout(tmp_path / "repo")
    _checkout(tmp_path / "cwd")
    url = miniwob_url([tmp_path / "repo", tmp_path / "cwd"], {"MINIWOB_URL": ""})
    assert url == pages.resolve().as_uri() + "/"
    assert url.startswith("file:///") and url.endswith(
        "/third_party/miniwob-plusplus/miniwob/html/miniwob/"
    )


def test_a_checkout_without_the_pages_directory_does_not_count(tmp_path):
    (tmp_path / MINIWOB_CHECKOUT / "miniwob").mkdir(parents=True)  # cloned, wrong layout
    second = _checkout(tmp_path / "other")
    assert miniwob_url([tmp_path, tmp_path / "other"], {}) == second.resolve().as_uri() + "/"


def test_the_miniwob_wheel_is_the_last_resort(tmp_path):
    pytest.importorskip("miniwob", reason="the web extra is not installed (uv sync --extra web)")
    url = miniwob_url([tmp_path], {})
    assert url.startswith("file:///") and url.endswith("/miniwob/html/miniwob/")
    pages = url.removeprefix("file://")
    assert (pages + "click-button.html").endswith("/miniwob/html/miniwob/click-button.html")
    with open(pages + "click-button.html", encoding="utf-8") as page:
        assert "core.endEpisode" in page.read()
    with open(pages + "../core/core.js", encoding="utf-8") as core:
        assert "WOB_REWARD_GLOBAL" in core.read()


def test_no_pages_anywhere_names_the_extra_the_checkout_and_the_variable(tmp_path):
    with pytest.raises(MissingPagesError) as error:
        miniwob_url([tmp_path], {}, package="evopolicygym_no_such_package")
    message = str(error.value)
    assert "uv sync --inexact --extra web" in message
    assert "third_party/miniwob-plusplus" in message and "MINIWOB_URL" in message


# -- where Chromium is -----------------------------------------------------------------------


def test_the_chromium_variable_comes_first(tmp_path):
    chosen = _executable(tmp_path / "custom" / "chrome")
    system = _executable(tmp_path / "usr" / "chromium")
    found = find_chromium({CHROMIUM_VARIABLE: str(chosen)}, system=system)
    assert found == chosen


def test_then_the_system_chromium_then_path(tmp_path):
    system = _executable(tmp_path / "usr" / "chromium")
    on_path = _executable(tmp_path / "bin" / "chromium")
    environ = {"PATH": str(tmp_path / "bin")}
    assert find_chromium(environ, system=system) == system
    assert find_chromium(environ, system=tmp_path / "absent") == on_path
    assert find_chromium({"PATH": str(tmp_path / "empty")}, system=tmp_path / "absent") is None


def test_a_chromium_variable_that_points_nowhere_is_an_error(tmp_path):
    with pytest.raises(MissingBrowserError, match="apt-get install chromium"):
        find_chromium({CHROMIUM_VARIABLE: str(tmp_path / "nothing")})
    not_executable = tmp_path / "chrome"
    not_executable.write_text("")
    with pytest.raises(MissingBrowserError, match=CHROMIUM_VARIABLE):
        find_chromium({CHROMIUM_VARIABLE: str(not_executable)})


# -- errors when building, actions -----------------------------------------------------------


def test_a_missing_package_names_the_web_extra():
    spec = get_env("browsergym/miniwob.click-button")
    broken = spec.model_copy(update={"imports": ["evopolicygym_missing_plugin"]})
    with pytest.raises(MissingExtraError, match=r"uv sync --inexact --extra web"):
        broken.make_world()


@pytest.mark.parametrize("env_id", CURATED)
def test_curated_specs_are_web_family_with_the_benchmark_step_cap(env_id):
    spec = get_env(env_id)
    assert (spec.family, spec.extra, spec.adapter) == ("web", "web", "web")
    assert spec.max_episode_steps == 10 and "max_steps = 10" in spec.step_cap_source
    assert spec.obs_storage == "external" and spec.upstream == env_id
    assert spec.anchors.random is not None and spec.level == "L3"


def test_actions_are_strings_anything_else_becomes_noop():
    assert coerce_action('click("13")') == ('click("13")', False)
    assert coerce_action("not an action") == ("not an action", False)  # BrowserGym reports it
    assert coerce_action(13) == ("noop()", True)
    assert coerce_action(["click('1')"]) == ("noop()", True)
    assert coerce_action("x" * (MAX_ACTION_CHARS + 1)) == ("noop()", True)


def test_web_tests_skip_only_with_a_precise_reason():
    reason = web_unavailable()
    assert reason is None or "--extra web" in reason or "apt-get install chromium" in reason
    assert "browsergym.miniwob" in WEB_MODULES


@needs_web
def test_an_unusable_chromium_variable_fails_the_world_with_the_install_hint(monkeypatch):
    monkeypatch.setenv(CHROMIUM_VARIABLE, "/nonexistent/chromium")
    with pytest.raises(MissingBrowserError, match="apt-get install chromium"):
        get_env("browsergym/miniwob.click-button").make_world()


# -- real episodes in Chromium ---------------------------------------------------------------


def _solve_click_button(obs):
    """The button whose label is the goal's quoted text, from the accessibility tree."""
    label = re.search(r'"(.*)"', obs["goal"]).group(1)
    bid = re.search(rf"\[(\d+)\] button '{re.escape(label)}'", obs["axtree"]).group(1)
    return f'click("{bid}")'


@needs_web
@pytest.mark.slow
def test_click_button_episodes_are_real_reproducible_and_solvable():
    spec = get_env("browsergym/miniwob.click-button")
    world = spec.make_world()
    try:
        first = world.reset(7)
        assert set(first) == {
            "goal",
            "axtree",
            "html",
            "focused_element_bid",
            "last_action",
            "last_action_error",
            "screenshot",
        }
        assert first["goal"].startswith("Click on the")
        assert first["screenshot"].dtype == np.uint8 and first["screenshot"].shape == (214, 332, 3)
        visible = world.observe(first)
        json.dumps({k: v for k, v in visible.items() if k != "screenshot"}, allow_nan=False)
        assert np.array_equal(
            np.asarray(visible["screenshot"], dtype=np.uint8), first["screenshot"]
        )

        sampled = world.sample()
        assert re.fullmatch(r'(click\("\d+"\)|fill\("\d+", "[a-z]{5}"\))', sampled)

        turn = world.step("click('99999')")  # an unknown bid: an error, not a crash
        assert turn.reward == 0.0 and not turn.terminated
        assert "99999" in turn.info["action_error"] and turn.obs["last_action_error"]
        turn = world.step(42)  # not a string: noop() and flagged
        assert turn.info["action_invalid"] is True and turn.obs["last_action"] == "noop()"

        again = world.reset(7)  # same seed, same page, after steps on this instance
        assert again["goal"] == first["goal"] and again["axtree"] == first["axtree"]
        assert np.array_equal(again["screenshot"], first["screenshot"])

        for seed in (7, 8):
            obs = world.reset(seed)
            turn = world.step(_solve_click_button(obs))
            assert (turn.reward, turn.terminated, turn.truncated) == (1.0, True, False)
            assert turn.info["task_info"]["RAW_REWARD_GLOBAL"] == 1
            assert world.step('click("1")').info == {"already_done": True}
    finally:
        world.close()


@needs_web
@pytest.mark.slow
@pytest.mark.parametrize("env_id", CURATED)
def test_curated_web_envs_pass_check_envs_up_to_l3(env_id):
    # L3 replays random-policy episodes in real workers. On enter-text the random strings are
    # not actions BrowserGym can run, each step takes seconds, and every episode lasts its 10
    # steps: its replay took minutes. Click-button's (short episodes) stands for the family.
    level = "L3" if env_id.endswith("click-button") else "L2"
    result = check_env(env_id, up_to=level)
    assert result.ok, [c for c in result.checks if not c.ok]
    assert result.reached_level == level
    names = {c.name for c in result.checks}
    assert {"builds", "describes", "resets_and_steps", "seeded_determinism"} <= names


@needs_web
@pytest.mark.slow
def test_bulk_miniwob_ids_run_through_the_web_adapter():
    spec = get_env("gymnasium/browsergym/miniwob.click-test", bulk=True)
    assert (spec.family, spec.extra, spec.adapter) == ("web", "web", "web")
    assert spec.kwargs["task_kwargs"]["base_url"] == miniwob_url()
    assert spec.kwargs["task_kwargs"]["base_url"].endswith("/")
    assert spec.obs_storage == "external" and "`Image`" in spec.task
    # BrowserGym registers no limit: bulk MiniWoB ids get its benchmark's 10 steps, said so.
    assert spec.max_episode_steps == 10 and "max_steps = 10" in spec.step_cap_source
