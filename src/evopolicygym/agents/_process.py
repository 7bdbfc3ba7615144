"""Stopping agent processes: every agent runs in its own process group (session), so that the
shells, tools and servers it spawns are stopped with it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from evopolicygym.sandbox import wait_exit


def signal_group(proc: subprocess.Popen, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group led by ``proc`` (no error if it is already gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """Wait ``grace`` seconds for ``proc`` to exit, then SIGTERM its group and wait again, then
    SIGKILL the group. Whatever is left of the group is killed even when ``proc`` exited."""
    for sig in (None, signal.SIGTERM):
        if sig is not None:
            signal_group(proc, sig)
        if wait_exit(proc, grace) is not None:
            break
    signal_group(proc, signal.SIGKILL)
    proc.wait()
