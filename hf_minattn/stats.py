"""Intervals for the findings: a t-interval over paired seeds, a bootstrap interval over items (tokens, word
pairs), a hierarchical bootstrap over seeds and items drawn per seed, and a crossed bootstrap over seeds and the
same items measured at every seed. A difference is called real only when its 95% interval
excludes 0 (after Holm's correction across a question's family of comparisons), and called absent only when an
equivalence test (TOST) with a stated margin says so; otherwise it is "not resolved at this scale".

Thin wrappers over scipy.stats, so that every probe and experiment reports intervals the same way.
"""

import math
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
    # "t" (t-interval over seeds), "bootstrap" (over items), "hierarchical" (seeds, then items within each seed) or
    # "crossed" (seeds and the same items at every seed)
    method: str = "t"
    df: int | None = None  # degrees of freedom of a t-interval (n - 1); None for a bootstrap

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or below 0 (a degenerate interval of a single seed never does). A
        t-interval without spread (n equal values, `mean_interval`) has no width to tell: it excludes 0 where the
        sign test that `t_test_p` then uses does at the same level (2 x 0.5^n < 0.05: 6 values), so that a verdict
        read from the interval and one read from p agree."""
        if self.n <= 1 or self.low <= 0 <= self.high:
            return False
        return self.low != self.high or self.method != "t" or 2 * sign_test_p(self.n) < 1 - self.confidence

    def sign(self) -> int:
        """+1 if the interval is above 0, -1 if below, 0 if it contains 0."""
        return 0 if not self.excludes_zero() else (1 if self.low > 0 else -1)

    def to_dict(self, digits: int | None = 4) -> dict:
        """The fields as a dict, floats rounded to `digits` (None: exact, for a verdict still to be decided)."""
        return {k: round(v, digits) if isinstance(v, float) and digits is not None else v
                for k, v in asdict(self).items()}


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """The mean of `values` (e.g. one number per seed) with its Student-t interval. With one value the interval
    is the point itself (and `excludes_zero()` is False: one seed proves nothing)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("mean_interval needs at least one value")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"mean_interval got non-finite values: {values.tolist()}")
    mean = float(values.mean())
    df = int(values.size) - 1
    if values.size == 1 or no_spread(values):
        return Interval(mean, mean, mean, int(values.size), confidence, "t", df)
    low, high = stats.t.interval(confidence, df=df, loc=mean, scale=stats.sem(values))
    return Interval(mean, float(low), float(high), int(values.size), confidence, "t", df)


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean of a[i] - b[i] over pairs (e.g. the same seed in two variants), with its t-interval."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired_difference needs equally many values, got {a.size} and {b.size}")
    return mean_interval(a - b, confidence)


def bootstrap_interval(
    statistic: Callable[..., float], *samples: Sequence, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
    vectorized: bool = False,
) -> Interval:
    """`statistic(*samples)` with a percentile bootstrap interval, resampling the items of all `samples` together
    (paired: item i of every sample stays together, e.g. the two scores of one word pair). `vectorized`: the
    statistic takes `axis=` and computes every resample at once (as scipy.stats.bootstrap means it); the draws, hence
    the interval, are the same either way."""
    intervals = bootstrap_intervals(statistic, *samples, confidence=confidence, n_resamples=n_resamples, seed=seed,
                                    vectorized=vectorized)
    if len(intervals) != 1:
        raise ValueError(f"bootstrap_interval needs a statistic of one number, got {len(intervals)}; "
                         f"bootstrap_intervals takes several")
    return intervals[0]


