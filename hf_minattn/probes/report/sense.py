"""One word, several meanings: does the sentence move one word's vectors apart? The cosine between the same word's
vectors in a few sentences, layer by layer."""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from .page import Section
from .words import lower


def _sense_means(sense):
    """The mean cosine between the word's occurrences (off the diagonal), per layer."""
    n = len(sense.similarity[0])
    off = ~np.eye(n, dtype=bool)
    return [float(np.array(m)[off].mean()) for m in sense.similarity]


def _sense_apart(sense):
    """(first, last, apart): the mean cosine at layer 0 and the last layer; apart when it falls, as shown."""
    means = _sense_means(sense)
    return means[0], means[-1], lower(means[-1], means[0])


def _same_and_cross(sense):
    """(mean cosine of same-sense pairs, of cross-sense pairs) at the last layer; None where the senses are unknown
    or a kind of pair is missing."""
    labels = np.asarray(sense.senses or [])
    if len(labels) != len(sense.sentences):
        return None
    sim, off = np.array(sense.similarity[-1]), ~np.eye(len(labels), dtype=bool)
    same = (labels[:, None] == labels[None, :]) & off
    cross = labels[:, None] != labels[None, :]
    return (float(sim[same].mean()), float(sim[cross].mean())) if same.any() and cross.any() else None


def sense_text(r):
    sense = r.sense
    first, last, apart = _sense_apart(sense)
    text = (f"The same word '{sense.word}' in {len(sense.sentences)} sentences: the mean cosine between its occurrences "
            f"is {first:.2f} at layer 0 and {last:.2f} at layer {sense.layers[-1]}, so context "
            f"{'moves the vector apart with its sentence' if apart else 'barely separates the occurrences'}")
    pairs = _same_and_cross(sense)
    if pairs is None:
        return text + "; the block structure shows whether same-sense sentences stay closer to each other."
    same, cross = pairs
    closer = ("closer to each other than to the other sense's" if lower(cross, same) else
              "no closer to each other than to the other sense's")
    return text + (f". At layer {sense.layers[-1]} the occurrences of one sense are {closer} (mean cosine {same:.2f} "
                   f"within a sense, {cross:.2f} across; {len(sense.sentences)} sentences, so no interval).")


def sense_headline(r):
    sense = r.sense
    first, last, apart = _sense_apart(sense)
    numbers = f"mean cosine {first:.2f} at layer 0, {last:.2f} at layer {sense.layers[-1]}"
    if apart:
        return (f"Yes: the vectors of '{sense.word}' in {len(sense.sentences)} sentences are less alike at the last "
                f"layer than at layer 0 ({numbers}).")
    return (f"No: the vectors of '{sense.word}' in {len(sense.sentences)} sentences do not move apart with "
            f"their sentence ({numbers}).")


def sense_tables(r):
    sense = r.sense
    return [{"header": ["layer", "mean cosine between the occurrences"],
             "rows": [[layer, f"{m:.2f}"] for layer, m in zip(sense.layers, _sense_means(sense))]},
            {"header": ["sentence", f"nearest words at layer {sense.layers[-1]}"],
             "rows": [[sent, ", ".join(w for w, _ in near)]
                      for sent, near in zip(sense.sentences, sense.nearest[-1])]}]


def sense_plot(r, path, figure_format=None):
    sense = r.sense
    if not sense:
        return None
    n = len(sense.layers)
    fig, axes = plt.subplots(1, n, figsize=(2.2 * n, 2.6), squeeze=False)
    for ax, layer, sim in zip(axes[0], sense.layers, sense.similarity):
        ax.imshow(sim, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"layer {layer}", fontsize=9)
        ax.set_xticks(range(len(sim))), ax.set_yticks(range(len(sim)))
    fig.suptitle(f"cosine between the vectors of '{sense.word}' in sentences 0..{len(sense.sentences) - 1}", fontsize=10)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="sense", title="One word, several meanings", needs="sense",
    question="Does the sentence move one word's vectors apart?",
    reads="results", headline=sense_headline, text=sense_text, tables=sense_tables, figure=sense_plot,
    alt="Heat maps, one per layer: cosine between the vectors of the same word in each pair of sentences")
