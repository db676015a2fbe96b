"""The model trained at scale beside ours in answers 5-7: the reference encoder's own verdicts (word pairs against
word2vec and its input embeddings, senses against chance over its homonyms, self-share against uniform attention)
choose the clause "; in a model trained at scale (...)", which a run without the reference leaves out."""

import copy

import numpy as np
import pytest
from test_experiments_mixing import with_mixing
from test_experiments_probe_answers import SEEDS, answers, probes
from test_findings import full_results, numbers_missing, section, summary_line

from hf_minattn.experiments.findings import render_findings
from hf_minattn.experiments.findings_answers import ANSWERS, parameter_count
from hf_minattn.experiments.findings_format import df_cell
from hf_minattn.experiments.probe_answers import probe_answers
from hf_minattn.experiments.probing import REFERENCE_NAME, reference_word_pairs
from hf_minattn.experiments.word_pairs import BENCHMARKS, score

from helpers_benchmarks import Bench

AT_SCALE = "in a model trained at scale (all-MiniLM-L6-v2)"


def answer(number: int, results: dict) -> str:
    return ANSWERS[number - 1][2](results)


def test_the_answers_name_our_model_by_its_parameter_count():
    assert [parameter_count(n) for n in (2915456, 20_000, 1000, 999, 110_000_000)] == ["2.9M", "20k", "1k", "999", "110M"]
    results = full_results(reference={})
    assert results["answers"]["scale"]["parameters"] == 1000
    for number in (5, 6):
        assert "in our 1k-parameter model at this scale, the last" in answer(number, results)


@pytest.mark.parametrize("flip, ours, theirs", [
    ({}, "above the untrained model's", "the last layer's are above word2vec's and above its own input embeddings'"),
    ({"vs_word2vec": "lower"}, "above the untrained model's", "the last layer's are below word2vec's and above"),
    ({"vs_static": "unresolved"}, "above the untrained model's",
     "the last layer's are above word2vec's and not told apart from its own input embeddings'"),
])
def test_the_word_pair_answer_sets_the_reference_beside_ours_by_its_verdicts(flip, ours, theirs):
    results = full_results(reference=flip)
    sentence = answer(5, results)
    assert f"last-layer vectors are {ours}" in sentence and f"; {AT_SCALE}, {theirs}" in sentence
    text = render_findings(results, {})
    assert f"**{sentence}**" in section(text, 5) and sentence in summary_line(text, 5)
    assert "| all-MiniLM-L6-v2: last layer - word2vec |" in section(text, 5)
    assert "all-MiniLM-L6-v2, input embeddings (bootstrap over pairs)" in section(text, 5)
    assert "the model trained at scale in these answers, is six layers distilled from a larger model" in text
    assert numbers_missing(text, results) == []


def test_the_word_pair_clause_flips_with_the_reference_alone():
    """Only the reference's verdict differs: our part of the sentence stays, the reference's clause changes."""
    above, below = (answer(5, full_results(reference={"vs_word2vec": v})) for v in ("higher", "lower"))
    assert above != below and above.split("; in a model")[0] == below.split("; in a model")[0]


@pytest.mark.parametrize("accuracy, clause, verdict", [
    (0.85, "its last layer tells them apart above chance", "higher"),
    (0.5, "its last layer is at chance on them", "equivalent"),
    (0.3, "its last layer classifies them below chance", "lower"),
])
def test_the_sense_answer_sets_the_reference_beside_ours_by_its_test_over_homonyms(accuracy, clause, verdict):
    results = full_results(reference={"accuracy": accuracy})
    ref = results["answers"]["q6"]["senses"]["reference"]
    # one model: the homonyms are its only sample, and the test is alone (no family to adjust in)
    assert ref["vs_chance"]["method"] == "crossed" and ref["vs_chance"]["n"] == 26
    assert ref["vs_chance"]["family_size"] == 1 and ref["vs_chance"]["verdict"] == verdict
    assert ref["vs_chance"]["estimate"] == pytest.approx(accuracy - 0.5, abs=0.01)
    sentence = answer(6, results)
    assert sentence.startswith("Senses: in our 1k-parameter model at this scale, the last layer tells a homonym's")
    assert sentence.endswith(f"; {AT_SCALE}, {clause}")
    text = render_findings(results, {})
    assert f"**{sentence}**" in section(text, 6) and sentence in summary_line(text, 6)
    assert "| all-MiniLM-L6-v2, last layer: sense accuracy - chance, over its 26 homonyms |" in section(text, 6)
    assert numbers_missing(text, results) == []


