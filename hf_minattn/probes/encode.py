"""Run an encoder over sentences once and pool its subword pieces into words, for every layer.

Everything that needs contextual word vectors (vectors.py, geometry.py, neighbours.py) reads the
`EncodedCorpus` built here, so the corpus is encoded exactly once. Pooling: a word's vector is the
mean of its pieces' vectors (Bommasani et al.'s "mean" subword pooling); a word's contextual vector
at layer l is the mean over its occurrences. Layer 0 is `hidden_states[0]`, i.e. the embedding
layer's output, which already includes position embeddings (and, in BERT, a LayerNorm).
"""

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from .loading import max_length_for, model_inputs, require_fast_tokenizer
from .progress import progress


@dataclass
class TokenizedCorpus:
    sentences: list  # the raw sentences
    words: list  # per sentence: its words (normalised as the tokenizer sees them)
    encodings: list  # per sentence: input ids (list[int]) with special tokens
    word_ids: list  # per sentence: word index of each token, None for special tokens
    vocab: list  # distinct words, most frequent first
    counts: np.ndarray  # corpus count of each vocab word

    @property
    def index(self):
        return {w: i for i, w in enumerate(self.vocab)}


def _normaliser(tokenizer):
    normalizer = tokenizer.backend_tokenizer.normalizer
    return normalizer.normalize_str if normalizer is not None else (lambda s: s)


def word_normaliser(tokenizer):
    """The normalisation the tokenizer applies (e.g. lower-casing), so benchmark words match corpus words."""
    normalise = _normaliser(tokenizer)
    return lambda word: normalise(word).strip()


def tokenize_corpus(tokenizer, sentences, max_length=128):
    """Tokenize once; words are the tokenizer's own pre-tokens, so pieces map to words via word_ids()."""
    require_fast_tokenizer(tokenizer)
    if not sentences:
        raise ValueError("the corpus is empty: give at least one sentence")
    normalise = word_normaliser(tokenizer)
    batch = tokenizer(list(sentences), truncation=True, max_length=max_length)
    words, word_ids = [], []
    for i, sentence in enumerate(sentences):
        ids = batch.word_ids(i)
        n_words = max((w for w in ids if w is not None), default=-1) + 1
        spans = [batch.word_to_chars(i, w) for w in range(n_words)]
        words.append([normalise(sentence[s.start : s.end]) for s in spans])
        word_ids.append(ids)
    counter = Counter(w for ws in words for w in ws)
    if not counter:
        raise ValueError("the corpus has no words after tokenization")
    # Most frequent first (ties: first seen), because gensim's restrict_vocab keeps the FIRST n keys.
    vocab = [w for w, _ in counter.most_common()]
    counts = np.array([counter[w] for w in vocab])
    return TokenizedCorpus(list(sentences), words, batch["input_ids"], word_ids, vocab, counts)


@dataclass
class EncodedCorpus:
    tokenized: TokenizedCorpus
    contextual: np.ndarray  # (layers+1, vocab, hidden): mean over occurrences
    kept_word: np.ndarray  # (n_kept,) vocab index of each kept occurrence
    kept_sentence: np.ndarray  # (n_kept,) sentence index of each kept occurrence
    kept_sample: np.ndarray  # (n_kept,) True for the uniform random sample of occurrences (baselines)
    kept: np.ndarray  # (layers+1, n_kept, hidden): vectors of the kept occurrences (for geometry)
    intra_similarity: np.ndarray  # (layers+1,): Ethayarajh's IntraSim averaged over sentences

    @property
    def num_layers(self):
        return self.contextual.shape[0] - 1


def _keep_mask(tokenized, min_count, max_occurrences, sample_size, seed):
    """Which occurrences to keep as full vectors: the first `max_occurrences` of every word seen
    >= min_count times (self-similarity, MEV), and a uniform random sample of all occurrences (the
    anisotropy baselines). Returns per sentence, per word: 0 = drop, 1 = keep, 2 = keep as sample."""
    index = tokenized.index
    seen = np.zeros(len(tokenized.vocab), dtype=int)
    keep = []
    for words in tokenized.words:
        row = []
        for w in words:
            i = index[w]
            row.append(int(tokenized.counts[i] >= min_count and seen[i] < max_occurrences))
            seen[i] += 1
        keep.append(row)
    flat = [(s, j) for s, words in enumerate(tokenized.words) for j in range(len(words))]
    rng = np.random.default_rng(seed)
    for k in rng.choice(len(flat), size=min(sample_size, len(flat)), replace=False):
        s, j = flat[k]
        keep[s][j] = 2
    return keep


