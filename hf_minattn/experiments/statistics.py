"""How the experiments use `hf_minattn.stats`: every comparison between variants is a paired difference over seeds
(the same seed gives the same data order, masks and, where shapes agree, initial weights), with a 95% t-interval,
its df, a t-test p-value and an equivalence test (TOST) against a stated margin. Within one question's family of
comparisons the p-values are Holm-adjusted (`holm_family`), and each comparison gets one of four verdicts:

- "higher" / "lower": the Holm-adjusted p < 0.05 (so the 95% interval also excludes 0);
- "equivalent": not different, and TOST puts the difference within +-margin (90% interval inside the margins);
- "unresolved": neither: the data cannot tell at this scale.

No interval is computed here; this module only pairs the numbers and names the outcome."""

import numpy as np

from hf_minattn.stats import Interval, bootstrap_test, crossed_draws, holm, mean_interval, paired_difference, t_test_p, tost

MIN_SEEDS_FOR_INTERVALS = 3
ALPHA = 0.05
# The equivalence margin of a loss difference: 0.05 nat is under a tenth of the full model's gain over the unigram
# floor in the committed runs, and about the seed-to-seed spread of the full model's loss.
LOSS_MARGIN = 0.05
VERDICTS = ("higher", "lower", "equivalent", "unresolved")


def seed_values(results: dict, variant: str, key: str = "eval_loss") -> dict[int, float]:
    """{seed: value} for one variant, from `results["variants"][variant]["seeds"]`."""
    if variant not in results["variants"]:
        raise ValueError(f"no variant {variant!r} in the results; have {sorted(results['variants'])}")
    return {row["seed"]: row[key] for row in results["variants"][variant]["seeds"] if row.get(key) is not None}


def unigram_values(results: dict) -> dict[int, float]:
    """{seed: unigram-floor loss on that seed's masked validation tokens} (the same for every variant of a seed)."""
    return {row["seed"]: row["unigram_loss"] for row in results["variants"]["full"]["seeds"]}


def tested(differences, margin: float | None = LOSS_MARGIN) -> dict:
    """A stored comparison from paired differences (one per seed): the 95% t-interval (with df), the t-test p-value
    and TOST against `margin`. The verdict is set here as if the comparison were alone; `holm_family` revises it.
    Nothing is rounded: Holm adjusts the exact p-values, the verdict reads the exact interval, and only the results
    file and the documents round them. `margin` None: the protocol states none (PROTOCOL.md, section 5: "-"), so
    there is no TOST ("tost" None) and the verdict is higher, lower or unresolved, never equivalent."""
    differences = np.asarray(differences, dtype=np.float64)
    d = mean_interval(differences).to_dict(digits=None)
    d.update(p=float(t_test_p(differences)), margin=margin,
             tost=None if margin is None else tost(differences, margin))
    return decide(d, d["p"])


def crossed_tested(differences, margin: float, n_resamples: int = 1000, n: int | None = None) -> dict:
    """A stored comparison from a (seeds, items) matrix of paired differences, where the same items (sentences,
    homonyms) were measured at every seed: `stats.crossed_draws`' percentile interval, p and TOST against `margin`,
    tested at the seed level too where there are 2 seeds or more (`with_seed_level`). `n`: the seeds behind it
    (default), or the items where one model is all there is. Verdict as `tested`'s: with one seed (and `n` not
    given) neither a difference nor equivalence, as `tested` of one seed."""
    differences = np.asarray(differences, dtype=np.float64)
    estimate, draws = crossed_draws(differences, n_resamples)
    d = bootstrap_test(estimate, draws, margin, n or differences.shape[0], method="crossed")
    if differences.shape[0] >= 2:
        with_seed_level(d, np.nanmean(differences, axis=1), margin)  # (seeds,): each seed's mean over its items
    elif n is None:  # one seed, tested as one: its items alone would make the seed's own noise look like none
        d["tost"]["equivalent"] = False
    return decide(d, d["p"])


