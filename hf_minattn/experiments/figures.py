"""The figures of FINDINGS.md, drawn from results.json (and the per-row drift arrays in rows.npz): one function per
figure, listed once in FIGURES, which make_figures walks.

Each figure function takes (plt, results, out) and returns a matplotlib figure, or None when the numbers it needs are
absent (a corpus too small for any scored pair, a run without rows.npz). Intervals are results.json's dicts
{"estimate", "low", "high"}: drawn as error bars (`error_bars`) or as a band around a line (`interval_band`)."""

import json
import os
import shutil
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .findings_format import block_output
from .word_pairs import pairs_method


def error_bars(ax, xs, intervals, **kwargs):
    """Estimates at xs with their 95% intervals as asymmetric error bars (nothing drawn where an interval is None);
    returns matplotlib's ErrorbarContainer."""
    mean = np.array([np.nan if i is None else i["estimate"] for i in intervals])
    low = np.array([np.nan if i is None else i["estimate"] - i["low"] for i in intervals])
    high = np.array([np.nan if i is None else i["high"] - i["estimate"] for i in intervals])
    return ax.errorbar(xs, mean, yerr=[low, high], marker="o", capsize=3, **kwargs)


def interval_band(ax, xs, intervals, alpha=0.2, **kwargs):
    """Estimates as a line over xs, their 95% intervals as a band filled in the line's colour (no outline), both only
    where an interval exists (not None); returns (line, band), or None when no x has one."""
    points = [(x, i) for x, i in zip(xs, intervals) if i is not None]
    if not points:
        return None
    xs = [x for x, _ in points]
    line, = ax.plot(xs, [i["estimate"] for _, i in points], marker="o", **kwargs)
    band = ax.fill_between(xs, [i["low"] for _, i in points], [i["high"] for _, i in points], alpha=alpha,
                           facecolor=line.get_color())
    return line, band


def loss_curves(plt, results, out):
    """Validation loss during training (mean over seeds), with the unigram floor of the same tokens."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    floors = []
    for name, v in results["variants"].items():
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
    return fig


def learning_dynamics(plt, results, out):
    """Gain over the unigram floor, full and frozen (and, where measured, word similarity beside it), 95% intervals
    over seeds as bands."""
    q2 = results["answers"]["q2"]
    similarity = q2.get("similarity")
    fig, axes = plt.subplots(1, 2 if similarity else 1, figsize=(12 if similarity else 6.5, 4), squeeze=False)
    ax = axes[0, 0]
    for key, label in (("gain_full", "full"), ("gain_frozen", "frozen_embeddings")):
        interval_band(ax, q2[key]["steps"], q2[key]["gain"], label=label)
    ax.axhline(0, color="black", linestyle="--", label="unigram floor")
    ax.set_xlabel("training step"), ax.set_ylabel("unigram loss - validation loss (nats)")
    ax.legend(fontsize=7)
    if similarity:
        similarity_panel(axes[0, 1], similarity, f"layer_{results['config']['num_hidden_layers']}")
    return fig


def similarity_panel(ax, similarity, last):
    """WordSim-353 Spearman of the static vectors (dashed) and of layer `last`, full and frozen, during training."""
    for variant in ("full", "frozen_embeddings"):
        for name, style in (("static", "--"), (last, "-")):
            x = similarity[variant][name]
            interval_band(ax, x["steps"], x["spearman"], alpha=0.15, linestyle=style, label=f"{variant}, {name}")
    ax.axhline(0, color="black", linestyle=":")
    ax.set_xlabel("training step"), ax.set_ylabel("WordSim-353 Spearman")
    ax.legend(fontsize=7)


def rows_of_results(rows_path: str, results: dict) -> bool:
    """Whether rows.npz was written by the scoring behind `results`: its key's seeds and scoring settings are the
    results' (a folder scored again on other seeds keeps the later file). One from before rows.npz kept its key is
    taken as it is."""
    from .caches import SCORING_SETTINGS, rows_key

    key = rows_key(rows_path)
    if key is None:
        return True
    settings = results.get("settings") or {}
    return key["seeds"] == list(results.get("seeds") or []) and all(
        settings.get(name) == value for name, value in key["settings"].items() if name in SCORING_SETTINGS)


def row_drift(plt, results, out):
    """Per-row drift against training count (first seed); None without rows.npz."""
    rows_path = os.path.join(out, "rows.npz")
    if not os.path.isfile(rows_path) or not rows_of_results(rows_path, results):
        return None
    rows = np.load(rows_path)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    # One point per vocabulary row: as SVG paths, 8,192 rows made a 2.4 MB file. Rasterized, the points are one
    # embedded image and the axes, ticks and labels stay vector.
    ax.scatter(rows["counts"] + 1, rows["full_drift"], s=2, alpha=0.4, label="full", rasterized=True)
    ax.scatter(rows["counts"] + 1, rows["frozen_drift"], s=2, alpha=0.4, label="frozen_embeddings", rasterized=True)
    ax.set_xscale("log"), ax.set_xlabel("training-split count + 1"), ax.set_ylabel("||e_final - e_init||")
    ax.legend(fontsize=7)
    return fig


def drift(plt, results, out):
    """Distance from initialisation per matrix kind at the end, per variant (left), and over training for the full
    model (right); drift.json of the first seed."""
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
    return fig


def loss_allocation(plt, results, out):
    """Cumulative loss change allocation per group, mean over the seeds that share the first seed's steps."""
    allocations = [row for row in (results.get("loss_allocation") or {}).values() if row]
    if not allocations:
        return None
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
    return fig


