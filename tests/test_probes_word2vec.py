"""The fair word2vec baseline (settings chosen off the test set, one per seed, paired comparisons) and the centred
word-pair measurements of question 5 (related pairs, PPMI alignment)."""

import json
import math
import os
from dataclasses import asdict, replace

import numpy as np
import pytest
from conftest import benchmark_script
from scipy.stats import spearmanr

from hf_minattn.probes.report.benchmark import benchmarks_text
from hf_minattn.probes.benchmarks import (WORD2VEC_SELECTION, WORD2VEC_SETTINGS, Word2VecSettings,
                                          paired_spearman_difference, read_word_pairs, run_benchmarks, train_word2vec)
from hf_minattn.probes.cooccurrence import (centred_space, cooccurrence_alignment, ppmi_matrix,
                                            related_word_similarities, word_anisotropy)
from hf_minattn.probes.results import DECISION_RULE, LEGACY_DECISION_RULE, SavedProbeResults, paired_verdict
from hf_minattn.probes.vectors import WordVectors, random_vectors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ------------------------------------------------------------------------------------------ paired comparison


def test_a_system_equal_to_the_human_scores_beats_a_noisy_one_by_one_minus_its_rho():
    rng = np.random.default_rng(0)
    human = rng.random(120)
    noisy = human + rng.normal(0, 0.3, 120)
    interval = paired_spearman_difference(human, noisy, human, n_resamples=300)
    assert interval.estimate == pytest.approx(1 - spearmanr(noisy, human).statistic)
    assert interval.low > 0 and interval.sign() == 1 and interval.n == 120
    assert paired_spearman_difference(noisy, human, human, n_resamples=300).sign() == -1  # the other way round


def test_identical_systems_differ_by_exactly_zero():
    rng = np.random.default_rng(1)
    human, scores = rng.random(50), rng.random(50)
    interval = paired_spearman_difference(scores, scores, human, n_resamples=200)
    assert (interval.estimate, interval.low, interval.high) == (0.0, 0.0, 0.0)
    assert interval.sign() == 0


def test_the_paired_interval_is_narrower_than_the_unpaired_intervals_suggest():
    """Two systems that share most of their errors: each one's own interval is wide, their difference's is not.
    This is why the comparison is paired (the old rule could not tell them apart)."""
    from hf_minattn.stats import spearman_interval

    rng = np.random.default_rng(2)
    human = rng.random(200)
    shared = human + rng.normal(0, 0.6, 200)
    a, b = shared + rng.normal(0, 0.05, 200), shared + rng.normal(0, 0.3, 200)
    paired = paired_spearman_difference(a, b, human, n_resamples=300)
    alone = spearman_interval(a, human, n_resamples=300)
    assert paired.high - paired.low < (alone.high - alone.low) / 2


def test_paired_difference_rejects_unpaired_input():
    with pytest.raises(ValueError, match="same pairs"):
        paired_spearman_difference([1, 2, 3], [1, 2], [3, 2, 1])
    with pytest.raises(ValueError, match="at least 3 pairs"):
        paired_spearman_difference([1, 2], [2, 1], [1, 2])


def test_every_system_is_compared_with_word2vec_on_the_same_pairs():
    """The saved Δρ is the difference of the two saved correlations (same pairs), raw and after ABTT; the probed
    model's sets are also paired with random vectors and with the untrained model's same set."""
    words = sorted({w for a, b, _ in read_word_pairs("wordsim353") for w in (a, b)})
    sets = {"static": random_vectors(len(words), 16, seed=1), "layer_0": random_vectors(len(words), 16, seed=2),
            "word2vec": random_vectors(len(words), 16, seed=3)}
    sets["layer_0"][:, 0] += 5.0  # anisotropic: ABTT changes its ranking, so raw and ABTT differences differ
    main = WordVectors(words, sets)
    untrained = WordVectors(words, {"layer_0": random_vectors(len(words), 16, seed=4)})
    result = run_benchmarks(main, word2vec=False, untrained=untrained, n_resamples=50)
    scores = {s.vectors: s for s in result.scores}
    w2v = scores["word2vec"]
    for name in ("static", "layer_0"):
        versus = scores[name].versus
        assert set(versus) == {"word2vec", "random"} | ({"untrained"} if name == "layer_0" else set())
        for key in ("wordsim353", "wordsim353_abtt", "simlex999"):
            assert versus["word2vec"][key]["estimate"] == pytest.approx(
                getattr(scores[name], key) - getattr(w2v, key), abs=1e-4)
        assert versus["word2vec"]["wordsim353"]["n"] == scores[name].wordsim353_pairs
        assert "wordsim353_abtt" not in versus["random"]  # raw only against the other baselines
    u = result.untrained[0]
    assert scores["layer_0"].versus["untrained"]["wordsim353"]["estimate"] == pytest.approx(
        scores["layer_0"].wordsim353 - u.wordsim353, abs=1e-4)
    assert set(u.versus) == {"word2vec"} and w2v.versus is None and set(scores["random"].versus) == {"word2vec"}


