"""Context-specificity by word frequency: do the most frequent words change more with their sentence than the rarest?
The answer is the probe's contrast of the top 100 against the 1000+ band (or, in files without it, the lowest other
band); the published result (Ethayarajh 2019: stop words are the most context-specific) is claimed only where the top
100 band also has the lowest mean of all. Which band is lower, lowest or tied is read from the means as shown (two
decimals, or more where the contrast's interval tells apart two bands that two decimals would show equal), so that a
sentence never contradicts the numbers beside it."""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from .page import Section
from .words import cell, differ, signed_interval


def _shown(bands, decimals=2):
    """{band: its mean as the sentences and tables print it (`decimals`, two unless `_decimals` says more)}."""
    return {b: float(format(v, f".{decimals}f")) for b, v in bands.items()}


def _decimals(g, bands, most=4):
    """The decimals the band means are printed with: two, or more (up to `most`) where the probe's contrast tells the
    top 100 band from the other band by its interval but two decimals would print their means equal (a sentence
    would then say "more" and "tied" of the same two bands)."""
    c, decimals = g.band_contrast, 2
    if c is None or _sign(c) == 0 or not {"top 100", c["bands"][1]} <= set(bands):
        return decimals
    pair = {b: bands[b] for b in ("top 100", c["bands"][1])}
    while decimals < most and len(set(_shown(pair, decimals).values())) < 2:
        decimals += 1
    return decimals


def _bands(g):
    """(bands, lowest, frequent, other, decimals): {band: adjusted self-similarity at the last layer} of the bands that
    have words, the bands tied for the lowest mean as shown (a list, in the file's order), how the most frequent words
    ("top 100") stand against `other`: +1 lower (they vary more with context), -1 higher, 0 not told apart; None
    without them. `other` is the "1000+" band of the probe's bootstrap contrast where the file has one (its interval
    decides), else the lowest other band as shown (less than one unit of the last decimal shown apart: 0); the
    decimals the means are shown with (`_decimals`)."""
    bands = {b: v[-1] for b, v in g.adjusted_self_similarity_by_band.items() if v[-1] is not None}
    if len(bands) < 2:
        return bands, None, None, None, 2
    decimals = _decimals(g, bands)
    shown = _shown(bands, decimals)
    lowest = [b for b in bands if shown[b] == min(shown.values())]
    if "top 100" not in bands:
        return bands, lowest, None, None, decimals
    c = g.band_contrast
    if c is not None:
        return bands, lowest, _sign(c), c["bands"][1], decimals
    other = min((b for b in bands if b != "top 100"), key=lambda b: (shown[b], bands[b]))
    top, rest = bands["top 100"], bands[other]  # no interval here: a direction needs a full unit of what is shown
    return bands, lowest, (0 if not differ(top, rest) else 1 if top < rest else -1), other, decimals


def _contrast(g):
    """" (top 100 - 1000+: -0.05 [-0.08, -0.02], bootstrap over the words)" where the probe measured it, else ""."""
    c = g.band_contrast
    return "" if c is None else (f"; top 100 - {c['bands'][1]}: {signed_interval(c['estimate'], c['low'], c['high'])}, "
                                 f"95% bootstrap over the words")


def _sign(c):
    """+1: the frequent words change more with their sentence (lower adjusted self-similarity), -1 less, 0 not told
    apart, by the interval of a contrast."""
    return 1 if c["high"] < 0 else -1 if c["low"] > 0 else 0


def _pieces_sentence(g):
    """What the contrast over words of one piece says beside the contrast over all words; "" where the file has no
    contrast, or one from before piece counts were matched."""
    c = g.band_contrast
    if c is None or "one_piece" not in c:
        return ""
    one = c["one_piece"]
    if one is None:
        return " The piece count is not matched: a band has fewer than 2 words of one piece."
    numbers = (f"{signed_interval(one['estimate'], one['low'], one['high'])} over {one['words'][0]} and "
               f"{one['words'][1]} words")
    overall, matched = _sign(c), _sign(one)
    if matched == overall == 0:
        return f" Among words of one piece only there is no clear difference either ({numbers})."
    if matched == overall:
        return (f" Among words of one piece only the difference points the same way ({numbers}), so it is not the "
                f"piece count alone (frequent words are mostly one piece, rare ones often several).")
    if matched == 0:
        return (f" Among words of one piece only the difference is not told apart ({numbers}): frequent words are "
                f"mostly one piece and rare ones often several, so the piece count may explain it.")
    if overall == 0:
        return (f" Among words of one piece only the most frequent words change {'more' if matched > 0 else 'less'} "
                f"with their sentence ({numbers}): the difference shows once the piece count is matched.")
    return (f" Among words of one piece only the difference reverses ({numbers}), so the contrast over all words "
            f"is not one of frequency alone.")


def _below_top(lowest):
    """The bands below the top 100 band as shown (those tied for the lowest mean), or None where the top 100 is among
    the lowest."""
    return None if "top 100" in lowest else " and ".join(lowest)


def _tied_with_top(lowest):
    """The other bands tied with the top 100 band for the lowest mean as shown, or None where it is lowest alone or
    not lowest."""
    return " and ".join(b for b in lowest if b != "top 100") if "top 100" in lowest and len(lowest) > 1 else None


def _lowest_words(lowest):
    """The clause naming the band of the lowest mean, or the bands tied for it as shown."""
    if len(lowest) == 1:
        return f"the {lowest[0]} band has the lowest mean"
    return f"the {' and '.join(lowest)} bands are tied for the lowest mean as shown"


