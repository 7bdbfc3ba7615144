"""The policy worker: a separate process that loads one checkpoint and runs episodes.

Started by :class:`~evopolicygym.rollout.pool.WorkerPool` as ``python -m
evopolicygym.rollout.worker`` in its own session (process group). It talks to the judge only
through framed messages on the stdin/stdout pipes it inherited (moved to private descriptors at
start-up so that policy prints cannot corrupt them; fd 0 becomes /dev/null and fd 1 goes to the
worker's stderr log). Protocol:

1. judge -> ``prepare`` {env_spec, limits}: the worker builds the environment and waits (a warm
   worker); judge -> ``init`` {checkpoint, scratch, obs_space, action_space, env_meta}: the worker
   lowers its rlimits, copies the checkpoint into a scratch directory
   (its cwd, so runtime files and simulator logs never touch the run), imports ``policy.py`` and
   constructs ``Policy``. Reply ``ready`` or ``init_failed`` {verdict, message, traceback}.
   The judge owns the scratch directory and removes it after the worker exits.
   With ``sealed`` (hidden validation and held-out pools) the policy is loaded in a child forked
   after the environment is built: the child answers ``reset``/``act`` requests over a socket
   and never holds a seed, a reward or the environment, so it can neither read hidden cases nor
   tamper with scores; this process enforces its time limits and kills it when one is missed.
2. judge -> ``episode`` {index, seed, episode_index, max_steps, record}; reply ``episode``
   {index, return, length, error, stdout, stderr, obs_format} with blobs
   [trajectory.jsonl bytes, observations bytes] when ``record``.
   A worker whose policies all ran sealed accepts another sealed ``init`` (the next checkpoint
   of a finalize) instead of exiting: it is reused without paying process start-up again.
3. judge closes the pipe; the worker exits.

Time limits are enforced twice: here with ``SIGALRM`` (so the error carries a traceback of where
the policy was stuck) and by the judge, which kills the whole process group when a reply is late.
"""

from __future__ import annotations

import errno
import gc
import importlib.util
import io
import math
import os
import random
import shutil
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from evopolicygym.sandbox import FrameError, FrameReader, FrameTimeout, apply_rlimits, write_frame

EXTERNALIZE_BYTES = 4096


class PolicyTimeout(BaseException):
    """Raised inside policy code by SIGALRM. A BaseException so ``except Exception`` in a policy
    does not swallow it."""


class Watchdog:
    """Raises :class:`PolicyTimeout` inside a policy call that runs past its deadline, and ends
    the worker when the judge is gone.

    One periodic ``SIGALRM`` every ``TICK`` seconds checks the deadline, instead of arming a
    timer around every call: two ``setitimer`` calls per step cost more than a CartPole step.
    Outside policy calls the deadline is infinite, so environment code is never interrupted.
    The same tick notices when the judge died (this process was re-parented, as after a
    ``SIGKILL`` of ``evopolicygym run``) and kills the worker's process group: the worker, its
    sealed policy process and anything a policy started, instead of finishing a long episode
    nobody will read."""

    TICK = 0.05

    def __init__(self) -> None:
        self.deadline = math.inf
        self.judge_pid = os.getppid()
        signal.signal(signal.SIGALRM, self._check)
        signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)

    def _check(self, signum, frame) -> None:
        if os.getppid() != self.judge_pid:
            if os.getpgrp() == os.getpid():  # the pool starts workers as group leaders
                os.killpg(os.getpgrp(), signal.SIGKILL)
            os._exit(1)
        if time.monotonic() >= self.deadline:
            self.deadline = math.inf
            raise PolicyTimeout("time limit reached")

    def call(self, seconds: float, function, *args):
        self.deadline = time.monotonic() + max(seconds, 0.0)
        try:
            return function(*args)
        finally:
            self.deadline = math.inf


