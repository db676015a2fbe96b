"""Corpus-wide word vectors, the common-pair benchmarks, the typed results loader and the report's wording."""

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import TEXTS, no_context_model, tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.probes.report.benchmark import benchmarks_text
from hf_minattn.probes.benchmarks import (SEMANTIC_SECTIONS, CommonBenchmarks, Word2VecSettings, read_analogies,
                                          read_word_pairs, run_benchmarks, train_word2vec)
from hf_minattn.probes.corpus import split_sentences, wikipedia_train_sentences
from hf_minattn.probes.encode import encode_corpus, pool_corpus, tokenize_corpus, tokenize_words
from hf_minattn.probes.results import SavedProbeResults, verdict
from hf_minattn.probes.vectors import WordVectors, all_but_the_top, random_vectors, static_vectors

SENTENCES = split_sentences(TEXTS, max_sentences=0)


def test_pool_corpus_equals_the_per_sentence_encoder_on_short_sentences(tokenizer):
    short = [s for s in SENTENCES if len(tokenizer(s)["input_ids"]) <= 24]
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    old = encode_corpus(model, tokenizer, short, min_count=2)
    new = pool_corpus(model, tokenizer, short, min_contexts=2, batch_size=5)
    rows = [old.tokenized.index[w] for w in new.vocab]
    np.testing.assert_allclose(new.contextual, old.contextual[:, rows], atol=1e-5)


def test_a_tokenizer_that_drops_overflowing_tokens_is_refused(tokenizer):
    """A tokenizer whose overflowing windows stop after the first (tokenizers 0.23.1-0.23.2 did) is refused with the
    version to install: the rest of every long sentence would be lost from the counts and the pooled vectors without
    a word. Simulated here by keeping only the first window of what the real tokenizer returns."""
    def first_window_only(self, text, **kwargs):
        out = type(tokenizer).__call__(self, text, **kwargs)
        return {k: v[:1] for k, v in out.items()} if kwargs.get("return_overflowing_tokens") else out

    broken = copy.deepcopy(tokenizer)
    broken.__class__ = type("FirstWindowOnly", (type(tokenizer),), {"__call__": first_window_only})
    with pytest.raises(ValueError, match=r"drops overflowing tokens: windows of 16 tokens kept 14 of .*tokenizers>=0.23.3"):
        tokenize_words(broken, SENTENCES, max_length=16, min_contexts=2)
    assert tokenize_words(tokenizer, SENTENCES, max_length=16, min_contexts=2).vocab  # the real one passes


def test_windows_contexts_and_frequency_order(tokenizer):
    long = " ".join(["the king and the queen ruled"] * 10)  # far over max_length: split, not truncated
    words = tokenize_words(tokenizer, [long, *SENTENCES], max_length=16, min_contexts=2)
    assert len(words.words[0]) == 60 and (words.window_sentence == 0).sum() > 1
    king = words.index["king"]
    # the long sentence is ONE context however often "king" occurs in it
    assert words.contexts[king] == 1 + sum("king" in s.lower().split() for s in SENTENCES)
    assert words.occurrences[king] == 10 + sum(s.lower().split().count("king") for s in SENTENCES)
    assert list(words.occurrences) == sorted(words.occurrences, reverse=True)
    assert all(c >= 2 for c in words.contexts) and words.vocabulary_total >= len(words.vocab)


def test_each_word_is_the_text_its_tokens_cover_across_windows(tokenizer):
    """tokenize_words reads a word's characters from its tokens' offsets, window by window; that is what
    `word_to_chars` gives for each word, with a word cut by a window boundary joined again (checked on the
    default corpus's first sentences, accents and all, in windows short enough to cut words)."""
    sentences = [*wikipedia_train_sentences(40), "Café naïveté: the Zürich-based régime's coördination ended."]
    words = tokenize_words(tokenizer, sentences, max_length=12, min_contexts=1)
    normalise = tokenizer.backend_tokenizer.normalizer.normalize_str
    for s, sentence in enumerate(sentences):
        batch = tokenizer(sentence, truncation=True, max_length=12, return_overflowing_tokens=True)
        spans = {}
        for i in range(len(batch["input_ids"])):
            for w in {w for w in batch.word_ids(i) if w is not None}:
                a, b = batch.word_to_chars(i, w)
                spans[w] = (min(a, spans.get(w, (a, b))[0]), max(b, spans.get(w, (a, b))[1]))
        expected = [normalise(sentence[slice(*spans[w])]).strip() if w in spans else ""
                    for w in range(max(spans) + 1)]
        assert words.words[s] == expected, sentence


