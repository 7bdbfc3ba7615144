"""Checkpoints: the snapshot of ``system/`` taken at each submit, its static scan and its code
metrics (``metrics.json``, host-only and non-scoring)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import NamedTuple

from evopolicygym.protocol import CheckpointFile, Verdict

IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
IGNORED_FILES = {"metrics.json", "_meta.json", ".keep"}
MAX_SNAPSHOT_BYTES = 256 * 2**20


class ScanProblem(NamedTuple):
    verdict: Verdict
    message: str
    traceback: str | None = None


def _files(root: Path) -> list[Path]:
    """Regular files and symbolic links below ``root`` (links never followed), sorted."""
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        base = Path(directory)
        for name in filenames:
            if name not in IGNORED_FILES:
                found.append(base / name)
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
    copied as links (never followed), caches are skipped, and a tree over 256 MiB is refused."""
    total = sum(p.lstat().st_size for p in _files(system)) if system.exists() else 0
    if total > MAX_SNAPSHOT_BYTES:
        raise ValueError(f"system/ holds {total} bytes; the limit is {MAX_SNAPSHOT_BYTES}")
    temporary = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    # A target without a journaled submit is what a machine crash left: it is redone.
    shutil.rmtree(target, ignore_errors=True)
    if system.exists():
        shutil.copytree(
            system, temporary, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED_DIRS)
        )
    else:
        temporary.mkdir(parents=True)
    temporary.replace(target)


def scan(checkpoint: Path) -> ScanProblem | None:
    """Static checks before anything runs: ``policy.py`` exists, every ``.py`` file parses, and
    ``policy.py`` defines a top-level ``class Policy``."""
    policy = checkpoint / "policy.py"
    if policy.is_symlink():
        return ScanProblem(
            Verdict.MISSING_POLICY, "system/policy.py is a symbolic link: make it a regular file"
        )
    if not policy.is_file():
        return ScanProblem(Verdict.MISSING_POLICY, "system/policy.py does not exist")
    trees: dict[Path, ast.Module] = {}
    for path in _files(checkpoint):
        if path.suffix != ".py" or path.is_symlink():
            continue
        relative = path.relative_to(checkpoint)
        try:
            trees[path] = ast.parse(path.read_bytes(), filename=f"system/{relative}")
        except (SyntaxError, ValueError) as exc:
            detail = f"system/{relative}"
            if isinstance(exc, SyntaxError) and exc.lineno:
                detail += f", line {exc.lineno}"
            text = exc.text.rstrip() if isinstance(exc, SyntaxError) and exc.text else ""
            return ScanProblem(
                Verdict.IMPORT_ERROR,
                f"SyntaxError in {detail}: {exc.msg if isinstance(exc, SyntaxError) else exc}",
                text or None,
            )
    if not any(
        isinstance(node, ast.ClassDef) and node.name == "Policy" for node in trees[policy].body
    ):
        return ScanProblem(
            Verdict.MISSING_POLICY, "system/policy.py has no top-level `class Policy`"
        )
    return None


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
    """Size and structure of a checkpoint; ``tree_hash`` identifies its content."""
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
    }
    for item in files:
        data = item.data
        metrics["files"] += 1
        metrics["bytes"] += len(data)
        if item.link is not None or not item.path.endswith(".py"):
            continue
        metrics["python_files"] += 1
        text = data.decode("utf-8", errors="replace")
        metrics["source_lines"] += sum(
            1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#")
        )
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
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
    """Replace ``system`` with the checkpoint's files (without ``metrics.json``)."""
    temporary = system.with_name(f".{system.name}.mirror")
    shutil.rmtree(temporary, ignore_errors=True)
    shutil.copytree(
        checkpoint,
        temporary,
        symlinks=True,
        ignore=shutil.ignore_patterns(*IGNORED_DIRS, *IGNORED_FILES),
    )
    old = system.with_name(f".{system.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if system.exists():
        system.replace(old)
    temporary.replace(system)
    shutil.rmtree(old, ignore_errors=True)
