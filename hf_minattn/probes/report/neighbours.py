"""Nearest neighbours: do a word's nearest words change by the last layer? The probe words' nearest words in the
static embeddings, each layer and word2vec (a table, no figure)."""

import numpy as np

from .page import Section, macros


NEIGHBOURS = 6  # nearest words shown and compared per vector set


def _neighbour_overlap(n):
    """(last layer's set name, {word: how many of its NEIGHBOURS nearest words the static embeddings and the last
    layer share}), or None without both sets."""
    layers = sorted((k for k in n.neighbours if k.startswith("layer_") and k[6:].isdigit()),
                    key=lambda k: int(k[6:]))
    if "static" not in n.neighbours or not layers:
        return None
    last, static = n.neighbours[layers[-1]], n.neighbours["static"]
    near = lambda table, word: {w for w, _ in table.get(word, [])[:NEIGHBOURS]}  # noqa: E731
    return layers[-1], {word: len(near(static, word) & near(last, word)) for word in n.words
                        if word not in n.oov and word in static and word in last}


def neighbours_headline(r):
    n = r.neighbours
    overlap = _neighbour_overlap(n)
    if not overlap or not overlap[1]:
        return (f"The nearest words of {len(n.words)} probe words in each vector set (no static and last-layer "
                "sets to compare).")
    last, shared = overlap
    mean = float(f"{np.mean(list(shared.values())):.1f}")  # as the sentence prints it
    verdict = ("mostly stay the same as" if mean > NEIGHBOURS / 2 else "are half shared with" if mean == NEIGHBOURS / 2
               else "mostly change from")
    return (f"At the last layer ({last.replace('_', ' ')}) the probe words' nearest words {verdict} those of the "
            f"input embeddings: on average {mean:.1f} of the {NEIGHBOURS} nearest are shared "
            f"({min(shared.values())} to {max(shared.values())} over {len(shared)} words).")


def neighbours_tables(r):
    n = r.neighbours
    overlap = _neighbour_overlap(n)
    sets = [k for k in ("static", overlap[0] if overlap else None, "word2vec") if k and k in n.neighbours]
    shared = overlap[1] if overlap else {}
    near = lambda name, word: ", ".join(w for w, _ in n.neighbours[name].get(word, [])[:NEIGHBOURS])  # noqa: E731
    shared_header = ["shared (static, last layer)"] if shared else []
    return [{"header": ["word", *[s.replace("_", " ") for s in sets], *shared_header],
             "rows": [[word, *[near(name, word) for name in sets], *([shared.get(word, "-")] if shared else [])]
                      for word in n.words if word not in n.oov]}]


def neighbours_html(r):
    n = r.neighbours
    sets = [k for k in n.neighbours if k == "static" or k == "word2vec" or k.startswith("layer_")]
    rows = [[word, name, ", ".join(f"{w} ({c:.2f})" for w, c in n.neighbours[name][word][:6])]
            for word in n.words if word not in n.oov for name in sets]
    return macros().neighbours(rows, n.oov)


SECTION = Section(
    name="neighbours", title="Nearest neighbours: static vs each layer", needs="neighbours",
    question="Do a word's nearest words change by the last layer?",
    reads="results", headline=neighbours_headline, tables=neighbours_tables, details_html=neighbours_html)
