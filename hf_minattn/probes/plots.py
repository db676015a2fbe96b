"""Matplotlib figures from the probe numbers (the dict written to probes.json); one function per figure.

Each function takes the results dict `r`, an output path and a `figure_format` ('png', 'svg' or 'both'; None: the
format of the path's suffix), writes the figure (`save_figure`) and returns the path of the first file written, the
PNG when there is one (or None when the numbers it needs are absent)."""

import os
from dataclasses import asdict
from functools import partial

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FixedLocator, MaxNLocator  # noqa: E402

FIGURE_FORMATS = ("png", "svg", "both")
# Text stays text in the SVGs (smaller than glyph outlines, searchable); ids hashed with a fixed salt and no date, so
# the same figure gives the same file.
SVG_STYLE = {"svg.fonttype": "none", "svg.hashsalt": "hf-minattn"}


def figure_suffixes(figure_format):
    """The file suffixes a figure format writes: ('.png',), ('.svg',) or ('.png', '.svg') for 'both'."""
    if figure_format not in FIGURE_FORMATS:
        raise ValueError(f"figure format {figure_format!r} is not one of {', '.join(FIGURE_FORMATS)}")
    return (".png", ".svg") if figure_format == "both" else (f".{figure_format}",)


def integer_ticks(fig):
    """Whole-number ticks on every axis labelled as layers or heads (colour bars included): never 'layer 0.5'.
    Ticks placed by hand (set_xticks) are kept."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if (axis.get_label_text().strip().lower().startswith(("layer", "head"))
                    and not isinstance(axis.get_major_locator(), FixedLocator)):
                axis.set_major_locator(MaxNLocator(integer=True))


def save_figure(fig, path, figure_format=None, dpi=90):
    """Write `fig` under path's name (its suffix replaced) as PNG, SVG or both (`figure_format`; None: the format
    of path's suffix), with integer ticks on its layer and head axes; closes it and returns the first file written,
    the PNG when there is one (a str or Path, as `path` is)."""
    stem, suffix = os.path.splitext(os.fspath(path))
    suffixes = figure_suffixes(suffix[1:].lower() if figure_format is None else figure_format)
    try:
        integer_ticks(fig)
        fig.tight_layout()
        for s in suffixes:
            if s == ".svg":
                with matplotlib.rc_context(SVG_STYLE):
                    fig.savefig(stem + s, dpi=dpi, metadata={"Date": None})
            else:
                fig.savefig(stem + s, dpi=dpi)
    finally:
        plt.close(fig)
    return type(path)(stem + suffixes[0]) if isinstance(path, os.PathLike) else stem + suffixes[0]


def geometry_plot(r, path, figure_format=None):
    g = r["geometry"]
    fig, (raw, adjusted) = plt.subplots(1, 2, figsize=(10, 3.8))
    for key, label in [("self_similarity", "self-similarity"), ("intra_similarity", "intra-sentence"),
                       ("mev", "max. explainable variance"), ("anisotropy", "baseline: random words"),
                       ("mev_baseline", "MEV baseline")]:
        raw.plot(g["layers"], g[key], marker="o", label=label, linestyle="--" if "baseline" in label else "-")
    for key, label in [("adjusted_self_similarity", "self-similarity"),
                       ("adjusted_intra_similarity", "intra-sentence"), ("adjusted_mev", "MEV")]:
        adjusted.plot(g["layers"], g[key], marker="o", label=label)
    if g.get("static"):  # the word embeddings alone (no position signal), beside layer 0
        adjusted.plot([0], [g["static"]["adjusted_self_similarity"]], marker="*", markersize=12, linestyle="none",
                      color="k", label="self-sim., word embeddings alone")
    raw.set_title("raw (dashed: anisotropy baselines)")
    adjusted.set_title("baseline-adjusted (raw - baseline)")
    for ax in (raw, adjusted):
        ax.set_xlabel("layer (0 = embedding output)")
        ax.legend(fontsize=8)
    return save_figure(fig, path, figure_format)


def bands_plot(r, path, figure_format=None):
    g = r["geometry"]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for band, values in g["adjusted_self_similarity_by_band"].items():
        if any(v is not None for v in values):
            ax.plot(g["layers"], [np.nan if v is None else v for v in values], marker="o",
                    label=f"rank {band} ({g['words_per_band'][band]} words)")
    ax.set_xlabel("layer")
    ax.set_ylabel("adjusted self-similarity")
    ax.set_title("context-specificity by word frequency")
    ax.legend(fontsize=8)
    return save_figure(fig, path, figure_format)


BENCHMARKS = (("wordsim353", "WordSim-353 (Spearman)"), ("simlex999", "SimLex-999 (Spearman)"),
              ("analogy", "Google analogies (3CosAdd acc.)"))


def benchmark_series(r):
    """{set family: [score per layer]} and {single set: score} from the benchmark list."""
    scores = {s["vectors"]: s for s in r["benchmarks"]["scores"]}
    layers = list(range(r["num_layers"] + 1))
    families = {"contextual (mean over corpus)": [scores.get(f"layer_{l}") for l in layers],
                "decontextualized (word alone)": [scores.get(f"decontext_{l}") for l in layers]}
    return layers, {k: v for k, v in families.items() if any(v)}, {k: scores[k] for k in ("static", "word2vec") if k in scores}


def benchmarks_plot(r, path, figure_format=None):
    if not r.get("benchmarks"):
        return None
    from .benchmark_report import benchmarks_plot as plot  # error bars and coverage from the typed results

    return plot(r, path, plt, partial(save_figure, figure_format=figure_format))


def sense_plot(r, path, figure_format=None):
    sense = r.get("sense")
    if not sense:
        return None
    n = len(sense["layers"])
    fig, axes = plt.subplots(1, n, figsize=(2.2 * n, 2.6), squeeze=False)
    for ax, layer, sim in zip(axes[0], sense["layers"], sense["similarity"]):
        ax.imshow(sim, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"layer {layer}", fontsize=9)
        ax.set_xticks(range(len(sim))), ax.set_yticks(range(len(sim)))
    fig.suptitle(f"cosine between the vectors of '{sense['word']}' in sentences 0..{len(sense['sentences']) - 1}", fontsize=10)
    return save_figure(fig, path, figure_format)


HEAD_STATS = (("entropy", "entropy (nats)"), ("self", "to self"), ("previous", "to previous"), ("next", "to next"),
              ("cls", "to [CLS]"), ("sep", "to [SEP]"), ("punctuation", "to punctuation"))


def heads_plot(r, path, figure_format=None):
    h = r.get("heads")
    if not h:
        return None
    fig, axes = plt.subplots(1, len(HEAD_STATS), figsize=(2.3 * len(HEAD_STATS), 0.5 * h["num_layers"] + 1.8))
    for ax, (key, title) in zip(axes, HEAD_STATS):
        _layer_by_head(fig, ax, np.array(h["stats"][key]), title, cmap="magma", vmin=0,
                       vmax=None if key == "entropy" else 1)
    return save_figure(fig, path, figure_format)


def _layer_by_head(fig, ax, values, title, label=None, fontsize=9, **imshow):
    """A (layers, heads) heat map with its colour bar."""
    im = ax.imshow(values, aspect="auto", **imshow)
    ax.set_title(title, fontsize=fontsize)
    ax.set_xlabel("head"), ax.set_ylabel("layer")
    fig.colorbar(im, ax=ax, fraction=0.046, label=label)


def head_map_plot(r, path, figure_format=None):
    h = r.get("heads")
    if not h:
        return None
    xy = np.array(h["mds"])
    layer = np.repeat(np.arange(h["num_layers"]), h["num_heads"])
    fig, ax = plt.subplots(figsize=(5, 4.2))
    points = ax.scatter(xy[:, 0], xy[:, 1], c=layer, cmap="viridis", s=40)
    for k, (x, y) in enumerate(xy):
        ax.annotate(f"{k // h['num_heads']}-{k % h['num_heads']}", (x, y), fontsize=6)
    fig.colorbar(points, ax=ax, label="layer")
    ax.set_title("heads by Jensen-Shannon distance (classical MDS)", fontsize=10)
    return save_figure(fig, path, figure_format)


def attention_example_plot(r, path, index=0, figure_format=None):
    h = r.get("heads")
    if not h or len(h["examples"]) <= index:
        return None
    ex = h["examples"][index]
    att = np.array(ex["attention"])
    L, H = att.shape[:2]
    fig, axes = plt.subplots(L, H, figsize=(2.0 * H, 2.0 * L), squeeze=False)
    ticks = range(len(ex["tokens"]))
    for l in range(L):
        for k in range(H):
            ax = axes[l][k]
            ax.imshow(att[l, k], cmap="Blues", vmin=0, vmax=1)
            ax.set_title(f"layer {l} head {k}", fontsize=7)
            ax.set_xticks(ticks), ax.set_yticks(ticks)
            ax.set_xticklabels(ex["tokens"] if l == L - 1 else [], rotation=90, fontsize=5)
            ax.set_yticklabels(ex["tokens"] if k == 0 else [], fontsize=5)
    return save_figure(fig, path, figure_format)


def weights_plot(r, path, figure_format=None):
    w = r.get("weights")
    if not w:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, circuit in zip(axes[:2], ("qk", "ov")):
        for label, spectra, style in [("trained", w["trained"], "-"), ("initial", w.get("initial"), ":")]:
            if not spectra:
                continue
            for layer, heads in enumerate(spectra[f"{circuit}_singular_values"]):
                normalised = np.mean([np.array(v) / max(v[0], 1e-12) for v in heads], axis=0)  # mean over heads
                ax.plot(normalised, style, color=plt.cm.viridis(layer / max(1, len(spectra[f"{circuit}_singular_values"]) - 1)),
                        label=f"{label} layer {layer}")
        ax.set_yscale("log")
        ax.set_title(f"{circuit.upper()} circuit spectrum (sigma_i / sigma_1, mean over heads)", fontsize=9)
        ax.set_xlabel("index")
        ax.legend(fontsize=6, ncol=2)
    ax = axes[2]
    for label, spectra, style in [("trained", w["trained"], "-"), ("initial", w.get("initial"), ":")]:
        if spectra:
            for circuit, marker in (("qk", "o"), ("ov", "s")):
                ranks = np.mean(spectra[f"{circuit}_effective_rank"], axis=1)
                ax.plot(ranks, style, marker=marker, label=f"{circuit.upper()} {label}")
    ax.axhline(w["head_dim"], color="grey", linewidth=0.8, label="head_dim (max)")
    ax.set_xlabel("layer")
    ax.set_title("effective rank (Roy & Vetterli), mean over heads", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path, figure_format)


def drift_plot(r, path, figure_format=None):
    d = r.get("drift")
    if not d or not d.get("metrics"):
        return None
    metrics = [m for m in ("drift", "grad_norm", "loss") if m in d["metrics"]] or list(d["metrics"])
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for name, series in d["metrics"][metric].items():
            ax.plot(series["steps"], series["values"], label=name)
        ax.set_title({"drift": "relative distance from init ||W-W0||/||W0||"}.get(metric, metric), fontsize=9)
        ax.set_yscale("log" if metric == "grad_norm" else "linear")
        ax.set_xlabel("training step")
        if len(d["metrics"][metric]) <= 12:
            ax.legend(fontsize=6)
    return save_figure(fig, path, figure_format)


FIGURES = {"geometry": geometry_plot, "bands": bands_plot, "benchmarks": benchmarks_plot, "sense": sense_plot,
           "heads": heads_plot, "head_map": head_map_plot, "attention_example": attention_example_plot,
           "attention_example_2": lambda r, path, figure_format=None: attention_example_plot(
               r, path, index=1, figure_format=figure_format),
           "weights": weights_plot, "drift": drift_plot}


# Issue 9 (heads, senses, attention graphs): roles relative to uniform, norm-weighted attention, head ablation,
# sense accuracy by layer.


def head_roles_plot(r, path, figure_format=None):
    h = r.get("heads")
    if not h or not h.get("relative_to_uniform"):
        return None
    keys = [(k, t) for k, t in HEAD_STATS if k != "entropy" and k in h["relative_to_uniform"]]
    fig, axes = plt.subplots(1, len(keys), figsize=(2.3 * len(keys), 0.5 * h["num_layers"] + 1.8), squeeze=False)
    for ax, (key, title) in zip(axes[0], keys):
        values = np.array([[np.nan if v is None else v for v in row] for row in h["relative_to_uniform"][key]], dtype=float)
        _layer_by_head(fig, ax, np.log2(np.maximum(values, 1e-3)), f"{title} / uniform", label="log2 ratio", fontsize=8,
                       cmap="RdBu_r", vmin=-4, vmax=4)
        ax.set_xticks(range(values.shape[1])), ax.set_yticks(range(values.shape[0]))  # whole heads and layers
    fig.suptitle("observed / uniform-attention expectation on the same queries (0 = as uniform)", fontsize=9)
    return save_figure(fig, path, figure_format)


def norm_weighting_plot(r, path, figure_format=None):
    h = r.get("heads")
    if not h or not h.get("norm_weighted_stats"):
        return None
    keys = [(k, t) for k, t in HEAD_STATS if k != "entropy" and k in h["norm_weighted_stats"]]
    raw = [np.mean(h["stats"][k]) for k, _ in keys]
    weighted = [np.mean(h["norm_weighted_stats"][k]) for k, _ in keys]
    x = np.arange(len(keys))
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.bar(x - 0.2, raw, 0.4, label="attention weight a_ij")
    ax.bar(x + 0.2, weighted, 0.4, label="norm-weighted share ||a_ij f(x_j)||")
    ax.set_xticks(x), ax.set_xticklabels([t for _, t in keys], fontsize=8)
    ax.set_ylabel("mean over heads and queries")
    ax.set_title("raw vs norm-weighted attention (Kobayashi et al. 2020)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path, figure_format)


def attention_norm_example_plot(r, path, index=0, figure_format=None):
    h = r.get("heads")
    if not h or len(h["examples"]) <= index or h["examples"][index].get("norm_weighted") is None:
        return None
    ex = h["examples"][index]
    raw, weighted = np.array(ex["attention"]).mean(1), np.array(ex["norm_weighted"]).mean(1)  # (L, T, T)
    L, n = raw.shape[0], raw.shape[-1]
    fig, axes = plt.subplots(2, L, figsize=(2.4 * L, 5.0), squeeze=False)
    for l in range(L):
        for row, (values, name) in enumerate(((raw, "raw"), (weighted, "norm-weighted"))):
            ax = axes[row][l]
            ax.imshow(values[l], cmap="Blues", vmin=0, vmax=min(1.0, 4.0 / n))
            ax.set_title(f"layer {l} {name}", fontsize=7)
            ax.set_xticks(range(n)), ax.set_yticks(range(n))
            ax.set_xticklabels(ex["tokens"] if row == 1 else [], rotation=90, fontsize=5)
            ax.set_yticklabels(ex["tokens"] if l == 0 else [], fontsize=5)
    fig.suptitle(f"head mean; colour scale saturates at 4/n = {4.0 / n:.2f} (uniform = 1/n)", fontsize=9)
    return save_figure(fig, path, figure_format)


def head_ablation_plot(r, path, figure_format=None):
    ablation = r.get("head_ablation")
    if not ablation:
        return None
    values = np.array(ablation["loss_increase"])
    fig, ax = plt.subplots(figsize=(0.6 * ablation["num_heads"] + 2.5, 0.5 * ablation["num_layers"] + 1.8))
    bound = max(float(np.abs(values).max()), 1e-6)
    _layer_by_head(fig, ax, values, f"masked-LM loss increase when one head is zeroed (base {ablation['base_loss']:.3f} "
                   "nats)", cmap="RdBu_r", vmin=-bound, vmax=bound)
    for (layer, head), v in np.ndenumerate(values):
        ax.text(head, layer, f"{v:.3f}", ha="center", va="center", fontsize=6)
    return save_figure(fig, path, figure_format)


def sense_accuracy_plot(r, path, figure_format=None):
    senses = r.get("sense_accuracy")
    if not senses:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(senses["layers"], senses["accuracy"], marker="o", color="k", label="all homonyms")
    for word, values in senses["accuracy_by_word"].items():
        ax.plot(senses["layers"], values, alpha=0.4, label=word)
    ax.axhline(senses["chance"], linestyle="--", color="grey", label="chance (1 / senses)")
    ax.axhline(senses["position_accuracy"], linestyle=":", color="red", label="position alone")
    ax.set_xlabel("layer (0 = embedding output)"), ax.set_ylabel("leave-one-out accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=6)
    return save_figure(fig, path, figure_format)


def graph_panel(ax, graph, layer, title):
    """One attention graph (probes.json's schema) at `layer` on a circle: an arrow a -> b for each head-mean edge
    between different nodes (a draws on b), its width and opacity growing with the weight."""
    nodes = graph["nodes"]
    angle = np.linspace(0, 2 * np.pi, len(nodes), endpoint=False)
    xy = np.stack([np.cos(angle), np.sin(angle)], axis=1)  # (nodes, 2)
    for e in graph["edges"]:
        if e["layer"] == layer and e["head"] == "mean" and e["source"] != e["target"]:
            ax.annotate("", xy=xy[e["target"]], xytext=xy[e["source"]],
                        arrowprops=dict(arrowstyle="->", alpha=min(1.0, 0.2 + e["weight"]), lw=0.5 + 4 * e["weight"],
                                        color="tab:blue", connectionstyle="arc3,rad=0.15"))
    for (x, y), node in zip(xy, nodes):
        ax.text(x * 1.15, y * 1.15, node["label"], ha="center", va="center", fontsize=7)
    ax.scatter(xy[:, 0], xy[:, 1], s=25, color="tab:orange", zorder=3)
    ax.set_title(title, fontsize=8)
    ax.set_xlim(-1.4, 1.4), ax.set_ylim(-1.4, 1.4), ax.axis("off")


GRAPH_PANELS = (("attention_graph", "raw attention"), ("attention_graph_norm_weighted", "norm-weighted"),
                ("attention_graph_rollout", "rollout"), ("attention_graph_flow", "flow"))


def attention_graphs_plot(r, path, figure_format=None):
    """The first example's raw, norm-weighted, rollout and flow graphs at the last layer, side by side."""
    rollout = r.get("attention_graph_rollout")
    if not rollout:
        return None
    layer = rollout["layers"][-1]
    panels = [(r[key], name) for key, name in GRAPH_PANELS if r.get(key)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), squeeze=False)
    for ax, (graph, name) in zip(axes[0], panels):
        graph_panel(ax, graph, layer, f"{name}, layer {layer} (edges >= {graph['threshold']:.2f})")
    fig.suptitle("a -> b: a draws on b (head mean; edges to itself left out)", fontsize=9)
    return save_figure(fig, path, figure_format)


