import json

import numpy as np
import pytest
from gymnasium import spaces

from evopolicygym.envs.jsonsafe import to_jsonsafe
from evopolicygym.envs.spaces import (
    action_coercer,
    conformance_problems,
    rows_coercer,
    schema_has_image,
    space_schema,
)

# --- schemas ------------------------------------------------------------------------------


def test_discrete_schema_with_start_and_labels():
    assert space_schema(spaces.Discrete(3)) == {"type": "Discrete", "n": 3}
    assert space_schema(spaces.Discrete(2, start=-1), labels=["down", "up"]) == {
        "type": "Discrete",
        "n": 2,
        "start": -1,
        "labels": ["down", "up"],
    }
    # Labels that do not name every action are dropped rather than misleading.
    assert "labels" not in space_schema(spaces.Discrete(3), labels=["a"])


def test_box_schema_full_bounds_with_nonfinite_strings():
    low = np.array([-1.0, -np.inf], dtype=np.float32)
    box = spaces.Box(low=low, high=-low, dtype=np.float32)
    assert space_schema(box) == {
        "type": "Box",
        "shape": [2],
        "dtype": "float32",
        "low": [-1.0, "-inf"],
        "high": [1.0, "inf"],
    }


def test_box_schema_summarizes_large_bounds():
    box = spaces.Box(low=-2.0, high=np.arange(33, dtype=np.float64), dtype=np.float64)
    schema = space_schema(box)
    assert schema["low"] == {"shape": [33], "min": -2.0, "max": -2.0}
    assert schema["high"] == {"shape": [33], "min": 0.0, "max": 32.0}


def test_uint8_image_schema():
    image = spaces.Box(0, 255, shape=(96, 96, 3), dtype=np.uint8)
    assert space_schema(image) == {
        "type": "Image",
        "shape": [96, 96, 3],
        "dtype": "uint8",
        "layout": "height_width_channels",
        "value_range": [0, 255],
        "storage": "external",
    }
    # A uint8 vector is not an image.
    assert space_schema(spaces.Box(0, 255, shape=(4,), dtype=np.uint8))["type"] == "Box"


def test_composite_schemas_and_fallback():
    space = spaces.Dict(
        {
            "pos": spaces.Tuple((spaces.Discrete(4), spaces.MultiBinary(3))),
            "grid": spaces.Box(0, 255, shape=(7, 7, 3), dtype=np.uint8),
            "keys": spaces.MultiDiscrete([2, 5], start=[1, 0]),
            "text": spaces.Text(max_length=8),
            "seq": spaces.Sequence(spaces.Discrete(2)),
        }
    )
    schema = space_schema(space)
    assert schema["spaces"]["pos"] == {
        "type": "Tuple",
        "spaces": [{"type": "Discrete", "n": 4}, {"type": "MultiBinary", "n": 3}],
    }
    assert schema["spaces"]["keys"] == {
        "type": "MultiDiscrete",
        "nvec": [2, 5],
        "dtype": "int64",
        "start": [1, 0],
    }
    assert schema["spaces"]["text"] == {"type": "Text", "min_length": 1, "max_length": 8}
    assert schema["spaces"]["seq"]["type"] == "Sequence"
    assert "repr" in schema["spaces"]["seq"]
    assert schema_has_image(schema)
    assert not schema_has_image(space_schema(spaces.Discrete(2)))
    json.dumps(schema, allow_nan=False)


# --- coercion -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected", "invalid"),
    [
        (1, 1, False),
        (np.int64(2), 2, False),
        (2.0, 2, False),
        (7, 2, True),
        (-3, 0, True),
        (1.5, 1, True),
        ([1], 1, True),
        ("left", 0, True),
        (None, 0, True),
        (float("nan"), 0, True),
        (True, 0, True),
    ],
)
def test_discrete_coercion(action, expected, invalid):
    value, changed = action_coercer(spaces.Discrete(3))(action)
    assert (value, changed) == (expected, invalid)
    # The space's own members, as sample() gives them (Gymnasium checks those faster).
    assert type(value) is np.int64


def test_discrete_coercion_gives_members_of_the_space_dtype_beyond_the_lookup_table():
    small = spaces.Discrete(3, dtype=np.int32)
    assert type(action_coercer(small)(2)[0]) is np.int32
    large = spaces.Discrete(10_000, start=-5)
    coerce = action_coercer(large)
    assert [coerce(v) for v in (-5, 9_994, 20_000)] == [(-5, False), (9_994, False), (9_994, True)]
    assert all(type(coerce(v)[0]) is np.int64 for v in (-5, 9_994, 20_000, "x"))


def test_discrete_with_start_clamps_into_its_range():
    coerce = action_coercer(spaces.Discrete(3, start=5))
    assert coerce(6) == (6, False)
    assert coerce(0) == (5, True)
    assert coerce(99) == (7, True)


def test_box_coercion_casts_clips_broadcasts_and_fills():
    box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    coerce = action_coercer(box)
    value, changed = coerce([0.5, -0.25])
    assert value.dtype == np.float32 and value.tolist() == [0.5, -0.25] and not changed
    value, changed = coerce([3.0, -0.5])
    assert value.tolist() == [1.0, -0.5] and changed
    value, changed = coerce(0.5)
    assert value.tolist() == [0.5, 0.5] and changed
    value, changed = coerce([1, 2, 3])
    assert value.tolist() == [0.0, 0.0] and changed
    value, changed = coerce("fast")
    assert value.tolist() == [0.0, 0.0] and changed
    value, changed = coerce([float("nan"), 0.1])
    assert value.tolist() == [0.0, pytest.approx(0.1)] and changed
    assert box.contains(value)


