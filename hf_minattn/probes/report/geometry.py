"""Geometry by layer (Ethayarajh 2019): do higher layers make a word's vector depend more on its sentence?"""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from .page import Section
from .words import cell, differ, lower, signed_interval


def _word_filter(r):
    """The thresholds the geometry probe used, as stored in probes.json (min_contexts: distinct sentences;
    min_count: the run's --min-count, implied by min_contexts when it is not larger)."""
    min_contexts = r.geometry.min_contexts
    min_count = ((r.provenance or {}).get("arguments") or {}).get("min_count")
    if min_contexts is None:
        return f"each seen >= {min_count} times, " if min_count is not None else ""
    more = f" and seen >= {min_count} times" if min_count is not None and min_count > min_contexts else ""
    return f"each in >= {min_contexts} distinct sentences{more}, "


def _trend(g):
    """How baseline-adjusted self-similarity moves from layer 0 to the last layer: "falls" (the published trend),
    "rises" or "level". Read from the interval over the words (`layer_contrast`) where the file has one, else from
    the means at the precision shown (older files)."""
    c = g.layer_contrast
    if c is not None:
        return "falls" if c["high"] < 0 else "rises" if c["low"] > 0 else "level"
    adj = g.adjusted_self_similarity
    return "falls" if lower(adj[-1], adj[0]) else "rises" if lower(adj[0], adj[-1]) else "level"


TREND_WORDS = {"falls": "upper layers are more context-specific, the published trend",
               "rises": "upper layers are less context-specific, against the published trend",
               "level": "the published trend (upper layers more context-specific) is not shown here"}


def _contrast(g):
    """"; last - layer 0, per word: -0.12 [-0.14, -0.10]" where the probe measured it, else ""."""
    c = g.layer_contrast
    return "" if c is None else (f"; last layer - layer 0, per word: "
                                 f"{signed_interval(c['estimate'], c['low'], c['high'])}, 95% bootstrap over the "
                                 f"{c['words']} words")


def _against_baseline(adjusted):
    """"0.12 above", "0.02 below" or "level with" (within the precision shown) for an adjusted value raw - baseline."""
    if not differ(adjusted, 0):
        return "level with"
    return f"{abs(adjusted):.2f} {'above' if adjusted > 0 else 'below'}"


def geometry_text(r):
    g = r.geometry
    adj, layers = g.adjusted_self_similarity, g.layers
    low = int(np.argmin(adj))
    trend = _trend(g)
    level = ", not told apart from 0 over the words" if g.layer_contrast else ", equal at the precision shown"
    verb = {"falls": "falls", "rises": "rises", "level": "goes"}[trend]
    return (f"Baseline-adjusted self-similarity of {g.words_scored} words ({_word_filter(r)}"
            f"~{g.occurrences_per_word:.0f} occurrences kept) {verb} from {adj[0]:.2f} at layer 0 to "
            f"{adj[-1]:.2f} at layer {layers[-1]} (lowest {adj[low]:.2f} at layer {low}{_contrast(g)}"
            f"{level if trend == 'level' else ''}): " + TREND_WORDS[trend] + ". "
            f"Anisotropy, the mean cosine of two random words from different sentences, ranges from "
            f"{min(g.anisotropy):.2f} to {max(g.anisotropy):.2f} over the layers. Intra-sentence similarity (adjusted) "
            "goes "
            f"from {g.adjusted_intra_similarity[0]:.2f} to {g.adjusted_intra_similarity[-1]:.2f}. At the last layer "
            f"the first principal direction of a word's (uncentred) occurrence vectors explains {g.mev[-1]:.0%} of their "
            f"variance (MEV; {_against_baseline(g.adjusted_mev[-1])} the random-words baseline), so a single static "
            f"vector {'could stand in for most of' if g.adjusted_mev[-1] > 0.5 else 'captures only part of'} a word's "
            f"contextual vectors.")


# What the embedding output is called, by whether the probe measured a position term in it (None: not recorded)
LAYER0_OUTPUT = {True: "hidden_states[0], with positions", False: "hidden_states[0], no position term measured",
                 None: "hidden_states[0]"}


def _layer0_parts(g):
    """"the anisotropy baseline is 0.57 at layer 0 against 0.15": which of the two parts of adjusted self-similarity
    (raw - baseline) differ between layer 0 and the word embeddings alone at the precision shown ("" if neither)."""
    parts = (("raw self-similarity", (g.self_similarity or [None])[0], g.static.self_similarity),
             ("anisotropy baseline", (g.anisotropy or [None])[0], g.static.anisotropy))
    shown = [f"the {name} is {a:.2f} at layer 0 against {b:.2f}" for name, a, b in parts
             if a is not None and b is not None and differ(a, b)]
    return " and ".join(shown)


# Who the layer-0 sentence credits with the difference, by whether the probe measured a position term (None: not
# recorded, files from before the field): the position signal only where one was measured
LAYER0_SUBJECT = {True: "The position signal", False: "With no position term measured, the embedding output",
                  None: "The embedding output"}


