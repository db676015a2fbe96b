"""MinAttnForMaskedLM against transformers' BertForMaskedLM and ModernBertForMaskedLM at matched dimensions, side by
side in one process.

    python benchmarks/bench_train.py                      # full run: fp32 (+ bf16 where the CPU does bf16 natively)
    python benchmarks/bench_train.py --quick              # smoke run with tiny sizes (under a minute)
    python benchmarks/bench_train.py --levers             # also time each speed lever on/off (see NOTES.md)
    python benchmarks/bench_train.py --batch 128          # on a GPU (picked by itself where there is one): bigger batches
    bash benchmarks/gpu.sh                                # the GPU's set: batch 32 with the GPU levers, batch 128

What is measured (for each precision):
- training tokens/s: the models train on the same packed Wikipedia batches in the same order, taking turns step by
  step, so that drift in the machine's load hits all alike; median over the steps after the warm-up. The timed steps
  take every order of the models in turn, in a cycle of their own after the warm-up (`bench_common.training_orders`),
  so that each runs in each position equally often (by default 6 warm-up steps, then 54 timed ones: nine of each
  order of three models; `check_args` says when the flags break that balance). The speed-up is the median of the
  per-step ratios (see `summarize_training`). These same steps give the quality comparison: eval loss on the
  validation split afterwards.
- inference tokens/s: forward only, no labels, eval mode, taking turns (every order of the models in turn, so that
  each runs in each position equally often: `bench_common.balanced_orders`); the median of `--infer-repeats` rounds
  (default 24: four of each order of three models), with the interquartile range of the rounds. The speed-up is the
  median of the per-round ratios, as for training; `infer_speedup_of_medians` keeps the ratio of the two tok/s figures.
- peak training memory: a fresh subprocess per model runs a few training steps; we report the growth of the peak
  resident set size (VmHWM in /proc/self/status) over the RSS just before the first step, i.e. activations,
  gradients, optimizer state and allocator slack, but not the Python/torch runtime or the weights. On a GPU: the
  growth of torch's peak allocated GPU memory over what was allocated before the first step.
- MFU: the matmul FLOPs each model actually performs per step (the formula is in `bench_common.train_flops`) divided
  by the step time, against the matmul peak timed in this run: one 1024^3 product (8192^3 on a GPU) after every round
  of training steps (one step of each model), so that it sees the same machine load as the steps; the median over
  steps of each step's MFU against the sample of its round.

On a GPU every model runs its default attention kernel (sdpa: flash or memory-efficient attention), every timing
waits for the GPU to finish (`loss.item()` in a training step, `synchronize` elsewhere), and `--levers` times the
launch-bound levers instead of the CPU's (`bench_levers.measure_gpu_levers`: the encoder in CUDA graphs or compiled,
and no mask, each against MinAttn as shipped).

Results go to `<out>/bench-<date>.json` and `<out>/latest.json` (`--quick`: `<out>/latest-quick.json` only; on a GPU
`bench-cuda-<date>.json` and `latest-cuda.json`; `--only-levers`: `levers-<date>.json` and `levers-latest.json`, or
`levers-cuda-...` on a GPU), and a markdown table is printed.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from transformers import DataCollatorForLanguageModeling

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, also when loaded from a file path
from bench_common import (MASK, MODELS, QUICK_SIZES, SIZES, StepLoop, bf16_is_native, build,  # noqa: E402
                          eval_loss, infer_flops, inference_times, load_blocks, make_batches, mask_blocks, matmul_peak,
                          median_interval, timed_matmul, train_flops, training_orders)
from bench_common import glu_size, matmul_params  # noqa: E402,F401  (reached through this script by the tests)
from bench_levers import add_levers, lever_table  # noqa: E402
from bench_levers import rotary_in_compute_dtype, without_linear_biases  # noqa: E402,F401  (as above)

from hf_minattn import train_tokenizer  # noqa: E402
from hf_minattn.machine import machine_info  # noqa: E402

# ----------------------------------------------------------------------------------------------------------------
# Peak memory, in a fresh process per model so that one model's peak cannot hide the other's


def memory_worker(name: str, precision: str, sizes: dict, device: str, steps: int = 3):
    bf16, device = precision == "bf16", torch.device(device)
    model = build(name, sizes).to(device)
    generator = torch.Generator().manual_seed(0)
    blocks = torch.randint(MASK + 1, sizes["vocab"], (sizes["batch"], sizes["seq"]), generator=generator)
    tokenizer = train_tokenizer(["a few words to mask"] * 5, vocab_size=50, show_progress=False)  # [MASK] and friends
    inputs, labels = (t.to(device) for t in mask_blocks(DataCollatorForLanguageModeling(tokenizer), blocks, generator))
    trainer = StepLoop(model, steps=10, lr=1e-4, bf16=bf16)
    if device.type == "cuda":
        before = torch.cuda.memory_allocated(device) / 2**20
        torch.cuda.reset_peak_memory_stats(device)
    else:
        before = proc_status_mb("VmRSS")
    for _ in range(steps):
        trainer.step(inputs, labels)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        print(json.dumps({"peak_gpu_mb": peak, "gpu_before_mb": before, "train_peak_mb": peak - before}))
    else:
        peak = proc_status_mb("VmHWM")
        print(json.dumps({"peak_rss_mb": peak, "rss_before_mb": before, "train_peak_mb": peak - before}))


def proc_status_mb(field: str) -> float:
    """VmRSS (resident now) or VmHWM (peak resident) of this process in MiB. Not getrusage's ru_maxrss: Linux
    carries that over exec from the forking parent, so a worker started by a big benchmark would report the
    parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory(name: str, precision: str, sizes: dict, device: torch.device) -> dict:
    command = [sys.executable, __file__, "--_memory-worker", name, precision, json.dumps(sizes), device.type]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])



