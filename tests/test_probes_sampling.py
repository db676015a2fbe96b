"""Every sampling rule checked by what it samples: each random-pairs or baseline sampler of the probes is asked for its
draw, and the draw itself is inspected (no pair of an occurrence or a word with itself, only the allowed pairs, the
expected count), so that a sampler that quietly draws what it should exclude fails here."""

import numpy as np
import pytest
from conftest import TEXTS, tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.probes.circuits import circuit_hypotheses, cooccurrence_pairs, qk_pairs
from hf_minattn.probes.cooccurrence import word_anisotropy
from hf_minattn.probes.corpus import split_sentences
from hf_minattn.probes.encode import encode_corpus
from hf_minattn.probes.geometry import (anisotropy, anisotropy_pairs, band_contrast, baseline_groups, layer_contrast,
                                        distinct_context_groups, geometry, max_explainable_variance, scored_groups,
                                        self_similarity, text_ids)

SENTENCES = split_sentences(TEXTS, max_sentences=0)  # 8 texts, each 4 times


# ------------------------------------------------------------------ geometry: the anisotropy baseline's pairs


def test_anisotropy_pairs_join_occurrences_of_different_sentences_only():
    sentence_ids = np.repeat(np.arange(5), [1, 2, 3, 4, 40])  # one long sentence: most draws fall within it
    a, b = anisotropy_pairs(sentence_ids, n_pairs=4000, seed=3)
    assert len(a) == len(b) > 0
    assert np.all(sentence_ids[a] != sentence_ids[b])  # never two words of one sentence, nor an occurrence twice
    assert np.all(a != b)
    # 4000 draws, those within a sentence left out: P(different) = 1 - sum (n_s / 50)^2 = 0.348
    expected = 4000 * (1 - np.sum((np.array([1, 2, 3, 4, 40]) / 50) ** 2))
    assert abs(len(a) - expected) < 4 * np.sqrt(4000 * 0.348 * 0.652)
    # every occurrence can be drawn: the long sentence's words pair with the others' (not only short sentences)
    assert set(np.concatenate([a, b]).tolist()) == set(range(50))


def test_the_anisotropy_baseline_is_the_mean_cosine_of_exactly_those_pairs():
    rng = np.random.default_rng(0)
    vectors, sentence_ids = rng.standard_normal((60, 8)), rng.integers(0, 6, 60)
    a, b = anisotropy_pairs(sentence_ids, n_pairs=500, seed=1)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.mean(np.sum(unit[a] * unit[b], axis=1))
    assert anisotropy(vectors, sentence_ids, n_pairs=500, seed=1) == pytest.approx(expected)
    # the known answer: the words of a sentence share one vector, sentences are orthogonal; a single pair within a
    # sentence (or of an occurrence with itself) would add a cosine of 1 to a mean of exact zeros
    assert anisotropy(np.eye(6)[sentence_ids], sentence_ids, n_pairs=500, seed=1) == 0.0


def test_the_anisotropy_baseline_needs_two_sentences():
    with pytest.raises(ValueError, match="two sentences"):
        anisotropy_pairs(np.zeros(10, dtype=int), n_pairs=100)


# ------------------------------------------------------------------ geometry: the MEV baseline's groups


def test_mev_baseline_groups_draw_from_the_random_sample_only():
    kept_sample = np.zeros(200, dtype=bool)
    kept_sample[::7] = True  # 29 occurrences of the uniform random sample; the rest are kept for self-similarity
    groups = baseline_groups(kept_sample, n_groups=300, size=9, seed=2)
    assert groups.shape == (300, 9)
    assert set(groups.ravel().tolist()) == set(np.flatnonzero(kept_sample).tolist())  # all of them, nothing else
    assert all(len(set(g)) == 9 for g in groups.tolist())  # different occurrences in a group, as a word's contexts
    with pytest.raises(ValueError, match="groups of 30 different occurrences, but the random sample holds 29"):
        baseline_groups(kept_sample, size=30)


