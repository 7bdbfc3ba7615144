"""Gymnasium spaces: compact JSON schemas (reference §2.4), action coercion (§6.4) and a
conformance check of JSON-safe values against a schema.

Coercion functions are built once per space by :func:`action_coercer` and then called every
step, so the common cases (an in-range ``int`` for ``Discrete``, a correctly shaped array for
``Box``) take a short path.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from .jsonsafe import to_jsonsafe

__all__ = [
    "FULL_BOUNDS_LIMIT",
    "Coercer",
    "action_coercer",
    "conformance_problems",
    "rows_coercer",
    "schema_has_image",
    "space_schema",
]

# Box bounds with at most this many elements are listed in full; larger ones are summarized.
FULL_BOUNDS_LIMIT = 32

# A coercer maps a policy's action to (a value the space contains, whether it had to change it).
Coercer = Callable[[Any], tuple[Any, bool]]
# A rows coercer maps many actions at once, given as the rows of a float64 array, to values the
# space contains.
RowsCoercer = Callable[[np.ndarray], list[Any]]


# ---------------------------------------------------------------------------------------------
# Schemas


def _bounds(values: np.ndarray) -> Any:
    if values.size <= FULL_BOUNDS_LIMIT:
        return to_jsonsafe(values)
    return {
        "shape": list(values.shape),
        "min": to_jsonsafe(values.min()),
        "max": to_jsonsafe(values.max()),
    }


def _is_image(space: spaces.Box) -> bool:
    return (
        space.dtype == np.uint8
        and len(space.shape) in (2, 3)
        and bool(np.all(space.low >= 0))
        and bool(np.all(space.high <= 255))
    )


def space_schema(space: spaces.Space, *, labels: Sequence[str] | None = None) -> dict[str, Any]:
    """The compact JSON schema of ``space``. ``labels`` names the actions of a ``Discrete``
    space (ignored unless there is exactly one per action). Unknown space classes give
    ``{"type": <class name>, "repr": <repr>}``."""
    if isinstance(space, spaces.Discrete):
        schema: dict[str, Any] = {"type": "Discrete", "n": int(space.n)}
        if int(space.start) != 0:
            schema["start"] = int(space.start)
        if labels is not None and len(labels) == int(space.n):
            schema["labels"] = [str(label) for label in labels]
        return schema
    if isinstance(space, spaces.Box):
        if _is_image(space):
            return {
                "type": "Image",
                "shape": list(space.shape),
                "dtype": "uint8",
                "layout": "height_width_channels" if len(space.shape) == 3 else "height_width",
                "value_range": [0, 255],
                "storage": "external",
            }
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": _bounds(space.low),
            "high": _bounds(space.high),
        }
    if isinstance(space, spaces.MultiDiscrete):
        schema = {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "dtype": str(space.dtype)}
        if np.any(space.start != 0):
            schema["start"] = space.start.tolist()
        return schema
    if isinstance(space, spaces.MultiBinary):
        n = space.n
        return {
            "type": "MultiBinary",
            "n": int(n) if np.ndim(n) == 0 else list(np.asarray(n).tolist()),
        }
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_schema(sub) for sub in space.spaces]}
    if isinstance(space, spaces.Dict):
        return {
            "type": "Dict",
            "spaces": {str(key): space_schema(sub) for key, sub in space.spaces.items()},
        }
    if isinstance(space, spaces.Text):
        return {"type": "Text", "min_length": space.min_length, "max_length": space.max_length}
    return {"type": type(space).__name__, "repr": repr(space)}


def schema_has_image(schema: Mapping[str, Any]) -> bool:
    """Whether an ``Image`` (or anything declaring external storage) occurs anywhere in ``schema``."""
    if schema.get("type") == "Image" or schema.get("storage") == "external":
        return True
    children = schema.get("spaces")
    if isinstance(children, Mapping):
        children = list(children.values())
    return any(schema_has_image(child) for child in children or ())


# ---------------------------------------------------------------------------------------------
# Coercion


def _scalar(value: Any) -> Any:
    """A Python scalar from ``value``; one-element sequences and arrays are unwrapped."""
    if isinstance(value, np.ndarray | list | tuple):
        array = np.asarray(value)
        if array.size != 1:
            raise ValueError(f"expected one number, got {array.size}")
        return array.reshape(()).item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _discrete(space: spaces.Discrete) -> Coercer:
    low = int(space.start)
    high = low + int(space.n) - 1
    # The space's own members (NumPy integers of its dtype, what ``sample()`` gives) rather than
    # Python ints: Gymnasium's ``Discrete.contains``, which many environments assert every step,
    # takes a third less time on them. Built once for the usual small spaces.
    member = space.dtype.type
    members = [member(value) for value in range(low, high + 1)] if space.n <= 4096 else None

    def coerce(value: Any) -> tuple[Any, bool]:
        if type(value) is int and low <= value <= high:
            return (members[value - low] if members is not None else member(value)), False
        try:
            raw = _scalar(value)
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                raise TypeError(type(raw).__name__)
            if not math.isfinite(raw):
                raise ValueError(raw)
            chosen = int(raw)
        except (TypeError, ValueError, OverflowError):
            return member(low), True
        clamped = min(max(chosen, low), high)
        return member(clamped), clamped != raw or isinstance(value, list | tuple | np.ndarray)

    return coerce


def _array_coercer(
    shape: tuple[int, ...], dtype: np.dtype, low: np.ndarray, high: np.ndarray
) -> Coercer:
    """Cast, broadcast (or zero-fill) and clip to ``[low, high]``; shared by Box and
    MultiDiscrete (whose ``high`` is ``start + nvec - 1``)."""
    integer = np.issubdtype(dtype, np.integer)
    fallback = np.clip(np.zeros(shape, dtype=dtype), low, high).astype(dtype)
    # Fast path for the usual action, a short in-range list of floats: plain Python
    # comparisons cost less than numpy calls on a few elements (NaN fails them).
    flat = len(shape) == 1 and not integer
    lows, highs = (low.tolist(), high.tolist()) if flat else ([], [])
    size = len(lows)

    def coerce(value: Any) -> tuple[Any, bool]:
        if flat and type(value) is list and len(value) == size:
            try:  # all in C: NaN and non-numbers fail the comparisons
                if all(map(operator.le, lows, value)) and all(map(operator.le, value, highs)):
                    return np.array(value, dtype=dtype), False
            except TypeError:
                pass
        changed = False
        try:
            given = np.asarray(value, dtype=np.float64 if integer else dtype)
        except (TypeError, ValueError, OverflowError):
            return fallback.copy(), True
        if not integer and given.shape == shape and (given >= low).all() and (given <= high).all():
            return given, False
        if given.shape != shape:
            try:
                given = np.broadcast_to(given, shape)
            except ValueError:
                return fallback.copy(), True
            changed = True
        if given.dtype.kind == "f" and not np.isfinite(given).all():
            given = np.where(np.isfinite(given), given, fallback)
            changed = True
        clipped = np.clip(given, low, high)
        if integer:
            rounded = np.trunc(clipped)
            changed = changed or bool(np.any(rounded != given))
            return rounded.astype(dtype), changed
        if not changed and not np.array_equal(clipped, given):
            changed = True
        return clipped.astype(dtype, copy=False), changed

    return coerce


def _multibinary(space: spaces.MultiBinary) -> Coercer:
    shape = space.shape

    def coerce(value: Any) -> tuple[Any, bool]:
        try:
            given = np.asarray(value, dtype=np.float64)
            reshaped = given.shape != shape
            if reshaped:
                given = np.broadcast_to(given, shape)
        except (TypeError, ValueError):
            return np.zeros(shape, dtype=space.dtype), True
        binary = (np.nan_to_num(given) > 0).astype(space.dtype)
        return binary, reshaped or bool(np.any(binary != given))

    return coerce


def _tuple(space: spaces.Tuple) -> Coercer:
    parts = [action_coercer(sub) for sub in space.spaces]
    defaults = [_default(sub) for sub in space.spaces]

    def coerce(value: Any) -> tuple[Any, bool]:
        if isinstance(value, np.ndarray):
            value = list(value)
        if not isinstance(value, list | tuple):
            return tuple(defaults), True
        changed = len(value) != len(parts)
        out = []
        for index, part in enumerate(parts):
            if index < len(value):
                item, item_changed = part(value[index])
            else:
                item, item_changed = defaults[index], True
            out.append(item)
            changed = changed or item_changed
        return tuple(out), changed

    return coerce


def _dict(space: spaces.Dict) -> Coercer:
    parts = {key: action_coercer(sub) for key, sub in space.spaces.items()}
    defaults = {key: _default(sub) for key, sub in space.spaces.items()}

    def coerce(value: Any) -> tuple[Any, bool]:
        if not isinstance(value, Mapping):
            return dict(defaults), True
        changed = any(key not in parts for key in value)
        out = {}
        for key, part in parts.items():
            if key in value:
                out[key], item_changed = part(value[key])
            else:
                out[key], item_changed = defaults[key], True
            changed = changed or item_changed
        return out, changed

    return coerce


def _text(space: spaces.Text) -> Coercer:
    allowed = set(space.character_set)
    pad = space.characters[0] if space.characters else " "

    def coerce(value: Any) -> tuple[Any, bool]:
        text = value if isinstance(value, str) else str(value)
        fixed = "".join(char for char in text if char in allowed)[: space.max_length]
        fixed = fixed.ljust(space.min_length, pad)
        return fixed, fixed != value

    return coerce


def _default(space: spaces.Space) -> Any:
    """The value a missing part of a composite action takes."""
    value, _ = action_coercer(space)(None)
    return value


def action_coercer(space: spaces.Space) -> Coercer:
    """A function mapping any policy action to a member of ``space`` (§6.4) and telling whether
    it had to change it. Unknown space classes pass actions through unchanged."""
    if isinstance(space, spaces.Discrete):
        return _discrete(space)
    if isinstance(space, spaces.Box):
        return _array_coercer(space.shape, space.dtype, space.low, space.high)
    if isinstance(space, spaces.MultiDiscrete):
        high = space.start + space.nvec - 1
        return _array_coercer(space.shape, space.dtype, space.start, high)
    if isinstance(space, spaces.MultiBinary):
        return _multibinary(space)
    if isinstance(space, spaces.Tuple):
        return _tuple(space)
    if isinstance(space, spaces.Dict):
        return _dict(space)
    if isinstance(space, spaces.Text):
        return _text(space)
    return lambda value: (value, False)


def rows_coercer(space: spaces.Space) -> RowsCoercer | None:
    """For a one-dimensional float Box (None for any other space): a function coercing a
    round of actions at once, given as the rows of a float64 array (the lists of floats the
    policies returned). Row ``i`` comes out exactly as :func:`action_coercer` makes row ``i``'s
    list (without saying whether that changed it): rows within bounds are cast together (each
    a view of one array), the others take the one-action path."""
    if not (isinstance(space, spaces.Box) and len(space.shape) == 1 and space.dtype.kind == "f"):
        return None
    single = action_coercer(space)
    dtype, width = space.dtype, space.shape[0]
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)

    def coerce_rows(values: np.ndarray) -> list[Any]:
        if values.ndim != 2 or values.shape[1] != width:
            return [single(row)[0] for row in values.tolist()]
        inside = ((values >= low) & (values <= high)).all(axis=1)  # NaN is outside
        cast = values.astype(dtype)
        if inside.all():
            return list(cast)
        rows = values.tolist()
        return [
            cast[number] if ok else single(rows[number])[0]
            for number, ok in enumerate(inside.tolist())
        ]

    return coerce_rows


# ---------------------------------------------------------------------------------------------
# Conformance of JSON-safe values


def _shape_of(value: Any) -> tuple[int, ...] | None:
    """The shape of a nested list of numbers, or None if it is ragged or not numeric."""
    if isinstance(value, list):
        shapes = {_shape_of(item) for item in value}
        if len(shapes) > 1 or None in shapes:
            return None
        inner = shapes.pop() if shapes else ()
        return (len(value), *inner)
    if isinstance(value, bool | int | float) or value in ("inf", "-inf", "nan"):
        return ()
    return None


def conformance_problems(schema: Mapping[str, Any], value: Any, path: str = "$") -> list[str]:
    """Ways in which the JSON-safe ``value`` does not match ``schema`` (empty when it does).
    Checks types and shapes, and ranges only where they are exact (Discrete, MultiBinary)."""
    kind = schema.get("type")
    if kind == "Discrete":
        start = schema.get("start", 0)
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{path}: expected an integer, got {type(value).__name__}"]
        if not start <= value < start + schema["n"]:
            return [f"{path}: {value} outside [{start}, {start + schema['n'] - 1}]"]
        return []
    if kind in ("Box", "Image", "MultiDiscrete", "MultiBinary"):
        if kind == "MultiDiscrete":
            expected = tuple(np.shape(schema["nvec"]))
        elif kind == "MultiBinary":
            n = schema["n"]
            expected = (n,) if isinstance(n, int) else tuple(n)
        else:
            expected = tuple(schema["shape"])
        shape = _shape_of(value)
        if shape != expected:
            return [f"{path}: expected shape {list(expected)}, got {value!r:.80}"]
        return []
    if kind == "Tuple":
        subs = schema["spaces"]
        if not isinstance(value, list) or len(value) != len(subs):
            return [f"{path}: expected a list of {len(subs)} items"]
        return [
            p for i, s in enumerate(subs) for p in conformance_problems(s, value[i], f"{path}[{i}]")
        ]
    if kind == "Dict":
        subs = schema["spaces"]
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        missing = sorted(set(subs) - set(value))
        problems = [f"{path}: missing key {key!r}" for key in missing]
        for key, sub in subs.items():
            if key in value:
                problems += conformance_problems(sub, value[key], f"{path}.{key}")
        return problems
    if kind == "Text":
        if not isinstance(value, str):
            return [f"{path}: expected a string"]
        return []
    return []