def _layer0_verdict(g, way):
    """The sentence on layer 0 against the word alone: "less" / "more" alike or None (equal as shown). The position
    signal is named only where the probe measured a position term; otherwise the parts that differ are."""
    subject = LAYER0_SUBJECT[g.layer0_position]
    if way is None:
        return (f"{subject} does not measurably change how alike a word's occurrences are (equal at the precision "
                "shown).")
    parts = "" if g.layer0_position else _layer0_parts(g)
    ending = f", where {parts}." if parts else "."
    return f"{subject} makes a word's occurrences {way} alike than the word alone{ending}"


def layer0_text(r):
    g = r.geometry
    static, layer0 = g.static.adjusted_self_similarity, g.adjusted_self_similarity[0]
    way = "less" if lower(layer0, static) else "more" if lower(static, layer0) else None
    return (f"Layer 0 measured two ways: the embedding output ({LAYER0_OUTPUT[g.layer0_position]}) has adjusted "
            f"self-similarity {layer0:.2f}; the word embeddings alone (static, no positions) {static:.2f} (raw 1 by "
            f"construction minus their anisotropy baseline {g.static.anisotropy:.2f}). " + _layer0_verdict(g, way)
            + f" ({g.layer0_note or ''})")


def geometry_with_layer0_text(r):
    """The section's paragraph: the geometry, then layer 0 against the word embeddings alone where measured."""
    return geometry_text(r) + (" " + layer0_text(r) if r.geometry.static else "")


def geometry_headline(r):
    g = r.geometry
    adj = g.adjusted_self_similarity
    low = int(np.argmin(adj))
    numbers = f"adjusted self-similarity {adj[0]:.2f} at layer 0, {adj[-1]:.2f} at layer {g.layers[-1]}{_contrast(g)}"
    if lower(adj[low], adj[-1]):  # not monotone: the lowest layer is below the last
        numbers += f"; lowest {adj[low]:.2f} at layer {g.layers[low]}, then up again"
    trend = _trend(g)
    if trend == "falls":
        return (f"Yes: the same word's vectors in different sentences grow less alike in higher layers ({numbers}), "
                "as Ethayarajh (2019) found.")
    if trend == "rises":
        return (f"No: the same word's vectors in different sentences grow more alike in higher layers ({numbers}), "
                "unlike Ethayarajh (2019).")
    return (f"Not shown: the same word's vectors in different sentences are not shown to grow less alike in higher "
            f"layers ({numbers}).")


GEOMETRY_COLUMNS = (("self_similarity", "self-similarity"), ("anisotropy", "anisotropy (random pairs)"),
                    ("adjusted_self_similarity", "adjusted self-similarity"),
                    ("intra_similarity", "intra-sentence similarity"),
                    ("adjusted_intra_similarity", "adjusted intra-sentence"), ("mev", "MEV"),
                    ("mev_baseline", "MEV baseline"), ("adjusted_mev", "adjusted MEV"))


def geometry_tables(r):
    g = r.geometry
    rows = [[layer, *[cell(getattr(g, key), i) for key, _ in GEOMETRY_COLUMNS]] for i, layer in enumerate(g.layers)]
    if g.static:  # the word embeddings alone, no positions
        rows.insert(0, ["static", *[cell(getattr(g.static, key)) for key, _ in GEOMETRY_COLUMNS]])
    return [{"header": ["layer", *[label for _, label in GEOMETRY_COLUMNS]], "rows": rows}]


def geometry_plot(r, path, figure_format=None):
    g = r.geometry
    fig, (raw, adjusted) = plt.subplots(1, 2, figsize=(10, 3.8))
    for key, label in [("self_similarity", "self-similarity"), ("intra_similarity", "intra-sentence"),
                       ("mev", "max. explainable variance"), ("anisotropy", "baseline: random words"),
                       ("mev_baseline", "MEV baseline")]:
        raw.plot(g.layers, getattr(g, key), marker="o", label=label, linestyle="--" if "baseline" in label else "-")
    for key, label in [("adjusted_self_similarity", "self-similarity"),
                       ("adjusted_intra_similarity", "intra-sentence"), ("adjusted_mev", "MEV")]:
        adjusted.plot(g.layers, getattr(g, key), marker="o", label=label)
    if g.static:  # the word embeddings alone (no position signal), beside layer 0
        adjusted.plot([0], [g.static.adjusted_self_similarity], marker="*", markersize=12, linestyle="none",
                      color="k", label="self-sim., word embeddings alone")
    raw.set_title("raw (dashed: anisotropy baselines)")
    adjusted.set_title("baseline-adjusted (raw - baseline)")
    for ax in (raw, adjusted):
        ax.set_xlabel("layer (0 = embedding output)")
        ax.legend(fontsize=8)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="geometry", title="Geometry by layer (Ethayarajh 2019)", needs="geometry",
    question="Do higher layers make a word's vector depend more on its sentence?",
    headline=geometry_headline, text=geometry_with_layer0_text, tables=geometry_tables, figure=geometry_plot,
    reads="results",
    alt="Line charts by layer: self-similarity, intra-sentence similarity and maximum explainable variance, raw with "
        "their anisotropy baselines (left) and baseline-adjusted (right)")
