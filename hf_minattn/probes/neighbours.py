"""Nearest words to probe words under each vector set, and one word's contextual vector across sentences."""

from dataclasses import dataclass, field

import numpy as np
import torch

from .encode import pool_pieces, tokenize_corpus, word_normaliser, words_with_tokens
from .loading import max_length_for, run_model

DEFAULT_WORDS = ("king", "queen", "dog", "the")
# One ambiguous word in sentences that pull it towards different senses.
DEFAULT_SENSE_WORD = "bank"
DEFAULT_SENSE_SENTENCES = (
    "She sat on the bank of the river and watched the water.",
    "The boat drifted towards the muddy bank of the stream.",
    "He deposited his salary at the bank on Monday.",
    "The bank raised its interest rates on loans.",
)
DEFAULT_SENSE_LABELS = ("river", "river", "money", "money")  # the sense of each default sentence


@dataclass
class NeighbourResults:
    words: list  # probe words, normalised
    oov: list  # probe words missing from the corpus vocabulary (no neighbours computed)
    neighbours: dict = field(default_factory=dict)  # vector set -> word -> [(neighbour, cosine)]


@dataclass
class SenseResults:
    word: str
    sentences: list
    layers: list
    similarity: list  # per layer: sentences x sentences cosine matrix of the word's vectors
    nearest: list  # per layer: per sentence, nearest vocabulary words to the in-context vector (layer-l set)
    note: str = ""
    senses: list | None = None  # each sentence's sense where known (DEFAULT_SENSE_LABELS for the default sentences)


def nearest_neighbours(word_vectors, words, normalise=str.lower, topn=8, sets=None):
    """Top-n cosine neighbours of each word under each vector set (gensim most_similar)."""
    words = [normalise(w) for w in words]
    vocab = set(word_vectors.vocab)
    present = [w for w in words if w in vocab]
    result = NeighbourResults(words=words, oov=[w for w in words if w not in vocab])
    for name in sets or word_vectors.sets:
        kv = word_vectors.keyed_vectors(name)
        result.neighbours[name] = {w: [(n, float(c)) for n, c in kv.most_similar(w, topn=topn)] for w in present}
    return result


def word_in_contexts(model, tokenizer, word, sentences, word_vectors=None, topn=5):
    """The contextual vector of `word` in each sentence (pieces pooled; first occurrence), per layer."""
    normalise = word_normaliser(tokenizer)
    target = normalise(word)
    tokenized = tokenize_corpus(tokenizer, sentences, max_length=max_length_for(model, tokenizer))
    positions = []
    for s, words in enumerate(tokenized.words):
        if target not in words:
            raise ValueError(f"{word!r} does not occur (as a whole word) in sentence {s}: {sentences[s]!r}")
        j = words.index(target)
        positions.append([t for t, w in enumerate(tokenized.word_ids[s]) if w == j])
    # Padded on the right whatever the tokenizer's padding_side: `positions` count from the start of each row.
    enc = tokenizer.pad({"input_ids": tokenized.encodings}, padding_side="right", return_tensors="pt")
    with torch.inference_mode():
        states = torch.stack(run_model(model, enc, output_hidden_states=True).hidden_states).float()
    b_idx = [s for s, pos in enumerate(positions) for _ in pos]
    t_idx = [t for pos in positions for t in pos]
    vectors = pool_pieces(states[:, b_idx, t_idx], torch.tensor(b_idx), len(sentences)).numpy()  # (L+1, S, H)
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    nearest = []
    for layer, layer_vectors in enumerate(vectors):
        name = f"layer_{layer}"
        if word_vectors is None or name not in word_vectors.sets:
            nearest.append([])
            continue
        kv = word_vectors.keyed_vectors(name)
        nearest.append([[(n, float(c)) for n, c in kv.similar_by_vector(v, topn=topn + 1) if n != target][:topn]
                        for v in layer_vectors])
    known = tuple(sentences) == DEFAULT_SENSE_SENTENCES
    return SenseResults(word=target, sentences=list(sentences), layers=list(range(len(vectors))),
                        similarity=[(u @ u.T).tolist() for u in unit], nearest=nearest,
                        senses=list(DEFAULT_SENSE_LABELS) if known else None)


