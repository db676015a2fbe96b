"""Nearest words to probe words under each vector set, and one word's contextual vector across sentences."""

from dataclasses import dataclass, field

import numpy as np
import torch

from .encode import pool_pieces, tokenize_corpus, word_normaliser
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
    enc = tokenizer.pad({"input_ids": tokenized.encodings}, return_tensors="pt")
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
    return SenseResults(word=target, sentences=list(sentences), layers=list(range(len(vectors))),
                        similarity=[(u @ u.T).tolist() for u in unit], nearest=nearest)


@dataclass
class SenseAccuracy:
    """Leave-one-out nearest-centroid sense classification per layer (see `sense_accuracy`)."""

    words: list  # homonyms scored
    senses: dict  # word -> its sense labels
    occurrences: int  # labelled occurrences scored (one per sentence)
    layers: list  # 0..L (0 = hidden_states[0], the embedding output with positions)
    accuracy: list  # per layer: share of occurrences classified correctly (ties: 1/number tied)
    accuracy_by_word: dict  # word -> per layer
    chance: float  # random guessing: mean over words of 1 / number of senses (balanced senses)
    static_accuracy: float  # the word embeddings alone: every occurrence has the same vector, so chance
    position_accuracy: float  # the same classifier on the word's position (word index) alone
    mean_position_by_sense: dict  # word -> sense -> mean word index of its occurrences
    skipped: list = field(default_factory=list)  # "word: reason" for homonyms that could not be scored
    note: str = ("Each occurrence is classified by the closer (cosine) of the sense centroids of the OTHER "
                 "occurrences (its own left out); vectors are the word's pieces mean-pooled, not centred.")


def _loo_nearest_centroid(vectors, labels, cosine=True):
    """Per item: 1 if its own sense's centroid (without it) is strictly the closest, 1/m if tied among m, else 0."""
    x = np.asarray(vectors, dtype=np.float64)
    labels = np.asarray(labels)
    classes = sorted(set(labels.tolist()))
    sums = {c: x[labels == c].sum(0) for c in classes}
    counts = {c: int((labels == c).sum()) for c in classes}
    scores = []
    for i in range(len(x)):
        sims = []
        for c in classes:
            n = counts[c] - (labels[i] == c)
            centroid = (sums[c] - (x[i] if labels[i] == c else 0)) / max(n, 1)
            if cosine:
                denom = np.linalg.norm(centroid) * np.linalg.norm(x[i])
                sims.append(float(centroid @ x[i] / denom) if denom > 0 else 0.0)
            else:
                sims.append(-float(np.sum((centroid - x[i]) ** 2)))
        sims = np.round(np.array(sims), 10)  # equal vectors must tie exactly
        best = np.flatnonzero(sims == sims.max())
        scores.append(1.0 / len(best) if classes.index(labels[i]) in best else 0.0)
    return np.array(scores)


def _find_word(tokenizer, enc, i, sentence, target, normalise):
    n_words = max((w for w in enc.word_ids(i) if w is not None), default=-1) + 1
    hits = []
    for w in range(n_words):
        span = enc.word_to_chars(i, w)
        if normalise(sentence[span.start : span.end]) == target:
            hits.append(w)
    return hits


def sense_accuracy(model, tokenizer, homonyms=None, batch_size=32):
    """Can each layer tell a homonym's senses apart? `homonyms`: word -> sense -> sentences (default: the
    hand-labelled set in senses_data.HOMONYMS). Per layer, leave-one-out nearest-centroid accuracy over all
    occurrences; chance = 1 / senses. Words that the tokenizer does not see as a whole word are skipped."""
    from .senses_data import HOMONYMS

    homonyms = HOMONYMS if homonyms is None else homonyms
    if not isinstance(homonyms, dict) or not homonyms:
        raise ValueError(f"homonyms must be a non-empty dict word -> sense -> sentences, got {type(homonyms).__name__}")
    for word, senses in homonyms.items():
        if not isinstance(senses, dict) or len(senses) < 2 or any(len(s) < 2 for s in senses.values()):
            raise ValueError(f"homonym {word!r} needs >= 2 senses with >= 2 sentences each, got {senses!r}")
    normaliser = tokenizer.backend_tokenizer.normalizer
    normalise = (lambda s: normaliser.normalize_str(s).strip()) if normaliser is not None else str.strip
    max_length = max_length_for(model, tokenizer)
    items, skipped = [], []  # (word, sense, sentence)
    for word, senses in homonyms.items():
        target = normalise(word)
        rows = [(word, sense, s) for sense, sentences in senses.items() for s in sentences]
        enc = tokenizer([s for *_, s in rows], truncation=True, max_length=max_length)
        found = [_find_word(tokenizer, enc, i, s, target, normalise) for i, (*_, s) in enumerate(rows)]
        missing = [s for (*_, s), hits in zip(rows, found) if len(hits) != 1]
        if missing:
            skipped.append(f"{word}: not exactly once as a whole word in {missing[0]!r}")
            continue
        items += [(word, sense, s, hits[0]) for (word, sense, s), hits in zip(rows, found)]
    if not items:
        raise ValueError(f"no homonym could be scored: {'; '.join(skipped)}")
    sentences = [s for _, _, s, _ in items]
    vectors = []  # per batch (L+1, b, H)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            batch = items[start : start + batch_size]
            enc = tokenizer(sentences[start : start + batch_size], padding=True, truncation=True,
                            max_length=max_length, return_tensors="pt")
            states = torch.stack(run_model(model, enc, output_hidden_states=True).hidden_states).float()
            b_idx = [b for b, (*_, w) in enumerate(batch) for wid in enc.word_ids(b) if wid == w]
            t_idx = [t for b, (*_, w) in enumerate(batch) for t, wid in enumerate(enc.word_ids(b)) if wid == w]
            vectors.append(pool_pieces(states[:, b_idx, t_idx], torch.tensor(b_idx), len(batch)))
    vectors = torch.cat(vectors, dim=1).numpy()  # (L+1, items, H)
    words = list(dict.fromkeys(w for w, *_ in items))
    by_word, per_layer, position, positions = {}, np.zeros((len(vectors), len(items))), [], {}
    for word in words:
        idx = [i for i, (w, *_) in enumerate(items) if w == word]
        labels = [items[i][1] for i in idx]
        for layer in range(len(vectors)):
            per_layer[layer, idx] = _loo_nearest_centroid(vectors[layer, idx], labels)
        by_word[word] = per_layer[:, idx].mean(1).tolist()
        pos = np.array([[items[i][3]] for i in idx], dtype=float)
        position.append(_loo_nearest_centroid(pos, labels, cosine=False))
        positions[word] = {s: float(np.mean([items[i][3] for i in idx if items[i][1] == s])) for s in dict.fromkeys(labels)}
    chance = float(np.mean([1 / len(homonyms[w]) for w in words]))
    return SenseAccuracy(words=words, senses={w: list(homonyms[w]) for w in words}, occurrences=len(items),
                         layers=list(range(len(vectors))), accuracy=per_layer.mean(1).tolist(), accuracy_by_word=by_word,
                         chance=chance, static_accuracy=chance, position_accuracy=float(np.concatenate(position).mean()),
                         mean_position_by_sense=positions, skipped=skipped)
