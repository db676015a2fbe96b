"""Static, contextual and decontextualized word vectors, as gensim KeyedVectors ordered by frequency.

- static: rows of the input embedding matrix, a word's pieces mean-pooled (no positions, no context);
- contextual layer l: the word's layer-l vector, pieces mean-pooled, then averaged over its corpus
  occurrences (Bommasani et al. 2020, mean/mean pooling), l = 0..L (layer 0 includes positions);
- decontextualized layer l: the word fed alone as [CLS] word [SEP].
A word's pieces are those it has in running text (`_piece_ids`: byte-level BPE's `Ġking`, not `king`).
All sets share the corpus vocabulary (most frequent first), so benchmarks score the same pairs.
"""

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch
from gensim.models import KeyedVectors

from .encode import pool_pieces
from .loading import run_model
from .progress import progress


VECTOR_FORMATS = {"binary": "bin", "text": "txt", "kv": "kv"}  # WordVectors.save's formats and their file suffixes


@dataclass
class WordVectors:
    """Named vector sets over one vocabulary: "static", "layer_0".."layer_L", "decontext_0".., "word2vec"."""

    vocab: list
    sets: dict  # name -> np.ndarray (vocab, dim)
    counts: np.ndarray | None = None  # (vocab,) occurrences of each word in the corpus the vectors come from

    def keyed_vectors(self, name):
        vectors = self.sets[name]
        kv = KeyedVectors(vector_size=vectors.shape[1])
        kv.add_vectors(self.vocab, vectors.astype(np.float32))
        if self.counts is not None:
            for word, count in zip(self.vocab, self.counts.tolist()):
                kv.set_vecattr(word, "count", count)
        return kv

    def save(self, folder, formats=("binary",)):
        """Every set in `folder`, in each of `formats`: "binary" (the word2vec binary format, `<set>.bin`: float32
        as computed, pickle-free, read by `KeyedVectors.load_word2vec_format(path, binary=True)` and by the original
        word2vec tools), "text" (the word2vec text format, `<set>.txt`, readable by anything, ~3x larger and slower to
        write) and/or "kv" (gensim's own `<set>.kv`, pickle-based: `KeyedVectors.load(path)`). The corpus counts of
        the words go to `counts.txt` with a word2vec format (`load_word2vec_format(..., fvocab=counts)` reads them
        back); a `.kv` holds them itself."""
        if isinstance(formats, str) or not formats or not set(formats) <= set(VECTOR_FORMATS):
            raise ValueError(f"formats must be a non-empty sequence of {list(VECTOR_FORMATS)}, got {formats!r}")
        # word2vec's formats separate a key from its vector by a space: a key holding whitespace would not load back.
        # (gensim's pickled "kv" holds any key.)
        spaced = next((w for w in self.vocab if any(c.isspace() for c in w)), None) if set(formats) - {"kv"} else None
        if spaced is not None:
            raise ValueError(f"word {spaced[:60]!r} holds whitespace: the word2vec formats cannot store it as a key")
        os.makedirs(folder, exist_ok=True)
        paths = {}
        counts = os.path.join(folder, "counts.txt") if self.counts is not None else None
        for i, name in enumerate(self.sets):
            kv = self.keyed_vectors(name)
            for kind in ("binary", "text"):
                if kind in formats:
                    path = os.path.join(folder, f"{name}.{VECTOR_FORMATS[kind]}")
                    paths.setdefault(name, path)
                    # Sorted by count = the vocabulary's own order (most frequent first, ties in order); every set
                    # shares one vocabulary, so one counts file.
                    kv.save_word2vec_format(path, fvocab=counts if i == 0 else None, binary=kind == "binary",
                                            sort_attr="count" if counts else None)
            if "kv" in formats:
                paths.setdefault(name, os.path.join(folder, f"{name}.kv"))
                kv.save(os.path.join(folder, f"{name}.kv"))
        return paths


# The word a word follows when it is tokenized as in running text (`_piece_ids`).
PRECEDING_WORD = "a"


def _follows_a_space(word):
    """Whether `word` is tokenized after a space: in running text a word that starts with a letter or digit follows
    one, while punctuation mostly follows the word before it directly ("land.", "king's")."""
    return word[:1].isalnum()


def _piece_ids(tokenizer, words, add_special_tokens):
    """(input ids, special-token masks) of each word as its pieces occur in a sentence. Byte-level BPE (GPT-2,
    RoBERTa, ModernBERT, OPT, Pythia) gives `Ġking` after a space but `king` for the word alone, and the corpus (the
    layers' vectors, geometry's static vectors) has the former. So a word that starts with a letter or digit is
    tokenized after PRECEDING_WORD and a space, and keeps the pieces whose word index (word_ids, as tokenize_corpus maps
    pieces to words) is not the preceding word's, special tokens in place; WordPiece and SentencePiece give the same
    pieces as for the word alone. Punctuation, a word the tokenizer joins with the preceding word into one pre-token,
    or a tokenizer that drops the preceding word: the word alone."""
    words = list(words)
    batch = tokenizer([f"{PRECEDING_WORD} {w}" for w in words], add_special_tokens=add_special_tokens)
    single = tokenizer(words, add_special_tokens=add_special_tokens, return_special_tokens_mask=True)
    ids, specials = single["input_ids"], single["special_tokens_mask"]  # replaced below where the word follows a space
    for i, input_ids in enumerate(batch["input_ids"]):
        word_ids = batch.word_ids(i)
        before = batch.char_to_word(i, 0)  # the preceding word's index (None: the tokenizer dropped it)
        keep = [t for t, w in enumerate(word_ids) if w != before]  # its pieces out, special tokens (None) kept
        if _follows_a_space(words[i]) and before is not None and any(word_ids[t] is not None for t in keep):
            ids[i], specials[i] = [input_ids[t] for t in keep], [int(word_ids[t] is None) for t in keep]
    return ids, specials


