"""Build a suite's report files from its run records."""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..protocol import ProtocolFingerprint
from ..suites import Suite, load_suite
from ._archive import archive_cells, archive_families, read_archive
from ._curves import plot_learning_curves
from ._format import html_table, markdown_table
from ._protocol import _spec, describe, published_fingerprints
from ._rank import CELL_COLUMNS, cells_from_runs, rank_scores
from ._stats import improvement_probability, iqm_interval, rank_intervals
from ._table import MISSING, UNREADABLE, record_row, results_table

RUN_COLUMNS = [
    "job",
    "env",
    "entrant",
    "status",
    "isolation",
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
class Comparison:
    """Runs that share a protocol (fingerprint without its per-environment fields), ranked
    together; published entrants join only when their protocol is the same."""

    protocol: str
    fingerprint: ProtocolFingerprint
    table: pd.DataFrame
    cells: pd.DataFrame
    board: pd.DataFrame
    improvement: pd.DataFrame
    published_note: str
    differences: list[str]

    def per_env(self) -> pd.DataFrame:
        """Environments x entrants: mean held-out return ± its standard error (over repeats
        when there are several, else over held-out cases); a suite cell says how many of its
        runs did not complete."""
        labels = self.cells.assign(text=[_cell_label(row) for row in self.cells.to_dict("records")])
        pivot = labels.pivot(index="env", columns="entrant", values="text")
        order = list(self.board["entrant"])
        return pivot.reindex(columns=order).reset_index()

    def title(self) -> str:
        return f"protocol {self.protocol}: {describe(self.fingerprint)}"


@dataclass(frozen=True)
class Report:
    title: str
    table: pd.DataFrame
    comparisons: list[Comparison]

    @property
    def main(self) -> Comparison | None:
        return self.comparisons[0] if self.comparisons else None

    @property
    def cells(self) -> pd.DataFrame:
        return self.main.cells if self.main else pd.DataFrame(columns=CELL_COLUMNS)

    @property
    def board(self) -> pd.DataFrame:
        return self.main.board if self.main else pd.DataFrame(columns=["entrant"])

    def status_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.table["status"].value_counts().items()}

    def summary_line(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.status_counts().items()))
        line = f"{len(self.table)} runs: {counts or 'none'}"
        levels = self.table["isolation"].fillna("").value_counts()
        levels = {str(k): int(v) for k, v in levels.items() if k}
        if levels:
            # A weaker level than the others is worth a glance (docs/SECURITY.md says what
            # each level stops).
            shown = ", ".join(f"{n} {level}" for level, n in sorted(levels.items()))
            line += f"; policy isolation: {shown}"
        return line

    def per_env(self) -> pd.DataFrame:
        return self.main.per_env() if self.main else pd.DataFrame()

    def final_table(self) -> str:
        """What a suite prints at the end: summary, leaderboard and per-env scores of every
        comparison."""
        parts = [f"{self.title}: {self.summary_line()}\n"]
        for comparison in self.comparisons:
            parts.append(f"{comparison.title()}\n{comparison.published_note}\n")
            parts.append(markdown_table(comparison.board))
            parts.append(markdown_table(comparison.per_env()))
        return "\n".join(parts)


def _cell_label(cell: dict) -> str:
    score = cell["score"]
    if pd.isna(score):
        text = "—"
    else:
        text = f"{score:.3f}"
        se = cell.get("se_repeats")
        se = se if se is not None and not pd.isna(se) else cell.get("se_cases")
        if se is not None and not pd.isna(se):
            text += f" ± {se:.3f}"
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


def _anchors(env: str) -> tuple[float, float] | None:
    """(random, best) reference returns of the environment's envspec, for normalised scores."""
    spec = _spec(env)
    if spec is None or spec.anchors.random is None or spec.anchors.expert is None:
        return None
    if spec.anchors.expert == spec.anchors.random:
        return None
    return spec.anchors.random, spec.anchors.expert


def _fingerprints(table: pd.DataFrame) -> list[ProtocolFingerprint | None]:
    return [
        ProtocolFingerprint.model_validate_json(text) if text else None
        for text in table["fingerprint"]
    ]


