import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from evopolicygym.judge import checkpoint
from evopolicygym.judge.checkpoint import (
    MirrorError,
    SnapshotRefused,
    code_metrics,
    files_hash,
    mirror,
    read_files,
    scan,
    snapshot,
    write_metrics,
)
from evopolicygym.protocol import Verdict
from evopolicygym.sandbox import remove_path
from support import nest

POLICY = "class Policy:\n    pass\n"


@pytest.fixture
def tmp_path(tmp_path):
    """pytest's own temporary directory, emptied without recursion after the test: the deep
    trees these tests plant would crash pytest's recursive clean-up of old directories."""
    yield tmp_path
    remove_path(tmp_path)


def test_scan_names_what_is_wrong(tmp_path):
    assert scan(tmp_path).verdict == Verdict.MISSING_POLICY
    (tmp_path / "policy.py").write_text("class Other:\n    pass\n")
    assert "class Policy" in scan(tmp_path).message
    (tmp_path / "helper.py").write_text("def f(:\n")
    problem = scan(tmp_path)
    assert problem.verdict == Verdict.IMPORT_ERROR and "system/helper.py, line 1" in problem.message
    (tmp_path / "helper.py").write_text("def f():\n    return 1\n")
    (tmp_path / "policy.py").write_text("from helper import f\nclass Policy:\n    pass\n")
    assert scan(tmp_path) is None


def test_snapshot_skips_caches_keeps_links_and_mirror_restores(tmp_path):
    system = tmp_path / "system"
    (system / "__pycache__").mkdir(parents=True)
    (system / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (system / "policy.py").write_text(
        "class Policy:\n    def act(self, obs):\n        return 1 if obs else 0\n"
    )
    (system / "link").symlink_to("/etc/hostname")
    snapshot(system, tmp_path / "checkpoints" / "submit_000")
    copy = tmp_path / "checkpoints" / "submit_000"
    assert sorted(p.name for p in copy.iterdir()) == ["link", "policy.py"]
    assert (copy / "link").is_symlink()
    metrics = code_metrics(copy)
    assert metrics["classes"] == 1 and metrics["functions"] == 1 and metrics["cyclomatic_max"] == 2
    assert metrics["tree_hash"] == code_metrics(copy)["tree_hash"]
    (system / "policy.py").write_text("broken")
    mirror(copy, system)
    assert (system / "policy.py").read_text().startswith("class Policy")


def _unix_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


@pytest.mark.parametrize(
    ("plant", "says"),
    [
        (lambda system: os.mkfifo(system / "pipe.py"), "system/pipe.py is a named pipe"),
        (lambda system: _unix_socket(system / "sock"), "system/sock is a socket"),
        (
            lambda system: (system / os.fsdecode(b"data_\xff.bin")).write_bytes(b"x"),
            "system/data_\\xff.bin has a name that is not UTF-8",
        ),
        (
            lambda system: os.symlink(b"/nonexistent/\xff\xfe", os.fsencode(system / "bad")),
            "system/bad is a symbolic link whose target is not UTF-8",
        ),
        (
            lambda system: (system / "weights.bin").write_bytes(b"\0" * 2048),
            "system/ holds more than 1024 bytes (the limit was passed at system/weights.bin)",
        ),
        (
            lambda system: [(system / f"f{n:03d}").touch() for n in range(100)],
            "system/ holds more than 100 entries (the limit was passed at system/",
        ),
        (
            lambda system: (system / "data" / ("x" * 200) / ("y" * 200)).mkdir(parents=True),
            f"system/data/{'x' * 200}/{'y' * 200} has a path longer than 256 bytes",
        ),
        (lambda system: nest(system / "data", 2000), f"system/data{'/d' * 64} is nested more"),
    ],
    ids=[
        "fifo",
        "socket",
        "non-utf8-name",
        "non-utf8-link-target",
        "over-the-cap",
        "too-many-entries",
        "path-too-long",
        "deeper-than-the-recursion-limit",
    ],
)
def test_a_snapshot_refuses_what_it_cannot_copy_and_leaves_no_checkpoint(
    tmp_path, monkeypatch, plant, says
):
    monkeypatch.setattr(checkpoint, "MAX_SNAPSHOT_BYTES", 1024)
    monkeypatch.setattr(checkpoint, "MAX_SNAPSHOT_ENTRIES", 100)
    monkeypatch.setattr(checkpoint, "MAX_SNAPSHOT_PATH_BYTES", 256)
    system = tmp_path / "system"
    (system / "data").mkdir(parents=True)
    (system / "policy.py").write_text(POLICY)
    plant(system)
    target = tmp_path / "checkpoints" / "submit_000"
    with pytest.raises(SnapshotRefused) as refused:
        snapshot(system, target)
    assert refused.value.verdict == Verdict.IMPORT_ERROR
    assert refused.value.message.startswith(says), refused.value.message
    assert "remove" in refused.value.message
    assert not target.exists() and list((tmp_path / "checkpoints").iterdir()) == []


def test_the_snapshot_cap_counts_the_bytes_copied_not_the_listed_size(tmp_path, monkeypatch):
    # A file that grows once opened (here: a sparse file whose size the listing never saw).
    monkeypatch.setattr(checkpoint, "MAX_SNAPSHOT_BYTES", 4096)
    system = tmp_path / "system"
    system.mkdir()
    (system / "policy.py").write_text(POLICY)
    grown = system / "weights.bin"
    grown.write_bytes(b"")
    real_open = os.open

    def open_and_grow(path, flags, *args, **kwargs):
        if Path(path).name == grown.name:  # opened relative to its directory
            os.truncate(grown, 1 << 20)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_and_grow)
    with pytest.raises(SnapshotRefused, match="holds more than 4096 bytes"):
        snapshot(system, tmp_path / "submit_000")
    assert not (tmp_path / "submit_000").exists()


