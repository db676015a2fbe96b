"""What the attention heads look at (Clark et al. 2019): each head's attention entropy and its mass on the previous
and next token, itself, [CLS], [SEP] and punctuation."""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import layer_by_head, save_figure
from .page import Section
from .words import cell


HEAD_TARGETS = (("previous", "previous token"), ("next", "next token"), ("self", "itself"), ("sep", "[SEP]"),
                ("cls", "[CLS]"), ("punctuation", "punctuation"))


def _strongest_heads(h):
    """[(label, layer, head, mass, ratio to uniform or None)]: per target, the head that gives it the most
    attention; no next token in a causal model (h.causal), which cannot see it."""
    stats, H = h.stats, h.num_heads
    relative = h.relative_to_uniform or {}
    out = []
    for key, label in HEAD_TARGETS:
        if key in stats and not (key == "next" and getattr(h, "causal", None)):
            values = np.array(stats[key])
            k = int(np.argmax(values))
            ratio = relative[key][k // H][k % H] if key in relative else None
            out.append((label, k // H, k % H, float(values.flat[k]), ratio))
    return out


def _entropy(h):
    """(mean entropy per layer, focused): attention is focused on average when its mean entropy is at most 0.8 of
    uniform attention's."""
    ent = np.array(h.stats["entropy"]).mean(axis=1)
    return ent, not ent.mean() > 0.8 * h.uniform_entropy


def mass_text(mass, ratio=None):
    """ "mass 0.45 (12x uniform)": a head's mean attention on a target, with its ratio to uniform where known."""
    if ratio is None:
        return f"mass {mass:.2f}"
    return f"mass {mass:.2f} ({ratio:.1f}x uniform)" if ratio < 10 else f"mass {mass:.2f} ({ratio:.0f}x uniform)"


def target_object(label):
    """A target's label as the object of "attends to": "the previous token", "itself", "[CLS]", "punctuation"."""
    return label if label in ("itself", "punctuation") or label.startswith("[") else f"the {label}"


def heads_text(r):
    h = r.heads
    ent, focused = _entropy(h)
    parts = [f"{label}: head {layer}-{head}, {mass_text(mass, ratio)}" for label, layer, head, mass, ratio in
             _strongest_heads(h)]
    return (f"Over {h.tokens} query tokens in {h.sentences} sentences, mean attention entropy per layer is "
            f"{', '.join(f'{e:.2f}' for e in ent)} nats against {h.uniform_entropy:.2f} for uniform attention "
            f"({'focused' if focused else 'broad'} attention on average). The head "
            f"(layer-head) that attends most to each target, with its attention mass (mean over queries) and the "
            f"ratio to uniform attention on the same queries: " + "; ".join(parts) + ".")


def heads_headline(r):
    h = r.heads
    ent, focused = _entropy(h)
    how = "focus their attention" if focused else "spread their attention broadly"
    mean, even = ent.mean(), h.uniform_entropy  # exp(entropy): the number of tokens equally weighted attention covers
    text = (f"On average the heads {how} (mean entropy {mean:.2f} nats, about {np.exp(mean):.0f} tokens' worth; "
            f"{even:.2f}, about {np.exp(even):.0f}, if spread evenly; by layer {ent.min():.2f} to {ent.max():.2f})")
    strongest = _strongest_heads(h)
    if not strongest:
        return text + "."
    label, layer, head, mass, _ = max(strongest, key=lambda x: x[3])
    return text + (f"; the most single-minded is head {layer}-{head}, which gives {mass:.0%} of its attention to "
                   f"{target_object(label)}.")


def heads_tables(r):
    h = r.heads
    ent, _ = _entropy(h)
    H = h.num_heads
    per_layer = {"header": ["layer", "mean entropy (nats)", "uniform attention"],
                 "rows": [[layer, f"{e:.2f}", f"{h.uniform_entropy:.2f}"] for layer, e in enumerate(ent)]}
    strongest = {"header": ["target", "head (layer-head)", "attention mass", "x uniform"],
                 "rows": [[label, f"{layer}-{head}", f"{mass:.2f}", cell(ratio, fmt=".1f")]
                          for label, layer, head, mass, ratio in _strongest_heads(h)]}
    keys = [(k, label) for k, label in (("entropy", "entropy (nats)"), *HEAD_TARGETS) if k in h.stats]
    stats = {k: np.array(h.stats[k]) for k, _ in keys}
    per_head = {"header": ["head", *[label for _, label in keys]], "details": True,
                "rows": [[f"{k // H}-{k % H}", *[f"{stats[key].flat[k]:.2f}" for key, _ in keys]]
                         for k in range(stats["entropy"].size)]}
    return [per_layer, strongest, per_head]


HEAD_STATS = (("entropy", "entropy (nats)"), ("self", "to self"), ("previous", "to previous"), ("next", "to next"),
              ("cls", "to [CLS]"), ("sep", "to [SEP]"), ("punctuation", "to punctuation"))


def heads_plot(r, path, figure_format=None):
    h = r.heads
    if not h:
        return None
    fig, axes = plt.subplots(1, len(HEAD_STATS), figsize=(2.3 * len(HEAD_STATS), 0.5 * h.num_layers + 1.8))
    for ax, (key, title) in zip(axes, HEAD_STATS):
        layer_by_head(fig, ax, np.array(h.stats[key]), title, cmap="magma", vmin=0,
                       vmax=None if key == "entropy" else 1)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="heads", title="What the heads attend to (Clark et al. 2019)", needs="heads",
    question="What do the attention heads look at?",
    reads="results", headline=heads_headline, text=heads_text, tables=heads_tables, figure=heads_plot,
    alt="Heat maps over layer and head: attention entropy and attention to self, previous token, next token, [CLS], "
        "[SEP] and punctuation")
