"""Rendering of tables as Markdown and HTML (no extra dependencies)."""

from __future__ import annotations

import html
import math

import pandas as pd


def cell_text(value) -> str:
    """Numbers with 3 significant decimals, NaN/None as an em dash, everything else as text."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        return f"{value:.3f}"
    if value is pd.NA:
        return "—"
    return str(value)


def markdown_table(table: pd.DataFrame) -> str:
    if table.empty:
        return "_(no rows)_\n"
    header = "| " + " | ".join(str(c) for c in table.columns) + " |"
    rule = "|" + "|".join("---" for _ in table.columns) + "|"
    lines = [header, rule]
    for row in table.itertuples(index=False):
        cells = [cell_text(v).replace("|", "\\|").replace("\n", " ") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def html_table(table: pd.DataFrame, *, row_class: list[str] | None = None) -> str:
    if table.empty:
        return "<p><em>(no rows)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    body = []
    for number, row in enumerate(table.itertuples(index=False)):
        css = f' class="{row_class[number]}"' if row_class and row_class[number] else ""
        cells = "".join(f"<td>{html.escape(cell_text(v))}</td>" for v in row)
        body.append(f"<tr{css}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
