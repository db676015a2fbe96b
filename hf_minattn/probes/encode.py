"""Run an encoder over sentences once and pool its subword pieces into words, for every layer.

Everything that needs contextual word vectors (vectors.py, geometry.py, neighbours.py) reads the
`EncodedCorpus` built here, so the corpus is encoded exactly once. Pooling: a word's vector is the
mean of its pieces' vectors (Bommasani et al.'s "mean" subword pooling); a word's contextual vector
at layer l is the mean over its occurrences. Layer 0 is `hidden_states[0]`, i.e. the embedding
layer's output, which already includes position embeddings (and, in BERT, a LayerNorm).
"""

import functools
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from .loading import max_length_for, require_fast_tokenizer, run_model
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


def words_with_tokens(word_ids) -> list:
    """The word indices that some token has, in order. Indices can skip numbers: a pre-token whose characters the
    vocabulary cannot encode is dropped and keeps no token."""
    return sorted({w for w in word_ids if w is not None})


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
        present = words_with_tokens(ids)  # renumbered 0.. below: a skipped number would be a word without pieces
        number = {w: k for k, w in enumerate(present)}
        spans = [batch.word_to_chars(i, w) for w in present]
        words.append([normalise(sentence[s.start : s.end]) for s in spans])
        word_ids.append([None if w is None else number[w] for w in ids])
    counter = Counter(w for ws in words for w in ws)
    if not counter:
        raise ValueError("the corpus has no words after tokenization")
    # Most frequent first (ties: first seen), because gensim's restrict_vocab keeps the FIRST n keys.
    vocab = [w for w, _ in counter.most_common()]
    counts = np.array([counter[w] for w in vocab])
    return TokenizedCorpus(list(sentences), words, batch["input_ids"], word_ids, vocab, counts)


@dataclass
class EncodedCorpus:
    """The probe sentences encoded. The kept occurrences (kept_*) are in corpus order: by sentence, then position."""

    tokenized: TokenizedCorpus
    contextual: np.ndarray  # (layers+1, vocab, hidden): mean over occurrences
    kept_word: np.ndarray  # (n_kept,) vocab index of each kept occurrence
    kept_sentence: np.ndarray  # (n_kept,) sentence index of each kept occurrence
    kept_sample: np.ndarray  # (n_kept,) True for the uniform random sample of occurrences (baselines)
    kept: np.ndarray  # (layers+1, n_kept, hidden): vectors of the kept occurrences (for geometry)
    intra_similarity: np.ndarray  # (layers+1,): Ethayarajh's IntraSim averaged over sentences
    intra_by_sentence: np.ndarray | None = None  # (layers+1, sentences): each sentence's IntraSim, in encoding order
    # (n_kept,) True for the occurrences kept for their word's self-similarity and MEV (`_keep_mask`); None: all
    kept_scored: np.ndarray | None = None

    @property
    def num_layers(self):
        return self.contextual.shape[0] - 1


SCORED, SAMPLED = 1, 2  # the bits of `_keep_mask`: kept for the word's geometry, drawn for the baselines


def _keep_mask(tokenized, min_count, max_occurrences, sample_size, seed):
    """Which occurrences to keep as full vectors, per sentence, per word: SCORED for the first occurrence of a word
    seen >= min_count times in each of its first `max_occurrences` distinct sentence TEXTS in corpus order
    (self-similarity, MEV: a word repeated within a sentence, or a repeated sentence, is one context), SAMPLED
    for a uniform random sample of all occurrences (the anisotropy baselines); 0 = drop, both bits = both."""
    index = tokenized.index
    contexts = [set() for _ in tokenized.vocab]  # per word: the sentence texts it is kept from
    keep = []
    for sentence, words in zip(tokenized.sentences, tokenized.words):
        row = []
        for w in words:
            texts = contexts[index[w]]
            if tokenized.counts[index[w]] >= min_count and len(texts) < max_occurrences and sentence not in texts:
                texts.add(sentence)
                row.append(SCORED)
            else:
                row.append(0)
        keep.append(row)
    flat = [(s, j) for s, words in enumerate(tokenized.words) for j in range(len(words))]
    rng = np.random.default_rng(seed)
    for k in rng.choice(len(flat), size=min(sample_size, len(flat)), replace=False):
        s, j = flat[k]
        keep[s][j] |= SAMPLED
    return keep


