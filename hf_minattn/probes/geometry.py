"""How contextual are the representations? Ethayarajh (2019), per layer, at word level (pieces mean-pooled).

- SelfSim(w): mean cosine between the vectors of w's occurrences (its first occurrence in each of its first
  `max_occurrences` DISTINCT sentence texts in corpus order, for words seen >= min_count times in >= `min_contexts`
  such sentences: repeated sentences would give identical vectors and inflate it);
- IntraSim: mean cosine of a sentence's words to the sentence's mean vector, averaged over sentences;
- MEV(w): share of the variance of w's (n x d, NOT centred) occurrence matrix explained by its first
  singular direction;
- anisotropy baseline: mean cosine between random words from different sentence texts; the MEV baseline is the MEV
  of matrices of random occurrences of distinct texts (also uncentred) of each word's own number of occurrences, since
  MEV falls as rows are added: one baseline per size, subtracted word by word (a word beyond the random sample's size
  gets the baseline at that size, a higher one: counted in `mev_baseline_capped`). Adjusted = raw - baseline.

Layer 0 (`hidden_states[0]`) is the embedding output: the word embedding, plus a position embedding where the model
adds one to the token vectors (BERT's and GPT-2's learned positions, MinAttn's "learned" or "sinusoidal"; not rotary
positions, which act inside attention, nor "none"), and in BERT a LayerNorm (GPT-2 and Llama have none). Which of
these a model has is measured on the model (`layer0.embedding_output_layout`; whether a position term was found is
kept as `layer0_position`). Without an embedding LayerNorm the position term is added as it is, so position alone
makes occurrences of a word at similar positions look alike.
Given the static vectors (input-embedding rows, pieces mean-pooled: the word embedding WITHOUT the position
signal), the same scores are reported for them apart (`static`), beside layer 0.
Static self-similarity is 1 by construction (every occurrence has the same vector); what varies between models is
its baseline (how anisotropic the embedding matrix is) and so the adjusted value 1 - baseline.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats

from ..stats import bootstrap_interval
from .layer0 import embedding_output_layout, layer0_note

# Frequency bands by the word's rank in the corpus: the top band is mostly stop words.
MIN_CONTEXTS = 5  # distinct sentences a word needs to be scored
BANDS = {"top 100": (0, 100), "100-1000": (100, 1000), "1000+": (1000, None)}


@dataclass
class GeometryResults:
    layers: list  # 0..L
    words_scored: int  # words with enough occurrences
    occurrences_per_word: float
    self_similarity: list  # per layer, mean over words
    intra_similarity: list
    mev: list
    anisotropy: list  # baseline cosine per layer
    mev_baseline: list  # per layer: mean over the words of the baseline at each word's number of occurrences
    adjusted_self_similarity: list
    adjusted_intra_similarity: list
    adjusted_mev: list
    adjusted_self_similarity_by_band: dict = field(default_factory=dict)  # band -> per layer (None if empty)
    words_per_band: dict = field(default_factory=dict)
    most_context_specific: list = field(default_factory=list)  # last layer: [(word, adjusted self-sim)], lowest first
    least_context_specific: list = field(default_factory=list)
    min_contexts: int = MIN_CONTEXTS
    # The word embeddings alone (no position signal), scored like a layer; None if not given. Keys as above
    # (self_similarity, intra_similarity, mev, anisotropy, mev_baseline, adjusted_*), one float each.
    static: dict | None = None
    layer0_note: str = ""  # says what layer 0 and `static` are for this model
    layer0_position: bool | None = None  # a position term measured in layer 0 (None: not measured)
    # `band_contrast`: top 100 - 1000+ at the last layer, with its interval, and over the words of one piece only
    band_contrast: dict | None = None
    layer_contrast: dict | None = None  # `layer_contrast`: last layer - layer 0, per word, with its interval
    mev_baseline_capped: int = 0  # words whose MEV baseline is at the random sample's size, below their own


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def text_ids(kept_sentence, sentence_texts):
    """(n,) one id per distinct sentence TEXT of each occurrence (`kept_sentence`: its sentence index): a repeated
    sentence gives its words the same vectors again, so its copies are one context, not several."""
    ids = {}
    return np.array([ids.setdefault(sentence_texts[s], len(ids)) for s in kept_sentence], dtype=int)


def anisotropy_pairs(sentence_ids, n_pairs=2000, seed=0):
    """(a, b): index arrays of random pairs of occurrences from different sentences: `n_pairs` draws of two uniform
    indices into `sentence_ids` (each occurrence's sentence), those within one sentence (the same occurrence twice
    included) left out, so about n_pairs x P(two draws come from different sentences) remain."""
    sentence_ids = np.asarray(sentence_ids)
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, len(sentence_ids), size=(2, n_pairs))
    different = sentence_ids[a] != sentence_ids[b]
    if not different.any():
        raise ValueError("the anisotropy baseline needs words from at least two sentences")
    return a[different], b[different]


def anisotropy(vectors, sentence_ids, n_pairs=2000, seed=0):
    """Mean cosine between random pairs of vectors that come from different sentences (`anisotropy_pairs`)."""
    a, b = anisotropy_pairs(sentence_ids, n_pairs, seed)
    u = _unit(vectors)
    return float(np.mean(np.sum(u[a] * u[b], axis=1)))


def baseline_groups(kept_sample, n_groups=100, size=16, seed=0, texts=None):
    """(n_groups, size) indices of kept occurrences from the random sample of occurrences (`kept_sample` True): the
    matrices of the MEV baseline. Each group holds occurrences of `size` different sentence texts (`texts`: the text
    id of each kept occurrence, `text_ids`; None: every occurrence its own), as a word's group holds different
    contexts: a row drawn twice, or a copy of it from a repeated sentence, would raise the first singular value's
    share and so the baseline."""
    sample = np.flatnonzero(kept_sample)
    texts = np.arange(len(kept_sample)) if texts is None else np.asarray(texts)
    if size > len(np.unique(texts[sample])):
        raise ValueError(f"the MEV baseline needs groups of {size} different occurrences, but the random sample holds "
                         f"{len(sample)} in {len(np.unique(texts[sample]))} distinct sentences")
    rng = np.random.default_rng(seed)
    shuffled = rng.permuted(np.tile(sample, (n_groups, 1)), axis=1)  # (n_groups, sample): a shuffle a row
    # each row's first occurrence of each text, in the row's order: a uniform draw that skips texts already drawn
    firsts = [np.sort(np.unique(texts[row], return_index=True)[1])[:size] for row in shuffled]
    return np.stack([row[first] for row, first in zip(shuffled, firsts)])  # (n_groups, size)


def self_similarity(unit_vectors):
    """Mean pairwise cosine of n unit vectors without forming the pairs: (|sum u|^2 - n) / (n(n-1))."""
    n = len(unit_vectors)
    total = unit_vectors.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def max_explainable_variance(matrix):
    """sigma_1^2 / sum sigma_i^2 of an (n, d) matrix (or a batch (..., n, d)), from the n x n Gram matrix."""
    x = torch.as_tensor(matrix, dtype=torch.float64)  # torch: batched matmul/eigvalsh are much faster than numpy's
    eigenvalues = torch.linalg.eigvalsh(x @ x.transpose(-1, -2))  # ascending; eigenvalues of X X^T are sigma_i^2
    return (eigenvalues[..., -1] / eigenvalues.sum(dim=-1).clamp_min(1e-30)).numpy()


def distinct_context_groups(kept_word, kept_sentence, sentence_texts, max_occurrences=16, min_contexts=MIN_CONTEXTS):
    """{word: indices of its kept occurrences}, at most one occurrence per distinct sentence TEXT (the first in the
    order given: encode_corpus keeps corpus order), the first `max_occurrences` of them, for words found in >=
    `min_contexts` distinct sentences."""
    if not isinstance(min_contexts, int) or min_contexts < 2:
        raise ValueError(f"min_contexts must be an integer >= 2 (self-similarity needs two contexts), got {min_contexts!r}")
    sentence_key = text_ids(kept_sentence, sentence_texts)
    groups, seen = {}, set()
    for i, (w, key) in enumerate(zip(kept_word.tolist(), sentence_key.tolist())):
        if (w, key) in seen:
            continue
        seen.add((w, key))
        group = groups.setdefault(w, [])
        if len(group) < max_occurrences:
            group.append(i)
    return {w: np.array(g) for w, g in groups.items() if len(g) >= min_contexts}


def static_intra_similarity(static, tokenized):
    """IntraSim of the static vectors: per sentence, mean cosine of its words' vectors to their mean."""
    index, per_sentence = tokenized.index, []
    for words in tokenized.words:
        if words:
            v = static[[index[w] for w in words]]
            per_sentence.append(float(np.mean(_unit(v) @ _unit(v.mean(0)))))
    return float(np.mean(per_sentence)) if per_sentence else float("nan")


