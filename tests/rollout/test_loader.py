"""Writing a checkpoint into a policy process's scratch directory."""

from __future__ import annotations

import pytest

from evopolicygym.protocol import CheckpointFile
from evopolicygym.rollout._loader import write_checkpoint

FILES = [
    CheckpointFile("policy.py", b"class Policy: pass\n"),
    CheckpointFile("lib/weights.txt", b"1 2 3\n"),
]


def test_a_checkpoint_is_written_into_a_fresh_directory(tmp_path):
    write_checkpoint(FILES, tmp_path / "scratch" / "system")
    system = tmp_path / "scratch" / "system"
    assert (system / "policy.py").read_bytes() == b"class Policy: pass\n"
    assert (system / "lib" / "weights.txt").read_bytes() == b"1 2 3\n"


def test_a_directory_made_before_the_checkpoint_arrived_is_refused(tmp_path):
    # Scratch directories exist before their checkpoint arrives: modules planted there would
    # be imported with it.
    planted = tmp_path / "system"
    planted.mkdir()
    (planted / "numpy.py").write_text("SCORE = 1e9\n")
    with pytest.raises(FileExistsError):
        write_checkpoint(FILES, planted)
    assert not (planted / "policy.py").exists()
