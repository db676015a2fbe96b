"""The report's headlines and its summary screen: every headline that makes a claim is chosen by the
numbers, so flipping the numbers of a real probe run flips the headline; the page opens with one row per section,
each section's first paragraph is its headline, and the full numbers are collapsed.

The run is the demo's probes.json of 2026-11-23 (fp32), kept here as it was: docs/demo/ is replaced whenever the demo
is re-measured, and the expected sentences below are those of this run's numbers."""

import copy
import gzip
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import probe_results

from hf_minattn.probes.report import write_report
from hf_minattn.probes.report.attention_graphs import attention_graphs_headline
from hf_minattn.probes.report.bands import bands_headline, bands_text
from hf_minattn.probes.report.benchmark import benchmarks_headline, benchmarks_tables
from hf_minattn.probes.report.circuits import circuits_headline
from hf_minattn.probes.report.drift import drift_headline
from hf_minattn.probes.report.example import example_headline, example_text
from hf_minattn.probes.report.geometry import geometry_headline, geometry_text, geometry_with_layer0_text
from hf_minattn.probes.report.head_ablation import head_ablation_headline
from hf_minattn.probes.report.head_map import head_map_headline, head_map_text
from hf_minattn.probes.report.head_roles import head_roles_headline
from hf_minattn.probes.report.heads import heads_headline
from hf_minattn.probes.report.logit_lens import logit_lens_headline, logit_lens_text
from hf_minattn.probes.report.neighbours import neighbours_headline
from hf_minattn.probes.report.norm_weighting import (attention_norm_example_headline, norm_weighting_headline,
                                                     norm_weighting_text)
from hf_minattn.probes.report.page import THUMBNAIL_PIXELS, Probes, figure_uri
from hf_minattn.probes.report.sections import SECTIONS
from hf_minattn.probes.report.sense import sense_headline
from hf_minattn.probes.report.sense_accuracy import sense_accuracy_headline
from hf_minattn.probes.report.view import attention_view_headline
from hf_minattn.probes.report.weights import weights_headline
from hf_minattn.probes.results import SavedProbeResults

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo_probes_2026-11-23.json.gz"


@pytest.fixture(scope="module")
def demo():
    return json.loads(gzip.decompress(DEMO.read_bytes()))


@pytest.fixture
def r(demo):
    return copy.deepcopy(demo)


def typed(r):
    """The typed results the sections read, made from the probes.json dict as a test edited it."""
    return SavedProbeResults.from_dict(r)


def one_sentence(text):
    """A headline is one sentence: it ends with a full stop and has no sentence break inside."""
    return text.endswith(".") and not re.search(r"[.:;]\s+[A-Z][a-z]+\s", text.replace("'", ""))


def test_every_headline_of_the_demo_run_is_one_sentence(r):
    probes = Probes(r, view=VIEW)
    for section in SECTIONS:
        if probes.has(section):
            text = section.headline(probes.of(section))
            assert one_sentence(text), (section.name, text)
            assert section.question.endswith("?"), section.name


def test_geometry_headline_follows_the_trend(r):
    assert geometry_headline(typed(r)).startswith("Yes: the same word's vectors in different sentences grow less "
                                                  "alike in higher layers (adjusted self-similarity 0.92 at layer 0, "
                                                  "0.44 at layer 4)")
    r["geometry"]["adjusted_self_similarity"].reverse()  # rises from 0.44 to 0.92
    assert geometry_headline(typed(r)).startswith("No: the same word's vectors in different sentences grow more "
                                                  "alike in higher layers")
    assert "rises from 0.44" in geometry_text(typed(r)) and "falls from" not in geometry_text(typed(r))
    r["geometry"]["adjusted_self_similarity"] = [0.50, 0.6, 0.495]  # falls by less than the precision shown
    assert geometry_headline(typed(r)).startswith("Not shown: the same word's vectors in different sentences are not "
                                                  "shown to grow less alike")
    text = geometry_text(typed(r))  # the details paragraph follows the same rule
    assert "goes from 0.50 at layer 0" in text and "equal at the precision shown" in text


def test_geometry_headline_reads_the_interval_over_words_where_the_probe_measured_it(r):
    """With `layer_contrast` (last layer - layer 0 per word, bootstrap over the words) the interval decides, not
    the means as shown: a fall of the means whose interval holds 0 is not one; one above 0 is a rise."""
    g = r["geometry"]
    g["layer_contrast"] = {"layers": [0, 4], "estimate": -0.48, "low": -0.5, "high": -0.46, "words": 300}
    assert geometry_headline(typed(r)).startswith("Yes: the same word's vectors in different sentences grow less")
    assert "last layer - layer 0, per word: -0.48 [-0.50, -0.46], 95% bootstrap over the 300 words" in \
        geometry_headline(typed(r))
    g["layer_contrast"].update(low=-0.9, high=0.02)
    assert geometry_headline(typed(r)).startswith("Not shown: the same word's vectors in different sentences are not")
    assert "goes from 0.92 at layer 0 to 0.44" in geometry_text(typed(r))
    assert "not told apart from 0 over the words" in geometry_text(typed(r))
    g["layer_contrast"].update(estimate=0.1, low=0.05, high=0.15)
    assert geometry_headline(typed(r)).startswith("No: the same word's vectors in different sentences grow more alike")
    assert "rises from 0.92" in geometry_text(typed(r))


