"""Resource limits of a policy worker, applied by the worker to itself before any policy code
runs (never via ``preexec_fn``: the judge is a threaded Flask server)."""

from __future__ import annotations

import resource
import signal
from typing import Any

# rlimit name -> (resource constant, LimitsSection field)
_RLIMITS = {
    "memory": (resource.RLIMIT_AS, "memory_bytes"),
    "cpu": (resource.RLIMIT_CPU, "cpu_seconds"),
    "processes": (resource.RLIMIT_NPROC, "max_processes"),
    "file_size": (resource.RLIMIT_FSIZE, "file_size_bytes"),
}

# signal that killed a worker -> what limit it means
SIGNAL_VERDICTS = {
    signal.SIGXCPU: "cpu_limit",
    signal.SIGXFSZ: "file_size_limit",
    signal.SIGKILL: "killed",
    signal.SIGSEGV: "worker_crash",
}


def apply_rlimits(limits: dict[str, Any]) -> dict[str, int]:
    """Lower this process's rlimits to the values in ``limits`` (a LimitsSection dump).

    Limits only ever go down: a soft or hard limit already below the request is kept. Core dumps
    are disabled. Returns what was applied, by rlimit name.
    """
    applied: dict[str, int] = {}
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, (which, field) in _RLIMITS.items():
        value = limits.get(field)
        if value is None:
            continue
        _soft, hard = resource.getrlimit(which)
        new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
        new_soft = min(value, new_hard)
        # RLIMIT_CPU sends SIGXCPU at the soft limit; keep a 1 s margin before the hard SIGKILL.
        if which == resource.RLIMIT_CPU and new_hard == value:
            new_hard = value + 1
        resource.setrlimit(which, (new_soft, new_hard))
        applied[name] = new_soft
    return applied
