"""Attention as a graph: how much of a word does rollout attribute to its own input? The first example's words as
graphs: raw attention, norm-weighted, rollout and flow (Abnar & Zuidema 2020)."""

import matplotlib.pyplot as plt
import numpy as np

from ..attention_flow import self_share
from ..heads import is_causal
from ..mixing import uniform_rollout
from ..plots import graph_panel, save_figure
from ..results import GRAPHS
from .page import Section
from .words import lower


GRAPH_MEANINGS = {  # what an edge a -> b of each graph says (attention_graphs section)
    "raw": "raw: one layer's attention weights, mean over heads: how that layer mixes the layer below, not the input "
           "words",
    "norm_weighted": "norm-weighted: per head each weight scaled by ||W_O W_V x_j||, and for the layer (what the "
                     "figure draws) ||sum_h a_ab^h W_O^h W_V^h x_b||, the size of what word b actually moves through "
                     "all heads, as shares of a's total (Kobayashi et al. 2020)",
    # a graph written before the layer measure (its "whole_layer" is "head mean"): the mean of the heads' shares
    "norm_weighted_head_mean": "norm-weighted: per head each weight scaled by ||W_O W_V x_j|| as shares of a's total "
                               "(Kobayashi et al. 2020), and for the layer (what the figure draws) the mean of the "
                               "heads' shares, which counts a head moving short vectors like one moving long ones",
    "rollout": "rollout: every layer's head-mean attention with the residual connection (A' = w I + (1 - w) A), "
               "multiplied from the input up: the share of word a that rollout gives input word b after that layer, "
               "through attention and residuals (an attribution rollout assigns, not a measure of what a's "
               "representation holds; Abnar & Zuidema 2020)",
    "flow": "flow: the same layered graph read as a flow network: the maximum flow from input word b to a, rows "
            "normalised (Abnar & Zuidema 2020)",
}


def _graph_findings(r, k=5):
    """The numbers attention_graphs' sentences are chosen by: {"graphs", "last", "top" (rollout's strongest edges
    between different words at the last layer), "own" (a word's mean share of itself after the last layer), "uniform",
    "common" (how many of the top pairs raw attention also has among its strongest; None without raw)}."""
    graphs = r.attention_graphs
    rollout, raw = graphs["rollout"], graphs["raw"]
    last = rollout.layers[-1]
    top = rollout.strongest(last, k)
    common = None
    if raw is not None and top:
        raw_pairs = {(a, b) for a, b, _ in raw.strongest(last, len(top))}
        common = len(raw_pairs & {(a, b) for a, b, _ in top})
    return {"graphs": graphs, "last": last, "top": top, "own": rollout.self_share[-1],
            "uniform": _uniform_self_share(r, len(rollout.labels), last + 1), "common": common}


def _meaning(name, graph):
    """The GRAPH_MEANINGS key of a graph: a norm graph says by its whole_layer which measure its "mean" edges are."""
    return "norm_weighted_head_mean" if name == "norm_weighted" and graph.whole_layer != "layer" else name


def cut_text(graph, fmt=".2f"):
    """A graph's cut as words: "0.13", or in a causal graph (one cut per query) "2/n_i (0.13 at the last query, more
    before)", where `threshold` is only the smallest cut."""
    if graph.causal and graph.relative_threshold is not None:
        return f"{graph.relative_threshold:g}/n_i ({graph.threshold:{fmt}} at the last query, more before)"
    return f"{graph.threshold:{fmt}}"


def _residual(r, layers, n):
    """Rollout's residual weight w of A' = w I + (1 - w) A as the rollout graph records it, in the form
    attention_rollout takes for n nodes: a number (True or not recorded: 0.5; False: 0), one per layer (layers,), or
    one per layer and node (layers, n); per-token weights of a word-level graph (not n of them) averaged per layer."""
    residual = r.attention_graphs["rollout"].residual
    if residual is None or isinstance(residual, bool):
        return 0.0 if residual is False else 0.5  # None: a file from before the field, always the default 0.5
    w = np.asarray(residual, dtype=float)
    return w.mean(-1) if w.ndim == 2 and w.shape[-1] != n else w


