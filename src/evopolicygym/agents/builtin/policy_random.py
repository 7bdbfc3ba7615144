"""Uniform random policy, written by EvoPolicyGym's builtin:random agent.

Samples every action uniformly from the action-space schema given to ``Policy``: Discrete,
Box (bounds as lists, scalars or a ``{"min", "max"}`` summary; infinite bounds fall back to a
standard normal), MultiDiscrete, MultiBinary, Text, and Tuple/Dict of those. The generator is
re-seeded at every ``reset`` from the submit index and the episode index, so a checkpoint
replays the same action sequence. Standard library only.
"""

import math
import random

TEXT_ALPHABET = "abcdefghijklmnopqrstuvwxyz "


def _number(value):
    return float(value)  # "inf", "-inf" and "nan" arrive as strings


def _size(shape):
    return math.prod(int(d) for d in shape)


def _flat(value):
    if isinstance(value, list):
        return [x for item in value for x in _flat(item)]
    return [value]


def _bounds(bound, count, inner):
    """Per-element bounds from a list (flat or nested), a scalar or a summary dict
    ``{"shape", "min", "max"}``; for a summary take its ``inner`` end so every element's
    range stays inside its own bounds."""
    if isinstance(bound, dict):
        bound = bound.get(inner)
    if isinstance(bound, list):
        values = [_number(v) for v in _flat(bound)]
        return values if len(values) == count else [values[0]] * count
    if bound is None:
        return [math.nan] * count
    return [_number(bound)] * count


def _nest(values, shape):
    """Reshape a flat list into nested lists of ``shape`` (a scalar when shape is [])."""
    if not shape:
        return values[0]
    step = len(values) // int(shape[0])
    return [_nest(values[i * step : (i + 1) * step], shape[1:]) for i in range(int(shape[0]))]


def _uniform(rng, low, high, integer):
    low_ok, high_ok = math.isfinite(low), math.isfinite(high)
    if low_ok and high_ok:
        if integer:
            return rng.randint(math.ceil(low), math.floor(high))
        return rng.uniform(low, high)
    value = rng.gauss(0.0, 1.0)
    if low_ok:
        value = low + abs(value)
    elif high_ok:
        value = high - abs(value)
    return round(value) if integer else value


def sample(schema, rng):
    """One uniformly random, JSON-safe action of ``schema``."""
    kind = schema.get("type")
    if kind == "Discrete":
        n = schema.get("n")
        start = int(schema.get("start", 0))
        return start + (rng.randrange(int(n)) if isinstance(n, int) else 0)
    if kind in ("Box", "Image"):
        shape = [int(d) for d in schema.get("shape", [])]
        count = _size(shape)
        value_range = schema.get("value_range", [None, None])
        lows = _bounds(schema.get("low", value_range[0]), count, "max")
        highs = _bounds(schema.get("high", value_range[1]), count, "min")
        integer = "int" in str(schema.get("dtype", "float"))
        values = [_uniform(rng, lo, hi, integer) for lo, hi in zip(lows, highs, strict=True)]
        return _nest(values, shape)
    if kind == "MultiDiscrete":
        nvec = schema["nvec"]
        flat_n = [int(n) for n in _flat(nvec)]
        starts = [int(s) for s in _flat(schema.get("start", 0))]
        if len(starts) != len(flat_n):
            starts = starts[:1] * len(flat_n)
        values = [int(s) + rng.randrange(n) for n, s in zip(flat_n, starts, strict=True)]
        return _nest(values, _shape_of(nvec))
    if kind == "MultiBinary":
        n = schema.get("n")
        shape = [int(d) for d in (n if isinstance(n, list) else [n])]
        return _nest([rng.randrange(2) for _ in range(_size(shape))], shape)
    if kind == "Tuple":
        return [sample(space, rng) for space in schema.get("spaces", [])]
    if kind == "Dict":
        return {key: sample(space, rng) for key, space in schema.get("spaces", {}).items()}
    if kind == "Text":
        low = int(schema.get("min_length", 1))
        high = max(low, min(int(schema.get("max_length", 8)), 32))
        return "".join(rng.choice(TEXT_ALPHABET) for _ in range(rng.randint(low, high)))
    raise ValueError(f"the random policy cannot sample actions of type {kind!r}")


def _shape_of(value):
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return shape


class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        self.action_space = action_space
        self.submit_index = int(env_meta.get("submit_index", 0))
        self.rng = random.Random(0)
        sample(action_space, self.rng)  # fail at start-up, not mid-episode, on unknown types

    def reset(self, episode_index):
        self.rng = random.Random(self.submit_index * 1_000_003 + int(episode_index))

    def act(self, obs):
        return sample(self.action_space, self.rng)
