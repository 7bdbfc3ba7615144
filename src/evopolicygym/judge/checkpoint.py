"""Checkpoints: the snapshot of ``system/`` taken at each submit, its static scan and its code
metrics (``metrics.json``, host-only and non-scoring)."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from evopolicygym.protocol import CheckpointFile, Verdict

IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
# The judge's own files, at the top level of a checkpoint only (deeper down they are data).
IGNORED_FILES = {"metrics.json", "_meta.json", ".keep"}
MAX_SNAPSHOT_BYTES = 256 * 2**20
# The judge parses sources in its own process (~300x their size in memory): a larger .py file
# is left to the worker, which imports it under its limits.
MAX_PARSED_SOURCE_BYTES = 2**20
_COPY_CHUNK = 2**20


class SnapshotRefused(Exception):
    """``system/`` cannot be taken as a checkpoint: it holds something other than directories,
    regular files and symbolic links, a name that is not UTF-8, an unreadable file, or more
    than ``MAX_SNAPSHOT_BYTES``. ``verdict`` is the submit's verdict and ``message`` says what
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
    and, at the top level only, the judge's own files left out."""
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        base = Path(directory)
        top = base == root
        found += [base / name for name in filenames if not (top and name in IGNORED_FILES)]
        # Links to directories appear in dirnames; keep them as links, do not descend.
        found += [base / d for d in dirnames if (base / d).is_symlink()]
        dirnames[:] = [d for d in dirnames if not (base / d).is_symlink()]
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
    copied as links (never followed) and caches are skipped. Raises :class:`SnapshotRefused`,
    leaving no checkpoint, for a ``system`` that is itself a symbolic link, a FIFO, socket or
    device, a name that is not UTF-8, an entry the
    judge cannot read, or a tree over ``MAX_SNAPSHOT_BYTES``. The limit counts the bytes
    actually copied, so neither a file that grows during the copy nor a sparse file passes it."""
    temporary = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    # A target without a journaled submit is what a machine crash left: it is redone.
    shutil.rmtree(target, ignore_errors=True)
    if system.is_symlink():
        # Followed, it would make the judge copy whatever it points to (another run's files)
        # into this run's checkpoint.
        raise _refused(Path("system"), "is a symbolic link, not a directory")
    try:
        if system.exists():
            _copy_tree(system, temporary, Path("system"), _ByteBudget(MAX_SNAPSHOT_BYTES))
        else:
            temporary.mkdir(parents=True)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    temporary.replace(target)


class _ByteBudget:
    """The bytes a snapshot may still copy."""

    def __init__(self, limit: int):
        self.left = limit

    def spend(self, size: int, shown: Path) -> None:
        self.require(size, shown)
        self.left -= size

    def require(self, size: int, shown: Path) -> None:
        if size > self.left:
            raise SnapshotRefused(
                Verdict.IMPORT_ERROR,
                f"system/ holds more than {MAX_SNAPSHOT_BYTES} bytes (the limit was passed at "
                f"{shown}): remove large files from system/ and submit again",
            )


def _refused(shown: Path, problem: str) -> SnapshotRefused:
    return SnapshotRefused(
        Verdict.IMPORT_ERROR, f"{shown} {problem}: remove it from system/ and submit again"
    )


@contextlib.contextmanager
def _reading(shown: Path) -> Iterator[None]:
    """Turn a failure to read ``shown`` in the agent's ``system/`` into a refusal."""
    try:
        yield
    except OSError as exc:
        raise _refused(shown, f"cannot be read ({exc.strerror or exc})") from None


def _copy_tree(source: Path, target: Path, shown: Path, budget: _ByteBudget) -> None:
    """Copy the directory ``source`` to the new directory ``target``; ``shown`` is how
    messages name ``source``."""
    target.mkdir(parents=True)
    with _reading(shown), os.scandir(source) as scanned:
        entries = sorted(scanned, key=lambda entry: entry.name)
    for entry in entries:
        if entry.name in IGNORED_DIRS:
            continue
        name = shown / entry.name
        try:
            entry.name.encode()
        except UnicodeEncodeError:
            printable = os.fsencode(name).decode(errors="backslashreplace")
            raise _refused(Path(printable), "has a name that is not UTF-8") from None
        with _reading(name):
            mode = entry.stat(follow_symlinks=False).st_mode
            link = os.readlink(entry.path) if stat.S_ISLNK(mode) else None
        if link is not None:
            budget.spend(len(os.fsencode(link)), name)
            os.symlink(link, target / entry.name)
        elif stat.S_ISDIR(mode):
            _copy_tree(Path(entry.path), target / entry.name, name, budget)
        elif stat.S_ISREG(mode):
            _copy_file(Path(entry.path), target / entry.name, name, budget)
        else:
            raise _refused(name, f"is a {_kind(mode)}, not a regular file")


def _copy_file(source: Path, target: Path, shown: Path, budget: _ByteBudget) -> None:
    # O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO after the listing is
    # neither followed nor waited on, and fstat says what was really opened.
    with _reading(shown):
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with open(descriptor, "rb") as reader:
        status = os.fstat(reader.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise _refused(shown, f"is a {_kind(status.st_mode)}, not a regular file")
        budget.require(status.st_size, shown)  # at once; growth is caught while copying
        with open(target, "xb") as writer:
            while chunk := reader.read(_COPY_CHUNK):
                budget.spend(len(chunk), shown)
                writer.write(chunk)
    os.chmod(target, stat.S_IMODE(status.st_mode) | stat.S_IRUSR)
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))


def _kind(mode: int) -> str:
    kinds = {
        stat.S_IFIFO: "named pipe",
        stat.S_IFSOCK: "socket",
        stat.S_IFCHR: "character device",
        stat.S_IFBLK: "block device",
    }
    return kinds.get(stat.S_IFMT(mode), "special file")


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
    metrics = code_metrics(checkpoint)
    (checkpoint / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


def mirror(checkpoint: Path, system: Path) -> None:
    """Replace ``system`` with the checkpoint's files (without the judge's own files at its top
    level). It works through ``.<system>.mirror`` and ``.<system>.old`` beside ``system``;
    whatever the agent left at those names (file, link or directory) is removed first, a link
    never followed. Raises :class:`MirrorError` when ``system`` still cannot be replaced."""
    temporary = system.with_name(f".{system.name}.mirror")
    old = system.with_name(f".{system.name}.old")
    try:
        _remove(temporary)
        shutil.copytree(checkpoint, temporary, symlinks=True, ignore=_not_mirrored(checkpoint))
        _remove(old)
        if os.path.lexists(system):
            system.replace(old)
        temporary.replace(system)
    except OSError as exc:
        raise MirrorError(f"cannot replace {system} with {checkpoint}: {exc}") from exc
    with contextlib.suppress(OSError):  # a leftover .old is harmless
        _remove(old)


def _not_mirrored(checkpoint: Path) -> Callable[[str, list[str]], set[str]]:
    """A ``copytree`` ignore: caches anywhere, the judge's files at the top level only."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = IGNORED_DIRS | (IGNORED_FILES if Path(directory) == checkpoint else set())
        return ignored.intersection(names)

    return ignore


def _remove(path: Path) -> None:
    """Remove ``path`` whatever it is (nothing if absent); a symbolic link is unlinked, never
    followed."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
