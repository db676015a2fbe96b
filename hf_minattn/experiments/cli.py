"""`hf-minattn experiments`: train the variants at several paired seeds, re-score them on the whole validation set,
probe the models of every seed, and write results.json, FINDINGS.md and the figures."""

import argparse
import json
import math
import os
import time

import numpy as np

from hf_minattn.checks import check_bounds, check_output_folder
from hf_minattn.cli import OneLineArgumentParser
from hf_minattn.data import WIKIPEDIA_CORPUS_DESCRIPTION
from hf_minattn.machine import fast_bf16_available, machine_description
from hf_minattn.record_files import write_json_atomically

from .answers import answer_questions, rounded
from .evaluation import (drift_summary, initialisation_agreement, input_ids_ever_masked_in, load_splits,
                         loss_allocation_summary, mask_validation, row_drift, score_model, token_counts, trainer_metrics, word_embeddings)
from .dynamics import remove_saved_states, saved_states, similarity_curves
from .figures import make_figures
from .findings import int_seed_keys, protocol_record, render_findings
from .head_dynamics import head_curves, remove_early_states
from .probing import probe_variants
from .training import (SETTINGS, VARIANTS, build_config, check_same_settings, count_parameters, log,
                       matched_intermediate_size, train_variants, variant_named, variant_overrides)
from .word2vec import word2vec_tasks


def check_seeds(seeds) -> tuple[int, ...]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers, got {seeds!r}")
    seeds = tuple(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be one or more non-negative integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds!r}")
    if len(seeds) < 2:  # one seed would train and probe everything, then have no interval to give
        raise ValueError(f"seeds: every comparison is paired over seeds, so at least 2 are needed (3 or more for "
                         f"intervals), got {seeds!r}")
    return seeds


MAX_SEEDS = 1000  # each seed trains and probes every variant: far more than anyone runs, so more is a typo


def parse_seeds(text: str) -> tuple[int, ...]:
    """--seeds: "0,1,2", "3-7" (both ends included) or a mix such as "0,3-5", as a checked tuple of seeds."""
    seeds = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last) if dash else int(first)
        except ValueError:
            raise ValueError(f"--seeds must be non-negative integers and ranges such as 0,1,2 or 3-7, got "
                             f"{text!r}") from None
        if high < low:
            raise ValueError(f"--seeds: the range {part.strip()!r} runs backwards; write it as {last}-{first}")
        if len(seeds) + high - low + 1 > MAX_SEEDS:  # counted before the range is expanded
            raise ValueError(f"--seeds {text!r} names more than {MAX_SEEDS} seeds; expected at most {MAX_SEEDS} (each "
                             "seed trains and probes every variant)")
        seeds += range(low, high + 1)
    try:
        return check_seeds(seeds)
    except ValueError as error:
        raise ValueError(f"--seeds {text!r}: {error}") from None


