"""How a process ended, as an episode error kind: the one mapping from a wait status (or a
kill by the judge) to what the feedback says."""

from __future__ import annotations

import os
import signal

from evopolicygym.protocol import EpisodeErrorKind

# Signals the kernel sends for a limit, and what they mean.
_SIGNAL_KINDS = {
    signal.SIGXCPU: EpisodeErrorKind.CPU_LIMIT,
    signal.SIGXFSZ: EpisodeErrorKind.FILE_SIZE_LIMIT,
    # A SIGKILL we did not send comes from the kernel's OOM killer (or the memory cgroup).
    signal.SIGKILL: EpisodeErrorKind.OOM,
}


def describe_exit(status: int | None, what: str = "policy worker") -> tuple[EpisodeErrorKind, str]:
    """The error kind and message for a process that ended by itself with raw wait ``status``
    (None: its status is unknown, for example because its host is gone)."""
    if status is None:
        return EpisodeErrorKind.WORKER_CRASH, f"the {what} ended and its exit status is unknown"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        kind = _SIGNAL_KINDS.get(number, EpisodeErrorKind.WORKER_CRASH)
        return kind, f"the {what} was killed by {name} ({kind})"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return (
        EpisodeErrorKind.WORKER_CRASH,
        f"the {what} exited with status {code} (did the policy call exit?)",
    )
