"""Questions 4-7 over seeds: synthetic probe summaries (no model) whose numbers flip each verdict must flip the
sentence in FINDINGS.md; the word-pair statistics on synthetic cosines with a known answer."""

import copy

import numpy as np
import pytest

from hf_minattn.experiments.findings import q4_section, q5_section, q6_section, q7_section
from hf_minattn.experiments.probe_answers import probe_answers
from hf_minattn.experiments.probing import best_contextual_layer
from hf_minattn.experiments.word_pairs import BENCHMARKS, compare, score

from helpers_benchmarks import Bench

SEEDS = (0, 1, 2)
CONFIG = {"num_hidden_layers": 2, "num_attention_heads": 2}


def heads(js, roles, mass):
    return {"num_layers": 2, "num_heads": 2, "uniform_entropy": 2.0, "within_layer_js": js,
            "stats": {"entropy": [[1.5, 1.6], [1.7, 1.8]]}, "roles": roles, "role_mass": mass, "role_min_mass": 0.3}


def sense(accuracy):
    return {"words": ["bank", "plant"], "occurrences": 80, "layers": [0, 1, 2], "accuracy": [0.5, accuracy, accuracy],
            "raw_accuracy": [0.5, accuracy - 0.02, accuracy - 0.02], "chance": 0.5, "position_accuracy": 0.55,
            "length_accuracy": 0.6}


def seed_summary(i, trained, accuracy):
    roles = [["previous", "none"], ["none", "cls"]] if trained else [["none", "none"], ["none", "none"]]
    mass = [[0.6, None], [None, 0.4]] if trained else [[None, None], [None, None]]
    js = [0.3 + 0.01 * i, 0.4 - 0.01 * i] if trained else [0.01 + 0.001 * i, 0.011 - 0.001 * i]
    return {"heads": heads(js, roles, mass),
            "head_ablation": {"loss_increase": [[0.5 + 0.01 * i, 0.01], [0.02, 0.1]], "interval95": [[0.05, 0.01], [0.01, 0.02]],
                              "masked_tokens": 900, "mlm_probability": 0.3},
            "geometry": {"layers": [0, 1, 2], "adjusted_self_similarity": [0.9, 0.5 - 0.01 * i, 0.3 + 0.01 * i],
                         "anisotropy": [0.1, 0.2, 0.3], "words_scored": 50},
            "sense_accuracy": sense(accuracy[i])}


def comparison(estimate, verdict, n=3):
    return {"estimate": estimate, "low": estimate - 0.1, "high": estimate + 0.1, "n": n, "method": "crossed",
            "p": 0.01, "p_holm": 0.03, "family_size": 7, "margin": 0.05, "verdict": verdict,
            "tost": {"equivalent": verdict == "equivalent"}}


def interval(estimate):
    return {"estimate": estimate, "low": estimate - 0.1, "high": estimate + 0.1, "n": 3, "method": "crossed"}


def related(king_queen, king_dog):
    return {"anisotropy": 0.4, "abtt": True, "cosine": {"king/queen": king_queen, "king/dog": king_dog,
                                                         "man/woman": 0.3, "man/river": 0.1}}


def with_reference(p, accuracy=0.85, vs_word2vec="higher", vs_static="higher"):
    """The pretrained reference as the probes keep it: its sense accuracy on 26 homonyms (the last layer's per
    homonym `accuracy` +- 0.02, chance 0.5) and its own word-pair scores and comparisons (stored verdicts)."""
    p = copy.deepcopy(p)
    words = [f"word{i}" for i in range(26)]
    by_word = {w: [0.5] * 6 + [accuracy + 0.01 * (i % 5 - 2)] for i, w in enumerate(words)}
    mean = float(np.mean([v[-1] for v in by_word.values()]))
    p["reference"]["sense_accuracy"] = {
        "words": words, "layers": list(range(7)), "accuracy": [0.5] * 6 + [mean], "chance": 0.5,
        "accuracy_interval": [interval(0.5)] * 6 + [interval(mean)], "accuracy_by_word": by_word}
    p["word_pairs"]["scores"]["wordsim353_read"]["minilm/static"] = interval(0.45)
    p["word_pairs"]["reference"] = {
        "name": "all-MiniLM-L6-v2", "layer": 6, "system": "minilm/layer_6", "static": "minilm/static",
        "comparisons": {"vs_word2vec": comparison(0.25 if vs_word2vec == "higher" else -0.25, vs_word2vec),
                        "vs_static": comparison(0.25 if vs_static == "higher" else -0.25, vs_static)}}
    p["word_pairs"]["q5"].pop("reference_vs_word2vec")  # in the reference's own family now
    return p


