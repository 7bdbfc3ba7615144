"""Time limits and output capture around policy calls, inside the process that makes them."""

from __future__ import annotations

import io
import math
import resource
import signal
import time


class PolicyTimeout(BaseException):
    """Raised inside policy code when its call runs past its deadline. A BaseException so that
    ``except Exception`` in a policy does not swallow it."""


class Watchdog:
    """One periodic ``SIGALRM`` every ``TICK`` seconds compares the clock with ``deadline`` and
    raises :class:`PolicyTimeout` in whatever policy code is running; the traceback then shows
    where it was stuck. Outside policy calls ``deadline`` is infinite, so environment code is
    never interrupted. (Arming a timer around every call would cost more than a CartPole step.)

    Callers set ``deadline`` (a ``time.monotonic()`` value) before a policy call and reset it
    to ``math.inf`` after; a policy that blocks the signal is killed from outside instead."""

    TICK = 0.05

    def __init__(self) -> None:
        self.deadline = math.inf
        signal.signal(signal.SIGALRM, self._check)
        signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)

    def _check(self, signum, frame) -> None:
        if time.monotonic() >= self.deadline:
            self.deadline = math.inf
            raise PolicyTimeout("time limit reached")

    def call(self, seconds: float, function, *args):
        self.deadline = time.monotonic() + max(seconds, 0.0)
        try:
            return function(*args)
        finally:
            self.deadline = math.inf

    @staticmethod
    def stop() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


def near_memory_limit(fraction: float = 0.85) -> bool:
    """Whether this process holds at least ``fraction`` of its address-space limit: a policy
    stopped by a time limit while this is true was still allocating (a memory bomb that merely
    allocates slower than the clock), so the error is ``oom``, not a timeout."""
    limit, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return False
    try:
        with open("/proc/self/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024 >= fraction * limit
    except OSError:
        pass
    return False


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
            text += cut_marker(self.dropped, self.cap, "characters")
        return text


def cut_marker(dropped: int, cap: int, unit: str) -> str:
    return f"\n[... {dropped} {unit} cut: output is capped at {cap} per episode]\n"
