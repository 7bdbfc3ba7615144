"""Case splits: which environment seeds are train, validation and held-out.

A split directory holds ``train.json``, ``valid.json`` and ``heldout.json``. Each file is an object
``{"cases": [{"seed": N}, ...], "env", "generator", "ref", "split"}`` (a bare JSON array of rows
is accepted too). Generation is byte-for-byte the reference algorithm: draw distinct integers from
``random.Random(master_seed).randrange(0, 2**31)`` in order, skipping repeats; the first block is
train, then validation, then held-out. Without a split directory a run uses the same generator with
master seed 0 and the environment's default sizes, so both paths give the same seeds.

Public seeds let anyone compute every hidden case in advance: a policy can recognise a hidden case
from its first observation by simulating the public seeds. *Private* splits (``make_splits(...,
private=True)``, ``data make --private``) draw every seed from the operating system's randomness
instead; their validation and held-out files also hold a random ``nonce``, so the SHA-256 of each
file (recorded in ``run.json``) is a commitment that reveals nothing until the files are published.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

SPLIT_FILES = {"train": "train.json", "valid": "valid.json", "heldout": "heldout.json"}
POOL_REFS = {"train": "train", "valid": "validation", "heldout": "heldout"}
SEED_SPACE = 2**31


class SplitSizes(NamedTuple):
    """Cases per pool, in drawing order."""

    train: int
    valid: int
    heldout: int


PUBLISHED_SPLIT = SplitSizes(train=1024, valid=64, heldout=256)
"""The pools of the published protocol, drawn with master seed 0: the default ``[data]`` table
of a suite (every main suite) and the pools the random anchors of envspecs are measured on."""


class SplitError(ValueError):
    """A split directory is missing, malformed, or inconsistent."""


class CaseSplits(BaseModel):
    """Seeds of the three pools, in order. ``train[i]`` is visible train id ``i``.

    ``hashes`` maps ``data_train_hash`` etc. to ``sha256:<hex>`` of the file bytes (empty for
    generated in-memory splits). ``private`` is true for splits drawn by ``data make --private``:
    then the hidden files' hashes are commitments (each file holds a random nonce)."""

    train: list[int]
    valid: list[int]
    heldout: list[int]
    hashes: dict[str, str] = {}
    private: bool = False

    def digest(self) -> str:
        """``sha256:<hex>`` of the three seed lists as played: equal digests mean the same cases,
        whether they came from a split directory, the seed generator or a private split."""
        text = json.dumps([self.train, self.valid, self.heldout], separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def trimmed(self, valid_size: int | None, heldout_size: int | None) -> CaseSplits:
        """Keep the first ``valid_size`` / ``heldout_size`` hidden cases; refuses to grow a pool."""
        for name, size, pool in (
            ("valid", valid_size, self.valid),
            ("heldout", heldout_size, self.heldout),
        ):
            if size is not None and size > len(pool):
                raise SplitError(f"{name} size {size} exceeds the {len(pool)} cases available")
        return self.model_copy(
            update={
                "valid": self.valid[:valid_size] if valid_size else self.valid,
                "heldout": self.heldout[:heldout_size] if heldout_size else self.heldout,
            }
        )


def draw_seeds(master_seed: int | None, count: int) -> list[int]:
    """The first ``count`` distinct draws of ``Random(master_seed).randrange(0, 2**31)``; with
    ``master_seed=None``, distinct draws from the operating system's randomness."""
    rng = random.SystemRandom() if master_seed is None else random.Random(master_seed)
    seen: set[int] = set()
    seeds: list[int] = []
    while len(seeds) < count:
        seed = rng.randrange(0, SEED_SPACE)
        if seed not in seen:
            seen.add(seed)
            seeds.append(seed)
    return seeds


def generate_splits(master_seed: int | None, train: int, valid: int, heldout: int) -> CaseSplits:
    seeds = draw_seeds(master_seed, train + valid + heldout)
    return CaseSplits(
        train=seeds[:train], valid=seeds[train : train + valid], heldout=seeds[train + valid :]
    )


def seed_split_hashes(env_id: str, master_seed: int, train: int, valid: int, heldout: int):
    """The ``data_*_hash`` values ``data make`` gives for these settings (to recognise the
    seed of an existing split directory from the hashes a run recorded)."""
    splits = generate_splits(master_seed, train, valid, heldout)
    return {
        f"data_{split}_hash": "sha256:"
        + hashlib.sha256(
            _split_document(env_id, split, getattr(splits, split), master_seed).encode()
        ).hexdigest()
        for split in ("train", "valid", "heldout")
    }


def _split_document(env_id: str, split: str, seeds: list[int], master_seed: int | None) -> str:
    generator: dict[str, object] = (
        {"kind": "private", "size": len(seeds)}
        if master_seed is None
        else {"kind": "seed", "seed": master_seed, "size": len(seeds)}
    )
    document: dict[str, object] = {
        "cases": [{"seed": seed} for seed in seeds],
        "env": env_id,
        "generator": generator,
        "ref": f"{env_id}/{POOL_REFS[split]}",
        "split": split,
    }
    if master_seed is None and split != "train":
        document["nonce"] = secrets.token_hex(32)  # makes the file's hash a hiding commitment
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def make_splits(
    env_id: str,
    root: Path,
    *,
    seed: int = 0,
    train_size: int,
    valid_size: int,
    heldout_size: int,
    force: bool = False,
    private: bool = False,
) -> CaseSplits:
    """Write the three split files under ``root`` and return them as loaded back from disk.

    ``private`` draws the seeds from the operating system's randomness instead of ``seed`` and
    writes the hidden files readable by their owner only (mode 0600), each with a random nonce.
    Refuses to overwrite existing files unless ``force``; files are written to a temporary name
    and renamed into place so an interrupted call leaves no half-written split.
    """
    for name, size in (("train", train_size), ("valid", valid_size), ("heldout", heldout_size)):
        if size <= 0:
            raise SplitError(f"{name} size must be positive, got {size}")
    existing = [root / f for f in SPLIT_FILES.values() if (root / f).exists()]
    if existing and not force:
        raise SplitError(
            f"{existing[0]} already exists; pass --force to overwrite the split in {root}"
        )
    master = None if private else seed
    splits = generate_splits(master, train_size, valid_size, heldout_size)
    root.mkdir(parents=True, exist_ok=True)
    for split, filename in SPLIT_FILES.items():
        target = root / filename
        temporary = target.with_suffix(".json.tmp")
        temporary.unlink(missing_ok=True)
        mode = 0o600 if private and split != "train" else 0o644
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "w") as f:
            f.write(_split_document(env_id, split, getattr(splits, split), master))
        temporary.replace(target)
    return load_splits(root, env_id)