def with_seed_level(d: dict, per_seed, margin: float) -> dict:
    """A crossed bootstrap comparison `d` tested at the seed level too, in place: a percentile bootstrap over a
    handful of seeds has no small-sample correction (no t quantile, and a resample of S seeds holds (S - 1) / S of
    their variance), so the t-test of `per_seed` (one paired value per seed) is stored beside it as "seeds", the
    bootstrap's own p as "p_bootstrap", and "p" becomes the larger of the two: a difference is called one only when
    both levels call it. Equivalence needs both TOST tests."""
    seeds = tested(per_seed, margin)
    d["seeds"] = {k: seeds[k] for k in ("estimate", "low", "high", "n", "df", "p", "tost")}
    d["p_bootstrap"] = d["p"]
    d["p"] = max(d["p"], seeds["p"])
    d["tost"]["equivalent"] = d["tost"]["equivalent"] and seeds["tost"]["equivalent"]
    return d


def decide(d: dict, p_adjusted: float) -> dict:
    """Set d["verdict"] (and d["p_holm"]) from an adjusted p-value and the equivalence test. The direction is the
    side of 0 the interval lies on (a percentile interval need not hold its estimate). Equivalence, like a
    difference (`Interval.excludes_zero`), needs n > 1: one seed tells neither (d["n"] is read here, not where the
    TOST ran, because a one-model comparison has its items counted as n after it was drawn)."""
    if not np.isfinite(d["estimate"]):
        raise ValueError(f"cannot decide a comparison whose estimate is {d['estimate']!r}")
    d["p_holm"] = float(p_adjusted)
    interval = Interval(**{k: d[k] for k in ("estimate", "low", "high", "n")},
                        **{k: d[k] for k in ("confidence", "method") if d.get(k) is not None})
    if p_adjusted < ALPHA and interval.excludes_zero():
        d["verdict"] = "higher" if interval.sign() > 0 else "lower"
    else:
        equivalent = (d.get("tost") or {}).get("equivalent") and d["n"] > 1
        d["verdict"] = "equivalent" if equivalent else "unresolved"
    return d


def holm_family(comparisons: dict, others=()) -> dict:
    """Holm-adjust the p-values of one question's family {name: stored comparison} in place; returns it. `others`:
    the p-values of the family's tests stored elsewhere (adjusted there), counted here all the same."""
    names = [name for name, d in comparisons.items() if d is not None and "p" in d]
    if names:
        others = [float(p) for p in others]
        for name, p in zip(names, holm([comparisons[name]["p"] for name in names] + others)):
            decide(comparisons[name], p)
            comparisons[name]["family_size"] = len(names) + len(others)
    return comparisons


def seed_levels(family: dict) -> dict:
    """The seed level of a stored family's crossed comparisons, decided on its own, for the findings to print beside
    them: {name: the t-test over seeds that `with_seed_level` stored as d["seeds"], with d's margin, "level": "seeds",
    "family_size" and the verdict after Holm's adjustment over the family (a comparison without a seed level counts
    with its own p)}, for the comparisons that have one. Its p stays the stored, unadjusted one (the adjusted p is
    not stored in results.json, so it is not printed); nothing in `family` changes."""
    tests = {name: d for name, d in family.items()
             if isinstance(d, dict) and {"estimate", "low", "high", "n", "p"} <= set(d)}
    if not any("seeds" in d for d in tests.values()):
        return {}
    levels = {name: {**(d["seeds"] if "seeds" in d else {k: d[k] for k in ("estimate", "low", "high", "n", "p", "tost")
                                                         if k in d}), "margin": d.get("margin")}
              for name, d in tests.items()}
    holm_family(levels)
    return {name: {**{k: v for k, v in level.items() if k != "p_holm"}, "level": "seeds"}
            for name, level in levels.items() if "seeds" in family[name]}


def difference(results: dict, a: str, b: str, key: str = "eval_loss", margin: float = LOSS_MARGIN) -> dict:
    """Paired difference a - b over seeds (a variant name, or "unigram" for the unigram floor), tested."""
    values = {name: unigram_values(results) if name == "unigram" else seed_values(results, name, key) for name in (a, b)}
    seeds = common_seeds(values[a], values[b])
    if not seeds:
        raise ValueError(f"no seed in common to pair {a!r} and {b!r}")
    return tested([values[a][s] - values[b][s] for s in seeds], margin)


