"""Which corpus sentences the word vectors are pooled from: every word in every sentence ("full pooling"), or only the
words some probe reads, each from at most K of its sentences (Bommasani et al. 2020 pool a fixed number of contexts
per word too).

The probes read pooled vectors of a few words only: the benchmarks' words (WordSim-353 and its subsets, SimLex-999,
the analogies), the neighbour probe's words, the sense word and the homonyms, the related pairs of
cooccurrence.py; and the `CANDIDATES` most frequent words. Every neighbour list and every analogy answer is searched
among all the pooled words: those most frequent words plus every word a probe reads (all the analogy words included).
Geometry reads the probe sentences' own encoding (encode.encode_corpus), not the pooled vectors, and is the same under
both designs. Pooling those words only, from at most K sentences each, leaves most sentences of a large corpus
unencoded: a sentence is encoded only while one of its words still needs contexts.
"""

from dataclasses import dataclass

import numpy as np

CANDIDATES = 1000  # the most frequent words, always pooled (with the probes' words: the answers' candidates)
DEFAULT_CONTEXTS_PER_WORD = 10  # benchmarks/bench_pooling.py: the smallest K within the bootstrap noise of full pooling
# The untrained twin is a floor whose scores sit near 0: its pass costs as much as the model's, but at K = 2 every
# benchmark's rho at every layer stays inside the 95% bootstrap interval of its K = 10 pass (bench_pooling.py --twin)
DEFAULT_TWIN_CONTEXTS_PER_WORD = 2


def scored_words(normalise=str.lower, extra=()) -> set:
    """The words whose pooled vectors a probe reads (see the module docstring), normalised like the tokenizer's
    words, besides the most frequent CANDIDATES: the benchmarks', the homonyms', cooccurrence's related pairs' and
    `extra` (e.g. the neighbour probe's words and the sense word)."""
    from .benchmarks import WORD_PAIRS, read_analogies, read_word_pairs
    from .cooccurrence import RELATED_PAIRS
    from .senses_data import HOMONYMS

    words = {w for name in WORD_PAIRS for a, b, _ in read_word_pairs(name, normalise) for w in (a, b)}
    words |= {w for _, _, question in read_analogies(normalise) for w in question}
    words |= {normalise(w) for w in (*HOMONYMS, *(w for pair in RELATED_PAIRS for w in pair), *extra) if w}
    return words


@dataclass
class ContextSelection:
    """The occurrences to pool: `occurrence[s]` (per sentence s, per word of it) is True where that occurrence is
    pooled; `rows`: the vocab indices of the pooled words (most frequent first); `sentences`: the sentences to
    encode (sorted)."""

    contexts_per_word: int
    rows: np.ndarray  # (pooled words,) indices into CorpusWords.vocab, ascending
    contexts: np.ndarray  # (pooled words,) sentences each word is pooled from: min(K, its sentences)
    sentences: np.ndarray  # (kept,) sentence indices, ascending
    occurrence: list  # per sentence: bool array over its words

    def described(self, twin_contexts_per_word: int | None = None) -> str:
        """Which occurrences are pooled, as the report's sentence says it; with the untrained twin's K where it runs."""
        twin = "" if twin_contexts_per_word is None else f" (the untrained model's: at most {twin_contexts_per_word})"
        return f"the occurrences in at most {self.contexts_per_word} sentences of each word a probe reads{twin}"

    def summary(self, total_sentences: int) -> dict:
        """What probes.json records of the design."""
        return {"design": f"scored words, at most {self.contexts_per_word} contexts each",
                "contexts_per_word": self.contexts_per_word, "words": len(self.rows),
                "sentences": len(self.sentences), "sentences_total": total_sentences}


def full_pooling_summary(words) -> dict:
    """probes.json's record of full pooling over `words` (a CorpusWords)."""
    return {"design": "every word, every sentence (full pooling)", "contexts_per_word": None,
            "words": len(words.vocab), "sentences": len(words.words), "sentences_total": len(words.words)}


def select_contexts(words, targets, contexts_per_word, seed=0, candidates=CANDIDATES) -> ContextSelection:
    """At most `contexts_per_word` sentences for each vocab word of `targets` (a set of normalised words) and of the
    `candidates` most frequent vocab words of `words` (a CorpusWords): the sentences are visited in an order drawn
    from `seed`, and a sentence is kept while one of its target words still needs contexts; it then gives a context
    to each of its target words that still needs one (all their occurrences in it are pooled), and none to the
    others. Every target word seen in n sentences gets min(K, n) of them."""
    if isinstance(contexts_per_word, bool) or not isinstance(contexts_per_word, int) or contexts_per_word < 1:
        raise ValueError(f"--contexts-per-word must be a positive integer, got {contexts_per_word!r}")
    index = words.index
    is_target = np.zeros(len(words.vocab), dtype=bool)
    is_target[:candidates] = True
    is_target[[index[w] for w in targets if w in index]] = True
    need = np.where(is_target, contexts_per_word, 0)
    occurrence = [np.zeros(len(ws), dtype=bool) for ws in words.words]
    kept = []
    for s in np.random.default_rng(seed).permutation(len(words.words)).tolist():
        ids = np.array([index.get(w, -1) for w in words.words[s]], dtype=np.int64)
        wanted = np.zeros(len(ids), dtype=bool)
        wanted[ids >= 0] = need[ids[ids >= 0]] > 0
        if not wanted.any():
            continue
        kept.append(s)
        occurrence[s] = wanted
        need[np.unique(ids[wanted])] -= 1  # one context per distinct word, however often it occurs in the sentence
    rows = np.flatnonzero(is_target)
    return ContextSelection(contexts_per_word=contexts_per_word, rows=rows,
                            contexts=contexts_per_word - need[rows],
                            sentences=np.array(sorted(kept), dtype=np.int64), occurrence=occurrence)


def selection_for(words, normalise, settings, contexts_per_word=None):
    """(ContextSelection or None for full pooling, probes.json's record of the design and the passes' precision) of
    `words` (a CorpusWords) under `settings` (a ProbeSettings): the scored words, the neighbour probe's words and the
    sense word, each from at most `contexts_per_word` (None: settings.contexts_per_word) sentences drawn with
    settings.seed."""
    precision = {"precision": "bf16 autocast" if settings.bf16 else "fp32"}
    if settings.full_pooling:
        return None, {**full_pooling_summary(words), **precision}
    extra = (*settings.words, settings.sense_word or "")
    k = settings.contexts_per_word if contexts_per_word is None else contexts_per_word
    selection = select_contexts(words, scored_words(normalise, extra), k, settings.seed)
    return selection, {**selection.summary(len(words.words)), **precision}
