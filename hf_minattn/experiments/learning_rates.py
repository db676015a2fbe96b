"""A learning rate per variant, chosen on exploration seeds only.

The recipe's learning rate was tuned for the full model. A variant that learns worse at that rate may only need
another rate: "frozen embeddings are worse" must not mean "frozen embeddings want a different step size". So each
trained variant is trained at a few rates on the exploration seeds (benchmarks/lr_study.py), and the preset trains
each at its own best. The confirmation seeds never take part in the choice: `choose_learning_rates` refuses a study
that holds none of the exploration seeds and ignores every other seed's row.

Rule: per variant, the lowest mean evaluation loss over the exploration seeds (each run's final loss on the
validation sample it evaluates during training); a tie goes to the rate nearer the recipe's (in log distance). A
best rate at either end of the rates run says that one beyond might do better, so the study then runs the next
factor of 2 beyond it, on the same seeds, and chooses again (at most twice per variant).
"""

import math

import numpy as np

EXPLORATION_SEEDS = (0, 1, 2)  # seeds 0-2 chose the recipe; the confirmation run uses others
# A control that must match the full model step for step (Q4's shuffled labels) trains at the full model's rate.
FOLLOWS_FULL = ("shuffled_labels",)
RATE_FACTORS = (0.5, 1.0, 2.0)  # the study's rates: the preset's learning rate times these
MAX_EXTENSIONS = 2  # rates beyond the grid a variant may add, one factor of 2 at a time
RULE = ("per variant, the lowest mean evaluation loss over the exploration seeds; a tie goes to the rate nearer the "
        "recipe's (log distance); no other seed is read; a best rate at an end of the rates run adds the next factor "
        f"of 2 beyond it and chooses again, at most {MAX_EXTENSIONS} times per variant")


def study_rates(base: float, factors=RATE_FACTORS) -> list[float]:
    if not (isinstance(base, (int, float)) and base > 0):
        raise ValueError(f"the base learning rate must be a positive number, got {base!r}")
    return [float(f"{base * f:.3g}") for f in factors]


def choose_learning_rates(rows, base: float, exploration_seeds=EXPLORATION_SEEDS) -> dict:
    """{variant: {"learning_rate", "mean_loss": {rate: mean over seeds}, "seeds", "edge"}} from study rows
    {"variant", "learning_rate", "seed", "eval_loss"}; only rows of `exploration_seeds` are read, and each rate of
    a variant must have been run at every one of them (a missing run would bias the mean). "edge" says where the
    chosen rate lies in the grid studied: "lowest" or "highest" (a rate beyond it might be better still), or None."""
    exploration = set(exploration_seeds)
    kept = [r for r in rows if r["seed"] in exploration]
    if not kept:
        raise ValueError(f"the study holds no run at the exploration seeds {sorted(exploration)}")
    losses = {}
    for r in kept:
        losses.setdefault(r["variant"], {}).setdefault(float(r["learning_rate"]), {})[r["seed"]] = r["eval_loss"]
    chosen = {}
    for variant, by_rate in losses.items():
        for rate, by_seed in by_rate.items():
            if set(by_seed) != exploration:
                raise ValueError(f"{variant} at learning rate {rate} ran at seeds {sorted(by_seed)}; the study needs "
                                 f"every exploration seed {sorted(exploration)}")
        means = {rate: float(np.mean(list(by_seed.values()))) for rate, by_seed in by_rate.items()}
        best = min(means, key=lambda rate: (round(means[rate], 6), abs(math.log(rate / base))))
        edge = None if len(means) < 2 else "lowest" if best == min(means) else "highest" if best == max(means) else None
        chosen[variant] = {"learning_rate": best, "mean_loss": {str(k): v for k, v in sorted(means.items())},
                           "seeds": sorted(exploration), "edge": edge}
    return chosen


def extension_rates(chosen: dict, rates: dict, factors=RATE_FACTORS) -> dict:
    """{variant: the next rate to run} for each variant of `chosen` (choose_learning_rates) whose best rate is at an
    end of the rates it ran (`rates`: {variant: [rates]}), until it has run MAX_EXTENSIONS beyond the grid."""
    more = {}
    for variant, c in chosen.items():
        run = sorted(rates[variant])
        if c["edge"] is None or len(run) - len(factors) >= MAX_EXTENSIONS:
            continue
        more[variant] = float(f"{run[0] / 2:.3g}") if c["edge"] == "lowest" else float(f"{run[-1] * 2:.3g}")
    return more


def variant_learning_rate(settings: dict, variant_name: str) -> float:
    """The rate a preset trains `variant_name` at: its own from `settings["learning_rates"]` where the study chose one,
    the full model's for a control that follows it (FOLLOWS_FULL), else the preset's."""
    rates = settings.get("learning_rates") or {}
    return rates.get("full" if variant_name in FOLLOWS_FULL else variant_name, settings["learning_rate"])
