"""The web family: BrowserGym MiniWoB++ tasks in a real Chromium (adapter ``web``).

What a web environment needs, and where each piece is found:

- **Python packages**: the ``web`` extra (``browsergym-miniwob``, ``playwright``, ``miniwob``).
  Missing ones raise :class:`~evopolicygym.envs.MissingExtraError` naming the extra.
- **The MiniWoB++ pages** (:func:`miniwob_url`): ``$MINIWOB_URL``; else a checkout of
  ``third_party/miniwob-plusplus`` (commit :data:`MINIWOB_COMMIT`) under the repository root or
  the current directory; else the pages shipped inside the installed ``miniwob`` wheel. The
  result is passed to BrowserGym as ``task_kwargs.base_url`` (a ``file://`` URL, trailing
  slash), unless the envspec's kwargs set it.
- **A Chromium** (:func:`find_chromium`): ``$EVOPOLICYGYM_CHROMIUM``; else
  ``/usr/bin/chromium`` (Debian's ``chromium`` package); else ``chromium`` or
  ``chromium-browser`` on ``PATH``; else a browser that ``playwright install chromium``
  downloaded. None of these raises :class:`MissingBrowserError` naming ``apt-get install
  chromium``.

How the browser is launched. browsergym-core 0.14.3 launches two browsers at every ``reset``
(the task page and a chat window) through its global Playwright instance. Its
``pw_chromium_kwargs`` hook reaches only the task browser, not the chat, so this adapter uses
its other hook instead: ``browsergym.core._set_global_playwright`` receives a thin proxy of the
Playwright instance whose ``chromium.launch()`` adds the executable and the flags in
:data:`CHROMIUM_ARGS`, and hands out one shared browser per distinct set of launch options,
started once per process. What BrowserGym receives behaves like a browser whose ``close()``
closes the contexts it opened: every episode still runs in fresh browser contexts (no cookies,
storage or history carried over), without starting Chromium again. The Playwright driver is
started when the world is built, before a policy worker lowers its rlimits; Chromium is the
driver's child (launched at the first reset), so it is limited by the machine, not by the
policy's memory limit.

Reproducibility: screenshots are taken at CSS pixels (:data:`SCREENSHOT_SCALE`) instead of
MiniWoB's 1.5x, and a style sheet hides the text caret (:data:`HIDE_CARET`); both made replays of
the same episode differ (see the comments there).

What a policy sees: :func:`compact_observation` turns BrowserGym's observation (DOM snapshot,
accessibility tree, screenshot, chat, timings) into a small dict of text fields and the
screenshot, all of which are reproducible for a given seed and action sequence (no timestamps).
Actions are BrowserGym high-level action strings such as ``click("13")``, from the action set
BrowserGym's own MiniWoB benchmark uses (:data:`ACTION_SET`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from ._contract import SpaceSchemas, Turn
from ._runtime import MissingExtraError, RuntimeSpec
from .gymnasium_adapter import make_env
from .jsonsafe import to_jsonsafe
from .spaces import space_schema

__all__ = [
    "ACTION_SET",
    "BROWSER_HIDDEN_SLOTS",
    "BROWSER_TASKS",
    "CHROMIUM_ARGS",
    "CHROMIUM_VARIABLE",
    "MINIWOB_CHECKOUT",
    "MINIWOB_COMMIT",
    "MINIWOB_VARIABLE",
    "MissingBrowserError",
    "MissingPagesError",
    "WebWorld",
    "coerce_action",
    "compact_observation",
    "describe",
    "find_chromium",
    "make_world",
    "miniwob_url",
]

MINIWOB_VARIABLE = "MINIWOB_URL"
MINIWOB_COMMIT = "7fd85d71a4b60325c6585396ec4f48377d049838"
# BrowserGym registers no step limit; its own MiniWoB++ benchmark runs 10 steps per episode.
MINIWOB_MAX_STEPS = 10
MINIWOB_STEPS_SOURCE = (
    "BrowserGym's MiniWoB benchmark: max_steps = 10 per episode (browsergym-experiments, "
    "benchmark/configs.py); BrowserGym registers no max_episode_steps"
)
# What a web envspec sets (bulk specs too): the processes and threads of the Playwright driver
# and its two Chromium browsers (BrowserGym launches one, MiniWoB's task set-up another) held
# about 224 for one world, and each further page about 50 more; thread pools grow under load.
# A lane's process cap counts them beside the policy's. One hidden episode at a time: every
# world is a page with its own renderer, and lock step saves nothing on a step of a second.
BROWSER_TASKS = 512
BROWSER_HIDDEN_SLOTS = 1
MINIWOB_CHECKOUT = Path("third_party") / "miniwob-plusplus"
_PAGES = Path("miniwob") / "html" / "miniwob"  # inside a checkout and inside the miniwob wheel
REPOSITORY_ROOT = Path(__file__).resolve().parents[3]

CHROMIUM_VARIABLE = "EVOPOLICYGYM_CHROMIUM"
SYSTEM_CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_NAMES = ("chromium", "chromium-browser")
# Added to Playwright's own defaults (which already include --no-sandbox, --no-first-run,
# --disable-background-networking and --disable-component-update): a closed network must not
# make Chromium retry Google services, and a headless machine has no GPU.
CHROMIUM_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
)
# Screenshots at CSS pixels. MiniWoB tasks ask BrowserGym for 1.5x screenshots, which it takes
# by switching the page's device pixel ratio to 1.5 and back around every capture; the relayout
# makes Chromium recompute the hover state on a timer, so the same episode replayed with hovered
# or unhovered form controls (measured: 5 differing screenshots in 16 replayed steps of
# enter-text, none in 64 at 1.0). At 1.0 nothing switches. Mouse coordinates follow the same factor.
SCREENSHOT_SCALE = 1.0
# The blinking text caret made screenshots depend on timing too: every page gets a constructed
# style sheet (no DOM node, so BrowserGym's element ids do not change) that hides it.
HIDE_CARET = """
(() => {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync("*, *::before, *::after { caret-color: transparent !important; }");
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
})();
"""

# BrowserGym's MiniWoB benchmark configuration (browsergym-experiments, DEFAULT_HIGHLEVEL_
# ACTION_SET_ARGS["miniwob_all"]): one action per step, no strict parsing, retry with force.
ACTION_SET = {
    "subsets": ["miniwob_all"],
    "multiaction": False,
    "strict": False,
    "retry_with_force": True,
}
MAX_ACTION_CHARS = 4096
MAX_TEXT_CHARS = 100_000
TRUNCATED = "\n[truncated]"
FALLBACK_ACTION = "noop()"
# Elements a sampled action may fill in, by accessibility role.
TEXT_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})
SAMPLE_WORD_LETTERS = 5
TEXT_FIELDS = ("goal", "axtree", "html", "focused_element_bid", "last_action", "last_action_error")


class MissingBrowserError(RuntimeError):
    """No Chromium to run BrowserGym with."""


class MissingPagesError(RuntimeError):
    """The MiniWoB++ pages are nowhere to be found."""


# ---------------------------------------------------------------------------------------------
# Where things are


def miniwob_url(
    roots: Sequence[Path] | None = None,
    environ: Mapping[str, str] | None = None,
    package: str = "miniwob",
) -> str:
    """Base URL of the MiniWoB++ task pages (``<subdomain>.html`` is appended by BrowserGym).

    In order: ``$MINIWOB_URL``; ``third_party/miniwob-plusplus/miniwob/html/miniwob/`` under each
    of ``roots`` (default: the repository root, then the current directory) as a ``file://`` URL;
    the pages in the installed ``package``. Raises :class:`MissingPagesError`."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(MINIWOB_VARIABLE)
    if explicit:
        return explicit
    for root in roots if roots is not None else (REPOSITORY_ROOT, Path.cwd()):
        pages = Path(root) / MINIWOB_CHECKOUT / _PAGES
        if pages.is_dir():
            return pages.resolve().as_uri() + "/"
    shipped = _wheel_pages(package)
    if shipped is not None:
        return shipped.as_uri() + "/"
    raise MissingPagesError(
        "the MiniWoB++ pages were not found: install the web extra (uv sync --inexact --extra "
        f"web), whose miniwob package ships them; or check out "
        f"https://github.com/Farama-Foundation/miniwob-plusplus at {MINIWOB_COMMIT} into "
        f"{MINIWOB_CHECKOUT}; or set {MINIWOB_VARIABLE} to their URL (see docs/envs/web.md)"
    )


