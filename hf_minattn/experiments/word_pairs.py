"""Word-pair benchmarks over seeds (questions 5 and 6): every system scored on ONE pair set at every seed, and its
Spearman correlation with the human scores given with a crossed bootstrap interval (seeds with replacement, and once
for all of them the pairs: `stats.crossed_statistic_draws`, since the pairs are the same at every seed). Systems are
compared on the same pairs by the same bootstrap of the difference of their correlations (the pairs resampled once
for both), Holm-adjusted within the family, with an equivalence margin of `RHO_MARGIN`.

A system is a vector set of one model at one seed: the full model's static vectors and last layer, the untrained
model's, a word2vec trained at that seed, random vectors; a reference encoder (MiniLM) is the same at every seed.
Cosines are read raw and after All-but-the-Top (`_abtt`); the key `_read` holds, per system and seed, the space to
read: All-but-the-Top where the system's anisotropy baseline (mean cosine of random word pairs) is above 0.1, raw
otherwise (`probes.cooccurrence.centred_space`'s rule).
"""

import numpy as np

from hf_minattn.probes.cooccurrence import ANISOTROPY_THRESHOLD, word_anisotropy

from hf_minattn.probes.benchmarks import CommonBenchmarks
from hf_minattn.stats import bootstrap_test, crossed_statistic_draws, percentile_interval, spearman

from . import statistics as st

RHO_MARGIN = 0.05  # two correlations within +-0.05 on the same pairs are "equivalent" (when the interval says so)
BENCHMARKS = ("wordsim353", "wordsim353_similarity", "wordsim353_relatedness", "simlex999")


def pair_cosines(bench: CommonBenchmarks, vocab, vectors) -> dict:
    """`bench.cosines` plus "<benchmark>_read" (the space to read) and "anisotropy" (the baseline that chose it)."""
    cosines = bench.cosines(vocab, vectors)
    anisotropy = word_anisotropy(vectors)
    for b in BENCHMARKS:
        cosines[f"{b}_read"] = cosines[f"{b}_abtt"] if anisotropy > ANISOTROPY_THRESHOLD else cosines[b]
    cosines["anisotropy"] = anisotropy
    return cosines


def _rho(cosines, human, axis=-1):
    """Spearman's rho along `axis` (`stats.spearman`: ties averaged, NaN where either side is constant), for every
    resample of a seed at once: the bootstrap draws hundreds of thousands of resamples."""
    return spearman(cosines, human, axis=axis)


def _difference(a, b, human, axis=-1):
    return _rho(a, human, axis) - _rho(b, human, axis)


def score(cosines: dict, bench: CommonBenchmarks, seeds, n_resamples: int = 1000) -> dict:
    """{benchmark key: {system: interval dict}} (keys: each benchmark raw and "_read"): each system's Spearman, mean
    over seeds, with its crossed bootstrap interval (seeds and pairs)."""
    out = {}
    for key in [f"{b}{s}" for b in BENCHMARKS for s in ("", "_read")]:
        human = bench._human(key.removesuffix("_read"))
        if len(human) < 3:
            continue
        out[key] = {}
        for system, by_seed in cosines.items():
            groups = [(by_seed[s][key], human) for s in seeds if s in by_seed]
            estimate, draws = crossed_statistic_draws(_rho, groups, n_resamples)
            interval = percentile_interval(estimate, draws, len(groups), 0.95, "crossed")
            out[key][system] = {**interval.to_dict(), "pairs": len(human)}
    return out


def compare(cosines: dict, bench: CommonBenchmarks, pairs: dict, seeds, n_resamples: int = 1000) -> dict:
    """{name: tested comparison} for `pairs` {name: (system a, system b, benchmark key)}: rho(a) - rho(b) on the same
    pairs with its crossed bootstrap (the pairs resampled once for both systems and every seed), p-value and
    equivalence margin; Holm-adjusted as one family."""
    family = {}
    for name, (a, b, key) in pairs.items():
        if a not in cosines or b not in cosines:
            continue
        human = bench._human(key.removesuffix("_read"))
        groups = [(cosines[a][s][key], cosines[b][s][key], human) for s in seeds if s in cosines[a] and s in cosines[b]]
        if len(human) < 3 or not groups:
            continue
        estimate, draws = crossed_statistic_draws(_difference, groups, n_resamples)
        test = bootstrap_test(estimate, draws, RHO_MARGIN, n=len(groups), method="crossed")
        if len(groups) >= 2:  # each seed's difference of correlations, t-tested over the seeds as well
            st.with_seed_level(test, [_difference(*arrays) for arrays in groups], RHO_MARGIN)
        # unrounded: Holm adjusts the exact p-values (the results file rounds what it stores)
        family[name] = {**test, "a": a, "b": b, "benchmark": key, "pairs": len(human)}
    return st.holm_family(family)


def power_note(pairs: int) -> float:
    """The standard error of a Spearman correlation near 0 on `pairs` pairs, about 1 / sqrt(pairs - 3): what the
    findings state so that a reader can see how small a difference the pair count could show."""
    return round(1 / np.sqrt(max(pairs - 3, 1)), 4)


# The crossed draw's word-pair intervals came out up to this many times as wide as the hierarchical ones on the same
# numbers (the replication's 5 seeds, docs/experiments.md): a hierarchical verdict must survive that widening.
HIERARCHICAL_WIDENING = 2.1


def _widened(estimate: float, low: float, high: float) -> tuple[float, float]:
    return (estimate - HIERARCHICAL_WIDENING * (estimate - low), estimate + HIERARCHICAL_WIDENING * (high - estimate))


def holds_widened(d: dict | None) -> bool:
    """Whether a comparison's verdict survives its intervals widened HIERARCHICAL_WIDENING times about the estimate:
    "higher"/"lower" while the 95% interval still excludes 0, "equivalent" while the 90% (TOST) interval still lies
    inside the margins. True for a comparison not drawn hierarchically (nothing to widen) or not decided."""
    if not d or d.get("method") != "hierarchical" or d.get("low") is None or d.get("high") is None:
        return True
    if d.get("verdict") in ("higher", "lower"):
        low, high = _widened(d["estimate"], d["low"], d["high"])
        return low > 0 or high < 0
    tost = d.get("tost") or {}
    if d.get("verdict") == "equivalent" and tost.get("low") is not None and d.get("margin"):
        low, high = _widened(d["estimate"], tost["low"], tost["high"])
        return -d["margin"] < low and high < d["margin"]
    return True


def stated_verdict(d: dict | None) -> str:
    """The verdict a sentence may state: the stored one, or "unresolved" where it does not survive the widening."""
    return st.verdict(d) if holds_widened(d) else "unresolved"


def pairs_method(stored: dict) -> str:
    """How stored word-pair scores or comparisons ({name: interval dict}) were bootstrapped, in words:
    "hierarchical" (the pairs redrawn within each seed, as in results.json files from before the crossed draw) where
    any was, else "crossed" (seeds, and the pairs once for all of them)."""
    return "hierarchical" if any(d.get("method") == "hierarchical" for d in stored.values()) else "crossed"