# ------------------------------------------------------------------------------------------ report wording


def _probes(delta):
    """A probes.json dict where layer_1 (0.45 [0.30, 0.60]) and word2vec (0.40 [0.25, 0.55]) overlap, so the old
    rule cannot tell them apart, and layer_1's paired Δρ against word2vec is `delta` (estimate, low, high)."""
    def iv(est, low, high, n=200):
        return {"estimate": est, "low": low, "high": high, "n": n, "confidence": 0.95, "method": "bootstrap"}

    def score(name, est, versus=None):
        return {"vectors": name, "wordsim353": est[0], "wordsim353_oov": 0.4, "wordsim353_interval": iv(*est),
                "wordsim353_pairs": 212, "wordsim353_total": 353, "simlex999": None, "simlex999_oov": 0.5,
                "analogy": 0.1, "analogy_questions": 100, "versus": versus}

    layer = score("layer_1", (0.45, 0.30, 0.60), {"word2vec": {"wordsim353": iv(*delta)},
                                                  "random": {"wordsim353": iv(0.45, 0.3, 0.6)}})
    return {"model": "m", "num_layers": 1,
            "benchmarks": {"scores": [layer, score("word2vec", (0.40, 0.25, 0.55)),
                                      score("random", (0.0, -0.13, 0.13))],
                           "word2vec": {**asdict(WORD2VEC_SETTINGS), "seed": 2},
                           "word2vec_selection": WORD2VEC_SELECTION,
                           "pairs": {"wordsim353": {"kept": 212, "total": 353, "coverage": 0.6}}}}


def test_the_sentence_follows_the_paired_interval_not_the_overlap():
    higher = benchmarks_text(SavedProbeResults.from_dict(_probes((0.05, 0.02, 0.08))))
    assert "contextual layer 1 is higher than word2vec (Δρ +0.05 [+0.02, +0.08])" in higher
    assert "contextual layer 1 is higher than random" in higher
    lower = benchmarks_text(SavedProbeResults.from_dict(_probes((-0.05, -0.08, -0.02))))
    assert "contextual layer 1 is lower than word2vec (Δρ -0.05 [-0.08, -0.02])" in lower
    unresolved = benchmarks_text(SavedProbeResults.from_dict(_probes((0.05, -0.01, 0.11))))
    assert "contextual layer 1 is not told apart from word2vec" in unresolved
    assert DECISION_RULE in higher and LEGACY_DECISION_RULE not in higher
    assert f"{WORD2VEC_SETTINGS.epochs} epochs" in higher and "seed 2" in higher and WORD2VEC_SELECTION in higher


def test_files_without_paired_intervals_say_which_rule_they_follow():
    old = _probes((0.05, 0.02, 0.08))
    for s in old["benchmarks"]["scores"]:
        del s["versus"]
    del old["benchmarks"]["word2vec_selection"]
    text = benchmarks_text(SavedProbeResults.from_dict(old))
    assert "contextual layer 1 is not told apart from word2vec" in text  # the overlap, by the old rule
    assert LEGACY_DECISION_RULE in text and "chosen on SimLex" not in text
    layer = SavedProbeResults.from_dict(old).benchmarks.systems["layer_1"].similarity["wordsim353"]
    assert paired_verdict(layer, "word2vec") is None


# ------------------------------------------------------------------------------------------ word2vec per seed

SENTENCES = [["the", "king", "rules", "the", "land"], ["the", "queen", "rules", "the", "land"],
             ["a", "dog", "chases", "a", "cat"], ["a", "cat", "chases", "a", "mouse"]] * 30
TINY = Word2VecSettings(vector_size=8, min_count=1, epochs=3)


def test_word2vec_is_deterministic_for_a_seed_and_differs_across_seeds():
    first, again, other = (train_word2vec(SENTENCES, TINY, seed=s) for s in (3, 3, 4))
    np.testing.assert_array_equal(first.vectors, again.vectors)
    assert not np.allclose(first.vectors, other.vectors)
    np.testing.assert_array_equal(train_word2vec(SENTENCES, replace(TINY, seed=3)).vectors, first.vectors)
    with pytest.raises(ValueError, match="seed"):
        train_word2vec(SENTENCES, TINY, seed=-1)
    with pytest.raises(ValueError, match="workers"):
        train_word2vec(SENTENCES, replace(TINY, workers=2))


