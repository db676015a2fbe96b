"""`hf_minattn.experiments.statistics` on hand-made results: which seeds are paired, which key is read, the rounding
results.json stores, and the verdict of a stored comparison. Known answers come from scipy (t-intervals) or by hand."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from hf_minattn.experiments import statistics as st


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


def t_interval(values):
    values = np.asarray(values, dtype=float)
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=scipy_stats.sem(values))
    return values.mean(), low, high


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


def test_a_tested_comparison_stores_rounded_p_values_and_tost():
    differences = [0.101234567, 0.1301234567, 0.0871234567]
    d = st.tested(differences, margin=0.05)
    assert d["p"] == round(st.t_test_p(np.array(differences)), 4) and d["p_holm"] == d["p"]
    raw = st.tost(np.array(differences), 0.05)
    assert all(d["tost"][k] == (round(v, 4) if isinstance(v, float) else v) for k, v in raw.items())
    assert any(isinstance(v, float) and round(v, 4) != v for v in raw.values())  # so the rounding is seen


def test_one_seed_is_tested_without_rounding_what_is_not_a_number():
    d = st.tested([0.1])
    assert d["tost"]["equivalent"] is False and d["tost"]["low"] is None and d["verdict"] == "unresolved"


def test_decide_needs_p_below_alpha_and_a_missing_tost_is_unresolved():
    d = {"estimate": 0.5, "low": 0.2, "high": 0.8, "n": 3}
    assert st.decide(dict(d), 0.01)["verdict"] == "higher"
    assert st.decide(dict(d), st.ALPHA)["verdict"] == "unresolved"  # p = 0.05 is not below 0.05
    assert st.decide({**d, "estimate": -0.5, "low": -0.8, "high": -0.2}, 0.01)["verdict"] == "lower"
    assert st.decide(dict(d), 0.123456)["p_holm"] == 0.1235
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
    assert diff["difference"][1]["estimate"] == pytest.approx(0.25, abs=1e-4)
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
