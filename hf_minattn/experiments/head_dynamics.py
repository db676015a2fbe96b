"""Heads over training (question 4: do heads learn different things, and when?). At every saved state of the full
model's run (the `checkpoint-<step>` folders of `dynamics.saved_states`, with the untrained model of the seed as step
0), on one small fixed set of sentences, per head:

- its role as Clark et al. name it (`probes.heads.head_roles`: the target given the most attention mass, a role only
  at >= ROLE_MIN_MASS), with that mass's ratio to uniform attention;
- the Jensen-Shannon divergence between the heads of each layer (`probes.heads.within_layer_divergence`);
- its ablation cost: the masked-LM loss increase when its output is zeroed (`probes.head_ablation`), at the training
  mask rate, one mask draw from the seed (the same masked tokens at every state of a seed);
- the effective rank (Roy & Vetterli 2007: exp of the entropy of the normalised singular values) of its query-key
  circuit W_Q,h^T W_K,h (`probes.weights.circuit_spectra`).

Each state keeps a few numbers over heads (heads with a role, mean max role mass, ...) and the per-head values.
`head_dynamics_summary` then asks whether heads specialise before, as or after the loss leaves the unigram plateau:
per seed, the plateau exit is the first evaluation whose gain over the unigram floor exceeds PLATEAU_GAIN, and the
specialisation step the first saved state at which the mean within-layer divergence has risen half of the way from
step 0 to its last value (`evaluation.half_step`); their paired difference over seeds is tested
(`statistics.tested`) with one evaluation interval as the equivalence margin.

The coarse grid cannot place specialisation before, as or after the plateau exit (both land on the same 120-step
grid), and divergence between heads starts near 0 (near-uniform attention at initialisation), so any training
raises it. Hence a second, finer measurement (`early_curves`, answered by `early_summary`): on the early states the
full run and its matched-step control `shuffled_labels` save every `early_save_every` steps up to `early_save_until`
(20 and 400 in the full preset; the control is the full model trained with the same seed, data order, masks and
learning-rate schedule, but on masked targets permuted across each batch, so that its loss can learn token frequencies
only: `masking.MLMCollator`), at each step, per seed:

- the mean within-layer JS divergence of the full model and of the control, and their difference (and each layer's,
  which `figures.draw_early_grid` draws);
- the gain over the unigram floor of each, scored from the saved state on the sequences and masks run_mlm's own
  evaluation used (`gain_scorer`), so that the loss curve is on the same grid.

The rule (`matched_specialisation_step`): the control's own variation sets the threshold, the largest change of its
divergence between two neighbouring grid steps (`control_threshold`); the heads specialise at the first grid step from
which the full model's divergence exceeds the control's by more than that threshold at every later grid step (a single
crossing that falls back is noise, not specialisation). The plateau exit is the first grid step whose gain exceeds
PLATEAU_GAIN (None if the loss is still on the plateau at the grid's end). Their paired difference over seeds is tested
(`statistics.tested`) with one grid step as the equivalence margin.

Cost, measured on the full preset's shape (hidden 128, 4 layers x 4 heads, vocabulary 8192; 32 sentences of 44
tokens on average) on a 2-core CPU busy with another job, one torch thread: 2.2 s a state (the 17 forward passes of the
ablation are nine tenths of it), so its 11 states x 3 seeds take about 75 s. With two threads on the same busy machine
a state took 10-50 s: threads competing with another process for two cores.
"""

import numpy as np
import torch

from hf_minattn.stats import mean_interval

from . import statistics as st
from .dynamics import saved_states
from .evaluation import half_step
from .training import log

CONTROL = "shuffled_labels"  # the variant trained without linguistic signal, on the early grid only

SENTENCES = 32  # a small fixed set: ablation costs (layers x heads + 1) forward passes over it at every state
BATCH_SIZE = 8  # sentences sorted by length, so batches of 8 pad little (one batch of 32: twice the time)
# The loss has left the unigram plateau at the first evaluation whose gain over the floor exceeds this (nats): the
# size of the seed-to-seed spread of the loss (statistics.LOSS_MARGIN), and under 4% of the full model's final gain
# in the committed runs (1.25-1.34 nats).
PLATEAU_GAIN = 0.05
# Numbers per state (over the heads of one model); the per-head values are kept beside them in "by_head".
MEASURES = ("heads_with_role", "max_role_mass", "max_role_ratio", "within_layer_js", "ablation_max", "ablation_mean",
            "qk_effective_rank")


