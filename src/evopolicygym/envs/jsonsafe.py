"""Conversion of environment values (numpy arrays, scalars, enums, nested containers) to
JSON-safe Python values.

Rules (reference §6.3): arrays become nested lists, numpy scalars become Python scalars,
non-finite floats become the strings ``"inf"``, ``"-inf"`` and ``"nan"``, mapping keys become
strings, tuples and sets become lists, enums become their values, and anything else becomes its
``repr``. The result always survives ``json.dumps(..., allow_nan=False)``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["float_token", "plain_action", "stack_arrays", "to_jsonsafe", "vector_converter"]


def float_token(value: float) -> float | str:
    """A float as JSON allows it: finite floats unchanged, others as ``"inf"``/``"-inf"``/``"nan"``."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def _array(value: np.ndarray) -> Any:
    kind = value.dtype.kind
    if kind in "biu":
        return value.tolist()
    if kind == "f":
        items = value.tolist()
        # Fast path for the common small all-finite vector: a Python sum is much cheaper than
        # np.isfinite on a few elements, and inf/nan anywhere make the sum non-finite. A sum
        # that overflows only sends finite values through the (correct) slow path.
        if value.ndim == 1 and value.size <= 256:
            if math.isfinite(sum(items)):
                return items
        elif np.isfinite(value).all():
            return items
        return _replace_nonfinite(items)
    return to_jsonsafe(value.tolist())


def _replace_nonfinite(items: Any) -> Any:
    if isinstance(items, list):
        return [_replace_nonfinite(item) for item in items]
    return float_token(items)


def _same(value: Any) -> Any:
    return value


def _mapping(value: Mapping, isfinite=math.isfinite) -> dict[str, Any]:
    result = {}
    for key, item in value.items():
        kind = type(item)
        # Inline for floats, what infos mostly hold (a MuJoCo step's info is four of them).
        if kind is float or kind is np.float64 or kind is np.float32:
            item = float(item)
            if not isfinite(item):
                item = float_token(item)
        else:
            item = to_jsonsafe(item)
        result[key if type(key) is str else str(key)] = item
    return result


def _sequence(value: list | tuple) -> list[Any]:
    return [to_jsonsafe(item) for item in value]


# Exact-type dispatch: one dict lookup for the values environments return every step (infos
# are usually dicts of Python or numpy scalars). Subclasses and rarer types take the slow path.
_BY_TYPE: dict[type, Any] = {
    type(None): _same,
    bool: _same,
    int: _same,
    str: _same,
    float: float_token,
    np.ndarray: _array,
    dict: _mapping,
    list: _sequence,
    tuple: _sequence,
    np.bool_: bool,
}
_BY_TYPE.update(
    {kind: lambda v: float_token(float(v)) for kind in (np.float16, np.float32, np.float64)}
)
_BY_TYPE.update(
    {
        kind: int
        for kind in (
            np.int8,
            np.int16,
            np.int32,
            np.int64,
            np.uint8,
            np.uint16,
            np.uint32,
            np.uint64,
        )
    }
)


def to_jsonsafe(value: Any) -> Any:
    """The JSON-safe form of ``value``; never raises for ordinary objects (falls back to repr)."""
    convert = _BY_TYPE.get(type(value))
    if convert is not None:
        return convert(value)
    if isinstance(value, enum.Enum):
        return to_jsonsafe(value.value)
    # bool before int: bool is an int subclass but must stay a bool.
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float_token(float(value))
    if isinstance(value, np.ndarray):
        return _array(value)
    if isinstance(value, np.generic):
        return to_jsonsafe(value.item())
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, (list, tuple)):
        return _sequence(value)
    if isinstance(value, (set, frozenset)):
        # Sorted so that the same set always serializes the same way.
        return sorted((to_jsonsafe(item) for item in value), key=repr)
    return repr(value)


_FLOATS = frozenset({float})


def plain_action(action: Any) -> Any:
    """An action a policy returned, as plain JSON-safe values: exact ints, and lists of finite
    exact floats (what policies of discrete and vector action spaces return), as they are,
    anything else through :func:`to_jsonsafe`. Anything else may run code of the object's own
    (``__float__``, ``tolist``, ``__repr__``, comparisons): call this where the policy's time
    limit binds, and expect whatever that code raises. Hidden evaluation gives the environment
    an action in this form, and so do train episodes (there a list of exact floats goes as it
    is even when one is not finite: the action's coercion treats NaN and ``"nan"`` alike)."""
    kind = type(action)
    if kind is int or (
        kind is list and _FLOATS.issuperset(map(type, action)) and math.isfinite(sum(action))
    ):
        return action
    return to_jsonsafe(action)


def vector_converter(dtype: np.dtype) -> Any:
    """A function equal to :func:`to_jsonsafe`, faster for what an environment with a short
    vector observation space of ``dtype`` (booleans, integers or floats) returns every step:
    one check of type and dtype, then the list and a sum that is finite exactly when every
    element is. Anything else (other arrays, NaN, infinities, nested lists) takes
    :func:`to_jsonsafe`."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf":
        return to_jsonsafe

    def convert(value: Any, ndarray=np.ndarray, tolist=np.ndarray.tolist, total=sum) -> Any:
        if type(value) is ndarray and value.dtype is dtype:
            items = tolist(value)
            try:
                if math.isfinite(total(items)):
                    return items
            except TypeError:  # more than one dimension: lists do not add up to a number
                pass
        return to_jsonsafe(value)

    return convert


def stack_arrays(values: list[Any]) -> np.ndarray | None:
    """``values`` stacked into one array when each is an ndarray of one shape (at least one
    dimension) and dtype whose JSON-safe form is its list form (booleans, integers, finite
    floats): row ``i`` of the stack's ``tolist()`` is then exactly ``to_jsonsafe(values[i])``.
    None otherwise."""
    if not values:
        return None
    first = values[0]
    if type(first) is not np.ndarray or first.ndim == 0 or first.dtype.kind not in "biuf":
        return None
    shape, dtype = first.shape, first.dtype
    for value in values:
        if type(value) is not np.ndarray or value.shape != shape:
            return None
        if value.dtype is not dtype and value.dtype != dtype:
            return None
    # concatenate + reshape: a quarter of np.stack's cost for many small arrays.
    stacked = np.concatenate(values).reshape((len(values), *shape))
    # A sum is NaN or infinite when any element is (or when it overflows: then checked fully).
    if dtype.kind == "f" and not (np.isfinite(stacked.sum()) or np.isfinite(stacked).all()):
        return None
    return stacked