def bootstrap_intervals(
    statistic: Callable, *samples: Sequence, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
    vectorized: bool = False,
) -> list[Interval]:
    """`bootstrap_interval` of a statistic of several numbers ((k,) per resample; (k, resamples) when vectorized),
    all from one draw of resamples: interval i is the one `bootstrap_interval` gives number i alone with the same
    seed (the same resamples), for the cost of one draw. A number whose draws include NaN gets NaN bounds."""
    arrays = [np.asarray(s) for s in samples]
    if not arrays or any(len(a) != len(arrays[0]) for a in arrays):
        raise ValueError(f"bootstrap_interval needs one or more samples of equal length, got lengths "
                         f"{[len(a) for a in arrays]}")
    if len(arrays[0]) < 2:
        raise ValueError(f"bootstrap_interval needs at least 2 items, got {len(arrays[0])}")
    estimates = np.asarray(statistic(*arrays), dtype=np.float64).ravel()
    result = stats.bootstrap(arrays, statistic, paired=True, vectorized=vectorized, confidence_level=confidence,
                             n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    lows, highs = (np.ravel(bound) for bound in result.confidence_interval)
    return [Interval(float(e), float(low), float(high), len(arrays[0]), confidence, "bootstrap")
            for e, low, high in zip(estimates, lows, highs)]


def _centred(ranks, axis: int = -1):
    return ranks - ranks.mean(axis=axis, keepdims=True)


def _correlation_of_centred(rx, ry, ry_squares, axis: int = -1):
    """Pearson's r of centred arrays along `axis`, given ry's sum of squares (computed once for many rx)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=axis) / np.sqrt((rx * rx).sum(axis=axis) * ry_squares)


def _rank_correlation(rx, ry, axis: int = -1):
    """The Pearson correlation of two rank arrays along `axis`; NaN where either is constant."""
    rx, ry = _centred(rx, axis), _centred(ry, axis)
    return _correlation_of_centred(rx, ry, (ry * ry).sum(axis=axis), axis)


def spearman(x, y, axis: int = -1):
    """Spearman's rho of x and y along `axis`, for many resamples at once: the Pearson correlation of their ranks
    (ties get their average rank, as in scipy.stats.spearmanr). NaN where either is constant."""
    return _rank_correlation(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis)


def _average_ranks(count):
    """The average rank of each distinct value from how many copies of each there are, in sorted order (last axis):
    the copies of a value take ranks (end - count + 1) .. end, end the cumulative count."""
    average = np.cumsum(count, axis=-1, dtype=np.float64)
    average *= 2  # in place, exact (whole numbers and halves): (2 end - count + 1) / 2 = end - (count - 1) / 2
    average -= count
    average += 1
    average *= 0.5
    return average


def _resample_ranks(x):
    """A function of item indices (..., n) returning `scipy.stats.rankdata(x[indices], axis=-1)` (ties averaged),
    the same numbers, without sorting every resample: x is sorted once, and each row's ranks follow from how many
    copies of each distinct value it drew (`_average_ranks`)."""
    x = np.asarray(x, dtype=np.float64)
    group = np.unique(x, return_inverse=True)[1].ravel()  # (n,) distinct value index, in sorted order
    n_groups = int(group.max()) + 1
    nan_group = group[np.isnan(x)][:1]  # NaN sorts last, as one value; rankdata gives its rows NaN ranks

    def ranks(indices):
        flat = group[indices].reshape(-1, np.shape(indices)[-1])  # (rows, n) distinct value index
        rows = len(flat)
        nan_rows = (flat == nan_group[0]).any(axis=1) if nan_group.size else None
        flat += n_groups * np.arange(rows)[:, None]  # (row, value) as one index: one bincount for all rows
        count = np.bincount(flat.ravel(), minlength=rows * n_groups).reshape(rows, n_groups)
        ranked = _average_ranks(count).ravel()[flat]
        if nan_group.size:
            ranked[nan_rows] = np.nan
        return ranked.reshape(np.shape(indices))

    return ranks


def spearman_of_resamples(y, *xs):
    """A function of item indices (..., n), e.g. all of a bootstrap's resamples as one (resamples, n) array,
    returning (len(xs), ...): Spearman's rho of each x in `xs` with y on those items, the numbers of
    `spearman(x[indices], y[indices])`. Nothing is sorted per resample (`_resample_ranks`) and y is ranked once for
    all xs, so a thousand resamples of a thousand pairs cost about what a few sorts do."""
    if any(np.ndim(v) != 1 or len(v) != len(y) for v in xs + (y,)):
        raise ValueError(f"spearman_of_resamples needs 1-D samples of equal length, got shapes "
                         f"{[np.shape(v) for v in (y, *xs)]}")
    rank_y, rank_xs = _resample_ranks(y), [_resample_ranks(x) for x in xs]

    def rho(indices):
        ry = _centred(rank_y(indices))
        ry_squares = (ry * ry).sum(axis=-1)
        return np.stack([_correlation_of_centred(_centred(rank_x(indices)), ry, ry_squares) for rank_x in rank_xs])

    return rho


def spearman_of_copies(x, y):
    """A function of `copies` (one count per item) returning Spearman's rho of x and y where item i appears copies[i]
    times: `spearman(np.repeat(x, copies), np.repeat(y, copies))` without building the repeated arrays (a bootstrap
    resample of items given as counts, e.g. pairs drawn through their tokens). The copies of a distinct value share
    its average rank (`_average_ranks`); rho is then the copy-weighted Pearson correlation of the ranks. Sorting
    happens once here, so a resample costs O(items) instead of a sort of the repeated arrays."""
    groups = [np.unique(np.asarray(v), return_inverse=True)[1].ravel() for v in (x, y)]  # (items,) distinct value index

    def rho(copies):
        copies = np.asarray(copies, dtype=np.float64)
        total = copies.sum()
        ranks = []
        with np.errstate(invalid="ignore", divide="ignore"):  # no copies at all (a resample drew no pair): NaN
            for group in groups:
                r = _average_ranks(np.bincount(group, weights=copies))[group]  # copies of each distinct value, sorted
                ranks.append(r - (copies * r).sum() / total)
            rx, ry = ranks
            return (copies * rx * ry).sum() / np.sqrt((copies * rx * rx).sum() * (copies * ry * ry).sum())

    return rho


def spearman_interval(x: Sequence[float], y: Sequence[float], **kwargs) -> Interval:
    """Spearman's rho between x and y (e.g. model cosines and human scores) with a bootstrap interval over pairs: the
    draws of `bootstrap_interval(spearman, x, y)`, all resamples ranked at once (`spearman_of_resamples`)."""
    rho = spearman_of_resamples(y, x)
    return bootstrap_interval(lambda items, axis=-1: rho(items)[0], np.arange(len(x)), vectorized=True, **kwargs)


def _hierarchical_indices(sizes, n_resamples: int, rng):
    """The resampling of `hierarchical_draws`, all at once: (seeds (resamples, S), items, starts (resamples, S)).
    Each resample draws S seeds with replacement, then the items of each drawn seed with replacement; `items` holds
    them all in draw order, those of resample r's k-th drawn seed from starts[r, k] on. The values are those of one
    `rng.integers(0, n, n)` call per drawn seed: integers() given an array of bounds takes the same values from the
    generator's stream, so two calls a resample draw them, not 1 + S."""
    n_seeds = len(sizes)
    seeds = np.empty((n_resamples, n_seeds), dtype=np.int64)
    items = []
    for r in range(n_resamples):
        seeds[r] = rng.integers(0, n_seeds, n_seeds)
        drawn = sizes[seeds[r]]
        items.append(rng.integers(0, np.repeat(drawn, drawn)))
    lengths = sizes[seeds].ravel()
    starts = (np.cumsum(lengths) - lengths).reshape(seeds.shape)
    return seeds, np.concatenate(items), starts


def hierarchical_draws(statistic: Callable[..., float], groups: Sequence[Sequence], n_resamples: int = 1000,
                       seed: int = 0, vectorized: bool = False) -> tuple[float, np.ndarray]:
    """(estimate, bootstrap draws) of a two-level bootstrap: `groups` holds one tuple of equal-length arrays per seed
    (e.g. a system's cosines and the human scores of the word pairs scored at that seed). Each resample draws seeds
    with replacement, then, within each drawn seed, items (pairs) with replacement; a draw is the mean over the drawn
    seeds of `statistic(*arrays)`, as the estimate is over all seeds. Draws where the statistic is undefined (NaN,
    e.g. a resample of tied scores) are dropped. `vectorized`: the statistic takes `axis=` and is called once per
    seed on the item rows of every resample that drew it; the draws are the same either way."""
    groups = [tuple(np.asarray(a) for a in g) for g in groups]
    if not groups:
        raise ValueError("hierarchical_draws needs at least one group (seed), got none")
    for i, arrays in enumerate(groups):
        if not arrays or any(len(a) != len(arrays[0]) for a in arrays) or len(arrays[0]) < 2:
            raise ValueError(f"group {i} must hold one or more arrays of equal length >= 2, got lengths "
                             f"{[len(a) for a in arrays]}")
    estimate = float(np.mean([statistic(*arrays) for arrays in groups]))
    sizes = np.array([len(arrays[0]) for arrays in groups])
    seeds, items, starts = _hierarchical_indices(sizes, n_resamples, np.random.default_rng(seed))
    values = np.empty(seeds.shape)  # (resamples, S): the statistic on each drawn seed's resampled items
    for g, arrays in enumerate(groups):
        drawn = seeds == g
        if not drawn.any():
            continue
        rows = items[starts[drawn][:, None] + np.arange(sizes[g])]  # (times seed g was drawn, its items)
        if vectorized:
            values[drawn] = statistic(*(a[rows] for a in arrays), axis=-1)
        else:
            values[drawn] = [statistic(*(a[row] for a in arrays)) for row in rows]
    return estimate, _defined(values.mean(axis=1), n_resamples)


def _defined(draws, n_resamples: int) -> np.ndarray:
    """The draws where the statistic was defined (finite); refused where it was undefined in over half of them."""
    draws = draws[np.isfinite(draws)]
    if draws.size < n_resamples / 2:
        raise ValueError(f"the statistic was undefined in {n_resamples - draws.size} of {n_resamples} resamples")
    return draws


def crossed_statistic_draws(statistic: Callable[..., np.ndarray], groups: Sequence[Sequence], n_resamples: int = 1000,
                            seed: int = 0) -> tuple[float, np.ndarray]:
    """(estimate, bootstrap draws) of `statistic` averaged over seeds, where the SAME items (e.g. a benchmark's word
    pairs) were measured at every seed: `groups` holds one tuple of arrays per seed, each over those items in one
    order. Each resample draws seeds with replacement and, once for all of them, items with replacement (crossed,
    as `crossed_draws`), so an item's weight in the benchmark counts once, not once per seed as a redraw of the
    items within each seed (`hierarchical_draws`) would have it: that shrinks the items' share of the variance by
    the seeds' count. `statistic(*arrays, axis=-1)` must reduce the item axis (e.g. `spearman`). Draws where it is
    undefined (NaN) are dropped, as in `hierarchical_draws`."""
    groups = [tuple(np.asarray(a) for a in g) for g in groups]
    lengths = {len(a) for arrays in groups for a in arrays}
    if not groups or not all(groups) or len(lengths) != 1 or lengths.pop() < 2:
        raise ValueError(f"crossed_statistic_draws needs one or more seeds, each with arrays over the same >= 2 items, "
                         f"got lengths {[[len(a) for a in arrays] for arrays in groups]}")
    n_items = len(groups[0][0])
    estimate = float(np.mean([statistic(*arrays) for arrays in groups]))
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, len(groups), (n_resamples, len(groups)))  # (resamples, S)
    items = rng.integers(0, n_items, (n_resamples, n_items))  # (resamples, items): one draw for every seed
    values = np.stack([statistic(*(a[items] for a in arrays), axis=-1) for arrays in groups], axis=1)  # (R, S)
    return estimate, _defined(np.take_along_axis(values, seeds, axis=1).mean(axis=1), n_resamples)