@pytest.fixture(scope="module")
def encoded(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    return encode_corpus(model, tokenizer, SENTENCES, min_count=2, max_occurrences=3, baseline_sample=40, seed=5)


def test_geometry_draws_its_baselines_from_the_random_sample(encoded):
    """Both baselines of every layer come from the sampled occurrences: the anisotropy is the mean cosine over the
    pairs anisotropy_pairs draws among them (different sentence texts), the same pairs at every layer."""
    result = geometry(encoded, min_count=2, max_occurrences=3, min_contexts=2, n_pairs=300, seed=4)
    sample = np.flatnonzero(encoded.kept_sample)
    texts = text_ids(encoded.kept_sentence, encoded.tokenized.sentences)
    for layer, vectors in enumerate(encoded.kept):
        assert result.anisotropy[layer] == pytest.approx(anisotropy(vectors[sample], texts[sample], n_pairs=300, seed=4))


def test_the_baseline_sample_is_drawn_without_replacement(encoded, tokenizer):
    """encode_corpus marks min(baseline_sample, occurrences) distinct occurrences; drawn with replacement, repeats
    would leave fewer marked."""
    occurrences = sum(len(words) for words in encoded.tokenized.words)
    assert int(encoded.kept_sample.sum()) == 40 < occurrences
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    everything = encode_corpus(model, tokenizer, SENTENCES, min_count=2, baseline_sample=10 * occurrences, seed=5)
    assert int(everything.kept_sample.sum()) == occurrences == len(everything.kept_sample)


# ------------------------------------------------------------------ geometry: self-similarity's occurrences


def test_self_similarity_groups_hold_one_occurrence_per_distinct_sentence_text(encoded):
    groups, eligible = scored_groups(encoded, min_count=2, max_occurrences=3, min_contexts=2)
    texts = encoded.tokenized.sentences
    assert len(eligible) > 0 and sorted(groups) == eligible.tolist()
    for word, group in groups.items():
        assert np.all(encoded.kept_word[group] == word)  # the word's own occurrences
        group_texts = [texts[s] for s in encoded.kept_sentence[group]]
        assert len(set(group_texts)) == len(group_texts)  # never two from one sentence text (nor one twice)
        assert 2 <= len(group) <= 3 and encoded.tokenized.counts[word] >= 2
    # every text is repeated 4 times: counting sentences instead of texts would let "the" reach 3 from one text
    assert len(set(texts)) == 8 and len(texts) == 32


def test_distinct_context_groups_keep_the_first_occurrence_of_each_text():
    texts = ["a", "a", "b", "c", "b", "d"]
    kept_word = np.array([7, 7, 7, 7, 7, 7, 9, 9])
    kept_sentence = np.array([0, 1, 2, 3, 4, 5, 0, 1])  # word 9 only in text "a" (twice)
    groups = distinct_context_groups(kept_word, kept_sentence, texts, max_occurrences=3, min_contexts=2)
    assert list(groups) == [7] and groups[7].tolist() == [0, 2, 3]  # first "a", "b", "c"; capped at 3


def test_self_similarity_leaves_out_each_vector_paired_with_itself():
    """Orthonormal vectors: every pair of distinct occurrences has cosine 0, so the mean is 0 exactly; with the
    diagonal it would be 1/n."""
    assert self_similarity(np.eye(5)) == pytest.approx(0.0, abs=1e-12)
    assert self_similarity(np.ones((4, 3)) / np.sqrt(3)) == pytest.approx(1.0)


# ------------------------------------------------------------------ circuits: the token pairs of each correlation


@pytest.mark.parametrize("n_tokens, max_pairs", [(6, 1000), (30, 100)])
def test_qk_pairs_are_ordered_pairs_of_two_different_tokens(n_tokens, max_pairs):
    rows, cols = qk_pairs(n_tokens, max_pairs, np.random.default_rng(0))
    pairs = list(zip(rows.tolist(), cols.tolist()))
    assert np.all(rows != cols) and len(set(pairs)) == len(pairs)
    assert len(pairs) == min(max_pairs, n_tokens * (n_tokens - 1))
    if max_pairs >= n_tokens * (n_tokens - 1):  # all of them: (i, j) and (j, i) both
        assert set(pairs) == {(i, j) for i in range(n_tokens) for j in range(n_tokens) if i != j}


@pytest.mark.parametrize("max_pairs", [1000, 5])
def test_cooccurrence_pairs_are_unordered_pairs_with_a_positive_ppmi(max_pairs):
    rng = np.random.default_rng(1)
    ppmi = np.maximum(rng.standard_normal((12, 12)), 0)
    ppmi = ppmi + ppmi.T  # symmetric, about 3/4 of it positive, diagonal included
    rows, cols = cooccurrence_pairs(ppmi, max_pairs, np.random.default_rng(0))
    pairs = list(zip(rows.tolist(), cols.tolist()))
    assert np.all(rows < cols) and np.all(ppmi[rows, cols] > 0) and len(set(pairs)) == len(pairs)
    assert len(pairs) == min(max_pairs, int(np.triu(ppmi > 0, k=1).sum()))


def test_circuits_count_the_pairs_their_rules_allow():
    model = MinAttnModel(tiny_config(vocab_size=40)).eval()
    result = circuit_hypotheses(model, n_tokens=12, n_resamples=5, max_pairs=50)
    assert result.pairs["identity"] == 50  # of 12 x 11 ordered pairs
    result = circuit_hypotheses(model, n_tokens=6, n_resamples=5, max_pairs=1000)
    assert result.pairs["identity"] == 6 * 5


# ------------------------------------------------------------------ co-occurrence: the words' anisotropy baseline


def test_word_anisotropy_never_pairs_a_word_with_itself():
    """Orthonormal word vectors: every pair of two different words has cosine 0; a single word drawn twice would add
    1 to a mean of exact zeros (5000 pairs over 20 words: about 250 such draws were the rule broken)."""
    assert word_anisotropy(np.eye(20), n_pairs=5000, seed=0) == 0.0
    assert word_anisotropy(np.ones((20, 4)), n_pairs=100, seed=0) == pytest.approx(1.0)


def test_the_band_contrast_is_top_100_minus_1000_plus_with_a_bootstrap_over_each_bands_words():
    """Known answer: words of rank < 100 at 0.2 +- noise, of rank >= 1000 at 0.5 +- noise; the 100-1000 band (0.0)
    is left out of the contrast. The interval holds the difference of the means and excludes 0; a band of one word
    gives no contrast."""
    rng = np.random.default_rng(0)
    eligible = np.concatenate([np.arange(30), np.arange(200, 230), np.arange(2000, 2040)])  # (100,) frequency ranks
    adjusted = np.concatenate([0.2 + 0.05 * rng.standard_normal(30), np.zeros(30),
                               0.5 + 0.05 * rng.standard_normal(40)])
    c = band_contrast(eligible, adjusted)
    assert c["bands"] == ["top 100", "1000+"] and c["words"] == [30, 40]
    assert c["estimate"] == pytest.approx(adjusted[:30].mean() - adjusted[60:].mean())
    assert c["low"] < c["estimate"] < c["high"] < 0 and c["high"] - c["low"] < 0.1
    assert band_contrast(eligible[29:], adjusted[29:]) is None  # one word of rank < 100


def test_the_band_contrast_over_words_of_one_piece_leaves_the_others_out():
    """Known answer: the rare words of one piece sit level with the frequent ones (all one piece), those of three
    pieces far above. Over all words the bands differ; over words of one piece the estimate is the gap of those
    words' means alone, and its interval holds 0. Too few words of one piece in a band gives None."""
    rng = np.random.default_rng(0)
    eligible = np.concatenate([np.arange(30), np.arange(2000, 2060)])  # (90,) frequency ranks
    top = 0.2 + 0.05 * rng.standard_normal(30)
    level = top[:20] + top.mean() - top[:20].mean()  # 20 rare words whose mean is the frequent words' mean
    adjusted = np.concatenate([top, level, 0.8 + 0.05 * rng.standard_normal(40)])
    pieces = np.ones(2060, dtype=int)
    pieces[eligible[50:]] = 3  # the last 40 rare words are three pieces each
    c = band_contrast(eligible, adjusted, pieces=pieces)
    assert c["high"] < -0.2  # over all words: the frequent words are far lower
    one = c["one_piece"]
    assert one["words"] == [30, 20] and one["estimate"] == pytest.approx(adjusted[:30].mean() - adjusted[30:50].mean())
    assert one["low"] < 0 < one["high"] and abs(one["estimate"]) < 1e-12
    pieces[eligible[31:50]] = 2  # one rare word of one piece left
    assert band_contrast(eligible, adjusted, pieces=pieces)["one_piece"] is None
    assert "one_piece" not in band_contrast(eligible, adjusted)



def test_the_layer_contrast_is_each_words_last_layer_minus_layer_0_with_a_bootstrap_over_the_words():
    rng = np.random.default_rng(0)
    first = 0.6 + 0.05 * rng.standard_normal(50)
    last = first - 0.2 + 0.02 * rng.standard_normal(50)  # every word falls by about 0.2
    c = layer_contrast([first, 0.5 * (first + last), last])
    assert c["layers"] == [0, 2] and c["words"] == 50
    assert c["estimate"] == pytest.approx((last - first).mean())
    assert c["low"] < c["estimate"] < c["high"] < 0 and c["high"] - c["low"] < 0.02  # paired: the word spread cancels
    assert layer_contrast([first[:1], last[:1]]) is None


def _iid_encoded(sizes, dim=64, sample=600, seed=0):
    """A stand-in EncodedCorpus whose word w occurs once in each of sizes[w] sentences of its own, every occurrence an
    iid isotropic vector: no word signal at all, so every adjusted score should be 0."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    kept_word = np.repeat(np.arange(len(sizes)), sizes)  # (occurrences,)
    n = len(kept_word)
    kept_sample = np.zeros(n, dtype=bool)
    kept_sample[rng.choice(n, min(sample, n), replace=False)] = True
    vocab = [f"w{i}" for i in range(len(sizes))]
    tokenized = SimpleNamespace(counts=np.asarray(sizes), sentences=[f"s{i}" for i in range(n)], vocab=vocab,
                                index={w: i for i, w in enumerate(vocab)}, words=[[vocab[w]] for w in kept_word],
                                word_ids=[[None, 0, None]] * n, encodings=[[0, 1, 2]] * n)
    return SimpleNamespace(tokenized=tokenized, kept_word=kept_word, kept_sentence=np.arange(n),
                           kept_sample=kept_sample, kept=rng.standard_normal((1, n, dim)).astype(np.float32),
                           intra_similarity=np.zeros(1))


def test_the_mev_baseline_matches_each_words_number_of_occurrences():
    """MEV falls with the rows: random groups of 5 give about 0.29 at width 64, of 16 about 0.13. Half the words seen 5
    times and half 16, no word signal: a single baseline at the mean size (10.5) left adjusted MEV at +0.03; matched
    word by word it is 0, and the baseline reported is the mean of the two sizes' baselines."""
    def scored(sizes):
        return geometry(_iid_encoded(sizes), min_count=5, max_occurrences=16, min_contexts=5, mev_groups=300)

    mixed, small, large = scored([5, 16] * 50), scored([5] * 100), scored([16] * 100)
    assert abs(mixed.adjusted_mev[0]) < 0.01
    assert small.mev_baseline[0] > large.mev_baseline[0] + 0.1  # the size effect the matching removes
    assert mixed.mev_baseline[0] == pytest.approx((small.mev_baseline[0] + large.mev_baseline[0]) / 2, abs=0.01)


def test_a_word_beyond_the_random_samples_size_gets_the_largest_size_it_holds():
    """A small corpus: the random sample holds 10 occurrences, fewer than the 16 a word keeps. That word's MEV baseline
    is the one at 10 rows (the largest the sample holds), counted; the words of 5 keep theirs, and adjusted MEV is
    still the mean MEV minus the baseline reported. (This raised in baseline_groups.)"""
    small = geometry(_iid_encoded([5, 16] * 3, sample=10), min_count=5, min_contexts=5, mev_groups=50)
    assert small.mev_baseline_capped == 3 and small.words_scored == 6
    assert small.adjusted_mev[0] == pytest.approx(small.mev[0] - small.mev_baseline[0])
    encoded = _iid_encoded([5, 16] * 3, sample=10)
    at = {n: float(np.mean(max_explainable_variance(encoded.kept[0][baseline_groups(encoded.kept_sample, 50, n)])))
          for n in (5, 10)}
    assert small.mev_baseline[0] == pytest.approx((at[5] + at[10]) / 2, rel=1e-6)
    assert geometry(_iid_encoded([5] * 6, sample=10), min_count=5, min_contexts=5).mev_baseline_capped == 0