def pool_pieces(hidden, word_index, n_words):
    """Mean of the piece vectors of each word: hidden (layers, tokens, H), word_index (tokens,) -> (layers, n_words, H)."""
    sums = hidden.new_zeros(hidden.shape[0], n_words, hidden.shape[-1]).index_add_(1, word_index, hidden)
    pieces = torch.bincount(word_index, minlength=n_words).clamp(min=1).to(hidden.dtype)
    return sums / pieces[None, :, None]


def _batch_occurrences(tokenized, batch_ids, keep):
    """The words of the sentences `batch_ids` (one padded batch, padded on the right), numbered 0.. in order: (batch
    row, token) of each piece and the number of its word, then per word its vocab index, sentence and keep bits."""
    index = tokenized.index
    b_idx, t_idx, occ_idx, occ_word, occ_sent, occ_keep, offset = [], [], [], [], [], [], 0
    for b, s in enumerate(batch_ids):
        for t, w in enumerate(tokenized.word_ids[s]):
            if w is not None:
                b_idx.append(b), t_idx.append(t), occ_idx.append(offset + w)
        for j, word in enumerate(tokenized.words[s]):
            occ_word.append(index[word]), occ_sent.append(s), occ_keep.append(keep[s][j])
        offset += len(tokenized.words[s])
    return b_idx, t_idx, torch.tensor(occ_idx), torch.tensor(occ_word), torch.tensor(occ_sent), torch.tensor(occ_keep)