@dataclass
class SenseAccuracy:
    """Leave-one-out nearest-centroid sense classification per layer (see `sense_accuracy`). Per-layer lists are
    indexed like `layers`; intervals are dicts of `hf_minattn.stats.Interval` (estimate, low, high, n, method)."""

    words: list  # homonyms scored
    senses: dict  # word -> its sense labels
    occurrences: int  # labelled occurrences scored (one per sentence)
    layers: list  # 0..L (0 = hidden_states[0], the embedding output with positions)
    accuracy: list  # per layer: mean over homonyms of the share classified correctly, centred vectors (All-but-the-Top)
    accuracy_interval: list  # per layer: 95% bootstrap interval of `accuracy`, homonyms then their contexts resampled
    raw_accuracy: list  # per layer: the same on the raw (uncentred) vectors
    raw_interval: list
    accuracy_by_word: dict  # word -> per layer (centred)
    raw_accuracy_by_word: dict  # word -> per layer (raw)
    # what this tie-splitting classifier scores with no information: every sense tied, so each occurrence scores
    # 1/senses; the mean over homonyms of 1/(their senses) (0.5 with two senses, balanced or not). Files written before
    # held the majority sense's share here, which unbalanced senses put above what vectors carrying nothing score.
    chance: float
    # the word embeddings alone, scored like a layer: every occurrence of a word has the same vector, so its senses
    # tie, and it equals `chance` by construction
    static_accuracy: float
    position_accuracy: float  # the same classifier on the word's position (word index) in its sentence alone
    length_accuracy: float  # the same classifier on (word index, sentence length in words)
    mean_position_by_sense: dict  # word -> sense -> mean word index of its occurrences
    control_accuracy_by_word: dict = field(default_factory=dict)  # "position" / "position and length" -> word -> acc
    abtt_components: int = 0  # principal components removed after centring (hidden size / 100, at least 1)
    skipped: list = field(default_factory=list)  # "word: reason" for homonyms that could not be scored
    skipped_sentences: int = 0  # sentences left out: the word not found exactly once within max_length tokens
    note: str = ("Each occurrence is classified by the closer (cosine) of the sense centroids of the OTHER "
                 "occurrences of its word (its own left out); ties count 1/number tied. Vectors: the word's pieces "
                 "mean-pooled; 'accuracy' centres them over the occurrences of all homonyms and removes the top "
                 "principal components (All-but-the-Top, Mu & Viswanath 2018; no labels used), 'raw_accuracy' does "
                 "not. Intervals resample homonyms, then contexts within each (per-occurrence scores held fixed); "
                 "they are per layer, not corrected across layers.")


def _loo_nearest_centroid(vectors, labels, cosine=True):
    """Per item: 1 if its own sense's centroid (without it) is strictly the closest, 1/m if tied among m, else 0.
    Every item at once: item i's centroid of its own sense is (the sense's sum - x_i) / (its count - 1)."""
    x = np.asarray(vectors, dtype=np.float64)
    classes, y = np.unique(np.asarray(labels), return_inverse=True)
    y = y.ravel()
    own = y[:, None] == np.arange(len(classes))  # (items, senses)
    sums = np.stack([x[y == c].sum(0) for c in range(len(classes))])  # (senses, dim)
    counts = np.maximum(np.bincount(y, minlength=len(classes)) - own, 1)  # an item alone in its sense: zero vector
    centroids = (sums - own[..., None] * x[:, None]) / counts[..., None]  # (items, senses, dim)
    if cosine:
        denom = np.linalg.norm(centroids, axis=-1) * np.linalg.norm(x, axis=-1)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            sims = np.where(denom > 0, np.einsum("icd,id->ic", centroids, x) / denom, 0.0)
    else:
        sims = -((centroids - x[:, None]) ** 2).sum(-1)
    sims = np.round(sims, 10)  # equal vectors must tie exactly
    best = sims == sims.max(axis=1, keepdims=True)
    return np.where(best[np.arange(len(x)), y], 1.0 / best.sum(axis=1), 0.0)


def _find_word(enc, i, sentence, target, normalise):
    """(indices of the words of sentence i that are `target`, number of words the tokenizer kept); only the words
    that have tokens are read (`words_with_tokens`)."""
    words = words_with_tokens(enc.word_ids(i))
    hits = []
    for w in words:
        span = enc.word_to_chars(i, w)
        if normalise(sentence[span.start : span.end]) == target:
            hits.append(w)
    return hits, (words[-1] + 1 if words else 0)