def _causal(r):
    """Whether the graphs are a causal model's, as the files record it (the rollout graph's, else the heads'); files
    from before either recorded it: heads.is_causal on the first example's stored weights."""
    recorded = r.attention_graphs["rollout"].causal
    heads = getattr(r, "heads", None)
    if recorded is None and heads is not None:
        recorded = heads.causal if heads.causal is not None else (
            bool(is_causal(heads.examples[0].attention)) if heads.examples else None)
    return bool(recorded)


def _uniform_self_share(r, n, layers):
    """A node's mean share of itself after `layers` layers of rollout if every layer attended uniformly over the n
    nodes (in a causal model node i over the i + 1 up to it), with the same residual weights: what the residual
    alone keeps (exact for words of one token each)."""
    return self_share(uniform_rollout(n, _residual(r, layers, n), layers, _causal(r))[-1:], None, "token")[0]


def attention_graphs_text(r, k=5):
    """What each graph of the first example means, rollout's strongest edges, and two findings chosen by the numbers:
    how much of a word's last-layer representation stays its own, and whether raw attention names the same pairs."""
    f = _graph_findings(r, k)
    rollout, last, top = f["graphs"]["rollout"], f["last"], f["top"]
    shown = [name for name, graph in f["graphs"].items() if graph is not None]
    text = (f"The first example's words as graphs at the last layer (layer {last}); an edge a -> b says that a draws "
            f"on b. " + "; ".join(GRAPH_MEANINGS[_meaning(name, f["graphs"][name])] for name in shown) + ". ")
    own, uniform = f["own"], f["uniform"]
    kept = (f"After the last layer rollout attributes on average {own:.2f} of a word to its own input word, against "
            f"{uniform:.2f} if every layer attended evenly with the same residual weight, so "
            + SELF_VERDICT[_against_uniform(own, uniform)])
    if not top:
        return text + (f"No rollout edge between different words reaches the threshold ({cut_text(rollout, '.3g')}). "
                       + kept)
    flow = f["graphs"].get("flow")
    text += ("The strongest edges, from rollout, between different words: "
             + ", ".join(f"{a} -> {b} ({w:.2f})" for a, b, w in top) + ". "
             + (f"All lead to {top[0][1]}. " if _one_target(top) else "")
             + (f"Flow has no edge between different words above its threshold ({cut_text(flow)}) at that layer: "
                "it spreads each word's input over the words more evenly than that. "
                if flow is not None and not flow.strongest(last, 1) else "")
             + kept + " ")
    if f["common"] is None:
        return text.rstrip()
    common = f["common"]
    return text + (f"{common} of rollout's {len(top)} strongest pairs are among raw attention's {len(top)} strongest at "
                   f"that layer: " + {"mostly": "raw weights name mostly the same relations here.",
                                      "partly": "raw weights name partly the same relations here: half of them.",
                                      "different": "read as word-to-word relations, raw weights would name different "
                                                   "pairs here."}[_shared(common, len(top))])


def _shared(common, n):
    """How many of rollout's n strongest pairs raw attention shares: "mostly" (more than half), "partly" (exactly
    half) or "different" (fewer)."""
    return "mostly" if 2 * common > n else "partly" if 2 * common == n else "different"


SELF_VERDICT = {  # a word's rollout self-share against uniform attention's with the same residual weight
    "above": "rollout attributes more of each word to its own input word than it would under even attention.",
    "below": "rollout attributes more of each word to the other words than it would under even attention.",
    "level": "the attention adds no measurable preference for a word's own input beyond what even attention gives."}


def _against_uniform(own, uniform):
    return "above" if lower(uniform, own) else "below" if lower(own, uniform) else "level"


