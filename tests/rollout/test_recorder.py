"""Helpers of the policy worker that decide where an episode's observations go."""

import io

import numpy as np
import pytest

from evopolicygym.rollout._recorder import EXTERNALIZE_BYTES, _nbytes, _stack
from evopolicygym.rollout._recorder import externalize as _externalize


def test_nbytes_counts_what_the_stack_will_hold():
    image = np.zeros((210, 160, 3), np.uint8)
    assert _nbytes(image) == 210 * 160 * 3
    assert _nbytes({"image": image, "direction": np.int64(2), "mission": "go"}) == 100800 + 16
    assert _nbytes(3) == 8


def test_large_stacks_go_to_npy_and_small_ones_stay_inline():
    small = [np.zeros(4) for _ in range(10)]
    assert _externalize(small, always=False, compress_images=False) == (None, None)
    frames = [np.full((8, 8, 3), t, np.uint8) for t in range(100)]
    assert sum(_nbytes(f) for f in frames) > EXTERNALIZE_BYTES
    blob, kind = _externalize(frames, always=False, compress_images=False)
    assert kind == "npy"
    assert np.array_equal(np.load(io.BytesIO(blob))[42], frames[42])


def test_dicts_go_to_npz_and_ragged_observations_stay_inline():
    obs = [{"image": np.full((7, 7, 3), t, np.uint8), "direction": t % 4} for t in range(50)]
    blob, kind = _externalize(obs, always=True, compress_images=False)
    stored = np.load(io.BytesIO(blob))
    assert kind == "npz" and stored["image"].shape == (50, 7, 7, 3)
    assert list(stored["direction"][:5]) == [0, 1, 2, 3, 0]
    ragged = [np.zeros(1000 + t) for t in range(5)]
    assert _externalize(ragged, always=False, compress_images=True) == (None, None)


def test_compress_images_puts_pixel_stacks_in_a_compressed_npz_and_leaves_floats_alone():
    frames = [np.full((64, 64, 3), t % 7, np.int64) for t in range(200)]  # stored as uint8
    plain, plain_kind = _externalize(frames, always=True, compress_images=False)
    packed, packed_kind = _externalize(frames, always=True, compress_images=True)
    assert (plain_kind, packed_kind) == ("npy", "npz")
    stored = np.load(io.BytesIO(packed))
    assert list(stored) == ["obs"] and stored["obs"].dtype == np.uint8
    assert np.array_equal(stored["obs"], np.load(io.BytesIO(plain)))
    assert len(packed) * 20 < len(plain)
    vectors = [np.linspace(0, 1, 600) + t for t in range(10)]
    blob, kind = _externalize(vectors, always=False, compress_images=True)
    assert kind == "npy" and np.array_equal(np.load(io.BytesIO(blob))[3], vectors[3])


@pytest.mark.parametrize(
    "values",
    [
        [np.arange(4, dtype=np.float32) + t for t in range(5)],
        [np.full((2, 3), t, np.uint8) for t in range(4)],
        [np.arange(3, dtype=np.int32), np.arange(3, dtype=np.float32)],  # promoted as np.stack
        [np.float64(1.0), np.float64(2.0)],
        [np.array(1.5), np.array(2.5)],
        [np.array([np.nan, 1.0]), np.array([np.inf, 2.0])],
    ],
)
def test_stacking_gives_what_numpy_stack_gives(values):
    stacked = _stack(values)
    expected = np.stack(values)
    assert stacked.dtype == expected.dtype and stacked.shape == expected.shape
    assert np.array_equal(stacked, expected, equal_nan=True)


def test_arrays_of_different_shapes_do_not_stack_even_when_their_sizes_would_fit():
    with pytest.raises(ValueError):
        _stack([np.zeros(4), np.zeros((2, 2))])