def sense_scores(vectors, words, labels, n_resamples=1000, seed=0):
    """Leave-one-out nearest-centroid sense accuracy of one vector set: `vectors` (occurrences, dim), `words` and
    `labels` (the homonym and the sense of each occurrence). Each homonym is classified among its own senses only.
    Returns (accuracy, interval, by_word): the mean over homonyms of their accuracy, its 95% interval from a
    two-level bootstrap (homonyms, then contexts within each), and {word: accuracy}."""
    from hf_minattn.stats import hierarchical_bootstrap

    vectors, words, labels = np.asarray(vectors), np.asarray(words), np.asarray(labels)
    if vectors.ndim != 2 or not len(vectors) == len(words) == len(labels):
        raise ValueError(f"need (occurrences, dim) vectors and one word and label per occurrence, got shapes "
                         f"{vectors.shape}, {words.shape}, {labels.shape}")
    by_word = {w: _loo_nearest_centroid(vectors[words == w], labels[words == w]) for w in dict.fromkeys(words.tolist())}
    interval = hierarchical_bootstrap(np.mean, [(s,) for s in by_word.values()], n_resamples=n_resamples, seed=seed,
                                      vectorized=True)
    return interval.estimate, interval, {w: float(s.mean()) for w, s in by_word.items()}


def _control_accuracy(features, words, labels) -> dict:
    """{homonym: accuracy} of the leave-one-out classifier (Euclidean) on per-occurrence features such as the word's
    position; their mean is the control's accuracy."""
    features, words, labels = np.asarray(features, dtype=float), np.asarray(words), np.asarray(labels)
    return {w: float(_loo_nearest_centroid(features[words == w], labels[words == w], cosine=False).mean())
            for w in dict.fromkeys(words.tolist())}


def _check_homonyms(homonyms):
    if not isinstance(homonyms, dict) or not homonyms:
        raise ValueError(f"homonyms must be a non-empty dict word -> sense -> sentences, got {type(homonyms).__name__}")
    for word, senses in homonyms.items():
        if not isinstance(senses, dict) or len(senses) < 2 or any(len(s) < 2 for s in senses.values()):
            raise ValueError(f"homonym {word!r} needs >= 2 senses with >= 2 sentences each, got {senses!r}")


def labelled_occurrences(tokenizer, homonyms, max_length):
    """The occurrences sense_accuracy scores: (items, skipped, sentences left out), items = [(word, sense, sentence,
    word index, words in the sentence)] for each sentence of `homonyms` (word -> sense -> sentences) where the
    tokenizer finds the word exactly once within `max_length` tokens; a homonym left with fewer than 2 sentences for a
    sense is skipped ("word: reason")."""
    normaliser = tokenizer.backend_tokenizer.normalizer
    normalise = (lambda s: normaliser.normalize_str(s).strip()) if normaliser is not None else str.strip
    items, skipped, left_out = [], [], 0
    for word, senses in homonyms.items():
        target = normalise(word)
        rows = [(sense, s) for sense, sentences in senses.items() for s in sentences]
        enc = tokenizer([s for _, s in rows], truncation=True, max_length=max_length)
        found = [(sense, s, *_find_word(enc, i, s, target, normalise)) for i, (sense, s) in enumerate(rows)]
        kept = [(word, sense, s, hits[0], n) for sense, s, hits, n in found if len(hits) == 1]
        left_out += len(rows) - len(kept)
        counts = [sum(k[1] == sense for k in kept) for sense in senses]
        if min(counts) < 2:
            missing = next(s for sense, s, hits, _ in found if len(hits) != 1)
            skipped.append(f"{word}: fewer than 2 sentences for a sense have it once as a whole word within "
                           f"{max_length} tokens (e.g. {missing!r})")
            continue
        items += kept
    return items, skipped, left_out


