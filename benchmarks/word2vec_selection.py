"""Choose word2vec's settings on benchmarks other than the test set.

The probes compare every vector set with a gensim word2vec trained on the same corpus words. gensim's defaults
(5 epochs) are tuned for corpora of billions of words; on our training split they leave word2vec half as strong as
it can be. This script trains skip-gram and CBOW over a small grid (epochs x `sample`, 2 seeds each, one worker
thread so that a seed fixes the result) on the training split of the default corpus, the same words the probes
train on (the tokenizer's normalised words), and scores each on SimLex-999 (Spearman) and the Google analogies
(3CosAdd accuracy). WordSim-353, the set the findings report, is never computed here.

Rule: the best mean over seeds of (SimLex-999 Spearman + analogy accuracy) / 2; a tie goes to fewer epochs.
The choice becomes `hf_minattn.probes.benchmarks.WORD2VEC_SETTINGS` (tests/test_probes_word2vec.py checks that the
two agree).

    OMP_NUM_THREADS=1 python benchmarks/word2vec_selection.py --epochs 5 10 20   # the committed run: 13 min, one core
    OMP_NUM_THREADS=1 python benchmarks/word2vec_selection.py --archs skipgram --samples 1e-4 --epochs 40 \
        --out /tmp/w2v40.json    # then: --merge benchmarks/results/word2vec_selection.json /tmp/w2v40.json
    python benchmarks/word2vec_selection.py --epochs 5 --seeds 0 --out /tmp/w2v.json   # a quick look
"""

import argparse
import datetime
import json
import logging
import os
import platform
import time
from dataclasses import asdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "results", "word2vec_selection.json")
RULE = ("the best mean over seeds of (SimLex-999 Spearman + Google-analogy 3CosAdd accuracy) / 2; a tie goes to "
        "fewer epochs; WordSim-353 (the test set) is not computed")


def corpus_words(max_sentences=0):
    """The training split's sentences as the probes see them: the tokenizer's normalised words per sentence.

    Word splitting and normalisation (BERT pre-tokenizer, lower-case) do not depend on the WordPiece vocabulary, so a
    small tokenizer trained on a part of the text splits words exactly as the model's does."""
    from hf_minattn import train_tokenizer
    from hf_minattn.probes.corpus import wikipedia_train_sentences
    from hf_minattn.probes.encode import tokenize_words

    sentences = wikipedia_train_sentences(max_sentences)
    tokenizer = train_tokenizer(sentences[:2000], vocab_size=1000, show_progress=False)
    words = tokenize_words(tokenizer, sentences, min_contexts=5).words
    return [ws for ws in words if ws], len(sentences)


def score(kv):
    """SimLex-999 Spearman on the pairs with both words in the vocabulary, and 3CosAdd accuracy on the analogy
    questions with all four words in it (the vocabulary, hence the items, is the same for every setting)."""
    from hf_minattn.probes.benchmarks import ANALOGIES, CommonBenchmarks, analogy_accuracy

    vocab = list(kv.index_to_key)
    bench = CommonBenchmarks(vocab)
    accuracy, questions = analogy_accuracy(kv, ANALOGIES)
    return {"simlex999": float(bench.spearman("simlex999", vocab, kv.vectors)),
            "simlex999_pairs": len(bench.pairs["simlex999"]), "analogy": float(accuracy),
            "analogy_questions": questions}


def summarise(runs):
    """One row per (arch, sample, epochs) of `runs`: the means over its seeds and the criterion of RULE."""
    keys = sorted({(r["arch"], r["sample"], r["epochs"]) for r in runs}, key=lambda k: (k[0] != "skipgram", -k[1], k[2]))
    summary = []
    for arch, sample, epochs in keys:
        rows = [r for r in runs if (r["arch"], r["sample"], r["epochs"]) == (arch, sample, epochs)]
        simlex, analogy = np.mean([r["simlex999"] for r in rows]), np.mean([r["analogy"] for r in rows])
        summary.append({"arch": arch, "epochs": epochs, "sample": sample, "simlex999": round(float(simlex), 4),
                        "analogy": round(float(analogy), 4),
                        "criterion": round(float((simlex + analogy) / 2), 4), "seeds": len(rows)})
    return summary


def choice(best):
    from hf_minattn.probes.benchmarks import Word2VecSettings

    settings = asdict(Word2VecSettings(sg=int(best["arch"] == "skipgram"), epochs=best["epochs"], sample=best["sample"]))
    return {"arch": best["arch"], "settings": {k: v for k, v in settings.items() if k != "seed"},
            "simlex999": best["simlex999"], "analogy": best["analogy"], "criterion": best["criterion"]}


