"""Integrity of a run's state: the private key, the HMAC chain of the journal, the seal of
``run.json``, and the fingerprint of the interpreter the workers import from.

The key (32 random bytes in ``.judge/key``, mode 0600) never leaves the judge: no worker or
agent is given a path to it, and at the ``namespaced`` level no policy can see the run directory
at all. Anyone with the key can check a run with :func:`~evopolicygym.judge.verify.verify_run`
(``evopolicygym verify RUN_DIR``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
from pathlib import Path
from typing import Any

KEY_FILE = "key"


class IntegrityError(RuntimeError):
    """Run state that was changed outside the judge, or cannot be checked."""


def load_key(private: Path, *, create: bool) -> bytes:
    """The run's key; created (0600) when ``create`` and absent."""
    path = private / KEY_FILE
    if not path.exists():
        if not create:
            raise IntegrityError(
                f"{path} is missing: this run's journal cannot be verified, so it cannot be "
                "resumed or scored; start a new run (a new --exp-id or directory)"
            )
        private.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
    return bytes.fromhex(path.read_text().strip())


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes a MAC covers: compact JSON with sorted keys, without the ``mac`` field."""
    return json.dumps(
        {k: v for k, v in body.items() if k != "mac"}, sort_keys=True, separators=(",", ":")
    ).encode()


def chain_mac(key: bytes, previous: str, body: dict[str, Any]) -> str:
    """The MAC of a journal line: HMAC-SHA256 of the previous line's MAC and this record."""
    return hmac.new(key, previous.encode() + b"\n" + canonical(body), hashlib.sha256).hexdigest()


def seal(key: bytes, record: dict[str, Any], journal_mac: str) -> dict[str, Any]:
    """``record`` (a ``run.json`` dump) with its ``integrity`` field: the journal head it was
    written after, and a MAC over everything else."""
    sealed = {**record, "integrity": {"journal_mac": journal_mac}}
    sealed["integrity"]["mac"] = hmac.new(key, canonical(sealed), hashlib.sha256).hexdigest()
    return sealed


def seal_matches(key: bytes, record: dict[str, Any]) -> bool:
    integrity = dict(record.get("integrity") or {})
    mac = integrity.pop("mac", "")
    body = {**record, "integrity": integrity}
    expected = hmac.new(key, canonical(body), hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, expected)


# -- interpreter fingerprint ---------------------------------------------------------------------


def interpreter_fingerprint(modules: list[str], site_dirs: list[str]) -> str:
    """``sha256:<hex>`` of what workers import: the content of every module file the lane
    hosts imported, the names in the site directories (an added package or ``.pth`` file
    changes them) and the content of their ``.pth`` files. A reinstall of the same files leaves
    it unchanged; any patch changes it."""
    digest = hashlib.sha256()
    for path in sorted(set(modules)):
        digest.update(path.encode() + b"\0" + _content(path) + b"\0")
    for directory in sorted(set(site_dirs)):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            names = []
        digest.update(directory.encode() + b"\0" + "\0".join(names).encode() + b"\0")
        for name in names:
            if name.endswith(".pth"):
                digest.update(_content(os.path.join(directory, name)))
    return "sha256:" + digest.hexdigest()


# Digests already taken by this process, keyed by the file's identity and change times: a
# write changes mtime and ctime (to the file system's timestamp granularity), a replacement the
# inode, and ctime cannot be set back, so the later fingerprints of a run re-read only files
# that changed. (At the namespaced and basic levels policy code cannot write there at all.)
_DIGESTS: dict[str, tuple[tuple[int, int, int, int], bytes]] = {}


def warm_digests(paths: list[str] | None = None) -> threading.Thread:
    """Start taking, in a background thread, the digests of ``paths`` (default: every module
    file this process has imported, most of what the lane hosts import too), so that
    :func:`interpreter_fingerprint` then reads only the rest (it is on the path to the agent's
    start). Join the thread before fingerprinting, or both read the same files."""
    if paths is None:
        paths = sorted(
            {f for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None))}
        )
    thread = threading.Thread(
        target=lambda: [_content(path) for path in paths], name="digests", daemon=True
    )
    thread.start()
    return thread


def _content(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            identity = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            cached = _DIGESTS.get(path)
            if cached is not None and cached[0] == identity:
                return cached[1]
            digest = hashlib.sha256(handle.read()).digest()
    except OSError:
        return b"missing"
    _DIGESTS[path] = (identity, digest)
    return digest