def test_geometry_headline_names_a_lowest_layer_below_the_last(r):
    assert "then up again" not in geometry_headline(typed(r))  # falls to the last layer
    r["geometry"]["adjusted_self_similarity"] = [0.92, 0.58, 0.40, 0.51, 0.48]
    assert "(adjusted self-similarity 0.92 at layer 0, 0.48 at layer 4; lowest 0.40 at layer 2, then up again)" \
        in geometry_headline(typed(r))


def test_layer0_against_the_word_alone_is_read_at_the_precision_shown(r):
    from hf_minattn.probes.report.geometry import layer0_text

    r["geometry"]["layer0_position"] = True  # the position signal is named only where the probe measured one
    assert "The position signal does not measurably change how alike" in layer0_text(typed(r))  # 0.920 and 0.920
    r["geometry"]["adjusted_self_similarity"][0] = 0.85
    assert "The position signal makes a word's occurrences less alike" in layer0_text(typed(r))
    r["geometry"]["adjusted_self_similarity"][0] = 0.99
    assert "The position signal makes a word's occurrences more alike" in layer0_text(typed(r))


def test_bands_headline_asks_whether_the_frequent_words_vary_most(r):
    bands = r["geometry"]["adjusted_self_similarity_by_band"]
    assert bands_headline(typed(r)).startswith("No: at the last layer the most frequent words change less with "
                                               "their sentence than rarer ones (adjusted self-similarity 0.48, "
                                               "against 0.43 for words of frequency rank 1000+)")
    bands["top 100"][-1] = 0.30
    assert bands_headline(typed(r)).startswith("Yes: the most frequent words")
    assert "as published" in bands_headline(typed(r)) and "as published" in bands_text(typed(r))
    bands["top 100"][-1] = 0.436  # within 0.01 of the 1000+ band
    assert bands_headline(typed(r)).startswith("No clear difference")
    assert "no clear difference" in bands_text(typed(r))


def _paired(r, system, other, bench, estimate, low, high):
    entry = next(s for s in r["benchmarks"]["scores"] if s["vectors"] == system)
    entry["versus"][other][bench].update(estimate=estimate, low=low, high=high)


def test_benchmarks_headline_follows_the_paired_intervals(r):
    text = benchmarks_headline(typed(r))
    sets = sum(1 for s in r["benchmarks"]["scores"] if s["vectors"].startswith(("static", "layer_", "decontext_"))
               and s.get("wordsim353") is not None)
    assert text == ("On WordSim-353, the best vectors here (layer 4, averaged over each word's sentences) agree with "
                    "its human similarity judgements better than random vectors and the same model at random "
                    "initialisation, but worse than "
                    "word2vec trained on the probe's corpus (WordSim-353 Spearman 0.29, word2vec 0.60); picked as the "
                    f"best of {sets} vector sets on these same pairs, so its score and its lead are optimistic.")
    assert sets > 1
    # swap the last layer's and word2vec's scores: the paired difference changes sign, and so does the claim
    scores = {s["vectors"]: s for s in r["benchmarks"]["scores"]}
    scores["layer_4"]["wordsim353"], scores["word2vec"]["wordsim353"] = 0.60, 0.29
    _paired(r, "layer_4", "word2vec", "wordsim353", 0.31, 0.19, 0.44)
    text = benchmarks_headline(typed(r))
    assert ("better than word2vec trained on the probe's corpus, random vectors and the same model at random "
            "initialisation") in text
    assert "worse than" not in text and "(WordSim-353 Spearman 0.60, word2vec 0.29)" in text
    # an interval that includes 0: no claim either way
    _paired(r, "layer_4", "word2vec", "wordsim353", 0.05, -0.04, 0.14)
    assert "; no clear difference from word2vec trained on the probe's corpus at this scale" in benchmarks_headline(typed(r))
    _paired(r, "layer_4", "random", "wordsim353", 0.05, -0.04, 0.14)
    scores["layer_4"]["versus"]["untrained"]["wordsim353"].update(estimate=0.0, low=-0.1, high=0.1)
    assert benchmarks_headline(typed(r)).startswith(
        "On WordSim-353, the best vectors here (layer 4, averaged over each word's sentences) are not told apart from "
        "word2vec "
        "trained on the probe's corpus, random vectors and the same model at random initialisation at this scale")
    for s in r["benchmarks"]["scores"]:  # one vector set left: nothing was picked
        if s["vectors"] != "layer_4" and s["vectors"].startswith(("static", "layer_", "decontext_")):
            s["wordsim353"] = None
    assert "picked as the best" not in benchmarks_headline(typed(r))


def test_benchmarks_table_states_each_verdict(r):
    table = benchmarks_tables(typed(r))[0]
    row = next(row for row in table["rows"] if row[0] == "WordSim-353")
    assert row[1:4] == ["286 of 353 (81%)", "contextual layer 4", "0.29 [0.18, 0.40]"]
    assert row[4].startswith("lower, Δρ -0.31 [-0.44, -0.19] (word2vec 0.60")
    assert row[5].startswith("higher, Δρ +0.24")
    _paired(r, "layer_4", "word2vec", "wordsim353", 0.05, -0.04, 0.14)
    row = next(row for row in benchmarks_tables(typed(r))[0]["rows"] if row[0] == "WordSim-353")
    assert row[4].startswith("not told apart, Δρ +0.05 [-0.04, +0.14]")


