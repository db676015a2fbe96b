"""Norm-weighted attention (Kobayashi et al. 2020): does weighting each attention weight by the size of the vector
it moves change the picture? On average over heads (norm_weighting), and in the first example's attention graph
(attention_norm_example)."""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from ..results import shown_tokens
from .head_roles import ROLE_LABELS
from .heads import HEAD_STATS, target_object
from .page import Section
from .words import differ, lower


def _norm_change(h):
    """({target: (raw mean, norm-weighted mean)}, the target that changes most, its direction: "falls", "rises",
    "same" (equal as shown) or "mixed" (the mean moves, but not in most heads: a few large heads can carry it)."""
    changes = {k: (float(np.mean(h.stats[k])), float(np.mean(h.norm_weighted_stats[k])))
               for k in ("cls", "sep", "punctuation", "self", "previous", "next") if k in h.norm_weighted_stats}
    key = max(changes, key=lambda k: abs(changes[k][1] - changes[k][0]))
    raw, weighted = changes[key]
    if not differ(raw, weighted):
        return changes, key, "same"
    direction = "falls" if weighted < raw else "rises"
    agree, heads = _agreeing(h, key, direction)
    return changes, key, direction if 2 * agree > heads else "mixed"


def _agreeing(h, key, direction):
    """(heads whose attention to `key` moves in `direction` under norm weighting, heads): one value per head."""
    before, after = np.ravel(h.stats[key]), np.ravel(h.norm_weighted_stats[key])
    return int(np.sum(after < before if direction == "falls" else after > before)), before.size


def _head_moves(h, changes):
    """(target, heads whose attention to it changes by 0.01 or more, falling, rising, heads) for the target with the
    most such heads: heads can move apart while their mean stays."""
    def moves(k):
        pairs = list(zip(np.ravel(h.stats[k]), np.ravel(h.norm_weighted_stats[k])))
        return sum(lower(b, a) for a, b in pairs), sum(lower(a, b) for a, b in pairs), len(pairs)
    counts = {k: moves(k) for k in changes}
    key = max(counts, key=lambda k: counts[k][0] + counts[k][1])
    falls, rises, n = counts[key]
    return key, falls + rises, falls, rises, n


def norm_weighting_text(r):
    h = r.heads
    changes, key, direction = _norm_change(h)
    raw, weighted = changes[key]
    moves = ", ".join(f"{ROLE_LABELS[k]} {a:.3f} -> {b:.3f}" for k, (a, b) in changes.items())  # as the table shows
    text = (f"Weighting each attention weight by the norm of the vector it moves (||a_ij W_O W_V x_j||, value bias "
            f"included; Kobayashi et al. 2020), mean attention {moves}. ")
    if direction == "same":
        text += f"The largest change, attention to {ROLE_LABELS[key]} ({raw:.3f} -> {weighted:.3f}), is under 0.01: "
        target, moved, falls, rises, n = _head_moves(h, changes)
        if not moved:
            return text + "norm weighting does not change the picture here (nor any head's attention by 0.01 or more)."
        return text + (f"norm weighting does not change the means here, but {moved} of {n} heads' attention to "
                       f"{ROLE_LABELS[target]} changes by 0.01 or more ({falls} fall, {rises} rise).")
    if direction == "mixed":
        agree, n = _agreeing(h, key, "falls" if weighted < raw else "rises")
        return text + (f"The largest change: mean attention to {ROLE_LABELS[key]} "
                       f"{'falls' if weighted < raw else 'rises'} from {raw:.2f} to {weighted:.2f}, but in only "
                       f"{agree} of {n} heads: the heads disagree, so the mean does not say how much these tokens "
                       "contribute.")
    return text + (f"The largest change: attention to {ROLE_LABELS[key]} {direction} from {raw:.2f} to {weighted:.2f}, "
                   "so " + ("raw weights overstate how much these tokens contribute." if direction == "falls" else
                            "raw weights understate how much these tokens contribute."))


def norm_weighting_headline(r):
    changes, key, direction = _norm_change(r.heads)
    raw, weighted = changes[key]
    target = ROLE_LABELS[key]
    if direction == "same":
        return (f"No clear difference: weighting attention by the size of what it moves changes no target's mean "
                f"attention by 0.01 or more (largest change: {target}, {raw:.3f} -> {weighted:.3f}).")
    mean_move = "falls" if weighted < raw else "rises"
    agree, n = _agreeing(r.heads, key, mean_move)
    if direction == "mixed":
        return (f"The heads disagree on what {target_object(target)} contributes: weighted by the size of what it "
                f"moves, mean attention to it {mean_move} from {raw:.2f} to {weighted:.2f}, but only {agree} of {n} "
                "heads move that way.")
    return (f"Raw attention {'overstates' if direction == 'falls' else 'understates'} what {target_object(target)} "
            f"contributes: weighted by the size of what it moves, mean attention to it {direction} from {raw:.2f} to "
            f"{weighted:.2f} ({agree} of {n} heads move that way).")