def probes(full_accuracy=(0.8, 0.82, 0.81), q5_last_vs_untrained="higher", king=(0.6, 0.1), rollout_self=0.7,
           reference=None):
    """Synthetic probe summaries of 3 seeds; `reference`: with_reference's arguments, for the reference encoder's
    senses and word pairs (None: its name alone, as results from before them)."""
    by_seed = {"full": {s: seed_summary(i, True, full_accuracy) for i, s in enumerate(SEEDS)},
               "untrained": {s: seed_summary(i, False, (0.55, 0.56, 0.54)) for i, s in enumerate(SEEDS)}}
    extras = {name: {s: {"related_words": {"static": related(*king), "layer_2": related(king[0] + 0.01 * i, king[1])},
                         "cooccurrence": {"top_words": 300, "window": 5, "pairs": 44850, "positive_ppmi_pairs": 9000,
                                          "sets": {"static": {"spearman": {"estimate": 0.2}, "raw": {"estimate": 0.1},
                                                              "abtt": True}}}}
                     for i, s in enumerate(SEEDS)} for name in ("full", "untrained")}
    scores = {"wordsim353_read": {system: interval(v) for system, v in (
        ("full/static", 0.3), ("full/layer_0", 0.3), ("full/layer_1", 0.35), ("full/layer_2", 0.4),
        ("untrained/static", 0.0), ("untrained/layer_2", 0.05), ("word2vec", 0.45), ("random", 0.0),
        ("minilm/layer_6", 0.7))}}
    q5 = {"static_vs_word2vec": comparison(-0.15, "unresolved"), "last_vs_word2vec": comparison(-0.05, "equivalent"),
          "static_vs_untrained": comparison(0.3, "higher"),
          "last_vs_untrained": comparison(0.35 if q5_last_vs_untrained == "higher" else -0.35, q5_last_vs_untrained),
          "static_vs_random": comparison(0.3, "higher"), "last_vs_reference": comparison(-0.3, "lower"),
          "reference_vs_word2vec": comparison(0.25, "higher")}
    rollout = {s: {"sentence": "the king and the queen", "self_share": rollout_self + 0.01 * i,
                   "edges": {"king (2) -> queen (5)": 0.2 + 0.01 * i, "queen (5) -> king (2)": 0.15, "the (1) -> king (2)": 0.1,
                             "and (3) -> the (1)": 0.05, "the (4) -> queen (5)": 0.12, "[CLS] (0) -> the (1)": 0.01}}
               for i, s in enumerate(SEEDS)}
    p = {"by_seed": by_seed, "extras": extras, "rollout": rollout, "reference": {"name": "all-MiniLM-L6-v2"},
         "head_divergence": {"full": {"seed_pairs": 3, "within_layer": [[0.3, 0.31, 0.32], [0.4, 0.41, 0.39]],
                                      "matched": [[0.05, 0.06, 0.04], [0.38, 0.42, 0.41]]}},
         "word_pairs": {"scores": scores, "q5": q5, "q6": {"last_vs_static": comparison(0.1, "higher"),
                                                          "best_layer_vs_static": comparison(0.1, "higher")},
                        "pairs": {"wordsim353": {"kept": 274, "total": 353}}, "margin": 0.05, "standard_error": 0.0606,
                        "key": "wordsim353_read", "best_layer": 2}}
    return p if reference is None else with_reference(p, **reference)


def answers(p):
    return probe_answers({"seeds": list(SEEDS)}, p, CONFIG)


def text(section, p, *args):
    a = answers(p)
    results = {"config": CONFIG, "answers": {"scale": {"seeds": 3}}}
    fig = lambda *x: ""  # noqa: E731
    return "\n".join({"q4": lambda: q4_section(a["q4"], fig), "q5": lambda: q5_section(a["q5"], results, fig),
                      "q6": lambda: q6_section(a["q6"], fig), "q7": lambda: q7_section(a["q7"], fig)}[section]())