# ----------------------------------------------------------------------------------------------------------------
# Main


def run_precision(precision, sizes, train_batches, val_batches, args) -> dict:
    bf16, device = precision == "bf16", args.device
    tokens = sizes["batch"] * sizes["seq"]
    trainers = {name: StepLoop(build(name, sizes).to(device), args.steps, args.lr, bf16) for name in args.models}
    names = list(trainers)
    # The machine is shared: sample the matmul peak between the steps, under the same load as the steps.
    dtype = torch.bfloat16 if bf16 else torch.float32
    a, b = (torch.randn(args.peak_size, args.peak_size, dtype=dtype, device=device) for _ in range(2))
    peak_samples = []
    start = time.perf_counter()
    orders = training_orders(names, len(train_batches), args.warmup)  # the timed steps in a cycle of their own
    for i, ((inputs, labels), order) in enumerate(zip(train_batches, orders)):
        for name in order:
            trainers[name].step(inputs, labels)
        peak_samples.append(timed_matmul(a, b))
        if (i + 1) % max(1, args.steps // 10) == 0:
            print(f"  [{precision}] step {i + 1}/{args.steps}: " + ", ".join(
                f"{n} loss {t.losses[-1]:.3f} {t.times[-1]:.2f}s" for n, t in trainers.items()), flush=True)
    train_seconds = time.perf_counter() - start  # includes the peak samples (a few percent)
    n_labelled = statistics.mean(int((labels != -100).sum()) for _, labels in train_batches)
    peak = statistics.median(peak_samples[args.warmup:] or peak_samples)
    infer = inference_times({n: t.model for n, t in trainers.items()}, train_batches[0][0], bf16, args.infer_repeats)
    result = {"train_wall_s": train_seconds, "matmul_peak_gflops_during_training": peak,
              "matmul_peak_samples": peak_samples, "n_labelled_mean": n_labelled, "models": {}}
    for name, trainer in trainers.items():
        infer_s = statistics.median(infer[name])
        quartiles = statistics.quantiles(infer[name], n=4, method="inclusive")
        result["models"][name] = {
            "train_step_s_all": trainer.times,
            "infer_s_all": infer[name],
            "infer_tokens_per_s": tokens / infer_s,
            "infer_tokens_per_s_iqr": [tokens / quartiles[2], tokens / quartiles[0]],  # slow quartile, fast quartile
            "infer_mfu": infer_flops(sizes, name) / infer_s / (peak * 1e9),
            "train_loss_last10": statistics.mean(trainer.losses[-10:]),
            "eval_loss": eval_loss(trainer.model, val_batches, bf16),
            "memory": peak_memory(name, precision, sizes, device),
        }
    summarize_training(result, sizes, args.warmup)
    return result


def summarize_training(result: dict, sizes: dict, warmup: int):
    """Speed numbers from the raw step and inference times and the matmul peak sampled after each round of steps.

    Other people's jobs come and go on this machine and change step times several-fold, so the speed-up is the
    median over steps of BERT's step time / MinAttn's step time *at the same step* (the two ran back to back,
    under the same load), the inference speed-up likewise the median over rounds of the per-round ratio, and MFU is
    taken step by step against the peak sampled right after that step.
    `train_speedup_quiet` keeps only the steps where the sampled peak was >= 75% of the best sample (the machine
    was nearly idle).
    """
    tokens = sizes["batch"] * sizes["seq"]
    peaks = result["matmul_peak_samples"][warmup:]
    quiet = [p >= 0.75 * max(peaks) for p in peaks]
    for name, model in result["models"].items():
        times = model["train_step_s_all"][warmup:]
        flops = train_flops(name, sizes, result["n_labelled_mean"])
        model["train_step_s"] = statistics.median(times)
        model["train_tokens_per_s"] = tokens / model["train_step_s"]
        model["train_flops_per_step"] = flops
        model["mfu"] = statistics.median(flops / t / (p * 1e9) for t, p in zip(times, peaks))
    mine = result["models"]["minattn"]
    result["ratios"] = {"quiet_steps": sum(quiet)}  # MinAttn against each peer: "train_speedup" is against BERT
    for peer in result["models"]:
        if peer == "minattn":
            continue
        other = result["models"][peer]
        paired = [o / m for m, o in zip(mine["train_step_s_all"][warmup:], other["train_step_s_all"][warmup:])]
        paired_infer = [o / m for m, o in zip(mine["infer_s_all"], other["infer_s_all"])]
        suffix = "" if peer == "bert" else f"_vs_{peer}"
        result["ratios"].update({
            f"train_speedup{suffix}": statistics.median(paired),
            f"train_speedup_interval{suffix}": median_interval(paired),
            f"train_speedup_of_medians{suffix}": mine["train_tokens_per_s"] / other["train_tokens_per_s"],
            f"train_speedup_quiet{suffix}": statistics.median([r for r, q in zip(paired, quiet) if q]),
            f"infer_speedup{suffix}": statistics.median(paired_infer),
            f"infer_speedup_interval{suffix}": median_interval(paired_infer),
            f"infer_speedup_of_medians{suffix}": mine["infer_tokens_per_s"] / other["infer_tokens_per_s"],
            f"eval_loss_ratio{suffix}": mine["eval_loss"] / other["eval_loss"],
            f"train_memory_ratio{suffix}": mine["memory"]["train_peak_mb"] / other["memory"]["train_peak_mb"],
        })
    return result


def ratio_cell(ratios: dict, key: str) -> str:
    """"1.02x [0.99, 1.04]": the median paired ratio and its distribution-free 95% interval (`median_interval`), where
    the report has one (reports before it: the median alone)."""
    interval = ratios.get(key.replace("speedup", "speedup_interval"))
    return f"{ratios[key]:.2f}x" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def markdown_table(report) -> str:
    """Each "MinAttn vs it" is a median of paired ratios, the peer's time over MinAttn's: per training step, or per
    inference round, with the 95% interval of that median (`median_interval`); "quiet" keeps the steps taken on a
    nearly idle machine. So it is not the ratio of the tok/s columns (medians of each model alone), though close to
    it. Inference tok/s comes with its interquartile range over the rounds."""
    lines = ["| precision | model | train tok/s | MinAttn vs it | MinAttn vs it, quiet steps | infer tok/s (IQR) | "
             "MinAttn vs it | train MFU | peak train mem (MB) | eval loss |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for precision, result in report["results"].items():
        if "skipped" in result:
            lines.append(f"| {precision} | (skipped: {result['skipped']}) | | | | | | | | |")
            continue
        r = result["ratios"]
        for name, m in result["models"].items():
            suffix = "" if name == "bert" else f"_vs_{name}"
            if name == "minattn":
                vs_train = vs_quiet = vs_infer = ""
            else:
                vs_train = ratio_cell(r, "train_speedup" + suffix)
                vs_quiet = f"{r['train_speedup_quiet' + suffix]:.2f}x ({r['quiet_steps']} steps)"
                vs_infer = ratio_cell(r, "infer_speedup" + suffix)
            low, high = m["infer_tokens_per_s_iqr"]
            lines.append(f"| {precision} | {MODELS[name]} | {m['train_tokens_per_s']:.0f} | {vs_train} | {vs_quiet} | "
                         f"{m['infer_tokens_per_s']:.0f} ({low:.0f}-{high:.0f}) | {vs_infer} | {100 * m['mfu']:.0f}% | "
                         f"{m['memory']['train_peak_mb']:.0f} | {m['eval_loss']:.3f} |")
    return "\n".join(lines)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few steps: a smoke run in seconds")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where the models train (default: a CUDA GPU where there is one, else the CPU)")
    parser.add_argument("--batch", type=int, default=None,
                        help=f"sequences per batch (default {SIZES['batch']}, quick {QUICK_SIZES['batch']})")
    parser.add_argument("--steps", type=int, default=None, help="training steps per model (default 60, quick 6)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="first steps left out of the timing (default 6, quick 1)")
    parser.add_argument("--precision", default="fp32,bf16",
                        help="comma-separated, of fp32,bf16; bf16 runs only where the CPU multiplies bf16 natively")
    parser.add_argument("--force-bf16", action="store_true", help="run bf16 even where it is emulated (slow)")
    parser.add_argument("--models", default="minattn,bert,modernbert",
                        help=f"comma-separated, minattn first, of {','.join(MODELS)}")
    parser.add_argument("--levers", action="store_true", help="also time each speed lever on/off (in each --precision)")
    parser.add_argument("--only-levers", action="store_true",
                        help="time the levers alone (no model comparison); writes levers-<date>.json, levers-latest.json")
    parser.add_argument("--lever-steps", type=int, default=12, help="steps per lever comparison")
    parser.add_argument("--profile", action="store_true",
                        help="with --levers: also profile MinAttn's training step in each precision (top operators)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-blocks", type=int, default=128, help="validation blocks for the eval loss")
    parser.add_argument("--infer-repeats", type=int, default=24,
                        help="inference rounds, after one warm-up round (default 24, quick 3): median and quartiles")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--_memory-worker", nargs=4, help=argparse.SUPPRESS)
    return parser


def check_args(parser: argparse.ArgumentParser, args) -> tuple[dict, list[str]]:
    """(sizes, precisions) from the parsed flags, which are checked by name and given their --quick defaults in
    place (the report records them)."""
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    elif args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA GPU here")
    args.device = torch.device(args.device)
    if args.device.type == "cuda" and args.profile:
        parser.error("--profile profiles the CPU's step: add --device cpu")
    if args.batch is not None and args.batch < 1:
        parser.error(f"--batch must be at least 1, got {args.batch}")
    sizes = dict(QUICK_SIZES if args.quick else SIZES)
    sizes["batch"] = args.batch or sizes["batch"]
    args.steps = args.steps or (6 if args.quick else 60)
    # 6 warm-up steps, one in each order of three models; the 54 timed steps after them are nine of each order.
    args.warmup = min(args.warmup if args.warmup is not None else (1 if args.quick else 6), args.steps - 1)
    if args.quick:
        args.eval_blocks, args.infer_repeats, args.lever_steps = min(args.eval_blocks, 16), 3, 4
    if args.infer_repeats < 2:
        parser.error(f"--infer-repeats must be at least 2 (the quartiles need two rounds), got {args.infer_repeats}")
    precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
    if not set(precisions) <= {"fp32", "bf16"}:
        parser.error(f"--precision takes fp32 and/or bf16, got {args.precision!r}")
    args.levers = args.levers or args.only_levers
    if args.profile and not args.levers:
        parser.error("--profile profiles the lever batches: add --levers or --only-levers")
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.models[:1] != ["minattn"] or not set(args.models) <= set(MODELS) or len(args.models) < 2:
        parser.error(f"--models takes minattn first, then one or more of bert,modernbert; got {args.models}")
    n_orders = math.factorial(len(args.models))
    for what, count in (("timed training steps", args.steps - args.warmup), ("inference rounds", args.infer_repeats)):
        if count % n_orders:
            print(f"note: {count} {what} are not a multiple of the {n_orders} orders of the models, so the models "
                  "do not run in each position equally often", flush=True)
    return sizes, precisions


def measure_peaks(args) -> tuple[dict, bool]:
    """({precision: matmul peak in GFLOP/s}, whether bf16 is native here); sets `args.peak_size`, the product's n."""
    n = args.peak_size = 256 if args.quick else 8192 if args.device.type == "cuda" else 1024
    peaks = {"fp32": matmul_peak(torch.float32, n, device=args.device)}
    # A bf16 product on a CPU without bf16 hardware is ~50x slower: probe smaller first (512^3, not 256^3: a 256^3
    # product takes ~0.1 ms on native bf16, too short to time reliably, and once measured 112 against 156 fp32). On a
    # GPU a 512^3 product is all launch overhead (10 TFLOP/s bf16 on an H100, against 50 fp32 at 8192^3): time it at
    # full size where torch says the GPU has bf16.
    on_gpu_with_bf16 = args.device.type == "cuda" and torch.cuda.is_bf16_supported()
    peaks["bf16"] = matmul_peak(torch.bfloat16, n if on_gpu_with_bf16 else min(n, 512), device=args.device)
    bf16_native = on_gpu_with_bf16 or bf16_is_native(peaks["fp32"], peaks["bf16"])
    if bf16_native and not on_gpu_with_bf16:
        peaks["bf16"] = matmul_peak(torch.bfloat16, n, device=args.device)
    print(f"matmul peak ({n}^3): fp32 {peaks['fp32']:.0f} GFLOP/s, bf16 {peaks['bf16']:.1f} GFLOP/s", flush=True)
    return peaks, bf16_native


def prepare_data(sizes: dict, args):
    """(train blocks, tokenizer, train batches, validation batches), the batches on `args.device`; widens
    `sizes["vocab"]` to the tokenizer's."""
    train_blocks, val_blocks, tokenizer = load_blocks(sizes, args.quick)
    sizes["vocab"] = max(sizes["vocab"], len(tokenizer))
    train_batches = make_batches(train_blocks, args.steps, sizes["batch"], tokenizer, seed=1)
    val_blocks = val_blocks[: args.eval_blocks]
    masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    val_batches = [mask_blocks(masker, chunk, torch.Generator().manual_seed(2 + i))
                   for i, chunk in enumerate(val_blocks.split(sizes["batch"]))]
    train_batches, val_batches = ([tuple(t.to(args.device) for t in batch) for batch in batches]
                                  for batches in (train_batches, val_batches))
    print(f"data: {len(train_blocks)} train / {len(val_blocks)} validation blocks of {sizes['seq']} tokens", flush=True)
    return train_blocks, tokenizer, train_batches, val_batches


def compare_models(report: dict, precisions: list[str], bf16_native: bool, train_batches, val_batches, args) -> dict:
    """`report["results"]`: each precision's side-by-side training, or why it was skipped."""
    peaks, sizes = report["matmul_peak_gflops"], report["sizes"]
    for precision in precisions:
        if precision == "bf16" and not (bf16_native or args.force_bf16):
            report["results"]["bf16"] = {"skipped": f"bf16 is emulated here ({report['machine']['cpu_capability']}): "
                                                    f"{peaks['bf16']:.1f} vs {peaks['fp32']:.0f} GFLOP/s fp32"}
            print(f"bf16 skipped: {report['results']['bf16']['skipped']}", flush=True)
            continue
        if args.only_levers:
            report["results"][precision] = {"levers only": True}
            continue
        print(f"training the models, {precision}, {args.steps} steps each", flush=True)
        report["results"][precision] = run_precision(precision, sizes, train_batches, val_batches, args)
    return report


def write_report(report: dict, args) -> Path:
    """Write the record under its name (see the module's docstring) and print its table."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = json.dumps(report, indent=1)
    # A full run is kept under its date; a --quick run only replaces latest-quick.json (its numbers mean nothing).
    # A GPU run has its own names, so that it never replaces the CPU figures NOTES.md quotes.
    gpu = args.device.type == "cuda"
    prefix = ("levers-cuda" if gpu else "levers") if args.only_levers else "bench-cuda" if gpu else "bench"
    latest = (("levers-cuda-latest" if gpu else "levers-latest") if args.only_levers
              else "latest-cuda" if gpu else "latest")
    name = f"{prefix}-latest-quick.json" if args.quick and args.only_levers else f"{latest}-quick.json" \
        if args.quick else f"{prefix}-{stamp}.json"
    (out / name).write_text(text)
    if not args.quick:
        (out / f"{latest}.json").write_text(text)
    table = lever_table(report["levers"]) if args.only_levers else markdown_table(report)
    print(table)
    print(f"wrote {out / name}")
    return out / name


def main(argv=None):
    parser = make_parser()
    args = parser.parse_args(argv)
    if args._memory_worker:
        name, precision, sizes, device = args._memory_worker
        return memory_worker(name, precision, json.loads(sizes), device)
    sizes, precisions = check_args(parser, args)

    machine = machine_info()
    print(f"machine: {machine['cpu']}, {machine['cores']} cores ({machine['cpu_capability']}), "
          f"torch {machine['torch']}, transformers {machine['transformers']}, load {machine['load_average']}")
    print(f"device: {args.device.type}" + (f" ({machine['gpu']})" if args.device.type == "cuda" else ""))
    peaks, bf16_native = measure_peaks(args)
    train_blocks, tokenizer, train_batches, val_batches = prepare_data(sizes, args)

    report = {"machine": machine, "device": args.device.type, "sizes": sizes, "matmul_peak_gflops": peaks,
              "matmul_peak_size": args.peak_size, "results": {},
              "args": {k: str(v) if k == "device" else v for k, v in vars(args).items() if not k.startswith("_")}}
    compare_models(report, precisions, bf16_native, train_batches, val_batches, args)
    if args.levers:
        add_levers(report, sizes, train_blocks, tokenizer, precisions, args)
    report["machine"]["load_average_end"] = os.getloadavg()
    write_report(report, args)
    return report


if __name__ == "__main__":
    main()