def test_neighbours_headline_follows_the_shared_neighbours(r):
    assert neighbours_headline(typed(r)) == ("At the last layer (layer 4) the probe words' nearest words mostly stay "
                                             "the same as those of the input embeddings: on average 3.5 of the 6 "
                                             "nearest are shared (1 to 5 over 4 words).")
    last = r["neighbours"]["neighbours"]["layer_4"]
    for word in last:
        last[word] = [[f"other{k}", 0.5] for k in range(8)]
    assert "mostly change from those of the input embeddings: on average 0.0 of the 6 nearest are shared (0 to 0 " \
           "over 4 words)" in neighbours_headline(typed(r))


def test_sense_headline_follows_the_mean_cosine(r):
    """Four sentences and no interval: an illustration, read beyond each layer's anisotropy baseline."""
    assert sense_headline(typed(r)) == (
        "An illustration, without an interval: the vectors of 'bank' in 4 sentences, beyond each layer's anisotropy "
        "baseline, are less alike at the last layer than at layer 0 (mean cosine minus the anisotropy baseline 0.92 "
        "at layer 0, 0.49 at layer 4; raw 1.00 and 0.89, baselines 0.08 and 0.39); the geometry section (adjusted "
        "self-similarity over many words) and the sense-accuracy section give the measured answer.")
    r["geometry"]["anisotropy"][-1] = r["geometry"]["anisotropy"][0] - 0.11  # the raw fall, all in the baseline
    assert "4 sentences, beyond each layer's anisotropy baseline, are about as alike at the last layer as at layer 0" \
        in sense_headline(typed(r))
    del r["geometry"]
    r["sense"]["similarity"][-1] = r["sense"]["similarity"][0]
    assert "are about as alike at the last layer as at layer 0 (mean cosine 1.00 at layer 0, 1.00 at layer 4; not " \
           "adjusted for anisotropy" in sense_headline(typed(r))


def test_sense_accuracy_headline_follows_the_interval_and_the_controls(r):
    senses = r["sense_accuracy"]
    assert sense_accuracy_headline(typed(r)) == (
        "Yes: at the last layer a nearest-centroid classifier finds the right meaning 90% of the time, above chance "
        "(50%) and above the word's position and the sentence's length alone (67%).")
    senses["length_accuracy"] = 0.95  # a control that does better than the interval's low end
    assert sense_accuracy_headline(typed(r)).startswith("Not shown: at the last layer")
    assert "not above the word's position and the sentence's length alone (95%)" in sense_accuracy_headline(typed(r))
    senses["accuracy_interval"][-1].update(low=0.45, high=0.60)
    assert sense_accuracy_headline(typed(r)).startswith("Not resolved at this scale")
    assert "interval (45% to 60%) includes chance (50%)" in sense_accuracy_headline(typed(r))
    senses["accuracy_interval"][-1].update(low=0.30, high=0.45)
    assert sense_accuracy_headline(typed(r)).startswith("No: at the last layer")
    del senses["accuracy_interval"]
    assert sense_accuracy_headline(typed(r)).startswith("No verdict: this run recorded no interval")


def test_heads_headline_follows_the_entropy_and_the_strongest_head(r):
    h = r["heads"]
    assert heads_headline(typed(r)) == (
        "On average the heads focus their attention (mean entropy 2.30 nats, about 10 tokens' worth; 3.60, about 37, "
        "if spread evenly; by layer 0.67 to 3.44); the most single-minded is head 2-2, which gives 92% of its "
        "attention to the previous token.")
    h["stats"]["entropy"] = [[0.95 * h["uniform_entropy"]] * 4 for _ in range(4)]
    assert heads_headline(typed(r)).startswith("On average the heads spread their attention broadly")
    h["stats"]["punctuation"][3][1] = 0.97
    assert "head 3-1, which gives 97% of its attention to punctuation" in heads_headline(typed(r))


def test_head_roles_headline_follows_the_role_counts(r):
    assert head_roles_headline(typed(r)) == (
        "Most heads (11 of 16) have no single clear job: no target gets 30% of their attention; the others give "
        "their largest share to the previous token or the next token.")
    h = r["heads"]
    h["roles"] = [["previous"] * 4 for _ in range(4)]
    h["role_mass"] = [[0.5] * 4 for _ in range(4)]
    h["role_ratio"] = [[10.0] * 4 for _ in range(4)]
    assert head_roles_headline(typed(r)) == ("The commonest job is attending to the previous token: 16 of 16 heads "
                                             "give it at least 30% of their attention.")


def test_head_map_headline_follows_within_and_between_layers(r):
    assert head_map_headline(typed(r)).startswith("Yes: heads of the same layer attend more alike than heads of "
                                                  "different layers (mean Jensen-Shannon divergence 0.278 within a "
                                                  "layer, 0.354 across layers, permutation p 0.0")
    js = np.array(r["heads"]["js_divergence"])
    layer = np.repeat(np.arange(4), 4)
    js[layer[:, None] == layer[None, :]] = 0.5  # every pair of the same layer far apart
    np.fill_diagonal(js, 0)
    r["heads"]["js_divergence"] = js.tolist()
    assert head_map_headline(typed(r)).startswith("No: heads of the same layer are not shown to attend more alike")
    assert "not shown to be closer" in head_map_text(typed(r))