def percentile_interval(estimate: float, draws, n: int, confidence: float, method: str) -> Interval:
    """`estimate` with the central `confidence` share of its bootstrap `draws` as the interval."""
    alpha = (1 - confidence) / 2
    low, high = draw_quantiles(draws, alpha)
    return Interval(estimate, float(low), float(high), n, confidence, method)


def draw_quantiles(draws, alpha: float) -> tuple[float, float]:
    """The k-th smallest and k-th largest of the bootstrap draws, k = ceil(alpha x draws): an interval then excludes
    0 exactly when fewer than an alpha share of the draws lie at or beyond 0 on that side, so it agrees with
    `bootstrap_test`'s p wherever alpha x draws >= 1 (40 draws at 95%; below that, k = 1 is the extreme draw, while p
    never falls below 1 / draws). (np.quantile interpolates: 25 of 1000 draws at or below 0 gave p = 0.05 beside a
    lower end above 0.)"""
    ordered = np.sort(np.asarray(draws, dtype=np.float64).ravel())
    k = max(1, math.ceil(alpha * ordered.size - 1e-9))
    return float(ordered[k - 1]), float(ordered[ordered.size - k])


def hierarchical_bootstrap(statistic: Callable[..., float], groups: Sequence[Sequence], confidence: float = 0.95,
                           n_resamples: int = 1000, seed: int = 0, vectorized: bool = False) -> Interval:
    """`statistic` averaged over seeds with a percentile interval from `hierarchical_draws`: both sources of
    variation, the training seed and the choice of items, widen it (a bootstrap over one seed's pairs ignores the
    first). `n` is the number of seeds."""
    estimate, draws = hierarchical_draws(statistic, groups, n_resamples, seed, vectorized)
    return percentile_interval(estimate, draws, len(groups), confidence, "hierarchical")


