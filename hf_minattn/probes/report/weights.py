"""QK and OV circuits: did training make the heads' weight matrices simpler? Each head's circuits' singular values
and effective rank, trained and at initialisation."""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from .page import Section
from .words import lower


def _effective_ranks(w):
    """(trained, initial or None, verdict, whether the mean is lower): mean effective rank {"qk", "ov", "both" (their
    mean)} over every head; verdict "lower" where the trained circuits' mean rank of both is below the initial one's
    as printed (one decimal) and most head circuits are lower too (a few heads can carry a mean), "not lower" where
    neither holds, "mixed" where one does."""
    t = {c: float(np.mean(getattr(w.trained, f"{c}_effective_rank"))) for c in ("qk", "ov")}
    t["both"] = (t["qk"] + t["ov"]) / 2
    if not w.initial:
        return t, None, None, None
    i = {c: float(np.mean(getattr(w.initial, f"{c}_effective_rank"))) for c in ("qk", "ov")}
    i["both"] = (i["qk"] + i["ov"]) / 2
    heads_lower, heads = _lower_heads(w)
    mean_lower = lower(t["both"], i["both"], 1)
    return t, i, ("not lower", "mixed", "lower")[int(mean_lower) + int(2 * heads_lower > heads)], mean_lower


def weights_text(r):
    w = r.weights
    t, i, verdict, mean_lower = _effective_ranks(w)
    text = (f"Per-head QK (W_Q^T W_K) and OV (W_O W_V) circuits, from {w.source}: mean effective rank "
            f"(entropy-based, Roy & Vetterli) QK {t['qk']:.1f}, OV {t['ov']:.1f} of at most {w.head_dim}")
    if i is not None:
        verdict = {"lower": "lower: on average the trained heads use fewer directions",
                   "not lower": "not lower: on average the trained heads do not use fewer directions",
                   "mixed": f"{'lower' if mean_lower else 'not lower'}, but the heads disagree: whether the trained heads use fewer directions "
                            "is not clear"}[verdict]
        text += (f", against QK {i['qk']:.1f}, OV {i['ov']:.1f} for the same model at random initialisation "
                 f"({'; '.join(w.notes or []) or 'its own initial weights'}): the trained circuits' mean rank of both, "
                 f"{t['both']:.1f} against {i['both']:.1f}, is {verdict} ({_lower_heads_text(w)})")
    return text + ". Biases and LayerNorm are ignored."


def weights_headline(r):
    w = r.weights
    t, i, verdict, _ = _effective_ranks(w)
    trained = t["both"]
    if i is None:
        return (f"Each head's circuits use on average {trained:.1f} of at most {w.head_dim} directions (effective "
                "rank); no copy of the model at initialisation was measured to compare.")
    initial = i["both"]
    numbers = (f"mean effective rank {trained:.1f} of at most {w.head_dim}, against {initial:.1f} at random "
               f"initialisation; {_lower_heads_text(w)}")
    if verdict == "lower":
        return f"Yes: on average the trained heads' QK and OV circuits use fewer directions ({numbers})."
    if verdict == "mixed":
        return (f"Not clear: the mean effective rank and the count of head circuits below their initial rank "
                f"disagree on whether the trained heads use fewer directions ({numbers}).")
    return f"No: on average the trained heads' QK and OV circuits do not use fewer directions ({numbers})."


def _lower_heads(w):
    """(k, n): of the n head circuits (QK and OV of every head), the k whose trained effective rank is below its own
    at initialisation, as shown (one decimal)."""
    pairs = [pair for c in ("qk", "ov")  # (layers, heads) of each: one rank per head circuit
             for pair in zip(np.ravel(getattr(w.trained, f"{c}_effective_rank")),
                             np.ravel(getattr(w.initial, f"{c}_effective_rank")))]
    return sum(lower(a, b, 1) for a, b in pairs), len(pairs)


def _lower_heads_text(w):
    """"k of n head circuits lower"."""
    return "{} of {} head circuits lower".format(*_lower_heads(w))


def weights_tables(r):
    w = r.weights
    runs = [("trained", w.trained)] + ([("initial", w.initial)] if w.initial else [])
    ranks = {(name, c): np.array(getattr(run, f"{c}_effective_rank"), dtype=float) for name, run in runs for c in ("qk", "ov")}
    header = [f"{c.upper()} rank, {name}" for name, _ in runs for c in ("qk", "ov")]
    layers = len(ranks["trained", "qk"])
    per_layer = {"header": ["layer", *header],
                 "rows": [[layer, *[f"{ranks[name, c][layer].mean():.1f}" for name, _ in runs for c in ("qk", "ov")]]
                          for layer in range(layers)]}
    per_head = {"header": ["head", *header], "details": True,
                "rows": [[f"{layer}-{head}", *[f"{ranks[name, c][layer][head]:.1f}" for name, _ in runs
                                               for c in ("qk", "ov")]]
                         for layer in range(layers) for head in range(len(ranks["trained", "qk"][layer]))]}
    return [per_layer, per_head]


def weights_plot(r, path, figure_format=None):
    w = r.weights
    if not w:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, circuit in zip(axes[:2], ("qk", "ov")):
        for label, spectra, style in [("trained", w.trained, "-"), ("initial", w.initial, ":")]:
            if not spectra:
                continue
            for layer, heads in enumerate(getattr(spectra, f"{circuit}_singular_values")):
                normalised = np.mean([np.array(v) / max(v[0], 1e-12) for v in heads], axis=0)  # mean over heads
                ax.plot(normalised, style, color=plt.cm.viridis(layer / max(1, len(getattr(spectra, f"{circuit}_singular_values")) - 1)),
                        label=f"{label} layer {layer}")
        ax.set_yscale("log")
        ax.set_title(f"{circuit.upper()} circuit spectrum (sigma_i / sigma_1, mean over heads)", fontsize=9)
        ax.set_xlabel("index")
        ax.legend(fontsize=6, ncol=2)
    ax = axes[2]
    for label, spectra, style in [("trained", w.trained, "-"), ("initial", w.initial, ":")]:
        if spectra:
            for circuit, marker in (("qk", "o"), ("ov", "s")):
                ranks = np.mean(getattr(spectra, f"{circuit}_effective_rank"), axis=1)
                ax.plot(ranks, style, marker=marker, label=f"{circuit.upper()} {label}")
    ax.axhline(w.head_dim, color="grey", linewidth=0.8, label="head_dim (max)")
    ax.set_xlabel("layer")
    ax.set_title("effective rank (Roy & Vetterli), mean over heads", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="weights", title="QK and OV circuits", needs="weights",
    question="Did training make the heads' weight matrices simpler?",
    reads="results", headline=weights_headline, text=weights_text, tables=weights_tables, figure=weights_plot,
    alt="QK and OV circuit singular-value spectra per layer and their effective rank by layer, trained (and at "
        "initialisation where measured)")
