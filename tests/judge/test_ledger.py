"""The journal: replay, crash settlement, and the HMAC chain that makes edits detectable."""

import contextlib
import json
import subprocess
import sys

import pytest

from evopolicygym.judge import JournalCorrupt, Ledger
from evopolicygym.judge.ledger import publish_draft
from evopolicygym.protocol import (
    Evaluation,
    SubmitBegin,
    SubmitCommit,
    SubmitRecord,
    SubmitRollback,
)
from evopolicygym.sandbox import remove_path
from support import nest


@pytest.fixture
def tmp_path(tmp_path):
    """pytest's own temporary directory, emptied without recursion after the test: the deep
    trees these tests plant would crash pytest's recursive clean-up of old directories."""
    yield tmp_path
    remove_path(tmp_path)


def _commit(index, cost, status="ok"):
    record = SubmitRecord(
        index=index, status=status, cost=cost, n_episodes=cost, mean_return=1.0, tree_hash="h"
    )
    return SubmitCommit(index=index, submit=record)


def _open(tmp_path, budget=10):
    return Ledger.open(tmp_path / "journal.jsonl", budget, checkpoints=tmp_path, feedback=tmp_path)


def _spend(ledger, costs):
    for index, cost in enumerate(costs):
        ledger.append(SubmitBegin(index=index, n_episodes=cost))
        ledger.append(_commit(index, cost, "ok" if cost else "budget_invalid"))


def test_replay_restores_budget_and_history(tmp_path):
    ledger = _open(tmp_path)
    _spend(ledger, [3, 0, 4])
    ledger.append(Evaluation(type="validation", index=0, mean=2.0, errors=0))
    again = _open(tmp_path)
    assert (again.used, again.remaining, again.next_index) == (7, 3, 3)
    assert [s.index for s in again.ok_submits()] == [0, 2]
    assert again.validation[0].mean == 2.0
    assert (tmp_path / "key").stat().st_mode & 0o777 == 0o600


def test_a_torn_last_line_is_cut_off_and_the_run_continues(tmp_path):
    ledger = _open(tmp_path, 5)
    _spend(ledger, [2])
    journal = tmp_path / "journal.jsonl"
    with open(journal, "a") as handle:
        handle.write('{"type": "submit_commit", "index": 1, "sub')
    again = _open(tmp_path, 5)
    assert again.remaining == 3
    # The torn bytes are gone, so the resume record chained cleanly after the last good line.
    assert all(json.loads(line) for line in journal.read_text().splitlines())
    assert _open(tmp_path, 5).remaining == 3


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda lines: lines.__setitem__(2, lines[2].replace('"cost": 3', '"cost": 0')), "changed"),
        (lambda lines: lines.pop(1), "changed"),
        (lambda lines: lines.insert(1, "not json at all"), "not a valid journal record"),
    ],
    ids=["cost-zeroed", "line-removed", "garbage-inserted"],
)
def test_an_edited_journal_is_refused(tmp_path, edit, reason):
    ledger = _open(tmp_path)
    _spend(ledger, [3, 2])
    journal = tmp_path / "journal.jsonl"
    lines = journal.read_text().splitlines()
    edit(lines)
    journal.write_text("\n".join(lines) + "\n")
    with pytest.raises(JournalCorrupt, match=reason):
        _open(tmp_path)


def test_a_journal_without_its_key_cannot_be_resumed(tmp_path):
    _spend(_open(tmp_path), [3])
    (tmp_path / "key").unlink()
    with pytest.raises(Exception, match="key is missing"):
        _open(tmp_path)


def _run_dirs(tmp_path):
    checkpoints, feedback = tmp_path / "checkpoints", tmp_path / "workspace" / "feedback"
    drafts = tmp_path / "private" / "drafts"
    for directory in (checkpoints, feedback, drafts):
        directory.mkdir(parents=True)
    return tmp_path / "private" / "journal.jsonl", checkpoints, feedback, drafts


def test_an_uncommitted_submit_is_rolled_back_whatever_the_workspace_holds(tmp_path):
    # Its results were never visible (drafts are out of the workspace), so nothing is charged;
    # a summary the agent planted in its feedback directory is never read.
    journal, checkpoints, feedback, drafts = _run_dirs(tmp_path)
    ledger = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    ledger.append(SubmitBegin(index=0, n_episodes=2))
    (checkpoints / "submit_000").mkdir()
    (drafts / "submit_000" / "episodes").mkdir(parents=True)
    (feedback / "submit_000").mkdir()
    forged = {"submit_index": 0, "status": "ok", "env_instances": [1], "n_episodes": 1}
    (feedback / "submit_000" / "summary.json").write_text(json.dumps(forged))
    again = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    assert (again.remaining, again.next_index) == (5, 0)
    assert not (checkpoints / "submit_000").exists() and not (drafts / "submit_000").exists()
    assert json.loads(journal.read_text().splitlines()[-1])["type"] == SubmitRollback(index=0).type