def test_the_judge_files_are_ignored_at_the_top_level_only(tmp_path):
    system = tmp_path / "system"
    (system / "data").mkdir(parents=True)
    (system / "policy.py").write_text(POLICY)
    for name in ("metrics.json", "_meta.json", ".keep"):
        (system / name).write_text("top")
        (system / "data" / name).write_text("data")
    target = tmp_path / "submit_000"
    snapshot(system, target)
    assert sorted(f.path for f in read_files(target)) == [
        "data/.keep",
        "data/_meta.json",
        "data/metrics.json",
        "policy.py",
    ]
    (system / "policy.py").write_text("broken")
    mirror(target, system)
    assert sorted(p.name for p in system.iterdir()) == ["data", "policy.py"]
    assert sorted(p.name for p in (system / "data").iterdir()) == [
        ".keep",
        "_meta.json",
        "metrics.json",
    ]


def test_sources_too_large_to_parse_are_left_to_the_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "MAX_PARSED_SOURCE_BYTES", 64)
    (tmp_path / "policy.py").write_text(POLICY)
    (tmp_path / "table.py").write_text("T = [\n" + "    (1, 2),\n" * 20 + "  # unclosed\n")
    assert scan(tmp_path) is None  # the worker's import reports the syntax error
    metrics = code_metrics(tmp_path)
    assert metrics["not_analysed"] == ["table.py"] and metrics["parse_errors"] == []
    assert metrics["python_files"] == 2 and metrics["classes"] == 1
    # A policy.py too large to parse is not checked for `class Policy` either.
    (tmp_path / "table.py").unlink()
    (tmp_path / "policy.py").write_text("POLICY = None\n" * 10)
    assert scan(tmp_path) is None


def test_a_source_the_parser_cannot_hold_is_an_import_error(tmp_path):
    (tmp_path / "policy.py").write_text(POLICY)
    (tmp_path / "helper.py").write_text("x = " + "-" * 200_000 + "1\n")
    problem = scan(tmp_path)
    assert problem.verdict == Verdict.IMPORT_ERROR and "system/helper.py" in problem.message
    assert code_metrics(tmp_path)["parse_errors"] == ["helper.py"]


@pytest.mark.parametrize("name", [".system.old", ".system.mirror"])
@pytest.mark.parametrize("kind", ["dangling-link", "link-to-a-directory", "file", "directory"])
def test_a_mirror_clears_whatever_the_agent_planted_beside_system(tmp_path, name, kind):
    kept = tmp_path / "kept"
    (kept / "inside").mkdir(parents=True)
    (kept / "inside" / "file").write_text("not the judge's")
    source = tmp_path / "checkpoint"
    source.mkdir()
    (source / "policy.py").write_text(POLICY)
    workspace = tmp_path / "workspace"
    system = workspace / "system"
    system.mkdir(parents=True)
    planted = workspace / name
    if kind == "dangling-link":
        planted.symlink_to("/nonexistent")
    elif kind == "link-to-a-directory":
        planted.symlink_to(kept)
    elif kind == "file":
        planted.write_text("x")
    else:
        (planted / "sub").mkdir(parents=True)
    mirror(source, system)
    assert (system / "policy.py").read_text() == POLICY
    assert sorted(p.name for p in workspace.iterdir()) == ["system"]
    assert (kept / "inside" / "file").read_text() == "not the judge's"  # never followed