def norm_weighting_tables(r):
    changes, _, _ = _norm_change(r.heads)
    return [{"header": ["target", "raw mean attention", "norm-weighted", "change"],
             "rows": [[ROLE_LABELS[k], f"{a:.3f}", f"{b:.3f}", f"{b - a:+.3f}"] for k, (a, b) in changes.items()]}]


def norm_weighting_plot(r, path, figure_format=None):
    h = r.heads
    if not h or not h.norm_weighted_stats:
        return None
    keys = [(k, t) for k, t in HEAD_STATS if k != "entropy" and k in h.norm_weighted_stats]
    raw = [np.mean(h.stats[k]) for k, _ in keys]
    weighted = [np.mean(h.norm_weighted_stats[k]) for k, _ in keys]
    x = np.arange(len(keys))
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.bar(x - 0.2, raw, 0.4, label="attention weight a_ij")
    ax.bar(x + 0.2, weighted, 0.4, label="norm-weighted share ||a_ij f(x_j)||")
    ax.set_xticks(x), ax.set_xticklabels([t for _, t in keys], fontsize=8)
    ax.set_ylabel("mean over heads and queries")
    ax.set_title("raw vs norm-weighted attention (Kobayashi et al. 2020)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path, figure_format)


def _edge_rule(graph):
    """The cut attention_graph used: relative_threshold / n (a multiple of uniform attention; in a causal graph
    / n_i, over the n_i words each query sees), an absolute one, or None where the graph does not record it."""
    t = graph.relative_threshold
    if t is None:
        return None if graph.threshold is None else f">= {graph.threshold:.3g}"
    times = "twice" if t == 2 else f"{t:g} times"
    if graph.causal:
        return f">= {t:g}/n_i ({times} uniform attention over the n_i words query i sees)"
    return f">= {t:g}/n ({times} uniform attention over the n words)"


def _layer_measure(r):
    """Whether the norm-weighted graph's whole-layer ("mean") edges are the layer's ||sum_h a_ij^h f_h(x_j)|| (as its
    whole_layer says), not the mean of the heads' shares (older files); without the graph, as the example holds."""
    graph = r.attention_graphs["norm_weighted"]
    return graph.whole_layer == "layer" if graph else _layer_shares(r) is not None


def _edge_counts(r):
    """(raw edges, norm-weighted edges, "fewer" / "more" / "as many"), or None without both graphs."""
    raw, weighted = r.attention_graphs["raw"], r.attention_graphs["norm_weighted"]
    if not raw or not weighted:
        return None
    n_raw, n_weighted = len(raw.edges), len(weighted.edges)
    return n_raw, n_weighted, ("fewer" if n_weighted < n_raw else "more" if n_weighted > n_raw else "as many")


def attention_norm_example_text(r):
    raw, weighted = r.attention_graphs["raw"], r.attention_graphs["norm_weighted"]
    text = ("Attention of the first example by layer, raw (top, the head mean) and norm-weighted (bottom, " + (
        "the layer's ||sum_h a_ij^h f_h(x_j)|| as shares: heads that move longer vectors weigh more)"
        if _layer_shares(r) is not None else
        "the mean of the heads' norm-weighted shares, which weighs a head moving short vectors like one moving long "
        "ones: this file has no measure of the whole layer)"))
    counts = _edge_counts(r)
    if counts is None:
        return text + "."
    rules = _edge_rule(raw), _edge_rule(weighted)
    if None in rules:
        text += "; both are exported as graphs"
    else:
        need = rules[0] if rules[0] == rules[1] else f"{rules[0]} (raw) and {rules[1]} (norm-weighted)"
        text += f"; both are exported as graphs whose edges need {need}"
    n_raw, n_weighted, verdict = counts
    whole = "the layer's" if _layer_measure(r) else "their mean"
    drawn = "the layer's" if _layer_shares(r) is not None else "the heads' mean"
    return text + (f": {n_raw} edges raw, {n_weighted} norm-weighted, in every layer's graphs, each head's and "
                   f"{whole} together (the figure draws {drawn}), so norm weighting "
                   + {"fewer": "concentrates attention on fewer edges.", "more": "spreads it over more edges.",
                      "as many": "keeps as many edges."}[verdict])


def attention_norm_example_headline(r):
    counts = _edge_counts(r)
    if counts is None:
        return ("The first example's attention by layer, raw (head mean) and weighted by the size of what it moves ("
                + ("the whole layer)." if _layer_measure(r) else "head mean)."))
    n_raw, n_weighted, verdict = counts
    numbers = f"{n_weighted} strong links against {n_raw} raw, every layer's heads and " + (
        "the whole layer (raw: the head mean)" if _layer_measure(r) else "their mean")
    if verdict == "as many":
        return f"No difference in count: weighting by the size of what it moves keeps as many strong links ({numbers})."
    return (f"Weighting by the size of what it moves {'concentrates' if verdict == 'fewer' else 'spreads'} the first "
            f"example's attention over {verdict} strong links ({numbers}).")


def attention_norm_example_tables(r):
    rows = [[name, len(g.edges), _edge_rule(g) or "-"] for name, g in
            (("raw", r.attention_graphs["raw"]), ("norm-weighted", r.attention_graphs["norm_weighted"])) if g]
    return [{"header": ["graph", "edges", "an edge needs"], "rows": rows}] if rows else []


def _layer_shares(r, index=0):
    """The example's layer-level shares as probes.json holds them (nested lists), or None."""
    examples = r.heads.examples if r.heads else []
    return examples[index].norm_weighted_layer if index < len(examples) else None


def whole_layer_shares_example(r, index=0):
    """The example's Kobayashi et al. layer-level shares ||sum_h a_ij^h f_h(x_j)|| per query, (L, T, T), as
    probes.json holds them (heads.AttentionExample.norm_weighted_layer); None in files from before they were kept."""
    layer = _layer_shares(r, index)
    return None if layer is None else np.array(layer)


def attention_norm_example_plot(r, path, index=0, figure_format=None):
    h = r.heads
    if not h or len(h.examples) <= index or h.examples[index].norm_weighted is None:
        return None
    ex = h.examples[index]
    raw, weighted = np.array(ex.attention).mean(1), whole_layer_shares_example(r, index)  # (L, T, T)
    # an older file: only the heads' shares, whose mean weighs a head moving short vectors like one moving long ones
    bottom = ("norm-weighted", "the layer's ||sum_h a_ij f_h(x_j)|| as shares") if weighted is not None else (
        "heads' norm shares", "the mean of the heads' norm-weighted shares")
    weighted = np.array(ex.norm_weighted).mean(1) if weighted is None else weighted
    L, n = raw.shape[0], raw.shape[-1]
    fig, axes = plt.subplots(2, L, figsize=(2.4 * L, 5.0), squeeze=False)
    for l in range(L):
        for row, (values, name) in enumerate(((raw, "raw"), (weighted, bottom[0]))):
            ax = axes[row][l]
            ax.imshow(values[l], cmap="Blues", vmin=0, vmax=min(1.0, 4.0 / n))
            ax.set_title(f"layer {l} {name}", fontsize=7)
            ax.set_xticks(range(n)), ax.set_yticks(range(n))
            ax.set_xticklabels(shown_tokens(ex) if row == 1 else [], rotation=90, fontsize=5)
            ax.set_yticklabels(shown_tokens(ex) if l == 0 else [], fontsize=5)
    fig.suptitle(f"raw: head mean; {bottom[0]}: {bottom[1]}; colour scale saturates at 4/n = {4.0 / n:.2f} (uniform "
                 f"= 1/n)", fontsize=9)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="norm_weighting", title="Norm-weighted attention (Kobayashi et al. 2020)", needs="heads",
    question="Does weighting attention by what it moves change the picture?",
    reads="results", headline=norm_weighting_headline, text=norm_weighting_text, tables=norm_weighting_tables,
    figure=norm_weighting_plot, alt="Bar chart: mean raw and norm-weighted attention to each target")
EXAMPLE = Section(
    name="attention_norm_example", title="Raw vs norm-weighted attention in the first example", needs="heads",
    question="Does weighting by vector size change the attention graph?",
    reads="results", headline=attention_norm_example_headline, text=attention_norm_example_text,
    tables=attention_norm_example_tables, figure=attention_norm_example_plot,
    alt="Attention matrices of the first example by layer, raw head mean (top row) and norm-weighted (bottom row)")
