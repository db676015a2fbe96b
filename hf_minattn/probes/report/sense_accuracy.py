"""Homonym senses by layer: can the vectors tell a word's meanings apart? Leave-one-out nearest-centroid accuracy
with its 95% interval, against chance and controls that see only the word's position and the sentence's length.
Chance is what this classifier scores with no information: every sense tied, 1/senses per occurrence (0.5 with two
senses), which is the static word embeddings' score (one vector per word); files written before it was defined so
record the majority sense's share as `chance`, and are read against their static score where they have one."""

import math

import matplotlib.pyplot as plt

from ..plots import save_figure
from .page import Section
from .words import cell, interval_text


def sense_verdict(interval, chance):
    """"above chance", "below chance", "at chance by construction" (an interval of zero width at chance: every
    resample scores chance, as vectors that carry nothing do, e.g. identical ones) or "not told apart from chance: not
    at this scale", from where the 95% interval (a dict with low and high) lies against chance (no equivalence test:
    an interval of some width holding chance does not say the vectors are at chance)."""
    if interval["low"] > chance:
        return "above chance"
    if interval["high"] < chance:
        return "below chance"
    if math.isclose(interval["low"], chance, abs_tol=1e-9) and math.isclose(interval["high"], chance, abs_tol=1e-9):
        return "at chance by construction"
    return "not told apart from chance: not at this scale"


SENSE_CONTROLS = {"position": "the word's position alone",
                  "position and length": "the word's position and the sentence's length alone"}


def no_information(senses):
    """Chance as the verdicts read it: the score of the classifier on vectors that carry nothing (the static word
    embeddings: every sense tied) where the file has it, else the file's `chance`."""
    return senses.chance if senses.static_accuracy is None else senses.static_accuracy


def _static_clause(senses):
    """The static word embeddings' score beside chance, in the words the numbers allow."""
    static, recorded = senses.static_accuracy, senses.chance
    if static is None:
        return ""
    if f"{recorded:.2f}" == f"{static:.2f}":
        return f"; the static word embeddings get {static:.2f}, chance by construction"
    return (f"; the static word embeddings get {static:.2f} (every sense tied), the chance read here, not the "
            f"{recorded:.2f} this file records as chance (the majority sense's share)")


def _sense_claim(senses):
    """(verdict, control, its accuracy, beats it) at the last layer: the verdict against chance (sense_verdict) and,
    when above chance, whether the interval's low end is above the strongest control (the word's position, and its
    position with the sentence's length); None for files without intervals."""
    intervals = senses.accuracy_interval
    if not intervals:
        return None
    controls = {"position": senses.position_accuracy, "position and length": senses.length_accuracy}
    controls = {k: v for k, v in controls.items() if v is not None}
    best_control, control = max(controls.items(), key=lambda kv: kv[1])
    verdict = sense_verdict(intervals[-1], no_information(senses))
    return verdict, best_control, control, verdict == "above chance" and intervals[-1]["low"] > control


def _accuracy(accuracy, interval, chance) -> str:
    """"0.55 [0.51, 0.60]": at 2 decimals, or more where the interval excludes chance but a bound would print as
    chance itself ("[0.50, 0.60]" beside "above chance 0.50")."""
    return interval_text(accuracy, interval["low"], interval["high"], (chance,))


def sense_accuracy_text(r, untrained=None):
    """The sense probe in words; the verdict is chosen by the last layer's interval against chance, then against
    the controls that see only the word's position and the sentence's length. `untrained`: the SenseAccuracy
    (results.py) of the same architecture at initialisation, shown beside. Files written before the intervals get no verdict."""
    senses = r.sense_accuracy
    acc, layers, chance = senses.accuracy, senses.layers, no_information(senses)
    intervals = senses.accuracy_interval
    text = (f"{len(senses.words)} homonyms ({', '.join(senses.words)}), {senses.occurrences} labelled "
            "sentences: ")
    raw = ", ".join(f"{a:.2f}" for a in senses.raw_accuracy or acc)  # older files: "accuracy" is raw
    if not intervals:  # an older file: raw vectors, no interval
        return text + (f"leave-one-out nearest-centroid sense accuracy (raw vectors) by layer {raw}, against "
                       f"chance {chance:.2f} and {senses.position_accuracy:.2f} from the word's position alone. "
                       "This run recorded no interval, so no verdict.")
    by_layer = ", ".join(f"{layer}: {_accuracy(a, i, chance)}" for layer, a, i in zip(layers, acc, intervals))
    length = senses.length_accuracy
    text += (f"leave-one-out nearest-centroid sense accuracy on centred vectors (All-but-the-Top), by layer with 95% "
             f"intervals over homonyms and contexts: {by_layer} (raw vectors: {raw}), "
             f"against chance {chance:.2f}. The same classifier on the word's position alone gets "
             f"{senses.position_accuracy:.2f}" +
             (f", on its position and the sentence's length {length:.2f}" if length is not None else "") +
             f"{_static_clause(senses)}. ")
    above = [layer for layer, i in zip(layers, intervals) if sense_verdict(i, chance) == "above chance"]
    verdict, best_control, control, beats = _sense_claim(senses)
    last = intervals[-1]
    text += (f"At the last layer ({layers[-1]}) sense accuracy, {_accuracy(acc[-1], last, chance)} against chance "
             f"{chance:.2f}, is {verdict}")
    if verdict == "above chance":
        text += (f", and above the {best_control} control ({control:.2f})" if beats else
                 f", but not above the {best_control} control ({control:.2f}): the senses are not shown to be told "
                 "apart by meaning")
    beyond = [layer for layer, i in zip(layers, intervals) if layer in above and i["low"] > control]
    text += (f". Layers above chance: {', '.join(map(str, above)) or 'none'}" + (
        f"; of those, above the {best_control} control too: {', '.join(map(str, beyond)) or 'none'}"
        if above else "") + " (each layer's interval alone, not adjusted across layers).")
    if untrained and untrained.accuracy_interval:
        i = untrained.accuracy_interval[-1]
        text += (f" The untrained model: {untrained.accuracy[-1]:.2f} [{i['low']:.2f}, {i['high']:.2f}] at its last "
                 f"layer ({sense_verdict(i, no_information(untrained))}, chance {no_information(untrained):.2f}).")
    return text