def test_box_zero_fill_respects_bounds_that_exclude_zero():
    coerce = action_coercer(spaces.Box(0.5, 1.0, shape=(1,), dtype=np.float32))
    value, changed = coerce(None)
    assert value.tolist() == [0.5] and changed


def test_integer_box_flags_fractions():
    coerce = action_coercer(spaces.Box(0, 10, shape=(2,), dtype=np.int64))
    assert coerce([1, 2])[1] is False
    value, changed = coerce([1.5, 2])
    assert value.tolist() == [1, 2] and changed


def test_multidiscrete_and_multibinary_coercion():
    md = spaces.MultiDiscrete([3, 2], start=[1, 0])
    value, changed = action_coercer(md)([2, 1])
    assert value.tolist() == [2, 1] and not changed
    value, changed = action_coercer(md)([9, -1])
    assert value.tolist() == [3, 0] and changed and md.contains(value)
    mb = spaces.MultiBinary(3)
    value, changed = action_coercer(mb)([1, 0, 1])
    assert value.tolist() == [1, 0, 1] and not changed
    value, changed = action_coercer(mb)([0.7, -2, 0])
    assert value.tolist() == [1, 0, 0] and changed and mb.contains(value)


def test_tuple_and_dict_coercion_fill_missing_parts():
    space = spaces.Dict({"move": spaces.Discrete(4), "force": spaces.Box(-1, 1, (1,))})
    coerce = action_coercer(space)
    value, changed = coerce({"move": 2, "force": [0.5]})
    assert value["move"] == 2 and not changed and space.contains(value)
    value, changed = coerce({"move": 2})
    assert changed and space.contains(value)
    value, changed = coerce({"move": 2, "force": [0.5], "extra": 1})
    assert changed
    value, changed = coerce(3)
    assert changed and space.contains(value)
    pair = spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3)))
    value, changed = action_coercer(pair)([1, 2])
    assert value == (1, 2) and not changed
    value, changed = action_coercer(pair)([1])
    assert value == (1, 0) and changed and pair.contains(value)


def test_text_coercion():
    space = spaces.Text(min_length=2, max_length=4, charset="abc")
    coerce = action_coercer(space)
    assert coerce("abca") == ("abca", False)
    value, changed = coerce("abxcab")
    assert value == "abca" and changed and space.contains(value)
    value, changed = coerce("")
    assert len(value) == 2 and changed and space.contains(value)


@pytest.mark.parametrize(
    "space",
    [
        spaces.Discrete(5, start=2),
        spaces.Box(-2, 3, shape=(2, 3), dtype=np.float64),
        spaces.MultiDiscrete([4, 4]),
        spaces.MultiBinary(4),
        spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Tuple((spaces.Box(0, 1, (2,)),))}),
    ],
)
def test_jsonsafe_samples_come_back_unchanged(space):
    # What a policy most often returns: a JSON-safe copy of a valid action.
    space.seed(0)
    coerce = action_coercer(space)
    for _ in range(20):
        value, changed = coerce(to_jsonsafe(space.sample()))
        assert not changed
        assert space.contains(value)


# --- conformance --------------------------------------------------------------------------


def test_conformance_of_observations():
    space = spaces.Dict(
        {"img": spaces.Box(0, 255, (2, 2, 3), np.uint8), "d": spaces.Discrete(3, start=1)}
    )
    schema = space_schema(space)
    space.seed(1)
    assert conformance_problems(schema, to_jsonsafe(space.sample())) == []
    problems = conformance_problems(schema, {"img": [[1, 2]], "d": 0})
    assert any("$.img" in p and "shape" in p for p in problems)
    assert any("$.d" in p for p in problems)
    assert conformance_problems(schema, {"d": 1}) != []
    box = space_schema(spaces.Box(-np.inf, np.inf, (2,)))
    assert conformance_problems(box, [1.0, "nan"]) == []
    assert conformance_problems(box, [1.0, "x"]) != []


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32),
        spaces.Box(np.array([-2.0, 0.0, -np.inf]), np.array([2.0, 0.5, np.inf]), dtype=np.float64),
        spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float16),
    ],
)
def test_a_round_of_rows_is_coerced_exactly_as_each_list_alone(space):
    single = action_coercer(space)
    coerce_rows = rows_coercer(space)
    draw = np.random.default_rng(0)
    values = draw.normal(0.0, 1.5, size=(64, 3))
    values[3, 1], values[7, 2], values[9, 0] = np.nan, np.inf, -np.inf
    for rows in (values, values[:, :2], np.clip(values[:5], -0.25, 0.25)):
        for ours, row in zip(coerce_rows(rows), rows.tolist(), strict=True):
            theirs, _changed = single(row)
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            assert np.array_equal(ours, theirs, equal_nan=True)


def test_rows_are_coerced_together_only_for_one_dimensional_float_boxes():
    assert rows_coercer(spaces.Discrete(3)) is None
    assert rows_coercer(spaces.Box(0, 5, shape=(2,), dtype=np.int64)) is None
    assert rows_coercer(spaces.Box(-1.0, 1.0, shape=(2, 2))) is None
