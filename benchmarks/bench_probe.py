"""How fast `hf-minattn probe` pools an encoder's word vectors over the default corpus, against what the hardware allows.

    python benchmarks/bench_probe.py                   # all-MiniLM-L6-v2 over the default corpus's training split
    python benchmarks/bench_probe.py --quick           # the first 2,000 sentences
    python benchmarks/bench_probe.py --full-pooling    # every sentence in both passes (as on 2026-11-24)

The probe's heaviest parts are two encoder passes over the vector corpus (`pool_corpus`): the model's and the same
architecture's at initialisation (the untrained twin). As `hf-minattn probe` runs them by default, each encodes only
the sentences its pooling needs: the words some probe reads, from at most `--contexts-per-word` sentences each for
the model and `--twin-contexts-per-word` for the twin (`pooling.selection_for` with the CLI's defaults,
`DEFAULT_CONTEXTS_PER_WORD` and `DEFAULT_TWIN_CONTEXTS_PER_WORD`). `--full-pooling` (the probe's flag of that name)
encodes every sentence in both passes, as the probe did before it pooled K contexts a word. Measured here, in one
process:
- tokenization (`tokenize_words`, once for both passes);
- each pass in fp32: time, tokens/s, the matrix-multiply FLOPs it performs (`pass_flops`) and GFLOP/s against the
  fp32 matmul peak timed in the same run (`bench_common.matmul_peak`); and so the least time ANY fp32 implementation
  would need for the two passes at that peak (the passes only: the probe's other stages are not in it);
- each pass under bf16 autocast (`pool_corpus(..., bf16=True)`, what `hf-minattn probe --bf16` runs): time, and the
  largest difference of the model's pooled vectors from fp32 (`--bf16` is judged on the scores, not on the vectors:
  bench_pooling.py);
- word2vec (the probes' settings, seed 0): trained, then read back from its cache (`cached_word2vec`).

Writes `benchmarks/results/probe-k-latest.json` (`--full-pooling`: `probe-latest.json`, the name the committed
full-pooling run of 2026-11-24 has; `--quick`: `...-quick.json`) and prints a table.
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
from hf_minattn.initialization import initial_model
from hf_minattn.machine import machine_info
from hf_minattn.probes.benchmarks import WORD2VEC_SETTINGS, cached_word2vec
from hf_minattn.probes.corpus import wikipedia_train_sentences
from hf_minattn.probes.encode import pool_corpus, tokenize_words, word_normaliser
from hf_minattn.probes.loading import load_reference, max_length_for
from hf_minattn.probes.pooling import selection_for
from hf_minattn.probes.settings import ProbeSettings

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


def probe_passes(model, tokenizer, words, full_pooling: bool) -> dict:
    """{"model": (model, selection), "twin": (untrained twin, selection)}: the two passes `hf-minattn probe` runs over
    `words` with its default settings (`selection_for`; None where `full_pooling`: every sentence)."""
    settings = ProbeSettings(full_pooling=full_pooling)
    twin = initial_model(model.config, settings.seed, type(model)).eval().to(model.device)
    normalise = word_normaliser(tokenizer)
    return {"model": (model, selection_for(words, normalise, settings)[0]),
            "twin": (twin, selection_for(words, normalise, settings, settings.twin_contexts_per_word)[0])}


def encoded_lengths(words, selection) -> list:
    """Tokens per window of the windows `pool_corpus` encodes under `selection` (None: every window)."""
    kept = np.ones(len(words.windows), dtype=bool) if selection is None else \
        np.isin(words.window_sentence, selection.sentences)
    return [len(words.windows[k]) for k in np.flatnonzero(kept)]


def time_pass(model, tokenizer, words, selection, name: str) -> dict:
    """One pass as the probe runs it (batches of 64, the model's max length), in fp32 and under bf16 autocast."""
    max_length = max_length_for(model, tokenizer)
    fp32 = pool_corpus(model, tokenizer, words=words, max_length=max_length, selection=selection,
                       desc=f"{name} pass, fp32")
    # pool_corpus opens its own autocast (enabled=bf16), which turns off any autocast around the call: ask it for bf16
    bf16 = pool_corpus(model, tokenizer, words=words, max_length=max_length, selection=selection,
                       desc=f"{name} pass, bf16", bf16=True)
    return {"fp32": fp32, "bf16": bf16, "flops": pass_flops(model.config, encoded_lengths(words, selection)),
            "sentences": len(words.words) if selection is None else len(selection.sentences)}


def measure(model, tokenizer, sentences, full_pooling: bool = False) -> dict:
    """The timings and numbers of one probe's heavy parts over `sentences`, unrounded (see the module docstring)."""
    start = time.perf_counter()
    words = tokenize_words(tokenizer, sentences, max_length=max_length_for(model, tokenizer), min_contexts=5)
    tokenize_seconds = time.perf_counter() - start

    peak = matmul_peak(torch.float32, 1024)
    passes = {name: time_pass(encoder, tokenizer, words, selection, name)
              for name, (encoder, selection) in probe_passes(model, tokenizer, words, full_pooling).items()}
    peak = max(peak, matmul_peak(torch.float32, 1024))  # the better of the samples before and after
    model_pass = passes["model"]
    difference = float(np.abs(model_pass["bf16"].contextual - model_pass["fp32"].contextual).max())

    with tempfile.TemporaryDirectory() as cache:
        settings = WORD2VEC_SETTINGS
        _, trained_seconds, _ = cached_word2vec(words.words, settings, cache)
        start = time.perf_counter()
        _, _, cached = cached_word2vec(words.words, settings, cache)
        read_seconds = time.perf_counter() - start

    least = sum(p["flops"] for p in passes.values()) / (peak * 1e9)  # both passes at 100% of the fp32 matmul peak
    return {"words": words, "tokenize_seconds": tokenize_seconds, "peak": peak, "passes": passes,
            "difference": difference, "trained_seconds": trained_seconds, "read_seconds": read_seconds,
            "cached": cached, "least": least, "full_pooling": full_pooling}


def pass_record(p: dict, peak: float) -> dict:
    """One pass of `measure`, rounded: what it encoded, its FLOPs, and its fp32 and bf16 times."""
    fp32, bf16 = p["fp32"], p["bf16"]
    gflops = p["flops"] / fp32.seconds / 1e9
    return {"sentences": p["sentences"], "tokens": fp32.tokens, "gflop": round(p["flops"] / 1e9, 1),
            "fp32": {"seconds": round(fp32.seconds, 2), "tokens_per_second": round(fp32.tokens / fp32.seconds),
                     "gflops_per_second": round(gflops, 1), "share_of_peak": round(gflops / peak, 3)},
            "bf16": {"seconds": round(bf16.seconds, 2), "speedup": round(fp32.seconds / bf16.seconds, 2)}}


def record(m: dict, name: str, sentences: int, quick: bool) -> dict:
    """What the results file holds: the measurements `m` of `measure`, rounded, with the machine and the target."""
    settings = ProbeSettings()
    pooling = {"design": "every word, every sentence (full pooling)", "contexts_per_word": None,
               "twin_contexts_per_word": None} if m["full_pooling"] else {
        "design": "scored words, at most K contexts each (the probe's default)",
        "contexts_per_word": settings.contexts_per_word, "twin_contexts_per_word": settings.twin_contexts_per_word}
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(),
        "threads": torch.get_num_threads(), "model": name, "quick": quick, "sentences": sentences,
        "pooling": pooling, "windows": len(m["words"].windows), "tokens": m["words"].tokens,
        "tokenize_seconds": round(m["tokenize_seconds"], 2), "matmul_peak_gflops": round(m["peak"], 1),
        "passes": {system: pass_record(p, m["peak"]) for system, p in m["passes"].items()},
        "bf16_max_abs_difference_model": m["difference"],
        "word2vec": {"trained_seconds": m["trained_seconds"], "cached_read_seconds": round(m["read_seconds"], 2),
                     "read_from_cache": m["cached"]},
        "passes_at_fp32_peak_seconds": round(m["least"], 1), "target_seconds": TARGET_SECONDS,
        "passes_at_fp32_peak_under_target": m["least"] < TARGET_SECONDS,
    }


