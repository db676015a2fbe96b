"""`hf-minattn experiments`: answer the classic self-attention training questions with measurements.

Trains MinAttn variants with the same data, steps and seed (full model; word and position embeddings frozen at
their random initial values; W_Q = W_K = W_V = I; attention-only blocks; plus the untrained model as the floor),
probes each one, and writes `FINDINGS.md`, `results.json` and figures. Every number in FINDINGS.md comes from
`results.json`, which this run computed.

All trained variants untie the output layer from the word embeddings (`tie_word_embeddings=false`): with tying,
the embedding matrix is also the masked-LM output layer, and "are the input embeddings trained?" could not be
told apart from "is the output layer trained?".
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

# What each run trains; `--quick` is what the tests run (~minutes), the default is the published run.
# The full run uses the demo's 4-layer shape at half its width and sequence length, so that five variants train
# and are probed in well under 45 minutes on 2 CPU cores without bf16 (on a machine shared with other jobs).
SETTINGS = {
    "quick": dict(model_size="tiny", config_overrides="", vocab_size=2000, max_seq_length=64, batch_size=16,
                  max_steps=40, learning_rate=2e-3, eval_steps=20, max_eval_samples=64, probe_sentences=300,
                  head_sentences=40),
    "full": dict(model_size="small", config_overrides="hidden_size=128,intermediate_size=512", vocab_size=8192,
                 max_seq_length=64, batch_size=32, max_steps=300, learning_rate=1e-3, eval_steps=30,
                 max_eval_samples=256, probe_sentences=1000, head_sentences=200),
}


@dataclass
class Variant:
    name: str
    description: str  # plain words, used in FINDINGS.md
    config_overrides: str = ""
    freeze_embeddings: bool = False
    trained: bool = True


VARIANTS = (
    Variant("full", "full model: trained embeddings, learned W_Q/W_K/W_V/W_O, feed-forward"),
    Variant("frozen_embeddings", "word and position embeddings frozen at their random initial values",
            freeze_embeddings=True),
    Variant("identity_qkv", "W_Q = W_K = W_V = I: no query/key/value projections (W_O kept)",
            config_overrides="qkv_projection=identity"),
    Variant("attention_only", "attention-only blocks: no feed-forward sublayer", config_overrides="intermediate_size=0"),
    Variant("untrained", "the full model at initialisation, not trained (the floor)", trained=False),
)


def log(message):
    print(f"[experiments] {message}", flush=True)


# ---------------------------------------------------------------- training


def run_training(args: list[str], log_path: str) -> None:
    """Run `python -m hf_minattn.run_mlm ARGS` in a fresh process (so variants share no state), logging to a file
    and echoing its loss lines as progress."""
    command = [sys.executable, "-m", "hf_minattn.run_mlm", *args]
    with open(log_path, "w") as logfile:
        logfile.write(" ".join(command) + "\n")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in process.stdout:
            logfile.write(line)
            if "'loss'" in line or "'eval_loss'" in line:
                log("  " + line.strip()[:160])
        if process.wait() != 0:
            raise RuntimeError(f"training failed (exit {process.returncode}); see {log_path}")


def train_variants(out: str, settings: dict, seed: int) -> dict[str, str]:
    """Train (or, for the floor, just initialise and evaluate) every variant; returns {name: model folder}."""
    folders = {}
    tokenizer_dir = None
    common = [
        "--model_size", settings["model_size"], "--vocab_size", str(settings["vocab_size"]),
        "--max_seq_length", str(settings["max_seq_length"]), "--per_device_train_batch_size", str(settings["batch_size"]),
        "--per_device_eval_batch_size", str(settings["batch_size"]), "--learning_rate", str(settings["learning_rate"]),
        "--warmup_steps", str(settings["max_steps"] // 10), "--seed", str(seed), "--report_to", "none",
        "--logging_steps", str(settings["eval_steps"]), "--eval_strategy", "steps",
        "--eval_steps", str(settings["eval_steps"]), "--save_strategy", "no", "--disable_tqdm", "true",
    ]
    if settings["max_eval_samples"]:
        common += ["--max_eval_samples", str(settings["max_eval_samples"])]
    for i, variant in enumerate(VARIANTS):
        folder = os.path.join(out, "models", variant.name)
        folders[variant.name] = folder
        if os.path.isfile(os.path.join(folder, "eval_results.json")):
            log(f"{variant.name}: already done ({folder}), skipping")
            tokenizer_dir = tokenizer_dir or folder
            continue
        log(f"[{i + 1}/{len(VARIANTS)}] {variant.name}: {variant.description}")
        start = time.perf_counter()
        overrides = ",".join(x for x in ("tie_word_embeddings=false", settings["config_overrides"],
                                         variant.config_overrides) if x)
        args = ["--output_dir", folder, *common]
        if tokenizer_dir is not None:  # every variant reads the same vocabulary
            args += ["--tokenizer_name", tokenizer_dir]
        if variant.trained:
            args += ["--config_overrides", overrides, "--max_steps", str(settings["max_steps"])]
            if variant.freeze_embeddings:
                args += ["--freeze_embeddings", "true"]
        else:
            initialise_untrained(folder, os.path.join(out, "models", "full"), seed)
            args += ["--model_name_or_path", folder, "--do_train", "false"]
        run_training(args, os.path.join(out, "logs", f"{variant.name}.log"))
        tokenizer_dir = tokenizer_dir or folder
        log(f"{variant.name}: done in {time.perf_counter() - start:.0f}s")
    return folders


def initialise_untrained(folder: str, full_folder: str, seed: int) -> None:
    """The full variant's architecture and tokenizer, initialised with the same seed as the full variant's run:
    the state that training started from."""
    from transformers import AutoTokenizer, set_seed

    from hf_minattn import MinAttnConfig, MinAttnForMaskedLM

    set_seed(seed)
    model = MinAttnForMaskedLM(MinAttnConfig.from_pretrained(full_folder))
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(full_folder).save_pretrained(folder)


def eval_curve(folder: str) -> dict:
    """Validation loss by step, from the Trainer's log history."""
    path = os.path.join(folder, "trainer_state.json")
    if not os.path.isfile(path):
        return {"steps": [], "eval_loss": []}
    with open(path) as f:
        history = json.load(f)["log_history"]
    points = [(h["step"], h["eval_loss"]) for h in history if "eval_loss" in h]
    return {"steps": [s for s, _ in points], "eval_loss": [round(v, 4) for _, v in points]}


