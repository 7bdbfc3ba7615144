"""Parsing of ``env_instances``: an int list or a range string such as ``"0-3,7"``.

Ids are written with ASCII digits only (at most ``MAX_ID_DIGITS``): ``"\\u0663"`` (an
Arabic-Indic three) or ``"1_000"`` are refused, although Python's ``int()`` would read them.
Counting never expands a range, so a hostile ``"0-999999999"`` costs a few operations.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"([0-9]+)(?:-([0-9]+))?", re.ASCII)
MAX_EXPANDED = 1_000_000
MAX_ID_DIGITS = 10
MAX_ID = 10**MAX_ID_DIGITS - 1
# Only these surround a token; str.strip() would also drop Unicode spaces.
_SPACES = " \t"


class InstanceSpecError(ValueError):
    """``env_instances`` is not a list of non-negative ints nor a valid range string."""


class TooManyInstances(InstanceSpecError):
    """``env_instances`` is well formed but names more than the caller's ``limit`` ids.

    ``count`` is the number of ids it names (computed without expanding them)."""

    def __init__(self, count: int, limit: int):
        super().__init__(f"env_instances names {count} ids; at most {limit} are allowed")
        self.count = count
        self.limit = limit


def _tokens(value: str) -> list[tuple[int, int]]:
    if not value.strip(_SPACES):
        raise InstanceSpecError("env_instances string is empty")
    ranges: list[tuple[int, int]] = []
    for raw in value.split(","):
        token = raw.strip(_SPACES)
        match = _TOKEN.fullmatch(token)
        if not match:
            raise InstanceSpecError(
                f"bad env_instances token {token[:40]!r}: use N or LO-HI with ASCII digits 0-9"
            )
        if any(len(group) > MAX_ID_DIGITS for group in match.groups() if group):
            raise InstanceSpecError(
                f"bad env_instances token {token[:40]!r}: ids have at most {MAX_ID_DIGITS} digits"
            )
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo
        if hi < lo:
            raise InstanceSpecError(f"bad range {token!r}: end is below start")
        ranges.append((lo, hi))
    return ranges


def count_env_instances(value: object) -> int:
    """Check ``value``'s form and return how many ids it names, without expanding ranges.

    A list must hold non-negative ints of at most ``MAX_ID_DIGITS`` digits (bools are refused).
    A string is split on commas; each token is ``N`` or ``LO-HI`` with ``HI >= LO`` (inclusive),
    ASCII digits only, optionally surrounded by spaces or tabs. Raises
    :class:`InstanceSpecError` with a message that says what is wrong.
    """
    if isinstance(value, list):
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= MAX_ID:
                shown = (
                    "a negative integer"
                    if isinstance(item, int) and item < 0
                    else f"an integer over {MAX_ID}"
                    if isinstance(item, int) and not isinstance(item, bool)
                    else repr(item)[:40]
                )
                raise InstanceSpecError(
                    "env_instances list items must be non-negative integers of at most "
                    f"{MAX_ID_DIGITS} digits, got {shown}"
                )
        return len(value)
    if not isinstance(value, str):
        raise InstanceSpecError(
            f"env_instances must be a list of ints or a string like '0-3,7', got {type(value).__name__}"
        )
    return sum(hi - lo + 1 for lo, hi in _tokens(value))


def parse_env_instances(value: object, *, limit: int = MAX_EXPANDED) -> list[int]:
    """Expand ``value`` into the list of case ids, keeping order and duplicates.

    The form is checked as in :func:`count_env_instances`. When ``value`` names more than
    ``limit`` ids, :class:`TooManyInstances` is raised before anything is expanded, so the
    work and memory of a call are bounded by ``limit`` whatever the request.
    """
    count = count_env_instances(value)
    if count > limit:
        raise TooManyInstances(count, limit)
    if isinstance(value, list):
        return list(value)
    ids: list[int] = []
    for lo, hi in _tokens(str(value)):
        ids.extend(range(lo, hi + 1))
    return ids
