"""Which occurrences geometry scores, and which contexts its baselines treat as different: each word is read in its
first `max_occurrences` DISTINCT sentence texts in corpus order (not its first occurrences, not the shortest sentences
of the length-sorted encoding), and copies of one sentence text are one context for the baselines too."""

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.probes.encode import encode_corpus
from hf_minattn.probes.geometry import baseline_groups, geometry, scored_groups


@pytest.fixture(scope="module")
def model(tokenizer):
    return MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()


def _group_sentences(encoded, word, max_occurrences, min_contexts=5):
    groups, _ = scored_groups(encoded, min_count=5, max_occurrences=max_occurrences, min_contexts=min_contexts)
    assert encoded.tokenized.index[word] in groups, f"{word!r} is not scored"
    return encoded.kept_sentence[groups[encoded.tokenized.index[word]]].tolist()


def test_a_word_repeated_within_its_sentences_keeps_a_slot_per_distinct_sentence(tokenizer, model):
    """"king" five times in each of 4 sentences, then once in each of 10 more: 14 distinct sentences. Counting
    occurrences against max_occurrences spent 16 slots on 4 sentences and left king unscored."""
    sentences = [f"the king king king king king ruled {i}." for i in range(4)]
    sentences += [f"a king sat on the hill {i}." for i in range(10)]
    encoded = encode_corpus(model, tokenizer, sentences, min_count=5, max_occurrences=16, baseline_sample=5)
    assert _group_sentences(encoded, "king", 16) == list(range(14))  # one occurrence per sentence, corpus order


def test_frequent_words_are_read_in_their_first_sentences_in_corpus_order_not_the_shortest(tokenizer, model):
    """The encoding sorts sentences by length; a word's first max_occurrences contexts must still be its first
    sentences in the corpus: long sentences first here, so picking in encoding order would take the short ones. The
    random sample of the baselines (here every occurrence) adds no context of its own."""
    long = [f"the king and the queen ruled the kingdom from a castle {i}." for i in range(6)]
    short = [f"the dog {i}." for i in range(6)]
    encoded = encode_corpus(model, tokenizer, long + short, min_count=5, max_occurrences=4, baseline_sample=10_000)
    assert encoded.kept_sample.all() and len(encoded.kept_sample) == sum(map(len, encoded.tokenized.words))
    assert _group_sentences(encoded, "the", 4, min_contexts=2) == [0, 1, 2, 3]
    # under a larger cap than the encoding's, still only the contexts kept for the word, none of the sample's
    assert _group_sentences(encoded, "the", 16, min_contexts=2) == [0, 1, 2, 3]
    # the kept occurrences in corpus order (sentence, then position), and the scored ones a subset of them
    assert np.all(np.diff(encoded.kept_sentence) >= 0)
    assert encoded.kept_scored.sum() < len(encoded.kept_scored)


def test_repeated_sentences_are_one_context_for_the_word_and_the_baselines():
    """30 sentence texts, each 3 times; a text's words share one vector, texts are orthonormal. Copies of a text are
    one context: the anisotropy baseline (random pairs of different texts) is exactly 0, and a MEV baseline group of
    n occurrences of n different texts has MEV 1/n; pairing copies (cosine 1) raised both."""
    n_texts, copies = 30, 3
    sentence_text = np.tile(np.arange(n_texts), copies)  # (90,) sentence s is text s % 30
    word = sentence_text % 5  # one word per sentence: word j in the 6 texts j, j+5, ..., 3 copies each
    vocab = [f"w{j}" for j in range(5)]
    tokenized = SimpleNamespace(counts=np.bincount(word), sentences=[f"t{t}" for t in sentence_text], vocab=vocab,
                                index={w: i for i, w in enumerate(vocab)}, words=[[vocab[w]] for w in word],
                                word_ids=[[None, 0, None]] * len(word), encodings=[[0, 1, 2]] * len(word))
    encoded = SimpleNamespace(tokenized=tokenized, kept_word=word, kept_sentence=np.arange(len(word)),
                              kept_sample=np.ones(len(word), dtype=bool), kept=np.eye(n_texts)[sentence_text][None],
                              intra_similarity=np.zeros(1))
    result = geometry(encoded, min_count=5, max_occurrences=16, min_contexts=5, mev_groups=50)
    assert result.words_scored == 5 and result.occurrences_per_word == 6  # the 6 texts of each word, once each
    assert result.self_similarity[0] == pytest.approx(0.0, abs=1e-12)
    assert result.anisotropy[0] == 0.0
    assert result.mev_baseline[0] == pytest.approx(1 / 6)


def test_a_mev_baseline_group_holds_one_occurrence_of_each_of_its_texts():
    texts = np.repeat(np.arange(12), 4)  # 48 occurrences of 12 texts
    kept_sample = np.ones(48, dtype=bool)
    kept_sample[::3] = False
    groups = baseline_groups(kept_sample, n_groups=200, size=12, seed=1, texts=texts)
    assert groups.shape == (200, 12) and kept_sample[groups].all()
    assert all(len(set(texts[g])) == 12 for g in groups)
    assert len(set(groups.ravel().tolist())) > 12  # each text's occurrence drawn at random, not always the same one
    with pytest.raises(ValueError, match="in 12 distinct sentences"):
        baseline_groups(kept_sample, size=13, texts=texts)
    # without texts every occurrence is its own: the groups as before
    assert np.array_equal(baseline_groups(kept_sample, 20, 5, 3), baseline_groups(kept_sample, 20, 5, 3, np.arange(48)))


def test_text_ids_number_each_distinct_text_once():
    from hf_minattn.probes.geometry import text_ids

    assert text_ids(np.array([3, 0, 1, 2]), ["a", "b", "a", "c"]).tolist() == [0, 1, 2, 1]
