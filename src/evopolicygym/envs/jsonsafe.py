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

__all__ = ["float_token", "to_jsonsafe"]


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


def to_jsonsafe(value: Any) -> Any:
    """The JSON-safe form of ``value``; never raises for ordinary objects (falls back to repr)."""
    if type(value) is np.ndarray:  # the per-step observation: checked first
        return _array(value)
    # bool before int: bool is an int subclass but must stay a bool.
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, float):
        return float_token(value)
    if isinstance(value, np.ndarray):
        return _array(value)
    if isinstance(value, np.generic):
        return to_jsonsafe(value.item())
    if isinstance(value, enum.Enum):
        return to_jsonsafe(value.value)
    if isinstance(value, Mapping):
        return {str(key): to_jsonsafe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonsafe(item) for item in value]
    if isinstance(value, (set, frozenset)):
        # Sorted so that the same set always serializes the same way.
        return sorted((to_jsonsafe(item) for item in value), key=repr)
    return repr(value)
