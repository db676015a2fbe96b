"""The logit lens (nostalgebraist 2020): from which layer can the model guess a masked word (or, for a decoder, the
next word)? Every layer decoded through the model's head, against the unigram floor."""

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from ...stats import Interval
from ..plots import save_figure
from .page import Section
from .words import cell, predicted


def ratio_interval(values, weights, confidence: float = 0.95) -> Interval:
    """The weighted mean sum(w v) / sum(w) of per-cluster means `values` (a sentence's mean gain, weighted by its
    tokens: the mean over all tokens) with a Student-t interval over the clusters, whose standard error is the ratio
    estimator's (linearised, each cluster's residual w (v - mean)): tokens of one sentence are not independent,
    sentences are. Clusters of weight 0 are left out; with fewer than 2 the interval is the point itself."""
    values, weights = np.asarray(values, dtype=np.float64).ravel(), np.asarray(weights, dtype=np.float64).ravel()
    if values.shape != weights.shape:
        raise ValueError(f"ratio_interval needs one weight per value, got {weights.size} and {values.size}")
    kept = weights > 0
    values, weights = values[kept], weights[kept]
    if values.size == 0:
        raise ValueError("ratio_interval needs at least one value of positive weight")
    mean, n = float(np.sum(weights * values) / np.sum(weights)), int(values.size)
    residuals = weights * (values - mean)
    if n == 1 or not np.any(residuals):
        return Interval(mean, mean, mean, n, confidence, "t", n - 1)
    se = float(np.sqrt(n / (n - 1) * np.sum(residuals ** 2)) / np.sum(weights))
    low, high = stats.t.interval(confidence, df=n - 1, loc=mean, scale=se)
    return Interval(mean, float(low), float(high), n, confidence, "t", n - 1)


def _lens_gain(lens):
    """(gain, ci, above, over): each layer's gain over the unigram floor, its 95% half-width (NaN: none), the layers
    whose gain has its interval above 0 and what the intervals are over ("tokens" or "the 8 sentences"); None without a
    floor. Where the result kept per-sentence gains the sentences are the sample (`ratio_interval`): tokens of one
    sentence are not independent, so the interval over tokens is too narrow to choose a verdict."""
    if lens.floor is None:
        return None
    if getattr(lens, "sentence_gain", None) and (by_sentence := _sentence_gain(lens)) is not None:
        return by_sentence
    gain = np.array(lens.gain, dtype=float)
    ci = np.array([np.nan if c is None else c for c in lens.gain_interval95], dtype=float)
    return gain, ci, [layer for layer in range(len(gain)) if gain[layer] - ci[layer] > 0], "tokens"


def _sentence_gain(lens):
    """`_lens_gain` from the per-sentence gains, each weighted by its tokens (the mean over every token, as the loss
    column's), with the interval of `ratio_interval` over the sentences; None with fewer than 2 sentences scored (no
    interval: the tokens' is used)."""
    tokens = getattr(lens, "sentence_tokens", None) or [1] * len(lens.sentence_gain[0])
    kept = sum(1 for n in tokens if n)
    if kept < 2:
        return None
    intervals = [ratio_interval(row, tokens) for row in lens.sentence_gain]
    gain = np.array([i.estimate for i in intervals])
    ci = np.array([i.high - i.estimate for i in intervals])
    return gain, ci, [layer for layer, i in enumerate(intervals) if i.sign() > 0], f"the {kept} sentences"


def logit_lens_text(r):
    """The loss by layer, and the lowest layer whose gain over the unigram floor has its 95% interval above 0 (or
    that no layer's has); without a floor, no verdict."""
    lens = r.logit_lens
    loss, accuracy, words = lens.loss, lens.accuracy, predicted(lens)
    last, lowest = len(loss) - 1, int(np.argmin(loss))
    rate = f" (masking rate {lens.mlm_probability:g})" if lens.mlm_probability is not None else ""
    text = (f"Every layer's hidden state at {lens.masked_tokens} {words['tokens']} of {lens.sentences} sentences{rate}, "
            f"decoded through the model's final head: loss by layer "
            + ", ".join(f"{layer}: {x:.2f}" for layer, x in enumerate(loss)) + f" nats (lowest at layer {lowest}), "
            f"top-1 accuracy {accuracy[0]:.2f} at layer 0 and {accuracy[-1]:.2f} at layer {last}. ")
    caveat = (" Lower layers are read through a head trained on the last one: a high loss there need not mean the "
              "information is absent.")
    gains = _lens_gain(lens)
    if gains is None:
        return text + "No unigram floor was given, so no layer is compared with token frequencies alone." + caveat
    gain, ci, below, basis = gains
    floor = f"the unigram floor ({lens.floor:.2f} nats on the same tokens)"
    basis = (f" (Gains are means over every token, with 95% t-intervals over {basis}: the sentences are the sample.)"
             if basis != "tokens" else " (Intervals over tokens: this result kept no per-sentence gains, and tokens "
             "of one sentence are not independent, so they are narrower than intervals over sentences.)")
    if not below:
        best = int(np.nanargmax(gain))
        return text + (f"No layer's loss is below {floor} beyond its 95% interval (largest gain {gain[best]:+.2f} ± "
                       f"{ci[best]:.2f} nats, at layer {best}): read through its head, no layer is shown to predict "
                       f"{words['tokens']} better than token frequencies alone.") + basis + caveat
    first = below[0]
    return text + (f"The loss first goes below {floor} beyond its 95% interval at layer {first} (gain {gain[first]:.2f} ± "
                   f"{ci[first]:.2f} nats); at the last layer the gain is {gain[-1]:+.2f} ± {ci[-1]:.2f} nats. "
                   + (f"Below layer {first}, no layer is shown to beat token frequencies alone through this head"
                      + _worse(gain, ci, first) if first > 0 else "Even the embedding output is shown to beat token "
                      "frequencies alone.")) + basis + caveat