def _row_seed(row: object, where: str) -> int:
    if isinstance(row, dict):
        row = row.get("seed")
    if isinstance(row, str) and row.strip().isdigit():
        row = int(row)
    if isinstance(row, bool) or not isinstance(row, int) or row < 0:
        raise SplitError(f"{where}: every case needs a non-negative integer 'seed'")
    return row


def _load_split(path: Path, env_id: str, split: str) -> tuple[list[int], str, bool]:
    if not path.is_file():
        raise SplitError(f"missing split file {path} (create it with `evopolicygym data make`)")
    raw = path.read_bytes()
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SplitError(f"{path} is not valid JSON: {exc}") from exc
    private = False
    if isinstance(document, dict):
        generator = document.get("generator")
        private = isinstance(generator, dict) and generator.get("kind") == "private"
        if document.get("env") not in (None, env_id):
            raise SplitError(f"{path} is for env {document['env']!r}, not {env_id!r}")
        if document.get("split") not in (None, split):
            raise SplitError(f"{path} declares split {document['split']!r}, expected {split!r}")
        rows = document.get("cases")
    else:
        rows = document
    if not isinstance(rows, list) or not rows:
        raise SplitError(f"{path} must hold a non-empty list of cases")
    seeds = [_row_seed(row, f"{path} case {i}") for i, row in enumerate(rows)]
    if len(set(seeds)) != len(seeds):
        raise SplitError(f"{path} repeats a seed")
    return seeds, "sha256:" + hashlib.sha256(raw).hexdigest(), private


def load_splits(root: Path, env_id: str) -> CaseSplits:
    """Load and check a split directory: files present, env and split labels match, no repeated
    seed within a split, no seed shared between splits."""
    pools: dict[str, list[int]] = {}
    hashes: dict[str, str] = {}
    private: dict[str, bool] = {}
    for split, filename in SPLIT_FILES.items():
        pools[split], hashes[f"data_{split}_hash"], private[split] = _load_split(
            root / filename, env_id, split
        )
    if private["valid"] != private["heldout"]:
        raise SplitError(f"{root}: one hidden split is private and the other is not; remake both")
    for a, b in (("train", "valid"), ("train", "heldout"), ("valid", "heldout")):
        shared = set(pools[a]) & set(pools[b])
        if shared:
            raise SplitError(f"{root}: {a} and {b} share seed {min(shared)}")
    return CaseSplits(**pools, hashes=hashes, private=private["heldout"])
