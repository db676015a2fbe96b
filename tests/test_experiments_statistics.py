"""`hf_minattn.experiments.statistics` on hand-made results: which seeds are paired, which key is read, the rounding
results.json stores, and the verdict of a stored comparison. Known answers are worked out by hand, the arithmetic
beside them."""

import copy

import numpy as np
import pytest

from hf_minattn.experiments import statistics as st
from hf_minattn.stats import holm


def results(variants: dict, floors=(7.0, 7.1, 7.2, 7.3)) -> dict:
    """`results["variants"]` as run_experiments stores it: {variant: {seed: loss}} (accuracy = loss / 10); a seed's
    curve has steps 10, 20 (and 30 for seed 0 only) with gain = floor - loss at 20, 0.1 less at 10; floors per seed."""
    out = {}
    for name, losses in variants.items():
        rows = []
        for seed, loss in losses.items():
            steps = [10, 20, 30] if seed == 0 else [10, 20]
            gains = [floors[seed] - loss - 0.1, floors[seed] - loss] + ([0.5] if seed == 0 else [])
            rows.append({"seed": seed, "eval_loss": loss, "accuracy": loss / 10, "unigram_loss": floors[seed],
                         "curve": {"steps": steps, "gain_over_unigram": gains}})
        out[name] = {"seeds": rows}
    return {"variants": out}


# 95% t-intervals worked out by hand (not by the scipy call hf_minattn.stats makes). Three seeds give df 2, where
# Student's t has the closed-form quantile q_p = (2p - 1) / sqrt(2 p (1 - p)): q_0.975 = 0.95 / sqrt(0.04875) = 4.302653
# (3.182446 at df 3, 12.706205 at df 1). Two seeds give df 1, where q_p = tan(pi (p - 1/2)): q_0.975 = 12.706205.
# {values: (mean, low, high)}:
HAND_WORKED = {
    # mean 1.4 / 3 = 0.466667; squared deviations (1 + 25 + 16) / 900, over n - 1 = 2: s^2 = 21/900; se^2 = 7/900,
    # se = sqrt(7) / 30 = 0.0881917; half-width 4.302653 x 0.0881917 = 0.379458
    (0.5, 0.3, 0.6): (0.466667, 0.466667 - 0.379458, 0.466667 + 0.379458),
    # mean 2.9 / 3 = 0.966667; squared deviations (1 + 1 + 4) / 900, s^2 = 3/900, se^2 = 1/900, se = 1/30;
    # half-width 4.302653 / 30 = 0.143422
    (1.0, 1.0, 0.9): (0.966667, 0.966667 - 0.143422, 0.966667 + 0.143422),
    # mean 0.25; s = sqrt(2 x 0.05^2) = 0.0707107, se = s / sqrt(2) = 0.05; half-width 12.706205 x 0.05 = 0.635310
    (0.2, 0.3): (0.25, 0.25 - 0.635310, 0.25 + 0.635310),
    # mean 7/30 = 0.233333; squared deviations (16 + 1 + 25) / 900: se = sqrt(7) / 30 as above, half-width 0.379458
    (0.1, 0.2, 0.4): (0.233333, 0.233333 - 0.379458, 0.233333 + 0.379458),
}


def t_interval(values):
    """(mean, low, high) of the 95% t-interval of `values`, from the hand-worked table above."""
    return HAND_WORKED[tuple(round(v, 10) for v in values)]


def test_differences_pair_only_the_seeds_both_variants_have_and_read_the_key_asked():
    r = results({"full": {0: 6.0, 1: 6.1, 2: 6.3}, "other": {0: 6.5, 1: 6.4, 2: 6.9, 3: 9.0}})
    d = st.difference(r, "other", "full")
    estimate, low, high = t_interval([0.5, 0.3, 0.6])  # seed 3 has no partner
    assert d["n"] == 3 and d["estimate"] == pytest.approx(estimate, abs=1e-4)
    assert (d["low"], d["high"]) == pytest.approx((low, high), abs=1e-4)
    accuracy = st.difference(r, "other", "full", key="accuracy")
    assert accuracy["estimate"] == pytest.approx(estimate / 10, abs=1e-4)
    assert st.difference(r, "other", "full", margin=1.0)["margin"] == 1.0  # the margin reaches the TOST
    assert st.difference(r, "other", "full", margin=1.0)["tost"]["equivalent"] != d["tost"]["equivalent"]
    floor = st.difference(r, "unigram", "full")  # the floor of each seed, minus the loss
    assert floor["estimate"] == pytest.approx(np.mean([1.0, 1.0, 0.9]), abs=1e-4)
    assert st.mean(r, "full", key="accuracy")["estimate"] == pytest.approx(np.mean([0.6, 0.61, 0.63]), abs=1e-4)