def _wheel_pages(package: str) -> Path | None:
    """``html/miniwob`` of the installed ``miniwob`` package, found without importing it (its
    import registers Selenium-based environments we do not use)."""
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for location in (found.submodule_search_locations or []) if found else []:
        pages = Path(location) / "html" / "miniwob"
        if pages.is_dir():
            return pages.resolve()
    return None


def find_chromium(
    environ: Mapping[str, str] | None = None, system: Path = SYSTEM_CHROMIUM
) -> Path | None:
    """The Chromium executable to run: ``$EVOPOLICYGYM_CHROMIUM`` (which must exist), else
    ``system`` (``/usr/bin/chromium``), else ``chromium``/``chromium-browser`` on ``PATH``;
    None if there is none (Playwright's own download may still be there)."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(CHROMIUM_VARIABLE)
    if explicit:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise MissingBrowserError(
                f"{CHROMIUM_VARIABLE}={explicit} is not an executable file: point it at a "
                "Chromium executable, or unset it to use /usr/bin/chromium "
                "(apt-get install chromium)"
            )
        return path
    if system.is_file() and os.access(system, os.X_OK):
        return system
    for name in CHROMIUM_NAMES:
        found = shutil.which(name, path=environ.get("PATH", os.defpath))
        if found:
            return Path(found)
    return None


def _missing_browser(env_id: str) -> MissingBrowserError:
    return MissingBrowserError(
        f"environment {env_id!r} needs a Chromium browser and none was found (looked at "
        f"${CHROMIUM_VARIABLE}, {SYSTEM_CHROMIUM}, {' and '.join(CHROMIUM_NAMES)} on PATH, and "
        "Playwright's own download). Install it with: apt-get install chromium "
        f"(or set {CHROMIUM_VARIABLE} to a Chromium executable)"
    )


# ---------------------------------------------------------------------------------------------
# One Playwright driver and shared browsers per process


class _BorrowedBrowser:
    """What BrowserGym gets from ``chromium.launch()``: the shared browser, except that
    ``close()`` closes only the contexts opened through this object."""

    def __init__(self, browser: Any):
        self._browser = browser
        self._contexts: list[Any] = []

    def new_context(self, **options: Any) -> Any:
        context = self._browser.new_context(**options)
        self._contexts.append(context)
        context.add_init_script(HIDE_CARET)
        return context

    def close(self) -> None:
        contexts, self._contexts = self._contexts, []
        for context in contexts:
            with contextlib.suppress(Exception):  # the browser may be gone already
                context.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


class _SharedChromium:
    """Stands in for ``playwright.chromium``: adds the executable and :data:`CHROMIUM_ARGS` to
    every launch and starts one browser per distinct set of launch options."""

    def __init__(self, browser_type: Any, executable: Path | None):
        self._type = browser_type
        self._executable = executable
        self._browsers: dict[str, Any] = {}

    def launch(self, **options: Any) -> _BorrowedBrowser:
        key = json.dumps(options, sort_keys=True, default=repr)
        browser = self._browsers.get(key)
        if browser is None or not browser.is_connected():
            args = [*(options.pop("args", None) or []), *CHROMIUM_ARGS]
            if self._executable is not None:
                options.setdefault("executable_path", str(self._executable))
            browser = self._type.launch(args=args, **options)
            self._browsers[key] = browser
        return _BorrowedBrowser(browser)

    def close(self) -> None:
        browsers, self._browsers = list(self._browsers.values()), {}
        for browser in browsers:
            with contextlib.suppress(Exception):
                browser.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._type, name)


class _PlaywrightProxy:
    """The Playwright instance BrowserGym uses, with :class:`_SharedChromium` as ``chromium``."""

    def __init__(self, playwright: Any, chromium: _SharedChromium):
        self._playwright = playwright
        self.chromium = chromium

    def __getattr__(self, name: str) -> Any:
        return getattr(self._playwright, name)


class _Session:
    """The process's Playwright driver, shared by every :class:`WebWorld` in it."""

    current: _Session | None = None

    def __init__(self, playwright: Any, chromium: _SharedChromium):
        self.playwright = playwright
        self.chromium = chromium
        self.users = 0

    @classmethod
    def acquire(cls, env_id: str) -> _Session:
        if cls.current is None:
            import browsergym.core
            from playwright.sync_api import sync_playwright

            executable = find_chromium()
            playwright = sync_playwright().start()
            if executable is None and not Path(playwright.chromium.executable_path).is_file():
                playwright.stop()
                raise _missing_browser(env_id)
            chromium = _SharedChromium(playwright.chromium, executable)
            browsergym.core._set_global_playwright(_PlaywrightProxy(playwright, chromium))
            cls.current = cls(playwright, chromium)
        cls.current.users += 1
        return cls.current

    def release(self) -> None:
        self.users -= 1
        if self.users > 0 or _Session.current is not self:
            return
        _Session.current = None
        import browsergym.core

        browsergym.core._set_global_playwright(None)
        self.chromium.close()
        with contextlib.suppress(Exception):
            self.playwright.stop()


