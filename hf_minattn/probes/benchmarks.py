"""Word similarity (WordSim-353, SimLex-999: Spearman with a bootstrap 95% interval) and analogies (Google set:
3CosAdd accuracy, semantic and syntactic sections apart) of every vector set, all on ONE common set of pairs and
questions, plus a gensim word2vec (skip-gram) baseline trained on the same corpus words (word2vec.py) and random
vectors.

The common set keeps a pair only when both words are in the vocabulary of every system scored (each vocabulary
holds the words seen in >= min_contexts distinct corpus sentences), so every system answers the same items and
the coverage (pairs kept / total) is one number. Cosines are also reported after "All-but-the-Top" (Mu &
Viswanath 2018: mean-centred, top d/100 principal components removed), because raw cosines in anisotropic layers
mostly measure the common direction. WordSim-353 is also scored on its similarity and relatedness subsets
(Agirre et al. 2009), which ship in `data/` (see its README); the other files ship inside gensim
(gensim.test.utils.datapath).

Every system is compared with word2vec through the paired bootstrap of the difference of their Spearman
correlations on the same pairs (`paired_spearman_difference`), raw and after All-but-the-Top, never by setting one
system's interval against the other's point. word2vec's settings (`WORD2VEC_SETTINGS`) were chosen on SimLex-999
and the analogies, not on WordSim-353 (benchmarks/word2vec_selection.py).
"""

import logging
import math
import os
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from gensim.models import KeyedVectors
from gensim.test.utils import datapath
from scipy.stats import spearmanr

from hf_minattn.stats import Interval, bootstrap_intervals, spearman_of_resamples

from .progress import progress
from .results import BENCHMARKS
from .vectors import all_but_the_top, random_vectors
# word2vec's settings, training and cache live in word2vec.py; imported from here too
from .word2vec import (WORD2VEC_CACHE_ENV, WORD2VEC_SELECTION, WORD2VEC_SETTINGS, Word2VecSettings,  # noqa: F401
                       cached_word2vec, train_word2vec, word2vec_cache_dir)

_DATA = os.path.join(os.path.dirname(__file__), "data")
_PAIR_FILES = {"wordsim353": datapath("wordsim353.tsv"), "simlex999": datapath("simlex999.txt"),
               "wordsim353_similarity": os.path.join(_DATA, "wordsim_similarity_goldstandard.txt"),
               "wordsim353_relatedness": os.path.join(_DATA, "wordsim_relatedness_goldstandard.txt")}
# The names are results.BENCHMARKS (the loader's list, importable without gensim): a name with no file fails here.
WORD_PAIRS = {name: _PAIR_FILES[name] for name in BENCHMARKS}
ANALOGIES = datapath("questions-words.txt")
SEMANTIC_SECTIONS = 5  # questions-words.txt: the first 5 sections are semantic, the other 9 syntactic
ANALOGY_TOTAL = 19544


