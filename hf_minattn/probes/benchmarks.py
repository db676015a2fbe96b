"""Word-similarity (WordSim-353, SimLex-999: Spearman) and analogy (Google set: 3CosAdd accuracy)
scores of every vector set, with OOV ratios, plus a gensim word2vec (skip-gram) baseline trained on
the same corpus sentences. The benchmark files ship inside gensim (gensim.test.utils.datapath)."""

import logging
import os
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from gensim.models import Word2Vec
from gensim.test.utils import datapath

WORD_PAIRS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}
ANALOGIES = "questions-words.txt"


@dataclass
class BenchmarkScore:
    vectors: str  # the vector set's name: "static", "layer_3", "decontext_1", "word2vec"
    wordsim353: float  # Spearman rho on the in-vocabulary pairs
    wordsim353_oov: float  # fraction of pairs skipped as out-of-vocabulary
    simlex999: float
    simlex999_oov: float
    analogy: float  # 3CosAdd accuracy over the in-vocabulary questions
    analogy_questions: int  # questions answered (all four words in vocabulary)


@dataclass
class Word2VecSettings:
    vector_size: int = 100
    window: int = 5
    min_count: int = 1  # the contextual sets keep every corpus word, so word2vec does too
    epochs: int = 10  # small corpora need several passes
    seed: int = 0


@dataclass
class BenchmarkResults:
    scores: list = field(default_factory=list)  # list[BenchmarkScore]
    word2vec: Word2VecSettings | None = None
    word2vec_seconds: float | None = None


def train_word2vec(sentence_words, settings=None):
    """Skip-gram word2vec on the same (tokenizer-normalised) words; one worker so a seed gives one result."""
    settings = settings or Word2VecSettings()
    model = Word2Vec(sentences=sentence_words, sg=1, workers=1, vector_size=settings.vector_size,
                     window=settings.window, min_count=settings.min_count, epochs=settings.epochs,
                     seed=settings.seed)
    return model.wv


def _normalised_copy(path, normalise):
    """gensim compares words verbatim: rewrite a benchmark with the tokenizer's normalisation (lower-casing...)."""
    handle, out = tempfile.mkstemp(suffix=os.path.basename(path))
    with open(path, encoding="utf-8") as src, os.fdopen(handle, "w", encoding="utf-8") as dst:
        for line in src:
            if not line.startswith(("#", ":")):
                # word pairs: "w1<TAB>w2<TAB>score"; analogies: "a b c d"
                sep, n_words = ("\t", 2) if "\t" in line else (" ", 4)
                fields = line.rstrip("\n").split(sep)
                fields[:n_words] = [normalise(word) for word in fields[:n_words]]
                line = sep.join(fields) + "\n"
            dst.write(line)
    return out


class Benchmarks:
    """Benchmark files prepared once (normalised like the tokenizer), then applied to many vector sets."""

    def __init__(self, normalise=str.lower, restrict_vocab=30000):
        self.paths = {name: _normalised_copy(datapath(f), normalise) for name, f in WORD_PAIRS.items()}
        self.paths["analogy"] = _normalised_copy(datapath(ANALOGIES), normalise)
        self.restrict_vocab = restrict_vocab

    def close(self):
        for path in self.paths.values():
            os.remove(path)

    def score(self, name, kv):
        values = {}
        # gensim logs every OOV pair at INFO/WARNING; the OOV ratio is what we report instead.
        logging.getLogger("gensim").setLevel(logging.ERROR)
        known = {key.upper() for key in kv.index_to_key[: self.restrict_vocab]}  # gensim matches case-insensitively
        for bench in WORD_PAIRS:
            pairs = [line.split("\t")[:2] for line in open(self.paths[bench], encoding="utf-8") if not line.startswith("#")]
            in_vocab = sum(a.upper() in known and b.upper() in known for a, b in pairs)
            values[bench], values[f"{bench}_oov"] = float("nan"), 1 - in_vocab / len(pairs)
            if in_vocab >= 3:  # a correlation needs a few pairs (gensim raises below two)
                _, spearman, oov = kv.evaluate_word_pairs(self.paths[bench], restrict_vocab=self.restrict_vocab)
                values[bench], values[f"{bench}_oov"] = float(spearman.statistic), float(oov) / 100
        accuracy, answered = analogy_accuracy(kv, self.paths["analogy"], self.restrict_vocab)
        return BenchmarkScore(vectors=name, analogy=accuracy, analogy_questions=answered, **values)


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
    unit = torch.from_numpy(kv.get_normed_vectors()[: len(keys)]).float()
    q = torch.tensor(questions)
    correct = 0
    for chunk in q.split(2048):
        a, b, c, d = chunk.T
        scores = (unit[b] - unit[a] + unit[c]) @ unit.T  # (questions, vocab)
        scores.scatter_(1, chunk[:, :3], float("-inf"))
        correct += int((scores.argmax(dim=1) == d).sum())
    return correct / len(questions), len(questions)


def run_benchmarks(word_vectors, sentence_words=None, normalise=str.lower, word2vec=True, settings=None):
    """Score every set in `word_vectors` (a WordVectors). With `word2vec`, also train the baseline on
    `sentence_words` and add it to `word_vectors` as the set "word2vec" (so it is exported and gets neighbours)."""
    bench = Benchmarks(normalise)
    try:
        results = BenchmarkResults()
        for name in word_vectors.sets:
            results.scores.append(bench.score(name, word_vectors.keyed_vectors(name)))
        if word2vec and sentence_words:
            settings = settings or Word2VecSettings()
            start = time.perf_counter()
            kv = train_word2vec(sentence_words, settings)
            results.word2vec, results.word2vec_seconds = settings, time.perf_counter() - start
            # Score word2vec on the shared vocabulary's order, so restrict_vocab means the same words.
            word_vectors.sets["word2vec"] = np.stack([kv[w] for w in word_vectors.vocab])
            results.scores.append(bench.score("word2vec", word_vectors.keyed_vectors("word2vec")))
        return results
    finally:
        bench.close()