def test_head_ablation_headline_follows_the_intervals(r):
    assert head_ablation_headline(typed(r)) == (
        "3 of 16 heads matter on their own after Holm's adjustment over the 16 (7 read alone): zeroing one raises the "
        "masked-word loss beyond its 95% interval; the costliest is head 2-0 (next token), +0.50 nats.")
    a = r["head_ablation"]
    a["interval95"] = [[x / 4 for x in row] for row in a["interval95"]]  # tighter intervals: more heads survive Holm
    assert head_ablation_headline(typed(r)).startswith("10 of 16 heads matter on their own after Holm's adjustment over "
                                                       "the 16 (11 read alone)")
    a["loss_increase"] = [[0.01] * 4 for _ in range(4)]
    a["loss_increase"][1][3] = 0.05
    a["interval95"] = [[0.1] * 4 for _ in range(4)]
    assert head_ablation_headline(typed(r)).startswith(
        "No single head is shown to be needed on its own at this scale: no head, zeroed, raises the masked-word loss "
        "beyond its 95% interval (largest rise +0.05 ±")
    assert "head 1-3 (no clear role)" in head_ablation_headline(typed(r))


def _lens(loss, floor=None, half_width=0.1, objective=None, sentence_gain=None):
    extra = {} if objective is None else {"objective": objective, "mlm_probability": None}
    if sentence_gain is not None:
        extra.update(sentence_gain=sentence_gain, sentence_tokens=[5] * len(sentence_gain[0]))
    return probe_results(logit_lens={"num_layers": len(loss) - 1, "sentences": 8, "masked_tokens": 40, "loss": loss,
                           "accuracy": [0.1] * len(loss), "interval95": [0.1] * len(loss), "mlm_probability": 0.3,
                           "mask_draws": 1, "floor": floor,
                           "gain": None if floor is None else [floor - x for x in loss],
                           "gain_interval95": None if floor is None else [half_width] * len(loss), **extra})


def test_the_lens_and_the_ablation_name_what_a_decoder_predicts():
    """The same numbers from a decoder (objective "next-token") speak of the next word and its tokens, not of masked
    ones, and give no masking rate; files without an objective are a masked LM's."""
    from hf_minattn.probes.report.head_ablation import head_ablation_text
    from hf_minattn.probes.report.logit_lens import logit_lens_text

    decoder = _lens([5.0, 4.0, 3.0], floor=4.5, objective="next-token")
    assert logit_lens_headline(decoder).startswith(
        "Layer 1 is the lowest layer that, read through the output head, is shown to guess the next word better than "
        "word frequencies alone (gain 0.50 ± 0.10 nats over tokens")
    text = logit_lens_text(decoder)
    assert "at 40 predicted next tokens of 8 sentences, decoded" in text and "masking rate" not in text
    assert "masked" not in logit_lens_text(decoder) and "masked tokens of 8 sentences (masking rate 0.3)" in (
        logit_lens_text(_lens([5.0, 4.0, 3.0], floor=4.5)))
    ablation = {"num_layers": 1, "num_heads": 2, "sentences": 8, "masked_tokens": 40, "base_loss": 4.0,
                "loss_increase": [[0.5, 0.0]], "interval95": [[0.1, 0.1]], "mlm_probability": None,
                "objective": "next-token"}
    r = probe_results(head_ablation=ablation)
    assert "zeroing one raises the next-word loss beyond its 95% interval" in head_ablation_headline(r)
    assert head_ablation_text(r).startswith("Next-token loss 4.000 nats on 40 predicted next tokens of 8 sentences; ")
    masked = probe_results(head_ablation={**ablation, "objective": "masked", "mlm_probability": 0.3})
    assert head_ablation_text(masked).startswith("Masked-LM loss 4.000 nats on 40 masked tokens of 8 sentences "
                                                 "(masking rate 0.3); ")


def test_logit_lens_headline_follows_the_gain_over_the_floor():
    assert logit_lens_headline(_lens([5.0, 4.0, 3.0], floor=4.5)).startswith(
        "Layer 1 is the lowest layer that, read through the masked-word head, is shown to guess masked words better "
        "than word frequencies alone (gain 0.50 ± 0.10 nats over tokens; last layer +1.50)")
    assert logit_lens_headline(_lens([4.0, 3.0], floor=4.5)).startswith("Even layer 0")
    assert logit_lens_headline(_lens([5.0, 4.9, 4.8], floor=4.5)).startswith(
        "Not resolved at this scale: no layer")
    assert logit_lens_headline(_lens([5.0, 4.45, 4.0], floor=4.5)).startswith("Layer 2 is the lowest layer")
    assert logit_lens_headline(_lens([5.0, 4.0, 3.0])).startswith(
        "Read through the masked-word head, layer 2 guesses masked words best by its point loss (3.00 nats); no "
        "word-frequency floor was given")