def crossed_draws(values, n_resamples: int = 1000, seed: int = 0) -> tuple[float, np.ndarray]:
    """(estimate, bootstrap draws) of the mean of a (seeds, items) matrix where the SAME items were measured at every
    seed (homonyms, sentences, tokens): seeds and items are crossed, not nested. Each resample draws seeds with
    replacement and, once for all of them, items with replacement, so an item that is hard at every seed counts as
    one item, not as one per seed (`hierarchical_draws` redraws items within each seed, which suits items that
    differ from seed to seed). NaN cells (an item missing at a seed) are left out of each mean."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 2:
        raise ValueError(f"values must be a (seeds, items) matrix with at least 2 items, got shape {values.shape}")
    if np.isnan(values).all(axis=0).any() or np.isnan(values).all(axis=1).any():
        seeds, items = np.flatnonzero(np.isnan(values).all(axis=1)), np.flatnonzero(np.isnan(values).all(axis=0))
        raise ValueError(f"every seed and every item needs at least one value; all NaN: seed rows {seeds.tolist()}, "
                         f"item columns {items.tolist()}")
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, values.shape[0], (n_resamples, values.shape[0]))  # (resamples, S)
    items = rng.integers(0, values.shape[1], (n_resamples, values.shape[1]))  # (resamples, I)
    draws = np.array([np.nanmean(values[np.ix_(s, i)]) for s, i in zip(seeds, items)])
    return float(np.nanmean(values)), draws[np.isfinite(draws)]


def crossed_bootstrap(values, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0) -> Interval:
    """The mean of a (seeds, items) matrix with a percentile interval from `crossed_draws`; `n` is the number of
    seeds. Both the seeds and the items are samples: the interval is as wide as either source of variation needs."""
    estimate, draws = crossed_draws(values, n_resamples, seed)
    return percentile_interval(estimate, draws, np.asarray(values).shape[0], confidence, "crossed")


def bootstrap_test(estimate: float, draws: np.ndarray, margin: float, n: int, confidence: float = 0.95,
                   method: str = "hierarchical") -> dict:
    """A difference's bootstrap draws as a test: the percentile interval, a two-sided p-value (twice the smaller
    share of draws on either side of 0, at least 1 / draws) and equivalence within +-margin (the 90% percentile
    interval inside the margins, the bootstrap form of TOST at level 0.05). `n`: the seeds behind the draws; `method`:
    the resampling that drew them ("hierarchical" or "crossed")."""
    draws = np.asarray(draws, dtype=np.float64)
    interval = percentile_interval(estimate, draws, n, confidence, method)
    low, high = interval.low, interval.high
    p = min(1.0, max(2 * min(np.mean(draws <= 0), np.mean(draws >= 0)), 1 / draws.size))
    low90, high90 = draw_quantiles(draws, 0.05)
    return {"estimate": float(estimate), "low": float(low), "high": float(high), "n": int(n),
            "confidence": confidence, "method": method, "df": None, "p": float(p), "margin": margin,
            "tost": {"equivalent": bool(-margin < low90 and high90 < margin), "low": float(low90), "high": float(high90),
                     "margin": margin}}


def group_permutation_p(distances, groups: Sequence, n_permutations: int = 2000, seed: int = 0) -> float:
    """One-sided p of "items are closer to the items of their own group than to the others" (e.g. heads to the heads
    of their layer): the mean distance between groups minus the mean within groups, against the same gap with the
    group labels permuted `n_permutations` times (drawn from `seed`). The observed labelling counts as one of the
    permutations, so p >= 1 / (n_permutations + 1). `distances`: a square (items, items) matrix."""
    d, labels = np.asarray(distances, dtype=np.float64), np.asarray(groups)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or labels.shape != (len(d),):
        raise ValueError(f"group_permutation_p needs a square distance matrix and one group per item, got "
                         f"{d.shape} and {labels.shape}")
    off = ~np.eye(len(d), dtype=bool)

    def gap(g):
        same = (g[:, None] == g[None, :]) & off
        return d[off & ~same].mean() - d[same].mean()

    observed, rng = gap(labels), np.random.default_rng(seed)
    larger = sum(gap(rng.permutation(labels)) >= observed - 1e-12 for _ in range(n_permutations))
    return (larger + 1) / (n_permutations + 1)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error rate), in the order given: compare each with 0.05."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError(f"p-values must be a list of numbers in [0, 1], got {list(p_values)!r}")
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))  # monotone: never below an earlier step
        adjusted[i] = running
    return adjusted.tolist()


def sign_test_p(n: int) -> float:
    """One-sided exact sign-test p-value of n values all on one side (0.5 ** n). Where the values have no spread (a
    coarse measurement grid gives every seed the same number), a t statistic is infinite and says nothing about the
    variance the grid hid; the signs are the evidence left, so 6 equal values are needed for p < 0.05 two-sided (5
    for each one-sided test of TOST)."""
    return 0.5 ** n


def no_spread(values) -> bool:
    """Whether `values` (2 or more) are the same number up to float rounding: the mean of equal values can differ
    from each in its last bit, which gives a standard error of 1e-17 and a t statistic in the hundreds of millions."""
    values = np.asarray(values, dtype=np.float64)
    return bool(np.ptp(values) <= 1e-12 * max(1.0, float(np.abs(values).max())))


def t_test_p(values: Sequence[float]) -> float:
    """Two-sided one-sample t-test p-value of mean(values) = 0 (e.g. paired differences over seeds); 1.0 where it is
    undefined (one value, or all values equal to 0); where every value is the same non-zero number, the exact sign
    test's (min(1, 2 * 0.5 ** n), `sign_test_p`)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2 or np.all(values == 0):
        return 1.0
    if no_spread(values):
        return min(1.0, 2 * sign_test_p(values.size)) if np.all(values != 0) else 1.0
    return float(stats.ttest_1samp(values, 0.0).pvalue)