# ---------------------------------------------------------------- probing


def probe_variants(out: str, folders: dict, settings: dict, seed: int) -> tuple[dict, dict]:
    """Run every probe on every variant over the same sentences; returns ({name: probes dict}, {name: extras}),
    where the extras are the measurements the probes do not make themselves (questions 3 and 5)."""
    from hf_minattn.probes.cli import write_outputs
    from hf_minattn.probes.corpus import default_sentences
    from hf_minattn.probes.loading import load_encoder
    from hf_minattn.probes.run import run_all_probes

    sentences = default_sentences(settings["probe_sentences"])
    probes, extras = {}, {}
    for i, (name, folder) in enumerate(folders.items()):
        log(f"[{i + 1}/{len(folders)}] probing {name} over {len(sentences)} sentences")
        model, tokenizer = load_encoder(folder)
        results = run_all_probes(model, tokenizer, sentences, model_name=name, model_path=folder,
                                 head_sentences=settings["head_sentences"], seed=seed, log=lambda m: None)
        write_outputs(results, os.path.join(out, "probes", name))
        probes[name] = results.to_dict()
        extras[name] = {
            "related_words": related_word_similarities(results.word_vectors),
            "cooccurrence": cooccurrence_alignment(results.word_vectors, tokenizer, sentences),
            "qk_embedding_alignment": qk_embedding_alignment(model),
            "encoder_parameters": model.num_parameters(),
        }
    return probes, extras


RELATED_PAIRS = (("king", "queen"), ("king", "dog"), ("man", "woman"), ("man", "river"))


def related_word_similarities(word_vectors) -> dict:
    """Cosine of a few related and unrelated word pairs under the static vectors and every layer's."""
    result = {}
    for name in ["static", *[s for s in word_vectors.sets if s.startswith("layer_")]]:
        kv = word_vectors.keyed_vectors(name)
        result[name] = {f"{a}/{b}": (round(float(kv.similarity(a, b)), 4) if a in kv and b in kv else None)
                        for a, b in RELATED_PAIRS}
    return result


def cooccurrence_alignment(word_vectors, tokenizer, sentences, top_words=300, window=5) -> dict:
    """Do words that occur together get similar vectors? Spearman correlation, over all pairs of the
    `top_words` most frequent words, between their positive pointwise mutual information (co-occurrence within
    `window` words in a sentence) and the cosine of their vectors, for the static vectors and every layer's."""
    from scipy.stats import spearmanr

    from hf_minattn.probes.encode import tokenize_corpus

    words = tokenize_corpus(tokenizer, sentences).words
    vocab = word_vectors.vocab[:top_words]  # most frequent first
    index = {w: i for i, w in enumerate(vocab)}
    counts = np.zeros((len(vocab), len(vocab)))
    for sentence in words:
        ids = [index.get(w, -1) for w in sentence]
        for position, i in enumerate(ids):
            if i < 0:
                continue
            for j in ids[position + 1 : position + 1 + window]:
                if j >= 0 and j != i:
                    counts[i, j] += 1
                    counts[j, i] += 1
    total = counts.sum()
    marginal = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(counts * total / np.outer(marginal, marginal))
    ppmi = np.where(np.isfinite(pmi) & (pmi > 0), pmi, 0.0)
    upper = np.triu_indices(len(vocab), k=1)
    result = {"top_words": len(vocab), "window": window, "pairs": int(len(upper[0])),
              "cooccurring_pairs": int((counts[upper] > 0).sum()), "spearman": {}}
    for name in ["static", *[s for s in word_vectors.sets if s.startswith("layer_")]]:
        vectors = word_vectors.sets[name][: len(vocab)]
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        cosine = unit @ unit.T
        result["spearman"][name] = round(float(spearmanr(ppmi[upper], cosine[upper]).statistic), 4)
    return result


