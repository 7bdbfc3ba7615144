"""Checkpoints: the snapshot of ``system/`` taken at each submit, its static scan and its code
metrics (``metrics.json``, host-only and non-scoring)."""

from __future__ import annotations

import ast
import contextlib
import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

from evopolicygym.protocol import CheckpointFile, Verdict
from evopolicygym.sandbox import (
    TreeLimits,
    TreeRefused,
    copy_tree,
    open_directory,
    opened_directory,
    remove_entry,
    remove_path,
    write_file,
)

IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
# The judge's own files, at the top level of a checkpoint only (deeper down they are data).
IGNORED_FILES = {"metrics.json", "_meta.json", ".keep"}
MAX_SNAPSHOT_BYTES = 256 * 2**20
MAX_SNAPSHOT_ENTRIES = 100_000
MAX_SNAPSHOT_DEPTH = 64  # directories below system/; each holds a descriptor while copied
MAX_SNAPSHOT_PATH_BYTES = 1024  # of a path below system/, so the checkpoint's stay usable
# The judge parses sources in its own process (~300x their size in memory): a larger .py file
# is left to the worker, which imports it under its limits.
MAX_PARSED_SOURCE_BYTES = 2**20


class SnapshotRefused(Exception):
    """``system/`` cannot be taken as a checkpoint: it holds something other than directories,
    regular files and symbolic links, a name or link target that is not UTF-8, an unreadable
    entry, or passes a ``MAX_SNAPSHOT_*`` limit (see :func:`snapshot`). ``verdict`` is the submit's verdict and ``message`` says what
    to remove; no checkpoint is left behind."""

    def __init__(self, verdict: Verdict, message: str):
        super().__init__(message)
        self.verdict = verdict
        self.message = message


class MirrorError(OSError):
    """``system/`` could not be replaced with the selected checkpoint (the score is not
    affected: mirroring only shows the agent's workspace what was selected)."""


class ScanProblem(NamedTuple):
    verdict: Verdict
    message: str
    traceback: str | None = None


