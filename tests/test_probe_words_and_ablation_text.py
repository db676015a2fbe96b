"""Words of tokenizers that do not split on spaces are refused; the head-ablation sentences follow their numbers; the
co-occurrence sentence names the pairs it ranks (those with positive PPMI), not all that co-occur."""

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import probe_results
from gensim.models import KeyedVectors

from hf_minattn.experiments.findings_probes import related_lines
from hf_minattn.probes.encode import tokenize_words
from hf_minattn.probes.report.head_ablation import head_ablation_headline, head_ablation_text
from hf_minattn.probes.vectors import WordVectors

FINDINGS = Path(__file__).resolve().parent.parent / "docs" / "findings"


def _llama_tokenizer(split):
    """A tiny real LlamaTokenizer (transformers 5: tokenizers-backed, Metaspace with split=False, as Llama ships);
    `split` True swaps in a Metaspace that splits, the layout whose word_ids follow the spaces."""
    from tokenizers import pre_tokenizers
    from transformers import LlamaTokenizer

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{c: i + 3 for i, c in enumerate("▁thekingqusa")}}
    tokenizer = LlamaTokenizer(vocab=vocab, merges=[])
    if split:
        tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                                            split=True)
    return tokenizer


def test_a_tokenizer_whose_word_ids_do_not_split_on_spaces_is_refused_naming_it():
    sentences = ["the king sat", "the queen sat"]
    with pytest.raises(ValueError, match=r"^LlamaTokenizer's word_ids do not split words on spaces .*'the king sat'"):
        tokenize_words(_llama_tokenizer(split=False), sentences, min_contexts=1)
    # the same vocabulary, pre-tokenized on spaces: real words, accepted
    assert sorted(tokenize_words(_llama_tokenizer(split=True), sentences, min_contexts=1).vocab) == \
        ["king", "queen", "sat", "the"]
    # a one-word sentence holds no space to miss: accepted even without splitting
    assert tokenize_words(_llama_tokenizer(split=False), ["king", "king"], min_contexts=1).vocab == ["king"]


def test_saving_a_word_with_whitespace_in_a_word2vec_format_is_refused(tmp_path):
    vectors = WordVectors(vocab=["the king", "sat"], sets={"static": np.eye(2, dtype=np.float32)})
    for formats in (("binary",), ("text",)):
        with pytest.raises(ValueError, match=r"^word 'the king' holds whitespace"):
            vectors.save(tmp_path / "bad", formats=formats)
    assert not (tmp_path / "bad").exists()
    vectors.save(tmp_path / "kv", formats=("kv",))  # gensim's pickle holds any key
    assert KeyedVectors.load(str(tmp_path / "kv" / "static.kv")).index_to_key == ["the king", "sat"]
    vectors.vocab = ["king", "sat"]
    path = vectors.save(tmp_path / "ok")["static"]
    assert KeyedVectors.load_word2vec_format(path, binary=True).index_to_key == ["king", "sat"]


def _ablation(inc, ci):
    return probe_results(head_ablation={"num_heads": 2, "base_loss": 5.0, "masked_tokens": 10, "sentences": 2,
                                        "loss_increase": [inc], "interval95": [ci], "mlm_probability": 0.3})


def test_a_head_lowering_the_loss_is_named_also_when_another_raises_it():
    lowering = "zeroing head 0-1 (-0.30 ± 0.01 nats) lowers it beyond its 95% interval"
    r = _ablation([0.5, -0.3], [0.01, 0.01])
    assert "1 of 2 heads raise the loss" in head_ablation_text(r) and lowering in head_ablation_text(r)
    assert "1 of 2 heads matter" in head_ablation_headline(r) and lowering in head_ablation_headline(r)
    r = _ablation([0.5, -0.005], [0.01, 0.01])  # the second head's interval covers 0: nothing lowers the loss
    assert "lowers it" not in head_ablation_text(r) and "lowers it" not in head_ablation_headline(r)
    r = _ablation([0.005, -0.3], [0.01, 0.01])  # no head raises it: the lowering head is still named
    assert "No single head" in head_ablation_text(r) and lowering in head_ablation_text(r)


def test_the_costliest_head_is_said_to_raise_the_loss_only_when_it_does():
    text = head_ablation_text(_ablation([0.5, -0.3], [0.01, 0.01]))
    assert "zeroing head 0-0 raises it most, by 0.500 ± 0.010 nats" in text
    text = head_ablation_text(_ablation([-0.02, -0.3], [0.01, 0.01]))
    assert "zeroing head 0-0 lowers it least (no head raises it), by -0.020 ± 0.010 nats" in text
    assert "raises it most" not in text
    text = head_ablation_text(_ablation([0.0, -0.3], [0.01, 0.01]))
    assert "zeroing head 0-0 leaves it unchanged (no head raises it)" in text and "raises it most" not in text


