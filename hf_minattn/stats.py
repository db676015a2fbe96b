"""Intervals for the findings: a t-interval over paired seeds and a bootstrap interval over items (tokens, word
pairs). A difference is called real only when its 95% interval excludes 0.

Thin wrappers over scipy.stats, so that every probe and experiment reports intervals the same way.
"""

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval [low, high]; `n` is the number of seeds or items behind it."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    method: str = "t"  # "t" (t-interval over seeds) or "bootstrap" (percentile bootstrap over items)

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or below 0 (a degenerate interval of a single seed never does)."""
        return self.n > 1 and (self.low > 0 or self.high < 0)

    def sign(self) -> int:
        """+1 if the interval is above 0, -1 if below, 0 if it contains 0."""
        return 0 if not self.excludes_zero() else (1 if self.low > 0 else -1)

    def to_dict(self, digits: int = 4) -> dict:
        return {k: round(v, digits) if isinstance(v, float) else v for k, v in asdict(self).items()}


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """The mean of `values` (e.g. one number per seed) with its Student-t interval. With one value the interval
    is the point itself (and `excludes_zero()` is False: one seed proves nothing)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("mean_interval needs at least one value")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"mean_interval got non-finite values: {values.tolist()}")
    mean = float(values.mean())
    if values.size == 1 or np.all(values == values[0]):
        return Interval(mean, mean, mean, int(values.size), confidence, "t")
    low, high = stats.t.interval(confidence, df=values.size - 1, loc=mean, scale=stats.sem(values))
    return Interval(mean, float(low), float(high), int(values.size), confidence, "t")


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean of a[i] - b[i] over pairs (e.g. the same seed in two variants), with its t-interval."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired_difference needs equally many values, got {a.size} and {b.size}")
    return mean_interval(a - b, confidence)


def bootstrap_interval(
    statistic: Callable[..., float], *samples: Sequence, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> Interval:
    """`statistic(*samples)` with a percentile bootstrap interval, resampling the items of all `samples` together
    (paired: item i of every sample stays together, e.g. the two scores of one word pair)."""
    arrays = [np.asarray(s) for s in samples]
    if not arrays or any(len(a) != len(arrays[0]) for a in arrays):
        raise ValueError("bootstrap_interval needs one or more samples of equal length")
    if len(arrays[0]) < 2:
        raise ValueError(f"bootstrap_interval needs at least 2 items, got {len(arrays[0])}")
    estimate = float(statistic(*arrays))
    result = stats.bootstrap(arrays, statistic, paired=True, vectorized=False, confidence_level=confidence,
                             n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    low, high = result.confidence_interval
    return Interval(estimate, float(low), float(high), len(arrays[0]), confidence, "bootstrap")


def spearman_interval(x: Sequence[float], y: Sequence[float], **kwargs) -> Interval:
    """Spearman's rho between x and y (e.g. model cosines and human scores) with a bootstrap interval over pairs."""
    return bootstrap_interval(lambda a, b: stats.spearmanr(a, b).statistic, x, y, **kwargs)