def test_word2vec_is_trained_once_per_corpus_and_settings_and_read_back_bit_for_bit(tmp_path, monkeypatch):
    from hf_minattn.probes import word2vec
    from hf_minattn.probes.word2vec import WORD2VEC_CACHE_ENV, cached_word2vec, word2vec_cache_dir

    trained = []
    real = word2vec.train_word2vec
    monkeypatch.setattr(word2vec, "train_word2vec", lambda *a, **k: trained.append(1) or real(*a, **k))
    settings = replace(TINY, seed=3)
    first, seconds, cached = cached_word2vec(SENTENCES, settings, str(tmp_path))
    again, seconds_again, cached_again = cached_word2vec(SENTENCES, settings, str(tmp_path))
    assert (cached, cached_again, len(trained)) == (False, True, 1)
    assert seconds_again == seconds  # the training time is kept with the vectors
    assert again.index_to_key == first.index_to_key
    np.testing.assert_array_equal(again.vectors, first.vectors)
    np.testing.assert_array_equal(again.vectors, real(SENTENCES, settings).vectors)  # what a fresh training gives
    assert not any(p.suffix == ".partial" for p in tmp_path.iterdir())
    # a record a killed writer left truncated: not a cached set (it was, and its json.load failed in every later call)
    record = next(tmp_path.glob("*.bin.json"))
    record.write_text(record.read_text()[:20])
    _, _, cached = cached_word2vec(SENTENCES, settings, str(tmp_path))
    assert not cached and len(trained) == 2 and json.loads(record.read_text())["seconds"] >= 0  # written anew, whole
    trained.pop()
    # another seed, other settings or other words: trained again
    cached_word2vec(SENTENCES, replace(settings, seed=4), str(tmp_path))
    cached_word2vec(SENTENCES, replace(settings, epochs=settings.epochs + 1), str(tmp_path))
    cached_word2vec(SENTENCES[:-1], settings, str(tmp_path))
    assert len(trained) == 4
    # words the binary format cannot hold (it splits on spaces) are trained, never cached
    _, _, cached = cached_word2vec([["a b", "c"]] * 20, replace(settings, min_count=1), str(tmp_path))
    _, _, cached = cached_word2vec([["a b", "c"]] * 20, replace(settings, min_count=1), str(tmp_path))
    assert not cached and len(trained) == 6
    _, _, cached = cached_word2vec([["a\t", "c"]] * 20, replace(settings, min_count=1), str(tmp_path))  # at its end
    _, _, cached = cached_word2vec([["a\t", "c"]] * 20, replace(settings, min_count=1), str(tmp_path))
    assert not cached and len(trained) == 8
    monkeypatch.setenv(WORD2VEC_CACHE_ENV, "")
    assert word2vec_cache_dir() is None
    monkeypatch.setenv(WORD2VEC_CACHE_ENV, str(tmp_path / "elsewhere"))
    assert word2vec_cache_dir() == str(tmp_path / "elsewhere")
    monkeypatch.delenv(WORD2VEC_CACHE_ENV)
    assert word2vec_cache_dir().endswith("word2vec")


def test_the_probes_train_word2vec_with_their_seed_and_the_chosen_settings():
    words = sorted({w for s in SENTENCES for w in s})
    main = WordVectors(words, {"static": random_vectors(len(words), 8, seed=0)})
    result = run_benchmarks(main, SENTENCES, word2vec=True, settings=replace(WORD2VEC_SETTINGS, min_count=1,
                                                                             vector_size=8, epochs=2),
                            seed=7, n_resamples=20)
    assert result.word2vec.seed == 7 and result.word2vec_selection is None  # not the chosen settings
    expected = train_word2vec(SENTENCES, replace(WORD2VEC_SETTINGS, min_count=1, vector_size=8, epochs=2), seed=7)
    np.testing.assert_array_equal(main.sets["word2vec"], np.stack([expected[w] for w in words]))


def test_the_settings_constant_is_the_committed_selection():
    with open(os.path.join(ROOT, WORD2VEC_SELECTION), encoding="utf-8") as f:
        selection = json.load(f)
    chosen = selection["choice"]["settings"]
    assert {k: v for k, v in asdict(WORD2VEC_SETTINGS).items() if k != "seed"} == chosen
    best = max(selection["summary"], key=lambda r: r["criterion"])
    assert (best["arch"] == "skipgram") == bool(chosen["sg"]) and best["epochs"] == chosen["epochs"]
    assert "wordsim353" not in json.dumps(selection["runs"])  # chosen off the test set
    assert len(selection["grid"]["seeds"]) >= 2