def test_head_verdicts_follow_their_intervals():
    base = text("q4", probes())
    assert "Training makes the heads of 2 of 2 layers attend more differently" in base
    # layer 0's gap is positive, but without a null for the minimum matching it shows no recurrence
    assert "This run measured no null for it" in base and "may recur" not in base
    assert "| 0 | L0H0 | +0.5 | 0.05 | 900 | previous | 0.6 |" in base  # the costliest head of seed 0
    assert "| previous | 1, 1, 1 | 1 [1, 1] |" in base and "| none | 2, 2, 2 | 2 [2, 2] |" in base
    same = probes()
    for s in SEEDS:  # trained within-layer divergence equal to the untrained one's
        same["by_seed"]["full"][s]["heads"]["within_layer_js"] = list(same["by_seed"]["untrained"][s]["heads"]["within_layer_js"])
    same["head_divergence"]["full"]["matched"] = same["head_divergence"]["full"]["within_layer"]
    flipped = text("q4", same)
    assert "does not make the heads of any layer measurably more different" in flipped
    # no null measured (the committed runs): a positive gap is the minimum matching's doing, recurrence not shown
    assert "This run measured no null for it" in flipped and "may recur" not in flipped
    # described, not tested: the seed pairs share seeds, so no p and no verdict (REPLICATION.md counts verdicts)
    gaps = answers(probes())["q4"]["divergence"]["within_minus_matched"]
    assert all("verdict" not in d and "p" not in d for d in gaps.values())
    assert gaps["layer_0"]["estimate"] == pytest.approx(0.26)


def test_heads_may_recur_only_where_the_gap_lies_above_the_null_of_the_same_matching_across_layers():
    """The matched divergence is a minimum: its gap to the within-layer divergence is read against the same matching
    between different layers. Layer 0's gap (0.26) is far above its null (0.02); layer 1's is not."""
    with_null = probes()
    with_null["head_divergence"]["full"]["matched_other_layers"] = [[0.28, 0.29, 0.3], [0.42, 0.43, 0.41]]
    div = answers(with_null)["q4"]["divergence"]
    assert div["null_within_minus_matched"]["layer_0"]["estimate"] == pytest.approx(0.02)
    assert all("verdict" not in d for d in div["null_within_minus_matched"].values())
    q4 = text("q4", with_null)
    assert ("In 1 of 2 layers (layer 0) the gap's interval (as if independent) lies above 0 and above that of its "
            "null") in q4
    assert "may recur from seed to seed at their layer" in q4 and "null: matched against other layers" in q4
    no_gap = copy.deepcopy(with_null)
    no_gap["head_divergence"]["full"]["matched_other_layers"] = no_gap["head_divergence"]["full"]["matched"]
    assert "In no layer does the gap's interval" in text("q4", no_gap) and "may recur" not in text("q4", no_gap)
    assert "null_within_minus_matched" not in answers(probes())["q4"]["divergence"]


def test_a_role_that_only_a_later_seed_has_counts_zero_at_the_earlier_seeds():
    """Role counts line up with the seeds: a role first seen at the second seed is 0 at the first, and its mean is
    over every seed (the counts were once listed from the first seed that had the role, so FINDINGS printed 'self
    1, 0, 0' for seeds with 0, 0, 1, 0, 0)."""
    p = probes()
    p["by_seed"]["full"][SEEDS[1]]["heads"]["roles"] = [["self", "none"], ["none", "cls"]]
    q4 = answers(p)["q4"]
    assert q4["role_counts"]["self"] == [0, 1, 0] and q4["role_counts"]["previous"] == [1, 0, 1]
    assert all(len(counts) == len(SEEDS) for counts in q4["role_counts"].values())
    assert q4["role_counts_mean"]["self"]["estimate"] == pytest.approx(1 / 3, abs=1e-4) and q4["role_counts_mean"]["self"]["n"] == 3
    assert "| previous | 1, 0, 1 |" in text("q4", p) and "| self | 0, 1, 0 | 0.333 [" in text("q4", p)


def test_word_similarity_verdict_follows_its_interval():
    base = text("q5", probes())
    assert "last-layer vectors are above the untrained model's and equivalent to word2vec's" in base
    assert "has a standard error near 0.0606" in base
    assert "Last layer against all-MiniLM-L6-v2: below" in base
    flipped = text("q5", probes(q5_last_vs_untrained="unresolved"))
    assert "last-layer vectors are not told apart from the untrained model's" in flipped
    assert "queen is closer" in base
    assert "dog is closer" in text("q5", probes(king=(0.1, 0.6)))


