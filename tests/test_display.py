"""Progress for people: phase lines from a run's events and the judge's finalize lines."""

from __future__ import annotations

import io

from evopolicygym.display import FinalizeStep, RunDisplay


def feed(display: RunDisplay, budget: int = 8) -> None:
    display.event("m/toy/x", "run.open", {"budget": budget, "remaining": budget})
    for spent in range(1, budget + 1):
        display.event(
            "m/toy/x",
            "submit.finish",
            {"status": "ok", "mean_return": 1.5, "remaining_budget": budget - spent},
        )
    display.event("m/toy/x", "run.finalize", {"ok_checkpoints": 2})
    for k in (1, 2):
        for done in (2, 4):
            display.finalize("m/toy/x", FinalizeStep(k, done, 4, checkpoint=k, checkpoints=2))
    for done in (4, 8):
        display.finalize("m/toy/x", FinalizeStep(1, done, 8))
    display.event("m/toy/x", "run.close", {"outcome": "completed"})


def test_plain_lines_are_few_start_and_end_of_each_phase():
    stream = io.StringIO()
    feed(RunDisplay(stream=stream, live=False, interval=3600))
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[m/toy/x] agent: 0/8 episodes",
        "[m/toy/x] agent: 8/8 episodes, 8 submits, last ok mean 1.5",
        lines[2],
        lines[3],
        lines[4],
        lines[5],
    ]
    assert lines[2].startswith("[m/toy/x] validation: 2/8 episodes, checkpoint 1/2")
    assert lines[3].startswith("[m/toy/x] validation: 8/8 episodes, checkpoint 2/2")
    assert lines[4].startswith("[m/toy/x] held-out: 4/8 episodes, submit 1")
    assert lines[5].startswith("[m/toy/x] held-out: 8/8 episodes, submit 1")
    assert "episodes/s" in lines[3]


def test_verbose_shows_every_event_as_before():
    stream = io.StringIO()
    feed(RunDisplay(stream=stream, verbose=True))
    lines = stream.getvalue().splitlines()
    assert sum("submit.finish" in line for line in lines) == 8
    assert sum("finalize validation" in line for line in lines) == 4
    assert "[m/toy/x] finalize validation 2/2 (submit 2): 4/4 episodes" in lines
    assert "[m/toy/x] finalize held-out (submit 1): 8/8 episodes" in lines


def test_a_terminal_gets_one_updating_line_per_phase():
    stream = io.StringIO()
    feed(RunDisplay(stream=stream, live=True))
    text = stream.getvalue()
    for phase in ("agent", "validation", "held-out"):
        assert phase in text
    assert "8/8 episodes, 8 submits" in text and "checkpoint 2/2" in text


def test_validation_counts_the_episodes_of_checkpoints_validated_side_by_side():
    stream = io.StringIO()
    display = RunDisplay(stream=stream, live=False, interval=0)
    display.event("m/toy/x", "run.finalize", {"ok_checkpoints": 2})
    # Two lanes: each plays its share of checkpoint 1, then of checkpoint 2.
    for k, done in ((1, 2), (2, 2), (1, 4), (2, 4)):
        display.finalize("m/toy/x", FinalizeStep(k, done, 4, checkpoint=k, checkpoints=2))
    counts = [
        line.split("validation: ")[1].split(" episodes")[0]
        for line in stream.getvalue().splitlines()
    ]
    assert counts == ["2/8", "4/8", "6/8", "8/8"]


def test_a_resumed_validation_counts_the_checkpoints_validated_before():
    stream = io.StringIO()
    display = RunDisplay(stream=stream, live=False, interval=0)
    for done in (2, 4):
        display.finalize("m/toy/x", FinalizeStep(3, done, 4, checkpoint=3, checkpoints=3))
    assert stream.getvalue().splitlines()[-1].startswith("[m/toy/x] validation: 12/12 episodes")
