"""The report as a person sees it: rendered by headless Chromium on a laptop-sized window."""

from __future__ import annotations

import re
import struct

import pytest

from evopolicygym.envs.web import find_chromium
from evopolicygym.report import ReportFiles, build_report, screenshot
from evopolicygym.suites import load_suite

from .conftest import make_record, write_record

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_chromium() is None, reason="no Chromium browser: apt-get install chromium"
    ),
]


def png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_the_report_renders_on_a_laptop_screen_with_right_aligned_numbers(
    smoke_like_suite, tmp_path
):
    suite = load_suite(smoke_like_suite)
    for job, score in zip(suite.jobs, (4.5, 5.0, 20.0, 480.0), strict=True):
        record = make_record(job.env, job.agent_label, final_score=score)
        record.outcome.heldout_returns = [score - 0.5, score, score + 0.5]
        write_record(job.record_path, record)
    files = ReportFiles.in_dir(tmp_path / "out")
    build_report(suite, files)
    picture = screenshot(files.html, tmp_path / "report.png")
    assert png_size(picture) == (1366, 900)
    assert picture.stat().st_size > 20_000  # tables and text, not a blank page
    page = files.html.read_text()
    assert "td.num { text-align: right" in page
    # Every cell that holds a number (or an interval) is a right-aligned one, with fixed decimals.
    cells = re.findall(r"<td( class=\"\w+\")?>([^<]*)</td>", page)
    numbers = [(css, text) for css, text in cells if re.fullmatch(r"-?\d+\.\d+.*|\[.*\]", text)]
    assert numbers and all(css == ' class="num"' for css, _ in numbers)
    assert all(re.fullmatch(r"-?\d+\.\d{3}( ± \d+\.\d{3})?|\[.*\]", text) for _, text in numbers)
