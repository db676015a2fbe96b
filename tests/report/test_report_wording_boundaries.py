"""Each sentence below is rendered from numbers on both sides of the boundary its decision rule draws, and its words are
checked against the numbers printed beside them: a position signal only where one was measured, a change "under 0.01"
beside values printed to show it, means compared as printed, "more" never beside "tied" of the same two bands, no
absence claimed from an interval that includes 0, "positively" beside the heads that correlate negatively, "partly"
and "half" at exactly half, ties named as ties, heads that lower the loss named, intervals printed with the decimals
that show why they exclude 0, and a zero-width interval at chance called chance by construction.

The runs are the demo's probes.json of 2026-11-23 (tests/data), edited, or small probes.json parts written here."""

import copy
import json

from conftest import probe_results

from hf_minattn.probes.report.attention_graphs import attention_graphs_headline, attention_graphs_text
from hf_minattn.probes.report.bands import bands_headline, bands_tables, bands_text
from hf_minattn.probes.report.circuits import circuits_headline
from hf_minattn.probes.report.geometry import geometry_headline, layer0_text
from hf_minattn.probes.report.head_ablation import head_ablation_headline, head_ablation_text
from hf_minattn.probes.report.head_roles import head_roles_headline, head_roles_text
from hf_minattn.probes.report.logit_lens import logit_lens_headline, logit_lens_text
from hf_minattn.probes.report.neighbours import neighbours_headline
from hf_minattn.probes.report.norm_weighting import norm_weighting_headline, norm_weighting_text
from hf_minattn.probes.report.sense_accuracy import sense_accuracy_headline, sense_accuracy_tables, sense_verdict
from hf_minattn.probes.report.weights import weights_headline, weights_text
from test_report_summary import demo, r, typed  # noqa: F401  (the demo probe's fixtures, shared)



# 1. layer 0 against the word embeddings alone


def _layer0(position, layer0=0.92, layer0_baseline=0.08):
    g = {"layers": [0, 1], "adjusted_self_similarity": [layer0, 0.5], "self_similarity": [1.0, 0.9],
         "anisotropy": [layer0_baseline, 0.4], "layer0_note": "note",
         "static": {"self_similarity": 1.0, "anisotropy": 0.15, "adjusted_self_similarity": 0.85}}
    if position != "absent":
        g["layer0_position"] = position
    return layer0_text(probe_results(geometry=g))


def test_layer0_names_the_position_signal_only_where_the_probe_measured_one():
    measured = _layer0(True)
    assert "the embedding output (hidden_states[0], with positions)" in measured
    assert "The position signal makes a word's occurrences more alike than the word alone." in measured
    none = _layer0(False)
    assert "with positions" not in none and "position signal" not in none
    assert "the embedding output (hidden_states[0], no position term measured) has adjusted self-similarity 0.92" \
        in none
    assert ("With no position term measured, the embedding output makes a word's occurrences more alike than the word "
            "alone, where the anisotropy baseline is 0.08 at layer 0 against 0.15.") in none
    for older in (_layer0(None), _layer0("absent")):  # not recorded (files from before the field): neutral
        assert "with positions" not in older and "position signal" not in older
        assert ("The embedding output makes a word's occurrences more alike than the word alone, where the anisotropy "
                "baseline is 0.08 at layer 0 against 0.15.") in older
    assert "With no position term measured, the embedding output does not measurably change how alike" in \
        _layer0(False, 0.85, 0.15)
    assert "The position signal does not measurably change" in _layer0(True, 0.85, 0.15)


