"""Reports from run records: results table (Parquet), rank score, learning curves, HTML."""

from ._archive import archive_cells, published_archive, read_archive
from ._baselines import baseline_markdown
from ._build import Report, ReportFiles, assemble, build_report, run_line
from ._curves import plot_learning_curves
from ._diagnostics import learning_curve
from ._rank import cells_from_runs, place_entrants, rank_scores
from ._readiness import readiness_table, write_readiness
from ._screenshot import ScreenshotError, screenshot
from ._table import read_record, record_row, results_table

__all__ = [
    "Report",
    "ReportFiles",
    "ScreenshotError",
    "archive_cells",
    "assemble",
    "baseline_markdown",
    "build_report",
    "cells_from_runs",
    "learning_curve",
    "place_entrants",
    "plot_learning_curves",
    "published_archive",
    "rank_scores",
    "read_archive",
    "read_record",
    "readiness_table",
    "record_row",
    "results_table",
    "run_line",
    "screenshot",
    "write_readiness",
]