def test_logit_lens_verdict_follows_the_sentences_not_the_tokens():
    """Tokens of one sentence are not independent: where the result kept per-sentence gains, their interval chooses
    the verdict, even where the (narrower) interval over tokens excludes 0."""
    spread = [[-0.6, -0.4, -0.5, -0.5], [1.5, -1.0, 1.4, -0.9], [1.6, 1.4, 1.5, 1.5]]  # layer 1: mean 0.25, wide
    by_tokens = _lens([5.0, 4.25, 3.0], floor=4.5)  # layer 1's gain 0.25 +- 0.1 over tokens: above 0
    by_sentences = _lens([5.0, 4.25, 3.0], floor=4.5, sentence_gain=spread)
    assert logit_lens_headline(by_tokens).startswith("Layer 1 is the lowest layer")
    assert logit_lens_headline(by_sentences).startswith("Layer 2 is the lowest layer") and "over sentences" in (
        logit_lens_headline(by_sentences))
    assert "Gains are means over every token, with 95% t-intervals over the 4 sentences" in logit_lens_text(by_sentences)
    assert "Intervals over tokens: this result kept no per-sentence gains" in logit_lens_text(by_tokens)
    tight = [[-0.6, -0.4, -0.5, -0.5], [0.3, 0.2, 0.25, 0.25], [1.6, 1.4, 1.5, 1.5]]
    assert logit_lens_headline(_lens([5.0, 4.25, 3.0], floor=4.5, sentence_gain=tight)).startswith("Layer 1 is the")
    # each sentence weighted by its tokens, as the loss column: five one-token sentences with a large gain do not
    # outweigh a sentence of 100 tokens below the floor (their plain mean, +0.75, did)
    few = [[-0.5] * 6, [1.5, 1.4, 1.6, 1.5, 1.5, -0.5], [1.6, 1.4, 1.5, 1.5, 1.4, 1.5]]
    weighted = _lens([5.0, 4.93, 3.0], floor=4.5, sentence_gain=few)
    weighted.logit_lens.sentence_tokens = [1, 1, 1, 1, 1, 100]
    assert logit_lens_headline(weighted).startswith("Layer 2 is the lowest layer")
    # one sentence has no interval over sentences: the tokens' is used, and said
    one = _lens([5.0, 4.25, 3.0], floor=4.5, sentence_gain=[[-0.5], [0.25], [1.5]])
    assert logit_lens_headline(one) == logit_lens_headline(by_tokens) and "nan" not in logit_lens_text(one)


def test_example_headline_names_the_sharpest_head(r):
    assert example_headline(typed(r)).startswith("In 'The king and the queen walked their dog to the old castle.', "
                                                 "head 2-2 attends most sharply (lowest mean entropy): 15 of its 17 "
                                                 "tokens look hardest at the previous token")
    example = r["heads"]["examples"][0]
    example["attention"][0][1] = np.eye(len(example["tokens"])).tolist()  # head 0-1: every token on itself
    assert example_headline(typed(r)).endswith("head 0-1 attends most sharply (lowest mean entropy): 17 of its 17 "
                                               "tokens look hardest at itself.")


def test_example_text_calls_the_example_attention_on_one_sentence_not_the_statistics_behind_it(r):
    """The example sentences are not the probe sentences the statistics average over."""
    text = example_text(typed(r))
    assert "attention on one example sentence, not an average over the probe sentences" in text
    assert "patterns behind the statistics" not in text


def test_norm_weighting_headline_follows_the_largest_change(r):
    assert norm_weighting_headline(typed(r)).startswith(
        "No clear difference: weighting attention by the size of what it moves changes no target's mean attention "
        "by 0.01 or more (largest change: punctuation, 0.123 -> 0.118)")
    # the means stay, but the heads move apart: the sentence says so for the means only
    assert ("does not change the means here, but 11 of 16 heads' attention to punctuation changes by 0.01 or more (6 "
            "fall, 5 rise)") in norm_weighting_text(typed(r))
    h = r["heads"]
    still = copy.deepcopy(r)
    still["heads"]["norm_weighted_stats"] = {k: still["heads"]["stats"][k] for k in h["norm_weighted_stats"]}
    assert "norm weighting does not change the picture here (nor any head's" in norm_weighting_text(typed(still))
    h["norm_weighted_stats"]["cls"] = (np.array(h["stats"]["cls"]) * 0.1).tolist()
    h["stats"]["cls"] = (np.array(h["stats"]["cls"]) * 10).tolist()  # [CLS] 0.24 raw, 0.002 weighted
    assert norm_weighting_headline(typed(r)).startswith("Raw attention overstates what [CLS] contributes")
    assert norm_weighting_headline(typed(r)).endswith("(16 of 16 heads move that way).")
    h["norm_weighted_stats"]["cls"][0] = [x * 1.5 for x in h["stats"]["cls"][0]]  # layer 0's heads rise instead
    assert norm_weighting_headline(typed(r)).endswith("(12 of 16 heads move that way).")
    h["stats"]["cls"], h["norm_weighted_stats"]["cls"] = h["norm_weighted_stats"]["cls"], h["stats"]["cls"]
    assert norm_weighting_headline(typed(r)).startswith("Raw attention understates what [CLS] contributes")


def test_norm_weighting_names_a_direction_only_where_most_heads_take_it(r):
    """One head's large fall can carry the mean: a direction is named where most heads move that way too."""
    h = r["heads"]
    raw = np.full((4, 4), 0.6)
    weighted = raw + 0.02  # 15 heads rise a little
    weighted[0, 0] = 0.0  # one head falls far: the mean falls
    h["stats"]["cls"], h["norm_weighted_stats"]["cls"] = raw.tolist(), weighted.tolist()
    headline, text = norm_weighting_headline(typed(r)), norm_weighting_text(typed(r))
    assert headline.startswith("The heads disagree on what [CLS] contributes") and "only 1 of 16 heads" in headline
    assert "but in only 1 of 16 heads: the heads disagree" in text and "overstate" not in text + headline
    most = np.where(np.arange(16).reshape(4, 4) < 10, raw - 0.05, raw + 0.02)  # 10 of the 16 heads fall: a majority
    h["norm_weighted_stats"]["cls"] = most.tolist()
    assert norm_weighting_headline(typed(r)).startswith("Raw attention overstates what [CLS] contributes")
    assert norm_weighting_headline(typed(r)).endswith("(10 of 16 heads move that way).")


