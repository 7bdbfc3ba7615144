"""Learning curves: best-so-far train mean return against episodes spent, one panel per env."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def plot_learning_curves(table: pd.DataFrame, output: Path, *, title: str = "") -> Path:
    """Write one PNG with a panel per environment; every run is a step line coloured by entrant
    (repeats share a colour). Runs without an ok submit have no line; a panel says so when
    none of its runs has one."""
    import matplotlib

    matplotlib.use("Agg")  # no display on compute nodes; must precede pyplot
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    envs = list(dict.fromkeys(table["env"])) or [""]
    entrants = list(dict.fromkeys(table["entrant"]))
    colours = {e: plt.get_cmap("tab10")(i % 10) for i, e in enumerate(entrants)}
    columns = min(3, len(envs))
    rows = math.ceil(len(envs) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.4 * rows), squeeze=False)
    for axis, env in zip(axes.flat, envs, strict=False):
        labelled: set[str] = set()
        for _, run in table[table["env"] == env].iterrows():
            points = [
                (x, y)
                for x, y in zip(run["curve_episodes"], run["curve_best"], strict=True)
                if y is not None and not (isinstance(y, float) and math.isnan(y))
            ]
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            label = None if run["entrant"] in labelled else run["entrant"]
            labelled.add(run["entrant"])
            axis.step(
                xs, ys, where="post", marker="o", ms=3, color=colours[run["entrant"]], label=label
            )
        axis.set_title(env or "(no runs)", fontsize=10)
        axis.set_xlabel("training episodes spent")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_ylabel("best train mean return")
        axis.grid(alpha=0.3)
        if labelled:
            axis.legend(fontsize=8)
        else:
            axis.text(0.5, 0.5, "no ok submit", ha="center", va="center", transform=axis.transAxes)
    for axis in list(axes.flat)[len(envs) :]:
        axis.set_visible(False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=100)
    plt.close(figure)
    return output
