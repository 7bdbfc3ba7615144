"""The staged AGENTS.md rules file."""

from __future__ import annotations

import hashlib
import re

from evopolicygym.agents import agents_md_sha256, agents_md_text
from evopolicygym.protocol import SubmitSummary

SECTIONS = [
    "Objective",
    "Paths",
    "Submit format",
    "Policy interface",
    "Loop",
    "Feedback artifacts",
    "Budget",
    "Policy runtime",
    "Prohibited behaviour",
]


def test_agents_md_has_every_section_in_order():
    headings = re.findall(r"^## (.+)$", agents_md_text(), flags=re.MULTILINE)
    assert headings == SECTIONS


def test_agents_md_names_every_summary_field_and_the_url_variables():
    text = agents_md_text()
    for field in SubmitSummary.model_fields:
        assert f"`{field}`" in text, field
    for variable in ("EVOPOLICYGYM_INFO_URL", "EVOPOLICYGYM_TASK_URL", "EVOPOLICYGYM_SUBMIT_URL"):
        assert variable in text
    for artifact in ("trajectory.jsonl", "stdout.txt", "stderr.txt", "error.txt", "errors.txt"):
        assert artifact in text
    assert "observations.npy" in text and "observations.npz" in text
    assert "resource_limits" in text


def test_agents_md_urllib_example_is_valid_python():
    block = re.search(r"```python\n(import json, os, urllib.request.*?)```", agents_md_text(), re.S)
    assert block is not None
    compile(block.group(1), "AGENTS.md example", "exec")


def test_sha256_is_of_the_staged_bytes():
    digest = hashlib.sha256(agents_md_text().encode()).hexdigest()
    assert agents_md_sha256() == f"sha256:{digest}"
