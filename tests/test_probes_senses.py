"""Known-answer tests of issue 9's sense and layer-0 probes: the shipped homonym set, leave-one-out
nearest-centroid sense accuracy, distinct contexts, static (position-free) layer 0, and their report sentences."""

import re

import numpy as np
import pytest
from conftest import TEXTS, no_context_model, tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.probes import report
from hf_minattn.probes.corpus import split_sentences
from hf_minattn.probes.encode import encode_corpus
from hf_minattn.probes.geometry import distinct_context_groups, geometry, static_word_vectors
from hf_minattn.probes.neighbours import _loo_nearest_centroid, sense_accuracy
from hf_minattn.probes.senses_data import HOMONYMS


def _position(word, sentence):
    words = re.findall(r"\w+|[^\w\s]", sentence)
    return words.index(word)


def test_shipped_homonyms_are_distinct_labelled_and_position_balanced():
    all_sentences = [s for senses in HOMONYMS.values() for ss in senses.values() for s in ss]
    assert len(set(all_sentences)) == len(all_sentences) and len(HOMONYMS) >= 5
    for word, senses in HOMONYMS.items():
        assert len(senses) >= 2 and all(len(ss) >= 5 for ss in senses.values())
        means = []
        for sentences in senses.values():
            positions = [_position(word, s) for s in sentences]
            assert all(re.findall(r"\w+", s.lower()).count(word) == 1 for s in sentences)
            assert len(set(positions)) >= 4  # varied positions within a sense
            means.append(np.mean(positions))
        assert max(means) - min(means) <= 1.0, word  # matched between senses


def test_leave_one_out_nearest_centroid_known_answers():
    separable = np.array([[1, 0.1], [1, -0.1], [1, 0], [0.1, 1], [-0.1, 1], [0, 1]])
    labels = ["a"] * 3 + ["b"] * 3
    assert _loo_nearest_centroid(separable, labels).mean() == 1.0
    assert _loo_nearest_centroid(np.ones((6, 2)), labels).mean() == 0.5  # identical vectors: ties, chance
    # one word, two senses, items alternating between two directions: each item's own centroid (without it) leans
    # the other way, so leave-one-out scores 0 (the known below-chance bias of leave-one-out on uninformative data)
    alternating = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=float)
    assert _loo_nearest_centroid(alternating, ["a", "a", "b", "b"]).mean() == 0.0


def test_a_model_without_context_or_position_scores_chance(tokenizer):
    homonyms = {"bank": {"river": ("the bank of the river", "she sat on the bank", "a bank of mud"),
                         "money": ("the bank lent money", "money in the bank", "a bank raised rates")}}
    result = sense_accuracy(no_context_model(len(tokenizer)), tokenizer, homonyms)
    assert result.accuracy == [0.5] * 3 and result.chance == 0.5 and result.occurrences == 6
    with pytest.raises(ValueError, match="2 senses"):
        sense_accuracy(no_context_model(len(tokenizer)), tokenizer, {"bank": {"river": ("the bank",)}})


def test_sense_accuracy_on_the_shipped_set(tokenizer):
    result = sense_accuracy(MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval(), tokenizer)
    assert len(result.layers) == 3 and result.chance == 0.5
    assert len(result.words) + len(result.skipped) == len(HOMONYMS)
    assert all(0 <= a <= 1 for a in result.accuracy)


def test_distinct_contexts_count_sentence_texts_once():
    texts = ["a b", "c d", "e f", "g h", "a b", "a b"]
    groups = distinct_context_groups(np.zeros(6, dtype=int), np.arange(6), texts, min_contexts=4)
    assert list(groups[0]) == [0, 1, 2, 3]
    assert distinct_context_groups(np.zeros(6, dtype=int), np.arange(6), texts, min_contexts=5) == {}
    with pytest.raises(ValueError, match="min_contexts"):
        distinct_context_groups(np.zeros(6, dtype=int), np.arange(6), texts, min_contexts=1)


def test_static_layer_equals_layer_zero_without_a_position_signal(tokenizer):
    sentences = split_sentences(TEXTS, max_sentences=0)
    model = no_context_model(len(tokenizer))  # no positions, no embedding LayerNorm: layer 0 = the word embeddings
    encoded = encode_corpus(model, tokenizer, sentences, min_count=2)
    static = static_word_vectors(model, encoded.tokenized)
    result = geometry(encoded, min_count=2, static=static, model=model)
    assert result.static["self_similarity"] == pytest.approx(1.0, abs=1e-5)
    assert result.static["anisotropy"] == pytest.approx(result.anisotropy[0], abs=1e-5)
    assert result.static["adjusted_self_similarity"] == pytest.approx(result.adjusted_self_similarity[0], abs=1e-5)
    assert "no position term" in result.layer0_note
    positioned = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    enc2 = encode_corpus(positioned, tokenizer, sentences, min_count=2)
    moved = geometry(enc2, min_count=2, static=static_word_vectors(positioned, enc2.tokenized), model=positioned)
    assert moved.static["adjusted_self_similarity"] != pytest.approx(moved.adjusted_self_similarity[0], abs=1e-3)
    assert "same scale" in moved.layer0_note
    with pytest.raises(ValueError, match="static must be"):
        geometry(encoded, min_count=2, static=static[:, :3])


def test_sense_accuracy_sentence_follows_the_numbers():
    s = {"words": ["bank"], "occurrences": 12, "accuracy": [0.3, 0.9], "layers": [0, 1], "chance": 0.5,
         "position_accuracy": 0.4}
    assert "Layer 1 separates the senses" in report.sense_accuracy_text({"sense_accuracy": s})
    s["accuracy"] = [0.3, 0.55]
    assert "No layer separates" in report.sense_accuracy_text({"sense_accuracy": s})


def test_layer0_sentence_follows_the_numbers():
    g = {"adjusted_self_similarity": [0.5, 0.3], "static": {"adjusted_self_similarity": 0.9, "anisotropy": 0.1}}
    assert "makes a word's occurrences less alike" in report.layer0_text({"geometry": g})
    g["static"]["adjusted_self_similarity"] = 0.4
    assert "does not make" in report.layer0_text({"geometry": g})