def print_table(m: dict, name: str, sentences: int):
    words, peak = m["words"], m["peak"]
    design = "full pooling" if m["full_pooling"] else "the probe's default pooling"
    print(f"\n| {name}, {sentences:,} sentences, {words.tokens:,} tokens, {design} | value |\n|---|---:|")
    rows = [("tokenization (once)", f"{m['tokenize_seconds']:.1f} s")]
    for system, p in m["passes"].items():
        fp32, bf16, gflops = p["fp32"], p["bf16"], p["flops"] / p["fp32"].seconds / 1e9
        rows += [(f"{system} pass, fp32 ({p['sentences']:,} sentences)",
                  f"{fp32.seconds:.1f} s, {fp32.tokens / fp32.seconds:,.0f} tokens/s, "
                  f"{gflops:.0f} of {peak:.0f} GFLOP/s peak ({gflops / peak:.0%})"),
                 (f"{system} pass, bf16", f"{bf16.seconds:.1f} s ({fp32.seconds / bf16.seconds:.2f}x)")]
    rows += [("max |bf16 - fp32|, the model's pooled vectors", f"{m['difference']:.1e}"),
             ("both fp32 passes at 100% of peak", f"{m['least']:.0f} s (target {TARGET_SECONDS} s: the whole probe)"),
             ("word2vec", f"trained {m['trained_seconds']:.1f} s, read from the cache {m['read_seconds']:.2f} s")]
    for label, value in rows:
        print(f"| {label} | {value} |")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first 2,000 sentences only")
    parser.add_argument("--full-pooling", action="store_true",
                        help="both passes over every sentence (the probe's --full-pooling), not the default pooling")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)

    model, tokenizer, name = load_reference("minilm")
    sentences = wikipedia_train_sentences(2000 if args.quick else 0)
    print(f"{name} over {len(sentences):,} sentences of the default corpus's training split", flush=True)
    m = measure(model, tokenizer, sentences, args.full_pooling)
    result = record(m, name, len(sentences), args.quick)
    os.makedirs(args.out, exist_ok=True)
    stem = "probe-latest" if args.full_pooling else "probe-k-latest"
    path = os.path.join(args.out, f"{stem}-quick.json" if args.quick else f"{stem}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print_table(m, name, len(sentences))
    print(f"\nwrote {path}")
    return result


if __name__ == "__main__":
    main()