def selection_script():
    return benchmark_script("word2vec_selection")


def test_the_selection_rule_breaks_ties_towards_fewer_epochs():
    module = selection_script()
    rows = [{"epochs": 40, "criterion": 0.30}, {"epochs": 10, "criterion": 0.30}, {"epochs": 5, "criterion": 0.2}]
    assert module.select(rows)["epochs"] == 10
    rows[0]["criterion"] = 0.31
    assert module.select(rows)["epochs"] == 40


def test_merging_an_extension_chooses_again_over_all_runs():
    module = selection_script()
    corpus = {"sentences": 10, "words": 100}

    def result(runs, epochs):
        return {"corpus": corpus, "runs": runs, "date": "2026-11-23", "seconds": 1.0,
                "grid": {"archs": ["skipgram"], "epochs": epochs, "samples": [1e-4], "seeds": [0, 1]}}

    def run(epochs, seed, simlex, analogy):
        return {"arch": "skipgram", "epochs": epochs, "sample": 1e-4, "seed": seed, "simlex999": simlex,
                "analogy": analogy}

    base = result([run(20, 0, 0.30, 0.10), run(20, 1, 0.20, 0.10)], [20])  # criterion (0.25 + 0.10) / 2 = 0.175
    better = result([run(40, 0, 0.30, 0.12), run(40, 1, 0.30, 0.12)], [40])  # 0.21
    merged = module.merge(base, better)
    assert [r["epochs"] for r in merged["summary"]] == [20, 40]
    assert merged["summary"][0]["criterion"] == pytest.approx(0.175) and merged["summary"][0]["seeds"] == 2
    assert merged["choice"]["settings"]["epochs"] == 40 and merged["extensions"][0]["epochs"] == [40]
    worse = result([run(40, 0, 0.1, 0.0), run(40, 1, 0.1, 0.0)], [40])
    assert module.merge(base, worse)["choice"]["settings"]["epochs"] == 20
    with pytest.raises(ValueError, match="different corpora"):
        module.merge(base, {**better, "corpus": {"sentences": 11, "words": 100}})
    with pytest.raises(ValueError, match="repeats"):
        module.merge(base, base)


# ------------------------------------------------------------------------------------------ centred geometry


def test_ppmi_by_hand_on_a_three_word_corpus():
    # pairs within the window: a-b twice, a-c once, b-c once; each counted both ways, so the total is 8 and the
    # marginals a 3, b 3, c 2: PMI(a, b) = log(2 * 8 / (3 * 3)), PMI(a, c) = log(1 * 8 / (3 * 2)) = PMI(b, c).
    counts, ppmi = ppmi_matrix([["a", "b"], ["a", "b"], ["a", "c"], ["b", "c"]], ["a", "b", "c"])
    np.testing.assert_array_equal(counts, [[0, 2, 1], [2, 0, 1], [1, 1, 0]])
    np.testing.assert_allclose(ppmi, [[0, math.log(16 / 9), math.log(4 / 3)], [math.log(16 / 9), 0, math.log(4 / 3)],
                                      [math.log(4 / 3), math.log(4 / 3), 0]])
    # a window of 1 sees neighbours only: a and b never meet in "a c b" (a-b 1, a-c 2, b-c 2; total 10; a 3, b 3, c 4)
    counts, ppmi = ppmi_matrix([["a", "c", "b"], ["a", "c"], ["c", "b"], ["a", "b"]], ["a", "b", "c"], window=1)
    np.testing.assert_array_equal(counts, [[0, 1, 2], [1, 0, 2], [2, 2, 0]])
    assert ppmi[0, 1] == pytest.approx(math.log(10 / 9)) and ppmi[0, 2] == pytest.approx(math.log(20 / 12))
    # a pair seen together less often than chance has a negative PMI, clipped to 0: a-b 1, a-c 3, b-d 3 (total 14;
    # a 4, b 4, c 3, d 3): PMI(a, b) = log(14 / 16) < 0
    counts, ppmi = ppmi_matrix([["a", "b"]] + [["a", "c"]] * 3 + [["b", "d"]] * 3, ["a", "b", "c", "d"])
    assert counts[0, 1] == 1 and ppmi[0, 1] == 0.0 and ppmi[0, 2] == pytest.approx(math.log(3 * 14 / 12))


