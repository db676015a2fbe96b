"""Two word-pair measurements of question 5 beside the benchmarks: cosines of a few related and unrelated pairs,
and whether words that occur together get similar vectors (PPMI against cosine).

Pooled word vectors are strongly anisotropic (in a collapsed layer any two words sit at cosine 0.9 or more), and
then raw cosines mostly measure the common direction. In any vector space whose anisotropy baseline (the mean
cosine between random pairs of distinct words) is above `ANISOTROPY_THRESHOLD`, both measurements are made on
All-but-the-Top vectors (Mu & Viswanath 2018: `vectors.all_but_the_top`), with the raw values beside them.
"""

import numpy as np

from hf_minattn.stats import spearman_interval

from .vectors import all_but_the_top

ANISOTROPY_THRESHOLD = 0.1  # mean cosine between random word pairs above which cosines are read after ABTT
RELATED_PAIRS = (("king", "queen"), ("king", "dog"), ("man", "woman"), ("man", "river"))


def _unit(vectors):
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def word_anisotropy(vectors, n_pairs=2000, seed=0) -> float:
    """Mean cosine between `n_pairs` random pairs of distinct rows (words) of `vectors` (words, dim): the cosine
    any two words share whatever they mean (Ethayarajh 2019's baseline, over words instead of occurrences)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) < 2:
        raise ValueError(f"word_anisotropy needs a (words, dim) matrix with >= 2 rows, got shape {vectors.shape}")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(vectors), n_pairs)
    b = (a + rng.integers(1, len(vectors), n_pairs)) % len(vectors)  # a different word than a
    unit = _unit(vectors)
    return float(np.mean(np.sum(unit[a] * unit[b], axis=1)))


def centred_space(vectors, threshold=ANISOTROPY_THRESHOLD, seed=0):
    """(vectors to read cosines in, anisotropy baseline, whether All-but-the-Top was applied): ABTT vectors when
    the baseline is above `threshold`, the vectors themselves otherwise."""
    vectors = np.asarray(vectors, dtype=np.float32)
    baseline = word_anisotropy(vectors, seed=seed)
    if baseline > threshold:
        return all_but_the_top(vectors), baseline, True
    return vectors, baseline, False


def _vector_sets(word_vectors, word2vec=None):
    """{name: (vocab, vectors)}: static, every layer, and word2vec (the `word2vec` KeyedVectors if given, else the
    "word2vec" set of `word_vectors` if it has one) as the positive control."""
    sets = {name: (word_vectors.vocab, word_vectors.sets[name])
            for name in ["static", *[s for s in word_vectors.sets if s.startswith("layer_")]]}
    if word2vec is not None:
        sets["word2vec"] = (list(word2vec.index_to_key), word2vec.vectors)
    elif "word2vec" in word_vectors.sets:
        sets["word2vec"] = (word_vectors.vocab, word_vectors.sets["word2vec"])
    return sets


def related_word_similarities(word_vectors, pairs=RELATED_PAIRS, word2vec=None, threshold=ANISOTROPY_THRESHOLD,
                              seed=0) -> dict:
    """Cosine of a few related and unrelated word pairs under the static vectors, every layer's and word2vec's.

    Per set: {"anisotropy": baseline, "abtt": whether All-but-the-Top was applied, "cosine": {"a/b": cosine in
    the space to read (ABTT where applied)}, "raw": {"a/b": raw cosine}}; None for a pair with a word out of the
    vocabulary."""
    result = {}
    for name, (vocab, vectors) in _vector_sets(word_vectors, word2vec).items():
        index = {w: i for i, w in enumerate(vocab)}
        space, baseline, applied = centred_space(vectors, threshold, seed)
        entry = {"anisotropy": round(baseline, 4), "abtt": applied}
        for key, matrix in (("cosine", space), ("raw", vectors)):
            unit = _unit(np.asarray(matrix, dtype=np.float64))
            entry[key] = {f"{a}/{b}": (round(float(unit[index[a]] @ unit[index[b]]), 4)
                                       if a in index and b in index else None) for a, b in pairs}
        result[name] = entry
    return result


def ppmi_matrix(sentences_words, vocab, window=5):
    """(counts, ppmi), both (len(vocab), len(vocab)) and symmetric: how often two words of `vocab` occur within
    `window` words of each other in a sentence (each word list of `sentences_words`), and their positive
    pointwise mutual information log(p(a, b) / (p(a) p(b))) with the probabilities read off these counts
    (marginals = row sums), 0 where negative or never seen together. A word never pairs with itself."""
    index = {w: i for i, w in enumerate(vocab)}
    # Every sentence's word ids in one array, each sentence followed by `window` -1s so that no pair crosses
    # sentences; the pairs at distance d are then (ids[:-d], ids[d:]) for d = 1 .. window, counted at once.
    gap = (None,) * window
    ids = np.array([index.get(w, -1) for sentence in sentences_words for w in (*sentence, *gap)], dtype=np.int64)
    counts = np.zeros((len(vocab), len(vocab)))
    for d in range(1, window + 1):
        a, b = ids[:-d], ids[d:]
        keep = (a >= 0) & (b >= 0) & (a != b)
        np.add.at(counts, (a[keep], b[keep]), 1)
        np.add.at(counts, (b[keep], a[keep]), 1)
    total = counts.sum()
    marginal = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(counts * total / np.outer(marginal, marginal))
    ppmi = np.where(np.isfinite(pmi) & (pmi > 0), pmi, 0.0)
    return counts, ppmi


def _alignment(vectors, rows, pairs, ppmi, n_resamples, seed):
    """Spearman (with its bootstrap interval over pairs) between PPMI and cosine over `pairs` (two index arrays
    into `rows`, the words' rows in `vectors`)."""
    unit = _unit(np.asarray(vectors, dtype=np.float64)[rows])
    cosine = np.sum(unit[pairs[0]] * unit[pairs[1]], axis=1)
    return spearman_interval(ppmi, cosine, n_resamples=n_resamples, seed=seed).to_dict()


def cooccurrence_alignment(word_vectors, tokenizer, sentences, top_words=300, window=5, word2vec=None,
                           n_resamples=1000, seed=0, threshold=ANISOTROPY_THRESHOLD) -> dict:
    """Do words that occur together get similar vectors? Spearman correlation between the PPMI of two words
    (co-occurrence within `window` words in one of `sentences`) and the cosine of their vectors, over the pairs of
    the `top_words` most frequent words that co-occur (PPMI > 0: pairs never seen together are all tied at 0 and
    would decide the ranks), for the static vectors, every layer's and word2vec's (the positive control: the
    `word2vec` KeyedVectors, else `word_vectors`' "word2vec" set). Words missing from word2vec are left out for
    every set, so that all are scored on the same pairs.

    Per set: {"anisotropy", "abtt" (applied or not), "spearman": Interval dict in the space to read (ABTT where
    the baseline is above `threshold`), "raw": Interval dict of raw cosines}. The interval is a percentile
    bootstrap over pairs; pairs that share a word are not independent, so it is somewhat too narrow."""
    from hf_minattn.probes.encode import tokenize_corpus

    sets = _vector_sets(word_vectors, word2vec)
    known = set(sets["word2vec"][0]) if "word2vec" in sets else None
    vocab = [w for w in word_vectors.vocab if known is None or w in known][:top_words]  # most frequent first
    if len(vocab) < 3:
        raise ValueError(f"cooccurrence_alignment needs at least 3 words in every vocabulary, got {len(vocab)}")
    words = tokenize_corpus(tokenizer, sentences).words
    counts, ppmi = ppmi_matrix(words, vocab, window)
    upper = np.triu_indices(len(vocab), k=1)
    positive = ppmi[upper] > 0
    pairs = (upper[0][positive], upper[1][positive])
    result = {"top_words": len(vocab), "window": window, "pairs": int(len(upper[0])),
              "cooccurring_pairs": int((counts[upper] > 0).sum()), "positive_ppmi_pairs": int(positive.sum()),
              "threshold": threshold, "sets": {}}
    if positive.sum() < 3:
        return result  # too few pairs with positive PPMI to rank
    for name, (set_vocab, vectors) in sets.items():
        index = {w: i for i, w in enumerate(set_vocab)}
        rows = np.array([index[w] for w in vocab])
        space, baseline, applied = centred_space(vectors, threshold, seed)
        raw = _alignment(vectors, rows, pairs, ppmi[pairs], n_resamples, seed)
        result["sets"][name] = {
            "anisotropy": round(baseline, 4), "abtt": applied,
            "spearman": _alignment(space, rows, pairs, ppmi[pairs], n_resamples, seed) if applied else raw, "raw": raw,
        }
    return result
