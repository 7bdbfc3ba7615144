"""Writing a checkpoint into a policy process's scratch directory, and loading it."""

from __future__ import annotations

import sys
import tempfile

import pytest

from evopolicygym.protocol import CheckpointFile, LimitsSection, Load
from evopolicygym.rollout import Watchdog
from evopolicygym.rollout._loader import CheckpointLoader, rehearse_load, write_checkpoint

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


@pytest.fixture
def watchdog():
    dog = Watchdog()
    yield dog
    Watchdog.stop()


def test_a_rehearsed_load_leaves_nothing_behind(tmp_path, monkeypatch, watchdog):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where its scratch directory goes
    modules, finders, path = set(sys.modules), list(sys.meta_path), list(sys.path)
    rehearse_load(watchdog, LimitsSection().model_dump())
    assert set(sys.modules) == modules and sys.meta_path == finders and sys.path == path
    assert list(tmp_path.iterdir()) == []
    # The checkpoint that comes next is loaded from its own files.
    files = [
        CheckpointFile("policy.py", b"class Policy:\n    def __init__(self, *a): self.n = 7\n")
    ]
    write_checkpoint(files, tmp_path / "system")
    load = Load(files=files, tree_hash="", obs_space={}, action_space={}, env_meta={})
    loader = CheckpointLoader(tmp_path / "system", load, watchdog, LimitsSection().model_dump())
    policy, failure, _out, _err = loader.first()
    assert failure is None and policy.n == 7
    loader.forget()
    assert set(sys.modules) == modules and sys.meta_path == finders and sys.path == path


def test_a_rehearsal_with_nowhere_to_write_changes_nothing(tmp_path, monkeypatch, watchdog):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    modules, path = set(sys.modules), list(sys.path)
    rehearse_load(watchdog, LimitsSection().model_dump())
    assert set(sys.modules) == modules and sys.path == path
