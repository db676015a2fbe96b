"""The shared plotting helpers of the probe figures: the formats a figure is written in (`save_figure`, PNG, SVG or
both), whole-number layer and head ticks, the layers x heads heat map and the attention-graph panel; `all_plots`
draws every section's figure (each section's figure lives in its module of hf_minattn/probes/report/), and
`compare_plots` the figures of compare.html.

A figure function takes the numbers `r`, an output path and a `figure_format` ('png', 'svg' or 'both'; None: the
format of the path's suffix), writes the figure (`save_figure`) and returns the path of the first file written, the
PNG when there is one (or None when the numbers it needs are absent)."""

import os

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


def layer_by_head(fig, ax, values, title, label=None, fontsize=9, **imshow):
    """A (layers, heads) heat map with its colour bar."""
    im = ax.imshow(values, aspect="auto", **imshow)
    ax.set_title(title, fontsize=fontsize)
    ax.set_xlabel("head"), ax.set_ylabel("layer")
    fig.colorbar(im, ax=ax, fraction=0.046, label=label)


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


BENCHMARKS = (("wordsim353", "WordSim-353 (Spearman)"), ("simlex999", "SimLex-999 (Spearman)"),
              ("analogy", "Google analogies (3CosAdd acc.)"))


def benchmark_series(r):
    """{set family: [score per layer]} and {single set: score} from the benchmark list."""
    scores = {s["vectors"]: s for s in r["benchmarks"]["scores"]}
    layers = list(range(r["num_layers"] + 1))
    families = {"contextual (mean over corpus)": [scores.get(f"layer_{l}") for l in layers],
                "decontextualized (word alone)": [scores.get(f"decontext_{l}") for l in layers]}
    return layers, {k: v for k, v in families.items() if any(v)}, {k: scores[k] for k in ("static", "word2vec") if k in scores}


def all_plots(r, folder, figure_format="both"):
    """Write every figure the numbers allow as <name>.png, <name>.svg or both (`figure_format`); returns {name: path
    of the PNG, or of the SVG when no PNG is written}. `r`: the probes.json dict or SavedProbeResults (results.py)."""
    from .report.page import Probes  # the sections draw with these helpers: imported when drawing
    from .report.sections import SECTIONS

    figure_suffixes(figure_format)  # a bad format fails before any drawing
    probes = Probes(r)
    paths = {s.name: s.figure(probes.of(s), os.path.join(folder, f"{s.name}.png"), figure_format=figure_format)
             for s in SECTIONS if s.figure is not None and probes.has(s)}
    return {k: v for k, v in paths.items() if v}


def legend_or_not_scored(ax):
    """The panel's legend, or "not scored" across it where nothing was drawn."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
    else:
        ax.text(0.5, 0.5, "not scored", ha="center", va="center", transform=ax.transAxes)


def compare_benchmark_lines(results):
    """What compare's benchmark figure draws, {benchmark key: [(model, kind, layers, scores, word2vec score)]}: per
    model with benchmarks, its first set family by layer (kind "contextual", else "decontextualized"; a score None
    where unscored) and its word2vec score (None where it has none); a model with neither is left out of the list."""
    lines = {key: [] for key, _ in BENCHMARKS}
    for name, r in results.items():
        if not r.get("benchmarks"):
            continue
        layers, families, singles = benchmark_series(r)
        family, series = next(iter(families.items()), ("", []))
        kind = family.split()[0] if family else ""
        for key in lines:
            scores = [None if s is None else s.get(key) for s in series]
            w2v = singles["word2vec"].get(key) if "word2vec" in singles else None
            if any(x is not None for x in scores) or w2v is not None:
                lines[key].append((name, kind, layers[: len(scores)], scores, w2v))
    return lines


def compare_plots(results, folder, figure_format="both"):
    """Several models side by side: adjusted self-similarity and word-similarity by layer (PNG, SVG or both, as
    all_plots writes them); a benchmark panel no model was scored on says "not scored"."""
    figure_suffixes(figure_format)
    paths = {}
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, r in results.items():
        values = r["geometry"]["adjusted_self_similarity"]
        ax.plot(r["geometry"].get("layers") or range(len(values)), values, marker="o", label=name)
    ax.set_xlabel("layer"), ax.set_ylabel("adjusted self-similarity")
    ax.legend(fontsize=7)
    paths["geometry"] = save_figure(fig, os.path.join(folder, "compare_geometry.png"), figure_format)
    if any(r.get("benchmarks") for r in results.values()):
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        lines = compare_benchmark_lines(results)
        for ax, (key, title) in zip(axes, BENCHMARKS):
            for name, kind, layers, scores, w2v in lines[key]:
                color = None  # the model's colour, shared by its word2vec line
                if any(s is not None for s in scores):
                    values = [np.nan if s is None else s for s in scores]
                    color = ax.plot(layers, values, marker="o", label=f"{name} {kind}")[0].get_color()
                if w2v is not None:
                    ax.axhline(w2v, linestyle="--", color=color, label=f"{name} word2vec")
            ax.set_title(title), ax.set_xlabel("layer")
            legend_or_not_scored(ax)
        paths["benchmarks"] = save_figure(fig, os.path.join(folder, "compare_benchmarks.png"), figure_format)
    return paths