def test_the_probe_records_whether_layer_0_has_a_position_term(tokenizer):
    from conftest import TEXTS, no_context_model, tiny_config

    from hf_minattn import MinAttnModel
    from hf_minattn.probes.corpus import split_sentences
    from hf_minattn.probes.encode import encode_corpus
    from hf_minattn.probes.geometry import geometry
    from hf_minattn.probes.run import ProbeResults

    sentences = split_sentences(TEXTS, max_sentences=0)
    for model, position in ((no_context_model(len(tokenizer)), False),
                            (MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval(), True)):
        encoded = encode_corpus(model, tokenizer, sentences, min_count=2)
        result = geometry(encoded, min_count=2, model=model)
        assert result.layer0_position is position
        saved = ProbeResults("m", type(model).__name__, 2, 4, 32, corpus=None, geometry=result, neighbours=None)
        assert typed(json.loads(json.dumps(saved.to_dict()))).geometry.layer0_position is position
    assert geometry(encoded, min_count=2).layer0_position is None  # no model: not measured
    older = {"layers": [0], "adjusted_self_similarity": [0.5]}
    assert probe_results(geometry=older).geometry.layer0_position is None


# 2. norm weighting: the largest change beside the numbers printed


def _norm(r, raw, weighted):
    h = r["heads"]
    for key in h["norm_weighted_stats"]:
        h["stats"][key] = [[0.1] * 4 for _ in range(4)]
        h["norm_weighted_stats"][key] = [[0.1] * 4 for _ in range(4)]
    h["stats"]["punctuation"] = [[raw] * 4 for _ in range(4)]
    h["norm_weighted_stats"]["punctuation"] = [[weighted] * 4 for _ in range(4)]
    return norm_weighting_text(typed(r)), norm_weighting_headline(typed(r))


def test_norm_weighting_says_a_change_under_001_beside_numbers_that_show_it(r):
    text, headline = _norm(copy.deepcopy(r), 0.129, 0.121)  # 0.13 -> 0.12 at two decimals, 0.008 apart
    assert "punctuation 0.129 -> 0.121" in text and "punctuation 0.13 -> 0.12" not in text
    assert "The largest change, attention to punctuation (0.129 -> 0.121), is under 0.01" in text
    assert "precision shown" not in text and headline.startswith("No clear difference")
    text, headline = _norm(r, 0.129, 0.118)  # 0.011 apart
    assert "The largest change: attention to punctuation falls from 0.13 to 0.12" in text
    assert headline.startswith("Raw attention overstates what punctuation contributes")


# 3. weights: the verdict compares the means printed


def _ranks(r, trained, initial):
    w = r["weights"]
    for run, value in (("trained", trained), ("initial", initial)):
        for c in ("qk", "ov"):
            w[run][f"{c}_effective_rank"] = [[value] * 4 for _ in range(4)]
    return weights_headline(typed(r)), weights_text(typed(r))


def test_weights_verdict_compares_the_means_it_prints(r):
    headline, text = _ranks(copy.deepcopy(r), 29.76, 29.81)  # sums 0.10 apart, means both 29.8
    assert headline.startswith("No: on average the trained heads' QK and OV circuits do not use fewer directions "
                               "(mean effective rank 29.8 of at most 32, against 29.8")
    assert "mean rank of both, 29.8 against 29.8, is not lower" in text
    headline, text = _ranks(r, 29.70, 29.81)  # means 29.7 and 29.8
    assert headline.startswith("Yes: on average the trained heads' QK and OV circuits use fewer directions (mean "
                               "effective rank 29.7 of at most 32, against 29.8")
    assert "mean rank of both, 29.7 against 29.8, is lower" in text


# 4 and 11. bands: "more" by the contrast, never "tied" with the same band; intervals with the decimals they need


def _bands(top, rare, low, high, estimate=-0.003):
    g = {"layers": [0, 1], "adjusted_self_similarity": [0.9, 0.4], "most_context_specific": [("the", 0.1)],
         "adjusted_self_similarity_by_band": {"top 100": [0.9, top], "100-1000": [0.9, 0.39], "1000+": [0.9, rare]},
         "band_contrast": {"bands": ["top 100", "1000+"], "estimate": estimate, "low": low, "high": high,
                           "words": [100, 400]}}
    r = probe_results(geometry=g)
    return bands_headline(r), bands_text(r), bands_tables(r)[0]["rows"]


