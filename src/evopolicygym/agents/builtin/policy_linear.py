"""Linear policy, written by EvoPolicyGym's builtin:hillclimb agent.

``act(obs)`` computes ``z = W @ features(obs) + b`` and decodes ``z`` into an action. The
parameters ``W`` and ``b`` live in ``params.json`` beside this file; the agent improves them
from the returns of its submits.

Features: every number of the observation, scaled to [-1, 1] where the schema gives finite
bounds (Discrete and MultiDiscrete values by their range), clipped to [-5, 5] otherwise, in
schema order (Dict keys sorted). With ``"image_grid": G`` in ``params.json``, every image
(a Box or Image of shape H x W x C with H, W >= 16) is first average-pooled onto a G x G grid per
channel. Above ``MAX_FEATURES`` numbers, the vector is average-pooled down to ``MAX_FEATURES``
chunks. Actions: Discrete -> argmax over n outputs;
Box -> tanh squashed into the bounds (into [-1, 1] where a bound is infinite); MultiDiscrete ->
one output per component, binned; MultiBinary -> output > 0; Tuple/Dict -> concatenated.

``params.json`` holds one map (``weights``, ``bias``) or a ``population`` of maps; with a
population, episode ``i`` of a batch plays member ``i mod len(population)``, so one submit can
measure several candidates. Standard library + numpy only.
"""

import json
import math
from pathlib import Path

import numpy as np

MAX_FEATURES = 64
CLIP = 5.0
PARAMS_FILE = Path(__file__).with_name("params.json")


def _flat(value):
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flat(item)]
    return [value]


def _numbers(value):
    """``value`` (a number or nested lists) as a flat float array."""
    try:  # numpy reads rectangular nested lists (images) several times faster than _flat
        return np.asarray(value, dtype=float).reshape(-1)
    except (ValueError, TypeError):  # ragged
        return np.asarray(_flat(value), dtype=float)


def _shape_of(value):
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return shape


def _bound_array(bound, count, inner):
    """Per-element float bounds from a list, a scalar or a ``{"min", "max"}`` summary."""
    if isinstance(bound, dict):
        bound = bound.get(inner)
    if bound is None:
        return np.full(count, np.nan)
    values = np.array([float(v) for v in _flat(bound)], dtype=float)
    return values if values.size == count else np.full(count, values[0])