def test_a_tested_comparison_stores_exact_p_values_and_tost():
    differences = [0.101234567, 0.1301234567, 0.0871234567]
    d = st.tested(differences, margin=0.05)
    assert d["p"] == st.t_test_p(np.array(differences)) and d["p_holm"] == d["p"]
    assert round(d["p"], 4) != d["p"]  # so a rounding would be seen
    assert d["tost"] == st.tost(np.array(differences), 0.05)


def test_the_verdict_reads_the_exact_interval_not_a_rounded_one():
    """An interval whose low end is 0.00003 excludes 0 (and its p is just under 0.05): "higher". Rounded to 4
    decimals first, its low end would read 0.0 and the verdict "unresolved"."""
    from scipy.stats import t

    spread = np.array([-1.0, 0.0, 1.0])  # mean 0, standard error 1 / sqrt(3)
    half_width = t.ppf(0.975, df=2) / np.sqrt(3)
    d = st.tested(spread + half_width + 3e-5, margin=0.05)
    assert 0 < d["low"] < 5e-5 and d["p"] < st.ALPHA and d["verdict"] == "higher"


def test_holm_adjusts_the_exact_p_values_not_rounded_ones():
    """The family is adjusted from the stored, unrounded p-values."""
    family = st.holm_family({"a": st.tested([0.1, 0.2, 0.4]), "b": st.tested([1.0, 2.0, 3.0]),
                             "c": st.tested([0.30, 0.31, 0.35])})
    raw = [family[name]["p"] for name in "abc"]
    assert [family[name]["p_holm"] for name in "abc"] == list(st.holm(raw))


def test_one_seed_is_tested_without_rounding_what_is_not_a_number():
    d = st.tested([0.1])
    assert d["tost"]["equivalent"] is False and d["tost"]["low"] is None and d["verdict"] == "unresolved"


def test_decide_needs_p_below_alpha_and_a_missing_tost_is_unresolved():
    d = {"estimate": 0.5, "low": 0.2, "high": 0.8, "n": 3}
    assert st.decide(dict(d), 0.01)["verdict"] == "higher"
    assert st.decide(dict(d), st.ALPHA)["verdict"] == "unresolved"  # p = 0.05 is not below 0.05
    assert st.decide({**d, "estimate": -0.5, "low": -0.8, "high": -0.2}, 0.01)["verdict"] == "lower"
    assert st.decide(dict(d), 0.123456)["p_holm"] == 0.123456
    assert st.decide({**d, "tost": {"equivalent": True}}, 0.5)["verdict"] == "equivalent"


def test_holm_family_skips_missing_comparisons():
    family = st.holm_family({"a": st.tested([0.5, 0.6, 0.55]), "gone": None, "b": st.tested([0.01, -0.02, 0.5])})
    assert family["gone"] is None and family["a"]["family_size"] == family["b"]["family_size"] == 2


