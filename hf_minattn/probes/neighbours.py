"""Nearest words to probe words under each vector set, and one word's contextual vector across sentences."""

from dataclasses import dataclass, field

import numpy as np
import torch

from .encode import pool_pieces, tokenize_corpus, word_normaliser
from .loading import max_length_for, model_inputs

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
        states = torch.stack(model(**model_inputs(model, enc), output_hidden_states=True).hidden_states).float()
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
