"""Protocol fingerprints of run records and of the published results: what decides whether two
scores may be compared."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

from ..cases import generate_splits, seed_split_hashes
from ..protocol import ProtocolFingerprint, RunRecord


@cache
def _spec(env: str):
    from ..envs import UnknownEnvironmentError, get_env

    try:
        return get_env(env, bulk=env.startswith("gymnasium/"))
    except (UnknownEnvironmentError, ImportError, OSError, ValueError):
        return None


def fingerprint_of(record: RunRecord) -> ProtocolFingerprint:
    """The record's fingerprint; for records older than schema 0.4 it is rebuilt from
    ``experiment_dimensions`` and ``versions``. The cases are recognised as seed-0 splits when
    the record has no split hashes (the built-in seed-0 splits of the environment's pool sizes)
    or when its split hashes are those ``data make --seed 0`` writes for its pool sizes;
    otherwise ``cases`` is a digest of the split hashes and ``cases_seed`` is unknown."""
    if record.protocol is not None:
        return record.protocol
    dims, versions = record.experiment_dimensions, record.versions

    def number(key):
        return int(dims[key]) if dims.get(key) is not None else None

    train, valid, heldout = number("n_env_instances"), number("valid_size"), number("heldout_size")
    hashes = {k: v for k, v in versions.items() if k.startswith("data_")}
    cases, seed = None, None
    if None in (train, valid, heldout):
        pass  # too old to tell which cases it played
    elif not hashes:
        spec = _spec(record.env)
        if spec is not None:
            pools = generate_splits(0, train, spec.valid_size, spec.heldout_size)
            cases, seed = pools.trimmed(valid, heldout).digest(), 0
    elif seed_split_hashes(record.env, 0, train, valid, heldout) == hashes:
        cases, seed = generate_splits(0, train, valid, heldout).digest(), 0
    else:
        text = json.dumps(hashes, sort_keys=True)
        cases = "files:" + hashlib.sha256(text.encode()).hexdigest()
    return ProtocolFingerprint(
        env=record.env,
        env_version=versions.get("env_version"),
        budget=number("episode_budget") or record.budget.limit,
        min_episodes_per_submit=number("min_episodes_per_submit"),
        max_episodes_per_submit=number("max_episodes_per_submit"),
        train_cases=train,
        valid_size=valid,
        heldout_size=heldout,
        cases=cases,
        cases_seed=seed,
        max_episode_steps=dims.get("max_episode_steps"),
        harness_version=record.harness_version,
    )


def published_fingerprints(archive_csv: Path, envs: list[str]) -> dict[str, ProtocolFingerprint]:
    """Fingerprint of the published runs per environment, from ``published.json`` beside the
    archived table: budget, submit bounds, pool sizes and split seed as published, the step cap
    of the environment's envspec; environment and harness versions are not recorded. Empty when
    ``published.json`` is missing (published entrants are then never compared)."""
    path = Path(archive_csv).with_name("published.json")
    if not path.is_file():
        return {}
    protocol = json.loads(path.read_text(encoding="utf-8"))["protocol"]
    seed = int(protocol["split_seed"])
    sizes = (
        int(protocol["train_cases"]),
        int(protocol["valid_size"]),
        int(protocol["heldout_size"]),
    )
    cases = generate_splits(seed, *sizes).digest()
    prints = {}
    for env in envs:
        spec = _spec(env)
        prints[env] = ProtocolFingerprint(
            env=env,
            budget=int(protocol["episode_budget"]),
            min_episodes_per_submit=int(protocol["minimum"]),
            max_episodes_per_submit=int(protocol["maximum"]),
            train_cases=sizes[0],
            valid_size=sizes[1],
            heldout_size=sizes[2],
            cases=cases,
            cases_seed=seed,
            max_episode_steps=spec.max_episode_steps if spec is not None else None,
        )
    return prints


def describe(fingerprint: ProtocolFingerprint) -> str:
    """One line for people: ``budget 128 (1..128 per submit), 64 validation and 256 held-out
    seed-0 cases, harness 0.2.0`` (the protocol-level fields of a comparison)."""
    f = fingerprint
    split = f"seed-{f.cases_seed} cases" if f.cases_seed is not None else "private cases"
    text = (
        f"budget {f.budget} ({f.min_episodes_per_submit}..{f.max_episodes_per_submit} per "
        f"submit), {f.valid_size} validation and {f.heldout_size} held-out {split}"
    )
    if f.harness_version:
        text += f", harness {f.harness_version}"
    return text
