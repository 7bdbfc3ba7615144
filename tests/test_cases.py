import hashlib
import json

import pytest

from evopolicygym.cases import SplitError, draw_seeds, generate_splits, load_splits, make_splits


def test_seed_zero_matches_the_published_splits():
    splits = generate_splits(0, 1024, 64, 256)
    # first train, validation and held-out seeds of the reference data/main-128 files
    assert (splits.train[0], splits.valid[0], splits.heldout[0]) == (
        1654615998,
        1106378843,
        47113601,
    )
    assert len(set(splits.train + splits.valid + splits.heldout)) == 1344


def test_draws_are_distinct_and_reproducible():
    assert draw_seeds(7, 500) == draw_seeds(7, 500)
    assert len(set(draw_seeds(7, 500))) == 500


def test_make_writes_sorted_documents_and_refuses_to_overwrite(tmp_path):
    splits = make_splits(
        "gym/cartpole", tmp_path, seed=3, train_size=5, valid_size=2, heldout_size=4
    )
    document = json.loads((tmp_path / "valid.json").read_text())
    assert document["env"] == "gym/cartpole"
    assert document["split"] == "valid"
    assert document["ref"] == "gym/cartpole/validation"
    assert document["generator"] == {"kind": "seed", "seed": 3, "size": 2}
    assert (
        [c["seed"] for c in document["cases"]] == splits.valid == generate_splits(3, 5, 2, 4).valid
    )
    assert set(splits.hashes) == {"data_train_hash", "data_valid_hash", "data_heldout_hash"}
    with pytest.raises(SplitError, match="--force"):
        make_splits("gym/cartpole", tmp_path, seed=3, train_size=5, valid_size=2, heldout_size=4)
    make_splits(
        "gym/cartpole", tmp_path, seed=4, train_size=5, valid_size=2, heldout_size=4, force=True
    )


def test_load_rejects_overlap_wrong_env_and_bad_rows(tmp_path):
    make_splits("toy", tmp_path, train_size=3, valid_size=2, heldout_size=2)
    with pytest.raises(SplitError, match="not 'gym/cartpole'"):
        load_splits(tmp_path, "gym/cartpole")
    train = json.loads((tmp_path / "train.json").read_text())
    valid = json.loads((tmp_path / "valid.json").read_text())
    valid["cases"][0] = train["cases"][0]
    (tmp_path / "valid.json").write_text(json.dumps(valid))
    with pytest.raises(SplitError, match="share seed"):
        load_splits(tmp_path, "toy")
    (tmp_path / "valid.json").write_text(json.dumps([{"seed": -4}]))
    with pytest.raises(SplitError, match="non-negative"):
        load_splits(tmp_path, "toy")
    fresh = tmp_path / "fresh"
    make_splits("toy", fresh, train_size=3, valid_size=2, heldout_size=2)
    (fresh / "heldout.json").unlink()
    with pytest.raises(SplitError, match="data make"):
        load_splits(fresh, "toy")


def test_trim_keeps_the_first_cases_and_never_grows(tmp_path):
    splits = generate_splits(0, 4, 8, 8)
    assert splits.trimmed(3, None).valid == splits.valid[:3]
    with pytest.raises(SplitError):
        splits.trimmed(9, None)


def test_private_splits_come_from_the_os_and_their_hashes_are_commitments(tmp_path):
    first = make_splits("toy", tmp_path / "a", private=True, **SIZES)
    second = make_splits("toy", tmp_path / "b", private=True, **SIZES)
    assert first.private and second.private
    assert first.heldout != second.heldout and first.valid != second.valid
    public = generate_splits(0, 5, 4, 6)
    assert not set(first.valid + first.heldout) & set(public.valid + public.heldout)
    for name in ("valid", "heldout"):
        path = tmp_path / "a" / f"{name}.json"
        document = json.loads(path.read_text())
        assert document["generator"] == {"kind": "private", "size": len(getattr(first, name))}
        assert len(document["nonce"]) == 64 and "seed" not in document["generator"]
        assert path.stat().st_mode & 0o777 == 0o600
        digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        assert first.hashes[f"data_{name}_hash"] == digest
    assert (tmp_path / "a" / "train.json").stat().st_mode & 0o777 == 0o644
    assert not make_splits("toy", tmp_path / "c", seed=0, **SIZES).private


def test_a_split_with_one_private_hidden_file_is_refused(tmp_path):
    make_splits("toy", tmp_path / "p", private=True, **SIZES)
    make_splits("toy", tmp_path / "q", **SIZES)
    (tmp_path / "q" / "valid.json").write_bytes((tmp_path / "p" / "valid.json").read_bytes())
    with pytest.raises(SplitError, match="private"):
        load_splits(tmp_path / "q", "toy")


SIZES = {"train_size": 5, "valid_size": 4, "heldout_size": 6}
