"""The policy side of hidden evaluation: how a round's actions are packed for the worker."""

import numpy as np
import pytest

from evopolicygym.rollout._sealed import FLOAT64, float_rows


def test_lists_of_floats_of_one_length_become_one_float64_block():
    block = float_rows([[0.5, -1.0], [2.0, float("nan")], [1e300, 0.0]])
    assert block is not None and block.dtype == FLOAT64 and block.shape == [3, 2]
    rows = np.frombuffer(block.data, dtype=block.dtype).reshape(block.shape)
    assert rows[0].tolist() == [0.5, -1.0] and np.isnan(rows[1, 1]) and rows[2, 0] == 1e300


@pytest.mark.parametrize(
    "actions",
    [
        [[0.5], [1]],  # an int
        [[0.5], [True]],
        [[0.5], [np.float64(0.5)]],  # a float subclass
        [[0.5, 0.1], [0.2]],  # ragged
        [[], []],
        [[0.5], (0.5,)],  # a tuple
        [[0.5], np.array([0.5])],
        [[0.5], None],
        [2, 1],
    ],
)
def test_anything_else_keeps_the_list_form(actions):
    assert float_rows(actions) is None