def _split_by_env_settings(table: pd.DataFrame, prints) -> pd.DataFrame:
    """Within one protocol, an environment whose runs differ in version or step cap is ranked
    as separate environments, each labelled with its settings."""
    labels = list(table["env"])
    for env in dict.fromkeys(labels):
        rows = [i for i, e in enumerate(table["env"]) if e == env and prints[i] is not None]
        signatures = {prints[i].digest() for i in rows}
        if len(signatures) > 1:
            for i in rows:
                f = prints[i]
                labels[i] = f"{env} (version {f.env_version}, {f.max_episode_steps} steps)"
    return table.assign(env=labels)


def _board(cells: pd.DataFrame) -> pd.DataFrame:
    board = rank_scores(cells)
    entrants = list(board["entrant"])
    intervals = rank_intervals(cells, entrants)
    board.insert(3, "rank_ci", [intervals[e].text() for e in entrants])
    iqm, iqm_ci = [], []
    for entrant in entrants:
        mine = cells[cells["entrant"] == entrant]
        samples, anchors = [], []
        for row in mine.itertuples(index=False):
            anchor = _anchors(row.env.split(" (")[0])
            if anchor is None or pd.isna(row.score):
                continue
            samples.append(row.returns if row.returns is not None else [row.score])
            anchors.append(anchor)
        if samples:
            point, interval = iqm_interval(samples, anchors)
            iqm.append(point)
            iqm_ci.append(interval.text())
        else:
            iqm.append(math.nan)
            iqm_ci.append("—")
    board.insert(4, "iqm_normalised", iqm)
    board.insert(5, "iqm_ci", iqm_ci)
    return board


def _improvement(cells: pd.DataFrame, board: pd.DataFrame) -> pd.DataFrame:
    """P(first > second) for every pair of suite entrants, best-ranked first."""
    suite = [
        e for e in board["entrant"] if (cells[cells["entrant"] == e]["source"] == "suite").any()
    ]
    rows = []
    for a_index, first in enumerate(suite):
        for second in suite[a_index + 1 :]:
            xs, ys = [], []
            for env in dict.fromkeys(cells["env"]):
                x = cells[(cells["entrant"] == first) & (cells["env"] == env)]["returns"]
                y = cells[(cells["entrant"] == second) & (cells["env"] == env)]["returns"]
                if len(x) and len(y) and x.iloc[0] is not None and y.iloc[0] is not None:
                    xs.append(x.iloc[0])
                    ys.append(y.iloc[0])
            if not xs:
                continue
            point, interval = improvement_probability(xs, ys)
            rows.append(
                {
                    "entrant": first,
                    "versus": second,
                    "envs": len(xs),
                    "P(entrant > versus)": point,
                    "95% CI": interval.text(),
                }
            )
    return pd.DataFrame(
        rows, columns=["entrant", "versus", "envs", "P(entrant > versus)", "95% CI"]
    )


def _comparisons(
    table: pd.DataFrame, archive: pd.DataFrame | None, archive_path: Path | None
) -> list[Comparison]:
    prints = _fingerprints(table)
    keys = [f.digest(per_env=False) if f is not None else "" for f in prints]
    counts = pd.Series([k for k in keys if k]).value_counts()
    order = list(counts.index)
    if not order:
        order = [""]
    # Runs without a readable record join the largest protocol: they still count as failed.
    keys = [k or order[0] for k in keys]
    envs = list(dict.fromkeys(table["env"]))
    families = _families(envs, archive)
    published = published_fingerprints(archive_path, envs) if archive is not None else {}
    main_print = next((f for f, k in zip(prints, keys, strict=True) if f and k == order[0]), None)
    comparisons = []
    for key in order:
        rows = [i for i, k in enumerate(keys) if k == key]
        part = table.iloc[rows].reset_index(drop=True)
        part_prints = [prints[i] for i in rows]
        fingerprint = next((f for f in part_prints if f is not None), None)
        if fingerprint is None:
            fingerprint = ProtocolFingerprint(env="")
        part = _split_by_env_settings(part, part_prints)
        cells = cells_from_runs(part, {e: families.get(e.split(" (")[0], "") for e in part["env"]})
        cells, note = _with_published(cells, part, part_prints, archive, published)
        board = _board(cells) if not cells.empty else pd.DataFrame(columns=["entrant"])
        differences = (
            fingerprint.differences(main_print, per_env=False)
            if main_print is not None and key != order[0]
            else []
        )
        comparisons.append(
            Comparison(
                protocol=key,
                fingerprint=fingerprint,
                table=part,
                cells=cells,
                board=board,
                improvement=_improvement(cells, board) if not cells.empty else pd.DataFrame(),
                published_note=note,
                differences=differences,
            )
        )
    return comparisons


