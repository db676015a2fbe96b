"""How the experiments use `hf_minattn.stats`: every comparison between variants is a paired difference over seeds
(the same seed gives the same data order, masks and, where shapes agree, initial weights), with a 95% t-interval.
No interval is computed here; this module only pairs the numbers and names the outcome."""

from hf_minattn.stats import Interval, mean_interval, paired_difference

MIN_SEEDS_FOR_INTERVALS = 3


def seed_values(results: dict, variant: str, key: str = "eval_loss") -> dict[int, float]:
    """{seed: value} for one variant, from `results["variants"][variant]["seeds"]`."""
    if variant not in results["variants"]:
        raise ValueError(f"no variant {variant!r} in the results; have {sorted(results['variants'])}")
    return {row["seed"]: row[key] for row in results["variants"][variant]["seeds"] if row.get(key) is not None}


def unigram_values(results: dict) -> dict[int, float]:
    """{seed: unigram-floor loss on that seed's masked validation tokens} (the same for every variant of a seed)."""
    return {row["seed"]: row["unigram_loss"] for row in results["variants"]["full"]["seeds"]}


def _paired(a: dict, b: dict) -> Interval:
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise ValueError("no seed in common to pair")
    return paired_difference([a[s] for s in seeds], [b[s] for s in seeds])


def difference(results: dict, a: str, b: str, key: str = "eval_loss") -> dict:
    """Paired difference a - b over seeds (a variant name, or "unigram" for the unigram floor)."""
    values = {name: unigram_values(results) if name == "unigram" else seed_values(results, name, key) for name in (a, b)}
    return _paired(values[a], values[b]).to_dict()


def mean(results: dict, variant: str, key: str = "eval_loss") -> dict:
    return mean_interval(list(seed_values(results, variant, key).values())).to_dict()


def share_of_gain(results: dict, variant: str, reference: str = "full") -> dict | None:
    """Share, in %, of the reference's loss reduction below the unigram floor that `variant` achieves, per seed
    ((U - L_variant) / (U - L_reference)), with a t-interval over seeds. None where the reference is not below the
    floor at some seed (the share then means nothing)."""
    floor, ref, var = unigram_values(results), seed_values(results, reference), seed_values(results, variant)
    seeds = sorted(set(floor) & set(ref) & set(var))
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
    """+1 / -1 when a stored interval lies above / below 0, 0 when it contains 0 (or is missing)."""
    if interval is None:
        return 0
    return Interval(**interval).sign()


def curve_difference(results: dict, a: str, b: str) -> dict:
    """Paired difference of the gain over the unigram floor, a - b, at each evaluation step during training."""
    def by_seed(variant):
        return {row["seed"]: row["curve"] for row in results["variants"][variant]["seeds"] if row.get("curve")}

    ca, cb = by_seed(a), by_seed(b)
    seeds = sorted(set(ca) & set(cb))
    if not seeds:
        return {"steps": [], "difference": []}
    steps = sorted(set.intersection(*(set(c["steps"]) for s in seeds for c in (ca[s], cb[s]))))
    out = []
    for step in steps:
        x = [ca[s]["gain_over_unigram"][ca[s]["steps"].index(step)] for s in seeds]
        y = [cb[s]["gain_over_unigram"][cb[s]["steps"].index(step)] for s in seeds]
        out.append(paired_difference(x, y).to_dict() if None not in x + y else None)
    return {"steps": steps, "difference": out}