def attention_graphs_headline(r):
    f = _graph_findings(r)
    own, uniform = f["own"], f["uniform"]
    what = {"above": "more of a word to its own input word than", "below": "less of a word to its own input word than",
            "level": "about as much of a word to its own input word as"}
    rollout = f["graphs"]["rollout"]
    w = np.asarray(_residual(r, len(rollout.layers), len(rollout.labels)))
    how = f"each layer's residual path taken as {'half' if w == 0.5 else f'{w:g}'} of it" if w.ndim == 0 else (
        "each layer's residual path weighted as measured, " + (", ".join(f"{x:.2f}" for x in w) + " by layer"
                                                              if w.ndim == 1 else f"{w.mean():.2f} on average"))
    text = (f"In the first example sentence, after the last layer rollout ({how}) attributes "
            f"{what[_against_uniform(own, uniform)]} even attention with the same residual would (on average "
            f"{own:.2f}, against {uniform:.2f})")
    if f["common"] is not None:
        text += ", and raw attention names " + {
            "mostly": "mostly the same strongest pairs as rollout",
            "partly": f"partly the same strongest pairs as rollout ({f['common']} of {len(f['top'])})",
            "different": "different strongest pairs than rollout"}[_shared(f["common"], len(f["top"]))]
    if _one_target(f["top"]):
        text += f", all {len(f['top'])} of rollout's strongest leading to {f['top'][0][1]}"
    return text + "."


def _one_target(top):
    """Whether the strongest edges (a, b, weight) all lead to one b (a token every word draws on, such as [CLS])."""
    return len(top) > 1 and len({b for _, b, _ in top}) == 1


def attention_graphs_tables(r):
    f = _graph_findings(r)
    rollout, raw = f["graphs"]["rollout"], f["graphs"]["raw"]
    strongest = raw.strongest(f["last"], len(f["top"])) if raw is not None and f["top"] else []
    edges = {"header": ["rank", "rollout edge", "share", "raw attention edge", "weight"],
             "rows": [[n + 1, f"{a} -> {b}", f"{w:.2f}",
                       *((f"{strongest[n][0]} -> {strongest[n][1]}", f"{strongest[n][2]:.2f}") if n < len(strongest)
                         else ("-", "-"))] for n, (a, b, w) in enumerate(f["top"])]}
    own = {"header": ["after layer", "share of a word rollout gives its own input word"],
           "rows": [[layer, f"{x:.2f}"] for layer, x in zip(rollout.layers, rollout.self_share or [])]}
    return [t for t in (edges, own) if t["rows"]]


GRAPH_PANELS = (("raw", "raw attention"), ("norm_weighted", "norm-weighted"), ("rollout", "rollout"), ("flow", "flow"))


def attention_graphs_plot(r, path, figure_format=None):
    """The first example's raw, norm-weighted, rollout and flow graphs at the last layer, side by side."""
    rollout = r.attention_graphs["rollout"]
    if not rollout:
        return None
    layer = rollout.layers[-1]
    panels = [(key, name) for key, name in GRAPH_PANELS if r.attention_graphs[key]]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), squeeze=False)
    for ax, (key, name) in zip(axes[0], panels):
        # plots.graph_panel draws a graph as attention_graph.json holds it (experiments/figures.py reads those files)
        cut = cut_text(r.attention_graphs[key])
        graph_panel(ax, r.raw[GRAPHS[key]], layer, f"{name}, layer {layer} (edges >= {cut})")
    norm = r.attention_graphs["norm_weighted"]
    whole = "head mean; norm-weighted: the whole layer" if norm and norm.whole_layer == "layer" else "head mean"
    fig.suptitle(f"a -> b: a draws on b ({whole}; edges to itself left out)", fontsize=9)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="attention_graphs", title="Attention as a graph: raw, norm-weighted, rollout and flow",
    needs="attention_graph_rollout", question="How much of a word does rollout attribute to its own input?",
    headline=attention_graphs_headline, text=attention_graphs_text, tables=attention_graphs_tables,
    figure=attention_graphs_plot, reads="results",
    alt="Graphs of the first example's words at the last layer, nodes on a circle, arrows a -> b where a draws on b: "
        "raw attention, norm-weighted attention, attention rollout and attention flow side by side")