def evaluate(out: str, folders: dict, settings: dict, seeds) -> dict:
    """Re-score every model on the whole validation set (several mask draws), per seed; the unigram floor on the
    same tokens; per-row embedding drift for the full and frozen variants."""
    from hf_minattn.unigram import UnigramFloor

    first = folders["full"][seeds[0]]
    splits = load_splits(first, settings["max_seq_length"], settings["mlm_probability"])
    vocab = len(splits.tokenizer)
    unigram = UnigramFloor.from_dataset(splits.train, vocab)
    counts = token_counts(splits.train, vocab)
    epochs = -(-settings["max_steps"] * settings["batch_size"] // len(splits.train))  # epochs training started
    variants = {v.name: {"description": v.description, "trained": v.trained, "seeds": []} for v in VARIANTS}
    rows, arrays = {}, {}
    for seed in seeds:
        log(f"scoring seed {seed}: {len(splits.validation)} validation sequences x {settings['mask_draws']} mask draws")
        draws = mask_validation(splits, seed, settings["mask_draws"])
        for variant in VARIANTS:
            folder = folders[variant.name][seed]
            trainer = trainer_metrics(folder)
            row = {"seed": seed, **score_model(folder, draws, unigram, settings["batch_size"],
                                               settings["curve_eval_samples"] if variant.trained else None), **trainer}
            variants[variant.name]["seeds"].append(row)
        # per-row drift at every seed: the bins of the first seed are shown, the frequency correlation over seeds
        initial = word_embeddings(folders["untrained"][seed])
        ever = input_ids_ever_masked_in(splits, seed, epochs, vocab)
        for name in ("full", "frozen_embeddings"):
            trained = word_embeddings(folders[name][seed])
            drift = row_drift(trained, initial, counts, ever)
            if seed == seeds[0]:
                rows[name] = drift
                arrays[f"{'frozen' if name != 'full' else 'full'}_drift"] = np.linalg.norm(trained - initial, axis=1)
            rows.setdefault("by_seed", {}).setdefault(name, {})[seed] = {
                "spearman_drift_vs_count": drift["spearman_drift_vs_count"],
                "never_input_moved": (drift.get("never_input") or {}).get("moved"),
                "not_in_text_moved": drift["not_in_text"]["moved"]}
    np.savez_compressed(os.path.join(out, "rows.npz"), counts=counts, **arrays)
    return {"variants": variants, "rows": rows, "unigram_entropy": unigram.entropy(),
            "unigram_tokens": unigram.num_tokens, "vocab_size": vocab, "epochs_touched": epochs}


REFERENCES = ("minilm", "none")  # the pretrained encoder probed beside the models (probes.loading.load_reference), or none


PRECISIONS = {"fp32": False, "bf16": True, "auto": None}  # run_mlm's --bf16 (None: bf16 where the hardware is fast)


def preset_settings(preset: str, reference: str | None = None, precision: str | None = None,
                    parallel: int | None = None) -> dict:
    """The SETTINGS of `preset`, with the pretrained reference `reference` ("minilm", "none"; None: the preset's),
    the training precision `precision` ("fp32", "bf16", "auto": bf16 where the hardware makes it fast; None: the
    preset's) and `parallel` training runs side by side (None: the preset's; a GPU takes many: the same numbers,
    sooner)."""
    for name, value in (("preset", preset), ("reference", reference), ("precision", precision)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {value!r}")
    if preset not in SETTINGS:
        raise ValueError(f"preset must be one of {sorted(SETTINGS)}, got {preset!r}")
    settings = dict(SETTINGS[preset])
    if reference is not None:
        if reference not in REFERENCES:
            raise ValueError(f"reference must be one of {list(REFERENCES)} (or None: the preset's), got {reference!r}")
        settings["reference"] = None if reference == "none" else reference
    if precision is not None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {list(PRECISIONS)} (or None: the preset's), got {precision!r}")
        settings["bf16"] = PRECISIONS[precision]
    if parallel is not None:
        if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
            raise ValueError(f"parallel must be a whole number >= 1 (training runs side by side), got {parallel!r}")
        settings["parallel"] = parallel
    return settings


def run_experiments(out: str, preset: str = "full", seeds=None, command: str = "hf-minattn experiments",
                    figure_format: str = "both", reference: str | None = None, precision: str | None = None,
                    parallel: int | None = None) -> dict:
    """Train, score, probe, answer; writes `out/results.json`, `out/FINDINGS.md` and `out/figures/` (every figure,
    the probes' too, as PNG, SVG or both: `figure_format`). `reference`: "minilm" probes all-MiniLM-L6-v2 on the
    same corpus and pairs, "none" does not; None: the preset's choice (every preset probes it). `precision` and
    `parallel`: as `preset_settings`."""
    settings, seeds = checked_arguments(out, preset, seeds, figure_format, reference, precision, parallel)
    out = os.fspath(out)
    check_same_settings(out, settings)
    start = time.perf_counter()
    clock = PhaseClock()
    folders, measured = run_phases(out, settings, seeds, figure_format, clock)
    results = answered(collect_results(out, folders, settings, seeds, measured, command=command, preset=preset))
    results["minutes"] = rounded((time.perf_counter() - start) / 60, 1)
    results["phase_minutes"] = clock.minutes
    write_results(results, out, figure_format)
    return results


def checked_arguments(out, preset, seeds, figure_format, reference, precision,
                      parallel=None) -> tuple[dict, tuple[int, ...]]:
    """The settings of the call and its seeds, every argument checked (a TypeError or ValueError naming it) before
    any training; bf16 "auto" is resolved here as run_mlm would, so that results.json says which it was."""
    from hf_minattn.probes.plots import figure_suffixes

    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a folder path, got {out!r}")
    check_output_folder(out, "out")
    settings = preset_settings(preset, reference, precision, parallel)
    if settings["bf16"] is None:
        settings["bf16"] = fast_bf16_available()
    figure_suffixes(figure_format)
    return settings, check_seeds(settings["seeds"] if seeds is None else seeds)


class PhaseClock:
    """Where the minutes of a call went, phase by phase (a rerun reuses trained models and cached numbers)."""

    def __init__(self):
        self.minutes, self.clock = {}, time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.minutes[name], self.clock = rounded((now - self.clock) / 60, 1), now
        log(f"{name}: {self.minutes[name]} min")


def run_phases(out: str, settings: dict, seeds, figure_format: str, clock: PhaseClock) -> tuple[dict, dict]:
    """Train every variant at every seed, score, measure the similarity and head dynamics, probe; returns the model
    folders ({variant: {seed: folder}}) and what each phase measured."""
    # The probes' word2vecs train on the runs' workers where one would wait for the other at the end.
    folders = train_variants(out, settings, seeds, also=lambda tokenizer: word2vec_tasks(settings, seeds, tokenizer))
    clock.done("training")
    scored = scoring(out, folders, settings, seeds)
    clock.done("scoring")
    # Both dynamics phases read the saved states; they are deleted only once both have cached their numbers.
    dynamics = similarity_dynamics(out, folders, settings, seeds, remove_states=False)
    clock.done("similarity dynamics")
    heads = head_dynamics(out, folders, settings, seeds)
    remove_saved_states(folders, seeds)
    remove_early_states(folders, seeds)
    clock.done("head dynamics")
    probes = probe_variants(out, folders, settings, seeds, figure_format)
    clock.done("probes")
    return folders, {"scored": scored, "dynamics": dynamics, "head_dynamics": heads, "probes": probes}


def collect_results(out: str, folders: dict, settings: dict, seeds, measured: dict, command: str, preset: str) -> dict:
    """results.json without its answers: the call, the model shape and sizes, the pairing, every phase's numbers;
    plain JSON types with int seed keys, folders relative to `out`, floats exact (`answered` rounds them)."""
    scored, first = measured["scored"], folders["full"][seeds[0]]
    with open(os.path.join(first, "config.json")) as f:
        config = json.load(f)
    variants = scored["variants"]
    for name in variants:
        with open(os.path.join(folders[name][seeds[0]], "config.json")) as f:
            variants[name]["config"] = {k: v for k, v in json.load(f).items()
                                        if k in ("intermediate_size", "qkv_projection", "qkv_init")}
    results = {
        "command": command, "machine": machine_description(), "date": time.strftime("%Y-%m-%d"), "preset": preset,
        "corpus": WIKIPEDIA_CORPUS_DESCRIPTION,
        "seeds": list(seeds), "settings": {**settings, "seeds": list(seeds)}, "protocol": protocol_record(),
        "config": {k: config[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                          "intermediate_size", "max_position_embeddings", "position_embedding_type")},
        **parameter_counts(settings, scored["vocab_size"]),
        "unigram_loss": rounded(np.mean([row["unigram_loss"] for row in variants["full"]["seeds"]])),
        "unigram": {"entropy": scored["unigram_entropy"], "training_tokens": scored["unigram_tokens"]},
        "epochs_touched": scored["epochs_touched"],
        "pairing": {"initialisation": initialisation_agreement(settings, scored["vocab_size"], seeds[0]),
                    "data_order": "the Trainer's sampler is seeded with --seed",
                    "masks": "MLMCollator draws each example's masks from (seed, epoch or stream, example index)"},
        "folders": {k: {s: os.path.relpath(p, out) for s, p in v.items()} for k, v in folders.items()},
        "variants": variants, "rows": scored["rows"],
        "drift": {name: drift_summary(folders[name][seeds[0]]) for name in ("full", "frozen_embeddings", "identity_qkv")},
        "loss_allocation": {seed: loss_allocation_summary(folders["full"][seed]) for seed in seeds},
        "probes": measured["probes"], "dynamics": measured["dynamics"], "head_dynamics": measured["head_dynamics"],
    }
    return int_seed_keys(json.loads(json.dumps(results, default=str)))  # plain types, folders as str


def answered(results: dict) -> dict:
    """`results` with its answers, computed from the exact numbers (a divergence of 0.0013 rounded to 4 decimals
    keeps 2 digits), then its floats rounded (`round_floats`), so that FINDINGS.md prints what results.json holds."""
    results["answers"] = answer_questions(results)
    round_floats(results)
    return results


def parameter_counts(settings: dict, vocab_size: int) -> dict:
    """Parameters of each trained variant (the untrained model has the full model's), its trainable parameters
    (frozen embeddings left out), and the widths that match the identity and frozen variants to the full model."""
    configs = {v.name: build_config(settings, variant_overrides(settings, v, vocab_size), vocab_size)
               for v in VARIANTS if v.trained}
    parameters = {name: count_parameters(config) for name, config in configs.items()}
    return {
        "parameters": {**parameters, "untrained": parameters["full"]},
        "trainable_parameters": {v.name: count_parameters(configs[v.name], v.freeze_embeddings)
                                 for v in VARIANTS if v.trained},
        "matched": matched_intermediate_size(settings, variant_named("identity_qkv"), vocab_size),
        "matched_frozen": matched_intermediate_size(settings, variant_named("frozen_embeddings_matched"), vocab_size),
    }


def write_results(results: dict, out: str, figure_format: str) -> None:
    """The figures, results.json and FINDINGS.md (which links the figures drawn)."""
    figures = make_figures(results, out, figure_format)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, allow_nan=False, default=str)
    with open(os.path.join(out, "FINDINGS.md"), "w") as f:
        f.write(render_findings(results, figures))


SCORING_SETTINGS = ("max_seq_length", "mlm_probability", "mask_draws", "max_steps", "batch_size", "curve_eval_samples")


def scoring_key(folders: dict, settings: dict, seeds) -> dict:
    """What `evaluate`'s numbers are computed from: the seeds, the settings it reads, and the size and modification
    time of every model it scores (a model trained again is a new file)."""
    def stamp(folder):  # every weights file (one, or the shards of a large model): [name, size, time]
        names = sorted(n for n in os.listdir(folder) if n.startswith("model") and n.endswith(".safetensors"))
        stats = [os.stat(os.path.join(folder, n)) for n in names]
        return [[n, info.st_size, info.st_mtime_ns] for n, info in zip(names, stats)]

    return {"seeds": list(seeds), "settings": {k: settings[k] for k in SCORING_SETTINGS},
            "models": {name: {str(seed): stamp(folders[name][seed]) for seed in seeds} for name in sorted(folders)}}


def cached_json(path: str, read_back, compute, **dump_options):
    """A phase's numbers kept in `path` so that a rerun reads them instead of measuring again: read_back(the file's
    JSON) where the file exists, unless it returns None (measured for other seeds or models); else compute(), written
    to `path` (nothing written when it returns None)."""
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as f:
                kept = read_back(json.load(f))
        except json.JSONDecodeError:  # written before writes were atomic, and cut short: measure again
            log(f"{path} is not whole JSON (a call stopped while writing it): measuring again")
            kept = None
        if kept is not None:
            return kept
    value = compute()
    if value is not None:
        write_json_atomically(path, value, **dump_options)
    return value


def scoring(out: str, folders: dict, settings: dict, seeds) -> dict:
    """`evaluate`'s numbers, kept in `out/scoring.json` beside what they were computed from (`scoring_key`): a rerun
    (after a kill in a later phase, say) reads them back instead of scoring every model again."""
    key = scoring_key(folders, settings, seeds)

    def read_back(kept):
        if kept["key"] != key or not os.path.isfile(os.path.join(out, "rows.npz")):
            return None
        log("scoring: read back from scoring.json (every model as an earlier call scored it)")
        return {"key": key, "scored": int_seed_keys(kept["scored"])}

    return cached_json(os.path.join(out, "scoring.json"), read_back,
                       lambda: {"key": key, "scored": evaluate(out, folders, settings, seeds)},
                       default=str)["scored"]  # default=str as collect_results


def similarity_dynamics(out: str, folders: dict, settings: dict, seeds, remove_states: bool = True) -> dict:
    """Word similarity at every saved state (dynamics.similarity_curves), kept in `out/similarity_dynamics.json`:
    the saved states are deleted once scored (unless `remove_states` is False: another phase still reads them), so a
    rerun reads the numbers back."""
    def read_back(curves):  # any subset of the seeds kept: a call on fewer seeds reads theirs
        variants = {name: {int(s): x for s, x in v["seeds"].items()} for name, v in curves["variants"].items()}
        if not set(seeds) <= set(variants["full"]):
            return None
        return {**curves, "variants": {name: {**v, "seeds": _of_seeds(variants[name], seeds)}
                                       for name, v in curves["variants"].items()}}

    def measure():
        gone = [seed for seed in seeds if not saved_states(folders["full"][seed])]
        if gone:  # measuring again would score step 0 alone for them and overwrite the numbers kept
            raise ValueError(f"the saved states of seeds {gone} in {out} were deleted once an earlier call measured "
                             "their word similarity during training, and similarity_dynamics.json does not hold all "
                             f"of seeds {list(seeds)}: run the new seeds into another --out")
        return similarity_curves(folders, settings, seeds, remove_states=remove_states)

    return cached_json(os.path.join(out, "similarity_dynamics.json"), read_back, measure, indent=1)


def _of_seeds(by_seed: dict, seeds) -> dict:
    """{seed: value} of `seeds` alone, those `by_seed` holds."""
    return {seed: by_seed[seed] for seed in seeds if seed in by_seed}


def head_dynamics(out: str, folders: dict, settings: dict, seeds) -> dict | None:
    """The heads at every saved state of the full run (head_dynamics.head_curves on the first SENTENCES probe
    sentences), kept in `out/head_dynamics.json` as similarity_dynamics keeps its numbers. None (and a log line) when
    the full run's states are already gone: an output folder whose similarity dynamics ran before this phase existed."""
    from hf_minattn.probes.corpus import default_sentences

    from .head_dynamics import SENTENCES

    def read_back(curves):  # any subset of the seeds kept, as similarity_dynamics reads its file
        kept = {int(s): x for s, x in curves["seeds"].items()}
        if not set(seeds) <= set(kept):
            return None
        curves["seeds"] = _of_seeds(kept, seeds)
        if curves.get("early"):
            curves["early"] = {**curves["early"],
                               "seeds": _of_seeds({int(s): x for s, x in curves["early"]["seeds"].items()}, seeds)}
        return curves

    def measure():
        if not all(saved_states(folders["full"][seed]) for seed in seeds):
            log("heads during training: the full run's saved states were already deleted; no head dynamics")
            return None
        return head_curves(folders, settings, seeds, default_sentences(SENTENCES))

    return cached_json(os.path.join(out, "head_dynamics.json"), read_back, measure, indent=1)


EXACT = ("p", "p_holm", "p_bootstrap")  # p-values stay exact: rounding one could carry it across 0.05


def round_floats(value, digits=4):
    """Round every float in place to `digits` decimals, or to `digits` significant digits where that keeps more (an
    estimate of 0.00003 stays one, not 0), p-values excepted (EXACT); FINDINGS.md then prints what results.json
    holds."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, v in items:
        if isinstance(v, float):
            if key not in EXACT and math.isfinite(v) and v != 0:
                value[key] = round(v, max(digits, digits - 1 - math.floor(math.log10(abs(v)))))
        else:
            round_floats(v, digits)


def main(argv=None) -> int:
    from hf_minattn.probes.plots import FIGURE_FORMATS

    parser = OneLineArgumentParser(prog="hf-minattn experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output folder (a rerun keeps the models trained and probed there)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny models, few steps, 2 seeds: minutes, for tests")
    size.add_argument("--scale", action="store_true", help="the preset sized for one GPU (runs on CPU too, slowly)")
    parser.add_argument("--seeds", help="seeds as a comma-separated list and/or ranges, e.g. 0,1,2 or 3-7 "
                                         "(at least 2, paired; 3 or more for intervals; default: the preset's)")
    parser.add_argument("--reference", choices=REFERENCES,
                        help="probe the pretrained all-MiniLM-L6-v2 beside the models ('minilm') or not ('none'). "
                             "Default: the preset's; every preset includes it (it adds two passes over the corpus)")
    parser.add_argument("--precision", choices=PRECISIONS,
                        help="training precision: fp32, bf16 autocast, or auto (bf16 where it is native: a GPU with "
                             "bf16, a CPU with AVX512-BF16/AMX). Default: the preset's: auto for the full preset and "
                             "--scale, fp32 for --quick. bf16 trains 1.9x faster on such a CPU; past the plateau its "
                             "eval loss is within 1%% of fp32's (docs/recipe.md)")
    parser.add_argument("--parallel", type=int,
                        help="training runs side by side, one process each (default: the preset's, 2 on 2 cores; "
                             "a GPU takes 16: the runs are small). The numbers do not depend on it")
    parser.add_argument("--figure-format", choices=FIGURE_FORMATS, default="both",
                        help="every figure as PNG, SVG or both (default: both; FINDINGS.md links the PNG when there "
                             "is one)")
    args = parser.parse_args(argv)
    check_bounds(args, {"parallel": (1, None, True)}, separator="-")  # the flag named as typed, before any work
    check_output_folder(args.out, "--out")  # run_experiments checks it too, named as its Python argument
    preset = "quick" if args.quick else "scale" if args.scale else "full"
    seeds = None if args.seeds is None else parse_seeds(args.seeds)
    command = "hf-minattn experiments" + (f" --{preset}" if preset != "full" else "") + \
        (f" --seeds {args.seeds}" if args.seeds else "") + \
        (f" --reference {args.reference}" if args.reference else "") + \
        (f" --precision {args.precision}" if args.precision else "") + \
        (f" --parallel {args.parallel}" if args.parallel else "") + \
        (f" --figure-format {args.figure_format}" if args.figure_format != "both" else "") + f" --out {args.out}"
    results = run_experiments(args.out, preset=preset, seeds=seeds, command=command,
                              figure_format=args.figure_format, reference=args.reference, precision=args.precision,
                              parallel=args.parallel)
    log(f"done in {results['minutes']} min")
    for what, where in (("findings", "FINDINGS.md"), ("figures", "figures"), ("models", "models"), ("probes", "probes")):
        log(f"{what + ':':10}{os.path.join(args.out, where)}")
    return 0
