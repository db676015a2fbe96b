"""Intervals on synthetic data with a known answer."""

import math
import warnings

import numpy as np
import pytest

from hf_minattn.stats import (Interval, bootstrap_interval, bootstrap_intervals, bootstrap_test, crossed_bootstrap, crossed_statistic_draws, hierarchical_bootstrap, hierarchical_draws,
                              group_permutation_p, holm, mean_interval, paired_difference, spearman, spearman_interval, spearman_of_copies,
                              spearman_of_resamples, t_test_p, tost)


def test_t_interval_matches_the_textbook_formula():
    # mean 2, sd 1, n 3: half-width t_{0.975, 2} * 1 / sqrt(3) = 4.3027 / 1.7321 = 2.4841
    interval = mean_interval([1.0, 2.0, 3.0])
    assert interval.estimate == pytest.approx(2.0)
    assert interval.high - interval.estimate == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert interval.low == pytest.approx(2 * 2.0 - interval.high)
    assert not interval.excludes_zero() and interval.sign() == 0


def test_t_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    draws = [rng.normal(0.3, 1.0, size=5) for _ in range(2000)]
    hits = sum(i.low <= 0.3 <= i.high for i in map(mean_interval, draws))
    assert 0.93 < hits / len(draws) < 0.97


def test_paired_difference_sees_a_consistent_small_effect_that_unpaired_noise_would_hide():
    rng = np.random.default_rng(1)
    seed_effect = rng.normal(0, 1.0, size=4)  # large differences between seeds, shared by both variants
    a, b = 7.0 + seed_effect + 0.05, 7.0 + seed_effect + rng.normal(0, 0.005, size=4)
    difference = paired_difference(a, b)
    assert difference.excludes_zero() and difference.sign() == 1
    assert difference.low < 0.05 < difference.high
    assert not paired_difference(b, b).excludes_zero()  # no difference at all
    assert paired_difference(b, a).sign() == -1


def test_a_single_seed_never_counts_as_a_difference():
    assert not mean_interval([0.5]).excludes_zero()
    with pytest.raises(ValueError, match="equally many"):
        paired_difference([1, 2], [1])
    with pytest.raises(ValueError, match="non-finite"):
        mean_interval([1.0, float("nan")])


def test_bootstrap_interval_of_spearman_contains_the_truth_and_shrinks_with_more_pairs():
    rng = np.random.default_rng(2)
    # y = x + noise with equal variances: Pearson 1/sqrt(2) ~ 0.707; Spearman for a bivariate normal is
    # (6/pi) * asin(r/2) ~ 0.690.
    truth = 6 / math.pi * math.asin(1 / math.sqrt(2) / 2)
    widths = []
    for n in (100, 1600):
        x = rng.normal(size=n)
        interval = spearman_interval(x, x + rng.normal(size=n))
        assert interval.method == "bootstrap" and interval.n == n
        assert interval.low < truth < interval.high
        widths.append(interval.high - interval.low)
    assert widths[1] < widths[0] / 2.5  # ~ 1/sqrt(16) = 1/4 in theory
    independent = np.random.default_rng(3)  # a fixed draw: 5% of draws would exclude 0 by chance
    unrelated = spearman_interval(independent.normal(size=300), independent.normal(size=300))
    assert not unrelated.excludes_zero()


def test_bootstrap_keeps_pairs_together():
    x = np.arange(50, dtype=float)
    # Perfectly paired: every resample of pairs has Spearman 1, so the interval is the point 1.
    interval = bootstrap_interval(lambda a, b: float(np.corrcoef(a, b)[0, 1]), x, 2 * x)
    assert interval.low == pytest.approx(1.0) and interval.high == pytest.approx(1.0)
    with pytest.raises(ValueError, match="equal length"):
        bootstrap_interval(np.mean, x, x[:10])


def test_interval_round_trips_to_json_ready_dict():
    d = Interval(0.123456, 0.1, 0.2, 3).to_dict()
    assert d == {"estimate": 0.1235, "low": 0.1, "high": 0.2, "n": 3, "confidence": 0.95, "method": "t", "df": None}
    assert mean_interval([1.0, 2.0, 4.0]).df == 2  # df beside every t-interval