def test_layers_that_add_nothing_pool_to_the_static_vectors_across_windows(tokenizer):
    model = no_context_model()
    pooled = pool_corpus(model, tokenizer, [" ".join(SENTENCES[:6]), *SENTENCES], max_length=12, min_contexts=1)
    static = static_vectors(model, tokenizer, pooled.vocab)
    for layer in pooled.contextual:
        np.testing.assert_allclose(layer, static, atol=1e-5)


def test_all_but_the_top_removes_the_common_direction():
    rng = np.random.default_rng(0)
    direction = rng.standard_normal(200)
    x = rng.standard_normal((500, 200)) + 5.0 + np.outer(rng.standard_normal(500) * 20, direction)
    cleaned = all_but_the_top(x)  # 200 dims: 2 components removed
    assert np.abs(cleaned.mean(0)).max() < 1e-4
    unit = direction / np.linalg.norm(direction)
    assert np.abs(cleaned @ unit).max() < 1e-3 * np.abs(x @ unit).max()


def test_every_system_is_scored_on_the_same_pairs():
    pairs_words = sorted({w for line in open(__import__("gensim.test.utils", fromlist=["x"]).datapath("wordsim353.tsv"))
                          if not line.startswith("#") for w in line.lower().split("\t")[:2]})
    vocab = pairs_words[:300]
    main = WordVectors(vocab, {"static": random_vectors(len(vocab), 16, seed=1)})
    smaller = WordVectors(vocab[:200], {"static": random_vectors(200, 16, seed=2)})
    result = run_benchmarks(main, word2vec=False, untrained=smaller, n_resamples=50)
    kept = result.pairs["wordsim353"]["kept"]
    common = set(vocab[:200])
    expected = sum(a in common and b in common for a, b, _ in __import__(
        "hf_minattn.probes.benchmarks", fromlist=["x"]).read_word_pairs("wordsim353"))
    assert kept == expected > 10
    for s in result.scores + result.untrained:
        assert s.wordsim353_pairs == kept and s.wordsim353_total == 353
        assert s.wordsim353_interval["n"] == kept and s.wordsim353_interval["low"] <= s.wordsim353 <= s.wordsim353_interval["high"]
    assert {s.vectors for s in result.scores} == {"static", "random"}


def test_analogy_sections_are_scored_apart():
    questions = read_analogies()
    assert len(questions) == 19544 and questions[0][1] == "capital-common-countries"
    assert {name for s, name, _ in questions if s < SEMANTIC_SECTIONS} == {
        "capital-common-countries", "capital-world", "currency", "city-in-state", "family"}
    rng = np.random.default_rng(0)
    family = [("boy", "girl"), ("brother", "sister"), ("father", "mother"), ("king", "queen"), ("man", "woman"),
              ("son", "daughter"), ("he", "she"), ("his", "her")]
    offset = rng.standard_normal(32) * 3
    vocab, rows = [], []
    for male, female in family:
        base = rng.standard_normal(32)
        vocab += [male, female]
        rows += [base, base + offset]
    syntactic = sorted({w for s, _, q in questions[-200:] for w in q})  # words of the last (syntactic) section
    vocab += syntactic  # with no structure: chance
    rows += list(rng.standard_normal((len(syntactic), 32)))
    score = CommonBenchmarks(vocab, n_resamples=20).score("planted", vocab, np.array(rows))
    assert score.analogy_semantic_questions > 20 and score.analogy_semantic > 0.9
    assert score.analogy_syntactic_questions > 0 and score.analogy_syntactic < 0.5