def merge(base, extra):
    """`base` with the runs of `extra` (a run of this script with other grid points on the same corpus) added, the
    summary and the choice recomputed over all runs; `extra`'s grid is listed under "extensions"."""
    if base["corpus"] != extra["corpus"]:
        raise ValueError(f"the two runs used different corpora: {base['corpus']} and {extra['corpus']}")
    key = lambda r: (r["arch"], r["sample"], r["epochs"], r["seed"])  # noqa: E731
    seen = {key(r) for r in base["runs"]}
    if any(key(r) in seen for r in extra["runs"]):
        raise ValueError("the extension repeats runs of the base file")
    merged = {**base, "runs": base["runs"] + extra["runs"]}
    merged["summary"] = summarise(merged["runs"])
    merged["choice"] = choice(select(merged["summary"]))
    grid = {k: extra["grid"][k] for k in ("archs", "epochs", "samples", "seeds")}
    merged["extensions"] = base.get("extensions", []) + [{**grid, "date": extra["date"], "seconds": extra["seconds"]}]
    return merged


def select(summary):
    """The chosen configuration of `summary` (rows with "criterion" and "epochs") by RULE."""
    return max(summary, key=lambda row: (round(row["criterion"], 6), -row["epochs"]))


def write_json(result: dict, path: str):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


def train_grid(words, args, corpus: dict) -> list[dict]:
    """One scored run per (arch, sample, epochs, seed) of the grid in `args`, printed as it finishes; records the
    vocabulary size in `corpus`."""
    from hf_minattn.probes.benchmarks import Word2VecSettings, train_word2vec

    runs = []
    for arch in args.archs:
        for sample in args.samples:
            for epochs in args.epochs:
                for seed in args.seeds:
                    settings = Word2VecSettings(sg=int(arch == "skipgram"), epochs=epochs, sample=sample)
                    t = time.perf_counter()
                    kv = train_word2vec(words, settings, seed=seed)
                    run = {"arch": arch, "epochs": epochs, "sample": sample, "seed": seed, **score(kv),
                           "seconds": round(time.perf_counter() - t, 1)}
                    corpus["vocabulary"] = len(kv)
                    runs.append(run)
                    print(f"{arch:8s} epochs {epochs:3d} sample {sample:g} seed {seed}: SimLex {run['simlex999']:.3f} "
                          f"analogy {run['analogy']:.3f} ({run['seconds']}s)", flush=True)
    return runs


def print_summary(summary: list[dict], best: dict):
    print(f"\n{'arch':8s} {'sample':>7s} {'epochs':>6s} {'SimLex':>7s} {'analogy':>7s} {'mean':>7s}")
    for row in summary:
        mark = "  <- chosen" if row is best else ""
        print(f"{row['arch']:8s} {row['sample']:7g} {row['epochs']:6d} {row['simlex999']:7.3f} {row['analogy']:7.3f} "
              f"{row['criterion']:7.3f}{mark}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, nargs="+", default=[5, 10, 20, 40])
    parser.add_argument("--samples", type=float, nargs="+", default=[1e-3, 1e-4])
    parser.add_argument("--archs", choices=["skipgram", "cbow"], nargs="+", default=["skipgram", "cbow"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--max-sentences", type=int, default=0, help="0 = the whole training split")
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--merge", nargs=2, metavar=("BASE", "EXTRA"),
                        help="train nothing: add EXTRA's runs (other grid points, same corpus) to BASE's, choose again "
                             "over all of them and write the result to --out")
    return parser.parse_args(argv)


def main(argv=None):
    import gensim

    args = parse_args(argv)
    if args.merge:
        base, extra = (json.load(open(path, encoding="utf-8")) for path in args.merge)
        result = merge(base, extra)
        write_json(result, args.out)
        print(f"merged {len(extra['runs'])} runs into {len(base['runs'])}: chosen {result['choice']} -> {args.out}")
        return result
    logging.getLogger("gensim").setLevel(logging.ERROR)

    start = time.perf_counter()
    words, n_sentences = corpus_words(args.max_sentences)
    corpus = {"source": "hf_minattn.probes.corpus.wikipedia_train_sentences()", "sentences": n_sentences,
              "words": int(sum(map(len, words))), "max_sentences": args.max_sentences}
    print(f"corpus: {corpus['sentences']} sentences, {corpus['words']} words "
          f"({time.perf_counter() - start:.0f}s to tokenize)", flush=True)
    runs = train_grid(words, args, corpus)
    summary = summarise(runs)
    best = select(summary)
    print_summary(summary, best)

    chosen = choice(best)
    result = {
        "rule": RULE,
        "grid": {"archs": args.archs, "epochs": args.epochs, "samples": args.samples, "seeds": args.seeds,
                 "fixed": {k: v for k, v in chosen["settings"].items() if k not in ("sg", "epochs", "sample")}},
        "corpus": corpus,
        "runs": runs,
        "summary": summary,
        "choice": chosen,
        "date": datetime.date.today().isoformat(),
        "seconds": round(time.perf_counter() - start, 1),
        "versions": {"python": platform.python_version(), "gensim": gensim.__version__, "numpy": np.__version__},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_json(result, args.out)
    print(f"\nchosen: {best['arch']}, {best['epochs']} epochs, sample {best['sample']:g} -> {args.out} "
          f"({result['seconds']:.0f}s in all)")
    return result


if __name__ == "__main__":
    main()