def _with_published(cells, part, part_prints, archive, published) -> tuple[pd.DataFrame, str]:
    """Add the published entrants' cells on environments whose runs follow the published
    protocol; say which environments they join and why the others are left out."""
    if archive is None or not published:
        return cells, "No published results were given for comparison."
    joined, apart = [], {}
    for env in dict.fromkeys(part["env"]):
        theirs = published.get(env)
        mine = next(
            (f for f, e in zip(part_prints, part["env"], strict=True) if f and e == env), None
        )
        if theirs is None or mine is None:
            continue
        # Name the protocol-level differences; per-environment ones only when those are all.
        differences = mine.differences(theirs, per_env=False) or mine.differences(theirs)
        if differences:
            apart[env] = differences
        else:
            joined.append(env)
    shared = archive_cells(archive, joined, set(cells["entrant"]))
    if not shared.empty:
        cells = pd.concat([cells, shared], ignore_index=True)
        cells["returns"] = [r if isinstance(r, list) else None for r in cells["returns"]]
    if joined:
        note = (
            f"Published Core-16 entrants are ranked beside these runs on {len(joined)} "
            "environment(s) of their protocol (their harness and environment versions are not "
            "recorded)."
        )
    elif apart:
        first = next(iter(apart.values()))
        note = f"Published Core-16 entrants are not ranked here: their protocol differs ({'; '.join(first)})."
    else:
        note = "Published Core-16 entrants are not ranked here: they share no environment with these runs."
    return cells, note


def assemble(
    suite: Suite, archive_path: Path | None = None, records: list[Path] | None = None
) -> Report:
    """Read the suite's records (``records`` in job order, default the jobs' own paths), split
    them by protocol and rank each protocol's entrants, with the published ones beside the runs
    of their protocol."""
    table = results_table(records or (), suite=suite)
    archive = read_archive(archive_path) if archive_path else None
    comparisons = _comparisons(table, archive, archive_path) if len(table) else []
    return Report(title=suite.name, table=table, comparisons=comparisons)


DIAGNOSTICS_NOTE = (
    "Budget: episodes per charged submit, in order. Gap: validation mean minus held-out mean "
    "of the selected checkpoint (positive: validation flattered it). To 50%/80%: training "
    "episodes spent when the best train mean first covered that share of its rise from the "
    "first ok submit to its final value. Churn: lines added plus removed between consecutive "
    "checkpoints. Edits: parametric when every Python file keeps its syntax tree up to "
    "constants (data files may change), structural otherwise."
)


def diagnostics_table(table: pd.DataFrame) -> pd.DataFrame:
    """The report's per-run diagnostics (see ``DIAGNOSTICS_NOTE``)."""

    def budget(costs) -> str:
        costs = list(costs) if costs is not None else []
        text = ",".join(str(c) for c in costs[:12])
        return text + (f",… ({len(costs)} submits)" if len(costs) > 12 else "")

    return pd.DataFrame(
        {
            "job": table["job"],
            "entrant": table["entrant"],
            "env": table["env"],
            "budget": [budget(c) for c in table["episodes_per_submit"]],
            "gap": table["val_heldout_gap"],
            "to 50%": table["episodes_to_50"],
            "to 80%": table["episodes_to_80"],
            "churn": table["churn_total"],
            "parametric": table["edits_parametric"],
            "structural": table["edits_structural"],
        }
    )


STATS_NOTE = (
    "Intervals are 95% percentile bootstrap intervals (scipy.stats.bootstrap, 2000 resamples), "
    "stratified by entrant and environment: each suite cell's held-out episodes (of all its "
    "completed runs) are resampled independently; published cells have no per-episode data "
    "and stay fixed. ± is the standard error of the mean held-out return: over repeats when a "
    "cell has several completed runs, else over held-out cases. IQM: interquartile mean over "
    "environments of (score - random) / (best - random), with the random and best anchors of "
    "the environment's envspec (Agarwal et al. 2021). P(entrant > versus): the probability "
    "that an episode of the first entrant earns more than one of the second (ties count half), "
    "averaged over the environments both have."
)


# Column names as people read them (the CSV keeps the short names).
BOARD_LABELS = {
    "rank_score": "rank score",
    "rank_ci": "rank score 95% CI",
    "iqm_normalised": "IQM normalised",
    "iqm_ci": "IQM 95% CI",
    "top_two": "top two",
}