@dataclass
class BenchmarkScore:
    vectors: str  # the vector set's name: "static", "layer_3", "decontext_1", "word2vec", "random"
    wordsim353: float  # Spearman rho on the common pairs (NaN when fewer than 3)
    wordsim353_oov: float  # fraction of the benchmark's pairs NOT in the common set (1 - coverage)
    simlex999: float
    simlex999_oov: float
    analogy: float  # 3CosAdd accuracy over the common questions (all four words in every vocabulary)
    analogy_questions: int
    # new in the corpus-wide protocol (readers of older probes.json find them absent)
    wordsim353_interval: dict | None = None  # hf_minattn.stats.Interval.to_dict(): bootstrap over pairs
    wordsim353_pairs: int = 0  # pairs scored (the common set)
    wordsim353_total: int = 0  # pairs in the benchmark
    wordsim353_abtt: float | None = None  # Spearman after All-but-the-Top
    wordsim353_abtt_interval: dict | None = None
    simlex999_interval: dict | None = None
    simlex999_pairs: int = 0
    simlex999_total: int = 0
    simlex999_abtt: float | None = None
    simlex999_abtt_interval: dict | None = None
    analogy_semantic: float | None = None
    analogy_semantic_questions: int = 0
    analogy_syntactic: float | None = None
    analogy_syntactic_questions: int = 0
    # WordSim-353's similarity and relatedness subsets (Agirre et al. 2009), the same numbers as for wordsim353
    wordsim353_similarity: float | None = None
    wordsim353_similarity_oov: float | None = None
    wordsim353_similarity_interval: dict | None = None
    wordsim353_similarity_pairs: int = 0
    wordsim353_similarity_total: int = 0
    wordsim353_similarity_abtt: float | None = None
    wordsim353_similarity_abtt_interval: dict | None = None
    wordsim353_relatedness: float | None = None
    wordsim353_relatedness_oov: float | None = None
    wordsim353_relatedness_interval: dict | None = None
    wordsim353_relatedness_pairs: int = 0
    wordsim353_relatedness_total: int = 0
    wordsim353_relatedness_abtt: float | None = None
    wordsim353_relatedness_abtt_interval: dict | None = None
    # Paired comparisons on the same pairs: {other system: {benchmark (+ "_abtt"): Interval dict of
    # rho(this) - rho(other)}}, the pairs resampled once for both (`paired_spearman_difference`). "word2vec" raw and
    # after All-but-the-Top (each system's own), "random" and "untrained" (the same set at initialisation) raw.
    versus: dict | None = None


@dataclass
class BenchmarkResults:
    scores: list = field(default_factory=list)  # list[BenchmarkScore]: the probed model, word2vec, random
    word2vec: Word2VecSettings | None = None
    word2vec_seconds: float | None = None  # training time (also when read from the cache)
    word2vec_cached: bool | None = None  # read from the word2vec cache (cached_word2vec), not trained by this run
    word2vec_corpus: dict | None = None  # {"sentences": n, "words": running words, "vocabulary": kept words}
    word2vec_selection: str | None = None  # where the settings were chosen (None: other settings than the chosen)
    pairs: dict = field(default_factory=dict)  # benchmark -> {"kept", "total", "coverage"}
    analogy_questions: dict = field(default_factory=dict)  # {"semantic", "syntactic", "total"}: common questions
    min_contexts: int | None = None  # a word is in a vocabulary when seen in >= this many distinct sentences
    abtt_components: dict = field(default_factory=dict)  # vector dimension -> principal components removed
    untrained: list | None = None  # list[BenchmarkScore] of the same architecture at initialisation
    reference: list | None = None  # list[BenchmarkScore] of a fully trained reference encoder
    reference_model: str | None = None
    confidence: float = 0.95
    n_resamples: int = 1000


