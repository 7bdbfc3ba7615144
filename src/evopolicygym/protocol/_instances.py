"""Parsing of ``env_instances``: an int list or a range string such as ``"0-3,7"``."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"^(\d+)(?:-(\d+))?$")
MAX_EXPANDED = 1_000_000


class InstanceSpecError(ValueError):
    """``env_instances`` is not a list of non-negative ints nor a valid range string."""


def parse_env_instances(value: object) -> list[int]:
    """Expand ``value`` into the list of case ids, keeping order and duplicates.

    A list must hold non-negative ints (bools are refused). A string is split on commas; each
    token is ``N`` or ``LO-HI`` with ``HI >= LO`` (inclusive). Raises :class:`InstanceSpecError`
    with a message that says what is wrong; an expansion past ``MAX_EXPANDED`` ids is refused so
    that a hostile string cannot exhaust memory.
    """
    if isinstance(value, list):
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                raise InstanceSpecError(
                    f"env_instances list items must be non-negative integers, got {item!r}"
                )
        return list(value)
    if not isinstance(value, str):
        raise InstanceSpecError(
            f"env_instances must be a list of ints or a string like '0-3,7', got {type(value).__name__}"
        )
    if not value.strip():
        raise InstanceSpecError("env_instances string is empty")
    ids: list[int] = []
    for raw in value.split(","):
        token = raw.strip()
        match = _TOKEN.match(token)
        if not match:
            raise InstanceSpecError(f"bad env_instances token {token!r}: use N or LO-HI")
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo
        if hi < lo:
            raise InstanceSpecError(f"bad range {token!r}: end is below start")
        if len(ids) + (hi - lo + 1) > MAX_EXPANDED:
            raise InstanceSpecError(f"env_instances expands to more than {MAX_EXPANDED} ids")
        ids.extend(range(lo, hi + 1))
    return ids