def test_share_of_gain_pairs_seeds_and_needs_the_reference_below_the_floor():
    r = results({"full": {0: 6.0, 1: 6.1, 2: 6.2}, "half": {0: 6.5, 1: 6.6, 2: 6.7, 3: 5.0}})
    share = st.share_of_gain(r, "half")  # gains 1.0, 1.0, 1.0 and 0.5, 0.5, 0.5: 50% at each seed
    assert share["estimate"] == 50.0 and share["n"] == 3  # seed 3 has no reference
    missing = results({"full": {0: 6.0, 1: 6.1, 2: 6.2}, "half": {0: 6.5, 1: 6.6}})  # no seed 2 for the variant
    assert st.share_of_gain(missing, "half")["n"] == 2
    r = results({"full": {0: 6.0, 1: 6.1, 2: 7.2}, "half": {0: 6.5, 1: 6.6, 2: 6.7}})  # seed 2's reference at the floor
    assert st.share_of_gain(r, "half") is None
    r = results({"full": {0: 6.0, 1: 6.1, 2: 6.2}, "third": {0: 6.666666, 1: 6.766666, 2: 6.866666}})
    assert st.share_of_gain(r, "third")["estimate"] == 33.33  # two decimals of a percentage


def test_the_gain_curve_is_averaged_at_the_steps_every_seed_evaluated():
    r = results({"full": {0: 6.0, 1: 6.1, 2: 6.3}})
    r["variants"]["full"]["seeds"][1]["curve"]["gain_over_unigram"][0] = None  # seed 1 missed step 10
    gap = st.curve_gap(r, "full")
    assert gap["steps"] == [10, 20] and gap["gain"][0] is None  # step 30: seed 0 only
    estimate, low, high = t_interval([1.0, 1.0, 0.9])
    assert gap["gain"][1]["estimate"] == pytest.approx(estimate, abs=1e-4)
    assert gap["gain"][1]["high"] == pytest.approx(high, abs=1e-4)
    r["variants"]["none"] = {"seeds": [{"seed": 0, "eval_loss": 6.0}]}
    assert st.curve_gap(r, "none") == {"steps": [], "gain": []}


def test_the_curve_difference_pairs_seeds_and_skips_missing_values():
    r = results({"full": {0: 6.0, 1: 6.1, 2: 6.3}, "frozen": {0: 6.2, 1: 6.4, 3: 6.0}})
    diff = st.curve_difference(r, "full", "frozen")
    assert diff["steps"] == [10, 20] and diff["difference"][1]["n"] == 2  # seeds 0 and 1
    estimate, low, high = t_interval([0.2, 0.3])  # gains 1.0 - 0.8 at seed 0, 1.0 - 0.7 at seed 1: df 1
    assert (diff["difference"][1]["estimate"], diff["difference"][1]["low"], diff["difference"][1]["high"]) == \
        pytest.approx((estimate, low, high), abs=1e-4)
    r["variants"]["frozen"]["seeds"][0]["curve"]["gain_over_unigram"][0] = None
    assert st.curve_difference(r, "full", "frozen")["difference"][0] is None
    r["variants"]["none"] = {"seeds": [{"seed": 0, "eval_loss": 6.0}]}
    assert st.curve_difference(r, "full", "none") == {"steps": [], "difference": []}


def test_sign_and_verdict_of_stored_comparisons_and_bare_intervals():
    assert [st.sign({"verdict": v, "estimate": 9, "low": 8, "high": 10, "n": 3}) for v in st.VERDICTS] == [1, -1, 0, 0]
    assert st.sign({"estimate": 1, "low": 0.5, "high": 1.5, "n": 3}) == 1
    assert st.sign({"estimate": -1, "low": -1.5, "high": -0.5, "n": 3}) == -1
    assert st.sign({"estimate": 1, "low": -0.5, "high": 1.5, "n": 3}) == 0 and st.sign(None) == 0
    assert st.verdict(None) == "unresolved" and st.verdict({"verdict": "equivalent"}) == "equivalent"
    assert [st.verdict({"estimate": e, "low": e - 0.5, "high": e + 0.5, "n": 3}) for e in (1, -1, 0)] == \
        ["higher", "lower", "unresolved"]