def test_spearman_alone_equals_the_full_score():
    """`spearman` (used on every saved state of a run) gives `score`'s estimate on the same pairs."""
    bench_words = sorted({w for a, b, _ in read_word_pairs("wordsim353") for w in (a, b)})
    vectors = random_vectors(len(bench_words), 16, seed=3)
    bench = CommonBenchmarks(bench_words, n_resamples=20)
    full = bench.score("random", bench_words, vectors)
    assert full.wordsim353_pairs > 300
    assert bench.spearman("wordsim353", bench_words, vectors) == pytest.approx(full.wordsim353)
    assert bench.spearman("simlex999", bench_words, vectors) == pytest.approx(full.simlex999, nan_ok=True)
    with pytest.raises(ValueError, match="wordsim"):
        bench.spearman("wordsim", bench_words, vectors)


def test_wordsim353_subsets_are_the_published_split_of_wordsim353():
    """The shipped similarity/relatedness files are Agirre et al.'s originals (the SHA-1s gluonnlp verifies) and
    split WordSim-353's pairs: every pair in one or both, with WordSim-353's scores."""
    import hashlib

    from hf_minattn.probes.benchmarks import WORD_PAIRS

    sums = {name: hashlib.sha1(open(WORD_PAIRS[name], "rb").read()).hexdigest()
            for name in ("wordsim353_similarity", "wordsim353_relatedness")}
    assert sums == {"wordsim353_similarity": "4845df518a83c8f7c527439590ed7e4c71916a99",
                    "wordsim353_relatedness": "c36c5dc5ebea9964f4f43e2c294cd620471ab1b8"}
    combined = {(a, b): score for a, b, score in read_word_pairs("wordsim353")}
    similarity = {(a, b): score for a, b, score in read_word_pairs("wordsim353_similarity")}
    relatedness = {(a, b): score for a, b, score in read_word_pairs("wordsim353_relatedness")}
    assert (len(similarity), len(relatedness)) == (203, 252)
    assert set(similarity) | set(relatedness) == set(combined)  # 352 distinct pairs: money-cash is listed twice
    disagree = [p for part in (similarity, relatedness) for p in part if part[p] != combined[p]]
    assert disagree == [("money", "cash")]  # rated 9.08 and 9.15 in WordSim-353; the subset keeps the other one


def test_subset_scores_are_spearman_on_the_subset_pairs():
    from scipy.stats import spearmanr

    bench_words = sorted({w for a, b, _ in read_word_pairs("wordsim353") for w in (a, b)})
    vectors = random_vectors(len(bench_words), 16, seed=4)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    index = {w: i for i, w in enumerate(bench_words)}
    score = CommonBenchmarks(bench_words, n_resamples=20).score("random", bench_words, vectors)
    for name in ("wordsim353_similarity", "wordsim353_relatedness"):
        pairs = read_word_pairs(name)
        expected = spearmanr([unit[index[a]] @ unit[index[b]] for a, b, _ in pairs], [h for _, _, h in pairs]).statistic
        assert getattr(score, name) == pytest.approx(expected, abs=1e-6)
        assert getattr(score, f"{name}_pairs") == getattr(score, f"{name}_total") == len(pairs)
        assert getattr(score, f"{name}_interval")["n"] == len(pairs)
    assert score.wordsim353_similarity != pytest.approx(score.wordsim353_relatedness)


@pytest.mark.slow
def test_word2vec_on_the_wikipedia_train_split_beats_random(tokenizer):
    """The baseline as the probes train it (whole split, the tokenizer's words, sg=1, min_count 5): clearly above
    random vectors on WordSim-353, on the same pairs."""
    words = tokenize_words(tokenizer, wikipedia_train_sentences(), min_contexts=5)
    kv = train_word2vec(words.words, Word2VecSettings())
    vocab = [w for w in words.vocab if w in kv.key_to_index]
    bench = CommonBenchmarks(vocab, n_resamples=200)
    w2v = bench.score("word2vec", vocab, np.stack([kv[w] for w in vocab]))
    # Random vectors score 0 in expectation, but one draw on ~200 pairs scatters by ~0.07 (SE): compare with
    # the mean of several draws, and require word2vec's interval to exclude 0.
    chance = np.mean([bench.score("random", vocab, random_vectors(len(vocab), 100, seed=k)).wordsim353 for k in range(5)])
    assert w2v.wordsim353_pairs > 150
    assert w2v.wordsim353 > 0.15 and w2v.wordsim353 > chance + 0.1, (w2v, chance)
    assert w2v.wordsim353_interval["low"] > 0.03, w2v


