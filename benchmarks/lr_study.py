"""A learning rate per variant, on the exploration seeds only (hf_minattn.experiments.learning_rates).

Each trained variant of `hf-minattn experiments` is trained at the preset's learning rate times 0.5, 1 and 2, at
the exploration seeds (0, 1, 2), exactly as the preset trains it (same steps, batch, warm-up, precision, matched
capacity), without the saved states and loss allocation that only the later phases read. Each run's final
evaluation loss (on the validation sample it evaluates during training) goes into the results, and the rule of
`learning_rates.RULE` chooses a rate per variant: where the best is at an end of the rates run, the next factor of 2
beyond it is run too, and the choice made again (at most twice a variant). The choice is then written into the
preset's `learning_rates` (hf_minattn/experiments/training.py) and into docs/findings/PROTOCOL.md, before any
confirmation seed is run.

    python benchmarks/lr_study.py                     # the full preset: 7 variants x 3 rates x 3 seeds, + extensions
    python benchmarks/lr_study.py --quick             # the quick preset, to check that it runs (minutes)
    python benchmarks/lr_study.py --variants full frozen_embeddings_matched --out /tmp/lr.json

Writes --out (default benchmarks/results/lr_study.json; --quick: lr_study-quick.json) after every finished run, so
the committed file is the study's record: a study killed part-way, or continued on another day from a fresh clone,
skips every run --out already holds at the same preset and precision (and any run finished in --work) and trains
only the rest. The rates are chosen, and the table printed, once every run is in.
"""

import argparse
import datetime
import json
import os
import shutil
import threading
import time

from hf_minattn.experiments.learning_rates import (EXPLORATION_SEEDS, FOLLOWS_FULL, MAX_EXTENSIONS, RULE,
                                                   choose_learning_rates, extension_rates, study_rates)
from hf_minattn.experiments.side_by_side import terminate_as_exit
from hf_minattn.experiments.training import (SETTINGS, VARIANTS, log, run_side_by_side, run_training,
                                             variant_arguments)
from hf_minattn.machine import fast_bf16_available, machine_description, machine_info

HERE = os.path.dirname(os.path.abspath(__file__))


def run_study(preset: str, rates: dict, seeds, work: str, parallel: int = 1, recorded=(), record=None) -> list[dict]:
    """One row {"variant", "learning_rate", "seed", "eval_loss", "train_seconds", "machine"} per run of each
    variant at each of its `rates` ({variant: [rates]}) and each seed. Runs in `recorded` (rows of an earlier study
    at the same preset and precision) are not trained again, and `record(rows)` is called with every row so far
    after each run. The first run trains the tokenizer every other run reads, as in the experiments, and the others
    then run `parallel` at a time with one thread each, as the experiments train (training.train_variants). Jobs go
    variant by variant, so a study killed part-way leaves whole variants behind."""
    settings = SETTINGS[preset]  # bf16 None: run_mlm's default, as the experiments train
    jobs = [(v, rate, seed) for v in VARIANTS if v.trained and v.name in rates for rate in rates[v.name]
            for seed in seeds]
    folder_of = {job: os.path.join(work, job[0].name, f"lr{job[1]:g}", f"seed{job[2]}") for job in jobs}
    rows = {key(r): r for r in recorded}
    finished = [job for job in jobs if os.path.isfile(os.path.join(folder_of[job], "eval_results.json"))]
    tokenizer_dir = folder_of[finished[0]] if finished else None
    lock = threading.Lock()

    def train(job, threads=None):
        variant, rate, seed = job
        folder = folder_of[job]
        if os.path.isdir(folder):  # killed before it finished: the study saves no checkpoints, so it starts again
            shutil.rmtree(folder)
        log(f"[{jobs.index(job) + 1}/{len(jobs)}] {variant.name}, learning rate {rate:g}, seed {seed}")
        args = study_arguments(settings, variant, rate, seed, folder, tokenizer_dir)
        run_training(args, os.path.join(work, "logs", f"{variant.name}-lr{rate:g}-seed{seed}.log"), threads)
        keep(job)

    def keep(job):
        with open(os.path.join(folder_of[job], "eval_results.json")) as f:
            loss = json.load(f)["eval_loss"]
        with open(os.path.join(folder_of[job], "train_results.json")) as f:
            seconds = json.load(f)["train_runtime"]  # the run's own training clock
        row = {"variant": job[0].name, "learning_rate": job[1], "seed": job[2], "eval_loss": loss,
               "train_seconds": round(seconds, 1), "machine": machine_description()}
        with lock:  # runs side by side finish on their own threads
            rows[key(row)] = row
            if record:
                record(list(rows.values()))

    for job in finished:
        if job_key(job) not in rows:
            keep(job)
    todo = [job for job in jobs if job_key(job) not in rows]
    if todo and tokenizer_dir is None:
        first = todo.pop(0)
        train(first)
        tokenizer_dir = folder_of[first]
    run_side_by_side(train, todo, parallel)
    return [rows[job_key(job)] for job in jobs]


def key(row: dict) -> tuple:
    return row["variant"], float(row["learning_rate"]), int(row["seed"])