def test_hierarchical_bootstrap_widens_with_the_spread_between_seeds():
    """Known answer: the mean of x over pairs, per seed. Seeds whose means differ by a lot (0, 1, 2) give an interval
    about as wide as the t-interval over the seed means would say; identical seeds give the pairs-only width."""
    rng = np.random.default_rng(0)
    noise = [rng.normal(0, 0.1, 400) for _ in range(3)]
    spread = [(offset + e,) for offset, e in zip((0.0, 1.0, 2.0), noise)]
    same = [(1.0 + e,) for e in noise]
    wide = hierarchical_bootstrap(np.mean, spread, n_resamples=2000)
    narrow = hierarchical_bootstrap(np.mean, same, n_resamples=2000)
    assert wide.method == "hierarchical" and wide.n == 3
    assert wide.estimate == pytest.approx(1.0, abs=0.02) and narrow.estimate == pytest.approx(1.0, abs=0.02)
    # seeds drawn with replacement: 3 draws from {0, 1, 2} are all 0 (or all 2) with probability 1/27 = 3.7% > 2.5%,
    # so the percentile interval is about [0, 2]: the seeds' spread, not the pairs', sets its width
    assert wide.low == pytest.approx(0.0, abs=0.05) and wide.high == pytest.approx(2.0, abs=0.05)
    # within seeds only: the standard error of a mean of 1200 values of sd 0.1 is 0.0029 -> half-width ~0.0057
    assert narrow.high - narrow.low == pytest.approx(2 * 1.96 * 0.1 / math.sqrt(1200), rel=0.25)
    # pairs stay together within a seed: corr(x, 2x) is 1 in every resample
    x = rng.normal(size=(3, 50))
    paired = hierarchical_bootstrap(lambda a, b: np.corrcoef(a, b)[0, 1], [(r, 2 * r) for r in x], n_resamples=200)
    assert paired.low == pytest.approx(1.0) and paired.high == pytest.approx(1.0)
    with pytest.raises(ValueError, match="equal length"):
        hierarchical_bootstrap(np.mean, [(np.arange(5), np.arange(4))])


def test_crossed_bootstrap_counts_an_item_measured_at_every_seed_once():
    """Known answer: 5 identical seeds over 400 items of sd 1. Crossed, the interval is the items' own: half-width
    1.96 / sqrt(400) = 0.098. Redrawing items within each seed (hierarchical) treats the 5 copies as 2000 items and
    shrinks it by sqrt(5) to 0.044, which is wrong for items that are the same at every seed."""
    items = np.random.default_rng(0).normal(0, 1, 400)
    items -= items.mean() - 0.5  # mean exactly 0.5
    same_items = np.tile(items, (5, 1))  # (seeds, items)
    crossed = crossed_bootstrap(same_items, n_resamples=2000)
    assert crossed.method == "crossed" and crossed.n == 5 and crossed.estimate == pytest.approx(0.5)
    half_width = 1.96 * items.std(ddof=1) / math.sqrt(400)
    assert (crossed.high - crossed.low) / 2 == pytest.approx(half_width, rel=0.15)
    nested = hierarchical_bootstrap(np.mean, [(row,) for row in same_items], n_resamples=2000)
    assert (nested.high - nested.low) / 2 == pytest.approx(half_width / math.sqrt(5), rel=0.15)