def test_bands_never_say_more_and_tied_of_the_same_two_bands():
    headline, text, rows = _bands(0.381, 0.384, -0.005, -0.001)  # 0.38 and 0.38 at two decimals
    assert "tied" not in headline + text
    assert "(adjusted self-similarity 0.381, against 0.384 for words of frequency rank 1000+; top 100 - 1000+: " \
           "-0.003 [-0.005, -0.001], 95% bootstrap over the words), as published." in headline
    assert "top 100: 0.381; 100-1000: 0.390; 1000+: 0.384: the top 100 band has the lowest mean" in text
    assert rows[0][-1] == "0.381" and rows[2][-1] == "0.384"  # the table beside shows them as the sentence does
    headline, text, rows = _bands(0.381, 0.384, -0.005, 0.001)  # the interval includes 0: two decimals, no direction
    assert headline.startswith("No clear difference") and "(adjusted self-similarity 0.38, against 0.38" in headline
    assert "top 100 - 1000+: -0.00 [-0.01, +0.00]" in headline and rows[0][-1] == "0.38"


def test_a_contrast_excluding_0_is_printed_with_the_decimals_that_show_it(r):
    g = r["geometry"]
    g["layer_contrast"] = {"estimate": -0.003, "low": -0.005, "high": -0.001, "words": 100}
    g["adjusted_self_similarity"][-1] = g["adjusted_self_similarity"][0] - 0.003
    headline = geometry_headline(typed(r))
    assert headline.startswith("Yes:") and "last layer - layer 0, per word: -0.003 [-0.005, -0.001]" in headline
    g["layer_contrast"].update(estimate=-0.03, low=-0.05, high=-0.01)
    assert "last layer - layer 0, per word: -0.03 [-0.05, -0.01]" in geometry_headline(typed(r))
    from hf_minattn.probes.report.words import signed_interval  # the helper both sections print contrasts with

    assert signed_interval(-0.003, -0.005, -0.001) == "-0.003 [-0.005, -0.001]"
    assert signed_interval(0.0004, 0.0002, 0.0006) == "+0.0004 [+0.0002, +0.0006]"
    assert signed_interval(-0.003, -0.005, 0.001) == "-0.00 [-0.01, +0.00]"  # includes 0: nothing to show


# 5. logit lens: no absence claimed from intervals that include 0


def _lens(gain, half_width):
    loss = [7.0 - g for g in gain]
    return probe_results(logit_lens={"sentences": 8, "masked_tokens": 40, "loss": loss, "accuracy": [0.1] * len(loss),
                                     "floor": 7.0, "gain": gain, "gain_interval95": [half_width] * len(gain),
                                     "mlm_probability": 0.3})


def test_logit_lens_says_no_layer_is_shown_to_beat_frequencies_not_that_none_does():
    unresolved = _lens([-2.0, 0.05, 0.1], 0.12)
    text, headline = logit_lens_text(unresolved), logit_lens_headline(unresolved)
    assert "read through its head, no layer is shown to predict masked tokens better than token frequencies " \
           "alone" in text
    assert "not even the output" not in text
    assert headline.startswith("Not resolved at this scale: no layer, read through the masked-word head, is shown to "
                               "guess masked words better than word frequencies alone")
    resolved = _lens([-2.0, 0.05, 0.2], 0.12)
    assert "The loss first goes below the unigram floor" in logit_lens_text(resolved)
    assert logit_lens_headline(resolved).startswith("Layer 2 is the lowest layer")


# 6. circuits: positive correlations named as such beside the negative ones; a leaning head's rank


def _circuits(third=(-0.3, -0.4, -0.2), own_rank=254.0):
    interval = lambda e, lo, hi: {"estimate": e, "low": lo, "high": hi}  # noqa: E731
    return probe_results(circuits={"num_heads": 3, "token_ids": list(range(1000)),
                                   "identity": [interval(0.3, 0.2, 0.4), interval(0.0, -0.1, 0.1), interval(*third)],
                                   "ov_copying": [0.8, 0.1, 0.1], "ov_self_rank": [own_rank, 400.0, 400.0]})


