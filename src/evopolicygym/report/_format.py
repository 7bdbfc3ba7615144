"""Rendering of tables as Markdown and HTML (no extra dependencies)."""

from __future__ import annotations

import html
import math
import re

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


NUMERIC = re.compile(r"^[-+]?(\d|\.\d|—$|\[)")
LONG_TEXT = 60


def _td(value) -> str:
    """A table cell: numbers (and intervals, dashes) right-aligned, long text wrapped."""
    text = cell_text(value)
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if numeric or NUMERIC.match(text):
        return f'<td class="num">{html.escape(text)}</td>'
    if len(text) > LONG_TEXT:
        return f'<td class="wrap">{html.escape(text)}</td>'
    return f"<td>{html.escape(text)}</td>"


def html_table(table: pd.DataFrame, *, row_class: list[str] | None = None) -> str:
    if table.empty:
        return "<p><em>(no rows)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    body = []
    for number, row in enumerate(table.itertuples(index=False)):
        css = f' class="{row_class[number]}"' if row_class and row_class[number] else ""
        body.append(f"<tr{css}>{''.join(_td(v) for v in row)}</tr>")
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