def matrix_effective_rank(matrix) -> float:
    """Roy & Vetterli's effective rank of a matrix: exp(entropy of its singular values normalised to sum 1); 1 for
    rank one, D for the D x D identity."""
    from hf_minattn.probes.weights import effective_rank

    return effective_rank(torch.linalg.svdvals(torch.as_tensor(matrix, dtype=torch.float64)))


def qk_effective_ranks(model) -> list[list[float]]:
    """(layers, heads): the effective rank of each head's query-key circuit W_Q,h^T W_K,h (hidden x hidden, rank <=
    head_dim), from its factors (`probes.weights.circuit_spectra`)."""
    from hf_minattn.probes.weights import circuit_spectra, head_weights

    heads, _ = head_weights(model)
    heads = [{k: w.detach().cpu() for k, w in layer.items()} for layer in heads]
    return circuit_spectra(heads).qk_effective_rank


def measure_state(model, tokenizer, sentences, mlm_probability: float, seed: int) -> dict:
    """The head numbers of one model (a masked LM) on `sentences`: {measure: number} for MEASURES and "by_head":
    {"role", "role_mass", "role_ratio", "ablation", "qk_effective_rank"}, each (layers, heads)."""
    from hf_minattn.probes.head_ablation import head_ablation
    from hf_minattn.probes.heads import ROLES, head_roles, head_statistics

    sentences = list(sentences)
    heads = head_statistics(model, tokenizer, sentences, max_sentences=len(sentences), js_sentences=len(sentences),
                            batch_size=BATCH_SIZE, norm_weighting=False)
    roles = head_roles(heads.stats, heads.relative_to_uniform)
    names = [r for r in ROLES if r in heads.stats]
    mass = np.array([heads.stats[r] for r in names], dtype=float)  # (roles, layers, heads)
    best = mass.argmax(axis=0)  # the target each head gives the most mass, role or not
    ratios = [heads.relative_to_uniform[names[b]][l][h] for (l, h), b in np.ndenumerate(best)]
    ablation = head_ablation(model, tokenizer, sentences, max_sentences=len(sentences), batch_size=BATCH_SIZE,
                             mlm_probability=mlm_probability, seed=seed, mask_draws=1)
    cost = np.array(ablation.loss_increase)
    ranks = qk_effective_ranks(model)
    return {
        "heads_with_role": int(sum(r != "none" for layer in roles.roles for r in layer)),
        "max_role_mass": float(mass.max(axis=0).mean()),
        "max_role_ratio": float(np.mean([r for r in ratios if r is not None])) if any(r is not None for r in ratios) else None,
        "within_layer_js": float(np.mean(heads.within_layer_js)) if heads.num_heads > 1 else None,
        "ablation_max": float(cost.max()), "ablation_mean": float(cost.mean()),
        "qk_effective_rank": float(np.mean(ranks)),
        "by_head": {"role": roles.roles, "role_mass": mass.max(axis=0).tolist(), "role_ratio": roles.ratio,
                    "ablation": cost.tolist(), "qk_effective_rank": ranks},
    }