def word_similarity(plt, results, out):
    """WordSim-353 Spearman of the static vectors and of every layer, full and untrained, against word2vec and
    random vectors on the same corpus; None when no pair was scored."""
    q5, layers = results["answers"]["q5"], results["config"]["num_hidden_layers"]
    scores = (q5.get("word_pairs") or {}).get(q5.get("key")) or {}
    if not scores:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name in ("full", "untrained"):
        error_bars(ax, range(-1, layers + 1), [scores.get(f"{name}/static")]
                   + [scores.get(f"{name}/layer_{k}") for k in range(layers + 1)], label=name)
    for system, style in (("word2vec", "--"), ("random", ":")):
        if scores.get(system):
            ax.axhline(scores[system]["estimate"], color="black", linestyle=style, label=f"{system} (same corpus)")
    ax.set_xticks(range(-1, layers + 1), ["static", *map(str, range(layers + 1))])
    ax.set_xlabel("vectors (static embedding, then layer)"), ax.set_ylabel("WordSim-353 Spearman")
    ax.set_title(f"mean over seeds, 95% {pairs_method(scores)} bootstrap (seeds, pairs)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def head_diversity(plt, results, out):
    """Mean JS divergence between the heads of each layer, trained and untrained (and matched across seeds)."""
    q4 = results["answers"]["q4"]
    fig, ax = plt.subplots(figsize=(6, 4))
    series = [(q4["js_within_layer_trained"], "trained"), (q4["js_within_layer_init"], "untrained")]
    if q4.get("divergence"):
        series.append((q4["divergence"]["matched_across_seeds"], "trained: matched heads across seeds"))
    for intervals, label in series:
        error_bars(ax, range(len(intervals)), intervals, label=label)
    ax.set_xlabel("layer"), ax.set_ylabel("mean JS divergence between heads")
    ax.set_title("Do heads of one layer attend differently? (mean over seeds, 95% t-interval)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def head_dynamics(plt, results, out):
    """The heads at every saved state (draw_head_dynamics); None for a run without head dynamics."""
    over = results["answers"]["q4"].get("over_training")
    return draw_head_dynamics(plt, over) if over else None


def head_dynamics_early(plt, results, out):
    """Q4's early grid against the shuffled-label control (draw_early_grid); None for a run without one."""
    over = results["answers"]["q4"].get("over_training") or {}
    return draw_early_grid(plt, over["early"]) if over.get("early") else None


CIRCUIT_HYPOTHESES = {"identity": "LN(E) LN(E)^T (W = I)", "cooccurrence": "co-occurrence PPMI",
                      "initial": "form at initialisation"}


def circuits(plt, results, out):
    """Layer 0's QK form against each hypothesis, per variant (head mean, over seeds)."""
    forms = results["answers"].get("q3_circuits")
    if not forms:
        return None
    names = [n for n in ("full", "qkv_from_identity", "identity_qkv") if n in forms]
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (hypothesis, label) in enumerate(CIRCUIT_HYPOTHESES.items()):
        error_bars(ax, np.arange(len(names)) + 0.2 * (k - 1), [forms[n][hypothesis] for n in names],
                   linestyle="none", label=label)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xticks(range(len(names)), names), ax.set_ylabel("Spearman with layer 0's query-key form")
    ax.set_title("Which hypothesis does W_Q^T W_K follow? (mean over heads and seeds, 95% t-interval)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def logit_lens(plt, results, out):
    """Gain over the unigram floor of each layer decoded by the MLM head, trained and untrained."""
    lens = results["answers"].get("q6", {}).get("logit_lens")
    if not lens:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    error_bars(ax, range(len(lens["gain"])), lens["gain"], label="trained")
    if lens["gain_untrained"]:
        error_bars(ax, range(len(lens["gain_untrained"])), lens["gain_untrained"], label="untrained")
    ax.axhline(0, color="black", linestyle="--", label="unigram floor")
    ax.set_xticks(range(len(lens["gain"])))
    ax.set_xlabel("layer decoded by the MLM head (0 = embedding output)")
    ax.set_ylabel("unigram loss - layer's loss (nats)")
    ax.set_title("Logit lens: mean over seeds, 95% t-interval", fontsize=9), ax.legend(fontsize=7)
    return fig


RELATED_PAIRS = (("king/queen", "-"), ("king/dog", ":"), ("man/woman", "-"), ("man/river", ":"))


def related_words(plt, results, out):
    """Cosine of related and unrelated pairs in each system; only the pairs every system scored (a small corpus may
    hold none: then None, rather than empty axes)."""
    related = results["answers"]["q5"].get("related") or {}
    pairs = [(pair, style) for pair, style in RELATED_PAIRS if related and all(pair in r for r in related.values())]
    if not pairs:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    systems = list(related)
    for pair, style in pairs:
        error_bars(ax, range(len(systems)), [related[s][pair] for s in systems], linestyle=style, label=pair)
    ax.set_xticks(range(len(systems)), [s.replace("layer_", "layer ") for s in systems])
    ax.set_ylabel("cosine (after All-but-the-Top where anisotropic)")
    ax.set_title("full model, mean over seeds", fontsize=9), ax.legend(fontsize=7)
    return fig


ATTENTION_GRAPHS = (("raw attention", "attention_graph"), ("norm-weighted", "attention_graph_norm_weighted"),
                    ("rollout", "attention_graph_rollout"))


def attention_graph(plt, results, out):
    """The first seed's attention graphs (probes.json) at Q7's layer, side by side; None without that file."""
    from hf_minattn.probes.plots import graph_panel

    graph_path = os.path.join(out, "probes", "full", f"seed{results['seeds'][0]}", "probes.json")
    if "q7" not in results["answers"] or not os.path.isfile(graph_path):
        return None
    with open(graph_path) as f:
        probe = json.load(f)
    graphs = [(title, probe.get(k)) for title, k in ATTENTION_GRAPHS if probe.get(k)]
    layer = results["answers"]["q7"]["layer"]
    fig, axes = plt.subplots(1, len(graphs), figsize=(5 * len(graphs), 5))
    for ax, (title, graph) in zip(np.atleast_1d(axes), graphs):
        graph_panel(ax, graph, layer, f"{title}, layer {block_output(layer)} (first seed)")
    return fig


@dataclass(frozen=True)
class FigureSpec:
    name: str  # the file name, without its suffix
    draw: Callable  # (plt, results, out) -> a matplotlib figure, or None when its numbers are absent
    from_probes: bool = False  # reads the probes' answers (q3_circuits to q7), which a run without probes lacks


FIGURES = (
    FigureSpec("loss_curves", loss_curves),
    FigureSpec("learning_dynamics", learning_dynamics),
    FigureSpec("row_drift", row_drift),
    FigureSpec("drift", drift),
    FigureSpec("loss_allocation", loss_allocation),
    FigureSpec("word_similarity", word_similarity, from_probes=True),
    FigureSpec("head_diversity", head_diversity, from_probes=True),
    FigureSpec("head_dynamics", head_dynamics, from_probes=True),
    FigureSpec("head_dynamics_early", head_dynamics_early, from_probes=True),
    FigureSpec("circuits", circuits, from_probes=True),
    FigureSpec("logit_lens", logit_lens, from_probes=True),
    FigureSpec("related_words", related_words, from_probes=True),
    FigureSpec("attention_graph", attention_graph, from_probes=True),
)
# Figures the probes already drew (variant, figure), copied next to the rest so FINDINGS.md's folder is
# self-contained.
PROBE_FIGURES = (("full", "geometry"), ("full", "sense"), ("full", "head_map"), ("untrained", "head_map"),
                 ("full", "heads"), ("full", "weights"), ("full", "attention_example"))


def make_figures(results: dict, out: str, figure_format: str = "both") -> dict:
    """Draw every figure into out/figures as PNG, SVG or both (`figure_format`); returns {name: relative path} for
    those drawn (the PNG when there is one). All are drawn before the first is written: results lacking a number
    a figure reads (an older or edited results.json) fail with nothing written, not with half the figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hf_minattn.probes.plots import figure_suffixes, save_figure

    suffixes = figure_suffixes(figure_format)
    probed = "q4" in results["answers"]
    drawn = {}
    try:
        for figure in FIGURES:
            fig = figure.draw(plt, results, out) if probed or not figure.from_probes else None
            if fig is not None:
                drawn[figure.name] = fig
    except Exception:
        for fig in drawn.values():
            plt.close(fig)
        raise
    folder = os.path.join(out, "figures")
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for name, fig in drawn.items():
        written = save_figure(fig, os.path.join(folder, f"{name}.png"), figure_format, dpi=110)
        paths[name] = f"figures/{os.path.basename(written)}"
    if probed:
        paths.update(copy_probe_figures(results, out, folder, suffixes))
    return paths


def copy_probe_figures(results: dict, out: str, folder: str, suffixes) -> dict:
    """Copy PROBE_FIGURES of the first seed into `folder` as <variant>_<figure>; returns {name: relative path}."""
    paths = {}
    for name, figure in PROBE_FIGURES:
        for suffix in reversed(suffixes):  # the PNG last: the path given is the PNG when there is one
            source = os.path.join(out, "probes", name, f"seed{results['seeds'][0]}", f"{figure}{suffix}")
            if os.path.isfile(source):
                shutil.copy(source, os.path.join(folder, f"{name}_{figure}{suffix}"))
                paths[f"{name}_{figure}"] = f"figures/{name}_{figure}{suffix}"
    return paths


HEAD_PANELS = ((("gain",), "gain over the unigram floor (nats)"),
               (("within_layer_js",), "within-layer JS divergence"),
               (("heads_with_role",), "heads with a role (of {heads})"),
               (("max_role_mass", "max_role_ratio"), "largest role mass (left), / uniform (right)"),
               (("ablation_max", "ablation_mean"), "ablation cost (nats): costliest head, mean"),
               (("qk_effective_rank",), "effective rank of W_Q^T W_K (max {head_dim})"))
HEAD_LABELS = {"max_role_mass": "mass", "max_role_ratio": "mass / uniform", "ablation_max": "costliest head",
               "ablation_mean": "mean over heads"}


def draw_head_dynamics(plt, over: dict):
    """The heads at every saved state (mean over seeds, 95% t-interval as a band) beside the gain over the unigram
    floor, one panel per measure; dashed: the mean plateau exit step, dotted: the mean specialisation step."""
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex=True)
    for ax, (names, title) in zip(axes.ravel(), HEAD_PANELS):
        for k, name in enumerate(names):
            intervals = over["gain"] if name == "gain" else over["measures"][name]
            target = ax.twinx() if name == "max_role_ratio" else ax
            target.tick_params(labelsize=7)
            interval_band(target, over["steps"], intervals, markersize=3, label=HEAD_LABELS.get(name, name),
                          color=f"C{k}")
        if names == ("gain",):
            ax.axhline(over["plateau_gain"], color="grey", linewidth=0.8, label="plateau exit threshold")
        mark_exit_and_specialisation(ax, over)
        ax.set_title(title.format(heads=over["heads"], head_dim=over["head_dim"]), fontsize=8)
        ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(labelsize=7)
        if ax is axes[0, 0] or len(names) > 1:
            ax.legend(fontsize=6)
    fig.suptitle(f"Heads during training, full model (mean over {over['seeds']} seeds, 95% t-interval)", fontsize=9)
    return fig


def mark_exit_and_specialisation(ax, summary: dict) -> None:
    """Dashed: the mean plateau exit step, dotted: the mean specialisation step, each over the seeds where it was
    found (none drawn where no seed has one); `summary` is head_dynamics_summary's or its "early" part."""
    for key, style, found in (("plateau_exit", "--", "seeds_with_exit"), ("specialisation", ":", "seeds_specialised")):
        if summary.get(key):
            ax.axvline(summary[key]["estimate"], color="black", linestyle=style, linewidth=0.8,
                       label=f"{key.replace('_', ' ')} (mean step, {summary[found]} of {summary['seeds']} seeds)")


def draw_early_grid(plt, early: dict):
    """Q4's early grid (head_dynamics.early_summary): per layer, the mean JS divergence between the layer's heads, the
    full model beside the shuffled-label control trained step for step (mean over seeds, 95% t-interval as a band),
    and last the gain over the unigram floor of both; marked as in draw_head_dynamics, the steps found on the grid.
    Early curves from before the per-layer numbers give one panel, the mean over layers."""
    steps, control = early["steps"], early["control"].replace("_", " ")
    if early.get("divergence_by_layer") and early.get("control_divergence_by_layer"):
        panels = [(f"layer {layer}", full, ctrl) for layer, (full, ctrl)
                  in enumerate(zip(early["divergence_by_layer"], early["control_divergence_by_layer"]))]
    else:
        panels = [("mean over layers", early["divergence"], early["control_divergence"])]
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(3.3 * (len(panels) + 1), 3.6), squeeze=False)
    axes = axes[0]
    for ax, (title, full, ctrl) in zip(axes, panels):
        interval_band(ax, steps, full, markersize=3, color="C0", label="full model")
        interval_band(ax, steps, ctrl, markersize=3, color="C1", label=f"control: {control}")
        ax.set_title(f"{title}: JS divergence between heads", fontsize=8)
        if ax is not axes[0]:
            ax.sharey(axes[0])  # layers on one scale, to compare them
    gain = axes[-1]
    interval_band(gain, steps, early["gain"], markersize=3, color="C0", label="full model")
    interval_band(gain, steps, early["control_gain"], markersize=3, color="C1", label=f"control: {control}")
    gain.axhline(early["plateau_gain"], color="grey", linewidth=0.8, label="plateau exit threshold")
    gain.set_title("gain over the unigram floor (nats)", fontsize=8)
    for ax in axes:
        mark_exit_and_specialisation(ax, early)
        ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=6), gain.legend(fontsize=6)
    fig.suptitle(f"Heads over the first {early['until']} steps, every {early['every']} (mean over {early['seeds']} "
                 "seeds, 95% t-interval)\nspecialisation: the full model's divergence (mean over layers) stays above "
                 "the control's by more than the control's largest step-to-step change", fontsize=8)
    return fig
