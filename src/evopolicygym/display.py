"""What ``evopolicygym run`` shows a person while a run goes on.

On a terminal: one updating line per phase (``rich``): the agent phase (episodes spent of the
budget, submits, last train mean), validation (checkpoint k of N, episodes, episodes/s, time
left) and held-out (episodes, episodes/s, time left). Elsewhere (a log file, Snakemake): the same
information as plain lines, at most one per phase every ``interval`` seconds plus the start and
end of each phase. With ``verbose``, every progress event as one line (the detailed view).

Input comes from the run's event log (``event(name, fields)``) and from the judge's finalize
progress (``finalize(label, step)`` with a :class:`FinalizeStep`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TextIO

SHOWN = {
    "submit.finish",
    "run.finalize",
    "run.close",
    "agent.retry",
    "agent.retry.exhausted",
    "judge.error",
}
ALWAYS = {"agent.retry", "agent.retry.exhausted", "judge.error"}


class FinalizeStep(NamedTuple):
    """Progress of finalization: ``done`` of ``total`` hidden episodes of submit ``submit``
    evaluated. ``checkpoint`` of ``checkpoints`` numbers a validation among the run's ok
    checkpoints; both are 0 for the held-out evaluation. ``str()`` gives the log line."""

    submit: int
    done: int
    total: int
    checkpoint: int = 0
    checkpoints: int = 0

    @property
    def phase(self) -> str:
        return "validation" if self.checkpoints else "held-out"

    def __str__(self) -> str:
        where = f" {self.checkpoint}/{self.checkpoints}" if self.checkpoints else ""
        return f"{self.phase}{where} (submit {self.submit}): {self.done}/{self.total} episodes"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass
class Phase:
    """Counts of one phase; ``rate`` and ``left`` are measured from its start."""

    name: str
    total: int
    done: int = 0
    note: str = ""
    started: float = field(default_factory=time.monotonic)
    base: int = 0  # units already done when the phase (re)started, e.g. on resume

    def rate(self) -> float | None:
        elapsed = time.monotonic() - self.started
        measured = self.done - self.base
        return measured / elapsed if elapsed > 0 and measured > 0 else None

    def left(self) -> float | None:
        rate = self.rate()
        return (self.total - self.done) / rate if rate else None

    def text(self, unit: str) -> str:
        parts = [f"{self.done}/{self.total} {unit}"]
        if self.note:
            parts.append(self.note)
        rate, left = self.rate(), self.left()
        if rate is not None and self.name != "agent":
            parts.append(f"{rate:.1f} {unit}/s")
        if left is not None and self.done < self.total and self.name != "agent":
            parts.append(f"about {_duration(left)} left")
        return ", ".join(parts)


class RunDisplay:
    """Progress of one run for a person (see the module text). ``live`` defaults to whether
    ``stream`` is a terminal."""

    def __init__(
        self,
        *,
        verbose: bool = False,
        stream: TextIO | None = None,
        live: bool | None = None,
        interval: float = 15.0,
    ) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self.live = (not verbose) and (self.stream.isatty() if live is None else live)
        self.interval = interval
        self.label = ""
        self.phases: dict[str, Phase] = {}
        self._printed: dict[str, float] = {}
        self._bar = None
        self._tasks: dict[str, int] = {}
        self._validated: dict[int, int] = {}  # validation episodes done, by checkpoint number
        self._submits = 0

    # -- output ----------------------------------------------------------------------------------

    def line(self, text: str) -> None:
        """A message shown as it is (start, warnings, the end)."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def _show(self, name: str, unit: str, *, force: bool = False) -> None:
        phase = self.phases[name]
        text = f"{name}: {phase.text(unit)}"
        if self.live:
            self._live(name, phase, text)
            return
        now = time.monotonic()
        if force or now - self._printed.get(name, -1e9) >= self.interval:
            self._printed[name] = now
            self.line(f"[{self.label}] {text}")

    def _live(self, name: str, phase: Phase, text: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        if self._bar is None:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=24),
                TextColumn("{task.fields[info]}"),
                console=Console(file=self.stream),
                transient=False,
            )
            self._bar.start()
        info = text.split(": ", 1)[1]
        if name not in self._tasks:
            self._tasks[name] = self._bar.add_task(name, total=phase.total, info=info)
        self._bar.update(self._tasks[name], completed=phase.done, total=phase.total, info=info)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    # -- input -----------------------------------------------------------------------------------

    def event(self, label: str, name: str, fields: dict[str, Any]) -> None:
        """One event of the run's event log."""
        self.label = label
        if self.verbose:
            if name in SHOWN:
                details = " ".join(f"{k}={_short(v)}" for k, v in fields.items())
                self.line(f"[{label}] {name} {details}")
            return
        if name in ALWAYS:
            details = " ".join(f"{k}={_short(v)}" for k, v in fields.items())
            self.line(f"[{label}] {name} {details}")
        elif name == "run.open":
            budget, remaining = int(fields["budget"]), int(fields["remaining"])
            self.phases["agent"] = Phase(
                "agent", budget, budget - remaining, base=budget - remaining
            )
            self._show("agent", "episodes", force=True)
        elif name == "submit.finish" and "agent" in self.phases:
            phase = self.phases["agent"]
            self._submits += 1
            remaining = fields.get("remaining_budget")
            if remaining is not None:
                phase.done = phase.total - int(remaining)
            mean = fields.get("mean_return")
            last = f", last {fields.get('status')} mean {_short(mean)}" if mean is not None else ""
            phase.note = f"{self._submits} submits{last}"
            self._show("agent", "episodes", force=phase.done >= phase.total)
        elif name == "run.close":
            self.close()

    def finalize(self, label: str, step: FinalizeStep) -> None:
        """One progress step of the judge's finalization."""
        self.label = label
        if self.verbose:
            self.line(f"[{label}] finalize {step}")
            return
        if step.checkpoints:
            k, n, per = step.checkpoint, step.checkpoints, step.total
            phase = self.phases.get("validation")
            if phase is None or phase.total != n * per:
                # Checkpoints before the first one seen were validated before a resume.
                current = (k - 1) * per + step.done
                phase = Phase("validation", n * per, current, base=current)
                self.phases["validation"] = phase
                self._validated = {number: per for number in range(1, k)}
            # Lanes validate several checkpoints at once: each step counts its own.
            self._validated[k] = step.done
            phase.done = sum(self._validated.values())
            phase.note = f"checkpoint {k}/{n}"
            self._show("validation", "episodes", force=phase.done >= phase.total)
        else:
            phase = self.phases.setdefault(
                "held-out", Phase("held-out", step.total, step.done, base=step.done)
            )
            phase.done = step.done
            phase.note = f"submit {step.submit}"
            self._show("held-out", "episodes", force=step.done >= step.total)