def _occurrence_vectors(model, tokenizer, items, batch_size, max_length):
    """(L+1, items, H): each item's word vector per layer, its pieces mean-pooled; batches of similar length, so
    that little of the encoder's work goes to padding."""
    sentences = [s for _, _, s, _, _ in items]
    lengths = [len(ids) for ids in tokenizer(sentences, truncation=True, max_length=max_length)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    vectors = []  # per batch (L+1, b, H)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            batch = [items[i] for i in order[start : start + batch_size]]
            enc = tokenizer([item[2] for item in batch], padding=True, truncation=True, max_length=max_length,
                            return_tensors="pt")
            states = torch.stack(run_model(model, enc, output_hidden_states=True).hidden_states).float()
            b_idx = [b for b, item in enumerate(batch) for wid in enc.word_ids(b) if wid == item[3]]
            t_idx = [t for b, item in enumerate(batch) for t, wid in enumerate(enc.word_ids(b)) if wid == item[3]]
            vectors.append(pool_pieces(states[:, b_idx, t_idx], torch.tensor(b_idx), len(batch)))
    pooled = torch.cat(vectors, dim=1).numpy()
    return pooled[:, np.argsort(order)]  # back in the order of `items`


def sense_accuracy(model, tokenizer, homonyms=None, batch_size=64, n_resamples=1000, seed=0):
    """Can each layer tell a homonym's senses apart? `model`: any AutoModel encoder; `tokenizer`: its fast
    tokenizer. `homonyms`: word -> sense -> sentences (default: the labelled set in senses_data.HOMONYMS, 26 words,
    2 x 22 sentences each). Per layer, the leave-one-out nearest-centroid accuracy (see SenseAccuracy.note) on
    centred (All-but-the-Top) and raw vectors, with 95% intervals, against chance (its score with every sense tied:
    1/senses, averaged over homonyms as the accuracy is) and two controls that see no vectors: the word's position
    alone, and its position with the sentence's length. A sentence where the tokenizer does not find the word exactly
    once (e.g. cut off at max_length) is left out; a homonym left with fewer than 2 sentences for a sense is skipped."""
    from .senses_data import HOMONYMS
    from .vectors import all_but_the_top

    homonyms = HOMONYMS if homonyms is None else homonyms
    _check_homonyms(homonyms)
    max_length = max_length_for(model, tokenizer)
    items, skipped, left_out = labelled_occurrences(tokenizer, homonyms, max_length)
    if not items:
        raise ValueError(f"no homonym could be scored: {'; '.join(skipped)}")
    vectors = _occurrence_vectors(model, tokenizer, items, batch_size, max_length)  # (L+1, items, H)
    words = [w for w, *_ in items]
    labels = [sense for _, sense, *_ in items]
    components = max(1, vectors.shape[-1] // 100)
    centred = [sense_scores(all_but_the_top(v, components), words, labels, n_resamples, seed) for v in vectors]
    raw = [sense_scores(v, words, labels, n_resamples, seed) for v in vectors]
    scored = list(dict.fromkeys(words))
    senses_of = {w: [sense for x, sense in zip(words, labels) if x == w] for w in scored}
    chance = float(np.mean([1 / len(set(ss)) for ss in senses_of.values()]))  # every sense tied: 1/senses
    positions = {w: {s: float(np.mean([it[3] for it in items if it[0] == w and it[1] == s])) for s in homonyms[w]}
                 for w in scored}
    controls = {"position": _control_accuracy([[it[3]] for it in items], words, labels),
                "position and length": _control_accuracy([[it[3], it[4]] for it in items], words, labels)}
    return SenseAccuracy(
        words=scored, senses={w: list(homonyms[w]) for w in scored}, occurrences=len(items),
        layers=list(range(len(vectors))),
        accuracy=[a for a, _, _ in centred], accuracy_interval=[i.to_dict() for _, i, _ in centred],
        raw_accuracy=[a for a, _, _ in raw], raw_interval=[i.to_dict() for _, i, _ in raw],
        accuracy_by_word={w: [by[w] for _, _, by in centred] for w in scored},
        raw_accuracy_by_word={w: [by[w] for _, _, by in raw] for w in scored},
        chance=chance, static_accuracy=sense_scores(np.ones((len(items), 1)), words, labels, n_resamples, seed)[0],
        position_accuracy=float(np.mean(list(controls["position"].values()))),
        length_accuracy=float(np.mean(list(controls["position and length"].values()))),
        mean_position_by_sense=positions, control_accuracy_by_word=controls, abtt_components=components,
        skipped=skipped, skipped_sentences=left_out)
