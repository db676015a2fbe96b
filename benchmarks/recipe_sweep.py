"""Pilot sweep for the training recipe: train MinAttn with `training/run_mlm.py` (the real Trainer path) under
several settings, each for the same number of tokens, and record the validation loss against the unigram floor.

    python benchmarks/recipe_sweep.py --tokens 1000000 --out benchmarks/results/recipe.jsonl \\
        baseline="" dropout0="--config_overrides hidden_dropout_prob=0,attention_probs_dropout_prob=0"

Each NAME=ARGS pair is one run: ARGS are added to the common arguments below (later flags win). One JSON line per
run goes to --out: the arguments, eval loss, unigram floor, gain over it, tokens seen and tokens/s. Run it on an
otherwise idle machine: tokens/s is only comparable between runs made alone.

Seeds: name runs SETTING_seedN and pass `--seed N` in their ARGS; `--paired REFERENCE --out FILE` then prints, for
every setting, its mean gain over the seeds and its paired difference from the REFERENCE setting (the same seeds),
each with a 95% t-interval.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

COMMON = ("--model_size small --vocab_size 8192 --max_seq_length 128 --per_device_train_batch_size 16 "
          "--per_device_eval_batch_size 64 --learning_rate 1e-3 --warmup_steps 50 --weight_decay 0.01 --seed 42 "
          "--report_to none --save_strategy no --disable_tqdm true --logging_steps 50 --bf16 false")


def flag_value(args: list[str], name: str, default: str) -> str:
    """The last value given for `--name` in `args` (argparse semantics: the last one wins)."""
    value = default
    for i, arg in enumerate(args[:-1]):
        if arg == name:
            value = args[i + 1]
    return value


def markdown_table(path: str) -> str:
    """The recorded runs as a table: lever (run name), its arguments, tokens, loss, floor, gain, tokens/s."""
    rows = ["| run | settings (on top of the common ones) | tokens | eval loss | unigram floor | gain (nats) | accuracy | tokens/s |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            rows.append(f"| {r['name']} | `{r['args'] or '(none)'}` | {r['tokens'] / 1e6:.2f}M | {r['eval_loss']:.3f} | "
                        f"{r['eval_unigram_loss']:.3f} | {r['eval_gain_over_unigram']:+.3f} | {r['eval_accuracy']:.3f} | "
                        f"{r['train_tokens_per_second']:,} |")
    return "\n".join(rows)


def seeded_runs(path: str) -> tuple[dict, dict, dict]:
    """The runs named SETTING_seedN in `path`: {setting: {seed: gain}}, {setting: {seed: eval loss}} and
    {setting: [tokens/s, ...]}."""
    gains, losses, speed = {}, {}, {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            match = re.fullmatch(r"(.+)_seed(\d+)", r["name"])
            if match:
                setting, seed = match.group(1), int(match.group(2))
                gains.setdefault(setting, {})[seed] = r["eval_gain_over_unigram"]
                losses.setdefault(setting, {})[seed] = r.get("eval_loss")
                speed.setdefault(setting, []).append(r["train_tokens_per_second"])
    return gains, losses, speed


def relative_losses(losses: dict, setting: str, reference: str) -> dict[int, float]:
    """{seed: 100 x (eval loss of `setting` / the reference's at that seed - 1)} over the seeds both have."""
    return {s: 100 * (loss / losses[reference][s] - 1) for s, loss in sorted(losses[setting].items())
            if loss is not None and losses[reference].get(s) is not None}


def paired_table(path: str, reference: str) -> str:
    """Settings run with several seeds (runs named SETTING_seedN): mean gain over the unigram floor [95% t-interval],
    the paired difference from `reference` over the seeds both have [95% t-interval], and the eval loss relative to
    the reference's at the same seed, in percent [95% t-interval] (e.g. bf16 against fp32 at equal steps)."""
    from hf_minattn.stats import mean_interval, paired_difference

    gains, losses, speed = seeded_runs(path)
    if reference not in gains:
        raise ValueError(f"--paired {reference!r}: no runs named {reference}_seedN in {path}; settings: {sorted(gains)}")
    ci = lambda i: f"{i.estimate:+.3f} [{i.low:+.3f}, {i.high:+.3f}]"  # noqa: E731
    rows = [f"| setting | seeds | gain (nats, mean [95% CI]) | minus {reference} (paired) | eval loss vs {reference} "
            "(%, paired) | tokens/s |", "|---|---|---:|---:|---:|---:|"]
    for setting, by_seed in gains.items():
        seeds = sorted(by_seed)
        shared = [s for s in seeds if s in gains[reference]]
        diff = ("-" if setting == reference else "no shared seed" if not shared else
                ci(paired_difference([by_seed[s] for s in shared], [gains[reference][s] for s in shared])))
        ratios = list(relative_losses(losses, setting, reference).values())
        relative = "-" if setting == reference or not ratios else ci(mean_interval(ratios))
        rows.append(f"| {setting} | {', '.join(map(str, seeds))} | {ci(mean_interval([by_seed[s] for s in seeds]))} | "
                    f"{diff} | {relative} | {round(sum(speed[setting]) / len(speed[setting])):,} |")
    return "\n".join(rows)


def equal_step_verdict(path: str, reference: str, candidate: str, control: str | None = None,
                       tolerance: float = 1.0) -> str:
    """The equal-step test as sentences chosen by the numbers. The candidate (e.g. bf16) passes when the 95%
    t-interval of its eval loss relative to the reference's (same seed, same steps) lies within +-`tolerance` %.

    `control` names the reference trained again with a perturbation far below the candidate's rounding (e.g. every
    initial weight moved by 1e-6 of itself): how far the same training lands from itself. It sets the scale at which a
    difference can be blamed on the candidate at all: its largest single-seed difference is reported beside the
    candidate's, and a seed where the candidate differs by more than every control seed is named."""
    from hf_minattn.stats import mean_interval

    _, losses, _ = seeded_runs(path)
    for name in (reference, candidate, control):
        if name is not None and name not in losses:
            raise ValueError(f"no runs named {name}_seedN in {path}; settings: {sorted(losses)}")
    relative = relative_losses(losses, candidate, reference)
    if not relative:
        raise ValueError(f"{candidate} and {reference} share no seed in {path}")
    interval = mean_interval(list(relative.values()))
    where = (f"{candidate}'s eval loss is {interval.estimate:+.1f}% [{interval.low:+.1f}%, {interval.high:+.1f}%] of "
             f"{reference}'s at equal steps ({len(relative)} paired seeds; per seed "
             + ", ".join(f"{s}: {r:+.1f}%" for s, r in relative.items()) + ")")
    if -tolerance <= interval.low and interval.high <= tolerance:
        sentences = [f"Passes: {where}, within +-{tolerance:g}%."]
    elif interval.low > 0:
        sentences = [f"Fails: {where}; {candidate} is worse."]
    elif interval.high < 0:
        sentences = [f"Fails: {where}; {candidate} is better, so the test does not hold either way."]
    else:
        sentences = [f"Fails: {where}; the interval is wider than +-{tolerance:g}% (no difference is shown either)."]
    if control is not None:
        noise = relative_losses(losses, control, reference)
        if noise:
            spread = max(abs(r) for r in noise.values())
            noise_interval = mean_interval(list(noise.values()))
            sentences.append(
                f"The control ({control}, {len(noise)} seeds) lands {noise_interval.estimate:+.1f}% "
                f"[{noise_interval.low:+.1f}%, {noise_interval.high:+.1f}%] from {reference}, up to {spread:.1f}% on one "
                f"seed; {candidate} differs by up to {max(abs(r) for r in relative.values()):.1f}%.")
            outliers = [s for s, r in relative.items() if abs(r) > spread]
            if outliers:
                sentences.append(f"Beyond every control seed: {candidate} at seed(s) "
                                 + ", ".join(f"{s} ({relative[s]:+.1f}%)" for s in outliers) + ".")
            else:
                sentences.append(f"No seed of {candidate} differs by more than the control's largest difference.")
    return " ".join(sentences)


def run(name: str, extra: str, tokens: int, evals: int) -> dict:
    """Train one run (`run_mlm.py` with COMMON and `extra`, for about `tokens` training tokens, evaluated `evals`
    times) in a subprocess, print its line, and return its record."""
    argv = shlex.split(COMMON) + shlex.split(extra)
    tokens_per_step = int(flag_value(argv, "--per_device_train_batch_size", "8")) * int(flag_value(argv, "--max_seq_length", "128"))
    steps = max(1, tokens // tokens_per_step)
    with tempfile.TemporaryDirectory() as folder:
        argv = ["--output_dir", folder, *argv, "--max_steps", str(steps),
                "--eval_strategy", "steps", "--eval_steps", str(max(1, steps // evals))]
        print(f"== {name}: {steps} steps of {tokens_per_step} tokens: {shlex.join(argv[2:])}", flush=True)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "hf_minattn.run_mlm", *argv], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        with open(os.path.join(folder, "trainer_state.json")) as f:
            state = json.load(f)
        history, steps = state["log_history"], state["global_step"]  # fewer than planned under --max_train_minutes
        with open(os.path.join(folder, "all_results.json")) as f:
            final = json.load(f)
    curve = [(h["step"] * tokens_per_step, round(h["eval_loss"], 4), round(h["eval_gain_over_unigram"], 4))
             for h in history if "eval_loss" in h]
    record = {"name": name, "args": extra, "steps": steps, "tokens": steps * tokens_per_step,
              "eval_loss": round(final["eval_loss"], 4), "eval_unigram_loss": round(final["eval_unigram_loss"], 4),
              "eval_gain_over_unigram": round(final["eval_gain_over_unigram"], 4),
              "eval_accuracy": round(final["eval_accuracy"], 4),
              "train_tokens_per_second": round(final.get("train_tokens_per_second", 0)),
              "wall_seconds": round(seconds), "curve": curve}
    print(f"   loss {record['eval_loss']:.3f}, floor {record['eval_unigram_loss']:.3f}, gain "
          f"{record['eval_gain_over_unigram']:+.3f} nats, {record['train_tokens_per_second']} tok/s, "
          f"{seconds:.0f} s; curve {curve}", flush=True)
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="NAME=ARGS: a run's name and its extra run_mlm.py arguments")
    parser.add_argument("--tokens", type=int, default=1_000_000, help="training tokens per run")
    parser.add_argument("--evals", type=int, default=5, help="evaluations per run (the loss curve)")
    parser.add_argument("--out", default="benchmarks/results/recipe.jsonl")
    parser.add_argument("--markdown", action="store_true", help="print the runs recorded in --out as a markdown table")
    parser.add_argument("--paired", metavar="REFERENCE", help="print the seeded settings in --out against REFERENCE")
    parser.add_argument("--verdict", metavar="CANDIDATE",
                        help="with --paired: the equal-step test of CANDIDATE against REFERENCE (eval loss within "
                             "--tolerance %%, 95%% t-interval over the paired seeds)")
    parser.add_argument("--control", help="with --verdict: the reference trained again with a tiny perturbation")
    parser.add_argument("--tolerance", type=float, default=1.0, help="with --verdict: percent (default 1)")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown_table(args.out))
        return
    if args.verdict and not args.paired:
        parser.error("--verdict needs --paired REFERENCE")
    if not args.tolerance > 0:
        parser.error(f"--tolerance must be a positive percentage, got {args.tolerance}")
    if args.paired:
        print(paired_table(args.out, args.paired))
        if args.verdict:
            print("\n" + equal_step_verdict(args.out, args.paired, args.verdict, args.control, args.tolerance))
        return
    if not args.runs:
        parser.error("name at least one run (NAME=ARGS), or pass --markdown")
    for spec in args.runs:
        name, _, extra = spec.partition("=")
        if not name:
            raise ValueError(f"a run must be NAME=ARGS, got {spec!r}")
        record = run(name, extra, args.tokens, args.evals)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