def test_the_rollout_clause_flips_with_the_reference_alone():
    base = full_results()
    more, less = (answer(7, with_mixing(base, reference_delta=d)) for d in (0.2, -0.2))
    assert more.endswith(f"; {AT_SCALE}, larger than uniform attention's")
    assert less.endswith(f"; {AT_SCALE}, smaller than uniform attention's")
    assert "rollout attributes to its own input in our 1k-parameter model at this scale" in more


def without_reference() -> dict:
    """Results of a run with no reference encoder (`--reference none`)."""
    p = probes()
    p["reference"] = None
    for name in ("last_vs_reference", "reference_vs_word2vec"):
        p["word_pairs"]["q5"].pop(name)
    p["word_pairs"]["scores"]["wordsim353_read"].pop("minilm/layer_6")
    results = with_mixing(full_results(), reference_delta=0.2)
    results["answers"]["q7"]["mixing"].pop("reference")
    results["answers"].update({k: v for k, v in probe_answers(results, p, results["config"]).items() if k != "q7"})
    return results


def test_without_a_reference_the_answers_leave_the_clause_out():
    results = without_reference()
    for number in (5, 6, 7):
        assert "trained at scale" not in answer(number, results)
    assert answer(5, results).startswith("Measured against human similarity judgements (WordSim-353, 274 of 353 "
                                         "pairs, both words in every vocabulary), the full model's last-layer vectors")
    assert answer(6, results).startswith("Senses: the last layer tells")
    text = render_findings(results, {})
    assert "trained at scale" not in text.split("\n## ")[0] and numbers_missing(text, results) == []
    # results from before the reference's own numbers (its name alone): no clause either
    older = full_results()
    assert older["answers"]["q5"]["reference"] == "all-MiniLM-L6-v2"
    assert not any("trained at scale" in answer(n, older) for n in (5, 6))


def test_the_reference_is_one_model_bootstrapped_over_its_pairs_alone():
    """Its cosines are the same at every seed: scored over the pairs alone, its interval is one bootstrap over the
    pairs, as wide as the crossed draw of its copies at every seed (the pairs drawn once for all seeds, so copies do
    not narrow it); its comparisons are a family of their own."""
    rng = np.random.default_rng(0)
    human = rng.normal(size=60)
    keys = [f"{b}{suffix}" for b in BENCHMARKS for suffix in ("", "_read")]
    noise = {k: rng.normal(size=60) for k in keys}
    last, static = f"{REFERENCE_NAME}/layer_6", f"{REFERENCE_NAME}/static"
    cosines = {last: {s: {k: human + rng.normal(0, 0.5, 60) for k in keys} for s in SEEDS[:1]},
               static: {s: noise for s in SEEDS}, "word2vec": {s: {k: rng.normal(size=60) for k in keys} for s in SEEDS}}
    cosines[last] = {s: cosines[last][0] for s in SEEDS}  # one encoder: the same at every seed
    scores, ref = reference_word_pairs(cosines, Bench(human), {"name": "x", "num_layers": 6}, SEEDS,
                                       "wordsim353_read", 300)
    alone = scores["wordsim353_read"][static]
    copies = score({static: cosines[static]}, Bench(human), SEEDS, 300)["wordsim353_read"][static]
    assert alone["n"] == 60 and alone["estimate"] == copies["estimate"]
    assert (alone["high"] - alone["low"]) == pytest.approx(copies["high"] - copies["low"], rel=0.15)
    c = ref["comparisons"]
    assert c["vs_word2vec"]["verdict"] == "higher" and c["vs_static"]["verdict"] == "higher"
    assert c["vs_static"]["n"] == 60 and c["vs_word2vec"]["n"] == len(SEEDS) and c["vs_static"]["family_size"] == 2
    # the table's df column says how each was drawn: the pairs alone, or seeds and pairs crossed (word2vec: one a seed)
    assert df_cell(c["vs_static"]) == "bootstrap over items" and df_cell(alone) == "bootstrap over items"
    assert df_cell(c["vs_word2vec"]) == "crossed bootstrap"
    assert ref["system"] == last and ref["static"] == static and ref["layer"] == 6


def test_the_reference_numbers_reach_the_answers():
    a = answers(probes(reference={}))
    ref = a["q5"]["reference_scores"]
    assert ref["rho"]["estimate"] == 0.7 and ref["static_rho"]["estimate"] == 0.45
    assert set(ref["comparisons"]) == {"vs_word2vec", "vs_static"}
    assert "reference_vs_word2vec" not in a["q5"]["comparisons"]  # the reference's verdicts are not our family's
    assert a["q6"]["senses"]["reference"]["name"] == "all-MiniLM-L6-v2"
