"""The "minimal client" in docs/protocol/http-api.md, run verbatim against a real judge.

A throwaway command agent writes a policy and executes the snippet on its first turn; the run
must spend the snippet's submit and finish."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evopolicygym.protocol import RunRecord

REPO = Path(__file__).resolve().parents[2]

AGENT = """
import contextlib, io, json, os, pathlib, sys
snippet = pathlib.Path(sys.argv[1]).read_text()
policy = "class Policy:\\n    def __init__(self, o, a, m): pass\\n    def reset(self, i): pass\\n    def act(self, obs): return 2\\n"
for line in sys.stdin:
    turn = json.loads(line)["turn"]
    pathlib.Path(os.environ["EVOPOLICYGYM_SYSTEM"], "policy.py").write_text(policy)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(snippet, {})
    print(json.dumps({"turn": turn, "text": out.getvalue().strip()}), flush=True)
"""


@pytest.mark.slow
def test_minimal_client_snippet_submits_against_a_real_judge(tmp_path):
    doc = (REPO / "docs" / "protocol" / "http-api.md").read_text()
    snippet = re.search(r"## A minimal client\n\n```python\n(.*?)```", doc, re.S).group(1)
    assert '"0-3"' in snippet
    (tmp_path / "snippet.py").write_text(snippet)
    (tmp_path / "agent.py").write_text(AGENT)
    root = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", "run", "--env", "toy", "--budget", "4",
         "--root", str(root), "--jobs", "1", "--",
         sys.executable, str(tmp_path / "agent.py"), str(tmp_path / "snippet.py")],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    record = RunRecord.model_validate_json((root / "run.json").read_text())
    assert record.outcome.status == "completed"
    assert [(s.status, s.n_episodes) for s in record.submits] == [("ok", 4)]
    # The snippet printed the status and mean return, and the agent replied with that line.
    transcript = (root / "logs" / "agent.jsonl").read_text().splitlines()
    texts = [json.loads(row).get("text") for row in transcript]
    assert f"ok {record.submits[0].mean_return}" in texts
