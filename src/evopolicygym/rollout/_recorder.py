"""Recording one train episode: its steps, column by column (a list append per field and step),
and the observation stack that goes to ``observations.npy``/``.npz`` when it is large
(reference §2.6). The judge, not the worker, turns the columns into ``trajectory.jsonl`` rows:
that work then runs beside the next episode instead of delaying it.
"""

from __future__ import annotations

import io
import operator
from typing import Any

import numpy as np

from evopolicygym.protocol import Steps

# Observations of one episode stay inline in trajectory.jsonl up to this many bytes.
EXTERNALIZE_BYTES = 4096


class EpisodeRecorder:
    """Collects the steps of one episode. ``obs_external`` forces external observation storage;
    ``compress_images`` stores uint8 stacks as a compressed ``.npz``.

    The episode loop appends to the columns itself (a method call per step would cost more than
    the appends), ``rewards`` last: its length is the number of steps recorded. Only the last
    step can have ended the episode, so its flags are all that is kept of them (:attr:`ended`);
    no per-step row or turn stays alive, which spares the garbage collector."""

    def __init__(self, observe, *, obs_external: bool, compress_images: bool):
        self.observe = observe
        self.obs_external = obs_external
        self.compress_images = compress_images
        self.observations: list[Any] = []  # raw, as the environment returned them
        self.visible: list[Any] = []  # the policy's form, for the first :meth:`visible_steps`
        self.actions: list[Any] = []  # as the policy returned them
        self.infos: list[dict[str, Any]] = []
        self.rewards: list[float] = []
        self.ended = (False, False)  # (terminated, truncated) of the last step
        # The policy's (list) form of an observation is kept only while the episode's
        # observations could still stay inline: an image's list form costs megabytes a step.
        # Observations of a space have one size, so the first one says how many steps fit.
        self.inline_steps: int | None = 0 if obs_external else None

    def visible_steps(self, first_obs: Any) -> int:
        """How many steps keep the policy's form of their observation in :attr:`visible`, given
        the episode's first raw observation."""
        if self.inline_steps is None:
            self.inline_steps = EXTERNALIZE_BYTES // max(_nbytes(first_obs), 1)
        return self.inline_steps

    def __len__(self) -> int:
        return len(self.rewards)

    def finish(self) -> tuple[Steps, bytes, str | None]:
        """``(steps, observation file bytes, "npy" | "npz" | None)``."""
        count = len(self.rewards)
        # A step interrupted between its appends (a MemoryError) is not recorded.
        raw, actions, infos = self.observations[:count], self.actions[:count], self.infos[:count]
        terminated, truncated = [False] * count, [False] * count
        if count:
            terminated[-1], truncated[-1] = self.ended
        observations, obs_format = externalize(
            raw, always=self.obs_external, compress_images=self.compress_images
        )
        if observations is not None:
            column: list[Any] = []
        elif self.inline_steps is not None and count <= self.inline_steps:
            column = self.visible[:count]
        else:  # large but not stackable (ragged): inline after all
            column = [self.observe(obs) for obs in raw]
        steps = Steps(column, actions, self.rewards, terminated, truncated, infos)
        return steps, observations or b"", obs_format


def _nbytes(obs: Any) -> int:
    """Bytes ``obs`` adds to a stack of observations (as :func:`externalize` counts them)."""
    if isinstance(obs, dict):
        return sum(_nbytes(value) for value in obs.values())
    return getattr(obs, "nbytes", 8)


def externalize(
    raw_obs: list[Any], *, always: bool, compress_images: bool
) -> tuple[bytes | None, str | None]:
    """Stack observations into ``observations.npy`` (arrays) or ``.npz`` (dicts of arrays)
    when the spec asks for external storage or the stack exceeds 4 KiB; ``(None, None)`` keeps
    them inline. Integer arrays within [0, 255] are stored as uint8, and uint8 data is
    compressed: always inside an ``.npz``, and with ``compress_images`` a uint8 array goes to a
    compressed ``.npz`` under the key ``obs`` instead of a plain ``.npy`` (the reference
    format, which cannot be compressed; pixel frames shrink 30-400x)."""
    if not raw_obs:
        return None, None
    buffer = io.BytesIO()
    try:
        if isinstance(raw_obs[0], dict):
            keys = list(raw_obs[0])
            arrays = {str(k): _compact(np.stack([np.asarray(o[k]) for o in raw_obs])) for k in keys}
            if not always and sum(a.nbytes for a in arrays.values()) <= EXTERNALIZE_BYTES:
                return None, None
            if any(a.dtype == np.uint8 for a in arrays.values()):
                np.savez_compressed(buffer, **arrays)
            else:
                np.savez(buffer, **arrays)
            return buffer.getvalue(), "npz"
        array = _stack(raw_obs)
        if array.dtype == object or (not always and array.nbytes <= EXTERNALIZE_BYTES):
            return None, None
        array = _compact(array)
        if compress_images and array.dtype == np.uint8:
            np.savez_compressed(buffer, obs=array)
            return buffer.getvalue(), "npz"
        np.save(buffer, array, allow_pickle=False)
        return buffer.getvalue(), "npy"
    except (ValueError, TypeError, KeyError):  # ragged or mixed observations stay inline
        return None, None


_shape = operator.attrgetter("shape")


def _stack(values: list[Any]) -> np.ndarray:
    """``np.stack(values)``; for arrays of one shape by concatenation, a third of the cost."""
    arrays = set(map(type, values)) == {np.ndarray}
    if arrays and len(set(map(_shape, values))) == 1 and values[0].ndim:
        return np.concatenate(values).reshape((len(values), *values[0].shape))
    return np.stack([np.asarray(value) for value in values])


def _compact(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind in "iu" and array.size and array.min() >= 0 and array.max() <= 255:
        return array.astype(np.uint8)
    return array