def plot_logit_lens(lens, path, figure_format=None):
    """The logit lens (logit_lens.py; a LogitLens or its probes.json dict): masked-token loss by layer with its 95%
    interval and the unigram floor (left), top-1 accuracy (right)."""
    if not lens:
        return None
    lens = lens if isinstance(lens, dict) else asdict(lens)
    layers = np.arange(len(lens["loss"]))
    fig, (loss, accuracy) = plt.subplots(1, 2, figsize=(10, 3.8))
    loss.errorbar(layers, lens["loss"], yerr=[np.nan if v is None else v for v in lens["interval95"]], marker="o",
                  capsize=3, label="masked-token loss (95% interval)")
    if lens.get("floor") is not None:
        loss.axhline(lens["floor"], linestyle="--", color="grey", label=f"unigram floor ({lens['floor']:.2f})")
    loss.set_ylabel("cross-entropy (nats)")
    loss.set_title("each layer decoded through the final head", fontsize=10)
    loss.legend(fontsize=8)
    accuracy.plot(layers, lens["accuracy"], marker="o", color="k")
    accuracy.set_ylim(bottom=0)
    accuracy.set_ylabel("top-1 accuracy")
    accuracy.set_title(f"{lens['masked_tokens']} masked tokens", fontsize=10)
    for ax in (loss, accuracy):
        ax.set_xticks(layers)  # whole layers
        ax.set_xlabel("layer (0 = embedding output)")
    return save_figure(fig, path, figure_format)


