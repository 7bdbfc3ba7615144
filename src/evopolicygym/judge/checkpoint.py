"""Checkpoints: the snapshot of ``system/`` taken at each submit, its static scan and its code
metrics (``metrics.json``, host-only and non-scoring)."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from pathlib import Path
from typing import NamedTuple

from evopolicygym.protocol import Verdict

IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
IGNORED_FILES = {"metrics.json", "_meta.json", ".keep"}
MAX_SNAPSHOT_BYTES = 256 * 2**20


class ScanProblem(NamedTuple):
    verdict: Verdict
    message: str
    traceback: str | None = None


def _files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not IGNORED_DIRS & set(p.relative_to(root).parts)
        and p.name not in IGNORED_FILES
    )


def snapshot(system: Path, target: Path) -> None:
    """Copy ``system`` to ``target`` through a temporary sibling and a rename. Symlinks are
    copied as links (never followed), caches are skipped, and a tree over 256 MiB is refused."""
    total = sum(p.stat().st_size for p in _files(system)) if system.exists() else 0
    if total > MAX_SNAPSHOT_BYTES:
        raise ValueError(f"system/ holds {total} bytes; the limit is {MAX_SNAPSHOT_BYTES}")
    temporary = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(temporary, ignore_errors=True)
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
    if not policy.is_file():
        return ScanProblem(Verdict.MISSING_POLICY, "system/policy.py does not exist")
    trees: dict[Path, ast.Module] = {}
    for path in _files(checkpoint):
        if path.suffix != ".py":
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
    digest = hashlib.sha256()
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
    for path in _files(checkpoint):
        data = path.read_bytes()
        relative = path.relative_to(checkpoint).as_posix()
        digest.update(relative.encode() + b"\0" + data + b"\0")
        metrics["files"] += 1
        metrics["bytes"] += len(data)
        if path.suffix != ".py":
            continue
        metrics["python_files"] += 1
        text = data.decode("utf-8", errors="replace")
        metrics["source_lines"] += sum(
            1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#")
        )
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            metrics["parse_errors"].append(relative)
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                metrics["classes"] += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                metrics["functions"] += 1
                complexity = _cyclomatic(node)
                metrics["cyclomatic_total"] += complexity
                metrics["cyclomatic_max"] = max(metrics["cyclomatic_max"], complexity)
    metrics["tree_hash"] = "sha256:" + digest.hexdigest()
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
