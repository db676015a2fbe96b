"""One word, several meanings: does the sentence move one word's vectors apart? The cosine between the same word's
vectors in a few sentences, layer by layer, minus each layer's anisotropy baseline (the geometry probe's mean cosine
between random words, Ethayarajh 2019) where the results have it: raw cosines fall with any fall in anisotropy. A few
sentences give no interval, so the section illustrates; the geometry and sense-accuracy sections measure."""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from .page import Section
from .words import lower

MEASURED_ELSEWHERE = ("the geometry section (adjusted self-similarity over many words) and the sense-accuracy section "
                      "give the measured answer")


def _sense_means(sense):
    """The mean cosine between the word's occurrences (off the diagonal), per layer."""
    n = len(sense.similarity[0])
    off = ~np.eye(n, dtype=bool)
    return [float(np.array(m)[off].mean()) for m in sense.similarity]


def _baselines(r):
    """Per layer of the sense example, the geometry probe's anisotropy baseline; None where the results lack one of
    its layers."""
    g, layers = getattr(r, "geometry", None), r.sense.layers
    if g is None or not g.anisotropy:
        return None
    by_layer = dict(zip(g.layers if g.layers is not None else range(len(g.anisotropy)), g.anisotropy))
    baselines = [by_layer.get(layer) for layer in layers]
    return None if None in baselines else baselines


def _sense_apart(r):
    """{"raw": (layer 0, last layer) mean cosines, "baseline": their layers' anisotropy baselines or None, "values":
    the pair the verdict reads (raw minus baseline where there is one), "change": "apart" (lower at the last layer,
    as shown), "closer" or "level"}."""
    means, baselines = _sense_means(r.sense), _baselines(r)
    raw = means[0], means[-1]
    base = None if baselines is None else (baselines[0], baselines[-1])
    values = raw if base is None else (raw[0] - base[0], raw[1] - base[1])
    change = "apart" if lower(values[1], values[0]) else "closer" if lower(values[0], values[1]) else "level"
    return {"raw": raw, "baseline": base, "values": values, "change": change}


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


def _numbers(f, last_layer):
    """The numbers a sentence is chosen by, as it shows them."""
    (r0, r1), values = f["raw"], f["values"]
    if f["baseline"] is None:
        return (f"mean cosine {r0:.2f} at layer 0, {r1:.2f} at layer {last_layer}; not adjusted for anisotropy: "
                f"the results have no geometry baseline")
    return (f"mean cosine minus the anisotropy baseline {values[0]:.2f} at layer 0, {values[1]:.2f} at layer "
            f"{last_layer}; raw {r0:.2f} and {r1:.2f}, baselines {f['baseline'][0]:.2f} and {f['baseline'][1]:.2f}")


CHANGE = {"apart": "are less alike at the last layer than at layer 0", "closer": "are more alike at the last layer "
          "than at layer 0", "level": "are about as alike at the last layer as at layer 0"}


def sense_text(r):
    sense = r.sense
    f = _sense_apart(r)
    adjusted = "" if f["baseline"] is None else " beyond each layer's anisotropy baseline"
    text = (f"The same word '{sense.word}' in {len(sense.sentences)} sentences: its occurrences {CHANGE[f['change']]}"
            f"{adjusted} ({_numbers(f, sense.layers[-1])}). With {len(sense.sentences)} sentences there is no "
            f"interval: this illustrates; {MEASURED_ELSEWHERE}")
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
    f = _sense_apart(r)
    adjusted = "" if f["baseline"] is None else ", beyond each layer's anisotropy baseline,"
    return (f"An illustration, without an interval: the vectors of '{sense.word}' in {len(sense.sentences)} "
            f"sentences{adjusted} {CHANGE[f['change']]} ({_numbers(f, sense.layers[-1])}); {MEASURED_ELSEWHERE}.")


def sense_tables(r):
    sense, baselines = r.sense, _baselines(r)
    means = _sense_means(sense)
    if baselines is None:
        by_layer = {"header": ["layer", "mean cosine between the occurrences"],
                    "rows": [[layer, f"{m:.2f}"] for layer, m in zip(sense.layers, means)]}
    else:
        by_layer = {"header": ["layer", "mean cosine between the occurrences", "anisotropy baseline", "minus baseline"],
                    "rows": [[layer, f"{m:.2f}", f"{b:.2f}", f"{m - b:.2f}"]
                             for layer, m, b in zip(sense.layers, means, baselines)]}
    return [by_layer,
            {"header": ["sentence", f"nearest words at layer {sense.layers[-1]}"],
             "rows": [[sent, ", ".join(w for w, _ in near)]
                      for sent, near in zip(sense.sentences, sense.nearest[-1])]}]


def _tick_labels(sense):
    """Each sentence's number, with its sense where the results know it ("0 river")."""
    senses = sense.senses if sense.senses and len(sense.senses) == len(sense.sentences) else None
    return [f"{i} {senses[i]}" if senses else str(i) for i in range(len(sense.sentences))]


def sense_figure(r):
    """The heat maps of the sense example, one per layer: the cosines minus the layer's anisotropy baseline where
    the results have one (`_baselines`), else raw, as the colour bar and the title say; None without an example."""
    sense = r.sense
    if not sense:
        return None
    baselines = _baselines(r)
    shown = [np.array(sim) - (0 if baselines is None else b)
             for sim, b in zip(sense.similarity, baselines or [0] * len(sense.layers))]
    what, short = (("raw cosine",) * 2 if baselines is None else
                   ("cosine minus the layer's anisotropy baseline", "cosine minus baseline"))
    vmin = min(0.0, np.floor(min(m.min() for m in shown) * 10) / 10)
    n, labels = len(sense.layers), _tick_labels(sense)
    fig, axes = plt.subplots(1, n, figsize=(2.4 * n + 0.6, 2.9), squeeze=False)
    for ax, layer, values in zip(axes[0], sense.layers, shown):
        image = ax.imshow(values, vmin=vmin, vmax=1, cmap="viridis")
        ax.set_title(f"layer {layer}", fontsize=9)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
    fig.colorbar(image, ax=axes[0][-1], fraction=0.046).set_label(short, fontsize=8)  # one scale for all layers
    fig.suptitle(f"{what} between the vectors of '{sense.word}' in sentences 0..{len(sense.sentences) - 1}",
                 fontsize=10)
    return fig


def sense_plot(r, path, figure_format=None):
    fig = sense_figure(r)
    return None if fig is None else save_figure(fig, path, figure_format)


SECTION = Section(
    name="sense", title="One word, several meanings", needs="sense",
    question="Does the sentence move one word's vectors apart?",
    reads="results", headline=sense_headline, text=sense_text, tables=sense_tables, figure=sense_plot,
    alt="Heat maps, one per layer: cosine between the vectors of the same word in each pair of sentences (minus the "
        "layer's anisotropy baseline where the results have it), each sentence labelled with its sense where known")