def _results(layer, word2vec, untrained):
    """A probes.json dict whose layer_1, word2vec and untrained layer_1 WordSim-353 scores are (estimate, low, high)."""
    def score(name, est):
        iv = {"estimate": est[0], "low": est[1], "high": est[2], "n": 200, "confidence": 0.95, "method": "bootstrap"}
        return {"vectors": name, "wordsim353": est[0], "wordsim353_oov": 0.4, "wordsim353_interval": iv,
                "wordsim353_pairs": 212, "wordsim353_total": 353, "simlex999": None, "simlex999_oov": 0.5,
                "analogy": 0.1, "analogy_questions": 100, "analogy_semantic": 0.05, "analogy_syntactic": 0.15}
    scores = [score("static", (0.05, -0.08, 0.18)), score("layer_0", (0.1, -0.03, 0.23)), score("layer_1", layer),
              score("word2vec", word2vec), score("random", (0.0, -0.13, 0.13))]
    return {"model": "m", "model_class": "MinAttnModel", "num_layers": 1, "num_heads": 2, "hidden_size": 8,
            "benchmarks": {"scores": scores, "untrained": [score("layer_1", untrained)],
                           "pairs": {"wordsim353": {"kept": 212, "total": 353, "coverage": 0.6}},
                           "analogy_questions": {"semantic": 40, "syntactic": 60, "total": 19544}}}


def test_report_sentences_follow_the_intervals():
    beats = benchmarks_text(SavedProbeResults.from_dict(_results(layer=(0.6, 0.5, 0.7), word2vec=(0.3, 0.2, 0.4),
                                                                 untrained=(0.1, 0.0, 0.2))))
    assert "contextual layer 1 is higher than word2vec" in beats and "the trained one is higher than it" in beats
    assert "212 of 353 pairs kept" in beats
    loses = benchmarks_text(SavedProbeResults.from_dict(_results(layer=(0.3, 0.2, 0.4), word2vec=(0.6, 0.5, 0.7),
                                                                 untrained=(0.3, 0.2, 0.4))))
    assert "contextual layer 1 is lower than word2vec" in loses and "not told apart from it" in loses
    # overlapping intervals: neither estimate lies outside the other's interval
    close = benchmarks_text(SavedProbeResults.from_dict(_results(layer=(0.45, 0.3, 0.6), word2vec=(0.4, 0.25, 0.55),
                                                                 untrained=(0.1, 0.0, 0.2))))
    assert "contextual layer 1 is not told apart from word2vec" in close


def test_each_wordsim353_subset_gets_its_own_sentence():
    """Relatedness beats word2vec while similarity loses to it: each subset's sentence follows its own numbers."""
    results = _results(layer=(0.6, 0.5, 0.7), word2vec=(0.3, 0.2, 0.4), untrained=(0.1, 0.0, 0.2))
    for s in results["benchmarks"]["scores"]:
        for subset, (est, low, high) in (("similarity", (0.2, 0.1, 0.3)), ("relatedness", (0.5, 0.4, 0.6))):
            if s["vectors"] == "word2vec":
                est, low, high = 0.35, 0.25, 0.45
            s[f"wordsim353_{subset}"] = est
            s[f"wordsim353_{subset}_interval"] = {"estimate": est, "low": low, "high": high, "n": 100,
                                                  "confidence": 0.95, "method": "bootstrap"}
    text = benchmarks_text(SavedProbeResults.from_dict(results))
    similarity = text.split("WordSim-353 similarity subset")[1].split("WordSim-353 relatedness subset")[0]
    relatedness = text.split("WordSim-353 relatedness subset")[1]
    assert "is lower than word2vec" in similarity and "is higher than word2vec" in relatedness