def _worse(gain, ci, first) -> str:
    """"." or "; layers 1, 2 are worse than them ...": the layers below `first` whose gain is below 0 beyond its
    interval."""
    worse = [layer for layer in range(first) if gain[layer] + ci[layer] < 0]
    if not worse:
        return "."
    return (f"; layer{'s' if len(worse) > 1 else ''} {', '.join(map(str, worse))} "
            f"{'are' if len(worse) > 1 else 'is'} worse than them, beyond {'their' if len(worse) > 1 else 'its'} "
            "95% interval.")


def logit_lens_headline(r):
    lens = r.logit_lens
    gains, words = _lens_gain(lens), predicted(lens)
    head, guess = f"read through the {words['head']}", f"guesses {words['words']}"
    if gains is None:  # no intervals to compare layers with: only the point losses
        lowest = int(np.argmin(lens.loss))
        return (f"{head[:1].upper()}{head[1:]}, layer {lowest} {guess} best by its point loss "
                f"({lens.loss[lowest]:.2f} nats); no word-frequency floor was given to compare with.")
    gain, ci, below, over = gains
    over = "over tokens" if over == "tokens" else "over sentences"
    if not below:
        best = int(np.nanargmax(gain))
        return (f"Not resolved at this scale: no layer, {head}, is shown to guess {words['words']} better than word "
                f"frequencies alone (largest gain {gain[best]:+.2f} ± {ci[best]:.2f} nats {over}, layer {best}).")
    first = below[0]
    if first == 0:
        return (f"Even layer 0, {head}, is shown to guess {words['words']} better than word frequencies alone (gain "
                f"{gain[0]:.2f} ± {ci[0]:.2f} nats {over}; last layer {gain[-1]:+.2f}).")
    # the layers below are not shown to beat the floor, which is not that they do not
    return (f"Layer {first} is the lowest layer that, {head}, is shown to guess {words['words']} better than word "
            f"frequencies alone (gain {gain[first]:.2f} ± {ci[first]:.2f} nats {over}; last layer {gain[-1]:+.2f}).")


def logit_lens_tables(r):
    lens = r.logit_lens
    gains = _lens_gain(lens)
    by_sentence = gains is not None and gains[3] != "tokens"
    ci = lens.interval95 or [None] * len(lens.loss)
    header = ["layer", "loss (nats)", "± 95%", "top-1 accuracy"] + (
        ["gain over the floor", "± 95% (tokens)"] if gains else []) + (
        ["± 95% (sentences)"] if by_sentence else [])
    rows = []
    token_ci = lens.gain_interval95 or [None] * len(lens.loss)
    for layer, (loss, acc) in enumerate(zip(lens.loss, lens.accuracy)):
        row = [layer, f"{loss:.3f}", cell(ci, layer, ".3f"), f"{acc:.3f}"]
        if gains:
            row += [f"{lens.gain[layer]:+.3f}", cell(token_ci, layer, ".3f")]
        if by_sentence:
            row += [f"{gains[1][layer]:.3f}"]
        rows.append(row)
    return [{"header": header, "rows": rows}]


def plot_logit_lens(lens, path, figure_format=None):
    """The logit lens (a logit_lens.LogitLens, or results.SavedLogitLens as saved: the same fields): masked-token loss
    by layer with its 95% interval and the unigram floor (left), top-1 accuracy (right)."""
    if not lens:
        return None
    layers = np.arange(len(lens.loss))
    fig, (loss, accuracy) = plt.subplots(1, 2, figsize=(10, 3.8))
    words = predicted(lens)
    loss.errorbar(layers, lens.loss, yerr=[np.nan if v is None else v for v in lens.interval95], marker="o",
                  capsize=3, label=f"loss on the {words['tokens']} (95% interval)")
    if lens.floor is not None:
        loss.axhline(lens.floor, linestyle="--", color="grey", label=f"unigram floor ({lens.floor:.2f})")
    loss.set_ylabel("cross-entropy (nats)")
    loss.set_title("each layer decoded through the final head", fontsize=10)
    loss.legend(fontsize=8)
    accuracy.plot(layers, lens.accuracy, marker="o", color="k")
    accuracy.set_ylim(bottom=0)
    accuracy.set_ylabel("top-1 accuracy")
    accuracy.set_title(f"{lens.masked_tokens} {words['tokens']}", fontsize=10)
    for ax in (loss, accuracy):
        ax.set_xticks(layers)  # whole layers
        ax.set_xlabel("layer (0 = embedding output)")
    return save_figure(fig, path, figure_format)


def logit_lens_plot(r, path, figure_format=None):
    """The section's figure."""
    return plot_logit_lens(r.logit_lens, path, figure_format)


# after the head ablation: both are the model's losses on the same tokens
SECTION = Section(
    name="logit_lens", title="The logit lens: every layer through the model's own head (nostalgebraist 2020)",
    needs="logit_lens",
    question="From which layer can the model guess the word it predicts (a masked word, or a decoder's next word)?",
    reads="results",
    headline=logit_lens_headline, text=logit_lens_text, tables=logit_lens_tables, figure=logit_lens_plot,
    alt="Line charts by layer: the loss of each layer decoded through the model's head (on masked tokens, or a "
        "decoder's next tokens), with 95% intervals and the unigram floor as a dashed line (left), and top-1 accuracy "
        "(right)")
