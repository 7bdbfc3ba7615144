"""The largest message a train worker sends the judge, bounded from the run's spaces, step cap
and limits. Policy code shares the train worker's process and can write to its channel, so the
judge refuses any frame over this bound before reading its body (``Channel.max_bytes``)
instead of the 1 GiB every channel accepts.

The largest legitimate message is the result of a recorded episode (``EpisodeDone``): per step
its observation (inline as lists, or a row of the stacked ``observations.npy``/``.npz``), the
action as the policy returned it, the reward, flags and info; once per episode its captured
output and its error's message and traceback. Load replies and ``WorkerUp`` hold only the
fixed parts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evopolicygym.protocol import LimitsSection
from evopolicygym.sandbox import DEFAULT_MAX_BYTES

# Bytes one element of an observation or action takes in any form the worker sends it: a
# MessagePack number takes at most 9 (a non-finite float is a 4-byte string), an element of a
# stacked array at most 8; the rest covers its share of the nested lists' headers.
ELEMENT_BYTES = 16
# An image element (uint8) takes 1 byte in an observation file (compressed or not: zlib adds
# a few bytes per 16 KiB, which the per-step allowance covers), and in the list form a
# MessagePack integer of at most 2 bytes and its share of the list headers (one per pixel).
IMAGE_FILE_ELEMENT_BYTES = 1
IMAGE_LIST_ELEMENT_BYTES = 3
# Spaces whose values the recorder stacks over the steps (a Dict: value by value).
_STACKABLE = frozenset({"Image", "Box", "Discrete", "MultiDiscrete", "MultiBinary", "Text"})
# A character of a Text space: 4 bytes in a NumPy unicode array, at most 4 in UTF-8.
CHAR_BYTES = 4
# Per step: the reward, the flags and the environment's info dict (the largest among the
# curated environments, HighwayEnv's and MuJoCo Humanoid's, take about 300 bytes), and the
# value of a space its schema does not size (MiniGrid's mission string).
STEP_EXTRA_BYTES = 16 * 2**10
# Per message: the error's message and traceback (a policy's exception text, not capped at
# the source), the other fields, the observation file's headers.
MESSAGE_EXTRA_BYTES = 16 * 2**20


def train_message_cap(
    obs_space: Mapping[str, Any],
    action_space: Mapping[str, Any],
    max_steps: int,
    limits: LimitsSection,
) -> int:
    """The largest frame a train worker may send for episodes of at most ``max_steps`` steps
    with these space schemas: every step at its largest, plus ``limits.output_bytes``
    characters of stdout and of stderr and :data:`MESSAGE_EXTRA_BYTES`. Never more than half
    the worker's memory limit (it holds a message and its framed copy at once, so it cannot
    send more) nor :data:`DEFAULT_MAX_BYTES`."""
    step = space_bytes(obs_space) + space_bytes(action_space) + STEP_EXTRA_BYTES
    output = 2 * CHAR_BYTES * limits.output_bytes
    bound = max_steps * step + output + MESSAGE_EXTRA_BYTES
    return min(bound, limits.memory_bytes // 2, DEFAULT_MAX_BYTES)


def space_bytes(schema: Mapping[str, Any]) -> int:
    """The most bytes one value of the space ``schema`` (``envs.spaces.space_schema``) takes
    in a recorded step; :data:`STEP_EXTRA_BYTES` for a space the schema does not size.

    The recorder stacks observations over the steps (each value of a Dict apart) into an
    observation file, where an image takes a byte per element. When a part cannot be stacked
    (a Tuple of parts of different shapes, or a space the schema does not describe), the whole
    observation stays in the list form, its images included."""
    listed = _may_stay_listed(schema)
    return _value_bytes(schema, IMAGE_LIST_ELEMENT_BYTES if listed else IMAGE_FILE_ELEMENT_BYTES)


def _value_bytes(schema: Mapping[str, Any], image_element_bytes: int) -> int:
    kind = schema.get("type")
    if kind == "Image":
        return math.prod(schema["shape"]) * image_element_bytes
    if kind == "Box":
        return math.prod(schema["shape"]) * ELEMENT_BYTES
    if kind == "Discrete":
        return ELEMENT_BYTES
    if kind == "MultiDiscrete":
        return _leaves(schema["nvec"]) * ELEMENT_BYTES
    if kind == "MultiBinary":
        n = schema["n"]
        return (n if isinstance(n, int) else math.prod(n)) * ELEMENT_BYTES
    if kind == "Text":
        return schema["max_length"] * CHAR_BYTES + ELEMENT_BYTES
    if kind == "Tuple":
        return sum(_value_bytes(part, image_element_bytes) for part in schema["spaces"])
    if kind == "Dict":
        return sum(
            len(key) * CHAR_BYTES + ELEMENT_BYTES + _value_bytes(part, image_element_bytes)
            for key, part in schema["spaces"].items()
        )
    return STEP_EXTRA_BYTES


def _may_stay_listed(schema: Mapping[str, Any]) -> bool:
    """Whether the recorder may fail to stack values of ``schema`` over the steps."""
    kind = schema.get("type")
    if kind == "Dict":
        return any(_may_stay_listed(part) for part in schema["spaces"].values())
    return kind not in _STACKABLE


def _leaves(values: Any) -> int:
    """How many numbers the nested lists ``values`` hold."""
    return sum(_leaves(part) for part in values) if isinstance(values, list) else 1