def test_circuits_headline_counts_negative_correlations_and_gives_the_leaning_rank():
    headline = circuits_headline(_circuits())
    assert ("the query-key logits of 1 of 3 heads correlate positively with how similar the token embeddings are "
            "(weakly: no interval above 0.5), and those of 1 negatively (interval below 0)") in headline
    assert ("(1 more leans to it: high copying scores, but a token's own logit does not rank near the top, 254 of "
            "1000 on average)") in headline and "far down" not in headline
    flipped = circuits_headline(_circuits(third=(0.0, -0.1, 0.1), own_rank=2.0))  # interval holds 0; rank 2 of 1000
    assert "negatively" not in flipped and "correlate positively" in flipped
    assert "; 1 of 3 copy the token they attend to into their output." in flipped and "leans" not in flipped


# 7. attention graphs: exactly half shared is "partly"; the headline is the first example's


def _graphs(r, shared):
    """Rollout's strongest pairs at the last layer set to 4 (words of distinct labels: pairs are compared by label);
    raw attention's 4 strongest share `shared` of them."""
    rollout, raw = r["attention_graph_rollout"], r["attention_graph"]
    last = rollout["layers"][-1]
    at_last = lambda e: e["layer"] == last and e["head"] == "mean" and e["source"] != e["target"]  # noqa: E731
    labels = [n["label"] for n in sorted(raw["nodes"], key=lambda n: n["id"])]
    ids = [i for i, x in enumerate(labels) if labels.count(x) == 1][:6]
    edge = lambda a, b, w: {"source": a, "target": b, "layer": last, "head": "mean", "weight": w}  # noqa: E731
    top = [edge(ids[i], ids[i + 1], 0.5 - 0.1 * i) for i in range(4)]
    others = [edge(ids[i + 1], ids[i], 0.8) for i in range(4 - shared)]  # the same words, the other way round
    rollout["edges"] = [e for e in rollout["edges"] if not at_last(e)] + top
    raw["edges"] = [e for e in raw["edges"] if not at_last(e)] + [{**e, "weight": 0.9} for e in top[:shared]] + others
    return attention_graphs_headline(typed(r)), attention_graphs_text(typed(r))


def test_graphs_call_half_the_pairs_shared_partly_the_same(r):
    headline, text = _graphs(copy.deepcopy(r), 2)
    assert headline.startswith("In the first example sentence, after the last layer rollout")
    assert "raw attention names partly the same strongest pairs as rollout (2 of 4)" in headline
    assert "2 of rollout's 4 strongest pairs are among raw attention's 4 strongest at that layer: raw weights name " \
           "partly the same relations here: half of them." in text
    assert "different" not in headline and "different pairs" not in text
    headline, text = _graphs(copy.deepcopy(r), 3)
    assert "raw attention names mostly the same strongest pairs as rollout" in headline
    headline, text = _graphs(r, 1)
    assert "raw attention names different strongest pairs than rollout" in headline
    assert "raw weights would name different pairs here" in text


# 8. neighbours: "mostly" above half, "half" at it


def _neighbours(shared_counts):
    static = {f"w{i}": [[f"n{j}", 0.9] for j in range(6)] for i in range(len(shared_counts))}
    last = {w: [[f"n{j}", 0.9] for j in range(k)] + [[f"x{j}", 0.8] for j in range(6 - k)]
            for w, k in zip(static, shared_counts)}
    return neighbours_headline(probe_results(neighbours={"words": list(static), "oov": [],
                                                         "neighbours": {"static": static, "layer_2": last}}))


def test_neighbours_at_exactly_half_are_half_shared():
    assert "nearest words are half shared with those of the input embeddings: on average 3.0 of the 6" in \
        _neighbours([3, 3, 3, 3])
    assert "mostly" not in _neighbours([3, 3, 3, 3])
    assert "mostly stay the same as those of the input embeddings: on average 3.2 of the 6" in _neighbours([3, 3, 3, 4])
    assert "mostly change from those of the input embeddings: on average 2.8 of the 6" in _neighbours([3, 3, 3, 2])