def qk_embedding_alignment(model) -> dict | None:
    """Is W_Q^T W_K "the embedding matrix in disguise"? Per layer, the cosine between the heads' summed QK
    circuit sum_h W_Q[h]^T W_K[h] and the Gram matrix E^T E of the word embeddings (both hidden x hidden).
    A value near 0 says the attention bilinear form is unrelated to the embeddings' own correlations."""
    if not hasattr(model, "get_head_weights") or model.config.qkv_projection != "learned":
        return None
    embeddings = model.get_input_embeddings().weight.detach().float()
    gram = embeddings.T @ embeddings  # (C, C)
    values = []
    for layer in model.get_head_weights():
        qk = (layer["W_Q"].transpose(1, 2) @ layer["W_K"]).sum(0)  # (H, C, D) @ (H, D, C) -> (C, C)
        values.append(round(float((qk * gram).sum() / (qk.norm() * gram.norm())), 4))
    return {"cosine_per_layer": values}


# ---------------------------------------------------------------- answers (numbers only)


def r(x, digits=4):
    """Round for the report; FINDINGS.md prints exactly these values, so each is found in results.json."""
    return None if x is None else round(float(x), digits)


def improvement_share(loss, full_loss, floor_loss):
    """How much of the full model's loss reduction (from the untrained floor) a variant achieves, in %."""
    return r(100 * (floor_loss - loss) / (floor_loss - full_loss), 1) if floor_loss != full_loss else None


def drift_summary(folder: str) -> dict | None:
    """Final relative distance from the initial values, and mean gradient norm over training, per matrix kind
    (W_* averaged over layers)."""
    from hf_minattn.drift import load_drift

    try:
        records = load_drift(folder)["records"]
    except FileNotFoundError:
        return None
    final = records[-1]
    summary = {"step": final["step"], "drift": {}, "grad_norm": {}}
    kinds = ("word_embeddings", "position_embeddings", "W_Q", "W_K", "W_V", "W_O")
    for kind in kinds:
        names = [n for n in final["drift"] if n == kind or n.endswith("." + kind)]
        if not names:
            continue
        summary["drift"][kind] = r(np.mean([final["drift"][n] for n in names]))
        grads = [rec["grad_norm"][n] for rec in records for n in names if rec["grad_norm"].get(n) is not None]
        summary["grad_norm"][kind] = r(np.mean(grads)) if grads else None
    return summary


def within_layer_js(heads: dict) -> list:
    """Mean Jensen-Shannon divergence between the attention distributions of different heads of the same layer."""
    js = np.array(heads["js_divergence"])
    L, H = heads["num_layers"], heads["num_heads"]
    values = []
    for layer in range(L):
        block = js[layer * H : (layer + 1) * H, layer * H : (layer + 1) * H]
        values.append(r(block[~np.eye(H, dtype=bool)].mean()) if H > 1 else None)
    return values


def head_roles(heads: dict) -> dict:
    """Each head's most pronounced behaviour (the statistic furthest above its uniform-attention level)."""
    stats = heads["stats"]
    roles = {}
    for layer in range(heads["num_layers"]):
        for head in range(heads["num_heads"]):
            candidates = {k: stats[k][layer][head] for k in ("self", "previous", "next", "cls", "sep", "punctuation")
                          if k in stats}
            best = max(candidates, key=candidates.get)
            roles[f"L{layer}H{head}"] = {"role": best, "weight": r(candidates[best]),
                                        "entropy": r(stats["entropy"][layer][head])}
    return roles


