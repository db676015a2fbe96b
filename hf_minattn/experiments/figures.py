"""The figures of FINDINGS.md, drawn from results.json (and the per-row drift arrays in rows.npz)."""

import os
import shutil

import numpy as np



def make_figures(results: dict, out: str, figure_format: str = "both") -> dict:
    """Draw every figure into out/figures as PNG, SVG or both (`figure_format`); returns {name: relative path} for
    those drawn (the PNG when there is one)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hf_minattn.probes.plots import figure_suffixes, save_figure

    suffixes = figure_suffixes(figure_format)
    folder = os.path.join(out, "figures")
    os.makedirs(folder, exist_ok=True)
    paths = {}

    def save(fig, name):
        written = save_figure(fig, os.path.join(folder, name), figure_format, dpi=110)
        paths[name.removesuffix(".png")] = f"figures/{os.path.basename(written)}"

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

    allocations = [row for row in (results.get("loss_allocation") or {}).values() if row]
    if allocations:  # cumulative allocation per group, mean over seeds (the seeds share their steps)
        fig, ax = plt.subplots(figsize=(6.5, 4))
        steps = allocations[0]["curve"]["steps"]
        same = [row for row in allocations if row["curve"]["steps"] == steps]
        for name in allocations[0]["curve"]["groups"]:
            if name in ("W_Q", "W_K", "W_V", "W_O") or not all(name in row["curve"]["groups"] for row in same):
                continue  # attention is drawn as one group
            ax.plot(steps, np.mean([row["curve"]["groups"][name] for row in same], axis=0), label=name)
        ax.plot(steps, np.mean([row["curve"]["observed"] for row in same], axis=0), color="black", linestyle="--",
                label="observed loss change")
        ax.set_xlabel("training step"), ax.set_ylabel("cumulative allocation (nats; < 0: lowered the loss)")
        ax.set_title(f"Loss change allocation, full model (mean of {len(same)} seeds)", fontsize=9)
        ax.legend(fontsize=7)
        save(fig, "loss_allocation.png")

    if "q4" not in answers:
        return paths

    def errorbar(ax, xs, intervals, **kwargs):
        """Means over seeds with their 95% intervals as error bars (None where missing)."""
        mean = np.array([np.nan if i is None else i["estimate"] for i in intervals])
        low = np.array([np.nan if i is None else i["estimate"] - i["low"] for i in intervals])
        high = np.array([np.nan if i is None else i["high"] - i["estimate"] for i in intervals])
        ax.errorbar(xs, mean, yerr=[low, high], marker="o", capsize=3, **kwargs)

    q5, layers = answers["q5"], results["config"]["num_hidden_layers"]
    key = q5.get("key")
    scores = (q5.get("word_pairs") or {}).get(key) or {}
    if scores:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for name in ("full", "untrained"):
            errorbar(ax, range(-1, layers + 1), [scores.get(f"{name}/static")]
                     + [scores.get(f"{name}/layer_{k}") for k in range(layers + 1)], label=name)
        for system, style in (("word2vec", "--"), ("random", ":")):
            if scores.get(system):
                ax.axhline(scores[system]["estimate"], color="black", linestyle=style, label=f"{system} (same corpus)")
        ax.set_xticks(range(-1, layers + 1), ["static", *map(str, range(layers + 1))])
        ax.set_xlabel("vectors (static embedding, then layer)"), ax.set_ylabel("WordSim-353 Spearman")
        ax.set_title("mean over seeds, 95% hierarchical bootstrap (seeds, pairs)", fontsize=9)
        ax.legend(fontsize=7)
        save(fig, "word_similarity.png")

    q4 = answers["q4"]
    fig, ax = plt.subplots(figsize=(6, 4))
    errorbar(ax, range(len(q4["js_within_layer_trained"])), q4["js_within_layer_trained"], label="trained")
    errorbar(ax, range(len(q4["js_within_layer_init"])), q4["js_within_layer_init"], label="untrained")
    if q4.get("divergence"):
        errorbar(ax, range(len(q4["divergence"]["matched_across_seeds"])), q4["divergence"]["matched_across_seeds"],
                 label="trained: matched heads across seeds")
    ax.set_xlabel("layer"), ax.set_ylabel("mean JS divergence between heads")
    ax.set_title("Do heads of one layer attend differently? (mean over seeds, 95% t-interval)", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, "head_diversity.png")

    over = q4.get("over_training")
    if over:
        save(draw_head_dynamics(plt, over), "head_dynamics.png")

    circuits = answers.get("q3_circuits")
    if circuits:  # layer 0's QK form against each hypothesis, per variant (head mean, over seeds)
        names = [n for n in ("full", "qkv_from_identity", "identity_qkv") if n in circuits]
        hypotheses = ("identity", "cooccurrence", "initial")
        fig, ax = plt.subplots(figsize=(7, 4))
        for k, hypothesis in enumerate(hypotheses):
            errorbar(ax, np.arange(len(names)) + 0.2 * (k - 1), [circuits[n][hypothesis] for n in names],
                     linestyle="none", label={"identity": "LN(E) LN(E)^T (W = I)", "cooccurrence": "co-occurrence PPMI",
                                              "initial": "form at initialisation"}[hypothesis])
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_xticks(range(len(names)), names), ax.set_ylabel("Spearman with layer 0's query-key form")
        ax.set_title("Which hypothesis does W_Q^T W_K follow? (mean over heads and seeds, 95% t-interval)", fontsize=9)
        ax.legend(fontsize=7)
        save(fig, "circuits.png")

    lens = answers.get("q6", {}).get("logit_lens")
    if lens:
        fig, ax = plt.subplots(figsize=(6, 4))
        errorbar(ax, range(len(lens["gain"])), lens["gain"], label="trained")
        if lens["gain_untrained"]:
            errorbar(ax, range(len(lens["gain_untrained"])), lens["gain_untrained"], label="untrained")
        ax.axhline(0, color="black", linestyle="--", label="unigram floor")
        ax.set_xticks(range(len(lens["gain"])))
        ax.set_xlabel("layer decoded by the MLM head (0 = embedding output)")
        ax.set_ylabel("unigram loss - layer's loss (nats)")
        ax.set_title("Logit lens: mean over seeds, 95% t-interval", fontsize=9), ax.legend(fontsize=7)
        save(fig, "logit_lens.png")

    related = q5.get("related") or {}
    # the pairs every system scored (a small corpus may hold none: then no figure, rather than empty axes)
    pairs = [(pair, style) for pair, style in (("king/queen", "-"), ("king/dog", ":"), ("man/woman", "-"),
                                               ("man/river", ":")) if related and all(pair in r for r in related.values())]
    if pairs:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        systems = list(related)
        for pair, style in pairs:
            errorbar(ax, range(len(systems)), [related[s][pair] for s in systems], linestyle=style, label=pair)
        ax.set_xticks(range(len(systems)), [s.replace("layer_", "layer ") for s in systems])
        ax.set_ylabel("cosine (after All-but-the-Top where anisotropic)")
        ax.set_title("full model, mean over seeds", fontsize=9), ax.legend(fontsize=7)
        save(fig, "related_words.png")

    graph_path = os.path.join(out, "probes", "full", f"seed{results['seeds'][0]}", "probes.json")
    if "q7" in answers and os.path.isfile(graph_path):
        import json

        from hf_minattn.probes.plots import graph_panel

        with open(graph_path) as f:
            probe = json.load(f)
        graphs = [(title, probe.get(k)) for title, k in (("raw attention", "attention_graph"),
                                                         ("norm-weighted", "attention_graph_norm_weighted"),
                                                         ("rollout", "attention_graph_rollout")) if probe.get(k)]
        fig, axes = plt.subplots(1, len(graphs), figsize=(5 * len(graphs), 5))
        for ax, (title, graph) in zip(np.atleast_1d(axes), graphs):
            graph_panel(ax, graph, answers["q7"]["layer"], f"{title}, layer {answers['q7']['layer']} (first seed)")
        save(fig, "attention_graph.png")

    # Figures the probes already drew, copied next to the rest so FINDINGS.md's folder is self-contained.
    for name, figure in (("full", "geometry"), ("full", "sense"), ("full", "head_map"), ("untrained", "head_map"),
                         ("full", "heads"), ("full", "weights"), ("full", "attention_example")):
        for suffix in reversed(suffixes):  # the PNG last: the path given is the PNG when there is one
            source = os.path.join(out, "probes", name, f"seed{results['seeds'][0]}", f"{figure}{suffix}")
            if os.path.isfile(source):
                shutil.copy(source, os.path.join(folder, f"{name}_{figure}{suffix}"))
                paths[f"{name}_{figure}"] = f"figures/{name}_{figure}{suffix}"
    return paths


def draw_head_dynamics(plt, over: dict):
    """The heads at every saved state (mean over seeds, 95% t-interval as a band) beside the gain over the unigram
    floor, one panel per measure; dashed: the mean plateau exit step, dotted: the mean specialisation step."""
    steps = over["steps"]
    panels = [(("gain",), "gain over the unigram floor (nats)"),
              (("within_layer_js",), "within-layer JS divergence"),
              (("heads_with_role",), f"heads with a role (of {over['heads']})"),
              (("max_role_mass", "max_role_ratio"), "largest role mass (left), / uniform (right)"),
              (("ablation_max", "ablation_mean"), "ablation cost (nats): costliest head, mean"),
              (("qk_effective_rank",), f"effective rank of W_Q^T W_K (max {over['head_dim']})")]
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex=True)
    labels = {"max_role_mass": "mass", "max_role_ratio": "mass / uniform", "ablation_max": "costliest head",
              "ablation_mean": "mean over heads"}

    def band(ax, intervals, **kwargs):
        points = [(s, i) for s, i in zip(steps, intervals) if i is not None]
        if not points:
            return
        xs = [s for s, _ in points]
        line, = ax.plot(xs, [i["estimate"] for _, i in points], marker="o", markersize=3, **kwargs)
        ax.fill_between(xs, [i["low"] for _, i in points], [i["high"] for _, i in points], alpha=0.2,
                        color=line.get_color())

    for ax, (names, title) in zip(axes.ravel(), panels):
        for k, name in enumerate(names):
            intervals = over["gain"] if name == "gain" else over["measures"][name]
            target = ax.twinx() if name == "max_role_ratio" else ax
            target.tick_params(labelsize=7)
            band(target, intervals, label=labels.get(name, name), color=f"C{k}")
        if names == ("gain",):
            ax.axhline(over["plateau_gain"], color="grey", linewidth=0.8, label="plateau exit threshold")
        for key, style in (("plateau_exit", "--"), ("specialisation", ":")):
            if over.get(key):
                ax.axvline(over[key]["estimate"], color="black", linestyle=style, linewidth=0.8,
                           label=f"{key.replace('_', ' ')} (mean step)")
        ax.set_title(title, fontsize=8), ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(labelsize=7)
        if ax is axes[0, 0] or len(names) > 1:
            ax.legend(fontsize=6)
    fig.suptitle(f"Heads during training, full model (mean over {over['seeds']} seeds, 95% t-interval)", fontsize=9)
    return fig