def read_word_pairs(name, normalise=str.lower):
    """[(word1, word2, human score)] of a WORD_PAIRS benchmark, normalised like the tokenizer's words."""
    if name not in WORD_PAIRS:
        raise ValueError(f"unknown word-pair benchmark {name!r}; expected one of {sorted(WORD_PAIRS)}")
    pairs = []
    with open(WORD_PAIRS[name], encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            a, b, score = line.rstrip("\n").split("\t")[:3]
            pairs.append((normalise(a), normalise(b), float(score)))
    return pairs


def read_analogies(normalise=str.lower):
    """[(section index, section name, [a, b, c, d])] of the Google analogy set (questions-words.txt)."""
    questions, section, name = [], -1, ""
    with open(ANALOGIES, encoding="utf-8") as f:
        for line in f:
            if line.startswith(":"):
                section, name = section + 1, line[1:].strip()
                continue
            words = line.split()
            if len(words) == 4:
                questions.append((section, name, [normalise(w) for w in words]))
    return questions


def analogy_accuracy(kv, path, restrict_vocab=30000):
    """3CosAdd accuracy: a:b :: c:? answered by argmax cos(x, b - a + c) over unit vectors, excluding a, b, c.

    The same rule, case folding and OOV skipping as gensim's `evaluate_word_analogies`, but all questions
    in one matrix product: gensim answers them one by one, which took most of the probe time budget.
    """
    keys = kv.index_to_key[:restrict_vocab]
    index = {}
    for i, key in reversed(list(enumerate(keys))):  # like gensim: upper-cased, the most frequent key wins
        index[key.upper()] = i
    questions = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.upper().split()
            if line.startswith(":") or len(words) != 4:
                continue
            if all(w in index for w in words):
                questions.append([index[w] for w in words])
    if not questions:
        return float("nan"), 0
    correct = _answer(kv, len(keys), torch.tensor(questions))
    return int(correct.sum()) / len(questions), len(questions)


def _answer(kv, n_keys, questions):
    """Bool (questions,): is d the nearest unit vector to b - a + c among the first n_keys, a, b, c excluded?"""
    unit = torch.from_numpy(kv.get_normed_vectors()[:n_keys]).float()
    correct = []
    for chunk in questions.split(2048):
        a, b, c, d = chunk.T
        scores = (unit[b] - unit[a] + unit[c]) @ unit.T  # (questions, vocab)
        scores.scatter_(1, chunk[:, :3], float("-inf"))
        correct.append(scores.argmax(dim=1) == d)
    return torch.cat(correct)


def _rank_correlation_defined(cosines, human) -> bool:
    """Spearman needs at least 3 pairs and cosines that are not all equal."""
    return len(human) >= 3 and np.ptp(cosines) > 0


def _spearman_and_differences(scores, others, human):
    """A statistic of item indices (..., n): rho(scores, human), then rho(scores) - rho(other) for each of `others`,
    on the same resamples (what the systems share cancels out of a difference); every sample ranked once."""
    rho = spearman_of_resamples(human, scores, *others)

    def statistic(items, axis=-1):  # every resample at once
        r = rho(items)
        return np.concatenate([r[:1], r[:1] - r[1:]])

    return statistic


def spearman_with_differences(cosines, others, human, n_resamples, seed):
    """(estimate, Interval dict) of Spearman's rho on the common pairs, and {name: Interval dict of rho(cosines) -
    rho(others[name])} (`paired_spearman_difference`), all from ONE draw of resamples: the draws each would make
    alone (the same seed, the same pairs), so the same numbers. NaN and None where rho is undefined (below 3 pairs,
    constant cosines), None where too many resamples leave cosines constant for finite bounds."""
    cosines, human = np.asarray(cosines, dtype=np.float64), np.asarray(human, dtype=np.float64)
    compared = [name for name, other in others.items() if _rank_correlation_defined(other, human)]
    differences = dict.fromkeys(others)
    if not _rank_correlation_defined(cosines, human):
        return float("nan"), None, differences
    statistic = _spearman_and_differences(cosines, [np.asarray(others[name], dtype=np.float64) for name in compared],
                                          human)
    mine, *versus = bootstrap_intervals(statistic, np.arange(len(human)), n_resamples=n_resamples, seed=seed,
                                        vectorized=True)
    differences.update({name: _finite(interval) for name, interval in zip(compared, versus)})
    return mine.estimate, _finite(mine), differences


def _finite(interval):
    """The Interval as a dict; None when a bound is not finite (resamples with constant cosines)."""
    return interval.to_dict() if np.isfinite(interval.low) and np.isfinite(interval.high) else None


def spearman_on_pairs(cosines, human, n_resamples, seed):
    """(estimate, Interval dict) on the common pairs; NaN and None below 3 pairs or for constant cosines."""
    estimate, interval, _ = spearman_with_differences(cosines, {}, human, n_resamples, seed)
    return estimate, interval


def paired_spearman_difference(scores_a, scores_b, human, n_resamples=1000, seed=0, confidence=0.95) -> Interval:
    """rho(scores_a, human) - rho(scores_b, human): how much better system A ranks the same pairs than system B,
    with a paired percentile bootstrap over pairs (each resample draws pairs once and computes both correlations
    on it, so what the two systems share, e.g. a few easy pairs, cancels out). The bounds are NaN when too many
    resamples leave a system's scores constant."""
    a, b, h = (np.asarray(x, dtype=np.float64) for x in (scores_a, scores_b, human))
    if not (a.ndim == b.ndim == h.ndim == 1 and len(a) == len(b) == len(h)):
        raise ValueError(f"paired_spearman_difference needs three 1-D arrays over the same pairs, got shapes "
                         f"{a.shape}, {b.shape}, {h.shape}")
    if len(h) < 3:
        raise ValueError(f"paired_spearman_difference needs at least 3 pairs, got {len(h)}")
    return bootstrap_intervals(_spearman_and_differences(a, [b], h), np.arange(len(h)), confidence=confidence,
                               n_resamples=n_resamples, seed=seed, vectorized=True)[1]


def difference_on_pairs(cosines_a, cosines_b, human, n_resamples, seed):
    """Interval dict of rho(a) - rho(b) on the same pairs; None where either correlation is undefined."""
    return spearman_with_differences(cosines_a, {"b": cosines_b}, human, n_resamples, seed)[2]["b"]


class CommonBenchmarks:
    """The benchmarks restricted once to the words every system knows; then `score` any vector set on them."""

    def __init__(self, common_words, normalise=str.lower, restrict_vocab=30000, n_resamples=1000, seed=0):
        common = set(common_words)
        self.pairs, self.totals = {}, {}
        for name in WORD_PAIRS:
            pairs = read_word_pairs(name, normalise)
            self.totals[name] = len(pairs)
            self.pairs[name] = [p for p in pairs if p[0] in common and p[1] in common]
        all_questions = read_analogies(normalise)
        self.questions = [(section, words) for section, _, words in all_questions if all(w in common for w in words)]
        self.restrict_vocab, self.n_resamples, self.seed = restrict_vocab, n_resamples, seed

    def coverage(self):
        return {name: {"kept": len(self.pairs[name]), "total": self.totals[name],
                       "coverage": len(self.pairs[name]) / self.totals[name]} for name in WORD_PAIRS}

    def question_counts(self):
        semantic = sum(section < SEMANTIC_SECTIONS for section, _ in self.questions)
        return {"semantic": semantic, "syntactic": len(self.questions) - semantic, "total": ANALOGY_TOTAL}

    def cosines(self, vocab, vectors):
        """{benchmark: cosines of its common pairs}, raw and (keys + "_abtt") after All-but-the-Top, under
        `vectors` (len(vocab), dim): what `score` compares systems on."""
        vectors = np.asarray(vectors, dtype=np.float32)
        cleaned = all_but_the_top(vectors) if len(vectors) > 1 else vectors
        return {f"{bench}{suffix}": self._pair_cosines(bench, vocab, matrix)[0]
                for bench in WORD_PAIRS for suffix, matrix in (("", vectors), ("_abtt", cleaned))}

    def score(self, name, vocab, vectors, versus=None, cosines=None):
        """BenchmarkScore of `vectors` (len(vocab), dim), rows in `vocab` order (most frequent first).

        `versus`: {other system: its `cosines(...)`} to compare with by `paired_spearman_difference` on the same
        pairs; "word2vec" is compared raw and after All-but-the-Top, any other system raw only. `cosines`: this set's
        `cosines(vocab, vectors)` where already computed (e.g. as another set's `versus`)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(vocab):
            raise ValueError(f"vector set {name!r}: expected a ({len(vocab)}, dim) matrix, got shape {vectors.shape}")
        values, compared = {}, {other: {} for other in versus or {}}
        cosines = self.cosines(vocab, vectors) if cosines is None else cosines
        for bench in WORD_PAIRS:
            pairs = self.pairs[bench]
            values[f"{bench}_oov"] = 1 - len(pairs) / self.totals[bench]
            values[f"{bench}_pairs"], values[f"{bench}_total"] = len(pairs), self.totals[bench]
            for key in (bench, f"{bench}_abtt"):  # the interval and every comparison from one draw of resamples
                theirs = {other: c[key] for other, c in (versus or {}).items()
                          if key in c and (other == "word2vec" or not key.endswith("_abtt"))}
                values[key], values[f"{key}_interval"], differences = spearman_with_differences(
                    cosines[key], theirs, self._human(bench), self.n_resamples, self.seed)
                for other, interval in differences.items():
                    compared[other][key] = interval
        if versus:  # in the order of each system's keys
            values["versus"] = {other: {key: compared[other][key] for key in theirs if key in compared[other]}
                                for other, theirs in versus.items()}
        values.update(self._analogies(vocab, vectors))
        return BenchmarkScore(vectors=name, **values)

    def _human(self, key):
        """Human scores of the common pairs of benchmark `key` (a `cosines` key: "_abtt" allowed)."""
        return np.array([p[2] for p in self.pairs[key.removesuffix("_abtt")]])

    def spearman(self, bench, vocab, vectors) -> float:
        """Only the Spearman correlation on `bench`'s common pairs (raw cosines, no interval, no analogies): for
        scoring many vector sets cheaply, e.g. every saved state of a training run. NaN below 3 pairs."""
        if bench not in WORD_PAIRS:
            raise ValueError(f"unknown word-pair benchmark {bench!r}; expected one of {sorted(WORD_PAIRS)}")
        cosines, human = self._pair_cosines(bench, vocab, np.asarray(vectors, dtype=np.float32))
        if not _rank_correlation_defined(cosines, human):
            return float("nan")
        return float(spearmanr(cosines, human).statistic)

    def _pair_cosines(self, bench, vocab, vectors):
        """(cosines, human scores) of `bench`'s common pairs under `vectors` (rows in `vocab` order)."""
        index = {w: i for i, w in enumerate(vocab)}
        pairs = self.pairs[bench]
        a = np.array([index[p[0]] for p in pairs], dtype=np.int64)
        b = np.array([index[p[1]] for p in pairs], dtype=np.int64)
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return np.sum(unit[a] * unit[b], axis=1), np.array([p[2] for p in pairs])

    def _analogies(self, vocab, vectors):
        n_keys = min(self.restrict_vocab, len(vocab))
        index = {w: i for i, w in enumerate(vocab[:n_keys])}
        kept = [(s, [index[w] for w in words]) for s, words in self.questions if all(w in index for w in words)]
        out = {"analogy": float("nan"), "analogy_questions": len(kept), "analogy_semantic": float("nan"),
               "analogy_semantic_questions": 0, "analogy_syntactic": float("nan"), "analogy_syntactic_questions": 0}
        if not kept:
            return out
        kv = KeyedVectors(vector_size=vectors.shape[1])
        kv.add_vectors(list(vocab[:n_keys]), vectors[:n_keys])
        correct = _answer(kv, n_keys, torch.tensor([q for _, q in kept])).numpy()
        semantic = np.array([s < SEMANTIC_SECTIONS for s, _ in kept])
        out["analogy"] = float(correct.mean())
        for part, mask in (("semantic", semantic), ("syntactic", ~semantic)):
            out[f"analogy_{part}_questions"] = int(mask.sum())
            out[f"analogy_{part}"] = float(correct[mask].mean()) if mask.any() else float("nan")
        return out


def word2vec_rows(kv, vocab, seed=0) -> np.ndarray:
    """(len(vocab), dim): word2vec's vector of each word of `vocab`, in its order; a word under word2vec's min_count
    gets a random row (seeded), so that cosines stay defined (callers keep such words out of the pairs)."""
    filler = random_vectors(len(vocab), kv.vector_size, seed=seed + 1)
    return np.stack([kv[w] if w in kv.key_to_index else filler[i] for i, w in enumerate(vocab)])


def run_benchmarks(word_vectors, sentence_words=None, normalise=str.lower, word2vec=True, settings=None,
                   untrained=None, reference=None, reference_model=None, min_contexts=None, n_resamples=1000,
                   seed=0, log=None, word2vec_cache=None):
    """Score every set in `word_vectors` (a WordVectors), plus word2vec trained on `sentence_words` with `settings`
    (default WORD2VEC_SETTINGS) and gensim seed `seed` (added to `word_vectors` as "word2vec", so it is exported and
    gets neighbours) and random vectors ("random"), and the sets of `untrained` / `reference` (WordVectors of other
    encoders), all on the pairs every vocabulary covers. Every set is compared with word2vec by the paired
    bootstrap of the Spearman difference (raw and after All-but-the-Top), and each of the probed model's sets with
    random vectors and with the same set of the untrained model (raw): BenchmarkScore.versus. word2vec is read from
    `word2vec_cache` (default `word2vec_cache_dir()`) when trained there before on the same words and settings."""
    logging.getLogger("gensim").setLevel(logging.ERROR)  # gensim logs every training epoch at INFO
    results = BenchmarkResults(min_contexts=min_contexts, n_resamples=n_resamples, reference_model=reference_model)
    vocabularies = [set(word_vectors.vocab)] + [set(v.vocab) for v in (untrained, reference) if v is not None]
    if word2vec and sentence_words:
        settings = replace(settings or WORD2VEC_SETTINGS, seed=seed)
        kv, results.word2vec_seconds, results.word2vec_cached = cached_word2vec(sentence_words, settings, word2vec_cache)
        results.word2vec = settings
        if replace(settings, seed=WORD2VEC_SETTINGS.seed) == WORD2VEC_SETTINGS:
            results.word2vec_selection = WORD2VEC_SELECTION
        results.word2vec_corpus = {"sentences": sum(1 for ws in sentence_words if ws),
                                   "words": int(sum(len(ws) for ws in sentence_words)), "vocabulary": len(kv)}
        # Rows in the shared vocabulary's order (most frequent first); words under word2vec's min_count (possible
        # only when min_contexts < min_count) get random rows, so cosines stay defined, and are kept out of the
        # common pairs below.
        word_vectors.sets["word2vec"] = word2vec_rows(kv, word_vectors.vocab, seed)
        vocabularies.append(set(kv.key_to_index))
    dim = next(iter(word_vectors.sets.values())).shape[1]
    word_vectors.sets["random"] = random_vectors(len(word_vectors.vocab), dim, seed=seed)
    common = set.intersection(*vocabularies)
    bench = CommonBenchmarks(common, normalise, n_resamples=n_resamples, seed=seed)
    results.pairs, results.analogy_questions = bench.coverage(), bench.question_counts()
    systems = {"scores": word_vectors, "untrained": untrained, "reference": reference}
    cosines = {}  # (system, set) -> bench.cosines: each set's All-but-the-Top once, also where it is a baseline

    def cosines_of(key, name):
        if (key, name) not in cosines:
            cosines[key, name] = bench.cosines(systems[key].vocab, systems[key].sets[name])
        return cosines[key, name]

    jobs = [(key, name, v) for key, v in systems.items() if v is not None for name in v.sets]
    scored = {"scores": [], "untrained": [], "reference": []}
    for key, name, v in progress(jobs, desc="benchmarks"):
        versus = {}  # pair by pair against word2vec for all, random and the untrained model's same set for the probed
        if "word2vec" in word_vectors.sets and not (key == "scores" and name == "word2vec"):
            versus["word2vec"] = cosines_of("scores", "word2vec")
        if key == "scores" and name not in ("word2vec", "random"):
            versus["random"] = cosines_of("scores", "random")
            if untrained is not None and name in untrained.sets:
                versus["untrained"] = cosines_of("untrained", name)
        scored[key].append(bench.score(name, v.vocab, v.sets[name], versus=versus, cosines=cosines_of(key, name)))
        results.abtt_components[str(v.sets[name].shape[1])] = max(1, v.sets[name].shape[1] // 100)
    results.scores = scored["scores"]
    results.untrained = scored["untrained"] if untrained is not None else None
    results.reference = scored["reference"] if reference is not None else None
    if log and not math.isnan(results.pairs["wordsim353"]["coverage"]):
        log(f"[probe] benchmarks: {results.pairs['wordsim353']['kept']}/{results.pairs['wordsim353']['total']} "
            f"WordSim-353 pairs, {results.pairs['simlex999']['kept']}/{results.pairs['simlex999']['total']} SimLex-999")
    return results
