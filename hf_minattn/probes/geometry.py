"""How contextual are the representations? Ethayarajh (2019), per layer, at word level (pieces mean-pooled).

- SelfSim(w): mean cosine between the vectors of w's occurrences (first `max_occurrences` of words seen
  >= min_count times);
- IntraSim: mean cosine of a sentence's words to the sentence's mean vector, averaged over sentences;
- MEV(w): share of the variance of w's (n x d, NOT centred) occurrence matrix explained by its first
  singular direction;
- anisotropy baseline: mean cosine between random words from different sentences; the MEV baseline is
  the MEV of matrices of random occurrences of the same size (also uncentred). Adjusted = raw - baseline.
"""

from dataclasses import dataclass, field

import numpy as np
import torch

# Frequency bands by the word's rank in the corpus: the top band is mostly stop words.
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
    mev_baseline: list
    adjusted_self_similarity: list
    adjusted_intra_similarity: list
    adjusted_mev: list
    adjusted_self_similarity_by_band: dict = field(default_factory=dict)  # band -> per layer (None if empty)
    words_per_band: dict = field(default_factory=dict)
    most_context_specific: list = field(default_factory=list)  # last layer: [(word, adjusted self-sim)], lowest first
    least_context_specific: list = field(default_factory=list)


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def anisotropy(vectors, sentence_ids, n_pairs=2000, seed=0):
    """Mean cosine between random pairs of vectors that come from different sentences."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, len(vectors), size=(2, n_pairs))
    different = sentence_ids[a] != sentence_ids[b]
    if not different.any():
        raise ValueError("the anisotropy baseline needs words from at least two sentences")
    u = _unit(vectors)
    return float(np.mean(np.sum(u[a[different]] * u[b[different]], axis=1)))


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


def geometry(encoded, min_count=5, max_occurrences=16, n_pairs=2000, mev_groups=100, seed=0):
    """Geometry per layer from an EncodedCorpus (words: their first `max_occurrences` occurrences)."""
    counts = encoded.tokenized.counts
    words = encoded.kept_word
    order = np.argsort(words, kind="stable")
    ids, starts, sizes = np.unique(words[order], return_index=True, return_counts=True)
    groups = {w: order[s : s + min(n, max_occurrences)] for w, s, n in zip(ids, starts, sizes)
              if counts[w] >= min_count and n >= 2}
    eligible = np.array(sorted(groups), dtype=int)
    if len(eligible) == 0:
        raise ValueError(f"no word occurs >= {min_count} times (and twice among the kept occurrences); "
                         "use a larger corpus or a lower min_count")
    rng = np.random.default_rng(seed)
    # Zero-padded (words, max occurrences) index: zero rows change neither sums of unit vectors nor
    # singular values, so every word is scored in one batched operation.
    n_occ = np.array([len(groups[w]) for w in eligible])
    padded = np.zeros((len(eligible), n_occ.max()), dtype=int)
    present = np.arange(n_occ.max())[None, :] < n_occ[:, None]
    padded[present] = np.concatenate([groups[w] for w in eligible])
    # Baselines from the uniform random sample of occurrences only, as in Ethayarajh (2019).
    sample = np.flatnonzero(encoded.kept_sample)
    random_groups = sample[rng.integers(0, len(sample), size=(mev_groups, int(round(n_occ.mean()))))]
    result = {k: [] for k in ("self", "mev", "base", "mev_base", "adj_self")}
    for layer_vectors in encoded.kept:
        unit = _unit(layer_vectors)[padded] * present[..., None]
        total = unit.sum(axis=1)
        sims = (np.sum(total * total, axis=1) - n_occ) / (n_occ * (n_occ - 1))  # see self_similarity()
        mevs = max_explainable_variance(layer_vectors[padded] * present[..., None])
        base = anisotropy(layer_vectors[sample], encoded.kept_sentence[sample], n_pairs, seed)
        mev_base = float(np.mean(max_explainable_variance(layer_vectors[random_groups])))
        result["self"].append(float(sims.mean())), result["mev"].append(float(mevs.mean()))
        result["base"].append(base), result["mev_base"].append(mev_base)
        result["adj_self"].append(sims - base)
    by_word_last = result["adj_self"][-1]
    layers = list(range(len(encoded.kept)))
    intra = [float(x) for x in encoded.intra_similarity]
    bands, band_sizes = {}, {}
    for band, (lo, hi) in BANDS.items():
        in_band = (eligible >= lo) & (eligible < (hi if hi is not None else np.inf))
        band_sizes[band] = int(in_band.sum())
        bands[band] = [float(a[in_band].mean()) if in_band.any() else None for a in result["adj_self"]]
    vocab = encoded.tokenized.vocab
    order = np.argsort(by_word_last)
    ranked = [(vocab[eligible[i]], float(by_word_last[i])) for i in order]
    return GeometryResults(
        layers=layers,
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
    )