class CappedWriter(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int):
        self.cap = cap
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.cap - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def value(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[... {self.dropped} characters cut: output is capped at {self.cap} per episode]\n"
        return text


class PolicyFailure(Exception):
    """A policy call failed in a sealed policy process (error text comes from that process) or
    the process went away. ``category`` is an episode error kind."""

    def __init__(self, category: str, message: str, traceback_text: str | None = None):
        super().__init__(message)
        self.category = category
        self.message = message
        self.traceback_text = traceback_text


class LocalPolicy:
    """The policy object in this process (train episodes: fast, with captured output)."""

    def __init__(self, policy: Any, watchdog: Watchdog):
        self.policy = policy
        self.watchdog = watchdog

    def reset(self, episode_index: int, limit: float) -> None:
        random.seed(episode_index)
        _seed_numpy(episode_index)
        self.watchdog.call(limit, self.policy.reset, episode_index)

    def act(self, obs: Any, limit: float) -> Any:
        return self.watchdog.call(limit, self.policy.act, obs)


class SealedPolicy:
    """The policy in a forked child process (hidden evaluations). The child gets no seed, no
    reward and no handle on the environment; this side enforces time limits on every call and
    kills the child when one is missed."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid = pid
        self.sock = sock
        self.reader = FrameReader(sock.fileno())
        self.alive = True

    def _call(self, request: dict[str, Any], limit: float) -> dict[str, Any]:
        try:
            write_frame(self.sock.fileno(), request)
            reply, _ = self.reader.read(time.monotonic() + max(limit, 0.0))
        except FrameTimeout:
            self.kill()
            raise PolicyTimeout("time limit reached") from None
        except (FrameError, OSError):
            raise PolicyFailure(*self._death()) from None
        if reply.get("op") == "error":
            raise PolicyFailure(
                str(reply.get("category")), str(reply.get("message")), reply.get("traceback")
            )
        return reply

    def reset(self, episode_index: int, limit: float) -> None:
        self._call({"op": "reset", "episode_index": episode_index}, limit)

    def act(self, obs: Any, limit: float) -> Any:
        return self._call({"op": "act", "obs": obs}, limit).get("action")

    def _death(self) -> tuple[str, str]:
        self.alive = False
        _, status = os.waitpid(self.pid, 0)
        if os.WIFSIGNALED(status):
            sig = signal.Signals(os.WTERMSIG(status))
            category = {signal.SIGXCPU: "cpu_limit", signal.SIGKILL: "oom"}.get(sig, "worker_crash")
            return category, f"policy process was killed by {sig.name} ({category})"
        return "worker_crash", f"policy process exited with status {os.WEXITSTATUS(status)}"

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.sock.close()


class Worker:
    def __init__(self, reader: FrameReader, out_fd: int):
        self.watchdog = Watchdog()
        self.reader = reader
        self.out_fd = out_fd
        self.policy: LocalPolicy | SealedPolicy | None = None
        self.world: Any = None
        self.scratch: Path | None = None
        self.pending_output = ("", "")
        self.init_message: dict[str, Any] = {}
        self.limits: dict[str, Any] = {}
        # True while every policy this process served ran sealed in a child: it is then clean.
        self.sealed_only = True

    # -- helpers -------------------------------------------------------------------------------

    def _relative_traceback(self, exc: BaseException) -> str:
        """The traceback from the first frame of policy code on, with scratch paths shown as
        ``system/`` paths so the agent recognises its files."""
        frames = traceback.extract_tb(exc.__traceback__)
        scratch = str(self.scratch) if self.scratch else None
        start = next(
            (i for i, f in enumerate(frames) if scratch and f.filename.startswith(scratch)), 0
        )
        lines = ["Traceback (most recent call last):\n"]
        lines += traceback.format_list(frames[start:])
        lines += traceback.format_exception_only(type(exc), exc)
        text = "".join(lines)
        return text.replace(scratch + "/", "system/") if scratch else text

    def _capture(self, limit: int):
        out, err = CappedWriter(limit), CappedWriter(limit)
        sys.stdout, sys.stderr = out, err
        return out, err

    def _release(self) -> None:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__

    def send(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> None:
        write_frame(self.out_fd, header, blobs)

    # -- start-up ------------------------------------------------------------------------------

    def prepare(self, message: dict[str, Any]) -> str | None:
        """Build the environment; returns an error text when that fails."""
        import numpy  # noqa: F401  (imported while warm: every episode seeds and stacks with it)

        from evopolicygym.envs import EnvSpec

        try:
            self.world = EnvSpec.model_validate(message["env_spec"]).make_world()
        except Exception as exc:  # a harness or dependency fault, not the policy's
            return f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        return None

    def init(self, message: dict[str, Any], env_problem: str | None) -> bool:
        if env_problem is not None:
            self.send(
                {
                    "op": "init_failed",
                    "verdict": "env_error",
                    "message": env_problem.splitlines()[0],
                    "traceback": env_problem,
                }
            )
            return False
        self.init_message = message
        self.scratch = Path(message["scratch"]) / "system"
        shutil.copytree(
            message["checkpoint"],
            self.scratch,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        os.chdir(self.scratch)
        if message.get("sealed"):
            failure = self._fork_policy()
        else:
            self.sealed_only = False
            apply_rlimits(self.limits)
            failure, policy = self._load_policy()
            if policy is not None:
                self.policy = LocalPolicy(policy, self.watchdog)
        # Everything loaded so far lives as long as the worker: keep it out of the collector's
        # way (recording allocates per step, and full collections would rescan these objects).
        gc.freeze()
        self.send(failure or {"op": "ready"})
        return failure is None

    def _load_policy(self) -> tuple[dict[str, Any] | None, Any]:
        """Import ``policy.py`` and construct ``Policy`` in this process, within the init time
        limit. Returns ``(failure header or None, policy or None)``."""
        message, limits = self.init_message, self.limits
        sys.path.insert(0, str(self.scratch))
        out, err = self._capture(limits["output_bytes"])
        phase = "import_error"
        try:
            spec = importlib.util.spec_from_file_location("policy", self.scratch / "policy.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules["policy"] = module
            deadline = time.monotonic() + limits["init_timeout_s"]
            self.watchdog.call(limits["init_timeout_s"], spec.loader.exec_module, module)
            phase = "init_error"
            policy_class = getattr(module, "Policy", None)
            if policy_class is None:
                raise AttributeError("policy.py defines no class Policy")
            policy = self.watchdog.call(
                deadline - time.monotonic(),
                policy_class,
                message["obs_space"],
                message["action_space"],
                message["env_meta"],
            )
        except PolicyTimeout as exc:
            return self._init_failure("init_timeout", exc, out, err), None
        except MemoryError as exc:
            return self._init_failure("oom", exc, out, err), None
        except BaseException as exc:
            return self._init_failure(phase, exc, out, err), None
        finally:
            self._release()
        self.pending_output = (out.value(), err.value())
        return None, policy

    def _init_failure(
        self, verdict: str, exc: BaseException, out: CappedWriter, err: CappedWriter
    ) -> dict[str, Any]:
        message = f"{type(exc).__name__}: {exc}"
        if verdict == "init_timeout":
            message = f"import + Policy() took longer than {self.limits['init_timeout_s']} s"
        return {
            "op": "init_failed",
            "verdict": verdict,
            "message": message,
            "traceback": self._relative_traceback(exc),
            "stdout": out.value(),
            "stderr": err.value(),
        }

    def _fork_policy(self) -> dict[str, Any] | None:
        """Start a sealed policy process (fork: the environment is built, no seed given yet)."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the policy process: never returns
            ours.close()
            self._serve_sealed(theirs)
        theirs.close()
        sealed = SealedPolicy(pid, ours)
        try:
            reply, _ = sealed.reader.read(time.monotonic() + self.limits["init_timeout_s"] + 5)
        except FrameTimeout:
            sealed.kill()
            return {
                "op": "init_failed",
                "verdict": "init_timeout",
                "message": f"import + Policy() took longer than {self.limits['init_timeout_s']} s",
            }
        except (FrameError, OSError):
            category, text = sealed._death()
            return {
                "op": "init_failed",
                "verdict": "oom" if category == "oom" else "worker_crash",
                "message": text,
            }
        if reply.get("op") != "ready":
            sealed.kill()
            return reply
        self.policy = sealed
        return None

    def _serve_sealed(self, sock: socket.socket) -> None:
        """Body of a sealed policy process: load the policy, then answer reset/act requests."""
        status = 0
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)  # the parent enforces every time limit
            os.close(self.reader.fd)
            os.close(self.out_fd)
            self.world = None
            apply_rlimits(self.limits)
            failure, policy = self._load_policy()
            write_frame(sock.fileno(), failure or {"op": "ready"})
            if failure is None:
                self._answer(sock, policy)
        except BaseException:
            status = 1
        finally:
            os._exit(status)

    def _answer(self, sock: socket.socket, policy: Any) -> None:
        from evopolicygym.envs.jsonsafe import to_jsonsafe

        reader = FrameReader(sock.fileno())
        sys.stdout = sys.stderr = CappedWriter(0)  # nobody reads hidden-evaluation output
        while True:
            try:
                request, _ = reader.read()
            except FrameError:
                return
            phase = "reset_error" if request.get("op") == "reset" else "act_error"
            try:
                if request.get("op") == "reset":
                    LocalPolicy(policy, self.watchdog).reset(request["episode_index"], math.inf)
                    reply: dict[str, Any] = {"op": "ok"}
                else:
                    reply = {"op": "action", "action": to_jsonsafe(policy.act(request["obs"]))}
            except BaseException as exc:
                category = "oom" if isinstance(exc, MemoryError) else phase
                reply = {
                    "op": "error",
                    "category": category,
                    "message": f"{type(exc).__name__}: {exc}",
                    "traceback": self._relative_traceback(exc),
                }
            write_frame(sock.fileno(), reply)

    # -- episodes ------------------------------------------------------------------------------

    def episode(self, message: dict[str, Any]) -> None:
        index, record = message["index"], message["record"]
        limits = self.limits
        act_limit, wall_limit = limits["act_timeout_s"], limits["rollout_wall_s"]
        world = self.world
        rows: list[dict[str, Any]] = []
        raw_obs: list[Any] = []
        # A row keeps the policy's (list) form of its observation only while the episode's
        # observations could still stay inline: an image's list form costs megabytes per step.
        keep_visible = not message.get("obs_external", False)
        inline_bytes = 0
        total, step, error = 0.0, 0, None
        out, err = self._capture(limits["output_bytes"])
        init_out, init_err = self.pending_output
        out.write(init_out)
        err.write(init_err)
        self.pending_output = ("", "")
        deadline = time.monotonic() + wall_limit
        phase = "reset_error"
        try:
            if isinstance(self.policy, SealedPolicy) and not self.policy.alive:
                failure = self._fork_policy()  # the last one was killed: a fresh policy process
                if failure is not None:
                    raise PolicyFailure(
                        "worker_crash", f"policy could not restart: {failure.get('message')}"
                    )
            policy = self.policy
            policy.reset(message["episode_index"], min(act_limit, wall_limit))
            phase = "env_error"
            obs = world.reset(message["seed"] % 2**32)
            for step in range(message["max_steps"]):
                visible = world.observe(obs)
                phase = "act_error"
                action = policy.act(visible, min(act_limit, deadline - time.monotonic()))
                phase = "env_error"
                turn = world.step(action)
                total += turn.reward
                if record:
                    raw_obs.append(obs)
                    if keep_visible:
                        inline_bytes += _nbytes(obs)
                        if inline_bytes > EXTERNALIZE_BYTES:
                            keep_visible = False
                            for row in rows:
                                row["obs"] = None
                    rows.append(
                        {
                            "t": step,
                            "obs": visible if keep_visible else None,
                            "action": action,
                            "reward": turn.reward,
                            "terminated": turn.terminated,
                            "truncated": turn.truncated,
                            "info": turn.info,
                        }
                    )
                obs = turn.obs
                if turn.terminated or turn.truncated:
                    break
            length = len(rows) if record else step + 1
        except PolicyTimeout as exc:
            kind = "episode_timeout" if time.monotonic() >= deadline - 1e-3 else "act_timeout"
            limit = wall_limit if kind == "episode_timeout" else act_limit
            error = self._error(
                kind,
                f"{phase.split('_')[0]}() exceeded the {limit} s {kind.replace('_', ' ')} limit",
                exc,
                step,
            )
        except PolicyFailure as exc:
            error = {
                "category": exc.category,
                "message": exc.message,
                "traceback": exc.traceback_text,
                "step_index": step,
            }
        except MemoryError as exc:
            error = self._error("oom", f"MemoryError: {exc}", exc, step)
        except OSError as exc:
            # CPython ignores SIGXFSZ, so the file size rlimit surfaces as EFBIG.
            category = "file_size_limit" if exc.errno == errno.EFBIG else phase
            error = self._error(category, f"{type(exc).__name__}: {exc}", exc, step)
        except Exception as exc:
            error = self._error(phase, f"{type(exc).__name__}: {exc}", exc, step)
        finally:
            self._release()
        if error is not None:
            length = len(rows) if record else step
        header: dict[str, Any] = {
            "op": "episode",
            "index": index,
            "return": total,
            "length": length,
            "error": error,
            "stdout": out.value(),
            "stderr": err.value(),
            "obs_format": None,
        }
        blobs: list[bytes] = []
        if record:
            obs_blob, header["obs_format"] = _externalize(
                raw_obs,
                always=message.get("obs_external", False),
                compress_images=message.get("compress_images", False),
            )
            if obs_blob is not None:
                for row in rows:
                    row["obs"] = None
            elif not keep_visible:  # large but not stackable (ragged): inline after all
                for row, raw in zip(rows, raw_obs, strict=True):
                    row["obs"] = world.observe(raw)
            blobs = [_jsonl(rows), obs_blob or b""]
        self.send(header, blobs)

    def _error(self, category: str, message: str, exc: BaseException, step: int) -> dict[str, Any]:
        return {
            "category": category,
            "message": message,
            "traceback": self._relative_traceback(exc),
            "step_index": step,
        }

    def serve(self) -> int:
        prepare, _ = self.reader.read()
        self.limits = prepare["limits"]
        env_problem = self.prepare(prepare)
        try:
            header, _ = self.reader.read()
        except Exception:
            return 0  # a warm worker that was never used
        if header.get("op") != "init" or not self.init(header, env_problem):
            return 0
        while True:
            try:
                message, _ = self.reader.read()
            except Exception:
                return 0  # judge closed the pipe: we are done
            if message.get("op") == "episode":
                self.episode(message)
            elif message.get("op") == "init" and message.get("sealed") and self.sealed_only:
                # Policy code never ran in this process, so it may serve another checkpoint.
                self._retire_sealed()
                self.init(message, None)
            else:
                return 0

    def _retire_sealed(self) -> None:
        if isinstance(self.policy, SealedPolicy):
            self.policy.kill()
        self.policy = None
        if self.scratch is not None:
            os.chdir(self.scratch.parent)
            shutil.rmtree(self.scratch, ignore_errors=True)


