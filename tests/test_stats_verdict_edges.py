"""Edges of the verdicts: a comparison the protocol gives no margin, one seed behind a crossed comparison, variants
that lack a seed (pairs by seed id, not by position), a percentile interval on the other side of its estimate, and
equal values over a few seeds (a zero-width interval against the sign test that gives their p)."""

import numpy as np
import pytest

from hf_minattn.experiments import statistics as st
from hf_minattn.experiments.findings_format import compared, verdict_cell
from hf_minattn.experiments.mixing import mixing_answers
from hf_minattn.experiments.probe_answers import circuits_answers, heads_answers, senses_answers
from hf_minattn.experiments.word_pairs import compare
from hf_minattn.stats import Interval, mean_interval, t_test_p

from helpers_benchmarks import Bench

SMALL = [0.010, -0.004, 0.021, 0.002, 0.013]  # inside the loss margin, interval across 0


# 1. No margin: no TOST, never "equivalent"

def test_a_comparison_without_a_margin_has_no_tost_and_is_never_equivalent():
    d = st.tested(SMALL, margin=None)
    assert d["margin"] is None and d["tost"] is None and d["verdict"] == "unresolved"
    assert st.tested(SMALL)["verdict"] == "equivalent"  # the loss margin would have called it so
    assert st.tested([0.3, 0.31, 0.29, 0.32], margin=None)["verdict"] == "higher"
    assert st.holm_family({"a": d})["a"]["verdict"] == "unresolved"
    assert verdict_cell(d, tost_interval=True) == "not resolved"
    phrase = compared(d, "worse", "the same", "better")
    assert phrase == "not resolved at this scale (no difference)" and "±" not in phrase


def heads_probe(js_full, js_untrained):
    def row(js):
        return {"heads": {"within_layer_js": js, "stats": {"entropy": [[1.0]]}, "uniform_entropy": 2.0,
                          "num_heads": 1, "roles": [["none"] for _ in js], "role_min_mass": 0.3}}

    return {"by_seed": {"full": {s: row(js) for s, js in js_full.items()},
                        "untrained": {s: row(js) for s, js in js_untrained.items()}}}


def test_q4_layer_rows_are_tested_without_a_margin():
    """PROTOCOL.md, section 5 gives Q4's layers "-": a small difference is unresolved, not equivalent in nats."""
    seeds = range(5)
    q4 = heads_answers(heads_probe({s: [0.5 + SMALL[s]] for s in seeds}, {s: [0.5] for s in seeds}))
    layer = q4["js_trained_minus_init"]["layer_0"]
    assert layer["margin"] is None and layer["tost"] is None and layer["verdict"] == "unresolved"


def test_q4_layer_rows_pair_the_seeds_by_id():
    q4 = heads_answers(heads_probe({3: [0.9], 4: [0.5], 5: [0.6]}, {4: [0.4], 5: [0.45]}))
    layer = q4["js_trained_minus_init"]["layer_0"]
    assert layer["n"] == 2 and layer["estimate"] == pytest.approx((0.1 + 0.15) / 2)


# 2. One seed behind a crossed comparison: neither a difference nor equivalence

def test_a_crossed_comparison_of_one_seed_is_not_resolved_either_way():
    rng = np.random.default_rng(0)
    near = rng.normal(0.005, 0.02, (1, 30))
    d = st.crossed_tested(near, 0.05, n_resamples=300)
    assert d["n"] == 1 and d["tost"]["equivalent"] is False and d["verdict"] == "unresolved"
    # one model whose items are its sample (the reference encoder: n counts the items) can still be equivalent
    ref = st.crossed_tested(near, 0.05, n_resamples=300, n=30)
    assert ref["tost"]["equivalent"] and ref["verdict"] == "equivalent"


def test_a_word_pair_comparison_of_one_seed_is_not_equivalent_but_the_reference_items_can_be():
    rng = np.random.default_rng(1)
    human = rng.normal(size=80)
    keys = ("wordsim353_read",)
    cosines = {"a": {0: {k: human + rng.normal(0, 0.05, 80) for k in keys}},
               "b": {0: {k: human + rng.normal(0, 0.05, 80) for k in keys}}}
    family = compare(cosines, Bench(human), {"same": ("a", "b", "wordsim353_read")}, (0,), n_resamples=300)
    d = family["same"]
    assert d["n"] == 1 and d["verdict"] == "unresolved"
    d["n"] = d["pairs"]  # what probing.reference_word_pairs does: one model, its pairs are the sample
    assert st.holm_family(family)["same"]["verdict"] == "equivalent"


# 3. Variants that lack a seed: paired by seed id

def sense(acc, by_word=None):
    row = {"layers": [4], "accuracy": [acc], "raw_accuracy": [acc], "chance": 0.5, "position_accuracy": 0.55,
           "words": ["bank", "plant"], "occurrences": 44}
    if by_word is not None:
        row["accuracy_by_word"] = {w: [a] for w, a in zip(row["words"], by_word)}
    return {"sense_accuracy": row}


