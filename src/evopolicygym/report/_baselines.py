"""The table of ``docs/baselines.md``: built-in agents on Core-16 beside the published entrants."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..protocol import ProtocolFingerprint
from ..suites import load_suite
from ._archive import published_archive, read_archive
from ._format import markdown_table
from ._protocol import published_fingerprints
from ._rank import cells_from_runs, rank_scores
from ._table import results_table


def _cell_text(cell) -> str:
    if cell is None or pd.isna(cell["score"]):
        return "not measured"
    text = f"{cell['score']:.2f}"
    if not pd.isna(cell["se_repeats"]):
        text += f" ± {cell['se_repeats']:.2f} (n={int(cell['completed'])})"
    elif not pd.isna(cell["se_cases"]):
        text += f" ± {cell['se_cases']:.2f}"
    return text


def baseline_markdown(suites: list[Path], *, archive: Path | None = None) -> str:
    """Markdown: per Core-16 environment the published scores and each built-in agent's mean
    held-out return (± SE over repeats with n completed runs, or over the 256 held-out cases
    for one run), then the rank score each agent would get among the five published entrants
    on the environments it was measured on. Only runs whose protocol fingerprint matches the
    published protocol count; others are listed as such."""
    archive = archive or published_archive()
    published = read_archive(archive)
    envs = list(dict.fromkeys(published["env"]))
    table = pd.concat([results_table(suite=load_suite(p)) for p in suites], ignore_index=True)
    prints = published_fingerprints(archive, envs)
    off_protocol = []
    keep = []
    for row in table.itertuples(index=False):
        if row.status in ("missing", "unreadable") or not row.fingerprint:
            keep.append(False)
            continue
        mine = ProtocolFingerprint.model_validate_json(row.fingerprint)
        differences = mine.differences(prints[row.env]) if row.env in prints else ["unknown env"]
        if differences:
            off_protocol.append(f"{row.job}: {'; '.join(differences)}")
        keep.append(not differences)
    measured = table[keep]
    families = dict(zip(published["env"], published["family"], strict=False))
    cells = cells_from_runs(measured, families)
    agents = list(dict.fromkeys(table["entrant"]))
    names = list(dict.fromkeys(published["agent"]))
    rows = []
    for env in envs:
        label = published[published["env"] == env]["label"].iloc[0]
        row = {"env": label}
        for name in names:
            score = published[(published["env"] == env) & (published["agent"] == name)]["score"]
            row[name] = f"{float(score.iloc[0]):.2f}"
        for agent in agents:
            match = cells[(cells["env"] == env) & (cells["entrant"] == agent)]
            row[agent] = _cell_text(match.iloc[0] if len(match) else None)
        rows.append(row)
    ranks = []
    for agent in agents:
        mine = cells[(cells["entrant"] == agent) & cells["score"].notna()]
        done = list(mine["env"])
        if not done:
            ranks.append({"agent": agent, "environments": 0, "rank_score": math.nan, "wins": 0})
            continue
        theirs = published[published["env"].isin(done)]
        together = pd.concat(
            [
                mine[["entrant", "env", "score", "family"]].assign(source="suite"),
                pd.DataFrame(
                    {
                        "entrant": theirs["agent"],
                        "env": theirs["env"],
                        "score": theirs["score"].astype(float),
                        "family": theirs["family"],
                        "source": "published",
                    }
                ),
            ],
            ignore_index=True,
        )
        board = rank_scores(together).set_index("entrant")
        ranks.append(
            {
                "agent": agent,
                "environments": len(done),
                "rank_score": float(board.loc[agent, "rank_score"]),
                "wins": int(board.loc[agent, "wins"]),
                "published, same environments": ", ".join(
                    f"{name} {board.loc[name, 'rank_score']:.3f}" for name in names
                ),
            }
        )
    text = (
        markdown_table(pd.DataFrame(rows))
        + "\n"
        + "Rank score each built-in agent would get as a sixth entrant among the five published "
        "ones (N = 6), over the environments it was measured on (the published entrants' rank "
        "scores on those same environments beside it):\n\n" + markdown_table(pd.DataFrame(ranks))
    )
    if off_protocol:
        text += "\nRuns left out because their protocol differs from the published one:\n\n"
        text += "".join(f"- {line}\n" for line in off_protocol)
    return text