def test_benchmark_plot_draws_a_score_whose_interval_is_undefined(tmp_path):
    """A bootstrap over resamples with constant cosines gives no interval (low/high null in a probes.json): it loads
    as no interval, so the plot draws the point without an error bar and the verdicts make no claim."""
    from hf_minattn.probes.report.benchmark import benchmarks_plot

    results = _results(layer=(0.6, 0.5, 0.7), word2vec=(0.3, 0.2, 0.4), untrained=(0.1, 0.0, 0.2))
    layer = next(s for s in results["benchmarks"]["scores"] if s["vectors"] == "layer_1")
    layer["wordsim353_interval"].update(low=None, high=None)
    assert benchmarks_plot(SavedProbeResults.from_dict(results), str(tmp_path / "b.png"))
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    assert SavedProbeResults.from_dict(results).benchmarks.systems["layer_1"].similarity["wordsim353"].interval is None
    assert "WordSim-353" in benchmarks_text(SavedProbeResults.from_dict(results))


def test_the_analogy_sentence_says_when_the_untrained_model_scores_higher():
    """The same set of the untrained model answering more analogies than the trained one: the sentence says the
    analogies do not show what training added; at or below the trained score it says nothing of it."""
    from hf_minattn.probes.report.benchmark import analogy_sentence

    results = _results(layer=(0.6, 0.5, 0.7), word2vec=(0.3, 0.2, 0.4), untrained=(0.1, 0.0, 0.2))
    results["benchmarks"]["untrained"][0]["vectors"] = "static"  # the best set here (every set answers 0.1)
    text = analogy_sentence(SavedProbeResults.from_dict(results))
    assert "(untrained: 0.050, 0.150)" in text and "do not show what training added" not in text
    results["benchmarks"]["untrained"][0]["analogy"] = 0.19
    text = analogy_sentence(SavedProbeResults.from_dict(results))
    assert "the untrained model's same set scores higher overall (0.190 against 0.100)" in text


def test_the_analogy_panel_says_not_scored_where_no_question_was_scored():
    """A vocabulary too small for any analogy question leaves every analogy score empty: the panel says so instead
    of drawing an empty legend (matplotlib's "No artists with labels" warning); with scores it draws the legend."""
    import matplotlib.pyplot as plt
    from hf_minattn.probes.report.benchmark import _analogy_panel

    for scored in (True, False):
        results = _results(layer=(0.6, 0.5, 0.7), word2vec=(0.3, 0.2, 0.4), untrained=(0.1, 0.0, 0.2))
        for s in results["benchmarks"]["scores"] + results["benchmarks"]["untrained"]:
            if not scored:
                s.update(analogy=None, analogy_semantic=None, analogy_syntactic=None)
        fig, ax = plt.subplots()
        _analogy_panel(ax, SavedProbeResults.from_dict(results).benchmarks)
        assert (ax.get_legend() is not None) == scored
        assert ("not scored" in [t.get_text() for t in ax.texts]) != scored
        plt.close(fig)


def test_a_bootstrap_without_bounds_is_saved_as_no_interval():
    """Three pairs: some resamples repeat one pair, their Spearman is undefined and so are the bounds."""
    from hf_minattn.probes.benchmarks import spearman_on_pairs

    estimate, interval = spearman_on_pairs(np.array([0.637, 0.27, 0.041]), np.array([0.017, 0.813, 0.913]), 20, 0)
    assert estimate == pytest.approx(-1.0) and interval is None