def test_stored_comparisons_hold_the_hand_worked_interval_p_values_and_holm():
    """A tested comparison stores the t-interval, df and two-sided p worked out by hand; a family of two stores the
    Holm-adjusted p of both; a share of gain stores its interval over seeds."""
    d = st.tested([0.1, 0.2, 0.4], margin=0.05)
    estimate, low, high = t_interval([0.1, 0.2, 0.4])
    assert (d["estimate"], d["low"], d["high"], d["df"], d["n"]) == pytest.approx((estimate, low, high, 2, 3), abs=1e-4)
    # t = mean / se = (7/30) / (sqrt(7)/30) = sqrt(7); at df 2 the two-sided p is 1 - t / sqrt(2 + t^2)
    # = 1 - sqrt(7) / 3 = 0.118083 (0.2301 at df 1, 0.0773 at df 3)
    assert d["p"] == pytest.approx(1 - np.sqrt(7) / 3, abs=1e-12)
    # TOST within +-0.05: the upper test's t = (7/30 - 0.05) / se = (11/60) / (sqrt(7)/30), t^2 = 121/28; its one-sided
    # p = (1 + t / sqrt(2 + t^2)) / 2 = (1 + sqrt(121/177)) / 2 = (1 + 0.826811) / 2 = 0.913406 -> 0.9134
    assert d["tost"]["p"] == pytest.approx((1 + np.sqrt(121 / 177)) / 2, abs=1e-12) and d["tost"]["df"] == 2 and d["tost"]["equivalent"] is False
    # [1, 2, 3]: t = 2 / (1 / sqrt(3)) = sqrt(12), p = 1 - sqrt(12 / 14) = 0.074180 -> 0.0742
    family = st.holm_family({"a": d, "b": st.tested([1.0, 2.0, 3.0])})
    assert family["b"]["p"] == pytest.approx(1 - np.sqrt(12 / 14), abs=1e-12)
    # Holm: 0.074180 x 2 = 0.148360; then 0.118083 x 1, but never below the step before: 0.148360 for both
    assert family["a"]["p_holm"] == family["b"]["p_holm"] == pytest.approx(2 * (1 - np.sqrt(12 / 14)), abs=1e-12)
    # shares 40, 50, 60 % (gains 0.4, 0.5, 0.6 of 1.0 nat): mean 50, s 10, se 10 / sqrt(3) = 5.773503;
    # half-width 4.302653 x 5.773503 = 24.841377 -> [25.16, 74.84]
    r = results({"full": {0: 6.0, 1: 6.1, 2: 6.2}, "part": {0: 6.6, 1: 6.6, 2: 6.6}}, floors=(7.0, 7.1, 7.2))
    share = st.share_of_gain(r, "part")
    assert (share["estimate"], share["low"], share["high"], share["df"]) == (50.0, 25.16, 74.84, 2)


def test_row_drift_bins_rows_by_training_count_with_their_median_distance_worked_by_hand():
    """Q1's table: six rows with counts on each side of the bin edges (0 | 1-9 | 10-99 | 100-999 | 1000+) and known
    distances ||e_final - e_init|| (3-4-5 triangles), a row never seen as input, and the unseen rows' check."""
    from scipy.stats import spearmanr

    from hf_minattn.experiments.evaluation import row_drift

    initial = np.zeros((7, 2))
    trained = np.array([[0, 0], [3, 4], [6, 8], [0, 1], [0, 3], [0, 2], [0, 0.5]])  # distances 0, 5, 10, 1, 3, 2, 0.5
    counts = np.array([0, 1, 9, 10, 999, 1000, 0])
    ever_input = np.array([False, True, True, True, True, True, True])
    result = row_drift(trained, initial, counts, ever_input)
    by_bin = [(b["min_count"], b["rows"], b["median_drift"], b["moved"]) for b in result["bins"]]
    assert by_bin == [(0, 2, 0.25, 1), (1, 2, 7.5, 2), (10, 1, 1.0, 1), (100, 1, 3.0, 1), (1000, 1, 2.0, 1)]
    assert result["not_in_text"] == {"rows": 2, "moved": 1, "max_drift": 0.5}
    assert result["never_input"] == {"rows": 1, "moved": 0, "max_drift": 0.0}
    assert result["rows"] == 7 and result["initial_row_norm"] == 0.0
    # the seen rows' counts 1, 9, 10, 999, 1000 against distances 5, 10, 1, 3, 2: scipy's Spearman
    assert result["spearman_drift_vs_count"]["estimate"] == pytest.approx(spearmanr([1, 9, 10, 999, 1000],
                                                                                  [5, 10, 1, 3, 2]).statistic)


