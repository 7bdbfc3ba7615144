"""Tree operations that never follow what the agent plants and never recurse in Python."""

import os

import pytest

from evopolicygym.sandbox import (
    TreeLimits,
    TreeRefused,
    copy_tree,
    opened_directory,
    real_directory,
    remove_path,
    write_file,
)

DEEP = 2000  # far past Python's recursion limit, and past PATH_MAX as a path


@pytest.fixture
def tmp_path(tmp_path):
    """pytest's own temporary directory, emptied without recursion after the test: the deep
    trees these tests plant would crash pytest's recursive clean-up of old directories."""
    yield tmp_path
    remove_path(tmp_path)


def nest(directory, depth, name="d"):
    """``directory/d/d/.../d/leaf`` ``depth`` levels deep, made through descriptors (the path
    is too long to name)."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=descriptor)
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = below
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor))
    finally:
        os.close(descriptor)


def _outside(tmp_path):
    kept = tmp_path / "kept"
    (kept / "inside").mkdir(parents=True)
    (kept / "inside" / "file").write_text("not the judge's")
    return kept


def test_a_tree_deeper_than_the_recursion_limit_is_removed_without_following_links(tmp_path):
    kept = _outside(tmp_path)
    tree = tmp_path / "tree"
    (tree / "wide").mkdir(parents=True)
    for number in range(50):
        (tree / "wide" / f"sub{number}").mkdir()
        (tree / "wide" / f"sub{number}" / "file").write_text("x")
    (tree / "wide" / "link").symlink_to(kept)
    (tree / "wide" / "inside").symlink_to(kept / "inside")
    nest(tree, DEEP)
    remove_path(tree)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert (kept / "inside" / "file").read_text() == "not the judge's"


@pytest.mark.parametrize("kind", ["link", "file", "absent"])
def test_removing_something_that_is_not_a_directory_removes_only_that(tmp_path, kind):
    kept = _outside(tmp_path)
    entry = tmp_path / "entry"
    if kind == "link":
        entry.symlink_to(kept)
    elif kind == "file":
        entry.write_text("x")
    remove_path(entry)
    assert not os.path.lexists(entry)
    assert (kept / "inside" / "file").read_text() == "not the judge's"


def test_a_file_written_where_a_link_was_planted_replaces_the_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    directory = tmp_path / "checkpoint"
    directory.mkdir()
    (directory / "metrics.json").symlink_to(victim)
    (directory / ".metrics.json.tmp").symlink_to(victim)
    write_file(directory, "metrics.json", b"{}\n")
    assert not (directory / "metrics.json").is_symlink()
    assert (directory / "metrics.json").read_text() == "{}\n"
    assert victim.read_text() == "precious"
    # Whatever else is there stays as it was: it may be part of a hashed checkpoint.
    assert sorted(p.name for p in directory.iterdir()) == [".metrics.json.tmp", "metrics.json"]
    assert (directory / ".metrics.json.tmp").is_symlink()


def test_a_copy_keeps_permission_bits_but_never_setuid_or_setgid(tmp_path):
    source, target = tmp_path / "source", tmp_path / "target"
    source.mkdir()
    target.mkdir()
    program = source / "program"
    program.write_text("#!/bin/sh\nid\n")
    program.chmod(0o6755)
    with opened_directory(source) as read, opened_directory(target) as write:
        copy_tree(read, write, TreeLimits(), lambda _depth, _name: False)
    assert oct((target / "program").stat().st_mode & 0o7777) == oct(0o755)


def test_a_real_directory_replaces_a_link_or_file_at_its_name(tmp_path):
    kept = _outside(tmp_path)
    (tmp_path / "feedback").symlink_to(kept)
    with opened_directory(tmp_path) as parent:
        os.close(real_directory(parent, "feedback"))
    assert (tmp_path / "feedback").is_dir() and not (tmp_path / "feedback").is_symlink()
    assert (kept / "inside" / "file").read_text() == "not the judge's"


def test_a_copy_deeper_than_its_limit_is_refused_naming_the_entry(tmp_path):
    source, target = tmp_path / "source", tmp_path / "target"
    source.mkdir()
    target.mkdir()
    nest(source, 5)
    with (
        opened_directory(source) as read,
        opened_directory(target) as write,
        pytest.raises(TreeRefused) as refused,
    ):
        copy_tree(read, write, TreeLimits(depth=3), lambda _depth, _name: False)
    assert refused.value.parts == ("d", "d", "d", "d")
    assert refused.value.problem == "is nested more than 3 directories deep"
    assert isinstance(refused.value, OSError)  # callers that catch OSError catch it too