def _files(root: Path) -> list[Path]:
    """Regular files and symbolic links below ``root`` (links never followed), sorted; caches
    and, at the top level only, the judge's own files left out. Iterative: a checkpoint taken
    before snapshots were bounded in depth may be deeper than Python's recursion limit."""
    found: list[Path] = []
    directories = [root]
    while directories:
        directory = directories.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if _not_copied(0 if directory == root else 1, entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    directories.append(Path(entry.path))
                else:
                    found.append(Path(entry.path))
    return sorted(found)


def read_files(checkpoint: Path) -> list[CheckpointFile]:
    """The checkpoint's content as the judge sends it to a worker: every file's bytes, every
    symbolic link as its target (never followed)."""
    files = []
    for path in _files(checkpoint):
        relative = path.relative_to(checkpoint).as_posix()
        if path.is_symlink():
            files.append(CheckpointFile(relative, b"", os.readlink(path)))
        else:
            files.append(CheckpointFile(relative, path.read_bytes()))
    return files


def files_hash(files: list[CheckpointFile]) -> str:
    """``sha256:<hex>`` of a checkpoint's content (paths, bytes, link targets): what a
    journal records at submit and finalize checks before scoring."""
    digest = hashlib.sha256()
    for item in files:
        payload = item.data if item.link is None else b"->" + item.link.encode()
        digest.update(item.path.encode() + b"\0" + payload + b"\0")
    return "sha256:" + digest.hexdigest()


def snapshot(system: Path, target: Path) -> None:
    """Copy ``system`` to ``target`` through a temporary sibling and a rename. Symlinks are
    copied as links (never followed); caches, and the judge's own files at the top level, are
    skipped. The copy walks ``system`` by directory descriptors (opened relative to the
    workspace, which the agent cannot replace), so an entry swapped while it runs, a directory
    for a symbolic link for instance, is never followed out of ``system``.

    Raises :class:`SnapshotRefused`, leaving no checkpoint, for a ``system`` that is not a
    directory, a FIFO, socket or device, a name or link target that is not UTF-8, an entry the
    judge cannot read (one swapped for a link as it is opened), a tree deeper than
    ``MAX_SNAPSHOT_DEPTH`` directories, a path longer than ``MAX_SNAPSHOT_PATH_BYTES``, more
    than ``MAX_SNAPSHOT_ENTRIES`` entries or ``MAX_SNAPSHOT_BYTES`` bytes. The byte limit
    counts the bytes actually copied, so neither a file that grows during the copy nor a
    sparse file passes it."""
    temporary = target.with_name(f".{target.name}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_path(temporary)
    # A target without a journaled submit is what a machine crash left: it is redone.
    remove_path(target)
    temporary.mkdir()
    try:
        with opened_directory(temporary) as copy:
            _copy_system(system, copy)
    except BaseException:
        with contextlib.suppress(OSError):
            remove_path(temporary)
        raise
    temporary.replace(target)


def _copy_system(system: Path, copy: int) -> None:
    """Copy the entries of ``system`` (nothing if it does not exist) into the directory
    ``copy``, or raise :class:`SnapshotRefused`."""
    with opened_directory(system.parent) as workspace:
        try:
            source = open_directory(system.name, workspace)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _system_refused(workspace, system.name, exc) from None
        try:
            copy_tree(source, copy, _limits(), _not_copied)
        except TreeRefused as refused:
            raise _refusal(refused) from None
        finally:
            os.close(source)


def _system_refused(workspace: int, name: str, exc: OSError) -> SnapshotRefused:
    """Why ``system`` itself cannot be copied. Followed, a link would make the judge copy
    whatever it points to (another run's files) into this run's checkpoint."""
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(name, dir_fd=workspace, follow_symlinks=False).st_mode):
            return _refused(Path("system"), "is a symbolic link, not a directory")
    if exc.errno == errno.ENOTDIR:
        return _refused(Path("system"), "is not a directory")
    return _refused(Path("system"), f"cannot be read ({exc.strerror or exc})")


def _limits() -> TreeLimits:
    # Read at each call: tests lower the limits.
    return TreeLimits(
        depth=MAX_SNAPSHOT_DEPTH,
        path_bytes=MAX_SNAPSHOT_PATH_BYTES,
        entries=MAX_SNAPSHOT_ENTRIES,
        bytes=MAX_SNAPSHOT_BYTES,
    )


def _not_copied(depth: int, name: str) -> bool:
    """Caches anywhere, the judge's own files at the top level only."""
    return name in IGNORED_DIRS or (depth == 0 and name in IGNORED_FILES)


def _refusal(refused: TreeRefused) -> SnapshotRefused:
    shown = Path("system", *refused.parts)
    printable = Path(os.fsencode(shown).decode(errors="backslashreplace"))
    if refused.limit == "bytes":
        return _over(f"more than {MAX_SNAPSHOT_BYTES} bytes", printable, "large files")
    if refused.limit == "entries":
        return _over(f"more than {MAX_SNAPSHOT_ENTRIES} entries", printable, "files")
    return _refused(printable, refused.problem)


def _over(amount: str, shown: Path, what: str) -> SnapshotRefused:
    return SnapshotRefused(
        Verdict.IMPORT_ERROR,
        f"system/ holds {amount} (the limit was passed at {shown}): remove {what} from "
        "system/ and submit again",
    )


def _refused(shown: Path, problem: str) -> SnapshotRefused:
    return SnapshotRefused(
        Verdict.IMPORT_ERROR, f"{shown} {problem}: remove it from system/ and submit again"
    )


def scan(checkpoint: Path) -> ScanProblem | None:
    """Static checks before anything runs: ``policy.py`` exists, every ``.py`` file parses, and
    ``policy.py`` defines a top-level ``class Policy``. A file over ``MAX_PARSED_SOURCE_BYTES``
    is not parsed here: the worker imports it, and reports what this scan would have."""
    policy = checkpoint / "policy.py"
    if policy.is_symlink():
        return ScanProblem(
            Verdict.MISSING_POLICY, "system/policy.py is a symbolic link: make it a regular file"
        )
    if not policy.is_file():
        return ScanProblem(Verdict.MISSING_POLICY, "system/policy.py does not exist")
    policy_tree: ast.Module | None = None
    for path in _files(checkpoint):
        if path.suffix != ".py" or path.is_symlink():
            continue
        relative = path.relative_to(checkpoint)
        try:
            tree = _parse(path.read_bytes(), f"system/{relative}")
        except SyntaxError as exc:
            detail = f"system/{relative}" + (f", line {exc.lineno}" if exc.lineno else "")
            text = exc.text.rstrip() if exc.text else ""
            return ScanProblem(
                Verdict.IMPORT_ERROR, f"SyntaxError in {detail}: {exc.msg}", text or None
            )
        except (ValueError, MemoryError, RecursionError) as exc:
            # ValueError: null bytes; the others: nesting too deep for the parser.
            message = f"{type(exc).__name__} in system/{relative}: {exc or 'nested too deeply'}"
            return ScanProblem(Verdict.IMPORT_ERROR, message)
        if path == policy:
            policy_tree = tree
    if policy_tree is not None and not any(
        isinstance(node, ast.ClassDef) and node.name == "Policy" for node in policy_tree.body
    ):
        return ScanProblem(
            Verdict.MISSING_POLICY, "system/policy.py has no top-level `class Policy`"
        )
    return None


def _parse(source: bytes, filename: str) -> ast.Module | None:
    """``source`` parsed, or None when it is too large to parse in the judge."""
    if len(source) > MAX_PARSED_SOURCE_BYTES:
        return None
    return ast.parse(source, filename=filename)


def _cyclomatic(function: ast.AST) -> int:
    branches = (
        ast.If,
        ast.For,
        ast.AsyncFor,
        ast.While,
        ast.IfExp,
        ast.ExceptHandler,
        ast.comprehension,
        ast.match_case,
    )
    total = 1
    for node in ast.walk(function):
        if isinstance(node, branches):
            total += 1
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
    return total


def code_metrics(checkpoint: Path) -> dict:
    """Size and structure of a checkpoint; ``tree_hash`` identifies its content. A ``.py`` file
    over ``MAX_PARSED_SOURCE_BYTES`` counts in ``files``, ``python_files`` and ``bytes`` only
    and is listed in ``not_analysed``; one the parser fails on is listed in ``parse_errors``."""
    files = read_files(checkpoint)
    metrics = {
        "schema_version": "0.1",
        "files": 0,
        "python_files": 0,
        "bytes": 0,
        "source_lines": 0,
        "classes": 0,
        "functions": 0,
        "cyclomatic_total": 0,
        "cyclomatic_max": 0,
        "parse_errors": [],
        "not_analysed": [],
    }
    for item in files:
        data = item.data
        metrics["files"] += 1
        metrics["bytes"] += len(data)
        if item.link is not None or not item.path.endswith(".py"):
            continue
        metrics["python_files"] += 1
        if len(data) > MAX_PARSED_SOURCE_BYTES:
            metrics["not_analysed"].append(item.path)
            continue
        text = data.decode("utf-8", errors="replace")
        metrics["source_lines"] += sum(
            1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#")
        )
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            metrics["parse_errors"].append(item.path)
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                metrics["classes"] += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                metrics["functions"] += 1
                complexity = _cyclomatic(node)
                metrics["cyclomatic_total"] += complexity
                metrics["cyclomatic_max"] = max(metrics["cyclomatic_max"], complexity)
    metrics["tree_hash"] = files_hash(files)
    return metrics


def write_metrics(checkpoint: Path) -> dict:
    """Write ``metrics.json`` at the top of ``checkpoint`` (replacing whatever has that name,
    a symbolic link never written through) and return the metrics."""
    metrics = code_metrics(checkpoint)
    text = json.dumps(metrics, indent=2, sort_keys=True) + "\n"
    write_file(checkpoint, "metrics.json", text.encode())
    return metrics


def mirror(checkpoint: Path, system: Path) -> None:
    """Replace ``system`` with the checkpoint's files (without the judge's own files at its top
    level). It works through ``.<system>.mirror`` and ``.<system>.old`` beside ``system``, all
    reached through a descriptor of the workspace (which the agent cannot replace): whatever
    the agent left at those names (file, link or directory, at any depth) is removed first, a
    link never followed. The copy is iterative and bounded like a snapshot. Raises
    :class:`MirrorError`, and only that, when ``system`` still cannot be replaced (a partial
    copy is removed)."""
    try:
        with (
            opened_directory(checkpoint) as source,
            opened_directory(system.parent) as workspace,
        ):
            try:
                _replace_system(source, workspace, system.name)
            except OSError:
                with contextlib.suppress(OSError):
                    remove_entry(workspace, f".{system.name}.mirror")
                raise
    except OSError as exc:
        raise MirrorError(f"cannot replace {system} with {checkpoint}: {exc}") from exc


def _replace_system(source: int, workspace: int, name: str) -> None:
    """Copy the checkpoint ``source`` to ``.<name>.mirror`` in ``workspace``, then rename it to
    ``name``, the old ``name`` moved aside to ``.<name>.old`` and removed."""
    temporary, old = f".{name}.mirror", f".{name}.old"
    remove_entry(workspace, temporary)
    os.mkdir(temporary, dir_fd=workspace)
    with opened_directory(temporary, workspace) as copy:
        copy_tree(source, copy, _limits(), _not_copied)
    remove_entry(workspace, old)
    with contextlib.suppress(FileNotFoundError):
        os.rename(name, old, src_dir_fd=workspace, dst_dir_fd=workspace)
    os.rename(temporary, name, src_dir_fd=workspace, dst_dir_fd=workspace)
    with contextlib.suppress(OSError):  # a leftover .old is harmless
        remove_entry(workspace, old)