def test_norm_example_headline_follows_the_edge_counts(r):
    assert attention_norm_example_headline(typed(r)) == (
        "Weighting by the size of what it moves spreads the first example's attention over more strong links (508 "
        "strong links against 478 raw, every layer's heads and their mean).")
    r["attention_graph_norm_weighted"]["edges"] = r["attention_graph_norm_weighted"]["edges"][:100]
    assert "concentrates the first example's attention over fewer strong links (100" in \
        attention_norm_example_headline(typed(r))
    r["attention_graph_norm_weighted"]["edges"] = r["attention_graph"]["edges"]
    assert attention_norm_example_headline(typed(r)).startswith("No difference in count")


def test_graphs_headline_follows_the_own_share_and_the_pairs(r):
    # the baseline is uniform attention with the same residual: 0.5^4 + (1 - 0.5^4) / 15 words = 0.125, not 1/15
    assert attention_graphs_headline(typed(r)) == (
        "In the first example sentence, after the last layer rollout (each layer's residual path taken as half of it) "
        "attributes more of a word to its own input word than even attention with the same residual would (on average "
        "0.15, against 0.12), and raw attention names different strongest pairs than rollout.")
    rollout, raw = r["attention_graph_rollout"], r["attention_graph"]
    rollout["self_share"][-1] = 0.10
    assert "attributes less of a word to its own input word than even attention" in attention_graphs_headline(typed(r))
    rollout["self_share"][-1] = 0.129
    assert "attributes about as much of a word to its own input word as even attention" in (
        attention_graphs_headline(typed(r)))
    rollout["self_share"][-1] = 0.8
    last = rollout["layers"][-1]
    # raw attention's head-mean edges at the last layer: the same pairs as rollout's strongest
    raw["edges"] = [e for e in raw["edges"] if not (e["layer"] == last and e["head"] == "mean")] + [
        {**e, "weight": 0.9} for e in rollout["edges"]
        if e["layer"] == last and e["head"] == "mean" and e["source"] != e["target"]]
    assert "attributes more of a word to its own input word than even attention with the same residual would (on " \
           "average 0.80" \
        in attention_graphs_headline(typed(r))
    assert "raw attention names mostly the same strongest pairs as rollout" in attention_graphs_headline(typed(r))
    assert "strongest leading to" not in attention_graphs_headline(typed(r))
    for e in rollout["edges"]:  # every strongest edge at the last layer leads to one token
        if e["layer"] == last and e["head"] == "mean" and e["source"] != e["target"]:
            e["target"] = 0
    assert "of rollout's strongest leading to [CLS]" in attention_graphs_headline(typed(r))  # node 0's label


def test_weights_headline_follows_the_rank_against_initialisation(r):
    assert weights_headline(typed(r)) == ("Yes: on average the trained heads' QK and OV circuits use fewer directions "
                                          "(mean effective rank 16.3 of at most 32, against 29.8 at random "
                                          "initialisation; 32 of 32 head circuits lower).")
    w = r["weights"]
    w["trained"]["qk_effective_rank"][0] = w["initial"]["qk_effective_rank"][0]  # layer 0's QK circuits as they were
    assert "; 28 of 32 head circuits lower)." in weights_headline(typed(r))
    w["trained"], w["initial"] = w["initial"], w["trained"]
    assert weights_headline(typed(r)).startswith("No: on average the trained heads' QK and OV circuits do not use")
    del w["initial"]
    assert "no copy of the model at initialisation was measured" in weights_headline(typed(r))


def test_weights_says_fewer_directions_only_where_most_head_circuits_are_lower(r):
    """A few heads can carry the mean: "Yes" needs most head circuits lower too."""
    from hf_minattn.probes.report.weights import weights_text
    w = r["weights"]
    initial = np.full((4, 4), 20.0)
    few = np.full((4, 4), 20.5)  # 30 of 32 circuits a little higher ...
    few[0, 0] = 2.0  # ... one far lower in each of QK and OV: the mean is lower
    for c in ("qk", "ov"):
        w["initial"][f"{c}_effective_rank"], w["trained"][f"{c}_effective_rank"] = initial.tolist(), few.tolist()
    headline = weights_headline(typed(r))
    assert headline.startswith("Not clear: the mean effective rank and the count of head circuits") and (
        "mean effective rank 19.3 of at most 32, against 20.0 at random initialisation; 2 of 32 head circuits "
        "lower" in headline)
    assert "is lower, but the heads disagree: whether the trained heads use fewer directions is not clear" in (
        weights_text(typed(r)))
    most = np.where(np.arange(16).reshape(4, 4) < 10, 19.0, 20.5)  # 20 of 32 lower, and the mean
    for c in ("qk", "ov"):
        w["trained"][f"{c}_effective_rank"] = most.tolist()
    assert weights_headline(typed(r)).startswith("Yes: on average the trained heads' QK and OV circuits use fewer")


def _circuits(identity, ov_copying=0.8, own_rank=2.0):
    interval = lambda e, lo, hi: {"estimate": e, "low": lo, "high": hi}  # noqa: E731
    return probe_results(circuits={"layer": 0, "num_heads": 2, "head_dim": 9, "token_ids": list(range(1, 100)),
                         "identity": [interval(*identity), interval(0.05, -0.1, 0.2)],
                         "cooccurrence": None, "initial": None, "qk_positive": [0.9, 0.5], "qk_self_rank": [3.0, 40.0],
                         "ov_copying": [ov_copying, 0.1], "ov_self_rank": [own_rank, 40.0], "note": ""})


