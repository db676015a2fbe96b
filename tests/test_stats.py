"""Intervals on synthetic data with a known answer."""

import math

import numpy as np
import pytest

from hf_minattn.stats import Interval, bootstrap_interval, mean_interval, paired_difference, spearman_interval


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
    assert d == {"estimate": 0.1235, "low": 0.1, "high": 0.2, "n": 3, "confidence": 0.95, "method": "t"}
