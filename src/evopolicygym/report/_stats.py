"""Uncertainty of a comparison: standard errors per cell, bootstrap intervals of the rank score,
the interquartile mean of normalised scores and the probability of improvement (Agarwal et al.
2021, "Deep RL at the edge of the statistical precipice"), all from ``scipy.stats``.

Resampling is stratified: every suite cell (entrant x environment) is its own sample, holding
the held-out episode returns of all its completed runs (cases of every repeat, pooled), and is
resampled independently (``scipy.stats.bootstrap`` with one sample per cell). Published cells
have no per-episode data and stay fixed; a cell with one episode stays fixed too.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0


def cell_errors(runs: list[list[float]]) -> tuple[float, float, float]:
    """(mean, SE over held-out cases, SE over repeats) of one cell from the per-case returns of
    its completed runs. The mean is the mean of run means; the case SE combines the runs'
    ``scipy.stats.sem`` (``sqrt(sum se_i^2) / R``); the repeat SE is the SEM of the run means
    (NaN with fewer than two runs)."""
    runs = [np.asarray(r, dtype=float) for r in runs if len(r)]
    if not runs:
        return math.nan, math.nan, math.nan
    means = np.array([r.mean() for r in runs])
    case_se = [float(stats.sem(r)) if len(r) > 1 else math.nan for r in runs]
    se_cases = math.sqrt(sum(se**2 for se in case_se)) / len(runs)
    se_repeats = float(stats.sem(means)) if len(means) > 1 else math.nan
    return float(means.mean()), se_cases, se_repeats


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def text(self, digits: int = 3) -> str:
        if math.isnan(self.low):
            return "—"
        return f"[{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _bootstrap(samples: list[np.ndarray], statistic, point: np.ndarray) -> list[Interval]:
    """Percentile intervals of a vector ``statistic(*samples)`` (vectorized over the last
    axis); samples with fewer than two values are passed as constants."""
    varying = [i for i, s in enumerate(samples) if len(s) > 1]
    if not varying:
        return [Interval(float(p), float(p)) for p in point]

    def resampled(*drawn, axis=-1):
        full = list(samples)
        for index, values in zip(varying, drawn, strict=True):
            full[index] = values
        return statistic(*full)

    result = stats.bootstrap(
        [samples[i] for i in varying],
        resampled,
        vectorized=True,
        n_resamples=RESAMPLES,
        batch=200,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(SEED),
    )
    low, high = (
        np.atleast_1d(result.confidence_interval.low),
        np.atleast_1d(result.confidence_interval.high),
    )
    return [Interval(float(a), float(b)) for a, b in zip(low, high, strict=True)]


def _means(samples: list[np.ndarray]) -> list[np.ndarray]:
    """Mean of every sample along its last axis; constants broadcast as they are."""
    return [
        s.mean(axis=-1) if s.ndim and s.shape[-1] > 1 else s.reshape(s.shape[:-1] or ())
        for s in samples
    ]


def rank_matrix(
    scores: np.ndarray, cell_env: list[str], cell_entrant: list[str], entrants: list[str]
):
    """Rank scores (see ``_rank``) for cell scores of shape ``(..., n_cells)``: NaN cells are
    placed last and earn 0; environments with one entrant are left out."""
    scores = np.asarray(scores, dtype=float)
    env_scores = np.full(scores.shape, np.nan)
    cell_env, cell_entrant = np.asarray(cell_env), np.asarray(cell_entrant)
    for env in dict.fromkeys(cell_env):
        index = np.flatnonzero(cell_env == env)
        n = len(index)
        if n < 2:
            continue
        block = scores[..., index]
        valid = ~np.isnan(block)
        better = (block[..., :, None] < block[..., None, :]) & valid[..., None, :]
        place = 1 + better.sum(axis=-1)
        place = np.where(valid, place, 1 + valid.sum(axis=-1, keepdims=True))
        env_scores[..., index] = np.where(valid, (n - place) / (n - 1), 0.0)
    with warnings.catch_warnings():  # an entrant only on one-entrant environments: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        out = [np.nanmean(env_scores[..., cell_entrant == e], axis=-1) for e in entrants]
    return np.stack(out, axis=-1)


def rank_intervals(cells: pd.DataFrame, entrants: list[str]) -> dict[str, Interval]:
    """Bootstrap interval of every entrant's rank score. ``cells`` has ``entrant``, ``env``,
    ``score`` and ``returns`` (pooled per-case held-out returns of the cell's completed runs, or
    None for published cells)."""
    samples = []
    for row in cells.itertuples(index=False):
        returns = row.returns
        if returns is not None and len(returns):
            samples.append(np.asarray(returns, dtype=float))
        else:
            samples.append(np.array([row.score], dtype=float))
    envs, owners = list(cells["env"]), list(cells["entrant"])

    def statistic(*drawn):
        means = np.broadcast_arrays(*_means(list(drawn)))
        return np.moveaxis(rank_matrix(np.stack(means, axis=-1), envs, owners, entrants), -1, 0)

    point = rank_matrix(np.array([float(np.mean(s)) for s in samples]), envs, owners, entrants)
    return dict(zip(entrants, _bootstrap(samples, statistic, point), strict=True))


def normalised(score: float, low: float | None, high: float | None) -> float:
    """``(score - random) / (best - random)``; NaN without both anchors."""
    if low is None or high is None or high == low or score is None or math.isnan(score):
        return math.nan
    return (score - low) / (high - low)


def iqm_interval(
    returns: list[np.ndarray], anchors: list[tuple[float, float]]
) -> tuple[float, Interval]:
    """Interquartile mean over environments of one entrant's normalised cell scores, with a
    bootstrap interval (each environment's episodes resampled). ``returns`` and ``anchors``
    (random, best) are per environment."""
    samples = [np.asarray(r, dtype=float) for r in returns]
    lows = np.array([a[0] for a in anchors], dtype=float)
    spans = np.array([a[1] - a[0] for a in anchors], dtype=float)

    def statistic(*drawn):
        means = np.stack(np.broadcast_arrays(*_means(list(drawn))), axis=-1)
        return np.atleast_1d(stats.trim_mean((means - lows) / spans, 0.25, axis=-1))[None, ...]

    point = statistic(*samples)[0]
    (interval,) = _bootstrap(samples, statistic, np.atleast_1d(point))
    return float(np.atleast_1d(point)[0]), interval


def improvement_probability(
    first: list[np.ndarray], second: list[np.ndarray]
) -> tuple[float, Interval]:
    """P(first > second): over shared environments, the mean of the Mann-Whitney probability
    that an episode of ``first`` earns more than one of ``second`` (ties count half), with a
    bootstrap interval resampling every (entrant, environment) sample independently."""
    samples = [np.asarray(s, dtype=float) for s in (*first, *second)]
    count = len(first)

    def statistic(*drawn):
        xs, ys = drawn[:count], drawn[count:]
        values = []
        for x, y in zip(xs, ys, strict=True):
            x = x if x.ndim else x[None]
            y = y if y.ndim else y[None]
            u = stats.mannwhitneyu(x, y, axis=-1, method="asymptotic").statistic
            values.append(u / (x.shape[-1] * y.shape[-1]))
        return np.mean(np.broadcast_arrays(*values), axis=0)[None, ...]

    point = float(np.atleast_1d(statistic(*samples)[0])[0])
    (interval,) = _bootstrap(samples, statistic, np.array([point]))
    return point, interval