def test_a_crossed_comparison_needs_the_seed_level_t_test_to_agree():
    """Five seeds whose means over 40 items are 0.5, 0.4, -0.2, 0.6, 0.2, with little spread within a seed: the
    crossed bootstrap over so few seeds excludes 0, the t-test of the seeds' means (df 4) does not, so the stored p
    is the t-test's and the verdict is not resolved. With the seeds agreeing, both levels call it."""
    rng = np.random.default_rng(0)
    items = 0.01 * rng.standard_normal((5, 40))
    spread = np.array([0.5, 0.4, -0.2, 0.6, 0.2])[:, None] + items  # (seeds, items)
    d = st.crossed_tested(spread, margin=0.05, n_resamples=2000)
    by_t = st.tested(spread.mean(axis=1), margin=0.05)
    assert d["low"] > 0 and d["method"] == "crossed"  # the bootstrap alone would call it
    assert d["seeds"]["low"] == pytest.approx(by_t["low"]) and d["seeds"]["low"] < 0 and d["seeds"]["df"] == 4
    assert d["p"] == pytest.approx(by_t["p"]) and d["verdict"] == "unresolved"
    agreeing = st.crossed_tested(np.array([0.5, 0.45, 0.55, 0.5, 0.48])[:, None] + items, 0.05, 2000)
    assert agreeing["verdict"] == "higher" and agreeing["seeds"]["low"] > 0
    one_model = st.crossed_tested(spread[:1], 0.05, 500, n=40)  # items only: no seed level
    assert "seeds" not in one_model and one_model["n"] == 40


def crossed_with_seeds(seed_p, low=0.01, combined_p=0.2):
    """A crossed comparison (combined p `combined_p`, unresolved) whose stored seed level has p `seed_p`."""
    return {"estimate": 0.05, "low": -0.02, "high": 0.12, "n": 5, "method": "crossed", "p": combined_p,
            "p_holm": combined_p, "family_size": 3, "margin": 0.05, "verdict": "unresolved",
            "tost": {"equivalent": False}, "seeds": {"estimate": 0.05, "low": low, "high": 0.09, "n": 5, "df": 4,
                                                     "p": seed_p, "tost": {"equivalent": False}}}


@pytest.mark.parametrize("p_b, verdict_b", [(0.024, "higher"), (0.026, "unresolved")])
def test_the_seed_levels_are_decided_by_holm_over_the_family_without_changing_it(p_b, verdict_b):
    """Seed-level p-values 0.01 and p_b, and a comparison without a seed level (p 0.5, counted as it is): Holm
    takes p_b to 2 x p_b, a difference below 0.025 only. The stored family is left as it was."""
    family = {"a": crossed_with_seeds(0.01), "b": crossed_with_seeds(p_b),
              "c": {"estimate": 0.0, "low": -0.1, "high": 0.1, "n": 5, "p": 0.5, "p_holm": 0.5, "verdict": "unresolved",
                    "tost": {"equivalent": False}, "margin": 0.05}}
    before = copy.deepcopy(family)
    levels = st.seed_levels(family)
    assert family == before and set(levels) == {"a", "b"}
    assert levels["a"]["verdict"] == "higher" and levels["b"]["verdict"] == verdict_b
    assert levels["b"]["p"] == p_b and "p_holm" not in levels["b"] and levels["b"]["family_size"] == 3
    assert levels["b"]["level"] == "seeds" and levels["b"]["margin"] == 0.05
    assert st.seed_levels({"c": family["c"]}) == {}


def test_a_family_counts_the_tests_stored_elsewhere():
    family = {"a": st.tested([0.1, 0.11, 0.12]), "b": st.tested([0.1, 0.2, 0.15])}
    p = [family["a"]["p"], family["b"]["p"]]
    st.holm_family(family, [0.001])
    assert family["a"]["family_size"] == 3 and [family[k]["p_holm"] for k in "ab"] == holm(p + [0.001])[:2]