def test_sense_verdict_follows_its_interval():
    above = text("q6", probes())
    assert ("**Senses: the last layer tells a homonym's senses apart above chance, above the untrained model and above "
            "the control that sees only position and sentence length**") in above
    weak = probes(full_accuracy=(0.6, 0.61, 0.59))  # above chance, not above the 0.6 position-and-length control
    assert "but not above both the untrained model and the control" in text("q6", weak)
    assert "against the control that sees no vectors (the word's place in its sentence, with the " \
           "sentence's length: 0.6, above the untrained model's): better" in above
    at_chance = text("q6", probes(full_accuracy=(0.5, 0.505, 0.495)))
    assert "**Senses: the last layer is at chance on a homonym's senses (equivalent within the margin)**" in at_chance
    unresolved = text("q6", probes(full_accuracy=(0.3, 0.7, 0.55)))
    assert "**Senses: not resolved at this scale" in unresolved
    below = text("q6", probes(full_accuracy=(0.3, 0.31, 0.29)))
    assert "below chance" in below


def test_rollout_edges_are_averaged_over_seeds_and_the_self_share_chooses_the_sentence():
    a = answers(probes())["q7"]
    assert a["strongest"][0][0] == "king (2) -> queen (5)" and a["strongest"][0][1]["estimate"] == pytest.approx(0.21)
    assert [e for e, _ in a["strongest"]][:3] == ["king (2) -> queen (5)", "queen (5) -> king (2)", "the (4) -> queen (5)"]
    assert "residual path keeps most of each word its own" in text("q7", probes())
    assert "most of each word comes from the other words" in text("q7", probes(rollout_self=0.2))
    # the last block's output is layer 2 of this 2-layer model, as Q5, Q6 and the logit lens number layers
    assert "after layer 2," in text("q7", probes()) and "after layer 1," not in text("q7", probes())


def test_word_pair_scores_and_paired_differences_have_known_answers():
    """A system whose cosines ARE the human scores has rho 1 at every seed and resample; one with random cosines is
    near 0; their difference is positive, and a system compared with itself differs by exactly 0."""
    rng = np.random.default_rng(0)
    human = rng.normal(size=60)
    keys = [f"{b}{suffix}" for b in BENCHMARKS for suffix in ("", "_read")]
    cosines = {"perfect": {s: {k: human.copy() for k in keys} for s in SEEDS},
               "noise": {s: {k: rng.normal(size=60) for k in keys} for s in SEEDS}}
    bench = Bench(human)
    scored = score(cosines, bench, SEEDS, n_resamples=200)
    assert scored["wordsim353_read"]["perfect"]["estimate"] == pytest.approx(1.0)
    assert scored["wordsim353_read"]["perfect"]["low"] == pytest.approx(1.0)
    assert scored["wordsim353_read"]["noise"]["low"] < 0 < scored["wordsim353_read"]["noise"]["high"]
    family = compare(cosines, bench, {"better": ("perfect", "noise", "wordsim353_read"),
                                      "same": ("perfect", "perfect", "wordsim353_read")}, SEEDS, n_resamples=200)
    assert family["better"]["verdict"] == "higher" and family["better"]["low"] > 0.5
    # a system against itself differs by exactly 0 at every seed: no spread, so the seeds' signs alone decide
    # equivalence, which 3 seeds cannot show (0.5 ** 3 = 0.125) and 5 can (0.031)
    assert family["same"]["estimate"] == 0 and family["same"]["verdict"] == "unresolved"
    five = {name: {s: by_seed[SEEDS[s % len(SEEDS)]] for s in range(5)} for name, by_seed in cosines.items()}
    same = compare(five, bench, {"same": ("perfect", "perfect", "wordsim353_read")}, tuple(range(5)), n_resamples=200)
    assert same["same"]["verdict"] == "equivalent"
    assert family["better"]["family_size"] == 2 and family["better"]["p_holm"] >= family["better"]["p"]
    swapped = compare(cosines, bench, {"worse": ("noise", "perfect", "wordsim353_read")}, SEEDS, n_resamples=200)
    assert swapped["worse"]["verdict"] == "lower"


def central_draws(draws):
    """The 95% percentile interval as order statistics: the 8th smallest and 8th largest of 300 draws."""
    ordered = np.sort(draws)
    assert ordered.size == 300
    return ordered[7], ordered[-8]