def _shown(board: pd.DataFrame) -> pd.DataFrame:
    return board.rename(columns=BOARD_LABELS)


def _heading(comparison: Comparison, number: int) -> str:
    return "Leaderboard" if number == 0 else "Runs under another protocol"


def _protocol_line(comparison: Comparison) -> str:
    return f"Protocol {comparison.title().removeprefix('protocol ')}."


def _differences(comparison: Comparison) -> str:
    if not comparison.differences:
        return ""
    return "Differs from the leaderboard's protocol in " + "; ".join(comparison.differences) + "."


def _markdown(report: Report) -> str:
    parts = [f"# {report.title}\n\n{report.summary_line()}\n"]
    for number, comparison in enumerate(report.comparisons):
        parts.append(f"## {_heading(comparison, number)}\n")
        for line in (
            _protocol_line(comparison),
            _differences(comparison),
            comparison.published_note,
        ):
            if line:
                parts.append(f"{line}\n")
        parts.append(markdown_table(_shown(comparison.board)))
        parts.append(f"{RANK_NOTE}\n\n{STATS_NOTE}\n")
        parts.append(
            f"### Held-out return per environment\n\n{markdown_table(comparison.per_env())}"
        )
        if not comparison.improvement.empty:
            parts.append(
                f"### Probability of improvement\n\n{markdown_table(comparison.improvement)}"
            )
    parts.append(f"## Runs\n\n{markdown_table(report.table[RUN_COLUMNS])}")
    parts.append(
        f"## Diagnostics\n\n{markdown_table(diagnostics_table(report.table))}\n{DIAGNOSTICS_NOTE}\n"
    )
    return "\n".join(parts)


def _html(report: Report, curves: Path) -> str:
    image = base64.b64encode(curves.read_bytes()).decode("ascii")
    runs = report.table[RUN_COLUMNS]
    failed = ["failed" if s not in ("completed",) else "" for s in runs["status"]]
    title = html.escape(report.title)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sections = []
    for number, comparison in enumerate(report.comparisons):
        notes = f'<p class="protocol">{html.escape(_protocol_line(comparison))}</p>' + "".join(
            f'<p class="note">{html.escape(line)}</p>'
            for line in (_differences(comparison), comparison.published_note)
            if line
        )
        improvement = (
            f"<h3>Probability of improvement</h3>{html_table(comparison.improvement)}"
            if not comparison.improvement.empty
            else ""
        )
        sections.append(
            f"<h2>{html.escape(_heading(comparison, number))}</h2>{notes}"
            f"{html_table(_shown(comparison.board))}"
            f"<h3>Held-out return per environment</h3>{html_table(comparison.per_env())}"
            f"{improvement}"
        )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}: EvoPolicyGym report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 80em; padding: 0 1em;
       color: #222; line-height: 1.4; }}
.scroll {{ overflow-x: auto; }}
table {{ border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.88em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.55em; text-align: left; white-space: nowrap; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
th {{ background: #f3f3f3; position: sticky; top: 0; }}
tr:nth-child(even) td {{ background: #fafafa; }}
tr.failed td {{ background: #fdecea; }}
td.wrap {{ white-space: normal; min-width: 20em; }}
img {{ max-width: 100%; }}
h2 {{ margin-top: 1.6em; border-bottom: 1px solid #ddd; }}
.note {{ color: #555; font-size: 0.9em; max-width: 60em; }}
.protocol {{ font-family: ui-monospace, monospace; font-size: 0.85em; color: #333; }}
</style></head><body>
<h1>{title}</h1>
<p>{html.escape(report.summary_line())}. Generated {stamp}.</p>
{"".join(sections)}
<p class="note">{html.escape(RANK_NOTE)}</p>
<p class="note">{html.escape(STATS_NOTE)}</p>
<h2>Learning curves</h2>
<p class="note">Best train mean return so far against training episodes spent (every charged
submit spends budget; only ok submits can raise the best).</p>
<img alt="learning curves" src="data:image/png;base64,{image}">
<h2>Runs</h2>
{html_table(runs, row_class=failed)}
<h2>Diagnostics</h2>
{html_table(diagnostics_table(report.table))}
<p class="note">{html.escape(DIAGNOSTICS_NOTE)}</p>
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
