import enum
import json
import math

import numpy as np
import pytest

from evopolicygym.envs.jsonsafe import float_token, stack_arrays, to_jsonsafe, vector_converter


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.array([1.5, 2.0], dtype=np.float32), [1.5, 2.0]),
        (np.array([[1, 2], [3, 4]], dtype=np.uint8), [[1, 2], [3, 4]]),
        (np.array([True, False]), [True, False]),
        (np.float32(0.5), 0.5),
        (np.int64(7), 7),
        (np.bool_(True), True),
        (np.array([1.0, np.inf, -np.inf, np.nan]), [1.0, "inf", "-inf", "nan"]),
        (np.array([[np.nan, 1.0]]), [["nan", 1.0]]),
        (np.full(300, np.inf)[:2], ["inf", "inf"]),
        (float("inf"), "inf"),
        ((1, (2, 3)), [1, [2, 3]]),
        ({1: np.float64(2.0), "a": None}, {"1": 2.0, "a": None}),
        (Colour.RED, "red"),
        (Level.HIGH, 3),
        ({3, 1, 2}, [1, 2, 3]),
    ],
)
def test_converts_to_json_values(value, expected):
    assert to_jsonsafe(value) == expected


def test_large_float_array_with_nonfinite_uses_numpy_check():
    value = np.zeros((20, 20))
    value[7, 3] = np.nan
    out = to_jsonsafe(value)
    assert out[7][3] == "nan"
    assert out[0][0] == 0.0


def test_sum_overflow_of_finite_values_stays_numeric():
    value = np.array([3e38, 3e38], dtype=np.float32)
    assert to_jsonsafe(value) == [pytest.approx(3e38, rel=1e-6)] * 2


def test_unknown_objects_become_repr_and_result_is_strict_json():
    class Thing:
        def __repr__(self):
            return "Thing()"

    out = to_jsonsafe({"x": Thing(), "y": np.array([np.nan])})
    assert out == {"x": "Thing()", "y": ["nan"]}
    json.dumps(out, allow_nan=False)


def test_float_token():
    assert float_token(1.25) == 1.25
    assert float_token(math.inf) == "inf"
    assert float_token(-math.inf) == "-inf"
    assert float_token(math.nan) == "nan"


def test_numpy_scalars_become_plain_python_types():
    from collections import OrderedDict

    out = to_jsonsafe(OrderedDict(a=np.float64(1.5), b=np.uint8(3), c=np.bool_(False)))
    assert out == {"a": 1.5, "b": 3, "c": False}
    assert [type(v) for v in out.values()] == [float, int, bool]
    assert to_jsonsafe(np.float32(np.inf)) == "inf"


@pytest.mark.parametrize(
    "values",
    [
        [
            np.array([0.1, -2.5, 3e-8], dtype=np.float32),
            np.array([1.0, 2.0, 3.0], dtype=np.float32),
        ],
        [np.arange(6, dtype=np.int64).reshape(2, 3), np.ones((2, 3), dtype=np.int64)],
        [np.array([True, False]), np.array([False, False])],
        [np.zeros((4, 4, 3), dtype=np.uint8)],
        [np.array([1.7e308, 1.7e308]), np.array([0.5, 1.0])],  # finite, though the sum is not
    ],
    ids=["float32", "int64 2-d", "bool", "image", "huge"],
)
def test_a_stack_of_arrays_gives_each_row_exactly_its_json_safe_form(values):
    stacked = stack_arrays(values)
    assert stacked is not None
    # As JSON, so that True, 1 and 1.0 differ.
    assert json.dumps(stacked.tolist()) == json.dumps([to_jsonsafe(value) for value in values])


@pytest.mark.parametrize(
    "values",
    [
        [np.array([1.0, np.nan]), np.array([1.0, 2.0])],  # NaN becomes "nan" one by one
        [np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0])],  # shapes differ
        [np.array([1.0, 2.0]), np.array([1, 2])],  # dtypes differ
        [np.array([1.0, 2.0]), [1.0, 2.0]],  # not an array
        [np.array(["a", "b"])],  # strings
        [],
    ],
    ids=["nan", "shapes", "dtypes", "list", "strings", "empty"],
)
def test_arrays_that_do_not_stack_as_their_list_forms_are_refused(values):
    assert stack_arrays(values) is None


VECTORS = [
    np.array([0.5, -2.0, 3.0], np.float32),
    np.array([0.5, -2.0, 3.0]),
    np.array([1.0, np.nan, 2.0], np.float32),
    np.array([np.inf, -np.inf]),
    np.array([[1.0, 2.0], [3.0, np.nan]]),
    np.array([1e308, 1e308]),  # finite, though their sum overflows
    np.zeros(0, np.float32),
    np.array([3, 255], np.uint8),
    np.array([-5, 7]),
    np.array([True, False]),
    [1.0, float("nan")],
    np.float32(2.5),
    None,
]


@pytest.mark.parametrize("value", VECTORS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.int64, np.bool_])
def test_a_vector_converter_gives_exactly_what_to_jsonsafe_gives(dtype, value):
    convert = vector_converter(np.dtype(dtype))
    expected = json.dumps(to_jsonsafe(value), allow_nan=False)
    assert json.dumps(convert(value), allow_nan=False) == expected


def test_a_vector_converter_for_other_dtypes_is_to_jsonsafe():
    assert vector_converter(np.dtype(object)) is to_jsonsafe


def test_mappings_convert_every_kind_of_float_and_key():
    info = {
        "x": np.float64(1.5),
        "y": np.float32(-0.1),
        "z": float("nan"),
        "w": np.float64(-np.inf),
        7: np.int64(3),
        "nested": {"v": np.float32(np.inf)},
    }
    assert to_jsonsafe(info) == {
        "x": 1.5,
        "y": float(np.float32(-0.1)),
        "z": "nan",
        "w": "-inf",
        "7": 3,
        "nested": {"v": "inf"},
    }
    assert all(type(v) is not np.float64 for v in to_jsonsafe(info).values())
