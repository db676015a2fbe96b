"""May `hf-minattn probe --bf16` encode the probe sentences (the geometry's input) under bf16 autocast too?

    python benchmarks/bench_geometry_bf16.py              # all-MiniLM-L6-v2 on the probe's 2,000 default sentences
    python benchmarks/bench_geometry_bf16.py --quick      # 200 sentences, 2 seeds: a smoke run

The probe's sentences are encoded twice, in fp32 and under bf16 autocast, and geometry (geometry.py) is scored on
both at the probe's seed. Every bf16 number is then checked against the fp32 number's own noise:
- the means over the scored words (self-similarity, MEV, adjusted self-similarity): the 95% bootstrap interval of
  the fp32 mean over those words;
- IntraSim, raw and adjusted: the 95% bootstrap interval of the fp32 mean over the sentences;
- the baselines (anisotropy, MEV baseline), which sample pairs and groups with the seed: the fp32 value at the
  probe's seed, plus or minus the range of the fp32 baseline over `--seeds` seeds.
Scores, not vectors: the vectors move (bf16 keeps 8 bits of mantissa); what the report says must not. The run writes
`results/geometry-bf16.json` and prints one row per score and layer with the verdict.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hf_minattn.probes.corpus import default_sentences
from hf_minattn.probes.encode import encode_corpus, tokenize_corpus
from hf_minattn.probes.geometry import geometry, max_explainable_variance, padded_groups, scored_groups
from hf_minattn.probes.loading import load_reference
from hf_minattn.stats import bootstrap_intervals


def per_word(encoded, layer, base):
    """(self-similarity, MEV, adjusted self-similarity) of each scored word at `layer`, as geometry computes their
    means (its `_layer_scorer`): occurrences as unit vectors, zero-padded to one batch."""
    n_occ, padded, present = padded_groups(*scored_groups(encoded))  # padded: (words, max occurrences)
    vectors = encoded.kept[layer]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    total = (unit[padded] * present[..., None]).sum(axis=1)
    sims = (np.sum(total * total, axis=1) - n_occ) / (n_occ * (n_occ - 1))
    mevs = np.asarray(max_explainable_variance(vectors[padded] * present[..., None]))
    return {"self_similarity": sims, "mev": mevs, "adjusted_self_similarity": sims - base}


def mean_interval(values, n_resamples, seed):
    interval = bootstrap_intervals(lambda x, axis=-1: np.mean(x, axis=axis), values, n_resamples=n_resamples,
                                   seed=seed, vectorized=True)[0]
    return interval.low, interval.high


def compare(fp32, bf16, runs, n_resamples):
    """One row per score and layer: the fp32 and bf16 values, the fp32 noise band and whether bf16 is inside it."""
    rows = []
    g32, g16 = fp32["geometry"], bf16["geometry"]
    for layer in g32.layers:
        words = per_word(fp32["encoded"], layer, g32.anisotropy[layer])
        for name, values in words.items():  # the per-word values are the ones geometry averages
            assert np.isclose(values.mean(), getattr(g32, name)[layer], atol=1e-5), (name, layer)
        bands = {name: mean_interval(values, n_resamples, 0) for name, values in words.items()}
        intra = fp32["encoded"].intra_by_sentence[layer]
        bands["intra_similarity"] = mean_interval(intra, n_resamples, 0)
        bands["adjusted_intra_similarity"] = tuple(b - g32.anisotropy[layer] for b in bands["intra_similarity"])
        for name in ("anisotropy", "mev_baseline"):  # seed 0 +- the spread over seeds (seed 0 may be an extreme)
            seeds = [getattr(g, name)[layer] for g in runs]
            spread = max(seeds) - min(seeds)
            bands[name] = (getattr(g32, name)[layer] - spread, getattr(g32, name)[layer] + spread)
        for name, (low, high) in bands.items():
            a, b = float(getattr(g32, name)[layer]), float(getattr(g16, name)[layer])
            rows.append({"score": name, "layer": layer, "fp32": a, "bf16": b, "noise_low": float(low),
                         "noise_high": float(high), "within": bool(low <= b <= high)})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 sentences, 2 seeds")
    parser.add_argument("--seeds", type=int, default=5, help="seeds for the baselines' noise (default 5)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    seeds = 2 if args.quick else args.seeds
    model, tokenizer, name = load_reference("minilm")
    sentences = default_sentences(200 if args.quick else 2000)
    tokenized = tokenize_corpus(tokenizer, sentences, 128)
    passes = {}
    for precision in ("fp32", "bf16"):
        start = time.perf_counter()
        encoded = encode_corpus(model, tokenizer, sentences, tokenized=tokenized, bf16=precision == "bf16")
        seconds = time.perf_counter() - start
        passes[precision] = {"encoded": encoded, "seconds": seconds, "geometry": geometry(encoded, seed=0)}
        print(f"{precision}: encoded {len(sentences)} sentences in {seconds:.1f} s", flush=True)
    runs = [passes["fp32"]["geometry"]] + [geometry(passes["fp32"]["encoded"], seed=s) for s in range(1, seeds)]
    rows = compare(passes["fp32"], passes["bf16"], runs, args.bootstrap)
    print("| score | layer | fp32 | bf16 | fp32 noise | inside |\n|---|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['score']} | {r['layer']} | {r['fp32']:.4f} | {r['bf16']:.4f} | "
              f"[{r['noise_low']:.4f}, {r['noise_high']:.4f}] | {'yes' if r['within'] else '**no**'} |")
    verdict = all(r["within"] for r in rows)
    print(f"every bf16 score inside its fp32 noise: {verdict}; encoding {passes['fp32']['seconds']:.1f} s fp32, "
          f"{passes['bf16']['seconds']:.1f} s bf16")
    if not args.quick:
        report = {"model": name, "sentences": len(sentences), "seeds": seeds, "n_resamples": args.bootstrap,
                  "seconds": {p: round(v["seconds"], 2) for p, v in passes.items()}, "all_within": verdict,
                  "rows": rows}
        Path(args.out, "geometry-bf16.json").write_text(json.dumps(report, indent=1))
    return rows


if __name__ == "__main__":
    main()
