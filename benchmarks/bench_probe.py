"""How fast `hf-minattn probe` pools an encoder's word vectors over the default corpus, against what the hardware allows.

    python benchmarks/bench_probe.py            # all-MiniLM-L6-v2 over the default corpus's training split
    python benchmarks/bench_probe.py --quick    # the first 2,000 sentences (about a minute)

The probe of an encoder over the corpus is dominated by two encoder passes over every sentence (the model and the
same architecture at initialisation, `pool_corpus`), then word2vec. Measured here, in one process:
- tokenization (`tokenize_words`, once for both passes);
- the fp32 pass: tokens/s, the matrix-multiply FLOPs it performs (`pass_flops`), GFLOP/s against the fp32 matmul
  peak timed in the same run (`bench_common.matmul_peak`), and so the least time ANY fp32 implementation would need
  for the two passes at that peak;
- the same pass under bf16 autocast (`pool_corpus(..., bf16=True)`): time, and the largest difference of the pooled
  vectors from fp32 (the probes promise fp32 numbers: pooled vectors within 1e-4);
- word2vec (the probes' settings, seed 0): trained, then read back from its cache (`cached_word2vec`).

Writes `benchmarks/results/probe-latest.json` (`--quick`: `probe-latest-quick.json`) and prints a table.
"""

import argparse
import datetime
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bench_common import matmul_peak
from hf_minattn.machine import machine_info
from hf_minattn.probes.benchmarks import WORD2VEC_SETTINGS, cached_word2vec
from hf_minattn.probes.corpus import wikipedia_train_sentences
from hf_minattn.probes.encode import pool_corpus, tokenize_words
from hf_minattn.probes.loading import load_reference, max_length_for

TARGET_SECONDS = 120  # the target for the whole probe of all-MiniLM-L6-v2 on 2 cores


def pass_flops(config, window_lengths, batch_size: int = 64) -> float:
    """Matrix-multiply FLOPs of one encoder pass over `window_lengths` (tokens per window) as `pool_corpus` runs it:
    windows sorted by length, batches of `batch_size` padded to their longest. Per layer and token 2 x (4 H^2 + 2 H F)
    (Q, K, V, O and the feed-forward), plus 2 x 2 x T x H for the attention scores and their weighted sum."""
    H, F, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    lengths = np.sort(np.asarray(window_lengths))
    flops = 0.0
    for start in range(0, len(lengths), batch_size):
        T = int(lengths[start : start + batch_size].max())
        n = len(lengths[start : start + batch_size])
        flops += L * n * T * (2 * (4 * H * H + 2 * H * F) + 4 * T * H)
    return flops


def measure(model, tokenizer, sentences) -> dict:
    """The timings and numbers of one probe's heavy parts over `sentences`, unrounded (see the module docstring)."""
    start = time.perf_counter()
    words = tokenize_words(tokenizer, sentences, max_length=max_length_for(model, tokenizer), min_contexts=5)
    tokenize_seconds = time.perf_counter() - start
    flops = pass_flops(model.config, [len(w) for w in words.windows])

    peak = matmul_peak(torch.float32, 1024)
    fp32 = pool_corpus(model, tokenizer, words=words, desc="fp32 pass")
    peak = max(peak, matmul_peak(torch.float32, 1024))  # the better of the samples before and after
    # pool_corpus opens its own autocast (enabled=bf16), which turns off any autocast around the call: ask it for bf16
    bf16 = pool_corpus(model, tokenizer, words=words, desc="bf16 pass", bf16=True)
    difference = float(np.abs(bf16.contextual - fp32.contextual).max())

    with tempfile.TemporaryDirectory() as cache:
        settings = WORD2VEC_SETTINGS
        _, trained_seconds, _ = cached_word2vec(words.words, settings, cache)
        start = time.perf_counter()
        _, _, cached = cached_word2vec(words.words, settings, cache)
        read_seconds = time.perf_counter() - start

    gflops = flops / fp32.seconds / 1e9
    least = 2 * flops / (peak * 1e9)  # two passes (model, untrained) at 100% of the fp32 matmul peak
    return {"words": words, "tokenize_seconds": tokenize_seconds, "flops": flops, "peak": peak, "fp32": fp32,
            "bf16": bf16, "difference": difference, "trained_seconds": trained_seconds, "read_seconds": read_seconds,
            "cached": cached, "gflops": gflops, "least": least}


def record(m: dict, name: str, sentences: int, quick: bool) -> dict:
    """What probe-latest.json holds: the measurements `m` of `measure`, rounded, with the machine and the target."""
    fp32, bf16, tokens, gflops, peak = m["fp32"], m["bf16"], m["words"].tokens, m["gflops"], m["peak"]
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(),
        "threads": torch.get_num_threads(), "model": name, "quick": quick, "sentences": sentences,
        "windows": len(m["words"].windows), "tokens": tokens, "tokenize_seconds": round(m["tokenize_seconds"], 2),
        "pass_gflop": round(m["flops"] / 1e9, 1),
        "fp32": {"seconds": round(fp32.seconds, 2), "tokens_per_second": round(tokens / fp32.seconds),
                 "gflops_per_second": round(gflops, 1), "matmul_peak_gflops": round(peak, 1),
                 "share_of_peak": round(gflops / peak, 3)},
        "bf16": {"seconds": round(bf16.seconds, 2), "speedup": round(fp32.seconds / bf16.seconds, 2),
                 "max_abs_difference": m["difference"], "within_1e-4": m["difference"] <= 1e-4},
        "word2vec": {"trained_seconds": m["trained_seconds"], "cached_read_seconds": round(m["read_seconds"], 2),
                     "read_from_cache": m["cached"]},
        "two_passes_at_fp32_peak_seconds": round(m["least"], 1), "target_seconds": TARGET_SECONDS,
        "target_reachable_in_fp32": m["least"] < TARGET_SECONDS,
    }


def print_table(m: dict, name: str, sentences: int):
    fp32, bf16, tokens, gflops, peak = m["fp32"], m["bf16"], m["words"].tokens, m["gflops"], m["peak"]
    print(f"\n| {name}, {sentences:,} sentences, {tokens:,} tokens | value |\n|---|---:|")
    rows = [("tokenization (once)", f"{m['tokenize_seconds']:.1f} s"),
            ("fp32 pass", f"{fp32.seconds:.1f} s, {tokens / fp32.seconds:,.0f} tokens/s"),
            ("fp32 matmul throughput", f"{gflops:.0f} of {peak:.0f} GFLOP/s peak ({gflops / peak:.0%})"),
            ("two fp32 passes at 100% of peak", f"{m['least']:.0f} s (target {TARGET_SECONDS} s for the whole probe)"),
            ("bf16 pass", f"{bf16.seconds:.1f} s ({fp32.seconds / bf16.seconds:.2f}x), max |bf16 - fp32| "
                          f"{m['difference']:.1e}"),
            ("word2vec", f"trained {m['trained_seconds']:.1f} s, read from the cache {m['read_seconds']:.2f} s")]
    for label, value in rows:
        print(f"| {label} | {value} |")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first 2,000 sentences only")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)

    model, tokenizer, name = load_reference("minilm")
    sentences = wikipedia_train_sentences(2000 if args.quick else 0)
    print(f"{name} over {len(sentences):,} sentences of the default corpus's training split", flush=True)
    m = measure(model, tokenizer, sentences)
    result = record(m, name, len(sentences), args.quick)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "probe-latest-quick.json" if args.quick else "probe-latest.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print_table(m, name, len(sentences))
    print(f"\nwrote {path}")
    return result


if __name__ == "__main__":
    main()
