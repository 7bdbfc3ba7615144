"""Isolation levels, and the probe that finds which ones work on this machine.

* ``namespaced``: every lane of workers runs inside bubblewrap (new user, pid, network, ipc,
  uts and mount namespaces; read-only interpreter, virtual environment and system libraries; a
  private, size-capped ``/tmp``; nothing of runs, data or home directories), plus everything of
  ``basic``.
* ``basic``: no namespaces; policy code runs after ``no_new_privs``, with no capabilities,
  under Landlock (file system, TCP, signals) where the kernel has it and a seccomp filter.
* ``process``: separate processes, resource limits, subreaper sweeps; nothing else.

Whatever the level, a process cap is applied where the machine allows one (a ``pids`` cgroup
when the judge runs as root, ``RLIMIT_NPROC`` otherwise), and the plan says which.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from . import _seccomp


class IsolationLevel(StrEnum):
    NAMESPACED = "namespaced"
    BASIC = "basic"
    PROCESS = "process"


LEVEL_ORDER = (IsolationLevel.NAMESPACED, IsolationLevel.BASIC, IsolationLevel.PROCESS)
# Known gaps of each level, stated in run.json and SECURITY.md.
LEVEL_GAPS = {
    IsolationLevel.NAMESPACED: (),
    IsolationLevel.BASIC: (
        "policy code shares the host's process, network and mount namespaces",
        "policy code's scratch directory is on the machine's disk: each file is limited in size, "
        "not their number, so a policy can fill the disk while its episode runs",
    ),
    IsolationLevel.PROCESS: (
        "policy code can read and write every file the judge's user can",
        "policy code can open network sockets, including to the judge",
        "policy code can signal and inspect the judge's user's other processes",
    ),
}


class IsolationUnavailable(RuntimeError):
    """The requested level does not work on this machine (the message says why)."""


@dataclass(frozen=True)
class IsolationPlan:
    """How policy workers are isolated on this machine, as probed."""

    level: IsolationLevel
    requested: str
    bwrap: str | None = None
    landlock_abi: int = 0
    seccomp: bool = False
    process_cap: str = "none"
    cgroup_parent: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def gaps(self) -> list[str]:
        gaps = list(LEVEL_GAPS[self.level])
        if self.level is not IsolationLevel.PROCESS:
            if not self.landlock_abi:
                gaps.append("no Landlock: file reads are limited only by the mount view")
            elif self.landlock_abi < 6:
                gaps.append("Landlock ABI < 6: policy code may signal other processes")
        if self.process_cap == "none":
            gaps.append("no process cap: a fork bomb is stopped only by the memory limit")
        return gaps + list(self.notes)


def _cgroup_parent() -> str | None:
    """A writable ``pids`` cgroup directory for lane caps (root only), or None."""
    if os.geteuid() != 0:
        return None
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if not (base / "cgroup.procs").exists():
            continue
        if base.name != "pids":
            controllers = base / "cgroup.controllers"
            if not controllers.exists() or "pids" not in controllers.read_text().split():
                continue
        parent = base / "evopolicygym"
        try:
            parent.mkdir(exist_ok=True)
            if base.name != "pids":
                (parent / "cgroup.subtree_control").write_text("+pids")
            probe = parent / f"probe-{os.getpid()}"
            probe.mkdir(exist_ok=True)
            (probe / "pids.max").write_text("8")
            probe.rmdir()
        except OSError:
            continue
        return str(parent)
    return None


def _unavailable(reasons: dict[IsolationLevel, str]) -> tuple[str, ...]:
    return tuple(f"{level} is unavailable here: {reason}" for level, reason in reasons.items())


def _run_probe(prefix: list[str]) -> dict[str, object] | str:
    """Run the in-sandbox self test (``python -m evopolicygym.sandbox._probe``) behind
    ``prefix``; its JSON verdict, or the reason it failed."""
    command = [*prefix, sys.executable, "-m", "evopolicygym.sandbox._probe"]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=30,
            env=probe_environment(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"unreadable probe output: {done.stdout[-200:]!r}"


def probe_environment() -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# Probes started ahead by probe_soon, by requested level.
_STARTED: dict[str, Future[IsolationPlan]] = {}


def probe_soon(requested: str = "auto") -> None:
    """Start :func:`probe` for ``requested`` in a background thread; the next :func:`probe`
    call for that level waits for it. ``evopolicygym run`` calls this first, so that the probe's
    sandboxed interpreter starts while the run loads its settings and libraries."""
    if requested in _STARTED:
        return
    future: Future[IsolationPlan] = Future()
    _STARTED[requested] = future

    def work() -> None:
        try:
            future.set_result(_probe(requested))
        except BaseException as exc:  # given to whoever waits in probe()
            future.set_exception(exc)

    threading.Thread(target=work, name="isolation-probe", daemon=True).start()


def probe(requested: str = "auto") -> IsolationPlan:
    """The plan for ``requested`` (``auto`` = strongest level that works here). Raises
    :class:`IsolationUnavailable` naming the reason when an explicit level does not work."""
    started = _STARTED.get(requested)
    return started.result() if started is not None else _probe(requested)


@functools.cache
def _probe(requested: str) -> IsolationPlan:
    if requested not in ("auto", *LEVEL_ORDER):
        raise IsolationUnavailable(
            f"unknown isolation level {requested!r}: use auto, namespaced, basic or process"
        )
    cgroup = _cgroup_parent()
    if cgroup:
        cap = "cgroup"
    elif os.geteuid() != 0:
        cap = "rlimit"
    else:
        cap = "none"
    reasons: dict[IsolationLevel, str] = {}
    wanted = LEVEL_ORDER if requested == "auto" else (IsolationLevel(requested),)
    for level in wanted:
        if level is IsolationLevel.PROCESS:
            return IsolationPlan(
                level, requested, process_cap=cap, cgroup_parent=cgroup, notes=_unavailable(reasons)
            )
        if not _seccomp.supported():
            reasons[level] = "no seccomp filter for this architecture"
            continue
        prefix: list[str] = []
        bwrap = None
        if level is IsolationLevel.NAMESPACED:
            from ._bwrap import bwrap_prefix

            bwrap = shutil.which("bwrap")
            if bwrap is None:
                reasons[level] = (
                    "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
                )
                continue
            prefix = bwrap_prefix(bwrap, writable=[], tmpfs_bytes=16 * 2**20)
        result = _run_probe(prefix)
        if isinstance(result, str):
            reasons[level] = result
            continue
        if not result.get("seccomp"):
            reasons[level] = f"the seccomp filter did not hold: {result}"
            continue
        return IsolationPlan(
            level,
            requested,
            bwrap=bwrap,
            landlock_abi=int(result.get("landlock_abi") or 0),
            seccomp=True,
            process_cap=cap,
            cgroup_parent=cgroup,
            notes=_unavailable(reasons),
        )
    detail = "; ".join(f"{level}: {reason}" for level, reason in reasons.items())
    raise IsolationUnavailable(f"isolation level {requested!r} does not work here ({detail})")