def common_seeds(*by_seed: dict) -> list:
    """The seeds (keys) that every one of `by_seed` ({seed: value}) has, sorted: the pairs of a paired comparison.
    Pairing by list position instead would, where one variant lacks a seed, pair one seed's run with another's."""
    return sorted(set.intersection(*(set(d) for d in by_seed))) if by_seed else []


def mean(results: dict, variant: str, key: str = "eval_loss") -> dict:
    return mean_interval(list(seed_values(results, variant, key).values())).to_dict()


def share_of_gain(results: dict, variant: str, reference: str = "full") -> dict | None:
    """Share, in %, of the reference's loss reduction below the unigram floor that `variant` achieves, per seed
    ((U - L_variant) / (U - L_reference)), with a t-interval over seeds. None where the reference is not below the
    floor at some seed (the share then means nothing)."""
    floor, ref, var = unigram_values(results), seed_values(results, reference), seed_values(results, variant)
    seeds = common_seeds(floor, ref, var)
    if not seeds or any(floor[s] - ref[s] <= 0 for s in seeds):
        return None
    return mean_interval([100 * (floor[s] - var[s]) / (floor[s] - ref[s]) for s in seeds]).to_dict(digits=2)


def curve_gap(results: dict, variant: str) -> dict:
    """The gain over the unigram floor (unigram loss - validation loss, nats) at each evaluation during training,
    mean and interval over seeds, at the steps every seed evaluated."""
    curves = [row["curve"] for row in results["variants"][variant]["seeds"] if row.get("curve")]
    if not curves:
        return {"steps": [], "gain": []}
    steps = sorted(set.intersection(*(set(c["steps"]) for c in curves)))
    gains = []
    for step in steps:
        values = [c["gain_over_unigram"][c["steps"].index(step)] for c in curves]
        gains.append(mean_interval(values).to_dict() if None not in values else None)
    return {"steps": steps, "gain": gains}


def sign(interval: dict | None) -> int:
    """+1 / -1 when a stored comparison is "higher" / "lower" (after Holm, where it was tested), else 0; a bare
    interval: +1 / -1 when it lies above / below 0, 0 when it contains 0 (or is missing)."""
    if interval is None:
        return 0
    if "verdict" in interval:
        return {"higher": 1, "lower": -1}.get(interval["verdict"], 0)
    return Interval(**{k: v for k, v in interval.items() if k in Interval.__dataclass_fields__}).sign()


def verdict(interval: dict | None) -> str:
    """One of VERDICTS ("unresolved" for a missing comparison or a bare interval that contains 0)."""
    if interval is None:
        return "unresolved"
    if "verdict" in interval:
        return interval["verdict"]
    return {1: "higher", -1: "lower", 0: "unresolved"}[sign(interval)]


def curve_difference(results: dict, a: str, b: str) -> dict:
    """Paired difference of the gain over the unigram floor, a - b, at each evaluation step during training."""
    def by_seed(variant):
        return {row["seed"]: row["curve"] for row in results["variants"][variant]["seeds"] if row.get("curve")}

    ca, cb = by_seed(a), by_seed(b)
    seeds = common_seeds(ca, cb)
    if not seeds:
        return {"steps": [], "difference": []}
    steps = sorted(set.intersection(*(set(c["steps"]) for s in seeds for c in (ca[s], cb[s]))))
    out = []
    for step in steps:
        x = [ca[s]["gain_over_unigram"][ca[s]["steps"].index(step)] for s in seeds]
        y = [cb[s]["gain_over_unigram"][cb[s]["steps"].index(step)] for s in seeds]
        out.append(paired_difference(x, y).to_dict() if None not in x + y else None)
    return {"steps": steps, "difference": out}


def own_start_step(early: dict) -> int | None:
    """The first early grid step from which the full model's divergence between heads (mean over seeds) stays above
    its own step-0 interval at every later step; None where it does not. Q4's timing read against the heads' start
    instead of the shuffled-label control (a reading added after version 1's confirmation run, outside PROTOCOL.md's
    decision rule, shown beside it)."""
    div, steps = early["divergence"], early["steps"]
    above = [d is not None and d["low"] > div[0]["high"] for d in div]
    return next((steps[i] for i in range(1, len(steps)) if all(above[i:])), None)