def scored_groups(encoded, min_count=5, max_occurrences=16, min_contexts=MIN_CONTEXTS):
    """{word: indices of its kept occurrences} of the words geometry scores (`distinct_context_groups` of the
    occurrences kept for their word, `kept_scored`, not those only drawn for the baselines; and seen >= `min_count`
    times), with their vocab indices sorted (`eligible`)."""
    counts, scored = encoded.tokenized.counts, getattr(encoded, "kept_scored", None)
    chosen = np.arange(len(encoded.kept_word)) if scored is None else np.flatnonzero(scored)  # (chosen,) into kept
    groups = distinct_context_groups(encoded.kept_word[chosen], encoded.kept_sentence[chosen],
                                     encoded.tokenized.sentences, max_occurrences, min_contexts)
    groups = {w: chosen[g] for w, g in groups.items() if counts[w] >= min_count}
    eligible = np.array(sorted(groups), dtype=int)
    if len(eligible) == 0:
        lower = " or a lower --min-count" if min_count > min_contexts else ""
        raise ValueError(f"no word occurs >= {min_count} times in >= {min_contexts} distinct probe sentences; use "
                         f"more probe sentences (--corpus, --dataset, --max-sentences){lower}")
    return groups, eligible


def padded_groups(groups, eligible):
    """(occurrences per word, (words, max occurrences) index of each word's kept occurrences, mask of the real
    entries): zero-padded, since zero rows change neither sums of unit vectors nor singular values, so every word
    is scored in one batched operation."""
    n_occ = np.array([len(groups[w]) for w in eligible])
    padded = np.zeros((len(eligible), n_occ.max()), dtype=int)
    present = np.arange(n_occ.max())[None, :] < n_occ[:, None]
    padded[present] = np.concatenate([groups[w] for w in eligible])
    return n_occ, padded, present


