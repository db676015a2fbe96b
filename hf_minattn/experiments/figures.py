"""The figures of FINDINGS.md, drawn from results.json (and the per-row drift arrays in rows.npz)."""

import os
import shutil

import numpy as np

from .answers import within_layer_js


def make_figures(results: dict, out: str) -> dict:
    """Draw every figure into out/figures; returns {name: relative path} for those drawn."""
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

    # Validation loss during training (mean over seeds), with the unigram floor of the same tokens.
    fig, ax = plt.subplots(figsize=(6.5, 4))
    floors = []
    for name, v in variants.items():
        curves = [row["curve"] for row in v["seeds"] if row.get("curve")]
        if not curves:
            continue
        steps = sorted(set.intersection(*(set(c["steps"]) for c in curves)))
        mean = [np.mean([c["eval_loss"][c["steps"].index(s)] for c in curves]) for s in steps]
        ax.plot(steps, mean, marker=".", label=f"{name} (mean of {len(curves)} seeds)")
        floors += [u for c in curves for u in c["unigram_loss"] if u is not None]
    if floors:
        ax.axhline(np.mean(floors), color="black", linestyle="--", label="unigram floor (same tokens)")
    ax.set_xlabel("training step"), ax.set_ylabel("validation loss (masked LM, nats)")
    ax.set_title("Same data, steps and seeds", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, "loss_curves.png")

    # Learning dynamics: gain over the unigram floor and word similarity, full and frozen, 95% intervals over seeds.
    similarity = answers["q2"].get("similarity")
    fig, axes = plt.subplots(1, 2 if similarity else 1, figsize=(12 if similarity else 6.5, 4), squeeze=False)
    ax = axes[0, 0]
    for key, label in (("gain_full", "full"), ("gain_frozen", "frozen_embeddings")):
        curve = answers["q2"][key]
        points = [(s, g) for s, g in zip(curve["steps"], curve["gain"]) if g is not None]
        if points:
            steps = [s for s, _ in points]
            ax.plot(steps, [g["estimate"] for _, g in points], marker="o", label=label)
            ax.fill_between(steps, [g["low"] for _, g in points], [g["high"] for _, g in points], alpha=0.2)
    ax.axhline(0, color="black", linestyle="--", label="unigram floor")
    ax.set_xlabel("training step"), ax.set_ylabel("unigram loss - validation loss (nats)")
    ax.legend(fontsize=7)
    if similarity:
        ax = axes[0, 1]
        last = f"layer_{results['config']['num_hidden_layers']}"
        for variant in ("full", "frozen_embeddings"):
            for name, style in (("static", "--"), (last, "-")):
                x = similarity[variant][name]
                points = [(s, p) for s, p in zip(x["steps"], x["spearman"]) if p is not None]
                if points:
                    steps = [s for s, _ in points]
                    ax.plot(steps, [p["estimate"] for _, p in points], style, marker="o", label=f"{variant}, {name}")
                    ax.fill_between(steps, [p["low"] for _, p in points], [p["high"] for _, p in points], alpha=0.15)
        ax.axhline(0, color="black", linestyle=":")
        ax.set_xlabel("training step"), ax.set_ylabel("WordSim-353 Spearman")
        ax.legend(fontsize=7)
    save(fig, "learning_dynamics.png")

    # Per-row drift against training count (first seed).
    rows_path = os.path.join(out, "rows.npz")
    if os.path.isfile(rows_path):
        rows = np.load(rows_path)
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ax.scatter(rows["counts"] + 1, rows["full_drift"], s=2, alpha=0.4, label="full")
        ax.scatter(rows["counts"] + 1, rows["frozen_drift"], s=2, alpha=0.4, label="frozen_embeddings")
        ax.set_xscale("log"), ax.set_xlabel("training-split count + 1"), ax.set_ylabel("||e_final - e_init||")
        ax.legend(fontsize=7)
        save(fig, "row_drift.png")

    # Distance from initialisation per matrix kind (drift.json of the first seed).
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    kinds = ["word_embeddings", "position_embeddings", "W_Q", "W_K", "W_V", "W_O"]
    names = [n for n in ("full", "frozen_embeddings", "identity_qkv") if results["drift"].get(n)]
    for i, name in enumerate(names):
        summary = results["drift"][name]
        left.bar(np.arange(len(kinds)) + (i - 1) * 0.27, [summary["drift"].get(k) or 0 for k in kinds], 0.27, label=name)
    left.set_xticks(range(len(kinds)), [k.replace("_embeddings", " emb.") for k in kinds], fontsize=8)
    left.set_ylabel("||W - W_init|| / ||W_init|| at the end"), left.legend(fontsize=7)
    series = results["drift"]["full"]["series"]
    for kind in kinds:
        if kind in series:
            right.plot(series["steps"], series[kind], label=kind)
    right.set_xlabel("training step"), right.set_title("full model: relative distance from initialisation", fontsize=9)
    right.legend(fontsize=7)
    save(fig, "drift.png")

    if not results.get("probes"):
        return paths
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, probe in results["probes"].items():
        scores = {s["vectors"]: s["wordsim353"] for s in (probe.get("benchmarks") or {}).get("scores", [])}
        layers = [k for k in scores if k.startswith("layer_")]
        if not layers:
            continue
        values = [scores.get("static"), *[scores[k] for k in layers]]
        ax.plot(range(-1, len(layers)), [np.nan if v is None else v for v in values], marker="o", label=name)
        if scores.get("word2vec") is not None and name == "full":
            ax.axhline(scores["word2vec"], color="black", linestyle="--", label="word2vec (same corpus)")
    ax.set_xticks(range(-1, results["config"]["num_hidden_layers"] + 1),
                  ["static", *map(str, range(results["config"]["num_hidden_layers"] + 1))])
    ax.set_xlabel("vectors (static embedding, then layer)"), ax.set_ylabel("WordSim-353 Spearman")
    ax.legend(fontsize=7)
    save(fig, "word_similarity.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in ("untrained", "full", "identity_qkv", "attention_only"):
        heads = results["probes"].get(name, {}).get("heads")
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