def test_the_cooccurrence_sentence_counts_the_pairs_with_positive_ppmi():
    results = json.loads((FINDINGS / "confirmation-v1" / "results.json").read_text())  # seeds 3-7: a fixed run
    q5 = results["answers"]["q5"]
    text = "\n".join(related_lines(q5, results))
    assert "over the 14289 pairs with positive PPMI among the 300 most frequent words" in text
    assert "co-occurring pairs" not in text and "that co-occur" not in text  # this results.json stores no such count
    q5["cooccurrence_pairs"]["cooccurring_pairs"] = 28218  # a run that stored both
    text = "\n".join(related_lines(q5, results))
    assert "over the 14289 pairs with positive PPMI (of 28218 that co-occur) among the 300" in text


def test_the_costliest_head_table_prints_the_sign_of_each_increase():
    """FINDINGS' table printed a fixed "+": a seed where zeroing every head lowers the loss read "+-0.0021"."""
    from hf_minattn.experiments.findings_heads import role_lines

    q4 = json.loads((FINDINGS / "confirmation-v1" / "results.json").read_text())["answers"]["q4"]
    q4["costliest_head"][0]["increase"] = -0.0021
    q4["costliest_head"][1]["increase"] = 0.0164
    rows = [line for line in role_lines(q4) if line.startswith(f"| {q4['costliest_head'][0]['seed']} |")
            or line.startswith(f"| {q4['costliest_head'][1]['seed']} |")]
    assert "| -0.0021 |" in rows[-2] and "| +0.0164 |" in rows[-1] and "+-" not in "".join(rows)


def test_q7_with_one_seed_is_no_verdict():
    """An older results.json without the many-sentence mixing read one seed's self-share as "keeps most of each word
    its own", and its table said "above 0.5" at df 0."""
    from hf_minattn.experiments.findings_answers import q7_answer
    from hf_minattn.experiments.findings_probes import q7_section

    q7 = {"layer": 3, "self_share": {"estimate": 0.7, "low": 0.7, "high": 0.7, "n": 1, "df": 0},
          "sentence": "the king and the queen", "strongest": []}
    assert q7_answer({"answers": {"q7": q7}}).endswith("whether most of a word stays its own is not resolved")
    fig = lambda name, title: ""  # noqa: E731 (no figures)
    assert "| one seed: no interval |" in "\n".join(q7_section(q7, fig))
    q7["self_share"].update(low=0.6, high=0.8, n=3, df=2)
    assert q7_answer({"answers": {"q7": q7}}).endswith("the residual path keeps most of each word its own")
    assert "| above 0.5 |" in "\n".join(q7_section(q7, fig))
    q7["self_share"] = None  # not measured
    assert q7_answer({"answers": {"q7": q7}}).endswith("whether most of a word stays its own is not resolved")


def test_heads_beyond_their_interval_alone_but_not_after_holm_are_not_said_to_matter():
    """One head of two raises the loss beyond its interval read alone (p 0.04), none after Holm's adjustment (p 0.08):
    the text said "removing them costs the model" and the headline "1 of 2 heads matter on their own"."""
    r = _ablation([0.021, 0.0], [0.02, 0.02])
    text, headline = head_ablation_text(r), head_ablation_headline(r)
    assert "and 0 with Holm's adjustment over the 2 heads: none is shown to be needed once they are tested" in text
    assert "costs the model" not in text and "matter on their own" not in headline
    assert headline.startswith("No single head is shown to be needed on its own at this scale: 1 of 2, zeroed, raise")
    r = _ablation([0.5, 0.0], [0.02, 0.02])  # far beyond: held after the adjustment too
    assert "removing it costs the model." in head_ablation_text(r) and "1 of 2 heads matter on their own after Holm" \
        in head_ablation_headline(r)


def test_of_the_heads_beyond_their_interval_only_those_held_by_holm_are_said_to_cost_the_model():
    """Five heads beyond their interval read alone, one of them after Holm's adjustment: "removing them costs the
    model" named five; now the one, and the others as read alone only."""
    r = _ablation([0.5, 0.021, 0.021, 0.021, 0.021, 0.0], [0.02] * 6)
    text = head_ablation_text(r)
    assert "5 of 6 heads raise the loss beyond their 95% interval, each read alone, and 1 with Holm's adjustment" in text
    assert "removing it costs the model; the other 4, read alone only, are not shown to" in text
    assert head_ablation_headline(r).startswith("1 of 6 heads matter on their own after Holm's adjustment over the 6 "
                                                "(5 read alone)")


def test_the_corpus_counts_go_to_counts_txt_with_a_word2vec_format_and_into_a_kv_file_itself(tmp_path):
    """What docs/probes.md and --vectors-format say: `kv` alone writes no counts.txt, its file holds the counts."""
    vectors = WordVectors(vocab=["king", "sat"], sets={"static": np.eye(2, dtype=np.float32)}, counts=np.array([7, 3]))
    vectors.save(tmp_path / "kv", formats=("kv",))
    pickled = KeyedVectors.load(str(tmp_path / "kv" / "static.kv"))
    assert [pickled.get_vecattr(w, "count") for w in ("king", "sat")] == [7, 3]
    assert not (tmp_path / "kv" / "counts.txt").exists()
    vectors.save(tmp_path / "bin", formats=("binary",))
    assert (tmp_path / "bin" / "counts.txt").read_text().split() == ["king", "7", "sat", "3"]
