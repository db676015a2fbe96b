"""`hf-minattn experiments`: train the variants at several paired seeds, re-score them on the validation set,
probe the models of every seed, and write results.json, FINDINGS.md and the figures."""

import argparse
import json
import math
import os
import re
import sys
import time

import numpy as np

from hf_minattn.checks import MAX_SEED, check_bounds, check_output_folder
from hf_minattn.cli import OneLineArgumentParser
from hf_minattn.data import WIKIPEDIA_CORPUS_DESCRIPTION
from hf_minattn.machine import fast_bf16_available, machine_description
from hf_minattn.record_files import write_json_atomically, write_text_atomically

from .answers import answer_questions, rounded
from .caches import head_dynamics, scoring, similarity_dynamics
from .dynamics import remove_saved_states
from .evaluation import drift_summary, initialisation_agreement, loss_allocation_summary
from .figures import make_figures
from .findings import int_seed_keys, protocol_record, render_findings
from .head_dynamics import remove_early_states
from .probing import check_probe_folders, probe_variants, reference_source
from .side_by_side import terminate_as_exit
from .training import (SETTINGS, VARIANTS, build_config, check_same_settings, count_parameters, log,
                       matched_intermediate_size, train_variants, variant_named, variant_overrides)
from .word2vec import word2vec_tasks




def check_seeds(seeds) -> tuple[int, ...]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers, got {seeds!r}")
    seeds = tuple(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be one or more non-negative integers, got {seeds!r}")
    if max(seeds) > MAX_SEED:
        raise ValueError(f"seeds must be at most 2**32 - 1 = {MAX_SEED} (run_mlm's seeding takes no more), got "
                         f"{max(seeds)}")
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
        if not all(re.fullmatch(r"[0-9]+", end.strip()) for end in ((first, last) if dash else (first,))):
            # int() alone would take "1_0" as 10 and "+3" as 3
            raise ValueError(f"--seeds must be non-negative integers and ranges such as 0,1,2 or 3-7, got "
                             f"{text!r}")
        low, high = int(first), int(last) if dash else int(first)
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


def joined_seed_values(argv: list[str]) -> list[str]:
    """`argv` with `--seeds VALUE` written `--seeds=VALUE` where VALUE starts with a minus and a digit (`-1,2`):
    argparse takes such a value for a flag and says only "expected one argument"; joined, it reaches parse_seeds,
    which names it and says what seeds may be. Abbreviations of --seeds (`--seed`) are joined too."""
    joined, rest = [], list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":  # what follows is not options
            return joined + [arg, *rest]
        if len(arg) >= len("--se") and "--seeds".startswith(arg) and rest and re.match(r"-[0-9]", rest[0]):
            arg = f"{arg}={rest.pop(0)}"
        joined.append(arg)
    return joined


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
    the probes' too, as PNG, SVG or both: `figure_format`; a probe run kept from an earlier call keeps its figures). `reference`: "minilm" probes all-MiniLM-L6-v2 on the
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
    any training, and the reference encoder found (`probing.reference_source`); bf16 "auto" is resolved here as
    run_mlm would, so that results.json says which it was."""
    from hf_minattn.probes.plots import figure_suffixes

    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a folder path, got {out!r}")
    check_output_folder(out, "out")
    settings = preset_settings(preset, reference, precision, parallel)
    if settings["bf16"] is None:
        settings["bf16"] = fast_bf16_available()
    figure_suffixes(figure_format)
    seeds = check_seeds(settings["seeds"] if seeds is None else seeds)
    reference_source(settings["reference"])  # found now, not after the training
    check_probe_folders(os.fspath(out), settings, seeds)
    return settings, seeds


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
        "epochs_touched": scored["epochs_touched"], "scored_sequences": scored.get("scored_sequences"),
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
    findings = os.path.join(out, "FINDINGS.md")
    if os.path.isfile(findings):  # an earlier call's: gone first, so that a kill cannot leave it beside new numbers
        os.remove(findings)
    figures = make_figures(results, out, figure_format)
    write_json_atomically(os.path.join(out, "results.json"), results, allow_nan=False, default=str)
    write_text_atomically(findings, render_findings(results, figures))


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
                             "a GPU takes 16: the runs are small). The runs are the same (data, seeds, steps); side by side each has one "
                             "CPU thread, which may change the last digits of a sum")
    parser.add_argument("--figure-format", choices=FIGURE_FORMATS, default="both",
                        help="every figure as PNG, SVG or both (default: both; FINDINGS.md links the PNG when there "
                             "is one). On a rerun, the figures of out/figures follow it; a probe run kept from an "
                             "earlier call keeps the figures it was drawn with (in out/probes)")
    args = parser.parse_args(joined_seed_values(sys.argv[1:] if argv is None else argv))
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
    with terminate_as_exit():  # a kill ends the training runs too, as a Ctrl-C does
        results = run_experiments(args.out, preset=preset, seeds=seeds, command=command,
                                  figure_format=args.figure_format, reference=args.reference,
                                  precision=args.precision, parallel=args.parallel)
    log(f"done in {results['minutes']} min")
    for what, where in (("findings", "FINDINGS.md"), ("figures", "figures"), ("models", "models"), ("probes", "probes")):
        log(f"{what + ':':10}{os.path.join(args.out, where)}")
    return 0