def head_curves(folders: dict, settings: dict, seeds, sentences) -> dict:
    """The head numbers at every saved state of the full run of each seed (step 0: the seed's untrained model, where
    `folders` has one). `folders`: {variant: {seed: folder}} as `training.train_variants` returns it; the tokenizer is
    read from the full run's own folder. Returns {"steps": [...], "sentences", "heads", "head_dim", "role_min_mass",
    "seeds": {seed: {measure: [per state], "by_head": {name: [per state (layers, heads)]}}}}; the saved states are
    left in place."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from hf_minattn.probes.heads import ROLE_MIN_MASS
    from hf_minattn.probes.loading import resolve_device

    sentences = list(sentences)
    if not sentences:
        raise ValueError("head_curves needs sentences to measure the heads on")
    device = resolve_device(None)
    result, steps = {"sentences": len(sentences), "role_min_mass": ROLE_MIN_MASS, "seeds": {}}, None
    for seed in seeds:
        tokenizer = AutoTokenizer.from_pretrained(folders["full"][seed])
        untrained = (folders.get("untrained") or {}).get(seed)
        states = [*([(0, untrained)] if untrained else []), *saved_states(folders["full"][seed])]
        log(f"heads during training: full, seed {seed}, {len(states)} states")
        rows = []
        for _, path in states:
            model = AutoModelForMaskedLM.from_pretrained(path).to(device).eval()
            rows.append(measure_state(model, tokenizer, sentences, settings["mlm_probability"], seed))
            result.setdefault("heads", model.config.num_hidden_layers * model.config.num_attention_heads)
            result.setdefault("head_dim", model.config.hidden_size // model.config.num_attention_heads)
            del model
        state_steps = [step for step, _ in states]
        if steps is not None and state_steps != steps:
            raise ValueError(f"full seed {seed} saved states at steps {state_steps}, other seeds at {steps}")
        steps = state_steps
        result["seeds"][seed] = {**{m: [row[m] for row in rows] for m in MEASURES},
                                 "by_head": {k: [row["by_head"][k] for row in rows] for k in rows[0]["by_head"]}}
    result["steps"] = steps
    result["early"] = early_curves(folders, settings, seeds, sentences)
    return result


def has_early_states(folders: dict, seeds) -> bool:
    """Whether the full run and the control saved early states at every seed."""
    from hf_minattn.early_states import early_states_folder

    return CONTROL in folders and all(saved_states(early_states_folder(folders[v][seed]))
                                      for v in ("full", CONTROL) for seed in seeds)


def gain_scorer(tokenizer_dir: str, settings: dict):
    """gain(model, seed): the model's gain over the unigram floor (nats) on the validation sequences run_mlm
    evaluated during training (`training.curve_sequences`), masked as its evaluation of that seed masked them
    (`evaluation.mask_validation`'s draw 0, a sequence's masks seeded by its index in the whole split): what run_mlm's
    evaluation would have logged at the state's step. The floor is the training split's, as run_mlm's."""
    import dataclasses

    from hf_minattn.unigram import UnigramFloor

    from .evaluation import load_splits, mask_validation, token_losses
    from .training import curve_sequences

    splits = load_splits(tokenizer_dir, settings["max_seq_length"], settings["mlm_probability"])
    unigram = UnigramFloor.from_dataset(splits.train, len(splits.tokenizer))
    kept = curve_sequences(settings, len(splits.validation))
    draws = {}

    def gain(model, seed: int) -> float:
        if seed not in draws:
            whole = mask_validation(splits, seed, draws=1)[0]  # then the curve's rows: each keeps its masks
            draws[seed] = dataclasses.replace(whole, **{key: getattr(whole, key)[kept.start:kept.stop]
                                                        for key in ("input_ids", "attention_mask", "labels")})
        losses, _, _ = token_losses(model, draws[seed], settings["batch_size"])
        return float(unigram.cross_entropy(draws[seed].targets) - losses.mean())

    return gain