def test_typed_loader_reads_old_and_new_files():
    new = SavedProbeResults.from_dict(_results((0.6, 0.5, 0.7), (0.3, 0.2, 0.4), (0.1, 0.0, 0.2)))
    layer = new.benchmarks.systems["layer_1"].similarity["wordsim353"]
    assert layer.interval.low == 0.5 and layer.pairs == 212 and new.benchmarks.best("wordsim353").vectors == "layer_1"
    assert verdict(layer, new.benchmarks.systems["word2vec"].similarity["wordsim353"]) == 1
    old = copy.deepcopy(_results((0.6, 0.5, 0.7), (0.3, 0.2, 0.4), (0.1, 0.0, 0.2)))
    for s in old["benchmarks"]["scores"]:  # a probes.json from before the intervals
        for key in [k for k in s if k.endswith(("_interval", "_pairs", "_total", "_semantic", "_syntactic"))]:
            del s[key]
    del old["benchmarks"]["untrained"]
    loaded = SavedProbeResults.from_dict(old).benchmarks
    assert loaded.systems["layer_1"].similarity["wordsim353"].interval is None and not loaded.untrained
    assert verdict(loaded.systems["layer_1"].similarity["wordsim353"],
                   loaded.systems["word2vec"].similarity["wordsim353"]) == 0  # no interval: no claim
    with pytest.raises(ValueError, match="missing"):
        SavedProbeResults.from_dict({"benchmarks": {}})


def test_clear_errors_at_the_new_entry_points(tokenizer):
    with pytest.raises(TypeError, match="list of strings"):
        tokenize_words(tokenizer, "one string")
    with pytest.raises(ValueError, match="min_contexts"):
        tokenize_words(tokenizer, SENTENCES, min_contexts=0)
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    with pytest.raises(ValueError, match="batch_size"):
        pool_corpus(model, tokenizer, SENTENCES, batch_size=0)
    with pytest.raises(ValueError, match="all_but_the_top"):
        all_but_the_top(np.ones(5))
    with pytest.raises(ValueError, match="max_sentences"):
        wikipedia_train_sentences(-1)
    from hf_minattn.probes import run_all_probes

    with pytest.raises(TypeError, match="reference"):
        run_all_probes(model, tokenizer, SENTENCES, reference=model)
    with pytest.raises(TypeError, match="ProbeSettings"):
        run_all_probes(model, tokenizer, SENTENCES, {"min_count": 2})


QUIET = dict(min_count=2, word2vec=False, decontextualized=False, heads=False, weights=False, ablation=False,
             logit_lens=False, circuits=False, bootstrap=20)


@pytest.mark.slow
def test_probes_given_the_tokenized_corpus_equal_probes_that_tokenize_it(tokenizer):
    """Models that share a tokenizer can share one tokenization of the vector corpus (the experiments tokenize it once
    for every variant and seed): same word vectors."""
    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    quiet = dict(settings=ProbeSettings(**QUIET), log=lambda m: None)
    words = tokenize_words(tokenizer, SENTENCES, max_length=24, min_contexts=2)
    shared = run_all_probes(model, tokenizer, SENTENCES[:6], corpus=SENTENCES, corpus_words=words, **quiet)
    alone = run_all_probes(model, tokenizer, SENTENCES[:6], corpus=SENTENCES, **quiet)
    assert shared.word_vectors.vocab == alone.word_vectors.vocab
    for name, vectors in alone.word_vectors.sets.items():
        np.testing.assert_allclose(shared.word_vectors.sets[name], vectors, atol=1e-6)  # two identical runs: ~1e-7


def test_a_tokenized_corpus_that_does_not_fit_is_refused_before_any_work(tokenizer):
    """A tokenization of another corpus, with another min_count or with longer windows than the model takes."""
    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    settings = ProbeSettings(**QUIET)
    quiet = dict(settings=settings, log=lambda m: None)
    words = tokenize_words(tokenizer, SENTENCES, max_length=24, min_contexts=2)
    with pytest.raises(ValueError, match="sentences"):
        run_all_probes(model, tokenizer, SENTENCES[:6], corpus=SENTENCES[:-1], corpus_words=words, **quiet)
    with pytest.raises(ValueError, match="min_contexts=2"):
        run_all_probes(model, tokenizer, SENTENCES[:6], corpus=SENTENCES, corpus_words=words, log=quiet["log"],
                       settings=replace(settings, min_count=3))
    with pytest.raises(ValueError, match="max_length=24"):
        run_all_probes(model, tokenizer, SENTENCES[:6], corpus=SENTENCES, **quiet,
                       corpus_words=tokenize_words(tokenizer, SENTENCES, max_length=64, min_contexts=2))
    with pytest.raises(TypeError, match="CorpusWords"):
        run_all_probes(model, tokenizer, SENTENCES[:6], corpus=SENTENCES, corpus_words=SENTENCES, **quiet)