def test_circuits_headline_counts_the_heads_by_their_intervals():
    assert circuits_headline(_circuits((0.7, 0.6, 0.8))) == (
        "In layer 0, the query-key logits of 1 of 2 heads correlate positively with how similar the token embeddings "
        "are (1 "
        "closely); 1 of 2 copy the token they attend to into their output.")
    assert "(weakly: no interval above 0.5)" in circuits_headline(_circuits((0.4, 0.3, 0.5)))
    text = circuits_headline(_circuits((0.05, -0.1, 0.2), ov_copying=0.1))
    assert text.startswith("In layer 0, the query-key logits of none of the 2 heads are shown to follow embedding "
                           "similarity") and text.endswith("; none copies the token it attends to into its output.")
    leaning = circuits_headline(_circuits((0.05, -0.1, 0.2), ov_copying=0.8, own_rank=30.0))  # high score, rank 30
    assert leaning.endswith("; none copies the token it attends to into its output (1 more leans to it: high copying "
                            "scores, but a token's own logit does not rank near the top, 30 of 99 on average).")


def test_drift_headline_names_what_moved_most(r):
    assert drift_headline(typed(r)) == ("Training moved layers.2.W_O the most relative to its initial size "
                                        "(||W - W_0|| / ||W_0|| = 9.9 at the end) and layers.0.W_V the least (1.56).")
    r["drift"]["metrics"]["drift"]["word_embeddings"]["values"][-1] = 20.0
    assert drift_headline(typed(r)).startswith("Training moved word_embeddings the most relative to its initial size "
                                               "(||W - W_0|| / ||W_0|| = 20 at the end)")


def test_drift_names_every_parameter_tied_at_the_top_or_bottom_as_printed(r):
    """Values equal at the precision printed are a tie: naming one of them "the most" ranks what the numbers do not."""
    from hf_minattn.probes.report.drift import drift_text

    drift = r["drift"]["metrics"]["drift"]
    drift["word_embeddings"]["values"][-1] = 9.9004  # prints as 9.9, as layers.2.W_O's 9.9
    drift["layers.0.W_Q"]["values"][-1] = 1.5601  # prints as 1.56, as layers.0.W_V's
    headline, text = drift_headline(typed(r)), drift_text(typed(r))
    assert headline.startswith("Training moved ") and "layers.2.W_O" in headline.split(" the most")[0]
    assert "word_embeddings" in headline.split(" the most")[0] and "their initial sizes" in headline
    assert "layers.0.W_Q" in headline.split(" the least")[0].split("at the end) and ")[1]
    assert "layers.0.W_V" in headline.split(" the least")[0].split("at the end) and ")[1]
    assert "largest for layers.2.W_O and word_embeddings (9.9)" in text or "largest for word_embeddings and " \
        "layers.2.W_O (9.9)" in text
    drift["word_embeddings"]["values"][-1] = 9.96  # prints as 9.96: no longer tied
    assert drift_headline(typed(r)).startswith("Training moved word_embeddings the most relative to its initial size")


def test_drift_says_no_parameter_stands_out_when_all_are_level_and_ranks_no_drift_it_lacks(r):
    """A file without the drift metric was ranked by its gradient norm or loss as "where training moved the weights";
    level values named one parameter "most" and another "least"."""
    from hf_minattn.probes.report.drift import drift_text

    level = copy.deepcopy(r)
    for series in level["drift"]["metrics"]["drift"].values():
        series["values"][-1] = 0.5
    assert drift_headline(typed(level)) == "By the end of training, drift is level across the parameters (0.5)."
    assert drift_text(typed(level)).endswith("no parameter stands out.") and "most" not in drift_text(typed(level))
    other = copy.deepcopy(r)
    del other["drift"]["metrics"]["drift"]
    metric = next(iter(other["drift"]["metrics"]))
    assert drift_headline(typed(other)).startswith(f"By the end of training, {metric} is largest for ")
    assert drift_headline(typed(other)).endswith("; the file records no drift.")
    assert "so it does not say where the weights moved" in drift_text(typed(other))
    assert "moved the weights most and least" in drift_text(typed(r))