def _seed_numpy(value: int) -> None:
    import numpy

    numpy.random.seed(value % 2**32)


def _nbytes(obs: Any) -> int:
    """Bytes ``obs`` adds to a stack of observations (as ``_externalize`` counts them)."""
    if isinstance(obs, dict):
        return sum(_nbytes(value) for value in obs.values())
    return getattr(obs, "nbytes", 8)


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    """``trajectory.jsonl`` bytes. Observations and info are JSON-safe already; the policy's raw
    actions may hold numpy values or anything else, made JSON-safe only when orjson refuses."""
    import orjson

    from evopolicygym.envs.jsonsafe import to_jsonsafe

    lines = []
    for row in rows:
        try:
            lines.append(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY))
        except TypeError:
            lines.append(orjson.dumps(to_jsonsafe(row)))
    return b"\n".join(lines) + b"\n" if lines else b""


def _externalize(
    raw_obs: list[Any], *, always: bool, compress_images: bool
) -> tuple[bytes | None, str | None]:
    """Stack observations into ``observations.npy`` (arrays) or ``.npz`` (dicts of arrays)
    when the spec asks for external storage or the stack exceeds 4 KiB; ``(None, None)`` keeps
    them inline. Integer arrays within [0, 255] are stored as uint8, and uint8 data is
    compressed: always inside an ``.npz``, and with ``compress_images`` a uint8 array goes to a
    compressed ``.npz`` under the key ``obs`` instead of a plain ``.npy`` (the reference
    format, which cannot be compressed; pixel frames shrink 30-400x)."""
    import numpy as np

    if not raw_obs:
        return None, None
    buffer = io.BytesIO()
    try:
        if isinstance(raw_obs[0], dict):
            keys = list(raw_obs[0])
            arrays = {str(k): _compact(np.stack([np.asarray(o[k]) for o in raw_obs])) for k in keys}
            if not always and sum(a.nbytes for a in arrays.values()) <= EXTERNALIZE_BYTES:
                return None, None
            if any(a.dtype == np.uint8 for a in arrays.values()):
                np.savez_compressed(buffer, **arrays)
            else:
                np.savez(buffer, **arrays)
            return buffer.getvalue(), "npz"
        array = np.stack([np.asarray(o) for o in raw_obs])
        if array.dtype == object or (not always and array.nbytes <= EXTERNALIZE_BYTES):
            return None, None
        array = _compact(array)
        if compress_images and array.dtype == np.uint8:
            np.savez_compressed(buffer, obs=array)
            return buffer.getvalue(), "npz"
        np.save(buffer, array, allow_pickle=False)
        return buffer.getvalue(), "npy"
    except (ValueError, TypeError, KeyError):  # ragged or mixed observations stay inline
        return None, None


def _compact(array):
    import numpy as np

    if array.dtype.kind in "iu" and array.size and array.min() >= 0 and array.max() <= 255:
        return array.astype(np.uint8)
    return array


def main() -> int:
    # Move the message pipes off fds 0/1 so stray prints (even from C code) cannot corrupt them.
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.environ.pop("PYTHONSTARTUP", None)
    return Worker(FrameReader(in_fd), out_fd).serve()


if __name__ == "__main__":
    sys.exit(main())