CIRCUIT_HYPOTHESES = (("identity", "embedding similarity (W_Q = W_K = I)"), ("cooccurrence", "co-occurrence (PPMI)"),
                      ("initial", "initial form"))


def plot_circuits(circuits, path, figure_format=None):
    """Layer 0's circuits (circuits.py; a Circuits or its probes.json dict), grouped bars per head: Spearman's rho of
    the QK form with each hypothesis and its 95% interval (left), the OV copying score and the QK form's positive
    eigenvalue share (right)."""
    if not circuits:
        return None
    c = circuits if isinstance(circuits, dict) else asdict(circuits)
    heads = np.arange(c["num_heads"])
    fig, (rho, scores) = plt.subplots(1, 2, figsize=(max(10, 1.2 * len(heads) + 4), 3.8))
    shown = [(key, label) for key, label in CIRCUIT_HYPOTHESES if c.get(key)]
    width = 0.8 / max(len(shown), 1)
    for k, (key, label) in enumerate(shown):
        values = [[np.nan if i[f] is None else i[f] for f in ("estimate", "low", "high")] for i in c[key]]
        estimate, low, high = np.array(values, dtype=float).T  # (H,) each
        rho.bar(heads + (k - (len(shown) - 1) / 2) * width, estimate, width, label=label,
                yerr=[estimate - low, high - estimate], capsize=2)
    rho.set_ylim(-1, 1)
    rho.set_ylabel("Spearman's rho with the QK logits")
    rho.set_title(f"layer 0, {len(c['token_ids'])} tokens (95% bootstrap over tokens)", fontsize=10)
    rho.legend(fontsize=7)
    shown = [(key, label) for key, label in (("ov_copying", "OV copying score"),
                                            ("qk_positive", "QK positive eigenvalue share")) if c.get(key)]
    width = 0.8 / max(len(shown), 1)
    for k, (key, label) in enumerate(shown):
        scores.bar(heads + (k - (len(shown) - 1) / 2) * width, [np.nan if v is None else v for v in c[key]], width,
                   label=label)
    scores.set_ylim(-1, 1)
    scores.set_title("1: copies / positive definite; -1: suppresses / negative", fontsize=10)
    scores.legend(fontsize=7)
    for ax in (rho, scores):
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(heads)  # whole heads
        ax.set_xlabel("head")
    return save_figure(fig, path, figure_format)


