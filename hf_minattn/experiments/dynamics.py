"""Learning dynamics of word similarity: the full and frozen-embedding runs save their weights at every evaluation
(model only); afterwards each saved state, from the untrained model (step 0) to the last, is pooled over the same
training sentences (Bommasani mean/mean pooling, as the probes do) and scored on WordSim-353 with the probes'
common-pair scorer. The loss side of the dynamics is the evaluation curve that run_mlm logs during training.

A subsample of the training split is pooled (`settings["dynamics_sentences"]`), so that some sixty saved states
cost minutes, not an hour; the probes' end-of-training scores use the whole split.
"""

import os
import re
import shutil

import numpy as np

from hf_minattn.stats import mean_interval, paired_difference

from .statistics import common_seeds
from .training import VARIANTS, log

DYNAMICS_VARIANTS = tuple(v.name for v in VARIANTS if v.save_states)
BENCHMARK = "wordsim353"


def saved_states(folder: str) -> list[tuple[int, str]]:
    """[(step, folder)] of the `checkpoint-<step>` folders a run saved, in step order."""
    found = []
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        match = re.fullmatch(r"checkpoint-(\d+)", name)
        if match and os.path.isfile(os.path.join(folder, name, "config.json")):
            found.append((int(match.group(1)), os.path.join(folder, name)))
    return sorted(found)


def similarity_curves(folders: dict, settings: dict, seeds, remove_states: bool = True) -> dict:
    """WordSim-353 Spearman of the static vectors and every layer's pooled vectors at each saved state of the full
    and frozen runs of every seed (step 0 = the untrained model of the seed). Returns {"sentences", "pairs",
    "variants": {name: {"steps": [...], "seeds": {seed: {set: [rho per step]}}}}}. `remove_states` deletes the
    saved states once scored (tens of MB each; the numbers are what is kept)."""
    from transformers import AutoModel, AutoTokenizer

    from hf_minattn.probes.benchmarks import CommonBenchmarks
    from hf_minattn.probes.corpus import wikipedia_train_sentences
    from hf_minattn.probes.encode import pool_corpus, tokenize_words, word_normaliser
    from hf_minattn.probes.loading import resolve_device
    from hf_minattn.probes.vectors import static_vectors

    tokenizer = AutoTokenizer.from_pretrained(folders["full"][seeds[0]])
    sentences = wikipedia_train_sentences(settings["dynamics_sentences"])
    words = tokenize_words(tokenizer, sentences, max_length=settings["max_seq_length"], min_contexts=5)
    bench = CommonBenchmarks(words.vocab, word_normaliser(tokenizer))
    result = {"sentences": len(words.words), "min_contexts": words.min_contexts,
              "pairs": bench.coverage()[BENCHMARK], "benchmark": BENCHMARK, "variants": {}}
    for variant in DYNAMICS_VARIANTS:
        per_seed, steps = {}, None
        for seed in seeds:
            states = [(0, folders["untrained"][seed]), *saved_states(folders[variant][seed])]
            log(f"word similarity during training: {variant}, seed {seed}, {len(states)} states")
            scores = {}
            for step, path in states:
                model = AutoModel.from_pretrained(path).to(resolve_device(None)).eval()  # the GPU when there is one
                pooled = pool_corpus(model, tokenizer, words=words, desc=f"{variant} seed {seed} step {step}")
                sets = {"static": static_vectors(model, tokenizer, words.vocab),
                        **{f"layer_{k}": v for k, v in enumerate(pooled.contextual)}}
                for name, vectors in sets.items():
                    rho = bench.spearman(BENCHMARK, words.vocab, vectors)
                    scores.setdefault(name, []).append(None if np.isnan(rho) else round(float(rho), 4))
            state_steps = [step for step, _ in states]
            if steps is not None and state_steps != steps:
                raise ValueError(f"{variant} seed {seed} saved states at steps {state_steps}, other seeds at {steps}")
            steps, per_seed[seed] = state_steps, scores
        result["variants"][variant] = {"steps": steps, "seeds": per_seed}
    if remove_states:
        remove_saved_states(folders, seeds)
    return result


def remove_saved_states(folders: dict, seeds) -> None:
    """Delete the saved states of every dynamics variant at `seeds` (tens of MB each), once every measure that reads
    them (similarity_curves, head_dynamics.head_curves) has kept its numbers."""
    for variant in DYNAMICS_VARIANTS:
        for seed in seeds:
            for _, path in saved_states(folders[variant][seed]):
                shutil.rmtree(path)


def similarity_summary(curves: dict) -> dict:
    """Per variant and vector set: the mean Spearman over seeds at each step with its t-interval, and the paired
    change from step 0 to the last step; plus full - frozen at the last step, paired over seeds."""
    summary = {}
    for variant, data in curves["variants"].items():
        seeds = sorted(data["seeds"])
        summary[variant] = {}
        for name in data["seeds"][seeds[0]]:
            rho = np.array([[np.nan if x is None else x for x in data["seeds"][s][name]] for s in seeds])  # (seeds, steps)
            summary[variant][name] = {
                "steps": data["steps"],
                # None where a state scored no number (fewer than 3 common pairs: the quick preset's tiny corpus)
                "spearman": [mean_interval(rho[:, i]).to_dict() if np.isfinite(rho[:, i]).all() else None
                             for i in range(rho.shape[1])],
                "change": paired_difference(rho[:, -1], rho[:, 0]).to_dict() if np.isfinite(rho).all() else None,
            }
    if {"full", "frozen_embeddings"} <= set(curves["variants"]):
        full, frozen = curves["variants"]["full"]["seeds"], curves["variants"]["frozen_embeddings"]["seeds"]
        seeds = common_seeds(full, frozen)
        summary["full_minus_frozen"] = {}
        for name in full[seeds[0]]:
            a, b = [full[s][name][-1] for s in seeds], [frozen[s][name][-1] for s in seeds]
            finite = None not in a + b
            summary["full_minus_frozen"][name] = paired_difference(a, b).to_dict() if finite else None
    return summary