def test_a_mirror_that_cannot_replace_system_says_so(tmp_path):
    source = tmp_path / "checkpoint"
    source.mkdir()
    (source / "policy.py").write_text(POLICY)
    system = tmp_path / "workspace" / "system"
    system.mkdir(parents=True)
    with pytest.raises(MirrorError, match="cannot replace"):
        mirror(source / "missing", system)
    assert system.is_dir()


def test_a_directory_swapped_for_a_link_during_the_copy_is_never_followed(tmp_path):
    # The red team's F1: system/a is swapped for a link to the judge's private directory while
    # the judge copies a large first file of a/; the entries listed before were then copied
    # from the link's target.
    private = tmp_path / ".judge"
    private.mkdir()
    (private / "key").write_bytes(b"SECRET-KEY-BYTES")
    system = tmp_path / "workspace" / "system"
    (system / "a").mkdir(parents=True)
    (system / "policy.py").write_text(POLICY)
    (system / "a" / "0pad").write_bytes(os.urandom(64 * 2**20))
    (system / "a" / "key").write_bytes(b"decoy")
    target = tmp_path / "checkpoints" / "submit_000"
    copying = tmp_path / "checkpoints" / ".submit_000.tmp" / "a" / "0pad"
    swapped = threading.Event()

    def swap_once_the_copy_reads_the_pad() -> None:
        deadline = time.monotonic() + 60
        while not copying.exists() and time.monotonic() < deadline:
            time.sleep(0.0005)
        os.rename(system / "a", system / "a_real")
        os.symlink("../../.judge", system / "a")
        swapped.set()

    swapper = threading.Thread(target=swap_once_the_copy_reads_the_pad)
    swapper.start()
    try:
        snapshot(system, target)
    finally:
        swapper.join()
    assert swapped.is_set() and (system / "a").is_symlink()
    assert (target / "a" / "key").read_bytes() == b"decoy"
    assert all(b"SECRET" not in item.data for item in read_files(target))


def test_a_planted_metrics_link_is_neither_copied_nor_written_through(tmp_path):
    victim = tmp_path / "journal.jsonl"
    victim.write_text("the judge's own file\n")
    system = tmp_path / "workspace" / "system"
    system.mkdir(parents=True)
    (system / "policy.py").write_text(POLICY)
    (system / "metrics.json").symlink_to(victim)
    (system / "_meta.json").symlink_to(victim)
    target = tmp_path / "checkpoints" / "submit_000"
    snapshot(system, target)
    assert sorted(p.name for p in target.iterdir()) == ["policy.py"]
    write_metrics(target)
    assert victim.read_text() == "the judge's own file\n"
    assert not (target / "metrics.json").is_symlink()
    assert json.loads((target / "metrics.json").read_text())["files"] == 1


def test_writing_metrics_leaves_the_hashed_files_of_a_checkpoint_as_they_were(tmp_path):
    # The agent's files may have any name, the judge's temporary ones among them.
    system = tmp_path / "workspace" / "system"
    system.mkdir(parents=True)
    (system / "policy.py").write_text(POLICY)
    (system / ".metrics.json.tmp").write_text("the agent's\n")
    target = tmp_path / "checkpoints" / "submit_000"
    snapshot(system, target)
    before = files_hash(read_files(target))
    write_metrics(target)
    assert files_hash(read_files(target)) == before
    assert (target / ".metrics.json.tmp").read_text() == "the agent's\n"


def test_a_mirror_removes_deep_trees_the_agent_left_and_refuses_a_deep_checkpoint(tmp_path):
    source = tmp_path / "checkpoint"
    source.mkdir()
    (source / "policy.py").write_text(POLICY)
    workspace = tmp_path / "workspace"
    system = workspace / "system"
    system.mkdir(parents=True)
    nest(system, 2000)
    (workspace / ".system.mirror").mkdir()
    nest(workspace / ".system.mirror", 2000)
    mirror(source, system)
    assert sorted(p.name for p in workspace.iterdir()) == ["system"]
    assert sorted(p.name for p in system.iterdir()) == ["policy.py"]
    # A checkpoint deeper than a snapshot takes (made by an older judge) is refused, not
    # recursed into: finalize logs the MirrorError and closes the run.
    nest(source, 2000)
    with pytest.raises(MirrorError, match="nested more than 64 directories deep"):
        mirror(source, system)
    assert (system / "policy.py").read_text() == POLICY
    assert sorted(p.name for p in workspace.iterdir()) == ["system"]