def test_word_pair_intervals_are_those_of_scipys_spearman_on_each_crossed_resample():
    """score and compare rank all the resamples at once; their draws must be those of scipy's spearmanr called on
    each resample in turn (ties averaged: scores rounded to one decimal), with the seeds drawn with replacement and
    the pairs drawn once for all of them (the pairs are the same at every seed), hence the same intervals."""
    from scipy.stats import spearmanr, ttest_1samp

    rng = np.random.default_rng(1)
    human = np.round(rng.normal(size=40), 1)
    key = "wordsim353_read"
    keys = [f"{b}{suffix}" for b in BENCHMARKS for suffix in ("", "_read")]
    cosines = {name: {s: {k: np.round(human * weight + rng.normal(size=40), 1) for k in keys} for s in SEEDS}
               for name, weight in (("a", 1.0), ("b", 0.3))}
    rho = lambda c, h: spearmanr(c, h)[0]  # noqa: E731

    def by_hand(statistic, systems):
        draw = np.random.default_rng(0)  # the draws' default seed
        seeds = draw.integers(0, len(SEEDS), (300, len(SEEDS)))
        pairs = draw.integers(0, 40, (300, 40))
        return np.array([np.mean([statistic(*(cosines[x][SEEDS[k]][key][i] for x in systems), human[i]) for k in ks])
                         for ks, i in zip(seeds, pairs)])

    scored = score(cosines, Bench(human), SEEDS, n_resamples=300)[key]["a"]
    draws = by_hand(rho, ["a"])
    expected = (np.mean([rho(cosines["a"][s][key], human) for s in SEEDS]), *central_draws(draws))
    assert scored["method"] == "crossed"
    assert (scored["estimate"], scored["low"], scored["high"]) == pytest.approx(tuple(np.round(expected, 4)), abs=1e-4)
    tested = compare(cosines, Bench(human), {"a_vs_b": ("a", "b", key)}, SEEDS, n_resamples=300)["a_vs_b"]
    draws = by_hand(lambda a, b, h: rho(a, h) - rho(b, h), ["a", "b"])
    assert (tested["low"], tested["high"]) == pytest.approx(tuple(np.round(central_draws(draws), 4)), abs=1e-4)
    # the bootstrap's own p (the share of draws on the far side of 0, at least 1 / draws), exact; the stored p is the
    # larger of it and the t-test's of each seed's difference of correlations, and Holm adjusts that, unrounded
    exact_p = min(1.0, max(2 * min(np.mean(draws <= 0), np.mean(draws >= 0)), 1 / draws.size))
    per_seed = [rho(cosines["a"][s][key], human) - rho(cosines["b"][s][key], human) for s in SEEDS]
    t_p = ttest_1samp(per_seed, 0.0).pvalue
    assert tested["p_bootstrap"] == exact_p and tested["seeds"]["p"] == pytest.approx(t_p)
    assert tested["p"] == pytest.approx(max(exact_p, t_p)) and tested["p_holm"] == tested["p"]


def test_the_best_layer_is_a_contextual_one():
    """Layer 0 (the embedding output: the static vectors under rope) never counts as the best layer, however well it
    scores; among layers 1..L the highest estimate wins, and a layer without a score is skipped."""
    scores = {"full/layer_0": {"estimate": 0.9}, "full/layer_1": {"estimate": 0.2}, "full/layer_2": {"estimate": 0.4},
              "full/layer_3": {"estimate": 0.3}, "full/static": {"estimate": 0.95}}
    assert best_contextual_layer(scores, 3) == 2
    scores["full/layer_1"]["estimate"] = 0.5
    assert best_contextual_layer(scores, 3) == 1
    del scores["full/layer_1"]
    assert best_contextual_layer(scores, 3) == 2
    with pytest.raises(ValueError, match="layer_1"):
        best_contextual_layer({"full/layer_0": {"estimate": 0.9}}, 3)


def test_probe_answers_do_not_change_the_probes():
    p = probes()
    before = copy.deepcopy(p)
    answers(p)
    assert p == before


def with_logit_lens(p, gains):
    """Each seed's logit lens: floor 7.0 on 900 masked tokens, the full model's gain per layer from `gains` (one list
    per seed), the untrained model's 0.01 below the floor at every layer."""
    p = copy.deepcopy(p)
    for name, per_seed in (("full", gains), ("untrained", [[-0.01] * 3] * 3)):
        for (seed, row), gain in zip(sorted(p["by_seed"][name].items()), per_seed):
            row["logit_lens"] = {"floor": 7.0, "masked_tokens": 900, "gain": gain, "loss": [7.0 - g for g in gain],
                                 "accuracy": [0.05, 0.1, 0.2]}
    return p


