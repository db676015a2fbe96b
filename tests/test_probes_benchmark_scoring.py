"""Unit tests of the scoring in hf_minattn/probes/benchmarks.py, each against an answer found another way: counts
read off the data files here, cosines and 3CosAdd answers worked out by hand, and bootstrap intervals from
scipy.stats.bootstrap of Spearman's rho as scipy defines it (Pearson's r of scipy's ranks). Small vocabularies and
few resamples, so the whole file runs in seconds (mutation testing: `make mutate`)."""

import math
import warnings

import numpy as np
import pytest
from gensim.models import KeyedVectors
from gensim.test.utils import datapath
from scipy.stats import bootstrap, pearsonr, rankdata, spearmanr

from hf_minattn.probes.benchmarks import (WORD_PAIRS, CommonBenchmarks, analogy_accuracy, difference_on_pairs,
                                          paired_spearman_difference, spearman_on_pairs, spearman_with_differences)

GOOGLE = datapath("questions-words.txt")


# ------------------------------------------------------------------------------------------------ references


def _pairs_by_hand(name, normalise=str.lower):
    """[(word1, word2, human)] of a benchmark file, read here: tab-separated, '#' lines are comments."""
    rows = []
    for line in open(WORD_PAIRS[name], encoding="utf-8"):
        if not line.startswith("#"):
            a, b, h = line.rstrip("\n").split("\t")[:3]
            rows.append((normalise(a), normalise(b), float(h)))
    return rows


def _google_by_hand():
    """[(section number, [a, b, c, d] lower-cased)] of the Google analogy file, sections counted from its headers."""
    section, out = -1, []
    for line in open(GOOGLE, encoding="utf-8"):
        if line.startswith(": "):
            section += 1
        elif line.strip():
            out.append((section, line.lower().split()))
    return out


def _rho(x, y, axis=-1):
    """Spearman's rho by its definition: Pearson's r (scipy.stats.pearsonr) of the ranks (scipy.stats.rankdata)."""
    return pearsonr(rankdata(x, axis=axis), rankdata(y, axis=axis), axis=axis).statistic


def _rho_difference(x, y, z, axis=-1):
    return _rho(x, z, axis) - _rho(y, z, axis)