def sample_contexts(encoded):
    """(the random sample's indices into the kept occurrences, `text_ids` of the kept, the sample's distinct texts)."""
    sample, texts = np.flatnonzero(encoded.kept_sample), text_ids(encoded.kept_sentence, encoded.tokenized.sentences)
    return sample, texts, len(np.unique(texts[sample]))


def _layer_scorer(encoded, groups, eligible, n_pairs, mev_groups, seed, contexts):
    """score(vectors of the kept occurrences) -> (mean self-similarity, mean MEV, anisotropy baseline, MEV baseline,
    per-word adjusted self-similarity).

    MEV falls with the number of rows n (isotropic random vectors: about 0.24 at n = 5, 0.09 at n = 16), and words
    keep from min_contexts to max_occurrences occurrences, so each word's MEV is adjusted by the baseline of random
    groups of ITS size (one baseline per size present); the MEV baseline reported is the mean of the words' own
    baselines, so that adjusted MEV = mean MEV - MEV baseline = the mean of the per-word differences. Subsampling
    every word to min_contexts occurrences would match sizes too, but throw away occurrences."""
    n_occ, padded, present = padded_groups(groups, eligible)
    # Baselines from the uniform random sample of occurrences only, as in Ethayarajh (2019); copies of a sentence
    # text are one context there too.
    sample, texts, capacity = contexts  # sample_contexts(encoded)
    # (sizes,), (words,) index into sizes; a word beyond the sample's size gets the largest size it holds
    sizes, size_of_word = np.unique(np.minimum(n_occ, capacity), return_inverse=True)
    random_groups = [baseline_groups(encoded.kept_sample, mev_groups, int(n), seed, texts) for n in sizes]

    def score(layer_vectors):
        unit = _unit(layer_vectors)[padded] * present[..., None]
        total = unit.sum(axis=1)
        sims = (np.sum(total * total, axis=1) - n_occ) / (n_occ * (n_occ - 1))  # see self_similarity()
        mevs = max_explainable_variance(layer_vectors[padded] * present[..., None])
        base = anisotropy(layer_vectors[sample], texts[sample], n_pairs, seed)
        by_size = np.array([np.mean(max_explainable_variance(layer_vectors[g])) for g in random_groups])  # (sizes,)
        mev_base = float(by_size[size_of_word].mean())  # each word's baseline at its own size, averaged
        return float(sims.mean()), float(mevs.mean()), base, mev_base, sims - base

    return score