# 9. head roles: a tie for the commonest role is named as a tie


def _roles(r, extra_previous):
    h = r["heads"]
    h["roles"] = [["previous"] * 4, ["next"] * 4, ["none"] * 4, ["none"] * 4]
    h["role_mass"] = [[0.5] * 4, [0.5] * 4, [None] * 4, [None] * 4]
    h["role_ratio"] = [[5.0] * 4, [5.0] * 4, [None] * 4, [None] * 4]
    if extra_previous:
        h["roles"][2][0], h["role_mass"][2][0], h["role_ratio"][2][0] = "previous", 0.4, 4.0
    return head_roles_headline(typed(r)), head_roles_text(typed(r))


def test_a_tie_for_the_commonest_role_is_named_as_a_tie(r):
    headline, text = _roles(copy.deepcopy(r), False)
    assert headline == ("Attending to the previous token and to the next token are tied for the commonest job: each "
                        "is the job of 4 of 16 heads, which give it at least 30% of their attention.")
    assert "So previous token and next token are tied for the commonest role (4 of 16 heads each)." in text
    headline, text = _roles(r, True)
    assert headline == ("The commonest job is attending to the previous token: 5 of 16 heads give it at least 30% of "
                        "their attention.")
    assert "So the commonest role is previous token (5 of 16 heads)." in text


# 10. head ablation: "no head raises the loss", and the heads that lower it beyond their interval


def _ablation(r, lowest):
    a = r["head_ablation"]
    a["loss_increase"] = [[0.01] * 4 for _ in range(4)]
    a["interval95"] = [[0.02] * 4 for _ in range(4)]
    a["loss_increase"][1][1] = lowest
    return head_ablation_headline(typed(r)), head_ablation_text(typed(r))


def test_head_ablation_names_heads_whose_interval_lies_below_0(r):
    headline, text = _ablation(copy.deepcopy(r), -0.08)
    assert headline.startswith("No single head is shown to be needed on its own at this scale: no head, zeroed, "
                               "raises the masked-word loss beyond its 95% interval (largest rise +0.01 ± 0.02 nats")
    assert headline.endswith("; zeroing head 1-1 (-0.08 ± 0.02 nats) lowers it beyond its 95% interval.")
    assert "within its 95% interval" not in headline
    assert text.endswith("none is shown to be needed alone; zeroing head 1-1 (-0.08 ± 0.02 nats) lowers it beyond its "
                         "95% interval.")
    headline, text = _ablation(r, -0.01)  # its interval [-0.03, +0.01] holds 0
    assert "lowers" not in headline + text and headline.startswith("No single head is shown to be needed")


# 12. senses: a zero-width interval at chance


def _senses(last):
    return probe_results(sense_accuracy={
        "words": ["bank"], "occurrences": 20, "layers": [0, 1], "accuracy": [0.5, last[0]], "chance": 0.5,
        "position_accuracy": 0.55, "accuracy_interval": [{"low": 0.5, "high": 0.5}, {"low": last[1], "high": last[2]}],
        "static_accuracy": 0.5})


def test_a_zero_width_interval_at_chance_is_chance_by_construction():
    assert sense_verdict({"low": 0.5, "high": 0.5}, 0.5) == "at chance by construction"
    assert sense_verdict({"low": 0.49, "high": 0.51}, 0.5) == "not told apart from chance: not at this scale"
    rows = sense_accuracy_tables(_senses((0.5, 0.45, 0.55)))[0]["rows"]
    assert rows[0][-1] == "at chance by construction" and rows[1][-1] == "not told apart from chance: not at this scale"
    assert sense_accuracy_headline(_senses((0.5, 0.5, 0.5))) == (
        "No: at the last layer a nearest-centroid classifier finds the right meaning 50% of the time, at chance by "
        "construction (its 95% interval has zero width at 50%).")
    assert sense_accuracy_headline(_senses((0.5, 0.49, 0.51))).startswith("Not resolved at this scale")