def answer_questions(results: dict) -> dict:
    variants, probes, extras = results["variants"], results["probes"], results["extras"]
    loss = {name: v["eval_loss"] for name, v in variants.items()}
    ppl = {name: v["perplexity"] for name, v in variants.items()}
    full, floor = loss["full"], loss["untrained"]
    config = results["config"]
    answers = {}

    # 1. Are the input embeddings updated?
    drift = {name: drift_summary(results["folders"][name]) for name in ("full", "frozen_embeddings", "identity_qkv")}
    d = drift["full"]
    answers["q1"] = {
        "steps": d["step"], "drift": d["drift"], "grad_norm": d["grad_norm"],
        "frozen_word_embeddings_drift": drift["frozen_embeddings"]["drift"].get("word_embeddings"),
        "embeddings_updated": d["drift"]["word_embeddings"] > 0,
    }

    # 2. Is there any need to train the embeddings?
    answers["q2"] = {
        "loss_trained": full, "loss_frozen": loss["frozen_embeddings"], "loss_untrained": floor,
        "perplexity_trained": ppl["full"], "perplexity_frozen": ppl["frozen_embeddings"],
        "loss_gap": r(loss["frozen_embeddings"] - full),
        "frozen_share_of_improvement": improvement_share(loss["frozen_embeddings"], full, floor),
    }

    # 3. Are W_Q, W_K the embedding matrix? What do the projections add over W_Q = W_K = W_V = I?
    H, C = config["num_attention_heads"], config["hidden_size"]
    alignment = extras["full"]["qk_embedding_alignment"]["cosine_per_layer"]
    alignment_init = extras["untrained"]["qk_embedding_alignment"]["cosine_per_layer"]
    answers["q3"] = {
        "embedding_shape": [config["vocab_size"], C], "projection_shape": [C, C], "heads": H, "head_dim": C // H,
        "qk_gram_cosine_trained": alignment, "qk_gram_cosine_init": alignment_init,
        "loss_learned": full, "loss_identity": loss["identity_qkv"],
        "perplexity_learned": ppl["full"], "perplexity_identity": ppl["identity_qkv"],
        "loss_gap": r(loss["identity_qkv"] - full),
        "identity_share_of_improvement": improvement_share(loss["identity_qkv"], full, floor),
        "projection_parameters": 3 * C * C * config["num_hidden_layers"],
        "parameters": extras["full"]["encoder_parameters"],
        "loss_attention_only": loss["attention_only"],
        "attention_only_share_of_improvement": improvement_share(loss["attention_only"], full, floor),
    }

    # 4. Do different heads, from different random starts, end up doing different things?
    answers["q4"] = {
        "js_within_layer_init": within_layer_js(probes["untrained"]["heads"]),
        "js_within_layer_trained": within_layer_js(probes["full"]["heads"]),
        "entropy_init": r(np.mean(probes["untrained"]["heads"]["stats"]["entropy"])),
        "entropy_trained": r(np.mean(probes["full"]["heads"]["stats"]["entropy"])),
        "uniform_entropy": r(probes["full"]["heads"]["uniform_entropy"]),
        "roles_trained": head_roles(probes["full"]["heads"]),
    }

    # 5. Do co-occurring / related words end up close?
    last = f"layer_{config['num_hidden_layers']}"
    related = {name: extras[name]["related_words"] for name in ("full", "untrained")}
    cooc = {name: extras[name]["cooccurrence"]["spearman"] for name in ("full", "untrained", "frozen_embeddings")}
    bench = {s["vectors"]: s for s in (probes["full"].get("benchmarks") or {}).get("scores", [])}
    answers["q5"] = {
        "related_static": related["full"]["static"], "related_last_layer": related["full"][last],
        "related_static_untrained": related["untrained"]["static"],
        "cooccurrence_spearman_static": cooc["full"]["static"],
        "cooccurrence_spearman_last_layer": cooc["full"][last],
        "cooccurrence_spearman_static_untrained": cooc["untrained"]["static"],
        "cooccurrence_spearman_static_frozen": cooc["frozen_embeddings"]["static"],
        "cooccurrence_top_words": extras["full"]["cooccurrence"]["top_words"],
        "wordsim_static": r(bench.get("static", {}).get("wordsim353")),
        "wordsim_word2vec": r(bench.get("word2vec", {}).get("wordsim353")),
        "wordsim_oov": r(bench.get("static", {}).get("wordsim353_oov")),
    }

    # 6. What do contextual embeddings capture that static ones do not?
    geometry = probes["full"]["geometry"]
    sense = probes["full"].get("sense")
    sense_numbers = None
    if sense:
        # sentences 0-1 use one sense, 2-3 the other (the default sense sentences)
        same = [r((np.array(m)[0, 1] + np.array(m)[2, 3]) / 2) for m in sense["similarity"]]
        cross = [r(np.array(m)[:2, 2:].mean()) for m in sense["similarity"]]
        sense_numbers = {"word": sense["word"], "same_sense": same, "other_sense": cross}
    answers["q6"] = {
        "adjusted_self_similarity": [r(x) for x in geometry["adjusted_self_similarity"]],
        "anisotropy": [r(x) for x in geometry["anisotropy"]],
        "words_scored": geometry["words_scored"],
        "sense": sense_numbers,
        "wordsim_by_layer": [r(bench.get(f"layer_{l}", {}).get("wordsim353")) for l in geometry["layers"]],
    }

    # 7. Self-attention as a weighted directed graph.
    graph = probes["full"].get("attention_graph")
    if graph:
        layer = config["num_hidden_layers"] - 1
        edges = [e for e in graph["edges"] if e["layer"] == layer and e["head"] == "mean" and e["source"] != e["target"]]
        edges.sort(key=lambda e: -e["weight"])
        labels = {n["id"]: n["label"] for n in graph["nodes"]}
        answers["q7"] = {
            "sentence": graph["sentence"], "nodes": len(graph["nodes"]), "layer": layer, "threshold": graph["threshold"],
            "edges": len(edges), "strongest": [[labels[e["source"]], labels[e["target"]], r(e["weight"], 3)] for e in edges[:5]],
        }
    return answers


