"""Attention in the example sentences: every head of every layer on the first and the second example, and the head
with the sharpest attention on each."""

from collections import Counter
from functools import partial

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
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
    text = (f"Every head of every layer on {sentence!r} (row = attending token, column = attended token): the "
            "patterns behind the statistics above")
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
    return [{"header": ["head", "mean entropy (nats)", "where most tokens look hardest", f"tokens (of {n})"],
             "details": True,
             "rows": [[f"{layer}-{head}", f"{entropy:.2f}", place, count]
                      for layer, head, entropy, place, count in _example_heads(example)]}]


def attention_example_plot(r, path, index=0, figure_format=None):
    h = r.heads
    if not h or len(h.examples) <= index:
        return None
    ex = h.examples[index]
    att = np.array(ex.attention)
    L, H = att.shape[:2]
    fig, axes = plt.subplots(L, H, figsize=(2.0 * H, 2.0 * L), squeeze=False)
    ticks = range(len(ex.tokens))
    for l in range(L):
        for k in range(H):
            ax = axes[l][k]
            ax.imshow(att[l, k], cmap="Blues", vmin=0, vmax=1)
            ax.set_title(f"layer {l} head {k}", fontsize=7)
            # Tokens label the bottom row and the left column only: ticks on every inner panel (12 x 6 of them for
            # a BERT-base-sized model) made this figure most of the report's drawing time.
            ax.set_xticks(ticks if l == L - 1 else [], ex.tokens if l == L - 1 else [], rotation=90, fontsize=5)
            ax.set_yticks(ticks if k == 0 else [], ex.tokens if k == 0 else [], fontsize=5)
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