def sense_accuracy_headline(r):
    senses = r.sense_accuracy
    acc, chance = senses.accuracy[-1], no_information(senses)
    claim = _sense_claim(senses)
    if claim is None:
        return (f"No verdict: this run recorded no interval (last-layer sense accuracy {acc:.0%}, chance "
                f"{chance:.0%}).")
    verdict, best_control, control, beats = claim
    i = senses.accuracy_interval[-1]
    found = f"a nearest-centroid classifier finds the right meaning {acc:.0%} of the time"
    if beats:
        return (f"Yes: at the last layer {found}, above chance ({chance:.0%}) and above "
                f"{SENSE_CONTROLS[best_control]} ({control:.0%}).")
    if verdict == "above chance":
        return (f"Not shown: at the last layer {found}, above chance ({chance:.0%}) but not above "
                f"{SENSE_CONTROLS[best_control]} ({control:.0%}), so the meanings are not shown to be told apart by "
                "meaning.")
    if verdict == "below chance":
        return f"No: at the last layer {found}, below chance ({chance:.0%})."
    if verdict == "at chance by construction":
        return (f"No: at the last layer {found}, at chance by construction (its 95% interval has zero width at "
                f"{chance:.0%}).")
    return (f"Not resolved at this scale: at the last layer {found}, but its 95% interval ({i['low']:.0%} to "
            f"{i['high']:.0%}) includes chance ({chance:.0%}).")


def sense_accuracy_tables(r):
    senses = r.sense_accuracy
    layers, chance = senses.layers, no_information(senses)
    intervals = senses.accuracy_interval or [None] * len(layers)
    raw = senses.raw_accuracy
    per_layer = {"header": ["layer", "accuracy", "95% interval", "raw vectors", "against chance"],
                 "rows": [[layer, f"{a:.2f}", "-" if i is None else f"[{i['low']:.2f}, {i['high']:.2f}]",
                           cell(raw, n), "-" if i is None else sense_verdict(i, chance)]
                          for n, (layer, a, i) in enumerate(zip(layers, senses.accuracy, intervals))]}
    controls = {"header": ["control", "accuracy"],
                "rows": [["chance", cell(chance)]] +
                        [[label, cell(getattr(senses, key))] for key, label in
                         (("position_accuracy", SENSE_CONTROLS["position"]),
                          ("length_accuracy", SENSE_CONTROLS["position and length"]),
                          ("static_accuracy", "static word embeddings")) if getattr(senses, key) is not None]}
    by_word = senses.accuracy_by_word or {}
    words = {"header": ["homonym", "senses", *[f"layer {layer}" for layer in layers]], "details": True,
             "rows": [[w, ", ".join((senses.senses or {}).get(w, [])),
                       *[cell(v, n) for n in range(len(layers))]] for w, v in by_word.items()]}
    return [per_layer, controls] + ([words] if by_word else [])


def sense_accuracy_plot(r, path, figure_format=None):
    senses = r.sense_accuracy
    if not senses:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(senses.layers, senses.accuracy, marker="o", color="k", label="all homonyms")
    for word, values in senses.accuracy_by_word.items():
        ax.plot(senses.layers, values, alpha=0.4, label=word)
    ax.axhline(no_information(senses), linestyle="--", color="grey", label="chance")
    ax.axhline(senses.position_accuracy, linestyle=":", color="red", label="position alone")
    ax.set_xlabel("layer (0 = embedding output)"), ax.set_ylabel("leave-one-out accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=6)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="sense_accuracy", title="Homonym senses by layer (leave-one-out)", needs="sense_accuracy",
    question="Can the vectors tell a word's meanings apart?",
    reads="results", headline=sense_accuracy_headline, text=sense_accuracy_text, tables=sense_accuracy_tables,
    figure=sense_accuracy_plot,
    alt="Line chart: leave-one-out sense accuracy by layer, overall and per homonym, against chance and position "
        "alone")