def test_a_committed_submit_whose_feedback_was_not_yet_published_is_published(tmp_path):
    # A crash between the charge and the rename: the next start moves the draft into place,
    # over whatever the agent planted there (a link is removed, never followed).
    journal, checkpoints, feedback, drafts = _run_dirs(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ledger = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    ledger.append(SubmitBegin(index=0, n_episodes=2))
    ledger.append(_commit(0, 2))
    (drafts / "submit_000").mkdir()
    (drafts / "submit_000" / "summary.json").write_text("{}")
    (feedback / "submit_000").symlink_to(elsewhere)
    again = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    assert (again.remaining, again.next_index) == (3, 1)
    published = feedback / "submit_000"
    assert not published.is_symlink() and (published / "summary.json").read_text() == "{}"
    assert not (drafts / "submit_000").exists() and list(elsewhere.iterdir()) == []


def _victim(tmp_path):
    """Another run's checkpoints, which the agent points its feedback directory at."""
    victim = tmp_path / "victim" / "checkpoints"
    for index in range(3):
        (victim / f"submit_{index:03d}").mkdir(parents=True)
        (victim / f"submit_{index:03d}" / "precious.txt").write_text(str(index))
    return victim


def _intact(victim):
    return sorted(p.name for p in victim.iterdir()) == [
        f"submit_{i:03d}" for i in range(3)
    ] and all((victim / f"submit_{i:03d}" / "precious.txt").read_text() == str(i) for i in range(3))


def _draft(drafts, index):
    draft = drafts / f"submit_{index:03d}"
    (draft / "episodes").mkdir(parents=True)
    (draft / "summary.json").write_text(json.dumps({"submit_index": index}))
    return draft


def test_a_feedback_directory_replaced_with_a_link_is_never_followed(tmp_path):
    _, _, feedback, drafts = _run_dirs(tmp_path)
    victim = _victim(tmp_path)
    feedback.rmdir()
    feedback.symlink_to(victim)
    published = publish_draft(_draft(drafts, 1), feedback)
    assert published == feedback / "submit_001" and not feedback.is_symlink()
    assert json.loads((published / "summary.json").read_text()) == {"submit_index": 1}
    assert _intact(victim)


_EXCHANGER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE, AT_FDCWD = 2, -100
workspace, target = sys.argv[1], sys.argv[2]
os.chdir(workspace)
print("ready", flush=True)
while True:
    if libc.renameat2(AT_FDCWD, b"feedback", AT_FDCWD, b"decoy", RENAME_EXCHANGE) != 0:
        # The judge removed the link (or feedback): plant it again.
        for name in ("feedback", "decoy"):
            try:
                os.symlink(target, name)
            except OSError:
                pass
"""


def test_publishing_while_the_agent_swaps_feedback_for_a_link_never_touches_the_target(tmp_path):
    # The red team's F2: `renameat2(RENAME_EXCHANGE)` in a loop between workspace/feedback and
    # a link to another run's checkpoints, while the judge publishes.
    _, _, feedback, drafts = _run_dirs(tmp_path)
    victim = _victim(tmp_path)
    (feedback.parent / "decoy").symlink_to(victim)
    exchanger = subprocess.Popen(
        [sys.executable, "-c", _EXCHANGER, str(feedback.parent), str(victim)],
        stdout=subprocess.PIPE,
        text=True,
    )
    published = 0
    try:
        assert exchanger.stdout.readline() == "ready\n"
        for index in range(300):
            draft = _draft(drafts, index % 3)
            with contextlib.suppress(OSError):  # feedback swapped again meanwhile
                publish_draft(draft, feedback)
                published += 1
            remove_path(draft)
    finally:
        exchanger.kill()
        exchanger.wait()
    assert _intact(victim)
    assert published > 0


def test_a_deep_tree_planted_at_a_feedback_name_is_removed_when_publishing(tmp_path):
    _, _, feedback, drafts = _run_dirs(tmp_path)
    (feedback / "submit_000").mkdir()
    nest(feedback / "submit_000", 2000)
    published = publish_draft(_draft(drafts, 0), feedback)
    assert sorted(p.name for p in published.iterdir()) == ["episodes", "summary.json"]


def test_a_resume_publishes_over_a_deep_tree_the_agent_planted(tmp_path):
    # The red team's F5: every --resume crashed with RecursionError while settling.
    journal, checkpoints, feedback, drafts = _run_dirs(tmp_path)
    ledger = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    ledger.append(SubmitBegin(index=0, n_episodes=2))
    ledger.append(_commit(0, 2))
    _draft(drafts, 0)
    (feedback / "submit_000").mkdir()
    nest(feedback / "submit_000", 2000)
    again = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    assert (again.remaining, again.next_index) == (3, 1)
    assert json.loads((feedback / "submit_000" / "summary.json").read_text())["submit_index"] == 0
    assert not (drafts / "submit_000").exists()