def _static_scores(score, static, encoded):
    """The scores of the word embeddings alone (`static`: (vocab words, embedding width)), keyed as
    GeometryResults.static. Each score is computed within its own space, so the width can differ from the hidden
    size (ALBERT and ELECTRA factorise their embeddings: 128 wide under a hidden size of 256 in ELECTRA-small)."""
    static = np.asarray(static, dtype=np.float32)
    if static.ndim != 2 or len(static) != len(encoded.tokenized.vocab):
        raise ValueError(f"static must be (vocab words, embedding width) with {len(encoded.tokenized.vocab)} rows, "
                         f"got {static.shape}")
    self_sim, mev, base, mev_base, _ = score(static[encoded.kept_word])
    intra = static_intra_similarity(static, encoded.tokenized)
    return {"self_similarity": self_sim, "intra_similarity": intra, "mev": mev, "anisotropy": base,
            "mev_baseline": mev_base, "adjusted_self_similarity": self_sim - base,
            "adjusted_intra_similarity": intra - base, "adjusted_mev": mev - mev_base}


def layer_contrast(adjusted, seed=0, n_resamples=1000):
    """The published trend as one test: each scored word's adjusted self-similarity at the last layer minus at layer
    0 (`adjusted`: per layer, per word), mean over the words with a 95% percentile bootstrap over them (the
    anisotropy baselines, one number per layer, are held fixed); None with fewer than 2 words."""
    difference = np.asarray(adjusted[-1]) - np.asarray(adjusted[0])  # (words,) paired by word
    if len(difference) < 2:
        return None
    interval = bootstrap_interval(lambda d, axis=-1: d.mean(axis=axis), difference, n_resamples=n_resamples, seed=seed,
                                  vectorized=True)
    return {"layers": [0, len(adjusted) - 1], "estimate": interval.estimate, "low": interval.low,
            "high": interval.high, "words": len(difference)}


def pieces_per_word(tokenized):
    """(vocab,) how many pieces each word of `tokenized` is: the most over its occurrences, since a sentence cut at
    max_length can cut a word's pieces."""
    index = tokenized.index
    pieces = np.zeros(len(tokenized.vocab), dtype=int)
    for words, ids in zip(tokenized.words, tokenized.word_ids):
        counts = np.bincount([w for w in ids if w is not None], minlength=len(words))  # (words,) pieces each
        np.maximum.at(pieces, [index[w] for w in words], counts)
    return pieces


def _gap_interval(top, rare, seed, n_resamples):
    """mean(top) - mean(rare) with a 95% percentile bootstrap interval resampling each group's words (two
    independent samples); None unless both groups have at least 2 words."""
    if len(top) < 2 or len(rare) < 2:
        return None
    gap = lambda a, b, axis=-1: a.mean(axis=axis) - b.mean(axis=axis)  # noqa: E731
    drawn = stats.bootstrap((top, rare), gap, vectorized=True, method="percentile", n_resamples=n_resamples,
                            rng=np.random.default_rng(seed)).confidence_interval
    return {"estimate": float(gap(top, rare)), "low": float(drawn.low), "high": float(drawn.high),
            "words": [len(top), len(rare)]}