def _frequent_verdict(bands, frequent, other, lowest, decimals=2):
    """What the top 100 band's contrast with `other` says, beside the band with the lowest mean: "as published" only
    where the frequent words vary more than `other` and the top 100 band alone has the lowest mean as shown."""
    if frequent is None:
        return "no band of frequent words to compare with the published result"
    than, below, tied = _band_name(other, rarest=True), _below_top(lowest), _tied_with_top(lowest)
    shown = _shown(bands, decimals)
    rest = min(v for b, v in shown.items() if b != "top 100")
    if frequent > 0 and lowest == ["top 100"] and shown.get(other) == rest:
        return "frequent (stop) words vary most with context, as published"  # below every other band
    if frequent > 0:
        return f"frequent (stop) words vary more with context than {than}" + (
            f", tied for most with the {tied} band as shown" if tied else
            ", as published" if below is None else f", though not most: the {below} band is lower still")
    if frequent < 0:
        return "not the stop words, unlike the published result"
    return f"the frequent (stop) words are not told apart from {than}, no clear difference"


def bands_text(r):
    g = r.geometry
    bands, lowest, frequent, other, d = _bands(g)
    if len(bands) < 2:
        return "Too few bands have words to compare frequencies."
    words = ", ".join(f"'{w}'" for w, _ in g.most_context_specific[:6])
    return (f"At the last layer, adjusted self-similarity by frequency rank is "
            f"{'; '.join(f'{b}: {v:.{d}f}' for b, v in bands.items())}: {_lowest_words(lowest)} "
            f"({_frequent_verdict(bands, frequent, other, lowest, d)}{_contrast(g)}).{_pieces_sentence(g)} The most "
            f"context-specific words are {words}.")


def _band_name(band, rarest=False):
    """How a sentence names a band; with `rarest`, the 1000+ band as the rarest words."""
    if rarest and band == "1000+":
        return "the rarest words (rank >= 1000)"
    return "the 100 most frequent words" if band == "top 100" else f"words of frequency rank {band}"


def bands_headline(r):
    bands, lowest, frequent, other, d = _bands(r.geometry)
    if len(bands) < 2:
        return "Too few frequency bands have words to compare."
    if frequent is None:
        names = " and ".join(_band_name(b) for b in lowest)
        return (f"At the last layer {names} change most with their sentence (adjusted self-similarity "
                f"{bands[lowest[0]]:.{d}f}{', tied as shown' if len(lowest) > 1 else ''}).")
    numbers = (f"adjusted self-similarity {bands['top 100']:.{d}f}, against {bands[other]:.{d}f} for "
               f"{_band_name(other)}{_contrast(r.geometry)}")
    if frequent > 0:
        tied = [_band_name(b) for b in lowest if b != "top 100"]
        answer = (f"Yes: the most frequent words change more with their sentence than "
                  f"{_band_name(other, rarest=True)} at the last layer ({numbers})" +
                  (", as published." if lowest == ["top 100"] else
                   f"; {' and '.join(tied)} change as much ({bands['top 100']:.{d}f} as shown), so the most frequent "
                   f"words are tied for most." if "top 100" in lowest else
                   f"; {' and '.join(tied)} change more still ({bands[lowest[0]]:.{d}f}), so the most frequent words "
                   f"do not change most."))
    elif frequent < 0:
        answer = (f"No: at the last layer the most frequent words change less with their sentence than rarer ones "
                  f"({numbers}), unlike the published result.")
    else:
        answer = (f"No clear difference: at the last layer the most frequent words change with their sentence about "
                  f"as much as rarer ones ({numbers}).")
    return answer + _pieces_sentence(r.geometry)


def bands_tables(r):
    g = r.geometry
    by_band = g.adjusted_self_similarity_by_band
    counts, fmt = g.words_per_band or {}, f".{_bands(g)[4]}f"  # the decimals the sentences show the means with
    bands = {"header": ["band (frequency rank)", "words", *[f"layer {layer}" for layer in g.layers]],
             "rows": [[b, counts.get(b, "-"), *[cell(v, i, fmt) for i in range(len(g.layers))]]
                      for b, v in by_band.items()]}
    most, least = g.most_context_specific or [], g.least_context_specific or []
    words = {"header": ["most context-specific", "adjusted self-similarity", "least context-specific",
                        "adjusted self-similarity"],
             "rows": [[*(most[i] if i < len(most) else ("-", None)), *(least[i] if i < len(least) else ("-", None))]
                      for i in range(max(len(most), len(least)))]}
    words["rows"] = [[a, cell(x), b, cell(y)] for a, x, b, y in words["rows"]]
    return [bands, words] if words["rows"] else [bands]


def bands_plot(r, path, figure_format=None):
    g = r.geometry
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for band, values in g.adjusted_self_similarity_by_band.items():
        if any(v is not None for v in values):
            ax.plot(g.layers, [np.nan if v is None else v for v in values], marker="o",
                    label=f"rank {band} ({g.words_per_band[band]} words)")
    ax.set_xlabel("layer")
    ax.set_ylabel("adjusted self-similarity")
    ax.set_title("context-specificity by word frequency")
    ax.legend(fontsize=8)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="bands", title="Context-specificity by word frequency", needs="geometry",
    question="Do the most frequent words change more with their sentence than the rarest?",
    headline=bands_headline, text=bands_text, tables=bands_tables, figure=bands_plot, reads="results",
    alt="Line chart: baseline-adjusted self-similarity by layer, one line per word-frequency band")