ISSUE9_FIGURES = {"head_roles": head_roles_plot, "norm_weighting": norm_weighting_plot,
                  "attention_norm_example": attention_norm_example_plot, "head_ablation": head_ablation_plot,
                  "sense_accuracy": sense_accuracy_plot, "attention_graphs": attention_graphs_plot}
FIGURES.update(ISSUE9_FIGURES)
FIGURES["logit_lens"] = lambda r, path, figure_format=None: plot_logit_lens(r.get("logit_lens"), path, figure_format)
FIGURES["circuits"] = lambda r, path, figure_format=None: plot_circuits(r.get("circuits"), path, figure_format)


def all_plots(r, folder, figure_format="both"):
    """Write every figure the numbers allow as <name>.png, <name>.svg or both (`figure_format`); returns {name: path
    of the PNG, or of the SVG when no PNG is written}."""
    figure_suffixes(figure_format)  # a bad format fails before any drawing
    paths = {name: plot(r, os.path.join(folder, f"{name}.png"), figure_format=figure_format)
             for name, plot in FIGURES.items()}
    return {k: v for k, v in paths.items() if v}


def compare_plots(results, folder, figure_format="both"):
    """Several models side by side: adjusted self-similarity and word-similarity by layer (PNG, SVG or both, as
    all_plots writes them)."""
    figure_suffixes(figure_format)
    paths = {}
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, r in results.items():
        ax.plot(r["geometry"]["layers"], r["geometry"]["adjusted_self_similarity"], marker="o", label=name)
    ax.set_xlabel("layer"), ax.set_ylabel("adjusted self-similarity")
    ax.legend(fontsize=7)
    paths["geometry"] = save_figure(fig, os.path.join(folder, "compare_geometry.png"), figure_format)
    with_bench = {k: r for k, r in results.items() if r.get("benchmarks")}
    if with_bench:
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        for ax, (key, title) in zip(axes, BENCHMARKS):
            for i, (name, r) in enumerate(with_bench.items()):
                layers, families, singles = benchmark_series(r)
                series = next(iter(families.values()), [])
                line = ax.plot(layers[: len(series)], [np.nan if s is None or s[key] is None else s[key] for s in series],
                               marker="o", label=f"{name} contextual")[0]
                if "word2vec" in singles and singles["word2vec"][key] is not None:
                    ax.axhline(singles["word2vec"][key], linestyle="--", color=line.get_color(), label=f"{name} word2vec")
            ax.set_title(title), ax.set_xlabel("layer")
            ax.legend(fontsize=6)
        paths["benchmarks"] = save_figure(fig, os.path.join(folder, "compare_benchmarks.png"), figure_format)
    return paths