def band_contrast(eligible, adjusted_last, seed=0, n_resamples=1000, pieces=None):
    """The published contrast at the last layer, fixed in advance: the mean adjusted self-similarity of the "top 100"
    band minus that of the "1000+" band, with a 95% percentile bootstrap interval that resamples each band's words
    (two independent samples); None unless both bands have at least 2 words.

    Frequent words are mostly one piece and rare ones often several, so the bands differ in piece count too. Given
    `pieces` (vocab,) (`pieces_per_word`), the same contrast over the words of one piece only is added as
    `one_piece` (None where a band has fewer than 2 such words)."""
    top, rare = (_in_band(eligible, band) for band in ("top 100", "1000+"))
    contrast = _gap_interval(adjusted_last[top], adjusted_last[rare], seed, n_resamples)
    if contrast is None:
        return None
    if pieces is not None:
        one = pieces[eligible] == 1
        contrast["one_piece"] = _gap_interval(adjusted_last[top & one], adjusted_last[rare & one], seed, n_resamples)
    return {"bands": ["top 100", "1000+"], **contrast}


def _in_band(eligible, band):
    lo, hi = BANDS[band]
    return (eligible >= lo) & (eligible < (hi if hi is not None else np.inf))


def _by_band(eligible, adjusted):
    """({band: per layer mean adjusted self-similarity, None if empty}, {band: words}) by frequency rank (BANDS)."""
    bands, sizes = {}, {}
    for band in BANDS:
        in_band = _in_band(eligible, band)
        sizes[band] = int(in_band.sum())
        bands[band] = [float(a[in_band].mean()) if in_band.any() else None for a in adjusted]
    return bands, sizes


def geometry(encoded, min_count=5, max_occurrences=16, n_pairs=2000, mev_groups=100, seed=0, min_contexts=MIN_CONTEXTS,
             static=None, model=None):
    """Geometry per layer from an EncodedCorpus (words: one occurrence in each of their first `max_occurrences`
    distinct sentences in corpus order, for words in >= `min_contexts` of them). `static` (vocab words, hidden), e.g.
    from `static_word_vectors(model, encoded.tokenized)`, adds the word embeddings alone as `static`; `model`
    (optional) only words `layer0_note` and measures `layer0_position`."""
    groups, eligible = scored_groups(encoded, min_count, max_occurrences, min_contexts)
    contexts = sample_contexts(encoded)  # (sample, text ids, distinct texts): the baselines' and the cap's
    score = _layer_scorer(encoded, groups, eligible, n_pairs, mev_groups, seed, contexts)
    result = {k: [] for k in ("self", "mev", "base", "mev_base", "adj_self")}
    for layer_vectors in encoded.kept:
        for key, value in zip(result, score(layer_vectors)):
            result[key].append(value)
    static_scores = None if static is None else _static_scores(score, static, encoded)
    layout = None if model is None else embedding_output_layout(model)
    by_word_last = result["adj_self"][-1]
    intra = [float(x) for x in encoded.intra_similarity]
    bands, band_sizes = _by_band(eligible, result["adj_self"])
    tokenized, vocab, capacity = encoded.tokenized, encoded.tokenized.vocab, contexts[2]
    ranked = [(vocab[eligible[i]], float(by_word_last[i])) for i in np.argsort(by_word_last)]
    return GeometryResults(
        layers=list(range(len(encoded.kept))),
        words_scored=len(eligible),
        occurrences_per_word=float(np.mean([len(g) for g in groups.values()])),
        self_similarity=result["self"],
        intra_similarity=intra,
        mev=result["mev"],
        anisotropy=result["base"],
        mev_baseline=result["mev_base"],
        adjusted_self_similarity=[float(a.mean()) for a in result["adj_self"]],
        adjusted_intra_similarity=[i - b for i, b in zip(intra, result["base"])],
        adjusted_mev=[m - b for m, b in zip(result["mev"], result["mev_base"])],
        adjusted_self_similarity_by_band=bands,
        words_per_band=band_sizes,
        most_context_specific=ranked[:10],
        least_context_specific=ranked[::-1][:10],
        min_contexts=min_contexts,
        static=static_scores,
        layer0_note=layer0_note(model, layout),
        layer0_position=None if layout is None else layout["position"],
        band_contrast=band_contrast(eligible, np.asarray(by_word_last), seed, pieces=pieces_per_word(tokenized)),
        layer_contrast=layer_contrast(result["adj_self"], seed),
        mev_baseline_capped=int(sum(len(g) > capacity for g in groups.values())),
    )
