"""Attention in the example sentences: every head of every layer on the first and the second example, and the head
with the sharpest attention on each."""

from collections import Counter
from functools import partial

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from ..results import shown_tokens
from .page import Section


def _example_heads(example):
    """Per head of one example sentence: (layer, head, mean entropy of its rows, the commonest place of its
    strongest weight, how many rows put it there). The place is the token itself, the previous or next token,
    a special token (by its text) or punctuation, else another token."""
    tokens = example.tokens
    out = []
    for layer, heads in enumerate(example.attention):
        for head, a in enumerate(heads):
            a = np.array(a, dtype=float)
            p = np.clip(a, 1e-12, None)
            entropy = float(-(a * np.log(p)).sum(axis=1).mean())
            places = Counter(_place(i, int(j), tokens) for i, j in enumerate(a.argmax(axis=1)))
            place, count = places.most_common(1)[0]
            out.append((layer, head, entropy, place, count))
    return out


def _place(i, j, tokens):
    if j == i:
        return "itself"
    if j == i - 1:
        return "the previous token"
    if j == i + 1:
        return "the next token"
    if tokens[j] in ("[CLS]", "[SEP]", "<s>", "</s>"):
        return tokens[j]
    if all(not c.isalnum() for c in tokens[j]):
        return "punctuation"
    return "another token"


def example_text(r, index=0):
    sentence = r.heads.examples[index].sentence
    # the statistics above average over the probe sentences: this one need not be among them
    text = (f"Every head of every layer on {sentence!r} (row = attending token, column = attended token): attention "
            "on one example sentence, not an average over the probe sentences that the statistics above measure")
    return text + ("; the same attention pooled to words is exported as a weighted directed graph in "
                   "attention_graph.json." if index == 0 else ".")


def example_headline(r, index=0):
    """A measured description: the head with the sharpest attention on this sentence, and where it looks."""
    example = r.heads.examples[index]
    heads = _example_heads(example)
    n = len(example.tokens)
    layer, head, entropy, place, count = min(heads, key=lambda x: x[2])
    return (f"In '{example.sentence}', head {layer}-{head} attends most sharply (lowest mean entropy): {count} of "
            f"its {n} tokens look hardest at {place}.")


def example_tables(r, index=0):
    example = r.heads.examples[index]
    n = len(example.tokens)
    return [{"header": ["head", "mean entropy (nats)", "where the most tokens look hardest", f"tokens (of {n})"],
             "details": True,
             "rows": [[f"{layer}-{head}", f"{entropy:.2f}", place, count]
                      for layer, head, entropy, place, count in _example_heads(example)]}]


def attention_example_plot(r, path, index=0, figure_format=None):
    h = r.heads
    if not h or len(h.examples) <= index:
        return None
    ex = h.examples[index]
    att = np.array(ex.attention)  # (L, H, n, n)
    L, H, n = att.shape[0], att.shape[1], att.shape[-1]
    # One image of L x H panels with a blank strip around each, not L x H axes: the 72 axes of a 6 x 12 model
    # (all-MiniLM-L6-v2) made this figure most of the report's drawing time.
    gap = max(1, n // 6)
    step = n + gap
    panels = np.pad(att, ((0, 0), (0, 0), (gap, 0), (0, gap)), constant_values=np.nan)  # (L, H, step, step)
    mosaic = panels.transpose(0, 2, 1, 3).reshape(L * step, H * step)[:, : H * step - gap]  # (L*step, H*step-gap)
    fig, ax = plt.subplots(figsize=(2.0 * H, 2.0 * L))
    ax.imshow(mosaic, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    for l in range(L):
        for k in range(H):  # each panel's title in the strip above it
            ax.text(k * step + (n - 1) / 2, l * step + gap - 0.6, f"layer {l} head {k}", ha="center", va="bottom",
                    fontsize=7)
    # Tokens label the bottom row of panels and the left column.
    ax.set_xticks([k * step + t for k in range(H) for t in range(n)], shown_tokens(ex) * H, rotation=90, fontsize=5)
    ax.set_yticks([l * step + gap + t for l in range(L) for t in range(n)], shown_tokens(ex) * L, fontsize=5)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    return save_figure(fig, path, figure_format)


FIRST = Section(
    name="attention_example", title="Attention in an example sentence", needs="heads", reads="results",
    question="What does attention look like on one sentence?",
    headline=example_headline, text=example_text, tables=example_tables, figure=attention_example_plot,
    alt="Grid of attention matrices, one per layer and head, for the first example sentence")
SECOND = Section(
    name="attention_example_2", title="Attention in a second example sentence", needs="heads", reads="results",
    question="And on a second sentence?",
    headline=partial(example_headline, index=1), text=partial(example_text, index=1),
    tables=partial(example_tables, index=1), figure=partial(attention_example_plot, index=1),
    alt="Grid of attention matrices, one per layer and head, for the second example sentence")