def test_where_the_head_reads_the_prediction_follows_the_gain_intervals_over_seeds():
    """By hand: gains (layer 0, 1, 2) per seed; the first layer whose t-interval over seeds lies above 0 is named, and
    the last block's paired gain decides "adds"."""
    forms_at_1 = text("q6", with_logit_lens(probes(), [[-0.2, 0.3, 0.8], [-0.1, 0.35, 0.85], [-0.15, 0.32, 0.9]]))
    assert "**Where the MLM head can read the prediction: from layer 1 of 2 on" in forms_at_1
    assert "The last block adds 0.527 [" in forms_at_1 and "(more gain)" in forms_at_1
    only_last = text("q6", with_logit_lens(probes(), [[-0.2, -0.3, 0.8], [-0.1, 0.2, 0.85], [-0.15, -0.1, 0.9]]))
    assert "**Where the MLM head can read the prediction: the last layer (layer 2) beats" in only_last
    none = text("q6", with_logit_lens(probes(), [[-0.2, -0.3, 0.1], [-0.1, 0.2, -0.1], [-0.15, -0.1, 0.05]]))
    assert "**Where the MLM head can read the prediction: no layer" in none and "(not at this scale)" in none
    a = answers(with_logit_lens(probes(), [[-0.2, 0.3, 0.8], [-0.1, 0.35, 0.85], [-0.15, 0.32, 0.9]]))["q6"]["logit_lens"]
    assert a["gain"][2]["estimate"] == pytest.approx(0.85, abs=1e-4) and a["first_layer_above_floor"] == 1
    assert a["gain_untrained"][0]["estimate"] == pytest.approx(-0.01) and a["floor"]["estimate"] == 7.0
    assert "Where the MLM head" not in text("q6", probes())  # probes from before the lens: no line


def with_circuits(p, full_identity, from_identity=(0.2, 0.25, 0.22), initial=(0.1, 0.12, 0.11)):
    """probes["circuits"] as probing.circuits_over_seeds stores it: per variant and seed, two heads whose identity
    correlations are the seed's value -+ 0.05 (so the head mean is the value)."""
    def row(identity, start):
        heads = lambda v: [{"estimate": v - 0.05}, {"estimate": v + 0.05}]  # noqa: E731
        return {"num_heads": 2, "tokens": 1000, "pairs": {"identity": 999}, "identity": heads(identity), "initial": heads(start),
                "cooccurrence": heads(0.01), "ov_copying": [0.3, 0.5], "qk_positive": [0.9, 0.7]}
    p = copy.deepcopy(p)
    p["circuits"] = {"full": {s: row(v, i) for s, v, i in zip(SEEDS, full_identity, initial)},
                     "qkv_from_identity": {s: row(v, 0.9) for s, v in zip(SEEDS, from_identity)},
                     "identity_qkv": {s: row(1.0, 1.0) for s in SEEDS}}
    return p


def test_the_circuits_sentence_follows_the_identity_correlation_over_seeds():
    from hf_minattn.experiments.findings import circuits_lines

    lines = lambda *args: "\n".join(circuits_lines(answers(with_circuits(probes(), *args))["q3_circuits"]))  # noqa: E731
    reproduce = lines((0.8, 0.82, 0.85))
    assert "**The trained W_Q/W_K of layer 0 reproduce the embedding similarity" in reproduce
    assert "over 999 pairs of the 1000 most frequent tokens" in reproduce and "OV copying score" in reproduce
    assert "mean over the 2 heads" in reproduce and "| trained form vs LN(E) LN(E)^T | 0.823 | [" in reproduce
    assert "closer to the embedding similarity" in reproduce  # full - started at I: +0.6 at every seed
    assert "| W = I itself (a check of the probe: 1 by construction) | 1 | [1, 1] |" in reproduce
    assert "partly follow the embedding similarity (W_Q = W_K = I's form), far from reproducing it" in lines(
        (0.2, 0.3, 0.25))
    wide = lines((0.4, 0.6, 0.5))  # [0.25, 0.75]: above 0, reaching above 0.5: "far from" would say more than the interval
    assert "partly follow" in wide and "how closely is not resolved" in wide and "far from" not in wide
    other = lines((0.2, -0.3, 0.05))
    assert "compute something other than the embedding similarity" in other
    assert "still closer to its random initial one" in lines((0.02, 0.03, 0.025), (0.2, 0.25, 0.22), (0.6, 0.62, 0.61))
    assert "rank token pairs against the embedding similarity" in lines((-0.2, -0.25, -0.3))  # reaches below -0.3
    assert "rank token pairs weakly against the embedding similarity" in lines((-0.1, -0.11, -0.12))
    assert "still closer" not in lines((-0.3, -0.35, -0.32), (0.2, 0.25, 0.22), (0.0, 0.01, -0.01))  # near 0: neither
    assert circuits_lines(answers(probes())["q3_circuits"]) == []  # probes without circuits: no line