def test_senses_pair_the_untrained_model_by_seed_id():
    full = {3: sense(0.80, (0.8, 0.8)), 4: sense(0.60, (0.6, 0.6)), 5: sense(0.70, (0.7, 0.7))}
    untrained = {4: sense(0.58, (0.58, 0.58)), 5: sense(0.69, (0.69, 0.69))}  # seed 3's untrained probe missing
    a = senses_answers({"by_seed": {"full": full, "untrained": untrained}}, n_resamples=200)
    d = a["comparisons"]["vs_untrained"]
    assert d["n"] == 2 and d["estimate"] == pytest.approx(((0.60 - 0.58) + (0.70 - 0.69)) / 2)
    items = a["comparisons_items"]["vs_untrained"]
    assert items["n"] == 2 and items["estimate"] == pytest.approx(0.015)
    assert a["comparisons"]["vs_chance"]["n"] == a["comparisons_items"]["vs_chance"]["n"] == 3  # every full seed


def test_circuits_pair_the_model_started_at_i_by_seed_id():
    def row(identity):
        return {"identity": [identity], "num_heads": 1}

    circuits = {"full": {3: row(0.9), 4: row(0.5), 5: row(0.6)},
                "qkv_from_identity": {4: row(0.45), 5: row(0.5), 6: row(0.1)}}
    d = circuits_answers({"circuits": circuits})["full_minus_from_identity"]
    assert d["n"] == 2 and d["estimate"] == pytest.approx((0.05 + 0.1) / 2)


def test_mixing_pairs_the_untrained_model_by_seed_id():
    def columns(measured):
        shares = np.full(10, measured) + np.linspace(0, 0.01, 10)
        return {"measured": shares.tolist(), "half": shares.tolist(), "uniform_measured": [0.3] * 10,
                "uniform_half": [0.3] * 10, "residual_weight": [0.9]}

    mixing = {"sentences": 10, "full": {3: columns(0.9), 4: columns(0.5), 5: columns(0.6)},
              "untrained": {4: columns(0.45), 5: columns(0.5)}}
    d = mixing_answers(mixing, n_resamples=200)["comparisons"]["full_minus_untrained_measured"]
    assert d["n"] == 2 and d["estimate"] == pytest.approx((0.05 + 0.1) / 2)


def test_common_seeds_are_the_sorted_intersection():
    assert st.common_seeds({5: 0, 3: 0, 4: 0}, {4: 1, 5: 1, 6: 1}) == [4, 5]
    assert st.common_seeds({1: 0}, {2: 0}) == [] and st.common_seeds() == []


# 4. The direction from the interval's side; a non-finite estimate refused

def test_the_direction_is_the_side_of_0_the_interval_lies_on():
    above = {"estimate": -0.01, "low": 0.105, "high": 0.295, "n": 5, "method": "crossed"}
    assert st.decide(dict(above), 0.001)["verdict"] == "higher"
    below = {"estimate": 0.01, "low": -0.295, "high": -0.105, "n": 5, "method": "crossed"}
    assert st.decide(dict(below), 0.001)["verdict"] == "lower"


@pytest.mark.parametrize("estimate", [float("nan"), float("inf")])
def test_a_non_finite_estimate_is_refused(estimate):
    with pytest.raises(ValueError, match=str(estimate)):
        st.decide({"estimate": estimate, "low": 0.105, "high": 0.295, "n": 5}, 0.001)


# 5. Equal values over seeds: the interval agrees with the sign test of their p

@pytest.mark.parametrize("n", range(2, 9))
def test_a_zero_width_interval_excludes_0_where_the_sign_test_rejects(n):
    values = [20.0] * n
    interval = mean_interval(values)
    assert interval.low == interval.high == 20.0
    assert interval.excludes_zero() == (t_test_p(values) < 0.05) == (n >= 6)
    assert interval.sign() == (1 if n >= 6 else 0)
    assert mean_interval([-20.0] * n).sign() == (-1 if n >= 6 else 0)
    assert st.verdict(interval.to_dict()) == ("higher" if n >= 6 else "unresolved")
    assert st.tested(values)["verdict"] == ("higher" if n >= 6 else "unresolved")


def test_zero_width_bootstrap_intervals_and_zero_keep_their_reading():
    assert Interval(0.2, 0.2, 0.2, 3, method="crossed").excludes_zero()  # its p comes from the draws, not signs
    assert not mean_interval([0.0, 0.0, 0.0]).excludes_zero()
    assert mean_interval([10.0, 11.0, 12.0]).excludes_zero()


def test_a_bare_zero_width_interval_is_still_described_as_above_0():
    """FINDINGS' check row "W = I itself" (1 at every seed, no p): the cell says where it lies, as committed."""
    assert verdict_cell(mean_interval([1.0] * 5).to_dict()) == "above 0"
    # one seed says nothing, and says so: "includes 0" sat beside its [1, 1]
    assert verdict_cell(mean_interval([1.0]).to_dict()) == "one seed: no interval"