def early_curves(folders: dict, settings: dict, seeds, sentences) -> dict | None:
    """The mean within-layer JS divergence and the gain over the unigram floor at every early state of the full run
    and of the control (step 0: the seed's untrained model, the state both started from). Returns {"steps", "every",
    "until", "control", "seeds": {seed: {variant: {"within_layer_js": [...], "within_layer_js_by_layer": [[per layer]
    per step], "gain_over_unigram": [...]}}}}, or None when the runs saved no early states."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from hf_minattn.early_states import early_states_folder
    from hf_minattn.probes.heads import head_statistics
    from hf_minattn.probes.loading import resolve_device

    if not has_early_states(folders, seeds):
        return None
    device, sentences = resolve_device(None), list(sentences)
    gain = gain_scorer(folders["full"][seeds[0]], settings)
    result = {"every": settings["early_save_every"], "until": settings["early_save_until"], "control": CONTROL,
              "steps": None, "seeds": {}}
    for seed in seeds:
        tokenizer = AutoTokenizer.from_pretrained(folders["full"][seed])
        untrained = (folders.get("untrained") or {}).get(seed)
        result["seeds"][seed] = {}
        for variant in ("full", CONTROL):
            early = saved_states(early_states_folder(folders[variant][seed]))
            states = [*([(0, untrained)] if untrained else []), *early]
            log(f"heads early in training: {variant}, seed {seed}, {len(states)} states")
            if result["steps"] is not None and [s for s, _ in states] != result["steps"]:
                raise ValueError(f"{variant} seed {seed} saved early states at steps {[s for s, _ in states]}, the "
                                 f"others at {result['steps']}")
            result["steps"] = [s for s, _ in states]
            rows = {"within_layer_js": [], "within_layer_js_by_layer": [], "gain_over_unigram": []}
            for _, path in states:
                model = AutoModelForMaskedLM.from_pretrained(path).to(device).eval()
                heads = head_statistics(model, tokenizer, sentences, max_sentences=len(sentences),
                                        js_sentences=len(sentences), batch_size=BATCH_SIZE, norm_weighting=False)
                # one head a layer: no divergence between heads (within_layer_js is None per layer), as in measure_state
                rows["within_layer_js"].append(float(np.mean(heads.within_layer_js)) if heads.num_heads > 1 else None)
                rows["within_layer_js_by_layer"].append(list(heads.within_layer_js))
                rows["gain_over_unigram"].append(gain(model, seed))
            result["seeds"][seed][variant] = rows
    return result


def remove_early_states(folders: dict, seeds) -> None:
    """Delete the early states of the full run and the control (once `early_curves` has kept its numbers)."""
    import shutil

    from hf_minattn.early_states import early_states_folder

    for variant in ("full", CONTROL):
        for seed in seeds if variant in folders else ():
            shutil.rmtree(early_states_folder(folders[variant][seed]), ignore_errors=True)


def plateau_exit_step(steps, gains, threshold: float = PLATEAU_GAIN) -> int | None:
    """The first evaluation step whose gain over the unigram floor exceeds `threshold` nats (None if none does)."""
    return next((step for step, gain in zip(steps, gains) if gain is not None and gain > threshold), None)


def specialisation_step(steps, divergence) -> int | None:
    """The first step at which the within-layer divergence has risen half of the way from its first value (step 0)
    to its last (`evaluation.half_step` of the rise); None if it did not rise."""
    if len(steps) < 2 or None in divergence or divergence[-1] <= divergence[0]:
        return None
    return half_step(list(steps), [d - divergence[0] for d in divergence])


def control_threshold(control) -> float:
    """The control's own variation: the largest change of its divergence between two neighbouring grid steps."""
    return float(np.max(np.abs(np.diff(control)))) if len(control) > 1 else 0.0


def matched_specialisation_step(steps, full, control) -> int | None:
    """The first grid step from which the full model's divergence exceeds the control's by more than
    `control_threshold(control)` at every later grid step; None if it does not stay above by the last one."""
    if None in full or None in control or len(full) != len(control) or len(steps) != len(full):
        return None
    threshold = control_threshold(control)
    above = [f - c > threshold for f, c in zip(full, control)]
    return next((step for i, step in enumerate(steps) if all(above[i:])), None)


def early_summary(early: dict) -> dict:
    """Over seeds, per early grid step: the divergence of the full model, of the control and their difference, and
    the gain over the unigram floor of each; per seed the threshold, the specialisation step and the plateau exit on
    the grid; and specialisation - exit, paired over the seeds with both, tested with one grid step as the margin.
    Per layer, the divergence of each over seeds ("divergence_by_layer", "control_divergence_by_layer"; the rule
    reads the mean over layers)."""
    steps, seeds, control = early["steps"], sorted(early["seeds"]), early["control"]
    runs = {s: early["seeds"][s] for s in seeds}
    by_seed = []
    for seed in seeds:
        full, ctrl = runs[seed]["full"]["within_layer_js"], runs[seed][control]["within_layer_js"]
        by_seed.append({"seed": seed, "threshold": control_threshold(ctrl),
                        "specialisation_step": matched_specialisation_step(steps, full, ctrl),
                        "plateau_exit_step": plateau_exit_step(steps, runs[seed]["full"]["gain_over_unigram"])})

    def over(variant, key):
        return [_over_seeds([runs[s][variant][key][i] for s in seeds]) for i in range(len(steps))]

    difference = [[runs[s]["full"]["within_layer_js"][i] - runs[s][control]["within_layer_js"][i] for s in seeds]
                  for i in range(len(steps))]
    return {
        "steps": steps, "every": early["every"], "until": early["until"], "control": control, "seeds": len(seeds),
        "plateau_gain": PLATEAU_GAIN, "divergence": over("full", "within_layer_js"),
        "control_divergence": over(control, "within_layer_js"),
        "divergence_minus_control": [_over_seeds(values) for values in difference],
        "gain": over("full", "gain_over_unigram"), "control_gain": over(control, "gain_over_unigram"),
        "divergence_by_layer": by_layer([runs[s]["full"] for s in seeds]),
        "control_divergence_by_layer": by_layer([runs[s][control] for s in seeds]),
        **exit_and_specialisation(by_seed, margin=early["every"]),
    }