def tost(values: Sequence[float], margin: float, alpha: float = 0.05) -> dict:
    """Two one-sided t-tests (Schuirmann 1987) that the mean of `values` (paired differences over seeds) lies within
    (-margin, +margin). Equivalent at level `alpha` exactly when the (1 - 2 alpha) t-interval lies inside the
    margins; values without spread, by the sign test (`sign_test_p`). Returns {"equivalent", "p", "margin", "low",
    "high", "df"} (low/high: the 90% interval)."""
    values = np.asarray(values, dtype=np.float64)
    if not (isinstance(margin, (int, float)) and margin > 0):
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    if values.size < 2:
        return {"equivalent": False, "p": 1.0, "margin": margin, "low": None, "high": None, "df": values.size - 1}
    mean, df = float(values.mean()), values.size - 1
    if no_spread(values):  # each side's test is the sign test of n values inside the margin
        p = sign_test_p(values.size) if abs(mean) < margin else 1.0
        low = high = mean
    else:
        se = float(stats.sem(values))
        p_low = stats.t.sf((mean + margin) / se, df)  # H0: mean <= -margin
        p_high = stats.t.cdf((mean - margin) / se, df)  # H0: mean >= +margin
        p = float(max(p_low, p_high))
        low, high = stats.t.interval(1 - 2 * alpha, df=df, loc=mean, scale=se)
    return {"equivalent": p < alpha, "p": p, "margin": margin, "low": float(low), "high": float(high), "df": df}