def static_vectors(model, tokenizer, words):
    """Mean of the input-embedding rows of each word's pieces: (len(words), hidden)."""
    ids, _ = _piece_ids(tokenizer, words, add_special_tokens=False)
    flat = torch.tensor([i for piece_ids in ids for i in piece_ids])
    owner = torch.repeat_interleave(torch.arange(len(words)), torch.tensor([len(p) for p in ids]))
    with torch.no_grad():
        weight = model.get_input_embeddings().weight
        rows = weight[flat.to(weight.device)].float().cpu()
    return pool_pieces(rows[None], owner, len(words))[0].numpy()


def static_word_vectors(model, tokenized):
    """(vocab words, hidden): each word's input-embedding rows, mean-pooled over its pieces, i.e. the word embedding
    without position embeddings, LayerNorm or context. The pieces are those the word has most often inside a sentence
    (not first in it; ties: first seen), else most often at all: byte-level BPE gives a sentence's first word other
    pieces (`king`) than the same word after a space (`Ġking`), the form `static_vectors` uses too. Geometry
    scores these as its `static` layer."""
    embedding = model.get_input_embeddings().weight.detach().float().cpu()
    forms = [Counter() for _ in tokenized.vocab]  # per word: (first in its sentence?, piece ids) -> occurrences
    index = tokenized.index
    for ids, word_ids, words in zip(tokenized.encodings, tokenized.word_ids, tokenized.words):
        pieces = {}
        for t, w in enumerate(word_ids):
            if w is not None:
                pieces.setdefault(w, []).append(ids[t])
        for w, piece_ids in pieces.items():
            forms[index[words[w]]][w == 0, tuple(piece_ids)] += 1
    vectors = torch.zeros(len(tokenized.vocab), embedding.shape[1])
    for i, counts in enumerate(forms):
        inside = Counter({form: n for form, n in counts.items() if not form[0]}) or counts
        vectors[i] = embedding[list(inside.most_common(1)[0][0][1])].mean(0)
    return vectors.numpy()


def decontextualized_vectors(model, tokenizer, words, batch_size=256):
    """Each word fed alone ([CLS] word [SEP]); its non-special pieces pooled, per layer: (L+1, len(words), hidden)."""
    ids, specials = _piece_ids(tokenizer, words, add_special_tokens=True)
    order = sorted(range(len(words)), key=lambda i: len(ids[i]))  # similar lengths per batch: little padding
    out = None
    model.eval()
    with torch.inference_mode():
        for start in progress(range(0, len(words), batch_size), desc="decontextualized words"):
            chunk = order[start : start + batch_size]
            # Padded on the right whatever the tokenizer's padding_side: the positions below start each row.
            enc = tokenizer.pad({"input_ids": [ids[i] for i in chunk]}, padding_side="right", return_tensors="pt")
            states = torch.stack(run_model(model, enc, output_hidden_states=True).hidden_states).float()
            b_idx, t_idx = [], []
            for b, i in enumerate(chunk):
                for t, is_special in enumerate(specials[i]):
                    if not is_special:
                        b_idx.append(b), t_idx.append(t)
            pooled = pool_pieces(states[:, b_idx, t_idx], torch.tensor(b_idx), len(chunk))
            if out is None:
                out = torch.zeros(pooled.shape[0], len(words), pooled.shape[-1])
            out[:, chunk] = pooled
    return out.numpy()


def random_vectors(n_words, dim, seed=0):
    """Isotropic Gaussian vectors: the chance level of every benchmark on the same pairs."""
    return np.random.default_rng(seed).standard_normal((n_words, dim)).astype(np.float32)


def all_but_the_top(vectors, components=None):
    """Mu & Viswanath (2018): subtract the mean, then the projections on the top D principal directions
    (D = d/100, at least 1), so that cosines are not dominated by a few common directions."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) < 2:
        raise ValueError(f"all_but_the_top needs a (words, dim) matrix with >= 2 rows, got shape {vectors.shape}")
    components = max(1, vectors.shape[1] // 100) if components is None else components
    centred = vectors - vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    top = vt[:components]
    return (centred - centred @ top.T @ top).astype(np.float32)


def word_vectors(model, tokenizer, encoded, decontextualized=True):
    """All vector sets over the corpus vocabulary of `encoded` (a PooledCorpus, or an EncodedCorpus)."""
    vocab = encoded.vocab if hasattr(encoded, "vocab") else encoded.tokenized.vocab
    counts = encoded.counts if hasattr(encoded, "words") else None  # a PooledCorpus knows them
    sets = {"static": static_vectors(model, tokenizer, vocab)}
    for layer, vectors in enumerate(encoded.contextual):
        sets[f"layer_{layer}"] = vectors
    if decontextualized:
        for layer, vectors in enumerate(decontextualized_vectors(model, tokenizer, vocab)):
            sets[f"decontext_{layer}"] = vectors
    return WordVectors(vocab, sets, counts)