def pool_pieces(hidden, word_index, n_words):
    """Mean of the piece vectors of each word: hidden (layers, tokens, H), word_index (tokens,) -> (layers, n_words, H)."""
    sums = hidden.new_zeros(hidden.shape[0], n_words, hidden.shape[-1]).index_add_(1, word_index, hidden)
    pieces = torch.bincount(word_index, minlength=n_words).clamp(min=1).to(hidden.dtype)
    return sums / pieces[None, :, None]


def encode_corpus(model, tokenizer, sentences, batch_size=64, max_length=None, min_count=5,
                  max_occurrences=16, baseline_sample=1000, seed=0, tokenized=None):
    """Encode `sentences` with `model` (no_grad, batched by length) and pool pieces into words per layer."""
    max_length = max_length or max_length_for(model, tokenizer)
    tokenized = tokenized or tokenize_corpus(tokenizer, sentences, max_length)
    index = tokenized.index
    keep = _keep_mask(tokenized, min_count, max_occurrences, baseline_sample, seed)
    n_layers, hidden = model.config.num_hidden_layers, model.config.hidden_size
    sums = torch.zeros(n_layers + 1, len(tokenized.vocab), hidden)
    kept, kept_word, kept_sentence, kept_sample, intra = [], [], [], [], []

    # Sorting by length keeps padding (wasted compute) small.
    order = sorted(range(len(tokenized.sentences)), key=lambda s: len(tokenized.encodings[s]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    model.eval()
    with torch.inference_mode():
        for batch_ids in progress(batches, desc="encoding corpus"):
            enc = tokenizer.pad({"input_ids": [tokenized.encodings[s] for s in batch_ids]}, return_tensors="pt")
            out = model(**model_inputs(model, enc), output_hidden_states=True)
            states = torch.stack(out.hidden_states).float()  # (L+1, B, T, H)
            # Give every (sentence, word) of the batch one flat index, then pool its pieces.
            b_idx, t_idx, occ_idx, occ_word, occ_sent, occ_keep, offset = [], [], [], [], [], [], 0
            for b, s in enumerate(batch_ids):
                for t, w in enumerate(tokenized.word_ids[s]):
                    if w is not None:
                        b_idx.append(b), t_idx.append(t), occ_idx.append(offset + w)
                for j, word in enumerate(tokenized.words[s]):
                    occ_word.append(index[word]), occ_sent.append(s), occ_keep.append(keep[s][j])
                offset += len(tokenized.words[s])
            occ = pool_pieces(states[:, b_idx, t_idx], torch.tensor(occ_idx), offset)  # (L+1, n_occ, H)
            occ_word_t = torch.tensor(occ_word)
            sums.index_add_(1, occ_word_t, occ)
            # IntraSim: cosine of each word to its sentence's mean vector, averaged within the sentence.
            sent_local = torch.repeat_interleave(torch.arange(len(batch_ids)),
                                                 torch.tensor([len(tokenized.words[s]) for s in batch_ids]))
            means = pool_pieces(occ, sent_local, len(batch_ids))
            cos = torch.nn.functional.cosine_similarity(occ, means[:, sent_local], dim=-1)  # (L+1, n_occ)
            intra.append(pool_pieces(cos[..., None], sent_local, len(batch_ids))[..., 0])
            occ_keep = torch.tensor(occ_keep)
            mask = occ_keep > 0
            kept.append(occ[:, mask]), kept_word.append(occ_word_t[mask])
            kept_sentence.append(torch.tensor(occ_sent)[mask]), kept_sample.append(occ_keep[mask] == 2)

    contextual = sums / torch.from_numpy(tokenized.counts).float()[None, :, None]
    return EncodedCorpus(
        tokenized=tokenized,
        contextual=contextual.numpy(),
        kept_word=torch.cat(kept_word).numpy(),
        kept_sentence=torch.cat(kept_sentence).numpy(),
        kept_sample=torch.cat(kept_sample).numpy(),
        kept=torch.cat(kept, dim=1).numpy(),
        intra_similarity=torch.cat(intra, dim=1).mean(dim=1).numpy(),
    )
