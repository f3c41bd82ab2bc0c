"""The statistics of every comparison the harness reports: intervals, a paired bootstrap,
variance ratios, and the one rule that turns an interval into a verdict.

Used by the report (memrl_bench/report/) and the findings (memrl_bench/findings/)
alike, so a number and its interval mean the same in both. Few replicates: Student t,
not a normal z; one replicate: a mean without an interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_MEASURED = "supported", "not supported", "inconclusive at this sample size", "not measured"


@dataclass(frozen=True)
class Interval:
    """A mean over n values with its 95% interval; low = high = None without one (n < 2)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def half_width(self) -> float | None:
        return None if self.low is None or self.high is None else (self.high - self.low) / 2

    def text(self, digits: int = 3) -> str:
        if self.mean is None:
            return "n/a"
        if self.low is None:
            return f"{self.mean:.{digits}f} (n={self.n})"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}] (n={self.n})"


NO_DATA = Interval(None, None, None, 0)


def _present(values: Iterable[float | None]) -> np.ndarray:
    """The values that are numbers (None and NaN dropped), as float64."""
    return np.array([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)


def t_interval(values: Iterable[float | None], confidence: float = CONFIDENCE) -> Interval:
    """Mean and Student-t interval of the values that are numbers (None and NaN left out)."""
    x = _present(values)
    if len(x) == 0:
        return NO_DATA
    mean = float(x.mean())
    if len(x) < 2:
        return Interval(mean, None, None, 1)
    from scipy.stats import t

    half = float(t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return Interval(mean, mean - half, mean + half, len(x))


def difference_of_means(a: Iterable[float | None], b: Iterable[float | None], confidence: float = CONFIDENCE) -> Interval:
    """mean(a) - mean(b) of two independent samples (two task sets) with Welch's t-interval; n: both sizes together."""
    x, y = _present(a), _present(b)
    if len(x) == 0 or len(y) == 0:
        return NO_DATA
    mean = float(x.mean() - y.mean())
    if len(x) < 2 or len(y) < 2:
        return Interval(mean, None, None, len(x) + len(y))
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    if vx + vy == 0:
        return Interval(mean, mean, mean, len(x) + len(y))
    from scipy.stats import t

    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    half = float(t.ppf(0.5 + confidence / 2, df) * math.sqrt(vx + vy))
    return Interval(mean, mean - half, mean + half, len(x) + len(y))


def bootstrap_mean(
    differences: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, confidence: float = CONFIDENCE
) -> Interval:
    """Mean of per-unit differences with the percentile interval of a bootstrap over units."""
    x = np.asarray(differences, dtype=np.float64)
    if len(x) == 0:
        return NO_DATA
    rng = np.random.default_rng(seed)
    n = len(x)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // n)  # bounds the index matrix's memory on large splits
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = x[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    low, high = np.percentile(means, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return Interval(float(x.mean()), float(low), float(high), n)


def variance_ratio(a: list[list[float]], b: list[list[float]], confidence: float = CONFIDENCE) -> Interval:
    """Ratio of the pooled within-group variances of a and b with its F-interval.

    Each group is one method seed's values across task orders; identical groups (a
    deterministic arm repeats itself over method seeds) count once. n is the smaller
    of the two degrees of freedom plus one.
    """
    from scipy.stats import f

    def pooled(groups: list[list[float]]) -> tuple[float, int]:
        unique = {tuple(g) for g in groups if len(g) > 1}
        ss = sum(float(np.sum((np.array(g) - np.mean(g)) ** 2)) for g in unique)
        df = sum(len(g) - 1 for g in unique)
        return (ss / df if df else float("nan")), df

    (va, dfa), (vb, dfb) = pooled(a), pooled(b)
    if not dfa or not dfb or vb == 0:
        return NO_DATA
    ratio = va / vb
    return Interval(
        ratio, ratio / float(f.ppf(0.5 + confidence / 2, dfa, dfb)), ratio / float(f.ppf(0.5 - confidence / 2, dfa, dfb)), min(dfa, dfb) + 1
    )


def n_for_half_width(values: Iterable[float | None], half_width: float, confidence: float = CONFIDENCE) -> int | None:
    """Pairs a t-interval of values spread like these needs for the given half-width (normal
    quantile: a lower bound when few); None for fewer than 2 values."""
    x = _present(values)
    if len(x) < 2:
        return None
    from scipy.stats import norm

    sd = float(x.std(ddof=1))
    return max(2, math.ceil((float(norm.ppf(0.5 + confidence / 2)) * sd / half_width) ** 2))


def side(interval: Interval, null: float = 0.0) -> int | None:
    """+1 if the interval lies above `null`, -1 below, 0 if it contains it; None without an interval."""
    if interval.low is None or interval.high is None:
        return None
    return 1 if interval.low > null else -1 if interval.high < null else 0


def verdict(interval: Interval, direction: int = 1, null: float = 0.0) -> str:
    """The verdict an interval supports for a claim that the quantity is above (direction
    +1) or below (-1) `null`: supported when it excludes the null in the claimed
    direction, not supported when it excludes it in the other, inconclusive otherwise."""
    if interval.mean is None:
        return NOT_MEASURED
    where = side(interval, null)
    if not where:
        return INCONCLUSIVE
    return SUPPORTED if where == direction else NOT_SUPPORTED