def with_reference_circuits(p, identity, ov_copying=(0.9, 0.1, -0.8)):
    """The reference encoder's layer-0 circuits as probing.reference_circuits keeps them: 3 heads whose identity
    intervals are `identity` ((low, high) each) and whose OV scores are `ov_copying` (self ranks 1: top)."""
    p = with_circuits(p, (0.2, 0.3, 0.25))
    heads = [{"estimate": (low + high) / 2, "low": low, "high": high, "n": 400} for low, high in identity]
    p["reference"] = {**(p.get("reference") or {}), "name": "all-MiniLM-L6-v2", "circuits": {
        "num_heads": 3, "identity": heads, "cooccurrence": None, "initial": None, "ov_copying": list(ov_copying),
        "ov_self_rank": [1.0, 1.0, 1.0], "pairs": {"identity": 999}, "tokens": 400}}
    return p


def test_the_reference_encoders_circuits_sentence_follows_its_head_intervals():
    """Q3 sets the model trained at scale beside ours: how many of its layer-0 heads follow the embedding similarity
    (interval above 0; above 0.5: closely) and how many OV circuits copy, each head chosen by its own interval."""
    from hf_minattn.experiments.findings import circuits_lines

    def line(*args):
        return [x for x in circuits_lines(answers(with_reference_circuits(probes(), *args))["q3_circuits"])
                if "all-MiniLM-L6-v2" in x]

    (two,) = line([(0.6, 0.7), (0.05, 0.2), (-0.1, 0.1)])
    assert two.startswith("- In a model trained at scale (all-MiniLM-L6-v2, measured the same way on its own 400 "
                          "most frequent tokens): in layer 0, the query-key logits of 2 of 3 heads correlate positively with "
                          "how similar the token embeddings are (1 closely); 1 of 3 copy the token they attend to into "
                          "their output")
    assert two.endswith("its heads' correlations run from 0.00 to 0.65.")
    (none,) = line([(-0.1, 0.1), (-0.3, -0.1), (-0.05, 0.02)], (0.1, 0.1, 0.1))
    assert "in layer 0, the query-key logits of none of the 3 heads are shown" in none and "none copies the" in none
    assert "(every interval includes 0 or is below it: 1 below)" in none  # a head against the similarity is said
    leaning = with_reference_circuits(probes(), [(-0.1, 0.1)] * 3, (0.9, 0.9, 0.1))
    leaning["reference"]["circuits"]["ov_self_rank"] = [300.0, 1.0, 1.0]  # head 0: its own token ranks far down
    (text,) = [x for x in circuits_lines(answers(leaning)["q3_circuits"]) if "all-MiniLM-L6-v2" in x]
    assert "1 of 3 copy the token they attend to into their output (1 more leans to it" in text  # was "1 of 3" alone
    assert not [x for x in circuits_lines(answers(with_circuits(probes(), (0.2, 0.3, 0.25)))["q3_circuits"])
                if "trained at scale" in x]  # a run without the reference's circuits: no line


def test_a_logit_lens_layer_is_above_the_floor_only_where_both_levels_say_so():
    from hf_minattn.experiments.probe_answers import layers_above_floor

    above, across, below = ({"estimate": e, "low": lo, "high": hi, "n": 5} for e, lo, hi in
                            ((0.5, 0.2, 0.8), (0.3, -0.1, 0.7), (-0.2, -0.4, 0.0)))
    lens = {"gain": [below, across, above, above], "gain_crossed": [below, above, across, above]}
    assert layers_above_floor(lens) == [3]  # layer 1: the seeds' t-interval reaches 0; layer 2: the crossed one
    assert layers_above_floor({"gain": lens["gain"]}) == [2, 3]  # probes without per-sentence gains: seeds alone