def test_all_but_the_top_only_above_the_anisotropy_threshold():
    isotropic = random_vectors(400, 32, seed=0)
    space, baseline, applied = centred_space(isotropic)
    assert abs(baseline) < 0.05 and not applied and space is not None
    np.testing.assert_array_equal(space, isotropic)
    shifted = isotropic + 3.0  # every word shares one direction: cosines near 0.9
    space, baseline, applied = centred_space(shifted)
    assert baseline > 0.8 and applied and abs(word_anisotropy(space)) < 0.05
    assert centred_space(shifted, threshold=0.95)[2] is False  # the threshold decides
    with pytest.raises(ValueError, match="word_anisotropy"):
        word_anisotropy(np.ones(4))


def test_related_pairs_are_read_after_abtt_in_an_anisotropic_space_with_raw_beside():
    words = ["king", "queen", "dog", "man", "woman", "river", *[f"w{i}" for i in range(200)]]
    iso = random_vectors(len(words), 32, seed=5)
    main = WordVectors(words, {"static": iso, "layer_0": iso + 4.0})
    result = related_word_similarities(main)
    assert not result["static"]["abtt"] and result["static"]["cosine"] == result["static"]["raw"]
    layer = result["layer_0"]
    assert layer["abtt"] and layer["anisotropy"] > 0.8
    assert layer["raw"]["king/queen"] > 0.8 and abs(layer["cosine"]["king/queen"]) < 0.5
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    assert result["static"]["raw"]["king/dog"] == pytest.approx(float(unit(iso[0]) @ unit(iso[2])), abs=1e-4)
    assert set(layer["cosine"]) == {"king/queen", "king/dog", "man/woman", "man/river"}


def _ring_corpus(rng, n_words=20, reach=3):
    """Words on a ring: each sentence draws 4 words within `reach` places of a random centre, so two words co-occur
    the more often (higher PPMI) the closer they sit on the ring."""
    vocab = [f"w{k}" for k in range(n_words)]
    sentences = []
    for _ in range(600):
        centre = rng.integers(n_words)
        sentences.append(" ".join(vocab[(centre + o) % n_words] for o in rng.integers(-reach, reach + 1, 4)))
    return vocab, sentences


def test_cooccurrence_alignment_is_positive_when_cooccurring_words_get_similar_vectors(tokenizer):
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(0)
    vocab, sentences = _ring_corpus(rng)
    # each word at its place on the ring: cosine falls with ring distance, as co-occurrence does; random pairs ~ 0
    angle = 2 * np.pi * np.arange(20) / 20
    aligned = np.zeros((20, 16))
    aligned[:, 0], aligned[:, 1] = 3 * np.cos(angle), 3 * np.sin(angle)
    aligned += rng.standard_normal((20, 16)) * 0.3
    control = KeyedVectors(16)
    control.add_vectors(vocab, aligned)
    # the same vectors in an anisotropic space: a common offset and one rogue direction of large, meaningless variance
    rogue = np.outer(rng.standard_normal(20) * 20, np.eye(16)[5])
    main = WordVectors(vocab, {"static": random_vectors(20, 16, seed=1), "layer_0": aligned + 10.0 + rogue})
    result = cooccurrence_alignment(main, tokenizer, sentences, top_words=50, word2vec=control, n_resamples=200)
    assert result["pairs"] == 190 and 0 < result["positive_ppmi_pairs"] <= result["cooccurring_pairs"] < 190
    layer, w2v, static = result["sets"]["layer_0"], result["sets"]["word2vec"], result["sets"]["static"]
    assert layer["abtt"] and not w2v["abtt"] and not static["abtt"]
    assert w2v["spearman"]["low"] > 0.2  # the positive control
    assert layer["spearman"]["low"] > 0.2 and layer["spearman"]["estimate"] > layer["raw"]["estimate"] + 0.2
    assert layer["spearman"]["n"] == result["positive_ppmi_pairs"]
    assert static["spearman"]["low"] < 0.2  # random vectors know nothing of co-occurrence
    # the correlation is over the co-occurring pairs only, computed independently here
    _, ppmi = ppmi_matrix([s.split() for s in sentences], vocab)
    i, j = np.triu_indices(20, k=1)
    keep = ppmi[i, j] > 0
    unit = aligned / np.linalg.norm(aligned, axis=1, keepdims=True)
    expected = spearmanr(ppmi[i, j][keep], np.sum(unit[i[keep]] * unit[j[keep]], axis=1)).statistic
    assert w2v["spearman"]["estimate"] == pytest.approx(expected, abs=1e-4)
