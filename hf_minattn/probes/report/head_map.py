"""The head similarity map: do heads in the same layer attend alike? Heads placed by classical MDS of their
Jensen-Shannon distances."""

import matplotlib.pyplot as plt
import numpy as np

from ...stats import group_permutation_p
from ..plots import save_figure
from .page import Section
from .words import cell, lower, p_text


def _js_within_between(h, skip_layer0=False):
    """(mean JS divergence between heads of the same layer, between heads of different layers, the permutation p of
    that gap over layer labels: `stats.group_permutation_p`), or None when there are too few heads to compare.
    `skip_layer0`: without layer 0's heads (often near-uniform in a trained model, so alike by default)."""
    js = np.array(h.js_divergence)
    layer = np.repeat(np.arange(h.num_layers), h.num_heads)
    if skip_layer0:
        js, layer = js[layer > 0][:, layer > 0], layer[layer > 0]
    same = (layer[:, None] == layer[None, :]) & ~np.eye(len(js), dtype=bool)
    different = layer[:, None] != layer[None, :]
    if not same.any() or not different.any():
        return None
    return float(js[same].mean()), float(js[different].mean()), group_permutation_p(js, layer)


def _clusters(pair):
    """Heads cluster by layer: closer within, as shown, and the permutation test below 0.05."""
    within, across, p = pair
    return lower(within, across, 3) and p < 0.05


def head_map_text(r):
    pair = _js_within_between(r.heads)
    if pair is None:
        return "Too few heads to compare within and between layers."
    a, b, p = pair
    closer = _clusters(pair)
    text = (f"Heads as points whose distances follow their Jensen-Shannon divergence: heads of the same layer are "
            f"{'closer' if closer else 'not shown to be closer'} (mean JS {a:.3f}) than heads of different layers "
            f"({b:.3f}; one-sided permutation p {p_text(p)} over the heads' layer labels), so "
            f"{'heads cluster by layer' if closer else 'behaviour is not shown to cluster by layer'}.")
    rest = _js_within_between(r.heads, skip_layer0=True) if r.heads.num_layers > 2 else None
    if rest is not None:
        text += (f" Without layer 0: {rest[0]:.3f} within, {rest[1]:.3f} across, p {p_text(rest[2])}: "
                 + ("they still cluster." if _clusters(rest) else "the clustering is not shown without it."))
    return text


def head_map_headline(r):
    pair = _js_within_between(r.heads)
    if pair is None:
        return "Too few heads to compare within and between layers."
    a, b, p = pair
    numbers = f"mean Jensen-Shannon divergence {a:.3f} within a layer, {b:.3f} across layers, permutation p {p_text(p)}"
    if _clusters(pair):
        return f"Yes: heads of the same layer attend more alike than heads of different layers ({numbers})."
    return f"No: heads of the same layer are not shown to attend more alike than heads of different layers ({numbers})."


def head_map_tables(r):
    within = r.heads.within_layer_js
    if not within:
        return []
    return [{"header": ["layer", "mean JS divergence between its heads"],
             "rows": [[layer, cell(v, fmt=".3f")] for layer, v in enumerate(within)]}]


def head_map_plot(r, path, figure_format=None):
    h = r.heads
    if not h:
        return None
    xy = np.array(h.mds)
    layer = np.repeat(np.arange(h.num_layers), h.num_heads)
    fig, ax = plt.subplots(figsize=(5, 4.2))
    points = ax.scatter(xy[:, 0], xy[:, 1], c=layer, cmap="viridis", s=40)
    for k, (x, y) in enumerate(xy):
        ax.annotate(f"{k // h.num_heads}-{k % h.num_heads}", (x, y), fontsize=6)
    fig.colorbar(points, ax=ax, label="layer")
    ax.set_title("heads by Jensen-Shannon distance (classical MDS)", fontsize=10)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="head_map", title="Head similarity map", needs="heads", question="Do heads in the same layer behave alike?",
    reads="results", headline=head_map_headline, text=head_map_text, tables=head_map_tables, figure=head_map_plot,
    alt="Scatter plot: every head (layer-head) placed by classical MDS of Jensen-Shannon distances, coloured by layer")