def encode_corpus(model, tokenizer, sentences, batch_size=64, max_length=None, min_count=5,
                  max_occurrences=16, baseline_sample=1000, seed=0, tokenized=None, bf16=False):
    """Encode `sentences` with `model` (no_grad, batched by length) and pool pieces into words per layer.
    `bf16`: run the model under bf16 autocast (fast only where the CPU or GPU has native bf16); pooling stays fp32."""
    max_length = max_length or max_length_for(model, tokenizer)
    tokenized = tokenized or tokenize_corpus(tokenizer, sentences, max_length)
    keep = _keep_mask(tokenized, min_count, max_occurrences, baseline_sample, seed)
    n_layers, hidden = model.config.num_hidden_layers, model.config.hidden_size
    sums = torch.zeros(n_layers + 1, len(tokenized.vocab), hidden)
    kept, kept_word, kept_sentence, kept_keep, intra = [], [], [], [], []

    # Sorting by length keeps padding (wasted compute) small.
    order = sorted(range(len(tokenized.sentences)), key=lambda s: len(tokenized.encodings[s]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    model.eval()
    with torch.inference_mode():
        for batch_ids in progress(batches, desc="encoding corpus"):
            # Padded on the right whatever the tokenizer's padding_side: a sentence's tokens start its row.
            enc = tokenizer.pad({"input_ids": [tokenized.encodings[s] for s in batch_ids]}, padding_side="right",
                                return_tensors="pt")
            with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16):
                out = run_model(model, enc, output_hidden_states=True)
            states = torch.stack(out.hidden_states).float()  # (L+1, B, T, H)
            b_idx, t_idx, occ_idx, occ_word, occ_sent, occ_keep = _batch_occurrences(tokenized, batch_ids, keep)
            occ = pool_pieces(states[:, b_idx, t_idx], occ_idx, len(occ_word))  # (L+1, n_occ, H)
            sums.index_add_(1, occ_word, occ)
            # IntraSim: cosine of each word to its sentence's mean vector, averaged within the sentence.
            sent_local = torch.repeat_interleave(torch.arange(len(batch_ids)),
                                                 torch.tensor([len(tokenized.words[s]) for s in batch_ids]))
            means = pool_pieces(occ, sent_local, len(batch_ids))
            cos = torch.nn.functional.cosine_similarity(occ, means[:, sent_local], dim=-1)  # (L+1, n_occ)
            intra.append(pool_pieces(cos[..., None], sent_local, len(batch_ids))[..., 0])
            mask = occ_keep > 0
            kept.append(occ[:, mask]), kept_word.append(occ_word[mask])
            kept_sentence.append(occ_sent[mask]), kept_keep.append(occ_keep[mask])

    contextual = sums / torch.from_numpy(tokenized.counts).float()[None, :, None]
    intra = torch.cat(intra, dim=1)  # (L+1, sentences)
    # Back to corpus order: a stable sort by sentence keeps each sentence's words in position order.
    corpus_order = torch.cat(kept_sentence).argsort(stable=True)
    kept_keep = torch.cat(kept_keep)[corpus_order]
    return EncodedCorpus(
        tokenized=tokenized,
        contextual=contextual.numpy(),
        kept_word=torch.cat(kept_word)[corpus_order].numpy(),
        kept_sentence=torch.cat(kept_sentence)[corpus_order].numpy(),
        kept_sample=((kept_keep & SAMPLED) > 0).numpy(),
        kept=torch.cat(kept, dim=1)[:, corpus_order].numpy(),
        intra_similarity=intra.mean(dim=1).numpy(),
        intra_by_sentence=intra.numpy(),
        kept_scored=((kept_keep & SCORED) > 0).numpy(),
    )


# ---------------------------------------------------------------------------------------------------------------
# Corpus-wide pooling: every occurrence of every word, with memory bounded by vocabulary x layers x hidden.


@dataclass
class CorpusWords:
    """A corpus as the tokenizer sees it: words (its normaliser + pre-tokenizer), windows of at most max_length
    tokens (a long sentence is split into several windows rather than truncated), and word counts."""

    words: list  # per sentence: its words, normalised (what word2vec is trained on)
    windows: list  # per window: input ids with special tokens
    window_sentence: np.ndarray  # (windows,) sentence index of each window
    window_word_ids: list  # per window: np.ndarray of the sentence-level word index of each token, -1 for specials
    vocab: list  # words seen in >= min_contexts distinct sentences, most frequent (occurrences) first
    occurrences: np.ndarray  # (vocab,) running occurrences of each vocab word
    contexts: np.ndarray  # (vocab,) distinct sentences containing each vocab word
    vocabulary_total: int  # distinct words before the min_contexts filter
    min_contexts: int

    @property
    def index(self):
        return {w: i for i, w in enumerate(self.vocab)}

    @property
    def tokens(self):
        return int(sum(len(w) for w in self.windows))

    @property
    def running_words(self):
        return int(sum(len(w) for w in self.words))


def require_complete_overflow(tokenizer) -> None:
    """Windows of `return_overflowing_tokens` must hold every token of a long sentence. tokenizers 0.23.1 and
    0.23.2 stop tokenizing at max_length and return a stub second window (huggingface/tokenizers#2091): the rest of
    every long sentence would be dropped from the counts and the pooled vectors without a word."""
    text = " ".join(["the king and the queen ruled the land"] * 8)
    whole = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    windows = tokenizer(text, truncation=True, max_length=16, return_overflowing_tokens=True,
                        return_special_tokens_mask=True)
    kept = sum(len(mask) - sum(mask) for mask in windows["special_tokens_mask"])
    if kept < whole:
        import tokenizers

        raise ValueError(f"this tokenizers version ({tokenizers.__version__}) drops overflowing tokens: windows of "
                         f"16 tokens kept {kept} of a sentence's {whole} (huggingface/tokenizers#2091, versions "
                         "0.23.1-0.23.2); install tokenizers>=0.23.3")


def _add_words(words: list, sentences, encodings, window_ids: list, window_sentence: list, normalise) -> None:
    """Append to `words` (per sentence, per word: its normalised text; "" for a pre-token with no token) the words of
    one tokenizer call: `encodings` its windows (tokenizers Encodings), `window_ids` (per window: word id of each
    token, -1 special) and `window_sentence` (the sentence of each window). A word's text runs from its first token's
    start to its last token's end (`word_to_chars`, without a call per word); a word cut by a window boundary gets
    the union of its two parts. One numpy pass over the whole call: a window holds too few tokens to pay numpy's
    cost per window, and the loop below runs once per word of the corpus."""
    word = np.concatenate(window_ids)  # (tokens,)
    sentence = np.repeat(window_sentence, [len(ids) for ids in window_ids])  # (tokens,)
    offsets = np.array([o for e in encodings for o in e.offsets], dtype=np.int64).reshape(-1, 2)  # (tokens, 2)
    real = word >= 0
    word, sentence, offsets = word[real], sentence[real], offsets[real]
    if not word.size:
        return
    # A word's tokens are consecutive, also across the windows of its sentence (they follow each other).
    runs = np.r_[0, np.flatnonzero((np.diff(word) != 0) | (np.diff(sentence) != 0)) + 1]
    lows, highs = np.minimum.reduceat(offsets[:, 0], runs), np.maximum.reduceat(offsets[:, 1], runs)
    for s, w, low, high in zip(sentence[runs].tolist(), word[runs].tolist(), lows.tolist(), highs.tolist()):
        sentence_words = words[s]
        sentence_words.extend([""] * (w - len(sentence_words)))  # pre-tokens without a token
        sentence_words.append(normalise(sentences[s][low:high]))


def tokenize_words(tokenizer, sentences, max_length=128, min_contexts=5):
    """Tokenize `sentences` once into windows of <= max_length tokens and count words (occurrences and distinct
    sentences); the vocabulary keeps words seen in >= `min_contexts` sentences, most frequent first."""
    require_fast_tokenizer(tokenizer)
    if isinstance(sentences, str) or not hasattr(sentences, "__len__"):
        raise TypeError(f"sentences must be a list of strings, got {type(sentences).__name__}")
    if not sentences:
        raise ValueError("the corpus is empty: give at least one sentence")
    if isinstance(min_contexts, bool) or not isinstance(min_contexts, int) or min_contexts < 1:
        raise ValueError(f"min_contexts must be a positive integer, got {min_contexts!r}")
    require_complete_overflow(tokenizer)
    # A corpus repeats its words: each distinct text is normalised once (a million calls become ~100k).
    normalise = functools.lru_cache(maxsize=None)(word_normaliser(tokenizer))
    words = [[] for _ in sentences]  # per sentence, per word: its normalised text
    windows, window_sentence, window_word_ids = [], [], []
    chunk = 2048  # tokenize in chunks: bounded memory for the tokenizer's intermediate encodings
    for start in range(0, len(sentences), chunk):
        part = list(sentences[start : start + chunk])
        batch = tokenizer(part, truncation=True, max_length=max_length, return_overflowing_tokens=True)
        first = len(windows)
        for i, local in enumerate(batch["overflow_to_sample_mapping"]):
            ids = np.array([-1 if w is None else w for w in batch.encodings[i].word_ids], dtype=np.int64)
            windows.append(batch["input_ids"][i]), window_sentence.append(start + local), window_word_ids.append(ids)
        _add_words(words, sentences, batch.encodings, window_word_ids[first:], window_sentence[first:], normalise)
    occurrences = Counter(w for ws in words for w in ws if w)
    if not occurrences:
        raise ValueError("the corpus has no words after tokenization")
    # A word holding whitespace means word_ids did not split on spaces (e.g. Metaspace with split=False): every
    # sentence would be one "word", the probes would measure nothing, and the vector formats cannot hold the key.
    spaced = next((w for w in occurrences if any(c.isspace() for c in w)), None)
    if spaced is not None:
        raise ValueError(f"{type(tokenizer).__name__}'s word_ids do not split words on spaces (word {spaced[:60]!r}): "
                         "the word-level probes cannot run on this tokenizer")
    contexts = Counter(w for ws in words for w in set(ws) if w)
    # Most frequent first (ties: first seen), because gensim's restrict_vocab keeps the FIRST n keys.
    vocab = [w for w, _ in occurrences.most_common() if contexts[w] >= min_contexts]
    return CorpusWords(words=words, windows=windows, window_sentence=np.array(window_sentence),
                       window_word_ids=window_word_ids, vocab=vocab,
                       occurrences=np.array([occurrences[w] for w in vocab], dtype=np.int64),
                       contexts=np.array([contexts[w] for w in vocab], dtype=np.int64),
                       vocabulary_total=len(occurrences), min_contexts=min_contexts)


@dataclass
class PooledCorpus:
    """Bommasani et al. (2020) mean/mean pooling over a whole corpus: per layer, each vocab word's vector is the
    mean over its occurrences of the mean of its pieces. Quacks like EncodedCorpus for `word_vectors`."""

    words: CorpusWords
    contextual: np.ndarray  # (layers+1, pooled words, hidden) float32
    seconds: float  # wall time of the encoder passes
    rows: np.ndarray | None = None  # the pooled words' indices into words.vocab (None: every vocab word)
    tokens: int | None = None  # tokens encoded (special tokens included)

    @property
    def vocab(self):
        return self.words.vocab if self.rows is None else [self.words.vocab[i] for i in self.rows]

    @property
    def counts(self):
        """(pooled words,) corpus occurrences of each pooled word."""
        return self.words.occurrences if self.rows is None else self.words.occurrences[self.rows]

    @property
    def num_layers(self):
        return self.contextual.shape[0] - 1


def _word_weights(words, selection=None):
    """Per sentence: the vocab index of each of its words (-1 under the min_contexts filter, or not selected by
    `selection`, a pooling.ContextSelection) and the word's pieces over all windows of the sentence (a word cut by a
    window boundary keeps weight 1/k per piece, so its two parts still add up to one occurrence: the mean of all its
    pieces)."""
    index = words.index
    sentence_vocab = [np.array([index.get(w, -1) for w in ws], dtype=np.int64) for ws in words.words]
    if selection is not None:
        sentence_vocab = [np.where(pooled, ids, -1) for ids, pooled in zip(sentence_vocab, selection.occurrence)]
    sentence_pieces = [np.zeros(len(ws), dtype=np.int64) for ws in words.words]
    for s, wid in zip(words.window_sentence, words.window_word_ids):
        np.add.at(sentence_pieces[s], wid[wid >= 0], 1)
    return sentence_vocab, sentence_pieces


def _padded_batch(words, chunk, sentence_vocab, sentence_pieces, pad_id):
    """The windows `chunk` as one padded batch: input ids, attention mask, each token's vocab index (-1: none) and
    weight (1 / pieces of its word)."""
    T = max(len(words.windows[k]) for k in chunk)
    input_ids = torch.full((len(chunk), T), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(chunk), T), dtype=torch.long)
    token_vocab = torch.full((len(chunk), T), -1, dtype=torch.long)
    token_weight = torch.zeros((len(chunk), T))
    for b, k in enumerate(chunk):  # one step per window (not per token)
        ids, wid = words.windows[k], words.window_word_ids[k]
        n = len(ids)
        input_ids[b, :n], attention_mask[b, :n] = torch.tensor(ids), 1
        real = wid >= 0
        vocab_of_token = np.full(n, -1, dtype=np.int64)
        vocab_of_token[real] = sentence_vocab[words.window_sentence[k]][wid[real]]
        weight = np.zeros(n, dtype=np.float32)
        weight[real] = 1.0 / sentence_pieces[words.window_sentence[k]][wid[real]]
        token_vocab[b, :n], token_weight[b, :n] = torch.from_numpy(vocab_of_token), torch.from_numpy(weight)
    return input_ids, attention_mask, token_vocab, token_weight