def by_layer(runs: list[dict]) -> list[list[dict | None]] | None:
    """Per layer, per grid step, the within-layer divergence over seeds (`runs`: one variant's early numbers per
    seed); None for early curves measured before the per-layer numbers were kept."""
    if not all(run.get("within_layer_js_by_layer") for run in runs):
        return None
    grids = [run["within_layer_js_by_layer"] for run in runs]  # per seed: (steps, layers)
    steps, layers = len(grids[0]), len(grids[0][0])
    return [[_over_seeds([grid[i][layer] for grid in grids]) for i in range(steps)] for layer in range(layers)]


def exit_and_specialisation(by_seed: list[dict], margin: int) -> dict:
    """The per-seed rows, how many seeds left the plateau and specialised, both steps over seeds, and specialisation -
    exit paired over the seeds that have both, tested against `margin` steps ("lower": heads specialise before the
    loss leaves the plateau, "higher": after, "equivalent": as it does)."""
    paired = [r for r in by_seed if r["plateau_exit_step"] is not None and r["specialisation_step"] is not None]
    exits = [r["plateau_exit_step"] for r in by_seed if r["plateau_exit_step"] is not None]
    specialised = [r["specialisation_step"] for r in by_seed if r["specialisation_step"] is not None]
    return {
        "margin": margin, "min_seeds": st.MIN_SEEDS_FOR_INTERVALS, "by_seed": by_seed, "seeds_with_exit": len(exits),
        "seeds_specialised": len(specialised), "plateau_exit": _over_seeds(exits),
        "specialisation": _over_seeds(specialised), "paired_seeds": len(paired),
        "specialisation_minus_exit": (st.tested([r["specialisation_step"] - r["plateau_exit_step"] for r in paired],
                                                margin=margin) if len(paired) >= 2 else None),
    }


def early_has_divergence(early: dict) -> bool:
    """Whether the early grid measured a divergence between heads (not for models with one head a layer)."""
    return all(None not in rows["within_layer_js"] for runs in early["seeds"].values() for rows in runs.values())


def _over_seeds(values):
    return mean_interval(values).to_dict() if values and None not in values else None


def head_dynamics_summary(curves: dict, results: dict) -> dict:
    """Per measure and saved step, the mean over seeds with its 95% t-interval; the gain over the unigram floor at the
    same steps (the full run's evaluation curve; None at step 0, which was not evaluated); per seed, the plateau exit
    and specialisation steps; and specialisation - plateau exit, paired over the seeds that have both, tested against
    a margin of one evaluation interval (`exit_and_specialisation`); under "early", the same on the early grid
    against the control (`early_summary`), where the runs saved early states."""
    steps, seeds = curves["steps"], sorted(curves["seeds"])
    rows = {row["seed"]: row.get("curve") for row in results["variants"]["full"]["seeds"]}
    margin = results["settings"].get("eval_steps") or int(np.min(np.diff(steps)))
    gain, by_seed = [], []
    for step in steps:
        values = [(c["gain_over_unigram"][c["steps"].index(step)] if c and step in c["steps"] else None)
                  for c in (rows.get(s) for s in seeds)]
        gain.append(_over_seeds(values))
    for seed in seeds:
        curve = rows.get(seed) or {"steps": [], "gain_over_unigram": []}
        divergence = curves["seeds"][seed]["within_layer_js"]
        by_seed.append({"seed": seed, "plateau_exit_step": plateau_exit_step(curve["steps"], curve["gain_over_unigram"]),
                        "specialisation_step": specialisation_step(steps, divergence),
                        "divergence_first": divergence[0], "divergence_last": divergence[-1]})
    return {
        "steps": steps, "seeds": len(seeds), "sentences": curves["sentences"], "heads": curves.get("heads"),
        "head_dim": curves.get("head_dim"), "role_min_mass": curves.get("role_min_mass"),
        "measures": {m: [_over_seeds([curves["seeds"][s][m][i] for s in seeds]) for i in range(len(steps))]
                     for m in MEASURES},
        "gain": gain, "plateau_gain": PLATEAU_GAIN, **exit_and_specialisation(by_seed, margin),
        # one head a layer: the early grid has no divergence to time, so no early summary
        "early": early_summary(curves["early"]) if curves.get("early") and early_has_divergence(curves["early"]) else None,
    }