# ---------------------------------------------------------------- figures


def make_figures(results: dict, out: str) -> dict:
    import shutil

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = os.path.join(out, "figures")
    os.makedirs(folder, exist_ok=True)
    paths = {}

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(folder, name), dpi=110)
        plt.close(fig)
        paths[name.removesuffix(".png")] = f"figures/{name}"

    variants, answers = results["variants"], results["answers"]

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, v in variants.items():
        if v["curve"]["steps"]:
            ax.plot(v["curve"]["steps"], v["curve"]["eval_loss"], marker=".", label=name)
    ax.axhline(variants["untrained"]["eval_loss"], color="grey", linestyle="--", label="untrained")
    ax.set_xlabel("training step"), ax.set_ylabel("validation loss (masked LM)")
    ax.set_title("Same data, steps and seed", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, "loss_curves.png")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    kinds = ["word_embeddings", "position_embeddings", "W_Q", "W_K", "W_V", "W_O"]
    names = ["full", "frozen_embeddings", "identity_qkv"]
    for i, name in enumerate(names):
        summary = drift_summary(results["folders"][name]) or {"drift": {}}
        left.bar(np.arange(len(kinds)) + (i - 1) * 0.27, [summary["drift"].get(k) or 0 for k in kinds], 0.27, label=name)
    left.set_xticks(range(len(kinds)), [k.replace("_embeddings", " emb.") for k in kinds], fontsize=8)
    left.set_ylabel("||W - W_init|| / ||W_init|| at the end"), left.legend(fontsize=7)
    from hf_minattn.drift import load_drift

    records = load_drift(results["folders"]["full"])["records"]
    steps = [rec["step"] for rec in records]
    for kind in kinds:
        series = [np.mean([v for n, v in rec["drift"].items() if n == kind or n.endswith("." + kind)] or [np.nan])
                  for rec in records]
        right.plot(steps, series, label=kind)
    right.set_xlabel("training step"), right.set_title("full model: relative distance from initialisation", fontsize=9)
    right.legend(fontsize=7)
    save(fig, "drift.png")

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, probe in results["probes"].items():
        scores = {s["vectors"]: s["wordsim353"] for s in (probe.get("benchmarks") or {}).get("scores", [])}
        layers = [k for k in scores if k.startswith("layer_")]
        if not layers:
            continue
        ax.plot(range(-1, len(layers)), [scores.get("static"), *[scores[k] for k in layers]], marker="o", label=name)
        if "word2vec" in scores and name == "full":
            ax.axhline(scores["word2vec"], color="black", linestyle="--", label="word2vec (same corpus)")
    ax.set_xticks(range(-1, results["config"]["num_hidden_layers"] + 1),
                  ["static", *map(str, range(results["config"]["num_hidden_layers"] + 1))])
    ax.set_xlabel("vectors (static embedding, then layer)"), ax.set_ylabel("WordSim-353 Spearman")
    ax.legend(fontsize=7)
    save(fig, "word_similarity.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in ("untrained", "full", "identity_qkv", "attention_only"):
        heads = results["probes"][name].get("heads")
        if heads:
            ax.plot(within_layer_js(heads), marker="o", label=name)
    ax.set_xlabel("layer"), ax.set_ylabel("mean JS divergence between heads")
    ax.set_title("Do heads of one layer attend differently?", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, "head_diversity.png")

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, style in (("full", "-"), ("untrained", ":")):
        related = results["extras"][name]["related_words"]
        sets = list(related)
        for pair in related[sets[0]]:
            ax.plot(range(len(sets)), [related[s][pair] if related[s][pair] is not None else np.nan for s in sets],
                    style, marker="o", label=f"{pair} ({name})")
    ax.set_xticks(range(len(sets)), [s.replace("layer_", "") for s in sets])
    ax.set_xlabel("vectors (static, then layer)"), ax.set_ylabel("cosine similarity")
    ax.legend(fontsize=6)
    save(fig, "related_words.png")

    graph = results["probes"]["full"].get("attention_graph")
    if graph and "q7" in answers:
        layer = answers["q7"]["layer"]
        nodes = graph["nodes"]
        angle = np.linspace(0, 2 * np.pi, len(nodes), endpoint=False)
        xy = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        fig, ax = plt.subplots(figsize=(6, 6))
        for e in graph["edges"]:
            if e["layer"] == layer and e["head"] == "mean" and e["source"] != e["target"]:
                ax.annotate("", xy=xy[e["target"]], xytext=xy[e["source"]],
                            arrowprops=dict(arrowstyle="->", alpha=min(1.0, 0.2 + e["weight"]), lw=0.5 + 4 * e["weight"],
                                            color="tab:blue", connectionstyle="arc3,rad=0.15"))
        for (x, y), node in zip(xy, nodes):
            ax.text(x * 1.12, y * 1.12, node["label"], ha="center", va="center", fontsize=8)
        ax.scatter(xy[:, 0], xy[:, 1], s=30, color="tab:orange", zorder=3)
        ax.set_title(f"Layer {layer}, mean over heads: an edge a -> b means a attends to b", fontsize=9)
        ax.set_xlim(-1.35, 1.35), ax.set_ylim(-1.35, 1.35), ax.axis("off")
        save(fig, "attention_graph.png")

    # Figures the probes already drew, copied next to the rest so FINDINGS.md's folder is self-contained.
    for name, figure in (("full", "geometry"), ("full", "sense"), ("full", "head_map"), ("untrained", "head_map"),
                         ("full", "heads"), ("full", "weights"), ("full", "attention_example")):
        source = os.path.join(out, "probes", name, f"{figure}.png")
        if os.path.isfile(source):
            shutil.copy(source, os.path.join(folder, f"{name}_{figure}.png"))
            paths[f"{name}_{figure}"] = f"figures/{name}_{figure}.png"
    return paths


# ---------------------------------------------------------------- FINDINGS.md


# What counts as a difference worth a word in the answers (the numbers are always printed beside it).
LOSS_TOLERANCE = 1.01  # losses within 1% are "the same"
JS_MARGIN = 0.01  # nats of mean Jensen-Shannon divergence
CORRELATION_MARGIN = 0.02


def compare_words(loss, reference, worse, same, better):
    if loss > LOSS_TOLERANCE * reference:
        return worse
    return better if loss * LOSS_TOLERANCE < reference else same


def _mean(values):
    values = [x for x in values if x is not None]
    return float(np.mean(values)) if values else 0.0


def _list(values):
    return ", ".join("n/a" if v is None else str(v) for v in values)


def _pairs(related):
    return ", ".join(f"{pair} {value}" for pair, value in related.items() if value is not None) or "pairs not in the corpus"


def render_findings(results: dict, figures: dict) -> str:
    a, s, v = results["answers"], results["settings"], results["variants"]
    L = results["config"]["num_hidden_layers"]
    fig = lambda name, caption: f"\n![{caption}]({figures[name]})\n" if name in figures else ""  # noqa: E731
    lines = [
        "# Findings: what self-attention training does, measured",
        "",
        f"Produced by `{results['command']}` on {results['machine']} ({results['date']}), in "
        f"{results['minutes']} minutes. Every variant trained with the same data (the Wikipedia sample bundled with "
        f"gensim), the same {s['max_steps']} steps of batch {s['batch_size']} sequences of {s['max_seq_length']} "
        f"tokens and the same seed {results['seed']}; the model is {L} layers, hidden size "
        f"{results['config']['hidden_size']}, {results['config']['num_attention_heads']} heads. "
        "All numbers below are in `results.json`. The run's output folder also holds each variant's model with its "
        "model card (`models/`) and probe report (`probes/<variant>/report.html`).",
        "",
        "| variant | what it is | validation loss | perplexity | masked-token accuracy |",
        "| --- | --- | --- | --- | --- |",
    ]
    for variant in VARIANTS:
        row = v[variant.name]
        lines.append(f"| {variant.name} | {variant.description} | {row['eval_loss']} | {row['perplexity']} | {row['accuracy']} |")
    lines.append(fig("loss_curves", "validation loss of every variant"))

    q1 = a["q1"]
    d = q1["drift"]
    lines += [
        "## 1. Are the input embedding vectors updated during training, or only W_Q, W_K, W_V?",
        "",
        f"**{'Yes' if q1['embeddings_updated'] else 'No'}: backpropagation updates the input embeddings like every "
        "other weight.** W_Q, W_K, W_V are not special: the loss gradient reaches the embedding rows of every token in "
        "the batch through all the layers above them.",
        "",
        f"- After {q1['steps']} steps, relative distance from the initial value ||W - W_init|| / ||W_init||: word "
        f"embeddings {d.get('word_embeddings')}, position embeddings {d.get('position_embeddings')}, "
        f"W_Q {d.get('W_Q')}, W_K {d.get('W_K')}, W_V {d.get('W_V')}, W_O {d.get('W_O')} (mean over layers).",
        f"- Mean gradient norm during training: word embeddings {q1['grad_norm'].get('word_embeddings')}, "
        f"W_Q {q1['grad_norm'].get('W_Q')}, W_K {q1['grad_norm'].get('W_K')}, W_V {q1['grad_norm'].get('W_V')}.",
        f"- Control: in the frozen variant the word embeddings moved {q1['frozen_word_embeddings_drift']}.",
        "- The output layer is untied from the embeddings in these runs, so the embedding updates come only from "
        "their role as inputs.",
        fig("drift", "distance from initialisation"),
    ]

    q2 = a["q2"]
    helps = q2["loss_frozen"] > LOSS_TOLERANCE * q2["loss_trained"]
    lines += [
        "## 2. If W_Q, W_K, W_V are trained, is there any need to train the input embeddings?",
        "",
        (f"**Yes, training them pays: with the embeddings frozen at random values the validation loss is "
         f"{q2['loss_frozen']} instead of {q2['loss_trained']}.**" if helps else
         f"**Hardly, at this scale: frozen random embeddings reach {q2['loss_frozen']} against {q2['loss_trained']}.**")
        + " Random vectors are still distinct, so the layers above can learn to read them, but they carry no "
        "similarity between related words until training puts it there.",
        "",
        f"- Validation loss: trained embeddings {q2['loss_trained']} (perplexity {q2['perplexity_trained']}), frozen "
        f"{q2['loss_frozen']} (perplexity {q2['perplexity_frozen']}), untrained model {q2['loss_untrained']}.",
        f"- The frozen variant achieves {q2['frozen_share_of_improvement']}% of the full model's loss reduction over "
        "the untrained model.",
        "",
    ]

    q3 = a["q3"]
    lines += [
        "## 3. Are W_Q and W_K the embedding matrix? What if W_Q = W_K = W_V = I?",
        "",
        f"**No: they are separate matrices with their own shapes and their own gradients.** The embedding matrix is "
        f"{q3['embedding_shape'][0]} x {q3['embedding_shape'][1]} (one row per token); each layer's W_Q and W_K are "
        f"{q3['projection_shape'][0]} x {q3['projection_shape'][1]}, read as {q3['heads']} heads of "
        f"{q3['head_dim']} dimensions, and map any hidden vector, not tokens. Removing them (W_Q = W_K = W_V = I) "
        + compare_words(q3["loss_identity"], q3["loss_learned"], "costs quality", "changes little here", "helps here")
        + f": validation loss {q3['loss_identity']} instead of {q3['loss_learned']}.",
        "",
        f"- Cosine between each layer's QK circuit sum_h W_Q[h]^T W_K[h] and the embeddings' Gram matrix E^T E: "
        f"{_list(q3['qk_gram_cosine_trained'])} after training, {_list(q3['qk_gram_cosine_init'])} at "
        "initialisation. Near 0 means the attention's bilinear form is not the embeddings' own similarity.",
        f"- The identity variant achieves {q3['identity_share_of_improvement']}% of the full model's loss reduction; "
        f"the projections are {q3['projection_parameters']} of the encoder's {q3['parameters']} parameters. "
        "Without them every head compares raw slices of the hidden vector: queries and keys are the same "
        "vectors, so each token's attention score to itself is a squared norm and other similarities are fixed.",
        f"- For comparison, dropping the feed-forward sublayers instead (attention-only) gives loss "
        f"{q3['loss_attention_only']} ({q3['attention_only_share_of_improvement']}% of the reduction).",
        "",
    ]

    q4 = a["q4"]
    roles = {}
    for head in q4["roles_trained"].values():
        roles[head["role"]] = roles.get(head["role"], 0) + 1
    more = _mean(q4["js_within_layer_trained"]) > _mean(q4["js_within_layer_init"]) + JS_MARGIN
    lines += [
        "## 4. Where do the weight matrices come from, and do different heads end up doing different things?",
        "",
        "**From a random initialisation (normal, std initializer_range), then gradient descent. "
        + ("Training makes heads of the same layer attend differently" if more else
           "Here the heads did not become more diverse than at initialisation")
        + ".** At initialisation the heads attend almost uniformly, so they behave alike; the different random "
        "starts break the symmetry and give each head a different gradient, and heads drift to different roles.",
        "",
        f"- Mean Jensen-Shannon divergence between heads of the same layer, per layer: "
        f"{_list(q4['js_within_layer_init'])} at initialisation, {_list(q4['js_within_layer_trained'])} trained.",
        f"- Mean attention entropy: {q4['entropy_init']} at initialisation, {q4['entropy_trained']} trained "
        f"(uniform attention: {q4['uniform_entropy']}).",
        "- Most pronounced behaviour of each trained head: "
        + ", ".join(f"{head} {info['role']} ({info['weight']})" for head, info in q4["roles_trained"].items()) + ".",
        fig("head_diversity", "head diversity"),
        fig("untrained_head_map", "heads at initialisation (MDS of JS distances)"),
        fig("full_head_map", "heads after training"),
    ]

    q5 = a["q5"]
    cooc_static, cooc_init = q5["cooccurrence_spearman_static"], q5["cooccurrence_spearman_static_untrained"]
    lines += [
        "## 5. Does training put words that occur together, or that are related, close together?",
        "",
        ("**Yes: after training, the static vectors of words that co-occur are more similar**" if
         cooc_static > cooc_init + CORRELATION_MARGIN else "**Not measurably in the static vectors at this scale**")
        + f" (Spearman correlation between co-occurrence PPMI and cosine over the {q5['cooccurrence_top_words']} most "
        f"frequent words: {cooc_static} trained, {cooc_init} at initialisation, {q5['cooccurrence_spearman_static_frozen']} "
        f"with frozen embeddings; {q5['cooccurrence_spearman_last_layer']} for the last layer's contextual vectors).",
        "",
        f"- Cosine of related and unrelated pairs, static vectors: {_pairs(q5['related_static'])} "
        f"(at initialisation: {_pairs(q5['related_static_untrained'])}); last layer: {_pairs(q5['related_last_layer'])}.",
        f"- WordSim-353 Spearman of the static vectors: {q5['wordsim_static']} against {q5['wordsim_word2vec']} for "
        f"word2vec trained on the same corpus (pairs out of vocabulary: {q5['wordsim_oov']}).",
        fig("related_words", "related word pairs"),
        fig("word_similarity", "word similarity by layer"),
    ]

    q6 = a["q6"]
    lines += [
        "## 6. What do the contextual embeddings capture that the static ones do not?",
        "",
        "**Context: a static vector is the same in every sentence, a contextual one moves with the sentence.** "
        "The adjusted self-similarity of a word's occurrences (identical occurrences would score one) shows how much.",
        "",
        f"- Adjusted self-similarity by layer (embedding output first): {_list(q6['adjusted_self_similarity'])} "
        f"(anisotropy baseline: {_list(q6['anisotropy'])}; {q6['words_scored']} words scored).",
        f"- WordSim-353 by layer (embedding output first): {_list(q6['wordsim_by_layer'])}.",
    ]
    if q6["sense"]:
        lines.append(f"- '{q6['sense']['word']}' in two senses, cosine between occurrences by layer: same sense "
                     f"{_list(q6['sense']['same_sense'])}, different sense {_list(q6['sense']['other_sense'])}.")
    lines += [fig("full_geometry", "geometry by layer"), fig("full_sense", "one word in several sentences")]

    if "q7" in a:
        q7 = a["q7"]
        lines += [
            "## 7. Is self-attention a graph?",
            "",
            "**Yes: each head's attention weights are a weighted directed graph over the tokens** (every row sums "
            "to one: an edge a -> b with weight w means a takes fraction w of its update from b). "
            f"For \"{q7['sentence']}\" ({q7['nodes']} nodes), layer {q7['layer']} averaged over heads has "
            f"{q7['edges']} edges of weight at least {q7['threshold']} between different words.",
            "",
            "- Strongest edges: " + ", ".join(f"{src} -> {dst} ({w})" for src, dst, w in q7["strongest"]) + ".",
            "- The whole graph, every layer and head, is in `probes/full/attention_graph.json`.",
            fig("attention_graph", "attention as a graph"),
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the command


def machine_description() -> str:
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} x {cpu}, torch {torch.__version__}, transformers {transformers.__version__}"


def variant_metrics(folder: str) -> dict:
    with open(os.path.join(folder, "eval_results.json")) as f:
        metrics = json.load(f)
    return {"eval_loss": r(metrics["eval_loss"]), "perplexity": r(metrics["eval_perplexity"], 2),
            "accuracy": r(metrics.get("eval_accuracy")), "curve": eval_curve(folder)}


def run_experiments(out: str, quick: bool = False, seed: int = 0, command: str = "hf-minattn experiments") -> dict:
    """Train, probe, answer; writes `out/results.json`, `out/FINDINGS.md` and `out/figures/`."""
    start = time.perf_counter()
    settings = SETTINGS["quick" if quick else "full"]
    for sub in ("models", "logs", "probes"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    folders = train_variants(out, settings, seed)
    probes, extras = probe_variants(out, folders, settings, seed)
    with open(os.path.join(folders["full"], "config.json")) as f:
        config = json.load(f)
    results = {
        "command": command, "machine": machine_description(), "date": time.strftime("%Y-%m-%d"), "seed": seed,
        "settings": {**settings, "quick": quick},
        "config": {k: config[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                          "intermediate_size", "max_position_embeddings")},
        "folders": folders,
        "variants": {name: {**variant_metrics(folder), "description": v.description}
                     for (name, folder), v in zip(folders.items(), VARIANTS)},
        "probes": probes, "extras": extras,
    }
    results["answers"] = answer_questions(results)
    results["minutes"] = r((time.perf_counter() - start) / 60, 1)
    figures = make_figures(results, out)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, allow_nan=False, default=str)
    with open(os.path.join(out, "FINDINGS.md"), "w") as f:
        f.write(render_findings(results, figures))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hf-minattn experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output folder (a rerun skips the variants already trained there)")
    parser.add_argument("--quick", action="store_true", help="tiny models and few steps: minutes, for tests")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    command = "hf-minattn experiments" + (" --quick" if args.quick else "") + f" --out {args.out}"
    results = run_experiments(args.out, quick=args.quick, seed=args.seed, command=command)
    log(f"done in {results['minutes']} min")
    log(f"findings: {os.path.join(args.out, 'FINDINGS.md')}")
    log(f"figures:  {os.path.join(args.out, 'figures')}")
    log(f"models:   {os.path.join(args.out, 'models')} (each with its model card)")
    log(f"probes:   {os.path.join(args.out, 'probes')} (report.html per variant)")
    return 0