def pool_corpus(model, tokenizer, sentences=None, batch_size=64, max_length=None, min_contexts=5, words=None,
                desc="pooling corpus", selection=None, bf16=False):
    """Run `model` over every window of the corpus (inference mode, batches of similar length) and accumulate,
    per layer, a running sum per vocab word: memory is (layers+1) x vocab x hidden, whatever the corpus size.
    `selection` (a pooling.ContextSelection of `words`): encode only its sentences and pool only its occurrences,
    into vectors of its words only (None: every occurrence of every vocab word).

    Each token of an occurrence split into k pieces adds 1/k of its vector, so a word's sum gains the mean of
    its pieces once per occurrence; dividing by the summed weights (= occurrences) gives the mean over occurrences.
    A word cut by a window boundary is pooled from both windows (each part in its own window's context).
    `bf16`: run the model under bf16 autocast (fast only where the CPU or GPU has native bf16); the sums stay fp32.
    """
    import time

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    max_length = max_length or max_length_for(model, tokenizer)
    if words is None:
        if sentences is None:
            raise ValueError("pool_corpus needs `sentences` (a list of strings) or pre-tokenized `words`")
        words = tokenize_words(tokenizer, sentences, max_length=max_length, min_contexts=min_contexts)
    sentence_vocab, sentence_pieces = _word_weights(words, selection)
    n_layers, hidden = model.config.num_hidden_layers, model.config.hidden_size
    # (vocab, layers+1, hidden), one row per word: a single accumulating index_put_ per batch adds every
    # layer at once (index_add_ and scatter_add_ take a slow per-row path on CPU, as long as the encoder itself).
    sums = torch.zeros(len(words.vocab), (n_layers + 1) * hidden)
    weights = torch.zeros(len(words.vocab), dtype=torch.float64)
    encoded = np.arange(len(words.windows))
    if selection is not None:
        encoded = encoded[np.isin(words.window_sentence, selection.sentences)]
    order = encoded[np.argsort([len(words.windows[k]) for k in encoded], kind="stable")]  # similar lengths: less padding
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    start_time = time.perf_counter()
    model.eval()
    with torch.inference_mode():
        for start in progress(range(0, len(order), batch_size), desc=desc):
            input_ids, attention_mask, token_vocab, token_weight = _padded_batch(
                words, order[start : start + batch_size], sentence_vocab, sentence_pieces, pad_id)
            enc = {"input_ids": input_ids, "attention_mask": attention_mask}
            if "token_type_ids" in getattr(tokenizer, "model_input_names", ()):
                enc["token_type_ids"] = torch.zeros_like(input_ids)
            with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16):
                out = run_model(model, enc, output_hidden_states=True)
            keep = token_vocab >= 0
            target = token_vocab[keep]
            w = token_weight[keep]
            states = torch.cat([state[keep].float() for state in out.hidden_states], dim=1)  # (n, (L+1)*H)
            sums.index_put_((target,), states * w[:, None], accumulate=True)
            weights.index_put_((target,), w.double(), accumulate=True)
    seconds = time.perf_counter() - start_time
    means = sums / weights.clamp(min=1e-12).float()[:, None]
    contextual = means.view(len(words.vocab), n_layers + 1, hidden).permute(1, 0, 2)
    rows = None if selection is None else selection.rows
    contextual = contextual.contiguous() if rows is None else contextual[:, torch.from_numpy(rows)].contiguous()
    return PooledCorpus(words=words, contextual=contextual.numpy(), seconds=seconds, rows=rows,
                        tokens=int(sum(len(words.windows[k]) for k in order)))


def check_corpus_words(corpus_words, sentences, min_count, max_length):
    """`corpus_words` (a CorpusWords) must be a tokenization of `sentences` with `min_count` in windows of at most
    `max_length` tokens."""
    if not isinstance(corpus_words, CorpusWords):
        raise TypeError(f"corpus_words must be a CorpusWords (encode.tokenize_words), got {type(corpus_words).__name__}")
    if len(corpus_words.words) != len(sentences):
        raise ValueError(f"corpus_words holds {len(corpus_words.words)} sentences, the vector corpus "
                         f"{len(sentences)}: tokenize the same corpus")
    if corpus_words.min_contexts != min_count:
        raise ValueError(f"corpus_words was tokenized with min_contexts={corpus_words.min_contexts}, the probes use "
                         f"min_count={min_count}")
    longest = max(map(len, corpus_words.windows))
    if longest > max_length:
        raise ValueError(f"corpus_words has windows of {longest} tokens, over the model's {max_length}: tokenize "
                         f"with max_length={max_length}")
