"""Inference with the rotary tables in the products' dtype (what MinAttn does in eval mode since 2026-11-27) against
the tables in fp32 (what it did before, and still does in training), beside BERT, in rounds that take the models
in every order in turn (`bench_common.round_robin_times`). Under bf16 autocast, fp32 tables promote the bf16 queries
and keys to fp32 and autocast casts them back for the attention's products; in fp32 both paths are the same. Prints
and saves the medians and the paired ratios, with the machine and its load (`hf_minattn.machine.machine_info`).

    python benchmarks/bench_rotary_inference.py [--quick] [--rounds 30] [--out benchmarks/results]
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from bench_common import QUICK_SIZES, SIZES, build, round_robin_times

from hf_minattn.machine import machine_info

BEFORE = "MinAttn, rotary tables fp32 (before)"
NOW = "MinAttn, rotary tables in the products' dtype (now)"


def forward_seconds(model, inputs, bf16: bool, fp32_tables: bool) -> float:
    """One forward, dense logits, no labels. The attention modules alone are put in training mode for the fp32
    tables: with dropout 0 that is their only effect."""
    model.eval()
    for layer in model.minattn.layers if fp32_tables else ():
        layer.attention.train()
    start = time.perf_counter()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        model(input_ids=inputs, attention_mask=torch.ones_like(inputs))
    return time.perf_counter() - start


def measure(sizes: dict, bf16: bool, rounds: int) -> dict:
    minattn, bert = build("minattn", sizes), build("bert", sizes).eval()
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randint(5, sizes["vocab"], (sizes["batch"], sizes["seq"]), generator=generator)  # (B, T)
    runs = {NOW: lambda: forward_seconds(minattn, inputs, bf16, False),
            BEFORE: lambda: forward_seconds(minattn, inputs, bf16, True),
            "BERT": lambda: forward_seconds(bert, inputs, bf16, False)}
    times = round_robin_times(runs, rounds)

    def paired(name, reference):  # > 1: `name` is faster
        return statistics.median(ref / t for t, ref in zip(times[name], times[reference]))

    return {"median_ms": {name: 1000 * statistics.median(t) for name, t in times.items()},
            "now_over_before_speed": paired(NOW, BEFORE), "now_vs_bert": paired(NOW, "BERT"),
            "before_vs_bert": paired(BEFORE, "BERT")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run in seconds")
    parser.add_argument("--rounds", type=int, default=30,
                        help="timed rounds per precision (default 30: five of each order of the three)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    torch.manual_seed(0)
    sizes = QUICK_SIZES if args.quick else SIZES
    report = {"sizes": sizes, "rounds": args.rounds, "torch": torch.__version__, "precisions": {}}
    for precision in ("fp32", "bf16"):
        result = report["precisions"][precision] = measure(sizes, precision == "bf16", args.rounds)
        medians = ", ".join(f"{name} {ms:.1f} ms" for name, ms in result["median_ms"].items())
        print(f"[{precision}] {medians}; now / before {result['now_over_before_speed']:.3f}x speed, "
              f"vs BERT: now {result['now_vs_bert']:.3f}x, before {result['before_vs_bert']:.3f}x", flush=True)
    report["machine"] = machine_info()  # the CPU, its bf16 support and the load average over the run's last minute
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"rotary-inference{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")
    return report


if __name__ == "__main__":
    main()
