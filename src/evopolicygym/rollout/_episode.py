"""The episode loop: one episode of a policy object on a world, with time limits, captured
output, optional recording, and every failure turned into an episode error.

This is the only sequential loop (train submits, and readiness checks that play a policy);
hidden evaluation steps several episodes in lock step (``_lockstep``) with the same rules.
"""

from __future__ import annotations

import errno
import math
import random
import sys
import time
from typing import Any

import numpy as np

# NumPy loads ``numpy.random`` on first use: imported here, it comes with the worker module that
# lane hosts import before they fork, instead of costing every worker of an environment that
# does not use it itself (the toy's) 20-30 ms at its first episode.
import numpy.random

from evopolicygym.envs import World
from evopolicygym.envs.jsonsafe import plain_action
from evopolicygym.protocol import EpisodeDone, EpisodeError, EpisodeErrorKind, Task

from ._capture import CappedWriter, PolicyTimeout, Watchdog, near_memory_limit
from ._loader import describe_failure
from ._recorder import EpisodeRecorder

_FLOATS = frozenset({float})


def seed_policy_randomness(episode_index: int) -> None:
    """Python's ``random`` and NumPy's legacy global generator, seeded before ``reset``."""
    random.seed(episode_index)
    np.random.seed(episode_index % 2**32)


class PolicyFailure(Exception):
    """A policy call failed somewhere the traceback cannot be taken from (another process)."""

    def __init__(self, kind: EpisodeErrorKind, message: str, traceback_text: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.traceback_text = traceback_text


def timeout_error(kind: EpisodeErrorKind, call: str, limits: dict[str, Any]) -> str:
    limit = (
        limits["rollout_wall_s"]
        if kind is EpisodeErrorKind.EPISODE_TIMEOUT
        else limits["act_timeout_s"]
    )
    return f"{call}() exceeded the {limit} s {kind.replace('_', ' ')} limit"


def play_episode(
    world: World,
    policy: Any,
    task: Task,
    *,
    max_steps: int,
    limits: dict[str, Any],
    watchdog: Watchdog,
    recorder: EpisodeRecorder | None = None,
    system=None,
    prefix_output: tuple[str, str] = ("", ""),
) -> EpisodeDone:
    """Play ``task`` with ``policy`` (an object with ``reset``/``act``) on ``world``.

    The policy's ``print`` output is captured per episode (capped at ``limits["output_bytes"]``,
    ``prefix_output`` first); ``system`` is the checkpoint directory whose paths tracebacks show
    as ``system/``. Never raises for a policy or environment fault."""
    act_limit, wall_limit = limits["act_timeout_s"], limits["rollout_wall_s"]
    cap = limits["output_bytes"]
    out, err = CappedWriter(cap), CappedWriter(cap)
    out.write(prefix_output[0])
    err.write(prefix_output[1])
    sys.stdout, sys.stderr = out, err
    total, step, length = 0.0, 0, 0
    error: EpisodeError | None = None
    kind = EpisodeErrorKind.RESET_ERROR
    deadline = time.monotonic() + wall_limit
    try:
        seed_policy_randomness(task.episode_index)
        watchdog.call(min(act_limit, wall_limit), policy.reset, task.episode_index)
        kind = EpisodeErrorKind.ENV_ERROR
        obs = world.reset(task.seed)
        # Looked up once: this loop runs every step of every train episode.
        observe, env_step, act = world.observe, world.step, policy.act
        clock, inf = time.monotonic, math.inf
        floats_only = _FLOATS.issuperset
        acting, stepping = EpisodeErrorKind.ACT_ERROR, EpisodeErrorKind.ENV_ERROR
        keep_visible = 0
        if recorder is not None:
            keep_visible = recorder.visible_steps(obs)
            record_obs, record_visible = recorder.observations.append, recorder.visible.append
            record_action, record_info = recorder.actions.append, recorder.infos.append
            record_reward = recorder.rewards.append
        for step in range(max_steps):
            visible = observe(obs)
            kind = acting
            started = clock()
            watchdog.deadline = started + act_limit if started + act_limit < deadline else deadline
            try:
                action = act(visible)
                kind = type(action)
                # Anything but an exact int or a list of exact floats (whose reading runs no
                # code of the policy's) is converted now, within the call's limit.
                if kind is not int and not (kind is list and floats_only(map(type, action))):
                    action = plain_action(action)
            finally:
                watchdog.deadline = inf
            kind = stepping
            next_obs, reward, terminated, truncated, info = env_step(action)
            total += reward
            if recorder is not None:
                record_obs(obs)
                if step < keep_visible:
                    record_visible(visible)
                record_action(action)
                record_info(info)
                record_reward(reward)
            obs = next_obs
            if terminated or truncated:
                if recorder is not None:
                    recorder.ended = (terminated, truncated)
                break
        length = step + 1
    except PolicyTimeout as exc:
        timed = (
            EpisodeErrorKind.EPISODE_TIMEOUT
            if time.monotonic() >= deadline - 1e-3
            else EpisodeErrorKind.ACT_TIMEOUT
        )
        call = "reset" if kind is EpisodeErrorKind.RESET_ERROR else "act"
        message = timeout_error(timed, call, limits)
        if near_memory_limit():
            timed, message = EpisodeErrorKind.OOM, f"{message} while holding its memory limit"
        error = _error(timed, exc, step, system, watchdog, message)
    except PolicyFailure as exc:
        error = EpisodeError(exc.kind, exc.message, exc.traceback_text, step)
    except MemoryError as exc:
        error = _error(EpisodeErrorKind.OOM, exc, step, system, watchdog)
    except OSError as exc:
        # CPython ignores SIGXFSZ, so the file size limit surfaces as EFBIG.
        if exc.errno == errno.EFBIG:
            kind = EpisodeErrorKind.FILE_SIZE_LIMIT
        error = _error(kind, exc, step, system, watchdog)
    except BaseException as exc:  # sys.exit() or KeyboardInterrupt in a policy end only its episode
        error = _error(kind, exc, step, system, watchdog)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if error is not None:
        length = len(recorder) if recorder is not None else step
    done = EpisodeDone(
        index=task.index,
        episode_return=total,
        length=length,
        error=error,
        stdout=out.value(),
        stderr=err.value(),
    )
    if recorder is not None:
        done.steps, done.observations, done.obs_format = recorder.finish()
    return done


def _error(
    kind: EpisodeErrorKind,
    exc: BaseException,
    step: int,
    system,
    watchdog: Watchdog,
    message: str | None = None,
) -> EpisodeError:
    """The episode's error for ``exc``; ``message`` replaces the exception's own text."""
    described, text = describe_failure(exc, system, watchdog)
    return EpisodeError(kind, message or described, text, step)
