"""``evopolicygym verify``: a reader of a run directory, which it never changes."""

from evopolicygym.judge.ledger import Ledger
from evopolicygym.judge.verify import verify_run
from evopolicygym.protocol import SubmitBegin


def test_verifying_a_run_whose_journal_line_is_being_written_changes_nothing(tmp_path):
    # A judge may be writing the journal's last line while someone verifies the run: cutting
    # that line off would lose a record the judge then believes written.
    private = tmp_path / ".judge"
    private.mkdir()
    journal = private / "journal.jsonl"
    ledger = Ledger.open(journal, 4, checkpoints=tmp_path / "checkpoints", feedback=tmp_path)
    ledger.append(SubmitBegin(index=0, n_episodes=2))
    with open(journal, "a") as handle:
        handle.write('{"type": "submit_commit", "index": 0, "sub')
    before = journal.read_bytes()
    checks = verify_run(tmp_path)
    assert checks[0][0] and "HMAC chain intact" in checks[0][1]
    assert journal.read_bytes() == before