def job_key(job: tuple) -> tuple:
    variant, rate, seed = job
    return variant.name, rate, seed


def recorded_rows(path: str, preset: str, precision: str) -> list[dict]:
    """The rows an earlier study wrote to `path`, if it ran the same preset at the same precision (else none: a
    run in bf16 and one in fp32 are not the same measurement)."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        study = json.load(f)
    if (study.get("preset"), study.get("precision")) != (preset, precision):
        log(f"{path} holds a study of preset {study.get('preset')!r} in {study.get('precision')}, not {preset!r} in "
            f"{precision}: it is started again")
        return []
    return study["rows"]


def table(chosen: dict) -> str:
    rates = sorted({float(r) for c in chosen.values() for r in c["mean_loss"]})
    lines = ["| variant | " + " | ".join(f"lr {r:g}" for r in rates) + " | chosen |",
             "|---|" + "---:|" * len(rates) + "---:|"]
    for name, c in chosen.items():
        cells = [f"{c['mean_loss'][str(r)]:.4f}" if str(r) in c["mean_loss"] else "-" for r in rates]
        edge = f" ({c['edge']} studied)" if c.get("edge") else ""
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {c['learning_rate']:g}{edge} |")
    return "\n".join(lines)


def study_arguments(settings: dict, variant, rate: float, seed: int, folder: str, tokenizer_dir) -> list[str]:
    """run_mlm's arguments for one run of the study: the preset's, at `rate`, evaluated on the first validation
    sequences (the ones the experiments leave out), without the measurements the experiments' phases read."""
    study = {**settings, "curve_eval_from": 0, "learning_rates": {variant.name: rate}}
    return variant_arguments(study, variant, seed, folder, tokenizer_dir, measurements=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the quick preset (tiny models, 20 steps)")
    studied = [v.name for v in VARIANTS if v.trained and v.name not in FOLLOWS_FULL]
    parser.add_argument("--variants", nargs="+", default=studied, choices=studied)
    parser.add_argument("--work", default=os.path.join("outputs", "lr_study"), help="where the runs are kept")
    parser.add_argument("--parallel", type=int, help="runs side by side, one thread each (default: the preset's)")
    parser.add_argument("--out", help="results JSON (default: benchmarks/results/lr_study[-quick].json)")
    args = parser.parse_args(argv)
    if args.parallel is not None and args.parallel < 1:
        parser.error(f"--parallel must be a whole number >= 1, got {args.parallel}")
    preset = "quick" if args.quick else "full"
    seeds = EXPLORATION_SEEDS[:2] if args.quick else EXPLORATION_SEEDS  # the quick preset has 2 seeds
    bf16 = SETTINGS[preset]["bf16"]
    precision = "bf16" if (fast_bf16_available() if bf16 is None else bf16) else "fp32"  # as run_mlm decides
    start = time.perf_counter()
    parallel = min(args.parallel or SETTINGS[preset].get("parallel", 1), os.cpu_count() or 1)
    base = SETTINGS[preset]["learning_rate"]
    out = args.out or os.path.join(HERE, "results", f"lr_study{'-quick' if args.quick else ''}.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    header = {"preset": preset, "precision": precision, "base_learning_rate": base, "seeds": list(seeds),
              "rule": RULE}

    def write(rows, chosen=None):
        missing = [name for name in studied if name not in (chosen or {})]  # --variants may leave some out
        study = {"date": datetime.date.today().isoformat(), **header, "rows": rows,
                 "complete": chosen is not None and not missing, "missing": missing, "chosen": chosen,
                 "minutes_this_call": round((time.perf_counter() - start) / 60, 1), "machine": machine_info()}
        with open(out + ".tmp", "w") as f:
            json.dump(study, f, indent=1)
        os.replace(out + ".tmp", out)  # a study killed while writing keeps the previous record

    everything = recorded_rows(out, preset, precision)  # --variants may name fewer variants than the record holds

    def record(rows):
        everything[:] = rows
        write(rows)

    rates = {name: study_rates(base) for name in args.variants}
    for _ in range(1 + MAX_EXTENSIONS):  # the grid, then each variant's rates beyond a best at its end
        rows = run_study(preset, rates, seeds, os.path.join(args.work, preset), parallel, everything, record)
        chosen = choose_learning_rates(rows, base, seeds)
        more = extension_rates(chosen, rates)
        for name, rate in more.items():
            log(f"{name}: the best rate, {chosen[name]['learning_rate']:g}, is the {chosen[name]['edge']} run: "
                f"{rate:g} next")
            rates[name].append(rate)
        if not more:
            break
    write(everything, chosen)
    print(table(chosen))
    print(f"written: {out}")
    missing = [name for name in studied if name not in chosen]
    if missing:
        print(f"not complete: no rate chosen yet for {', '.join(missing)} (a call without --variants runs them, and "
              "reads every run already recorded)")
    return 0


if __name__ == "__main__":
    with terminate_as_exit():  # a kill ends the study's training runs too, as a Ctrl-C does
        raise SystemExit(main())