def test_a_words_contextual_vector_is_the_mean_of_its_occurrences(tokenizer):
    # Known answer, computed by hand: run each sentence alone, collect the layer-k vector of every occurrence of a
    # word (the mean of its pieces where it is split), and average over all occurrences in the corpus.
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    sentences = [s for s in SENTENCES if len(tokenizer(s)["input_ids"]) <= 24]
    pooled = pool_corpus(model, tokenizer, sentences, min_contexts=2, batch_size=3)
    for word in ("king", "the", "river"):
        occurrences = []
        for sentence in sentences:
            encoding = tokenizer(sentence, return_tensors="pt")
            with torch.no_grad():
                hidden = model(**encoding, output_hidden_states=True).hidden_states  # layers+1 x (1, T, C)
            word_ids = encoding.word_ids()
            for i in sorted({w for w in word_ids if w is not None}):
                span = encoding.word_to_chars(i)
                if sentence[span.start : span.end].lower() == word:
                    pieces = [t for t, w in enumerate(word_ids) if w == i]
                    occurrences.append(torch.stack([h[0, pieces].mean(0) for h in hidden]))  # (layers+1, C)
        expected = torch.stack(occurrences).mean(0).numpy()
        np.testing.assert_allclose(pooled.contextual[:, pooled.vocab.index(word)], expected, atol=1e-5)


def test_the_probe_sentences_under_bf16_autocast_are_the_fp32_encoding_to_bf16_precision(tokenizer):
    """encode_corpus(bf16=True) runs the model under bf16 autocast (what `hf-minattn probe --bf16` does): the pooled
    vectors differ from fp32's only by bf16 rounding, not by being all equal; each sentence's IntraSim is kept and
    averages to the corpus's."""
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    fp32 = encode_corpus(model, tokenizer, SENTENCES, min_count=2)
    bf16 = encode_corpus(model, tokenizer, SENTENCES, min_count=2, bf16=True)
    assert not np.array_equal(bf16.contextual, fp32.contextual)  # autocast did run in bf16
    np.testing.assert_allclose(bf16.contextual, fp32.contextual, atol=0.05)
    assert fp32.intra_by_sentence.shape == (fp32.num_layers + 1, len(SENTENCES))
    np.testing.assert_allclose(fp32.intra_by_sentence.mean(axis=1), fp32.intra_similarity, rtol=1e-6)


# ------------------------------------------------------------------ a word's pieces: those it has in running text


def _tokenizer_of(kind, wordpiece):
    """The tokenizer kinds whose words' pieces must match the corpus's: WordPiece (BERT), byte-level BPE without
    special tokens around a text (GPT-2) and with them (RoBERTa), and a SentencePiece-style Metaspace BPE (T5, Llama 2,
    which mark a word's leading space even for the word alone)."""
    from test_probes import byte_level_bpe
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if kind == "wordpiece":
        return wordpiece
    if kind == "metaspace":
        backend = Tokenizer(models.BPE(unk_token="<unk>"))
        backend.pre_tokenizer, backend.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
        backend.train_from_iterator(TEXTS, trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<pad>"]))
        return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>")
    backend = byte_level_bpe(300, ["<s>", "</s>", "<pad>"], byte_alphabet=True)
    if kind == "byte-level, RoBERTa's specials":
        backend.post_processor = processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")),
                                                              ("<s>", backend.token_to_id("<s>")))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def test_a_wordpiece_words_pieces_are_those_of_the_word_alone(tokenizer):
    """BERT's WordPiece gives a word the same pieces alone and in a sentence: tokenizing it in running text changes
    nothing, special tokens and their mask included."""
    from hf_minattn.probes.vectors import _piece_ids

    words = tokenize_corpus(tokenizer, SENTENCES).vocab + ["kingdoms", "unseen", "?"]
    for special in (False, True):
        alone = tokenizer(words, add_special_tokens=special, return_special_tokens_mask=True)
        assert _piece_ids(tokenizer, words, special) == (alone["input_ids"], alone["special_tokens_mask"])


