"""Build a suite's report files from its run records."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..suites import Suite, load_suite
from ._archive import archive_cells, archive_families, read_archive
from ._curves import plot_learning_curves
from ._format import html_table, markdown_table
from ._rank import cells_from_runs, rank_scores
from ._table import MISSING, UNREADABLE, record_row, results_table

RUN_COLUMNS = [
    "job",
    "env",
    "entrant",
    "status",
    "final_score",
    "best_submit_index",
    "n_submits",
    "budget_used",
    "wall_time_seconds",
    "error",
]
RANK_NOTE = (
    "Rank score: within each environment, place = 1 + entrants strictly better (ties share the "
    "better place), score = (N - place) / (N - 1), averaged over environments. A cell's score "
    "is the mean held-out score of its completed runs; a cell with none is placed last and "
    "scores 0."
)


@dataclass(frozen=True)
class ReportFiles:
    """Where the report goes. :meth:`in_dir` gives the standard names."""

    table: Path
    leaderboard: Path
    scores: Path
    curves: Path
    html: Path

    @classmethod
    def in_dir(cls, directory: Path) -> ReportFiles:
        directory = Path(directory)
        return cls(
            table=directory / "results.parquet",
            leaderboard=directory / "leaderboard.md",
            scores=directory / "leaderboard.csv",
            curves=directory / "curves.png",
            html=directory / "report.html",
        )


@dataclass(frozen=True)
class Report:
    title: str
    table: pd.DataFrame
    cells: pd.DataFrame
    board: pd.DataFrame

    def status_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.table["status"].value_counts().items()}

    def summary_line(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.status_counts().items()))
        return f"{len(self.table)} runs: {counts or 'none'}"

    def per_env(self) -> pd.DataFrame:
        """Environments x entrants; a suite cell says how many of its runs did not complete."""
        labels = self.cells.assign(text=[_cell_label(row) for row in self.cells.to_dict("records")])
        pivot = labels.pivot(index="env", columns="entrant", values="text")
        order = list(self.board["entrant"])
        return pivot.reindex(columns=order).reset_index()

    def final_table(self) -> str:
        """What a suite prints at the end: summary, leaderboard and per-env scores."""
        return (
            f"{self.title}: {self.summary_line()}\n\n"
            + markdown_table(self.board)
            + "\n"
            + markdown_table(self.per_env())
        )


def _cell_label(cell: dict) -> str:
    score = cell["score"]
    text = "—" if pd.isna(score) else f"{score:.3f}"
    if cell.get("source") == "suite" and cell.get("failed"):
        text += f" ({int(cell['failed'])}/{int(cell['runs'])} not completed)"
    return text


def _families(envs: list[str], archive: pd.DataFrame | None) -> dict[str, str]:
    from ..envs import UnknownEnvironmentError, get_env

    known = archive_families(archive) if archive is not None else {}
    families = {}
    for env in envs:
        if env in known:
            families[env] = known[env]
            continue
        try:
            families[env] = get_env(env, bulk=env.startswith("gymnasium/")).family
        except (UnknownEnvironmentError, ImportError, OSError, ValueError):
            families[env] = ""
    return families


def assemble(
    suite: Suite, archive_path: Path | None = None, records: list[Path] | None = None
) -> Report:
    """Read the suite's records (``records`` in job order, default the jobs' own paths) and rank
    its entrants, with the archived ones on shared environments."""
    table = results_table(records or (), suite=suite)
    archive = read_archive(archive_path) if archive_path else None
    envs = list(dict.fromkeys(table["env"]))
    cells = cells_from_runs(table, _families(envs, archive))
    if archive is not None:
        published = archive_cells(archive, envs, set(cells["entrant"]))
        if not published.empty:
            cells = pd.concat([cells, published], ignore_index=True)
    board = rank_scores(cells) if not cells.empty else pd.DataFrame(columns=["entrant"])
    return Report(title=suite.name, table=table, cells=cells, board=board)


def _markdown(report: Report) -> str:
    runs = report.table[RUN_COLUMNS]
    return (
        f"# {report.title}\n\n{report.summary_line()}\n\n"
        f"## Leaderboard\n\n{markdown_table(report.board)}\n{RANK_NOTE}\n\n"
        f"## Held-out score per environment\n\n{markdown_table(report.per_env())}\n"
        f"## Runs\n\n{markdown_table(runs)}"
    )


def _html(report: Report, curves: Path) -> str:
    image = base64.b64encode(curves.read_bytes()).decode("ascii")
    runs = report.table[RUN_COLUMNS]
    failed = ["failed" if s not in ("completed",) else "" for s in runs["status"]]
    title = html.escape(report.title)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}: EvoPolicyGym report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }}
th {{ background: #f3f3f3; }}
tr.failed td {{ background: #fdecea; }}
img {{ max-width: 100%; }}
.note {{ color: #555; font-size: 0.9em; }}
</style></head><body>
<h1>{title}</h1>
<p>{html.escape(report.summary_line())}. Generated {stamp}.</p>
<h2>Leaderboard</h2>
{html_table(report.board)}
<p class="note">{html.escape(RANK_NOTE)}</p>
<h2>Held-out score per environment</h2>
{html_table(report.per_env())}
<h2>Learning curves</h2>
<p class="note">Best train mean return so far against training episodes spent (every charged
submit spends budget; only ok submits can raise the best).</p>
<img alt="learning curves" src="data:image/png;base64,{image}">
<h2>Runs</h2>
{html_table(runs, row_class=failed)}
</body></html>
"""


def build_report(
    suite: Suite | str | Path,
    files: ReportFiles,
    *,
    archive: Path | None = None,
    records: list[Path] | None = None,
) -> Report:
    """Write the results table (Parquet), leaderboard (Markdown + CSV), learning curves (PNG)
    and the HTML report of ``suite``. ``records`` overrides where the jobs' run.json files are
    read (in job order). Failed, missing or unreadable run records appear as rows with their
    status and error; they never abort the report."""
    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    report = assemble(suite, archive, records)
    for path in (files.table, files.leaderboard, files.scores, files.curves, files.html):
        path.parent.mkdir(parents=True, exist_ok=True)
    report.table.to_parquet(files.table, index=False)
    report.board.to_csv(files.scores, index=False)
    files.leaderboard.write_text(_markdown(report), encoding="utf-8")
    plot_learning_curves(report.table, files.curves, title=report.title)
    files.html.write_text(_html(report, files.curves), encoding="utf-8")
    return report


def run_line(path: str | Path) -> str:
    """One progress line for a finished run directory's ``run.json``."""
    row = record_row(Path(path))
    name = Path(path).parent.name
    status = row["status"]
    if status in (MISSING, UNREADABLE):
        return f"run {name}: {status} ({row['error']})"
    score = "—" if row["final_score"] is None else f"{row['final_score']:.3f}"
    line = (
        f"run {name}: {status}, score {score}, best submit {row['best_submit_index']}, "
        f"{row['n_submits']} submits, {row['budget_used']}/{row['budget_limit']} episodes, "
        f"{row['wall_time_seconds']:.1f} s"
    )
    return line + (f"; {row['error']}" if row["error"] else "")