@atexit.register
def _stop_driver() -> None:
    session = _Session.current
    if session is not None:
        session.users = 1
        session.release()


# ---------------------------------------------------------------------------------------------
# Observations and actions


def _limit(text: Any) -> str:
    text = text if isinstance(text, str) else str(text)
    if len(text) > MAX_TEXT_CHARS:
        return text[: MAX_TEXT_CHARS - len(TRUNCATED)] + TRUNCATED
    return text


def compact_observation(obs: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's observation from a BrowserGym observation: the goal, the accessibility tree
    and the pruned HTML as text (BrowserGym's own flattening, elements marked with their
    ``bid``), the focused element, the last action and its error, and the screenshot. Text
    fields longer than :data:`MAX_TEXT_CHARS` are cut."""
    from browsergym.utils.obs import flatten_axtree_to_str, flatten_dom_to_str, prune_html

    properties = obs.get("extra_element_properties") or {}
    axtree = flatten_axtree_to_str(
        obs["axtree_object"], extra_properties=properties, with_visible=True, with_clickable=True
    )
    html = prune_html(flatten_dom_to_str(obs["dom_object"]))
    return {
        "goal": _limit(obs.get("goal") or ""),
        "axtree": _limit(axtree),
        "html": _limit(html),
        "focused_element_bid": _limit(obs.get("focused_element_bid") or ""),
        "last_action": _limit(obs.get("last_action") or ""),
        "last_action_error": _limit(obs.get("last_action_error") or ""),
        "screenshot": np.ascontiguousarray(obs["screenshot"], dtype=np.uint8),
    }


def coerce_action(action: Any) -> tuple[str, bool]:
    """A BrowserGym action string from whatever the policy returned, and whether it had to be
    changed: strings of at most :data:`MAX_ACTION_CHARS` characters pass unchanged (BrowserGym
    reports unparseable ones in ``last_action_error``); anything else becomes ``noop()``."""
    if isinstance(action, str) and len(action) <= MAX_ACTION_CHARS:
        return action, False
    return FALLBACK_ACTION, True


def _bid_order(bid: str) -> tuple[int, str]:
    return (int(bid), "") if bid.isdigit() else (1 << 62, bid)


def _sample_targets(obs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(kind, bid)`` for every action a random policy picks from: a click on every visible,
    clickable element and a fill of every visible text field, in ``bid`` order."""
    properties = obs.get("extra_element_properties") or {}
    roles = {}
    for node in (obs.get("axtree_object") or {}).get("nodes", []):
        bid = node.get("browsergym_id")
        if bid is not None:
            roles[str(bid)] = (node.get("role") or {}).get("value")
    targets = []
    for bid in sorted(properties, key=_bid_order):
        item = properties[bid] or {}
        if (item.get("visibility") or 0) < 0.5:
            continue
        if item.get("clickable"):
            targets.append(("click", bid))
        if roles.get(bid) in TEXT_ROLES:
            targets.append(("fill", bid))
    return targets


class WebWorld:
    """:class:`~evopolicygym.envs.World` for a BrowserGym environment."""

    def __init__(self, spec: RuntimeSpec):
        self._spec = spec
        try:  # the extra's packages and the spec's plugins, before any browser starts
            for module in ("playwright.sync_api", "browsergym.core", *spec.imports):
                importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtraError(spec.id, spec.extra or "web", exc) from exc
        self._session = _Session.acquire(spec.id)
        try:
            self._env = _make_env(spec)
        except BaseException:
            self._session.release()
            raise
        self._rng = np.random.default_rng(0)
        self._targets: list[tuple[str, str]] = []
        self._done = True
        self._last_obs: Any = None
        self._closed = False

    @property
    def env(self) -> Any:
        return self._env

    def reset(self, seed: int) -> dict[str, Any]:
        seed = int(seed) % 2**32
        raw, _ = self._env.reset(seed=seed)
        self._rng = np.random.default_rng(seed + 1)
        return self._accept(raw, done=False)

    def step(self, action: Any) -> Turn:
        if self._done:
            return Turn(self._last_obs, 0.0, True, False, {"already_done": True})
        text, invalid = coerce_action(action)
        raw, reward, terminated, truncated, raw_info = self._env.step(text)
        info: dict[str, Any] = {"task_info": to_jsonsafe((raw_info or {}).get("task_info", {}))}
        if raw.get("last_action_error"):
            info["action_error"] = _limit(raw["last_action_error"])
        if invalid:
            info["action_invalid"] = True
        obs = self._accept(raw, done=bool(terminated or truncated))
        return Turn(obs, float(reward), bool(terminated), bool(truncated), info)

    def _accept(self, raw: Mapping[str, Any], *, done: bool) -> dict[str, Any]:
        self._targets = _sample_targets(raw)
        self._done = done
        self._last_obs = compact_observation(raw)
        return self._last_obs

    def sample(self) -> str:
        """A uniformly random action among ``click(bid)`` on every visible, clickable element
        and ``fill(bid, <5 random lowercase letters>)`` on every visible text field of the
        current page (``noop()`` if there is none). Seeded with the case seed + 1 at reset."""
        if not self._targets:
            return FALLBACK_ACTION
        kind, bid = self._targets[int(self._rng.integers(len(self._targets)))]
        if kind == "fill":
            letters = self._rng.integers(ord("a"), ord("z") + 1, SAMPLE_WORD_LETTERS)
            return f"fill({json.dumps(bid)}, {json.dumps(''.join(map(chr, letters)))})"
        return f"click({json.dumps(bid)})"

    def observe(self, obs: Any) -> Any:
        return to_jsonsafe(obs)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._env.close()
        finally:
            self._session.release()


def _make_env(spec: RuntimeSpec) -> Any:
    """``gymnasium.make`` of the BrowserGym id with the MiniWoB base URL and the action set."""
    from browsergym.core.action.highlevel import HighLevelActionSet

    kwargs = dict(spec.kwargs)
    task_kwargs = dict(kwargs.get("task_kwargs") or {})
    if (spec.upstream or "").startswith("browsergym/miniwob.") and "base_url" not in task_kwargs:
        try:
            task_kwargs["base_url"] = miniwob_url()
        except MissingPagesError as exc:
            raise MissingPagesError(f"environment {spec.id!r}: {exc}") from exc
    kwargs["task_kwargs"] = task_kwargs
    kwargs.setdefault("action_mapping", HighLevelActionSet(**ACTION_SET).to_python_code)
    kwargs.setdefault("disable_env_checker", True)
    env = make_env(spec.replace(kwargs=kwargs))
    inner = env.unwrapped
    inner.task_entrypoint = _at_screenshot_scale(inner.task_entrypoint)
    return env


def _at_screenshot_scale(entrypoint: Any) -> Any:
    """Wraps BrowserGym's task factory so that every task's page uses
    :data:`SCREENSHOT_SCALE` from the end of its setup on (before the first observation)."""

    def make_task(*args: Any, **kwargs: Any) -> Any:
        task = entrypoint(*args, **kwargs)
        setup = task.setup

        def setup_at_scale(page: Any) -> Any:
            outcome = setup(page=page)
            page._bgym_scale_factor = SCREENSHOT_SCALE
            return outcome

        task.setup = setup_at_scale
        return task

    return make_task


def action_functions() -> list[str]:
    """Names of the BrowserGym actions a policy may call (:data:`ACTION_SET`)."""
    from browsergym.core.action.highlevel import HighLevelActionSet

    return list(HighLevelActionSet(**ACTION_SET).action_set)


def schemas_for(screenshot_shape: Sequence[int], functions: Sequence[str]) -> SpaceSchemas:
    """The observation and action schemas for a screenshot of ``screenshot_shape``."""
    text = spaces.Text(min_length=0, max_length=MAX_TEXT_CHARS)
    observation = spaces.Dict(
        {
            **dict.fromkeys(TEXT_FIELDS, text),
            "screenshot": spaces.Box(0, 255, tuple(screenshot_shape), np.uint8),
        }
    )
    action = space_schema(spaces.Text(min_length=0, max_length=MAX_ACTION_CHARS))
    action["functions"] = list(functions)
    return SpaceSchemas(space_schema(observation), action)


def make_world(spec: RuntimeSpec) -> WebWorld:
    return WebWorld(spec)


def describe(spec: RuntimeSpec) -> SpaceSchemas:
    """Builds the world and resets it once (seed 0): the screenshot's shape is known only from
    a rendered page."""
    world = WebWorld(spec)
    try:
        obs = world.reset(0)
        return schemas_for(obs["screenshot"].shape, action_functions())
    finally:
        world.close()