TOKENIZER_KINDS = ["wordpiece", "byte-level", "byte-level, RoBERTa's specials", "metaspace"]


@pytest.mark.parametrize("kind", TOKENIZER_KINDS)
def test_static_and_decontextualized_vectors_use_the_pieces_a_word_has_inside_a_sentence(kind, tokenizer):
    """Byte-level BPE gives `king` alone but `Ġking` in a sentence: the static and decontextualized vectors used the
    former, the corpus (layers, geometry's static vectors) the latter. Now every word seen inside a sentence (not first
    in it) has the same static vector in both, punctuation (".", attached to the word before it) included, and
    geometry takes a word's pieces from inside a sentence even where it is first seen first in one; fed alone,
    a word keeps those pieces between the tokenizer's own special tokens, so a model whose layers add nothing gives
    its static vector at every layer."""
    from hf_minattn.probes.vectors import static_word_vectors
    from hf_minattn.probes.vectors import _piece_ids, decontextualized_vectors

    tok = _tokenizer_of(kind, tokenizer)
    # "king" first seen first in a sentence, where byte-level BPE gives it the pieces of the word alone
    tokenized = tokenize_corpus(tok, ["king of the hill.", *SENTENCES])
    inside = sorted({words[j] for words in tokenized.words for j in range(1, len(words))})
    rows = [tokenized.index[w] for w in inside]
    model = no_context_model(len(tok))
    static = static_vectors(model, tok, inside)
    np.testing.assert_allclose(static, static_word_vectors(model, tokenized)[rows], atol=1e-6)
    if kind.startswith("byte-level"):  # the case this test is about: the word alone has other pieces
        assert tok.convert_ids_to_tokens(_piece_ids(tok, ["king"], False)[0][0]) == ["Ġking"] != tok.tokenize("king")
        assert "." in inside and "," in inside
    ids, specials = _piece_ids(tok, inside, add_special_tokens=True)
    template = tok("a", return_special_tokens_mask=True)  # the tokenizer's special tokens around one word
    expected = [i for i, s in zip(template["input_ids"], template["special_tokens_mask"]) if s]
    assert all([i for i, s in zip(w, m) if s] == expected for w, m in zip(ids, specials))
    every_layer = np.broadcast_to(static, (model.config.num_hidden_layers + 1, *static.shape))
    np.testing.assert_allclose(decontextualized_vectors(model, tok, inside), every_layer, atol=1e-5)


def _encoded_words(model, tok):
    return encode_corpus(model, tok, [s for s in SENTENCES if len(tok(s)["input_ids"]) <= 24], min_count=1).contextual


def _decontextualized(model, tok):
    from hf_minattn.probes.vectors import decontextualized_vectors

    return decontextualized_vectors(model, tok, ["king", "queen", "kingdom", "barked", "the"])


def _word_in_contexts(model, tok):
    from hf_minattn.probes.neighbours import word_in_contexts

    return np.array(word_in_contexts(model, tok, "king", ["The king ruled.", "A tall king sat on the hill."]).similarity)


@pytest.mark.parametrize("probe", [_encoded_words, _decontextualized, _word_in_contexts])
def test_a_tokenizer_that_pads_on_the_left_gives_the_same_vectors(tokenizer, probe):
    """These functions read each sentence's tokens from the start of its row of the padded batch: a tokenizer with
    padding_side="left" (a public caller's, not load_encoder's) pooled padding instead of the sentence's pieces."""
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    left = copy.deepcopy(tokenizer)
    left.padding_side = "left"
    np.testing.assert_allclose(probe(model, left), probe(model, tokenizer), atol=1e-5)