def _png(path):
    """A tiny real PNG (1x1, grey)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))
    return path


VIEW = {"schema": "hf_minattn/attention-view/1", "model": "demo", "num_layers": 4, "num_heads": 4, "level": "token",
        "max_tokens": 32, "weightings": ["attention", "rollout"], "sentences": []}


def test_the_summary_shows_a_small_copy_and_each_figure_is_embedded_once(r, tmp_path):
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from hf_minattn.probes.plots import save_figure

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for k in range(4):  # lines, as most of the report's figures are
        ax.plot(np.arange(12), np.random.default_rng(k).random(12), marker="o", label=f"layer {k}")
    ax.legend(), ax.set_title("a figure of the usual size")
    png = save_figure(fig, tmp_path / "geometry.png", "png", dpi=110)
    page = write_report(r, {"geometry": png}, tmp_path / "report.html").read_text()
    figure = figure_uri(png)
    assert page.count(figure) == 1  # in its section only, not again in the summary
    thumb = re.search(r'<img class="thumb" src="data:image/png;base64,([^"]+)"', page).group(1)
    with Image.open(io.BytesIO(base64.b64decode(thumb))) as image:
        width, height = image.size
    assert width <= THUMBNAIL_PIXELS[0] and height == THUMBNAIL_PIXELS[1]  # 715 x 440: height-bound
    assert width == pytest.approx(height * 715 / 440, abs=1)  # the aspect ratio kept
    assert len(thumb) < len(figure) / 5


QUESTIONS = {section.name: section.question for section in SECTIONS}


def test_the_page_opens_with_the_summary_and_each_section_with_its_headline(r, tmp_path):
    png = _png(tmp_path / "figure.png")
    plots = {section.name: png for section in SECTIONS if section.figure}
    page = write_report(r, plots, tmp_path / "report.html", view=VIEW).read_text()
    ids = re.findall(r'<section id="([^"]+)"', page)
    assert ids[0] == "summary" and page.index('<section id="summary"') < page.index('<nav class="contents"')
    # the summary sits right after the model description, the run's record below it
    assert re.search(r"</h1>\s*<p>MinAttnModel: 4 layers[^<]*</p>\s*<section id=\"summary\">", page)
    assert page.index("</section>") < page.index('<p class="provenance">')
    sections = ids[1:]
    assert sections == [section.name for section in SECTIONS if Probes(r, view=VIEW).has(section)]
    assert {"geometry", "benchmarks", "neighbours", "attention_view", "heads", "drift"} <= set(sections)
    # one summary row per section, in order: its question and headline, the figure small and linked
    summary = re.search(r'<table class="summary">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r'<tr><td><a href="#([^"]+)">([^<]*)</a></td><td>([^<]*)</td><td>(.*?)</td></tr>', summary, re.S)
    assert [row[0] for row in rows] == sections
    headlines = {}
    for name, question, answer, figure in rows:
        assert html.unescape(question) == QUESTIONS[name]
        headlines[name] = html.unescape(answer)
        if name in plots:  # a figure: its thumbnail, a PNG, linked to the section
            assert re.fullmatch(rf'<a href="#{name}"><img class="thumb" src="data:image/png;base64,[^"]+" '
                                r'alt="Small: [^"]*\w[^"]*" width="160"></a>', figure), name
        else:
            assert figure == "", name
    probes = Probes(r, view=VIEW)
    for section in SECTIONS:
        if probes.has(section):
            assert headlines[section.name] == section.headline(probes.of(section)), section.name
    assert headlines["neighbours"] == neighbours_headline(typed(r))
    assert headlines["attention_view"] == attention_view_headline(VIEW)
    # each section: its title, then its headline as the first paragraph
    for name in sections:
        body = re.search(rf'<section id="{name}">(.*?)</section>', page, re.S).group(1)
        first = re.match(r'\s*<h2>[^<]*</h2>\s*<p class="answer">([^<]*)</p>', body)
        assert first and html.unescape(first.group(1)) == headlines[name], name
    # the full paragraph and the long tables are collapsed: every <details> closed, each with its summary line
    details = re.findall(r"<details\b[^>]*>", page)
    assert details and set(details) == {"<details>"}
    assert page.count("<summary>All the numbers</summary>") == len(details) == len(sections)
    geometry = re.search(r'<section id="geometry">(.*?)</section>', page, re.S).group(1)
    folded = geometry[geometry.index("<details>"):]
    assert html.unescape(re.search(r'<p class="details">([^<]*)</p>', folded).group(1)) == \
        geometry_with_layer0_text(typed(r))
    assert "<th>adjusted self-similarity</th>" in geometry[:geometry.index("<details>")]  # the per-layer table shown
    heads = re.search(r'<section id="heads">(.*?)</section>', page, re.S).group(1)
    assert "<th>head</th>" in heads[heads.index("<details>"):]  # the per-head table collapsed


def test_the_page_loses_no_sentence_of_the_paragraphs(r, tmp_path):
    png = _png(tmp_path / "figure.png")
    page = html.unescape(write_report(r, {section.name: png for section in SECTIONS if section.figure},
                                      tmp_path / "report.html", view=VIEW).read_text())
    probes = Probes(r, view=VIEW)
    for section in SECTIONS:
        if section.text and probes.has(section):
            assert section.text(probes.of(section)) in page, section.name


def test_graphs_text_says_when_flow_has_no_edge_at_the_last_layer(r):
    from hf_minattn.probes.report.attention_graphs import attention_graphs_text

    flow = r["attention_graph_flow"]
    last = r["attention_graph_rollout"]["layers"][-1]
    assert flow["layers"] == [last] and not flow["edges"]  # the demo's flow: nothing above its threshold
    assert f"Flow has no edge between different words above its threshold ({flow['threshold']:.2f}) at that layer" \
        in attention_graphs_text(typed(r))
    flow["edges"] = [{"source": 2, "target": 0, "layer": last, "head": "mean", "weight": 0.5}]
    assert "Flow has no edge" not in attention_graphs_text(typed(r))


def test_the_holm_count_of_the_ablation_reads_an_undefined_interval_as_no_evidence():
    from hf_minattn.probes.report.head_ablation import holm_count

    inc, half = np.array([[0.5, np.nan], [0.1, 0.0]]), np.array([[0.1, np.nan], [0.2, 0.0]])
    assert holm_count(inc, half) == 1  # 0.5 +- 0.1 only: 0.1 +- 0.2 includes 0, the NaN and the 0 say nothing
    assert holm_count(np.array([0.5, 0.5]), np.array([0.1, 0.1])) == 2