def _nest(values, shape):
    if not shape:
        return values[0]
    step = len(values) // shape[0]
    return [_nest(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _box_bounds(schema, count):
    value_range = schema.get("value_range", [None, None])
    low = _bound_array(schema.get("low", value_range[0]), count, "max")
    high = _bound_array(schema.get("high", value_range[1]), count, "min")
    return low, high


MIN_IMAGE_SIDE = 16


def _image_shape(schema):
    """(H, W, C) of an image-like Box, else None."""
    shape = [int(d) for d in schema.get("shape", [])]
    if len(shape) == 3 and min(shape[0], shape[1]) >= MIN_IMAGE_SIDE:
        return tuple(shape)
    return None


class Features:
    """Turns an observation of ``schema`` into a fixed-length float vector; ``image_grid`` G
    pools images onto a G x G grid per channel first (None: no pooling)."""

    def __init__(self, schema, image_grid=None):
        self.image_grid = image_grid
        self.parts = []  # (size, center, half range, key path, image shape or None)
        self._walk(schema, ())
        self.size = min(sum(part[0] for part in self.parts), MAX_FEATURES)

    def _walk(self, schema, path):
        kind = schema.get("type")
        if kind == "Discrete" and isinstance(schema.get("n"), int):
            n, start = schema["n"], int(schema.get("start", 0))
            self._add(path, 1, start + (n - 1) / 2, max((n - 1) / 2, 0.5))
        elif kind in ("Box", "Image"):
            count = math.prod(int(d) for d in schema.get("shape", []))
            low, high = _box_bounds(schema, count)
            finite = np.isfinite(low) & np.isfinite(high) & (high > low)
            low, high = np.where(finite, low, -1.0), np.where(finite, high, 1.0)
            image = _image_shape(schema) if self.image_grid else None
            if image is not None:
                # Pooling keeps the mean, so the grid cells share the image's scaling.
                cells = self.image_grid * self.image_grid * image[2]
                center, half = float(np.mean((low + high) / 2)), float(np.mean((high - low) / 2))
                self._add(path, cells, center, half, image)
            else:
                self._add(path, count, (low + high) / 2, (high - low) / 2)
        elif kind == "MultiDiscrete":
            nvec = np.array(_flat(schema["nvec"]), dtype=float)
            self._add(path, nvec.size, (nvec - 1) / 2, np.maximum((nvec - 1) / 2, 0.5))
        elif kind == "MultiBinary":
            n = schema.get("n")
            self._add(path, math.prod(_flat(n)), 0.5, 0.5)
        elif kind == "Tuple":
            for i, space in enumerate(schema.get("spaces", [])):
                self._walk(space, (*path, i))
        elif kind == "Dict":
            for key in sorted(schema.get("spaces", {})):
                self._walk(schema["spaces"][key], (*path, key))
        # Text and unknown types carry no numbers this policy can use.

    def _add(self, path, size, center, half, image=None):
        center, half = np.broadcast_to(center, size), np.broadcast_to(half, size)
        self.parts.append((size, center, half, path, image))

    def _pooled(self, value, image):
        height, width, channels = image
        grid = self.image_grid
        pixels = _numbers(value)[: height * width * channels]
        pixels = np.pad(pixels, (0, height * width * channels - pixels.size))
        pixels = pixels.reshape(height, width, channels)
        rows = np.array_split(np.arange(height), grid)
        columns = np.array_split(np.arange(width), grid)
        return np.array([pixels[r][:, c].mean(axis=(0, 1)) for r in rows for c in columns]).reshape(
            -1
        )

    def __call__(self, obs):
        chunks = []
        for size, center, half, path, image in self.parts:
            value = obs
            for key in path:
                value = value[key]
            numbers = self._pooled(value, image) if image else _numbers(value)[:size]
            if numbers.size < size:
                numbers = np.pad(numbers, (0, size - numbers.size))
            chunks.append((numbers - center) / half)
        vector = np.concatenate(chunks) if chunks else np.zeros(0)
        vector = np.clip(np.nan_to_num(vector), -CLIP, CLIP)
        if vector.size > MAX_FEATURES:
            vector = np.array([chunk.mean() for chunk in np.array_split(vector, MAX_FEATURES)])
        return vector


class Actions:
    """Decodes an output vector ``z`` into an action of ``schema``."""

    def __init__(self, schema):
        self.schema = schema
        self.size = self._size(schema)

    def _size(self, schema):
        kind = schema.get("type")
        if kind == "Discrete":
            return int(schema["n"])
        if kind == "Box":
            return math.prod(int(d) for d in schema.get("shape", []))
        if kind == "MultiDiscrete":
            return len(_flat(schema["nvec"]))
        if kind == "MultiBinary":
            return math.prod(_flat(schema["n"]))
        if kind == "Tuple":
            return sum(self._size(s) for s in schema.get("spaces", []))
        if kind == "Dict":
            return sum(self._size(s) for s in schema.get("spaces", {}).values())
        raise ValueError(f"the linear policy cannot produce actions of type {kind!r}")

    def __call__(self, z):
        action, _ = self._decode(self.schema, z, 0)
        return action

    def _decode(self, schema, z, at):
        kind = schema.get("type")
        size = self._size(schema)
        part = z[at : at + size]
        if kind == "Discrete":
            return int(schema.get("start", 0)) + int(np.argmax(part)), at + size
        if kind == "Box":
            shape = [int(d) for d in schema.get("shape", [])]
            low, high = _box_bounds(schema, size)
            squashed = np.tanh(part)
            finite = np.isfinite(low) & np.isfinite(high)
            low, high = np.where(finite, low, -1.0), np.where(finite, high, 1.0)
            scaled = low + (squashed + 1) / 2 * (high - low)
            if "int" in str(schema.get("dtype", "float")):
                return _nest([round(float(v)) for v in scaled], shape), at + size
            return _nest([float(v) for v in scaled], shape), at + size
        if kind == "MultiDiscrete":
            nvec = np.array(_flat(schema["nvec"]), dtype=int)
            starts = np.broadcast_to(np.array(_flat(schema.get("start", 0)), dtype=int), size)
            bins = np.minimum(((np.tanh(part) + 1) / 2 * nvec).astype(int), nvec - 1)
            values = [int(v) for v in bins + starts]
            return _nest(values, _shape_of(schema["nvec"])), at + size
        if kind == "MultiBinary":
            n = schema["n"]
            shape = [int(d) for d in (n if isinstance(n, list) else [n])]
            return _nest([int(v > 0) for v in part], shape), at + size
        if kind == "Tuple":
            items = []
            for space in schema.get("spaces", []):
                item, at = self._decode(space, z, at)
                items.append(item)
            return items, at
        out = {}
        for key, space in schema.get("spaces", {}).items():
            out[key], at = self._decode(space, z, at)
        return out, at


def _member(data):
    return np.array(data["weights"], dtype=float), np.array(data["bias"], dtype=float)


def load_params(path):
    """The first (or only) map of ``params.json`` as (weights, bias)."""
    return load_population(path)[0]


def load_population(path):
    """Every map of ``params.json``: a one-element list unless it holds a ``population``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [_member(m) for m in data["population"]] if "population" in data else [_member(data)]


def image_grid(path):
    return json.loads(Path(path).read_text(encoding="utf-8")).get("image_grid")


class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        self.features = Features(obs_space, image_grid(PARAMS_FILE))
        self.actions = Actions(action_space)
        self.population = load_population(PARAMS_FILE)
        expected = (self.actions.size, self.features.size)
        for weights, bias in self.population:
            if weights.shape != expected or bias.shape != (self.actions.size,):
                raise ValueError(
                    f"params.json has weights {weights.shape} and bias {bias.shape}; "
                    f"this task needs weights {expected} and bias ({self.actions.size},)"
                )
        self.weights, self.bias = self.population[0]

    def reset(self, episode_index):
        self.weights, self.bias = self.population[int(episode_index) % len(self.population)]

    def act(self, obs):
        return self.actions(self.weights @ self.features(obs) + self.bias)