def _scipy_interval(statistic, samples, n_resamples, seed, confidence=0.95):
    """(estimate, low, high): scipy's paired percentile bootstrap over items, drawn by default_rng(seed)."""
    samples = [np.asarray(s, dtype=np.float64) for s in samples]
    res = bootstrap(samples, statistic, paired=True, vectorized=True, confidence_level=confidence,
                    n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    return float(statistic(*samples)), float(res.confidence_interval.low), float(res.confidence_interval.high)


def _apart(one, other, by=2e-4):
    """A bound of the two references differs by more than `_matches` allows after to_dict's rounding (4 digits)."""
    return max(abs(one[1] - other[1]), abs(one[2] - other[2])) > by


def _matches(interval, reference):
    """An Interval dict (rounded to 4 digits) equals the reference (estimate, low, high)."""
    return [interval["estimate"], interval["low"], interval["high"]] == pytest.approx(list(reference), abs=1e-4)


def _hand_cosines(pairs, vocab, vectors):
    """float32 cosines of `pairs` under `vectors` (rows in `vocab` order), computed pair by pair."""
    row = {w: np.asarray(v, dtype=np.float32) for w, v in zip(vocab, vectors)}
    return np.array([row[a] @ row[b] / (np.linalg.norm(row[a]) * np.linalg.norm(row[b])) for a, b, _ in pairs])


# Words of the first 25 WordSim-353 pairs and the first 8 SimLex-999 pairs: 29 WordSim-353 pairs are kept.
_WS = _pairs_by_hand("wordsim353")
WORDS = sorted({w for a, b, _ in _WS[:25] for w in (a, b)} | {w for a, b, _ in _pairs_by_hand("simlex999")[:8]
                                                              for w in (a, b)})


def _kept(name, words=WORDS, normalise=str.lower):
    common = set(words)
    return [p for p in _pairs_by_hand(name, normalise) if p[0] in common and p[1] in common]


# ------------------------------------------------------------------------------------------- analogy_accuracy


def _planted_kv(extra=()):
    """alpha = e1, beta = e2, gamma = e3: beta - alpha + gamma points at delta (plus a little e4); zürich = e5."""
    e = np.eye(5)
    keys = ["alpha", "beta", "gamma", "delta", "zürich", *[k for k, _ in extra]]
    rows = [e[0], e[1], e[2], e[1] - e[0] + e[2] + 0.3 * e[3], e[4], *[v for _, v in extra]]
    kv = KeyedVectors(5)
    kv.add_vectors(keys, np.array(rows))
    return kv


def test_analogy_accuracy_skips_headers_malformed_lines_and_unknown_words(tmp_path):
    """Two questions count: 'alpha beta gamma delta' (right: delta is nearest to beta - alpha + gamma) and
    '... zürich' (wrong: delta is still nearest). Lines of 3 or 5 words and a question with an unknown word are
    skipped, as gensim does: (1/2, 2) by hand."""
    path = tmp_path / "questions.txt"
    path.write_text(": section one\nalpha beta gamma delta\nalpha beta gamma\nALPHA BETA GAMMA ZÜRICH\n"
                    "alpha beta gamma delta zürich\nalpha beta gamma omega\n: section two\n", encoding="utf-8")
    assert analogy_accuracy(_planted_kv(), str(path)) == (0.5, 2)


def test_analogy_accuracy_without_a_question_in_the_vocabulary_is_nan_over_zero(tmp_path):
    path = tmp_path / "questions.txt"
    path.write_text(": only\nalpha beta gamma omega\n", encoding="utf-8")
    accuracy, count = analogy_accuracy(_planted_kv(), str(path))
    assert math.isnan(accuracy) and count == 0


def test_analogy_accuracy_answers_only_among_the_first_restrict_vocab_keys(tmp_path):
    """The 6th key, a decoy, is exactly beta - alpha + gamma; with restrict_vocab=4 it is no candidate, so the
    only one left, delta, is the answer."""
    path = tmp_path / "questions.txt"
    path.write_text("alpha beta gamma delta\n", encoding="utf-8")
    kv = _planted_kv(extra=[("decoy", np.array([-1.0, 1.0, 1.0, 0.0, 0.0]))])  # the 6th key
    assert analogy_accuracy(kv, str(path), restrict_vocab=6) == (0.0, 1)  # a candidate: the decoy wins
    assert analogy_accuracy(kv, str(path), restrict_vocab=4) == (1.0, 1)


def test_analogy_accuracy_keeps_30000_keys_by_default(tmp_path):
    """Key 30,001 (index 30000) is out by default: a question that needs it is not asked."""
    keys = [f"w{i}" for i in range(30001)]
    kv = KeyedVectors(3)
    kv.add_vectors(keys, np.random.default_rng(0).standard_normal((30001, 3)))
    path = tmp_path / "questions.txt"
    path.write_text("w0 w1 w2 w30000\n", encoding="utf-8")
    accuracy, count = analogy_accuracy(kv, str(path))
    assert math.isnan(accuracy) and count == 0
    path.write_text("w0 w1 w2 w29999\n", encoding="utf-8")
    assert analogy_accuracy(kv, str(path))[1] == 1


# ------------------------------------------------------------------------------------ Spearman and its interval


def _noisy(seed, n):
    rng = np.random.default_rng(seed)
    human = rng.random(n)
    return human, human + rng.normal(0, 0.5, n), human + rng.normal(0, 0.8, n)


def test_spearman_interval_is_scipys_bootstrap_with_the_given_seed_and_resamples():
    human, x, _ = _noisy(0, 25)
    refs = {(n, seed): _scipy_interval(_rho, (x, human), n, seed) for n, seed in ((20, 5), (20, 0), (50, 5))}
    assert _apart(refs[20, 5], refs[20, 0]) and _apart(refs[20, 5], refs[50, 5]) and _apart(
        refs[50, 5], _scipy_interval(_rho, (x, human), 1000, 5))
    for (n, seed), ref in refs.items():
        estimate, interval = spearman_on_pairs(x, human, n, seed)
        assert estimate == pytest.approx(spearmanr(x, human).statistic) and _matches(interval, ref)


def test_paired_difference_is_scipys_bootstrap_with_the_given_seed_resamples_and_confidence():
    human, a, b = _noisy(1, 30)
    ref = _scipy_interval(_rho_difference, (a, b, human), 50, 3, confidence=0.8)
    for other in ((50, 0, 0.8), (1000, 3, 0.8), (50, 3, 0.95)):
        assert _apart(ref, _scipy_interval(_rho_difference, (a, b, human), *other[:2], confidence=other[2]))
    got = paired_spearman_difference(a, b, human, n_resamples=50, seed=3, confidence=0.8)
    assert [got.estimate, got.low, got.high] == pytest.approx(list(ref), abs=1e-12)
    assert (got.n, got.confidence) == (30, 0.8)


def test_paired_difference_defaults_to_1000_resamples_seed_0_and_95_percent():
    human, a, b = _noisy(2, 30)
    ref = _scipy_interval(_rho_difference, (a, b, human), 1000, 0)
    assert _apart(ref, _scipy_interval(_rho_difference, (a, b, human), 1001, 0), by=1e-9)
    got = paired_spearman_difference(a, b, human)
    assert [got.estimate, got.low, got.high] == pytest.approx(list(ref), abs=1e-12) and got.confidence == 0.95


def test_paired_difference_equals_the_per_resample_spearmanr_loop_on_tied_scores():
    """Human scores and cosines with ties (as word-pair benchmarks have): the paired interval, all resamples ranked
    at once, is that of a loop calling scipy.stats.spearmanr on each resample drawn by default_rng(seed)."""
    rng = np.random.default_rng(6)
    human = rng.integers(0, 11, 120) / 2  # 21 distinct scores
    a = np.round(human + rng.normal(0, 1.5, 120), 1)
    b = np.round(human + rng.normal(0, 3.0, 120), 1)
    indices = np.random.default_rng(7).integers(0, 120, (300, 120))
    draws = [spearmanr(a[i], human[i]).statistic - spearmanr(b[i], human[i]).statistic for i in indices]
    got = paired_spearman_difference(a, b, human, n_resamples=300, seed=7)
    expected = spearmanr(a, human).statistic - spearmanr(b, human).statistic
    assert [got.estimate, got.low, got.high] == pytest.approx([expected, *np.quantile(draws, [0.025, 0.975])],
                                                               abs=1e-12)


@pytest.mark.filterwarnings("ignore::scipy.stats.DegenerateDataWarning")  # resamples of 3 pairs repeat a pair
def test_three_pairs_are_enough_for_a_paired_difference():
    got = paired_spearman_difference([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [0.1, 0.5, 0.9], n_resamples=20)
    assert got.estimate == pytest.approx(2.0) and got.n == 3  # rho +1 minus rho -1


def test_difference_uses_the_given_seed_and_resamples():
    human, a, b = _noisy(3, 30)
    refs = {(n, seed): _scipy_interval(_rho_difference, (a, b, human), n, seed) for n, seed in ((20, 5), (50, 5))}
    assert _apart(refs[20, 5], refs[50, 5]) and _apart(refs[20, 5], _scipy_interval(
        _rho_difference, (a, b, human), 20, 0)) and _apart(refs[50, 5], _scipy_interval(
        _rho_difference, (a, b, human), 1000, 5))
    for (n, seed), ref in refs.items():
        assert _matches(difference_on_pairs(a, b, human, n, seed), ref)


def test_one_draw_gives_the_interval_and_every_difference_as_apart():
    """A set's interval and its differences with other systems, from one draw of resamples, are the numbers of
    spearman_on_pairs and difference_on_pairs called one by one; a constant system's difference is None, and a
    constant set gets NaN and no intervals at all."""
    human, a, b = _noisy(5, 40)
    others = {"b": b, "human": human, "constant": np.full(40, 0.5)}
    estimate, interval, differences = spearman_with_differences(a, others, human, 150, 2)
    assert (estimate, interval) == spearman_on_pairs(a, human, 150, 2)
    assert differences == {name: difference_on_pairs(a, other, human, 150, 2) for name, other in others.items()}
    assert differences["constant"] is None and differences["b"]["low"] != differences["human"]["low"]
    nothing = spearman_with_differences(np.full(40, 0.5), others, human, 150, 2)
    assert np.isnan(nothing[0]) and nothing[1:] == (None, dict.fromkeys(others))


def test_no_paired_difference_is_bootstrapped_when_one_system_is_constant():
    """rho of constant cosines is undefined: None at once, without a bootstrap that warns of a degenerate
    distribution (warnings are errors here)."""
    human, a, _ = _noisy(4, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert difference_on_pairs(np.full(20, 0.5), a, human, 20, 0) is None
        assert difference_on_pairs(a, np.full(20, 0.5), human, 20, 0) is None


# ------------------------------------------------------------------------------ the common set: pairs, questions


def test_coverage_is_kept_over_total_for_every_benchmark():
    totals = {"wordsim353": 353, "simlex999": 999, "wordsim353_similarity": 203, "wordsim353_relatedness": 252}
    kept = {name: len(_kept(name)) for name in totals}
    assert kept == {"wordsim353": 29, "simlex999": 13, "wordsim353_similarity": 21, "wordsim353_relatedness": 14}
    assert CommonBenchmarks(WORDS).coverage() == {
        name: {"kept": kept[name], "total": totals[name], "coverage": pytest.approx(kept[name] / totals[name])}
        for name in totals}


def test_a_custom_normaliser_reaches_the_word_pairs():
    upper = [w.upper() for w in WORDS]
    coverage = CommonBenchmarks(upper, normalise=str.upper).coverage()
    assert {name: c["kept"] for name, c in coverage.items()} == {
        name: len(_kept(name, upper, str.upper)) for name in WORD_PAIRS}
    assert coverage["wordsim353"]["kept"] == 29


def test_question_counts_are_the_google_sets_8869_semantic_and_10675_syntactic_questions():
    questions = _google_by_hand()
    semantic = sum(section < 5 for section, _ in questions)  # capital-common-countries .. family
    assert (semantic, len(questions) - semantic) == (8869, 10675)
    every_word = {w for _, q in questions for w in q}
    assert CommonBenchmarks(every_word).question_counts() == {"semantic": 8869, "syntactic": 10675, "total": 19544}


# ------------------------------------------------------------------------------------------------- cosines


def test_cosines_are_the_rows_cosines_whatever_their_norms():
    """Rows of norm 1e-3 .. 1e-1: the cosines are still cosines (the norm guard is far below them)."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((len(WORDS), 8)) * np.geomspace(1e-3, 1e-1, len(WORDS))[:, None] / 3
    cosines = CommonBenchmarks(WORDS).cosines(WORDS, vectors)["wordsim353"]
    assert cosines == pytest.approx(_hand_cosines(_kept("wordsim353"), WORDS, vectors), abs=1e-5)


def test_float64_rows_that_float32_cannot_tell_apart_tie_in_cosines_and_spearman():
    """The vectors are read in float32, as `score` reads them: 'internet' differs from 'keyboard' only below
    float32's resolution, so computer-keyboard (7.62) and computer-internet (7.58) tie in `cosines` and in
    `spearman`, the numbers `score` and the paired comparisons see."""
    rng = np.random.default_rng(6)
    vectors = rng.standard_normal((len(WORDS), 8)).astype(np.float32).astype(np.float64)
    keyboard, internet = WORDS.index("keyboard"), WORDS.index("internet")
    vectors[internet] = vectors[keyboard] * (1 + 1e-12 * rng.standard_normal(8))
    assert np.array_equal(vectors[internet].astype(np.float32), vectors[keyboard].astype(np.float32))
    pairs = _kept("wordsim353")
    human = [h for _, _, h in pairs]
    i, j = pairs.index(("computer", "keyboard", 7.62)), pairs.index(("computer", "internet", 7.58))
    exact = np.array([vectors[WORDS.index(a)] @ vectors[WORDS.index(b)] / np.linalg.norm(vectors[WORDS.index(a)])
                      / np.linalg.norm(vectors[WORDS.index(b)]) for a, b, _ in pairs])
    assert exact[i] != exact[j]  # float64 tells them apart ...
    tied = _hand_cosines(pairs, WORDS, vectors)
    assert tied[i] == tied[j]  # ... float32 does not
    swapped = exact.copy()
    swapped[[i, j]] = exact[[j, i]]
    for strict in (exact, swapped):  # either order of the two is a different rho from the tie
        assert spearmanr(tied, human).statistic != pytest.approx(spearmanr(strict, human).statistic, abs=1e-6)
    bench = CommonBenchmarks(WORDS)
    cosines = bench.cosines(WORDS, vectors)["wordsim353"]
    assert cosines[i] == cosines[j] and cosines == pytest.approx(tied, abs=1e-6)
    assert bench.spearman("wordsim353", WORDS, vectors) == pytest.approx(spearmanr(tied, human).statistic, abs=1e-12)


def test_all_but_the_top_applies_from_two_vectors_on():
    """Three rows: the cosines after ABTT are those of the rows mean-centred with their top principal direction
    removed (by hand). Two rows: centred, they are opposite, and removing their one direction leaves nothing, so
    the cosine after ABTT is 0, not the raw cosine."""
    bench = CommonBenchmarks(["tiger", "cat", "love"])  # tiger-cat and tiger-tiger (love-sex is out)
    three = np.array([[1.0, 0.2, 0.3, 0.0], [0.8, 0.5, -0.1, 0.3], [0.1, -0.7, 0.4, 0.9]])
    centred = three - three.mean(axis=0)
    top = np.linalg.svd(centred)[2][0]  # 4 dimensions: 1 component removed
    cleaned = centred - np.outer(centred @ top, top)
    cosines = bench.cosines(["tiger", "cat", "love"], three)
    pairs = [("tiger", "cat", 7.35), ("tiger", "tiger", 10.0)]
    assert cosines["wordsim353"] == pytest.approx(_hand_cosines(pairs, ["tiger", "cat", "love"], three), abs=1e-6)
    assert cosines["wordsim353_abtt"] == pytest.approx(_hand_cosines(pairs, ["tiger", "cat", "love"], cleaned),
                                                       abs=1e-5)
    two = CommonBenchmarks(["tiger", "cat"]).cosines(["tiger", "cat"], three[:2])
    assert two["wordsim353"][0] == pytest.approx(0.8225503, abs=1e-6)  # 0.87 / (1.0630 * 0.9950), by hand
    assert two["wordsim353_abtt"] == pytest.approx([0.0, 0.0], abs=1e-6)


def test_a_single_word_set_is_scored_without_all_but_the_top():
    """One row has no principal direction: it is scored as it is (tiger-tiger is its only pair), not refused."""
    bench = CommonBenchmarks(["tiger"])
    cosines = bench.cosines(["tiger"], np.array([[0.3, -0.4]]))
    assert cosines["wordsim353"] == pytest.approx([1.0]) and cosines["wordsim353_abtt"] == pytest.approx([1.0])
    score = bench.score("one", ["tiger"], np.array([[0.3, -0.4]]))
    assert score.wordsim353_pairs == 1 and math.isnan(score.wordsim353) and score.wordsim353_interval is None


# --------------------------------------------------------------------------------------------------- score


def test_score_refuses_vectors_that_do_not_match_the_vocabulary():
    bench = CommonBenchmarks(["tiger", "cat", "love"])
    with pytest.raises(ValueError, match=r"vector set 'flat': expected a \(3, dim\) matrix, got shape \(3,\)"):
        bench.score("flat", ["tiger", "cat", "love"], np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match=r"vector set 'tall': expected a \(3, dim\) matrix, got shape \(4, 2\)"):
        bench.score("tall", ["tiger", "cat", "love"], np.ones((4, 2)))


def test_oov_is_the_share_of_a_benchmarks_pairs_left_out():
    score = CommonBenchmarks(WORDS, n_resamples=20).score(
        "random", WORDS, np.random.default_rng(7).standard_normal((len(WORDS), 8)))
    for name, total in (("wordsim353", 353), ("simlex999", 999), ("wordsim353_similarity", 203),
                        ("wordsim353_relatedness", 252)):
        kept = len(_kept(name))
        assert getattr(score, f"{name}_oov") == pytest.approx((total - kept) / total)
        assert (getattr(score, f"{name}_pairs"), getattr(score, f"{name}_total")) == (kept, total)


def test_score_intervals_use_the_benchmarks_seed_and_resamples():
    """n_resamples=20, seed=7: the Spearman interval and the paired difference with word2vec are scipy's bootstrap
    with those settings, and the same on a second run."""
    rng = np.random.default_rng(8)
    vectors, theirs = rng.standard_normal((len(WORDS), 8)), rng.standard_normal((len(WORDS), 8))
    pairs = _kept("wordsim353")
    human = np.array([h for _, _, h in pairs])
    mine, other = _hand_cosines(pairs, WORDS, vectors), _hand_cosines(pairs, WORDS, theirs)
    rho = _scipy_interval(_rho, (mine, human), 20, 7)
    delta = _scipy_interval(_rho_difference, (mine, other, human), 20, 7)
    assert _apart(rho, _scipy_interval(_rho, (mine, human), 20, 0))
    assert _apart(delta, _scipy_interval(_rho_difference, (mine, other, human), 20, 0))
    bench = CommonBenchmarks(WORDS, n_resamples=20, seed=7)
    scores = [bench.score("x", WORDS, vectors, versus={"word2vec": {"wordsim353": other}}) for _ in range(2)]
    assert scores[0].wordsim353_interval == scores[1].wordsim353_interval and scores[0].versus == scores[1].versus
    assert _matches(scores[0].wordsim353_interval, rho)
    assert _matches(scores[0].versus["word2vec"]["wordsim353"], delta)


def test_common_benchmarks_default_to_1000_resamples_and_seed_0():
    vectors = np.random.default_rng(9).standard_normal((len(WORDS), 8))
    pairs = _kept("wordsim353")
    cosines, human = _hand_cosines(pairs, WORDS, vectors), np.array([h for _, _, h in pairs])
    ref = _scipy_interval(_rho, (cosines, human), 1000, 0)
    assert _apart(ref, _scipy_interval(_rho, (cosines, human), 1001, 0))
    assert _apart(ref, _scipy_interval(_rho, (cosines, human), 1000, 1))
    assert _matches(CommonBenchmarks(WORDS).score("x", WORDS, vectors).wordsim353_interval, ref)


def test_spearman_of_a_constant_vector_set_is_nan():
    bench = CommonBenchmarks(WORDS)
    assert math.isnan(bench.spearman("wordsim353", WORDS, np.ones((len(WORDS), 4))))


# ------------------------------------------------------------------------------------------------ analogies


def _google_count(words):
    """(semantic, syntactic) Google questions with all four words in `words`, counted from the file."""
    sections = [s for s, q in _google_by_hand() if set(q) <= set(words)]
    return sum(s < 5 for s in sections), sum(s >= 5 for s in sections)


CAPITALS = ["athens", "greece", "baghdad", "iraq"]


def test_analogies_answer_only_among_the_first_restrict_vocab_words():
    """restrict_vocab=4: the decoy (5th word, exactly greece - athens + baghdad) is no candidate, so every common
    question has one candidate left, its answer: accuracy 1. No syntactic question: NaN, without a warning."""
    assert _google_count(CAPITALS) == (3, 0)
    e = np.eye(5)
    vectors = np.array([e[0], e[1], e[2], e[3], e[1] - e[0] + e[2]])
    bench = CommonBenchmarks(CAPITALS, restrict_vocab=4, n_resamples=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score = bench.score("planted", [*CAPITALS, "decoy"], vectors)
    assert (score.analogy, score.analogy_questions, score.analogy_semantic, score.analogy_semantic_questions) == (
        1.0, 3, 1.0, 3)
    assert score.analogy_syntactic_questions == 0 and math.isnan(score.analogy_syntactic)


def test_analogies_keep_the_first_30000_words_by_default():
    """'iraq' as word 30,001 is out of every question; as word 4 it is in."""
    fillers = [f"filler{i}" for i in range(29997)]
    vectors = np.random.default_rng(10).standard_normal((30001, 4))
    bench = CommonBenchmarks(CAPITALS, n_resamples=20)
    assert bench.score("late", [*CAPITALS[:3], *fillers, "iraq"], vectors).analogy_questions == 0
    assert bench.score("early", [*CAPITALS, *fillers], vectors).analogy_questions == 3


def test_the_first_five_sections_are_semantic_the_sixth_syntactic():
    words = CAPITALS + ["amazing", "amazingly", "apparent", "apparently"]  # gram1-adjective-to-adverb: section 6
    semantic, syntactic = _google_count(words)
    assert semantic == 3 and syntactic >= 2
    rng = np.random.default_rng(11)
    score = CommonBenchmarks(words, n_resamples=20).score("random", words, rng.standard_normal((8, 6)))
    assert (score.analogy_semantic_questions, score.analogy_syntactic_questions) == (semantic, syntactic)
    assert CommonBenchmarks(words).question_counts() == {"semantic": semantic, "syntactic": syntactic,
                                                         "total": 19544}


def test_a_set_without_common_questions_has_none_of_either_kind():
    score = CommonBenchmarks(["athens", "greece"], n_resamples=20).score(
        "x", ["athens", "greece"], np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert (score.analogy_questions, score.analogy_semantic_questions, score.analogy_syntactic_questions) == (0, 0, 0)
    assert math.isnan(score.analogy) and math.isnan(score.analogy_semantic) and math.isnan(score.analogy_syntactic)