def test_crossed_statistic_draws_count_items_shared_by_every_seed_once():
    """Five seeds that measured the same 60 items identically are one measurement of those items: the crossed draws
    of a correlation over them spread as a bootstrap over the items alone; redrawing the items within each seed
    (hierarchical) would shrink that spread by about sqrt(5), as if 300 items had been measured."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    corr = lambda a, b, axis=-1: np.mean(  # noqa: E731  Pearson along `axis`
        (a - a.mean(axis, keepdims=True)) * (b - b.mean(axis, keepdims=True)), axis) / (a.std(axis) * b.std(axis))
    estimate, five = crossed_statistic_draws(corr, [(x, y)] * 5, n_resamples=2000)
    _, one = crossed_statistic_draws(corr, [(x, y)], n_resamples=2000)
    _, nested = hierarchical_draws(corr, [(x, y)] * 5, n_resamples=2000, vectorized=True)
    assert estimate == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert five.std() == pytest.approx(one.std(), rel=0.1)
    assert nested.std() == pytest.approx(one.std() / np.sqrt(5), rel=0.15)
    with pytest.raises(ValueError, match="the same >= 2 items"):
        crossed_statistic_draws(corr, [(x, y), (x[:50], y[:50])])


def test_crossed_bootstrap_widens_with_the_spread_between_seeds_and_skips_missing_cells():
    """Seeds 0, 1, 2 with no item variation: the percentile interval is about [0, 2], as for the hierarchical one
    (3 draws all equal to the lowest seed have probability 1/27 > 2.5%). A missing cell is left out of the mean."""
    spread = np.array([[0.0] * 50, [1.0] * 50, [2.0] * 50])
    interval = crossed_bootstrap(spread, n_resamples=2000)
    assert interval.low == pytest.approx(0.0, abs=1e-9) and interval.high == pytest.approx(2.0, abs=1e-9)
    gap = spread.copy()
    gap[1, 0] = np.nan
    assert crossed_bootstrap(gap).estimate == pytest.approx(np.nanmean(gap))
    with pytest.raises(ValueError, match="at least 2 items"):
        crossed_bootstrap(np.ones((3, 1)))
    with pytest.raises(ValueError, match=r"all NaN: seed rows \[\], item columns \[1\]"):
        crossed_bootstrap(np.array([[1.0, np.nan], [2.0, np.nan]]))


def test_bootstrap_test_p_value_and_equivalence():
    estimate, draws = hierarchical_draws(np.mean, [(np.random.default_rng(s).normal(0.5, 0.1, 300),) for s in range(3)],
                                         n_resamples=500)
    far = bootstrap_test(estimate, draws, margin=0.05, n=3)
    assert far["p"] == pytest.approx(1 / 500) and not far["tost"]["equivalent"] and far["low"] > 0
    near = bootstrap_test(0.0, np.random.default_rng(1).normal(0, 0.01, 1000), margin=0.05, n=3)
    assert near["tost"]["equivalent"] and near["p"] > 0.5
    wide = bootstrap_test(0.0, np.random.default_rng(1).normal(0, 0.2, 1000), margin=0.05, n=3)
    assert not wide["tost"]["equivalent"] and wide["p"] > 0.5  # neither different nor equivalent: unresolved


def test_holm_matches_the_step_down_procedure_by_hand():
    # sorted p: 0.01 (x3 = 0.03), 0.02 (x2 = 0.04), 0.04 (x1 = 0.04, monotone) ; given order kept
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1 (0.5 x 2; 0.6 x 1 -> max(1.0, 0.6))
    with pytest.raises(ValueError, match="p-values"):
        holm([0.1, 1.5])


def test_tost_branches():
    # mean 0.01, sd 0.01, n 3: 90% interval 0.01 +- 2.92 * 0.01 / sqrt(3) = [-0.0069, 0.0269], inside +-0.05
    equivalent = tost([0.0, 0.01, 0.02], margin=0.05)
    assert equivalent["equivalent"] and equivalent["df"] == 2
    assert equivalent["high"] == pytest.approx(0.01 + 2.919986 * 0.01 / math.sqrt(3), rel=1e-5)
    # same values, margin 0.02: the interval crosses +0.02
    assert not tost([0.0, 0.01, 0.02], margin=0.02)["equivalent"]
    # a clear difference is never equivalent
    assert not tost([0.3, 0.31, 0.29], margin=0.05)["equivalent"]
    # one seed: no test
    assert not tost([0.0], margin=0.05)["equivalent"]
    # p is the larger of the two one-sided p-values (by hand with scipy)
    from scipy import stats
    v = np.array([0.0, 0.01, 0.02]); se = stats.sem(v)
    expected = max(stats.t.sf((v.mean() + 0.05) / se, 2), stats.t.cdf((v.mean() - 0.05) / se, 2))
    assert equivalent["p"] == pytest.approx(expected)
    with pytest.raises(ValueError, match="margin"):
        tost([0.1, 0.2], margin=0)


def test_t_test_p_is_scipys_and_handles_degenerate_seeds():
    from scipy import stats
    assert t_test_p([0.1, 0.2, 0.4]) == pytest.approx(stats.ttest_1samp([0.1, 0.2, 0.4], 0).pvalue)
    assert t_test_p([0.5]) == 1.0 and t_test_p([0.0, 0.0]) == 1.0


def test_values_without_spread_are_tested_by_their_signs_alone():
    """Every seed the same number (a coarse grid): the t statistic is infinite, so p was 0 and TOST held at any n.
    The exact sign test: 2 * 0.5 ** n two-sided, 0.5 ** n for each side of TOST; 5 seeds are the fewest for 0.05."""
    assert t_test_p([0.2, 0.2]) == 0.5 and t_test_p([0.2] * 3) == 0.25 and t_test_p([-120.0] * 5) == 0.0625
    assert t_test_p([0.2] * 6) == pytest.approx(0.03125)
    assert t_test_p([0.2, 0.2, 0.2, 0.2, 0.21]) < 0.001  # any spread: the t-test again
    three, five = tost([0.0] * 3, margin=120), tost([0.0] * 5, margin=120)
    assert not three["equivalent"] and three["p"] == 0.125
    assert five["equivalent"] and five["p"] == 0.03125 and five["low"] == five["high"] == 0.0
    assert not tost([130.0] * 5, margin=120)["equivalent"]
    # equal up to the last bit (0.3 - 0.1 is not 0.2; the mean of three 0.00137 is not 0.00137): still no spread
    assert t_test_p([0.3 - 0.1, 0.2, 0.2, 0.2, 0.2]) == 0.0625
    assert tost([0.00137] * 3, margin=0.0137)["p"] == 0.125
    assert mean_interval([0.3 - 0.1, 0.2, 0.2]).low == mean_interval([0.3 - 0.1, 0.2, 0.2]).high


def test_vectorised_spearman_is_scipys_and_gives_the_same_bootstrap_interval():
    """`spearman` over many resamples at once equals scipy.stats.spearmanr row by row (ties included; NaN for a
    constant row), and the vectorised bootstrap draws the same resamples as the one-at-a-time bootstrap."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=(40, 30)).astype(float)  # many ties
    y = x + rng.normal(size=(40, 30))
    x[7] = 2.0  # a constant row
    expected = [spearmanr(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(spearman(x, y, axis=-1), expected, atol=1e-12)
    assert np.isnan(spearman(x, y)[7])
    a, b = x[0], y[0]
    fast = spearman_interval(a, b, n_resamples=300, seed=5)
    slow = bootstrap_interval(lambda u, v: spearmanr(u, v).statistic, a, b, n_resamples=300, seed=5)
    assert (fast.estimate, fast.low, fast.high) == pytest.approx((slow.estimate, slow.low, slow.high), abs=1e-12)


def test_spearman_interval_equals_the_per_resample_spearmanr_loop_on_tied_data():
    """All resamples are ranked at once, yet the interval is that of a loop calling scipy.stats.spearmanr on each
    resample (the same item indices from the same seed, ties averaged), and the estimate is spearmanr's."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(8)
    x = rng.integers(0, 6, 80).astype(float)  # six distinct values: heavy ties
    y = np.round(x + rng.normal(0, 2, 80))  # ties too
    for n_resamples, seed in ((400, 3), (250, 0)):
        indices = np.random.default_rng(seed).integers(0, 80, (n_resamples, 80))  # scipy.stats.bootstrap's draws
        low, high = np.quantile([spearmanr(x[i], y[i]).statistic for i in indices], [0.025, 0.975])
        interval = spearman_interval(x, y, n_resamples=n_resamples, seed=seed)
        assert interval.estimate == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
        assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)


@pytest.mark.filterwarnings("ignore::scipy.stats.DegenerateDataWarning")  # the NaN number, on purpose
def test_bootstrap_intervals_are_each_numbers_bootstrap_interval_from_one_draw():
    """A statistic of several numbers: each interval is the one bootstrap_interval gives that number alone with the
    same seed, vectorised or not; a number undefined in some resamples gets NaN bounds without touching the others,
    and bootstrap_interval refuses a statistic of several numbers."""
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=25), rng.integers(0, 2, 25).astype(float)

    def several(a, b, axis=-1):
        spread = np.where(np.ptp(b, axis=axis) > 0, np.std(b, axis=axis), np.nan)  # NaN where b is constant
        return np.stack([np.mean(a, axis=axis), np.median(a - b, axis=axis), spread])

    both = bootstrap_intervals(several, x, y, n_resamples=300, seed=4, vectorized=True)
    assert both == bootstrap_intervals(several, x, y, n_resamples=300, seed=4)
    for k in (0, 1):
        alone = bootstrap_interval(lambda a, b, axis=-1: several(a, b, axis)[k], x, y, n_resamples=300, seed=4,
                                   vectorized=True)
        assert both[k] == alone and np.isfinite([alone.low, alone.high]).all()
    few = bootstrap_intervals(several, x[:3], y[:3], n_resamples=300, seed=4, vectorized=True)
    assert np.isnan([few[2].low, few[2].high]).all() and np.isfinite([few[0].low, few[0].high]).all()
    with pytest.raises(ValueError, match="one number"):
        bootstrap_interval(several, x, y)


def test_spearman_of_resamples_is_spearman_of_the_gathered_arrays_bit_for_bit():
    """Ranking a resample by counting the copies of each distinct value drawn gives exactly the numbers of ranking the
    gathered arrays: ties, a constant resample (NaN), a NaN score (NaN where drawn) and one item set alone."""
    rng = np.random.default_rng(9)
    y = rng.integers(0, 4, 30).astype(float)
    x1, x2 = rng.normal(size=30), rng.integers(0, 3, 30).astype(float)
    x2[5] = np.nan
    indices = rng.integers(0, 30, (200, 30))
    indices[0] = 7  # every item the same: constant
    rho = spearman_of_resamples(y, x1, x2)(indices)
    assert rho.shape == (2, 200) and np.isnan(rho[:, 0]).all()
    for got, x in zip(rho, (x1, x2)):
        np.testing.assert_array_equal(got, spearman(x[indices], y[indices], axis=-1))
    assert np.isnan(rho[1][(indices == 5).any(axis=1)]).all() and np.isfinite(rho[1][~(indices == 5).any(axis=1)][1:]).all()
    assert spearman_of_resamples(y, x1)(np.arange(30))[0] == spearman(x1, y)
    with pytest.raises(ValueError, match="equal length"):
        spearman_of_resamples(y, x1[:-1])


def test_hierarchical_draws_equal_the_one_call_per_seed_loop():
    """The draws are those of the plain loop (per resample: seeds with replacement, then one rng.integers call per
    drawn seed for its items, the statistic on each, their mean), bit for bit, for seeds of unequal sizes, with the
    statistic called row by row or vectorised over rows, NaN draws dropped alike."""
    def reference(statistic, groups, n_resamples, seed):
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(n_resamples):
            values = []
            for g in rng.integers(0, len(groups), len(groups)):
                items = rng.integers(0, len(groups[g][0]), len(groups[g][0]))
                values.append(statistic(*(a[items] for a in groups[g])))
            draws.append(np.mean(values))
        draws = np.array(draws)
        return draws[np.isfinite(draws)]

    rng = np.random.default_rng(4)
    groups = [(rng.integers(0, 3, n).astype(float), rng.normal(size=n)) for n in (4, 7, 30, 31, 5)]

    def mean_difference(a, b, axis=-1):
        return np.mean(a - b, axis=axis)

    for statistic in (mean_difference, spearman):  # spearman: NaN where a seed's drawn items tie
        expected = reference(statistic, groups, 300, 2)
        for vectorized in (False, True):
            estimate, draws = hierarchical_draws(statistic, groups, 300, seed=2, vectorized=vectorized)
            np.testing.assert_array_equal(draws, expected)
            assert estimate == np.mean([statistic(*g) for g in groups])
    assert reference(spearman, groups, 300, 2).size < 300  # some draws were NaN and dropped


def test_spearman_of_copies_equals_spearman_of_the_repeated_arrays():
    """Items given as copy counts (0 included: an item left out of the resample) give the rho of the repeated
    arrays, ties within and between items included, NaN where the copies leave one side constant."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(3, 40))
        x = rng.integers(0, 4, n).astype(float) if trial % 2 else rng.normal(size=n)  # ties, then none
        y = rng.integers(0, 6, n).astype(float)
        copies = rng.integers(0, 4, n)
        rho = spearman_of_copies(x, y)(copies)
        repeated_x, repeated_y = np.repeat(x, copies), np.repeat(y, copies)
        if len(set(repeated_x)) < 2 or len(set(repeated_y)) < 2:
            assert np.isnan(rho)
        else:
            assert rho == pytest.approx(spearmanr(repeated_x, repeated_y).statistic, abs=1e-12)
    assert np.isnan(spearman_of_copies([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])([0, 2, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a resample without any pair is NaN, not a RuntimeWarning
        assert np.isnan(spearman_of_copies([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])([0, 0, 0]))


def test_small_samples_and_the_stored_fields_of_an_interval():
    """Two values get a t-interval (df 1), not a point; a constant sample is a point that keeps its confidence,
    method and df; two seeds whose interval excludes 0 count as a difference."""
    from scipy import stats

    assert mean_interval([1.0, 2.0, 4.0]).method == "t"
    two = mean_interval([1.0, 2.0])
    low, high = stats.t.interval(0.95, 1, loc=1.5, scale=stats.sem([1.0, 2.0]))
    assert (two.low, two.high, two.df) == pytest.approx((low, high, 1))
    constant = mean_interval([2.0, 2.0, 2.0]).to_dict()
    assert constant == {"estimate": 2.0, "low": 2.0, "high": 2.0, "n": 3, "confidence": 0.95, "method": "t", "df": 2}
    assert Interval(1.0, 0.5, 1.5, n=2).excludes_zero() and Interval(-1.0, -1.5, -0.5, n=2).sign() == -1
    low90, high90 = stats.t.interval(0.9, 2, loc=1.0, scale=stats.sem([0.0, 1.0, 2.0]))
    paired = paired_difference([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], confidence=0.9)
    assert (paired.low, paired.high, paired.confidence) == pytest.approx((low90, high90, 0.9))


def test_bootstrap_interval_is_scipys_percentile_bootstrap_with_the_documented_defaults():
    from scipy import stats

    x, y = np.arange(12.0), np.arange(12.0) ** 1.5 + np.sin(np.arange(12.0)) * 20
    pearson = lambda a, b: np.corrcoef(a, b)[0, 1]  # noqa: E731
    expected = stats.bootstrap((x, y), pearson, paired=True, vectorized=False, confidence_level=0.9,
                               n_resamples=1000, method="percentile", rng=np.random.default_rng(0))
    interval = bootstrap_interval(pearson, x, y, confidence=0.9)
    assert (interval.low, interval.high) == pytest.approx(tuple(expected.confidence_interval))
    assert interval.confidence == 0.9 and interval.method == "bootstrap" and interval.n == 12
    assert bootstrap_interval(np.mean, np.array([1.0, 3.0])).n == 2  # two items are enough


def test_hierarchical_draws_defaults_determinism_and_every_item_drawn():
    groups = [(np.array([100.0, 0, 0, 0]),), (np.array([0.0, 0, 0, 100]),)]
    estimate, draws = hierarchical_draws(np.mean, groups)
    assert estimate == 25.0 and draws.size == 1000  # the documented default
    again = hierarchical_draws(np.mean, groups)[1]
    assert np.array_equal(draws, again) and np.array_equal(draws, hierarchical_draws(np.mean, groups, seed=0)[1])
    assert not np.array_equal(draws, hierarchical_draws(np.mean, groups, seed=1)[1])
    lone = hierarchical_draws(np.mean, [groups[0]], n_resamples=50)[1]
    assert lone.max() > 0  # item 0 (the only non-zero one) is drawn too
    assert hierarchical_draws(np.mean, [(np.array([1.0, 2.0]),)], n_resamples=5)[1].size == 5  # two items suffice
    interval = hierarchical_bootstrap(np.mean, groups, confidence=0.9)
    ordered = np.sort(draws)  # the 50th smallest and 50th largest of 1000: order statistics, not interpolated
    assert (interval.low, interval.high) == (ordered[49], ordered[950])
    assert interval.confidence == 0.9 and interval.n == 2 and interval.method == "hierarchical"
    continuous = [(np.random.default_rng(s).normal(size=30),) for s in range(3)]  # distinct draws: quantiles move
    for seed in (0, 3):
        ordered = np.sort(hierarchical_draws(np.mean, continuous, seed=seed)[1])
        expected = (ordered[24], ordered[975])
        interval = hierarchical_bootstrap(np.mean, continuous, seed=seed)  # default: 1000 resamples
        assert (interval.low, interval.high) == pytest.approx(tuple(expected), rel=1e-12)


def test_hierarchical_draws_refuse_a_statistic_undefined_in_more_than_half_the_resamples():
    def undefined_on(calls):  # NaN on the given calls of the statistic (call 0 is the estimate)
        count = iter(range(100))
        return lambda a: float("nan") if next(count) in calls else float(np.mean(a))

    groups = [(np.array([1.0, 2.0, 3.0]),)]
    half = hierarchical_draws(undefined_on({1, 2, 3, 4, 5}), groups, n_resamples=10)[1]
    assert half.size == 5  # exactly half defined: kept
    with pytest.raises(ValueError, match="undefined in 6 of 10"):
        hierarchical_draws(undefined_on({1, 2, 3, 4, 5, 6}), groups, n_resamples=10)


def test_bootstrap_test_by_hand_on_integer_draws():
    """Draws -10..90: 11 of 101 are <= 0, so p = 2 * 11 / 101; the 90% intervals are the 6th smallest and 6th
    largest draws (k = ceil(0.05 x 101) = 6: order statistics, not interpolated)."""
    draws = np.arange(-10, 91)
    result = bootstrap_test(3.0, draws, margin=0.5, n=3, confidence=0.9)
    assert result == {"estimate": 3.0, "low": -5.0, "high": 85.0,
                      "n": 3, "confidence": 0.9, "method": "hierarchical", "df": None, "p": 22 / 101, "margin": 0.5,
                      "tost": {"equivalent": False, "low": -5.0, "high": 85.0, "margin": 0.5}}
    assert bootstrap_test(3.0, -draws, margin=0.5, n=3)["p"] == 22 / 101  # the >= 0 side is the smaller one here
    assert bootstrap_test(0.0, np.zeros(10), margin=0.5, n=3)["p"] == 1.0  # capped at 1
    # the 90% interval must lie strictly inside the margins: an end exactly on a margin is not equivalent
    asymmetric = np.arange(-45.0, 41.0)  # 86 draws, k = 5: 90% interval [-41, 36]
    assert not bootstrap_test(0.0, asymmetric, margin=41.0, n=3)["tost"]["equivalent"]
    assert not bootstrap_test(0.0, -asymmetric, margin=41.0, n=3)["tost"]["equivalent"]
    assert bootstrap_test(0.0, asymmetric, margin=41.5, n=3)["tost"]["equivalent"]


def test_holm_caps_at_one_and_tost_edge_cases():
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert tost([0.1], margin=0.05) == {"equivalent": False, "p": 1.0, "margin": 0.05, "low": None, "high": None,
                                        "df": 0}
    two = tost([0.01, 0.02], margin=0.05)
    assert two["df"] == 1 and two["low"] is not None
    # constant differences (exact in binary, so the standard error is exactly 0)
    assert tost([0.25] * 5, margin=0.5) == {"equivalent": True, "p": 0.03125, "margin": 0.5, "low": 0.25,
                                            "high": 0.25, "df": 4}
    assert tost([0.5] * 5, margin=0.5)["p"] == 1.0  # on the margin is not inside it
    assert not tost([0.25] * 5, margin=0.5, alpha=0.03125)["equivalent"]  # p must be below alpha, not equal to it


# ---------------------------------------------------------------- every published number against an independent value
# Each row: a number the findings publish, and its value worked out without the code under test (nor the scipy call
# it wraps), the arithmetic beside it. Student's t has closed forms at 1 and 2 degrees of freedom:
#   df 2: quantile q_p = (2p - 1) / sqrt(2 p (1 - p)), two-sided tail P(|T| > t) = 1 - t / sqrt(2 + t^2);
#   df 1: quantile q_p = tan(pi (p - 1/2)),             two-sided tail P(|T| > t) = 1 - (2 / pi) atan(t).
# So q_0.975 = 0.95 / sqrt(0.04875) = 4.302653 (df 2), q_0.95 = 0.9 / sqrt(0.095) = 2.919986 (df 2) and
# q_0.975 = tan(0.475 pi) = 12.706205 (df 1). A df off by one moves every row: q_0.975 is 12.71 / 4.30 / 3.18 at
# df 1 / 2 / 3, and the two-sided p of t = sqrt(7) is 0.230 / 0.118 / 0.077.
Q975_DF2, Q95_DF2, Q975_DF1 = 4.302653, 2.919986, 12.706205
PUBLISHED = {
    # [0.1, 0.2, 0.4]: mean 7/30 = 0.233333; squared deviations (4 + 1 + 25) / 900 over n - 1 = 2: s^2 = 21/900,
    # se^2 = s^2 / 3 = 7/900, se = sqrt(7) / 30 = 0.0881917; half-width 4.302653 x 0.0881917 = 0.379458
    "t-interval low, n 3": (lambda: mean_interval([0.1, 0.2, 0.4]).low, 0.233333 - 0.379458),
    "t-interval high, n 3": (lambda: mean_interval([0.1, 0.2, 0.4]).high, 0.233333 + 0.379458),
    # [1, 2]: mean 1.5, s = sqrt(0.5), se = s / sqrt(2) = 0.5; half-width 12.706205 x 0.5 = 6.353102
    "t-interval high, n 2": (lambda: mean_interval([1.0, 2.0]).high, 1.5 + 6.353102),
    # [0, 1, 2] at 90%: mean 1, s 1, se 1 / sqrt(3) = 0.577350; half-width 2.919986 x 0.577350 = 1.685854
    "90% t-interval high, n 3": (lambda: mean_interval([0.0, 1.0, 2.0], confidence=0.9).high, 1 + 1.685854),
    # [2, 3, 4] - [1, 1, 1] = [1, 2, 3]: mean 2, se 1 / sqrt(3); half-width 4.302653 / 1.732051 = 2.484138
    "paired difference low": (lambda: paired_difference([2.0, 3.0, 4.0], [1.0, 1.0, 1.0]).low, 2 - 2.484138),
    # t = mean / se = (7/30) / (sqrt(7)/30) = sqrt(7); df 2: p = 1 - sqrt(7) / sqrt(9) = 1 - 0.881917
    "t-test p, df 2": (lambda: t_test_p([0.1, 0.2, 0.4]), 1 - 0.881917),
    # [1, 2, 3]: t = 2 / (1 / sqrt(3)) = sqrt(12); p = 1 - sqrt(12) / sqrt(14) = 1 - sqrt(6/7) = 1 - 0.925820
    "t-test p, df 2, [1, 2, 3]": (lambda: t_test_p([1.0, 2.0, 3.0]), 1 - 0.925820),
    # [1, 3]: mean 2, s sqrt(2), se 1, t = 2; df 1: p = 1 - (2 / pi) atan(2) = 1 - 0.636620 x 1.107149 = 0.295167
    "t-test p, df 1": (lambda: t_test_p([1.0, 3.0]), 0.295167),
    # TOST of [0, 0.01, 0.02] within +-0.05: mean 0.01, se 0.01 / sqrt(3); the upper test's t = -0.04 / se = -4 sqrt(3),
    # t^2 = 48; one-sided p = (1 - sqrt(48 / 50)) / 2 = (1 - 0.979796) / 2 (the lower test's t = 6 sqrt(3) is smaller)
    "TOST p, df 2": (lambda: tost([0.0, 0.01, 0.02], margin=0.05)["p"], (1 - 0.979796) / 2),
    # mirrored, [-0.02, -0.01, 0]: now the lower test (H0: mean <= -0.05) has t = 0.04 / se = 4 sqrt(3) and sets p
    "TOST p, df 2, lower test": (lambda: tost([-0.02, -0.01, 0.0], margin=0.05)["p"], (1 - 0.979796) / 2),
    # its 90% interval: 0.01 -+ 2.919986 x 0.01 / sqrt(3) = 0.01 -+ 0.016859
    "TOST 90% low": (lambda: tost([0.0, 0.01, 0.02], margin=0.05)["low"], 0.01 - 0.016859),
    "TOST 90% high": (lambda: tost([0.0, 0.01, 0.02], margin=0.05)["high"], 0.01 + 0.016859),
    # Holm, p sorted 0.005, 0.01, 0.03, 0.04: x4 = 0.02, x3 = 0.03, x2 = 0.06, x1 = 0.04 -> 0.06 (never below the step
    # before); back in the order given: 0.01 -> 0.03, 0.04 -> 0.06, 0.03 -> 0.06, 0.005 -> 0.02
    "Holm, four p-values": (lambda: holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02]),
    # ranks 1..5 against 2, 1, 4, 3, 5: d = -1, 1, -1, 1, 0, sum d^2 = 4; rho = 1 - 6 x 4 / (5 x 24) = 0.8
    "Spearman, no ties": (lambda: float(spearman(np.arange(1.0, 6.0), np.array([2.0, 1, 4, 3, 5]))), 0.8),
    # the same five pairs, once each
    "Spearman of copies": (lambda: float(spearman_of_copies(np.arange(1.0, 6.0), [2.0, 1, 4, 3, 5])(np.ones(5))), 0.8),
    # ties take their average rank: x = 1, 1, 2 -> ranks 1.5, 1.5, 3 (centred -0.5, -0.5, 1); y = 1, 2, 3 -> centred
    # -1, 0, 1; rho = (0.5 + 0 + 1) / sqrt(1.5 x 2) = 1.5 / sqrt(3) = 0.866025
    "Spearman, a tie": (lambda: float(spearman(np.array([1.0, 1, 2]), np.array([1.0, 2, 3]))), 0.866025),
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_every_published_statistic_equals_its_hand_worked_value(name):
    """Each interval end, p-value and correlation the findings publish equals the value worked out by hand from the
    textbook formula (not from the scipy call the code wraps), to the 6 digits written down."""
    compute, expected = PUBLISHED[name]
    assert compute() == pytest.approx(expected, abs=2e-6)


def test_hierarchical_bootstrap_variance_is_the_closed_form_of_its_two_levels():
    """Drawing seeds, then items within each drawn seed, gives draws whose mean is the mean over seeds and whose
    variance is (between-seed variance + mean within-seed variance of an item mean) / seeds, both with divisor n
    (the bootstrap's plug-in variances): here (0.25 + 1.25 / 4) / 2 = 0.28125."""
    groups = [(np.array([0.0, 1.0, 2.0, 3.0]),), (np.array([1.0, 2.0, 3.0, 4.0]),)]
    # group means 1.5 and 2.5: between-seed variance ((-0.5)^2 + 0.5^2) / 2 = 0.25; within each seed the items'
    # variance is (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, so a resampled mean of 4 items varies by 1.25 / 4
    estimate, draws = hierarchical_draws(np.mean, groups, n_resamples=5000)
    assert estimate == 2.0
    assert draws.mean() == pytest.approx(2.0, abs=0.03)  # standard error sqrt(0.28 / 5000) = 0.0075
    # the variance of 5000 draws scatters by about 2-4% (seeds 0-5 tried); a draw that ignored the seed level would
    # give 0.156, one that drew 3 of the 4 items a mean near 1.5 or 2.5
    assert draws.var() == pytest.approx((0.25 + 1.25 / 4) / 2, rel=0.1)
    one = hierarchical_draws(np.mean, groups[:1], n_resamples=5000)[1]  # one seed: the items' bootstrap alone
    assert one.var() == pytest.approx(1.25 / 4, rel=0.1)


def test_group_permutation_p_has_its_known_answers():
    """Blocks of close items: the observed labelling is the only one as good, so p is its floor 1 / (n + 1); equal
    distances: every labelling ties, p = 1; labels that do not match the blocks: no evidence, a large p."""
    groups = np.repeat(np.arange(3), 4)
    blocks = np.where(groups[:, None] == groups[None, :], 0.1, 1.0)
    np.fill_diagonal(blocks, 0)
    assert group_permutation_p(blocks, groups, n_permutations=999) == pytest.approx(1 / 1000)
    assert group_permutation_p(np.ones((12, 12)), groups) == 1.0
    assert group_permutation_p(blocks, np.tile(np.arange(3), 4)) > 0.5  # each group takes one item of each block
    with pytest.raises(ValueError, match="square distance matrix and one group per item"):
        group_permutation_p(blocks[:3], groups)


@pytest.mark.parametrize("at_or_below_0", [24, 25, 26])
def test_a_bootstrap_interval_excludes_0_exactly_when_its_p_is_below_alpha(at_or_below_0):
    """Interpolated quantiles parted from the p at the boundary: 25 of 1000 draws at or below 0 gave p = 0.05 (not
    below 0.05) beside a lower end above 0. Order statistics agree with the p on both sides."""
    draws = np.concatenate([np.linspace(-1, -0.01, at_or_below_0), np.linspace(0.01, 1, 1000 - at_or_below_0)])
    for sign in (1, -1):  # the lower end, then the upper end of the mirrored draws
        test = bootstrap_test(0.5 * sign, sign * draws, margin=0.05, n=5)
        excludes = test["low"] > 0 or test["high"] < 0
        assert excludes == (test["p"] < 0.05), (at_or_below_0, sign, test["p"], test["low"], test["high"])
    assert (test["p"] < 0.05) == (at_or_below_0 < 25)
