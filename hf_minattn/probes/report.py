"""A self-contained report.html (figures embedded as data: URIs), written from the numbers in probes.json (no
hand-written numbers).

The page opens with a summary: one row per section, its question (`QUESTIONS`), its one-sentence answer (`HEADLINES`,
chosen by the numbers) and its figure small. Each section then opens with the same headline, shows its figure and
its numbers as tables (`TABLES`), and keeps the full paragraph (`SECTIONS`' text) and the long tables in a collapsed
"All the numbers" block. A headline and its paragraph share one function per verdict (`_falls`, `_bands`,
`_sense_claim`, `_entropy`, `_role_counts`, `_ablation`, `_lens_gain`, benchmark_report.comparison...), so they
cannot disagree. The page layout lives in the Jinja templates next to this file: report.html.j2, compare.html.j2
and report_macros.html.j2, rendered with autoescaping, so every value from the data is escaped."""

import base64
import functools
import io
import os
import re
from collections import Counter

import jinja2
import numpy as np
from markupsafe import Markup

from .attention_view import view_assets, view_json


# The summary shows each figure at most 160 x 48 CSS pixels (report.html.j2); twice that, sharp on a 2x screen.
THUMBNAIL_PIXELS = (320, 96)


def _formats(path):
    """The files of the figure at `path`: its PNG and its SVG (the same name beside it), leaving out a file written
    before `path` (left by an earlier run in another format)."""
    path = os.fspath(path)
    stem, written = os.path.splitext(path)[0], os.stat(path).st_mtime_ns
    files = [f for f in (stem + ".png", stem + ".svg") if os.path.isfile(f) and os.stat(f).st_mtime_ns >= written]
    return files or [path]


def _data_uri(data: bytes, kind: str) -> str:
    return f"data:image/{kind};base64,{base64.b64encode(data).decode()}"


def _figure(path):
    """The figure at `path` as a data: URI for <img src>: its PNG or its SVG, whichever file is smaller."""
    smallest = min(_formats(path), key=os.path.getsize)
    with open(smallest, "rb") as f:
        return _data_uri(f.read(), "svg+xml" if smallest.lower().endswith(".svg") else "png")


def _thumbnail(path):
    """The summary's small copy of the figure at `path`: its PNG scaled down to THUMBNAIL_PIXELS, as a data: URI.
    The figure itself again would embed every figure twice (0.9 MB of a 2.4 MB report). A figure drawn only as SVG
    is reused as it is (an SVG has no pixels to drop)."""
    png = next((f for f in _formats(path) if f.lower().endswith(".png")), None)
    if png is None:
        return _figure(path)
    from PIL import Image  # matplotlib's own dependency

    with Image.open(png) as image:
        image = image.convert("RGBA")
        image.thumbnail(THUMBNAIL_PIXELS)  # keeps the aspect ratio; never enlarges
    # on white, in 64 colours: about 3 kB a figure, where the smoothed RGBA copy took 5-22 kB
    image = Image.alpha_composite(Image.new("RGBA", image.size, "white"), image).convert("RGB").quantize(64)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return _data_uri(buffer.getvalue(), "png")


def _word_filter(r):
    """The thresholds the geometry probe used, as stored in probes.json (min_contexts: distinct sentences;
    min_count: the run's --min-count, implied by min_contexts when it is not larger)."""
    min_contexts = r["geometry"].get("min_contexts")
    min_count = ((r.get("provenance") or {}).get("arguments") or {}).get("min_count")
    if min_contexts is None:
        return f"each seen >= {min_count} times, " if min_count is not None else ""
    more = f" and seen >= {min_count} times" if min_count is not None and min_count > min_contexts else ""
    return f"each in >= {min_contexts} distinct sentences{more}, "


def _differ(a, b, decimals=2):
    """Whether a and b differ by at least one unit of the last decimal the report shows: a smaller difference is
    not one a sentence may claim."""
    return abs(a - b) >= 10.0 ** -decimals - 1e-12


def _lower(a, b, decimals=2):
    """a below b, by at least the precision shown."""
    return a < b and _differ(a, b, decimals)


def _falls(g):
    """Whether baseline-adjusted self-similarity falls from layer 0 to the last layer: the published trend."""
    adj = g["adjusted_self_similarity"]
    return _lower(adj[-1], adj[0])


def geometry_text(r):
    g = r["geometry"]
    adj, layers = g["adjusted_self_similarity"], g["layers"]
    low = int(np.argmin(adj))
    trend = "falls" if _falls(g) else "does not fall"
    return (f"Baseline-adjusted self-similarity of {g['words_scored']} words ({_word_filter(r)}"
            f"~{g['occurrences_per_word']:.0f} occurrences kept) {trend} from {adj[0]:.2f} at layer 0 to "
            f"{adj[-1]:.2f} at layer {layers[-1]} (lowest {adj[low]:.2f} at layer {low}): "
            f"{'upper layers are more context-specific, the published trend' if trend == 'falls' else 'the published trend (upper layers more context-specific) does not appear here'}. "
            f"Every layer is anisotropic to some degree: two random words from different sentences have mean cosine "
            f"{min(g['anisotropy']):.2f} to {max(g['anisotropy']):.2f}. Intra-sentence similarity (adjusted) goes "
            f"from {g['adjusted_intra_similarity'][0]:.2f} to {g['adjusted_intra_similarity'][-1]:.2f}. At the last layer "
            f"the first principal direction of a word's (uncentred) occurrence vectors explains {g['mev'][-1]:.0%} of their "
            f"variance (MEV; {g['adjusted_mev'][-1]:.2f} above the random-words baseline), so a single static vector "
            f"{'could stand in for most of' if g['adjusted_mev'][-1] > 0.5 else 'captures only part of'} a word's "
            f"contextual vectors.")


def geometry_headline(r):
    g = r["geometry"]
    adj = g["adjusted_self_similarity"]
    numbers = f"adjusted self-similarity {adj[0]:.2f} at layer 0, {adj[-1]:.2f} at layer {g['layers'][-1]}"
    if _falls(g):
        return (f"Yes: the same word's vectors in different sentences grow less alike in higher layers ({numbers}), "
                "as Ethayarajh (2019) found.")
    return (f"No: the same word's vectors in different sentences do not grow less alike in higher layers "
            f"({numbers}), unlike Ethayarajh (2019).")


def _cell(values, i=None, fmt=".2f"):
    """values[i] (or values itself) formatted; "-" where missing."""
    value = values if i is None or values is None else (values[i] if i < len(values) else None)
    return "-" if value is None else format(value, fmt)


GEOMETRY_COLUMNS = (("self_similarity", "self-similarity"), ("anisotropy", "anisotropy (random pairs)"),
                    ("adjusted_self_similarity", "adjusted self-similarity"),
                    ("intra_similarity", "intra-sentence similarity"),
                    ("adjusted_intra_similarity", "adjusted intra-sentence"), ("mev", "MEV"),
                    ("mev_baseline", "MEV baseline"), ("adjusted_mev", "adjusted MEV"))


def geometry_tables(r):
    g = r["geometry"]
    rows = [[layer, *[_cell(g.get(key), i) for key, _ in GEOMETRY_COLUMNS]] for i, layer in enumerate(g["layers"])]
    static = g.get("static")
    if static:  # the word embeddings alone, no positions
        rows.insert(0, ["static", *[_cell(static.get(key)) for key, _ in GEOMETRY_COLUMNS]])
    return [{"header": ["layer", *[label for _, label in GEOMETRY_COLUMNS]], "rows": rows}]


def _bands(g):
    """(bands, lowest, frequent): {band: adjusted self-similarity at the last layer} of the bands that have words,
    the lowest band, and how the most frequent words ("top 100") stand against the lowest other band: +1 lower (they
    vary most with context, as published), -1 higher, 0 within the precision shown; None without them."""
    bands = {b: v[-1] for b, v in g["adjusted_self_similarity_by_band"].items() if v[-1] is not None}
    if len(bands) < 2:
        return bands, None, None
    lowest = min(bands, key=bands.get)
    if "top 100" not in bands:
        return bands, lowest, None
    other = min((b for b in bands if b != "top 100"), key=bands.get)
    top, rest = bands["top 100"], bands[other]
    return bands, lowest, (0 if not _differ(top, rest) else 1 if top < rest else -1)


FREQUENT_VERDICT = {1: "frequent (stop) words vary most with context, as published",
                    -1: "not the stop words, unlike the published result",
                    0: "the frequent (stop) words are level with it, no clear difference",
                    None: "no band of frequent words to compare with the published result"}


def bands_text(r):
    g = r["geometry"]
    bands, lowest, frequent = _bands(g)
    if len(bands) < 2:
        return "Too few bands have words to compare frequencies."
    words = ", ".join(f"'{w}'" for w, _ in g["most_context_specific"][:6])
    return (f"At the last layer, adjusted self-similarity by frequency rank is "
            f"{'; '.join(f'{b}: {v:.2f}' for b, v in bands.items())}: the {lowest} band is the most context-specific "
            f"({FREQUENT_VERDICT[frequent]}). The most context-specific words are {words}.")


def _band_name(band):
    return "the 100 most frequent words" if band == "top 100" else f"words of frequency rank {band}"


def bands_headline(r):
    bands, lowest, frequent = _bands(r["geometry"])
    if len(bands) < 2:
        return "Too few frequency bands have words to compare."
    if frequent is None:
        return (f"At the last layer {_band_name(lowest)} change most with their sentence (adjusted self-similarity "
                f"{bands[lowest]:.2f}).")
    other = min((b for b in bands if b != "top 100"), key=bands.get)
    numbers = f"adjusted self-similarity {bands['top 100']:.2f}, against {bands[other]:.2f} for {_band_name(other)}"
    if frequent > 0:
        return (f"Yes: the most frequent words (mostly function words like 'the') change most with their sentence at "
                f"the last layer ({numbers}), as published.")
    if frequent < 0:
        return (f"No: at the last layer the most frequent words change less with their sentence than rarer ones "
                f"({numbers}), unlike the published result.")
    return (f"No clear difference: at the last layer the most frequent words change with their sentence about as "
            f"much as rarer ones ({numbers}).")


def bands_tables(r):
    g = r["geometry"]
    by_band = g["adjusted_self_similarity_by_band"]
    counts = g.get("words_per_band") or {}
    bands = {"header": ["band (frequency rank)", "words", *[f"layer {layer}" for layer in g["layers"]]],
             "rows": [[b, counts.get(b, "-"), *[_cell(v, i) for i in range(len(g["layers"]))]]
                      for b, v in by_band.items()]}
    most, least = g.get("most_context_specific") or [], g.get("least_context_specific") or []
    words = {"header": ["most context-specific", "adjusted self-similarity", "least context-specific",
                        "adjusted self-similarity"],
             "rows": [[*(most[i] if i < len(most) else ("-", None)), *(least[i] if i < len(least) else ("-", None))]
                      for i in range(max(len(most), len(least)))]}
    words["rows"] = [[a, _cell(x), b, _cell(y)] for a, x, b, y in words["rows"]]
    return [bands, words] if words["rows"] else [bands]


def benchmarks_text(r):
    """Written by benchmark_report.py from the intervals and coverage (see results.DECISION_RULE)."""
    from .benchmark_report import benchmarks_text as text

    return text(r)


def benchmarks_headline(r):
    from .benchmark_report import benchmarks_headline as headline

    return headline(r)


def benchmarks_tables(r):
    """The verdicts per benchmark (shown), then every vector set's scores (in the details)."""
    from .benchmark_report import benchmark_rows, comparison_rows

    return [comparison_rows(r), {**benchmark_rows(r), "details": True}]


def _sense_means(sense):
    """The mean cosine between the word's occurrences (off the diagonal), per layer."""
    n = len(sense["similarity"][0])
    off = ~np.eye(n, dtype=bool)
    return [float(np.array(m)[off].mean()) for m in sense["similarity"]]


def _sense_apart(sense):
    """(first, last, apart): the mean cosine at layer 0 and the last layer; apart when it falls, as shown."""
    means = _sense_means(sense)
    return means[0], means[-1], _lower(means[-1], means[0])


def sense_text(r):
    sense = r["sense"]
    first, last, apart = _sense_apart(sense)
    return (f"The same word '{sense['word']}' in {len(sense['sentences'])} sentences: the mean cosine between its occurrences is "
            f"{first:.2f} at layer 0 and {last:.2f} at layer {sense['layers'][-1]}, so context "
            f"{'moves the vector apart with its sentence' if apart else 'barely separates the occurrences'}; "
            f"the block structure shows whether same-sense sentences stay closer to each other.")


def sense_headline(r):
    sense = r["sense"]
    first, last, apart = _sense_apart(sense)
    numbers = f"mean cosine {first:.2f} at layer 0, {last:.2f} at layer {sense['layers'][-1]}"
    if apart:
        return f"Yes: the sentence pulls the vectors of '{sense['word']}' apart in higher layers ({numbers})."
    return (f"No: the vectors of '{sense['word']}' in {len(sense['sentences'])} sentences do not move apart with "
            f"their sentence ({numbers}).")


def sense_tables(r):
    sense = r["sense"]
    return [{"header": ["layer", "mean cosine between the occurrences"],
             "rows": [[layer, f"{m:.2f}"] for layer, m in zip(sense["layers"], _sense_means(sense))]},
            {"header": ["sentence", f"nearest words at layer {sense['layers'][-1]}"],
             "rows": [[sent, ", ".join(w for w, _ in near)]
                      for sent, near in zip(sense["sentences"], sense["nearest"][-1])]}]


HEAD_TARGETS = (("previous", "previous token"), ("next", "next token"), ("self", "itself"), ("sep", "[SEP]"),
                ("cls", "[CLS]"), ("punctuation", "punctuation"))


def _strongest_heads(h):
    """[(label, layer, head, mass, ratio to uniform or None)]: per target, the head that gives it the most
    attention."""
    stats, H = h["stats"], h["num_heads"]
    relative = h.get("relative_to_uniform") or {}
    out = []
    for key, label in HEAD_TARGETS:
        if key in stats:
            values = np.array(stats[key])
            k = int(np.argmax(values))
            ratio = relative[key][k // H][k % H] if key in relative else None
            out.append((label, k // H, k % H, float(values.flat[k]), ratio))
    return out


def _entropy(h):
    """(mean entropy per layer, focused): attention is focused on average when its mean entropy is at most 0.8 of
    uniform attention's."""
    ent = np.array(h["stats"]["entropy"]).mean(axis=1)
    return ent, not ent.mean() > 0.8 * h["uniform_entropy"]


def heads_text(r):
    h = r["heads"]
    ent, focused = _entropy(h)
    parts = [f"{label}: head {layer}-{head}, {_mass(mass, ratio)}" for label, layer, head, mass, ratio in
             _strongest_heads(h)]
    return (f"Over {h['tokens']} query tokens in {h['sentences']} sentences, mean attention entropy per layer is "
            f"{', '.join(f'{e:.2f}' for e in ent)} nats against {h['uniform_entropy']:.2f} for uniform attention "
            f"({'focused' if focused else 'broad'} attention on average). The head "
            f"(layer-head) that attends most to each target, with its attention mass (mean over queries) and the "
            f"ratio to uniform attention on the same queries: " + "; ".join(parts) + ".")


def heads_headline(r):
    h = r["heads"]
    ent, focused = _entropy(h)
    how = "focus their attention on a few tokens" if focused else "spread their attention broadly"
    text = f"On average the heads {how} (mean entropy {ent.mean():.2f} nats, {h['uniform_entropy']:.2f} if spread evenly)"
    strongest = _strongest_heads(h)
    if not strongest:
        return text + "."
    label, layer, head, mass, _ = max(strongest, key=lambda x: x[3])
    return text + (f"; the most single-minded is head {layer}-{head}, which gives {mass:.0%} of its attention to "
                   f"{_target(label)}.")


def heads_tables(r):
    h = r["heads"]
    ent, _ = _entropy(h)
    H = h["num_heads"]
    per_layer = {"header": ["layer", "mean entropy (nats)", "uniform attention"],
                 "rows": [[layer, f"{e:.2f}", f"{h['uniform_entropy']:.2f}"] for layer, e in enumerate(ent)]}
    strongest = {"header": ["target", "head (layer-head)", "attention mass", "x uniform"],
                 "rows": [[label, f"{layer}-{head}", f"{mass:.2f}", _cell(ratio, fmt=".1f")]
                          for label, layer, head, mass, ratio in _strongest_heads(h)]}
    keys = [(k, label) for k, label in (("entropy", "entropy (nats)"), *HEAD_TARGETS) if k in h["stats"]]
    stats = {k: np.array(h["stats"][k]) for k, _ in keys}
    per_head = {"header": ["head", *[label for _, label in keys]], "details": True,
                "rows": [[f"{k // H}-{k % H}", *[f"{stats[key].flat[k]:.2f}" for key, _ in keys]]
                         for k in range(stats["entropy"].size)]}
    return [per_layer, strongest, per_head]


def _mass(mass, ratio=None):
    """ "mass 0.45 (12x uniform)": a head's mean attention on a target, with its ratio to uniform where known."""
    if ratio is None:
        return f"mass {mass:.2f}"
    return f"mass {mass:.2f} ({ratio:.1f}x uniform)" if ratio < 10 else f"mass {mass:.2f} ({ratio:.0f}x uniform)"


def _js_within_between(h):
    """(mean JS divergence between heads of the same layer, between heads of different layers), or None when there
    are too few heads to compare."""
    js = np.array(h["js_divergence"])
    layer = np.repeat(np.arange(h["num_layers"]), h["num_heads"])
    same = (layer[:, None] == layer[None, :]) & ~np.eye(len(js), dtype=bool)
    different = layer[:, None] != layer[None, :]
    if not same.any() or not different.any():
        return None
    return float(js[same].mean()), float(js[different].mean())


def head_map_text(r):
    pair = _js_within_between(r["heads"])
    if pair is None:
        return "Too few heads to compare within and between layers."
    a, b = pair
    closer = _lower(a, b, 3)
    return (f"Heads as points whose distances follow their Jensen-Shannon divergence: heads of the same layer are "
            f"{'closer' if closer else 'not closer'} (mean JS {a:.3f}) than heads of different layers ({b:.3f}), "
            f"so {'heads cluster by layer' if closer else 'behaviour does not cluster by layer'}.")


def head_map_headline(r):
    pair = _js_within_between(r["heads"])
    if pair is None:
        return "Too few heads to compare within and between layers."
    a, b = pair
    numbers = f"mean Jensen-Shannon divergence {a:.3f} within a layer, {b:.3f} across layers"
    if _lower(a, b, 3):
        return f"Yes: heads of the same layer attend more alike than heads of different layers ({numbers})."
    return f"No: heads of the same layer do not attend more alike than heads of different layers ({numbers})."


def head_map_tables(r):
    within = r["heads"].get("within_layer_js")
    if not within:
        return []
    return [{"header": ["layer", "mean JS divergence between its heads"],
             "rows": [[layer, _cell(v, fmt=".3f")] for layer, v in enumerate(within)]}]


def _example_heads(example):
    """Per head of one example sentence: (layer, head, mean entropy of its rows, the commonest place of its
    strongest weight, how many rows put it there). The place is the token itself, the previous or next token,
    a special token (by its text) or punctuation, else another token."""
    tokens = example["tokens"]
    out = []
    for layer, heads in enumerate(example["attention"]):
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
    sentence = r["heads"]["examples"][index]["sentence"]
    text = (f"Every head of every layer on {sentence!r} (row = attending token, column = attended token): the "
            "patterns behind the statistics above")
    return text + ("; the same attention pooled to words is exported as a weighted directed graph in "
                   "attention_graph.json." if index == 0 else ".")


def example_headline(r, index=0):
    """A measured description: the head with the sharpest attention on this sentence, and where it looks."""
    example = r["heads"]["examples"][index]
    heads = _example_heads(example)
    n = len(example["tokens"])
    layer, head, entropy, place, count = min(heads, key=lambda x: x[2])
    return (f"In '{example['sentence']}', head {layer}-{head} attends most sharply (lowest mean entropy): {count} of "
            f"its {n} tokens look hardest at {place}.")


def example_tables(r, index=0):
    example = r["heads"]["examples"][index]
    n = len(example["tokens"])
    return [{"header": ["head", "mean entropy (nats)", "where most tokens look hardest", f"tokens (of {n})"],
             "details": True,
             "rows": [[f"{layer}-{head}", f"{entropy:.2f}", place, count]
                      for layer, head, entropy, place, count in _example_heads(example)]}]


def _effective_ranks(w):
    """(trained, initial or None, lower): mean effective rank {"qk", "ov"} over every head; lower when the trained
    circuits' summed rank is below the initial ones', as shown."""
    t = {c: float(np.mean(w["trained"][f"{c}_effective_rank"])) for c in ("qk", "ov")}
    if not w.get("initial"):
        return t, None, None
    i = {c: float(np.mean(w["initial"][f"{c}_effective_rank"])) for c in ("qk", "ov")}
    return t, i, _lower(t["qk"] + t["ov"], i["qk"] + i["ov"], 1)


def weights_text(r):
    w = r["weights"]
    t, i, lower = _effective_ranks(w)
    text = (f"Per-head QK (W_Q^T W_K) and OV (W_O W_V) circuits, from {w['source']}: mean effective rank "
            f"(entropy-based, Roy & Vetterli) QK {t['qk']:.1f}, OV {t['ov']:.1f} of at most {w['head_dim']}")
    if i is not None:
        verdict = "lower" if lower else "not lower"
        text += (f", against QK {i['qk']:.1f}, OV {i['ov']:.1f} for the same model at initialisation: the trained "
                 f"circuits are {verdict} rank, i.e. {'training concentrates each head on fewer directions' if lower else 'training did not concentrate the heads on fewer directions'}")
    return text + ". Biases and LayerNorm are ignored."


def weights_headline(r):
    w = r["weights"]
    t, i, lower = _effective_ranks(w)
    trained = (t["qk"] + t["ov"]) / 2
    if i is None:
        return (f"Each head's circuits use on average {trained:.1f} of at most {w['head_dim']} directions (effective "
                "rank); no copy of the model at initialisation was measured to compare.")
    initial = (i["qk"] + i["ov"]) / 2
    numbers = f"mean effective rank {trained:.1f} of at most {w['head_dim']}, against {initial:.1f} at initialisation"
    if lower:
        return f"Yes: training made each head's QK and OV circuits use fewer directions ({numbers})."
    return f"No: training did not make the heads' QK and OV circuits use fewer directions ({numbers})."


def weights_tables(r):
    w = r["weights"]
    runs = [("trained", w["trained"])] + ([("initial", w["initial"])] if w.get("initial") else [])
    ranks = {(name, c): np.array(run[f"{c}_effective_rank"], dtype=float) for name, run in runs for c in ("qk", "ov")}
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


def _rho(interval):
    """ "ρ = 0.62 [0.55, 0.70]" from an Interval dict (None: a constant form gave no correlation)."""
    if interval["estimate"] is None or interval["low"] is None:
        return "ρ undefined"
    return f"ρ = {interval['estimate']:.2f} [{interval['low']:.2f}, {interval['high']:.2f}]"


def _above(interval, bound):
    return interval is not None and interval["low"] is not None and interval["low"] > bound


def _sentences(text, n):
    """The first `n` sentences of `text` (a sentence ends with a full stop before a capital letter)."""
    return " ".join(re.split(r"(?<=\.)\s+(?=[A-Z])", text.strip())[:n])


CIRCUIT_FOLLOWS = 0.5  # identity interval's low end above this: W_Q/W_K reproduce the embedding similarity
OV_COPIES = 0.5  # copying score above this (and below -this: suppresses)
OV_SELF_RANK = 0.1  # ... with a token's own logit ranked within this fraction of chance, (N + 1) / 2


def _circuit_head(c, h):
    """What the numbers say of layer 0's head `h`: {"qk": "reproduces" / "partly" / "constant" / "other",
    "cooccurrence": bool, "initial": bool, "ov": "copies" / "suppresses" / "none" / None (no OV scores)}."""
    identity = c["identity"][h]
    if _above(identity, CIRCUIT_FOLLOWS):
        qk = "reproduces"
    elif _above(identity, 0):
        qk = "partly"
    elif identity["low"] is None:  # NaN in the probe: a head whose logits are all equal
        qk = "constant"
    else:
        qk = "other"
    initial = (c.get("initial") or [None] * (h + 1))[h]
    copying = (c.get("ov_copying") or [None] * (h + 1))[h]
    ov = None
    if copying is not None:
        chance = (len(c["token_ids"]) + 1) / 2
        if copying > OV_COPIES and c["ov_self_rank"][h] < OV_SELF_RANK * chance:
            ov = "copies"
        elif copying < -OV_COPIES:
            ov = "suppresses"
        else:
            ov = "none"
    # "mostly" its initial form: a strong correlation with it (as "reproduce" is for the identity), above the
    # identity one; a correlation near 0 with both is neither
    return {"qk": qk, "cooccurrence": _above((c.get("cooccurrence") or [None] * (h + 1))[h], 0),
            "initial": identity["high"] is not None and _above(initial, max(identity["high"], CIRCUIT_FOLLOWS)),
            "ov": ov}


def circuits_text(r):
    """One sentence per head of layer 0, each chosen by its numbers: its QK logits against the embedding similarity
    (the identity hypothesis), co-occurrence and its initial form; its OV circuit copying, suppressing or neither.
    Then what the tokens and positions were (the probe's note)."""
    c = r["circuits"]
    N = len(c["token_ids"])
    chance = (N + 1) / 2
    sentences = [f"Layer 0 on {N} tokens: Spearman's ρ (95% bootstrap interval over tokens) of each "
                 "head's query-key logits with the embedding similarity (what W_Q = W_K = I would give), with "
                 "co-occurrence and with the same head at initialisation"
                 + ("; the OV circuit's copying score is in [-1, 1]." if c.get("ov_copying") else
                    "; no OV scores: the model has no unembedding W_U.")]
    for h in range(c["num_heads"]):
        kind = _circuit_head(c, h)
        identity = c["identity"][h]
        if kind["qk"] == "reproduces":
            text = f"Head {h}'s W_Q/W_K reproduce the embedding similarity ({_rho(identity)})"
        elif kind["qk"] == "partly":
            text = f"Head {h}'s W_Q/W_K partly follow the embedding similarity ({_rho(identity)})"
        elif kind["qk"] == "constant":
            text = f"Head {h} attends by something other than embedding similarity (ρ undefined: constant logits)"
        else:
            where = "includes 0" if identity["high"] >= 0 else "is below 0"
            text = (f"Head {h} attends by something other than embedding similarity ({_rho(identity)}: the interval "
                    f"{where})")
        if kind["cooccurrence"]:
            text += (f"{' and' if kind['qk'] in ('reproduces', 'partly') else '; it does follow'} words that occur "
                     f"together ({_rho(c['cooccurrence'][h])})")
        if kind["initial"]:
            text += f"; its QK form is still mostly its initial random form ({_rho(c['initial'][h])} with it)"
        if kind["ov"] is not None:
            numbers = (f"score {c['ov_copying'][h]:.2f}, a token's own logit ranked {c['ov_self_rank'][h]:.1f} of {N} "
                       f"on average, chance {chance:.1f}")
            text += {"copies": "; its OV circuit copies: a token it attends to raises that token's own logit",
                     "suppresses": "; its OV circuit suppresses: a token it attends to lowers its own logit",
                     "none": "; its OV circuit does no copying"}[kind["ov"]] + f" ({numbers})"
        sentences.append(text + ".")
    # the note's first three sentences: which tokens, what layer 0 reads (X = LN(E[t])) and what of positions
    return " ".join(sentences) + " " + _sentences(c.get("note", ""), 3)


def circuits_headline(r):
    """How many heads of layer 0 choose by embedding similarity (interval above 0), how many clearly (above
    CIRCUIT_FOLLOWS); how many OV circuits copy."""
    c = r["circuits"]
    H = c["num_heads"]
    kinds = [_circuit_head(c, h) for h in range(H)]
    follow = sum(k["qk"] in ("reproduces", "partly") for k in kinds)
    clearly = sum(k["qk"] == "reproduces" for k in kinds)
    if follow:
        text = (f"In layer 0, {follow} of {H} heads choose what to attend to by how similar the token embeddings are"
                + (f" ({clearly} closely)" if clearly else " (only partly)"))
    else:
        text = (f"In layer 0, none of the {H} heads is shown to choose what to attend to by embedding similarity "
                "(every interval includes 0 or is below it)")
    if c.get("ov_copying"):
        copies = sum(k["ov"] == "copies" for k in kinds)
        text += (f"; {copies} of {H} copy the token they attend to into their output" if copies else
                 "; none copies the token it attends to into its output")
    return text + "."


def circuits_table(r):
    """{header, rows}: the circuits' numbers per head, for the report's table."""
    c = r["circuits"]

    def rho(key, h):
        values = c.get(key)
        return "-" if not values else _rho(values[h]).removeprefix("ρ = ")

    def number(key, h, fmt):
        values = c.get(key)
        return "-" if not values or values[h] is None else format(values[h], fmt)

    return {"header": ["head", "ρ identity", "ρ co-occurrence", "ρ initial", "QK positive share", "QK self rank",
                       "OV copying", "OV self rank"],
            "rows": [[h, rho("identity", h), rho("cooccurrence", h), rho("initial", h), number("qk_positive", h, ".2f"),
                      number("qk_self_rank", h, ".1f"), number("ov_copying", h, ".2f"), number("ov_self_rank", h, ".1f")]
                     for h in range(c["num_heads"])]}


def _drift_final(d):
    """(metric, {parameter: its last value}, largest first)."""
    metric = "drift" if "drift" in d["metrics"] else next(iter(d["metrics"]))
    final = dict(sorted(((p, s["values"][-1]) for p, s in d["metrics"][metric].items()), key=lambda x: -x[1]))
    return metric, final


def drift_text(r):
    d = r["drift"]
    metric, final = _drift_final(d)
    names = list(final)
    return (f"From {os.path.basename(d['path'])}: by the end of training, {metric} is largest for {names[0]} "
            f"({final[names[0]]:.3g}) and smallest for {names[-1]} ({final[names[-1]]:.3g}): that is where training "
            f"moved the weights most and least.")


def drift_headline(r):
    metric, final = _drift_final(r["drift"])
    names = list(final)
    what = "distance from initialisation" if metric == "drift" else metric
    return (f"Training moved {names[0]} the most ({what} {final[names[0]]:.3g} at the end) and {names[-1]} the "
            f"least ({final[names[-1]]:.3g}).")


def drift_tables(r):
    d = r["drift"]
    metric, final = _drift_final(d)
    others = [m for m, series in d["metrics"].items() if m != metric and set(series) & set(final)]
    return [{"header": ["parameter", f"{metric} at the end", *[f"{m} at the end" for m in others]],
             "rows": [[p, f"{v:.3g}", *[_cell(d["metrics"][m][p]["values"][-1] if p in d["metrics"][m] else None,
                                              fmt=".3g") for m in others]]
                      for p, v in final.items()]}]


# Issue 9 (heads, senses, attention graphs): each sentence below is chosen by the numbers it reports.
_ROLE_LABELS = {"self": "itself", "previous": "previous token", "next": "next token", "cls": "[CLS]", "sep": "[SEP]",
                "punctuation": "punctuation"}


def _roles(h):
    """(roles, mass, ratio, min_mass) as heads.head_roles gives them; files written before roles were chosen by
    mass (no role_min_mass) are relabelled from their saved statistics."""
    if "role_min_mass" in h:
        return h["roles"], h["role_mass"], h["role_ratio"], h["role_min_mass"]
    from .heads import ROLE_MIN_MASS, head_roles

    roles = head_roles(h["stats"], h.get("relative_to_uniform") or {})
    return roles.roles, roles.mass, roles.ratio, ROLE_MIN_MASS


def _target(label):
    """A target's label as the object of "attends to": "the previous token", "itself", "[CLS]", "punctuation"."""
    return label if label in ("itself", "punctuation") or label.startswith("[") else f"the {label}"


def _role_label(role, min_mass):
    """A role's name; "none" says the mass a role needs in this run (heads.role_min_mass)."""
    return _ROLE_LABELS.get(role) or f"no role (no target gets {min_mass:g} of the attention)"


def _role_counts(h):
    """(cells, counts, min_mass, most_none, commonest): cells per head k = layer * H + head as (role, mass, ratio);
    most_none when more than half the heads have no role; commonest (n, role) among named roles otherwise."""
    roles, mass, ratio, min_mass = _roles(h)
    cells = [cell for row in zip(roles, mass, ratio) for cell in zip(*row)]
    counts = Counter(role for role, _, _ in cells)
    most_none = counts["none"] > len(cells) / 2
    commonest = None if most_none else max((n, role) for role, n in counts.items() if role != "none")
    return cells, counts, min_mass, most_none, commonest


def _strongest_by_role(cells, counts):
    """{role: head k with the largest mass among the heads of that role}, named roles commonest first."""
    named = sorted((role for role in counts if role != "none"), key=lambda role: -counts[role])
    return {role: max((k for k, cell in enumerate(cells) if cell[0] == role), key=lambda k: cells[k][1])
            for role in named}


def head_roles_text(r):
    h = r["heads"]
    H = h["num_heads"]
    cells, counts, min_mass, most_none, commonest = _role_counts(h)
    parts = [f"{counts[role]} {_role_label(role, min_mass)} (strongest: head {k // H}-{k % H}, {_mass(*cells[k][1:])})"
             for role, k in _strongest_by_role(cells, counts).items()]
    if counts["none"]:
        parts.append(f"{counts['none']} {_role_label('none', min_mass)}")
    if most_none:
        verdict = f"most heads ({counts['none']} of {len(cells)}) give no single target {min_mass:g} of their attention"
    else:  # at least half the heads have a role
        n, top = commonest
        verdict = f"the commonest role is {_role_label(top, min_mass)} ({n} of {len(cells)} heads)"
    return (f"Roles as Clark et al. (2019) report them: a head's role is the target it gives the largest attention "
            f"mass (mean over queries), if that mass is >= {min_mass:g}; the ratio to uniform attention on the same "
            f"queries is shown beside it, but does not choose the role (its ceiling differs by target). Roles: "
            + "; ".join(parts) + f". So {verdict}.")


def head_roles_headline(r):
    cells, counts, min_mass, most_none, commonest = _role_counts(r["heads"])
    named = [_target(_ROLE_LABELS.get(role, role)) for role in _strongest_by_role(cells, counts)]
    if most_none:
        rest = f"; the others attend mostly to {' or '.join(named)}" if named else ""
        return (f"Most heads ({counts['none']} of {len(cells)}) have no single clear job: no target gets "
                f"{min_mass:.0%} of their attention{rest}.")
    n, top = commonest
    return (f"The commonest job is attending to {_target(_ROLE_LABELS.get(top, top))}: {n} of {len(cells)} heads give "
            f"it at least {min_mass:.0%} of their attention.")


def head_roles_tables(r):
    h = r["heads"]
    H = h["num_heads"]
    cells, counts, min_mass, _, _ = _role_counts(h)
    roles = {"header": ["role", "heads", "strongest head", "attention mass", "x uniform"],
             "rows": [[_ROLE_LABELS.get(role, role), counts[role], f"{k // H}-{k % H}", _cell(cells[k][1]),
                       _cell(cells[k][2], fmt=".1f")] for role, k in _strongest_by_role(cells, counts).items()]}
    if counts["none"]:
        roles["rows"].append([f"no role (< {min_mass:g})", counts["none"], "-", "-", "-"])
    per_head = {"header": ["head", "role", "attention mass", "x uniform"], "details": True,
                "rows": [[f"{k // H}-{k % H}", _ROLE_LABELS.get(role, "no role"), _cell(mass), _cell(ratio, fmt=".1f")]
                         for k, (role, mass, ratio) in enumerate(cells)]}
    return [roles, per_head]


def _norm_change(h):
    """({target: (raw mean, norm-weighted mean)}, the target that changes most, its direction: "falls", "rises" or
    "same" (equal as shown)."""
    changes = {k: (float(np.mean(h["stats"][k])), float(np.mean(h["norm_weighted_stats"][k])))
               for k in ("cls", "sep", "punctuation", "self", "previous", "next") if k in h["norm_weighted_stats"]}
    key = max(changes, key=lambda k: abs(changes[k][1] - changes[k][0]))
    raw, weighted = changes[key]
    return changes, key, ("same" if not _differ(raw, weighted) else "falls" if weighted < raw else "rises")


def norm_weighting_text(r):
    h = r["heads"]
    changes, key, direction = _norm_change(h)
    raw, weighted = changes[key]
    moves = ", ".join(f"{_ROLE_LABELS[k]} {a:.2f} -> {b:.2f}" for k, (a, b) in changes.items())
    text = (f"Weighting each attention weight by the norm of the vector it moves (||a_ij W_O W_V x_j||, value bias "
            f"included; Kobayashi et al. 2020), mean attention {moves}. ")
    if direction == "same":
        return text + (f"The largest change, attention to {_ROLE_LABELS[key]} ({raw:.3f} -> {weighted:.3f}), is "
                       "below the precision shown: norm weighting does not change the picture here.")
    return text + (f"The largest change: attention to {_ROLE_LABELS[key]} {direction} from {raw:.2f} to {weighted:.2f}, "
                   "so " + ("raw weights overstate how much these tokens contribute." if direction == "falls" else
                            "raw weights understate how much these tokens contribute."))


def norm_weighting_headline(r):
    changes, key, direction = _norm_change(r["heads"])
    raw, weighted = changes[key]
    target = _ROLE_LABELS[key]
    if direction == "same":
        return (f"No clear difference: weighting attention by the size of what it moves changes no target's mean "
                f"attention by 0.01 or more (largest change: {target}, {raw:.3f} -> {weighted:.3f}).")
    return (f"Raw attention {'overstates' if direction == 'falls' else 'understates'} what {_target(target)} "
            f"contributes: weighted by the size of what it moves, mean attention to it {direction} from {raw:.2f} to "
            f"{weighted:.2f}.")


def norm_weighting_tables(r):
    changes, _, _ = _norm_change(r["heads"])
    return [{"header": ["target", "raw mean attention", "norm-weighted", "change"],
             "rows": [[_ROLE_LABELS[k], f"{a:.3f}", f"{b:.3f}", f"{b - a:+.3f}"] for k, (a, b) in changes.items()]}]


def _ablation(r):
    """(inc, ci, k, beyond, role, min_mass): loss increases and 95% half-widths per head, the costliest head k =
    layer * H + head, how many heads raise the loss beyond their interval, and k's role with the mass roles need
    (None, None without the heads probe: a head with no role can still matter)."""
    ablation = r["head_ablation"]
    inc, ci = np.array(ablation["loss_increase"]), np.array(ablation["interval95"])
    k = int(np.argmax(inc))
    role = min_mass = None
    if r.get("heads"):
        roles, _, _, min_mass = _roles(r["heads"])
        H = ablation["num_heads"]
        role = roles[k // H][k % H]
    return inc, ci, k, int(np.sum(inc - ci > 0)), role, min_mass


def head_ablation_text(r):
    ablation = r["head_ablation"]
    inc, ci, k, beyond, role, min_mass = _ablation(r)
    H = ablation["num_heads"]
    verdict = (f"{beyond} of {inc.size} heads raise the loss beyond their 95% interval: removing them costs the model"
               if beyond else "No single head raises the loss beyond its 95% interval: no head is needed alone")
    rate = ablation.get("mlm_probability", ablation.get("mask_probability"))  # older files: mask_probability
    role = f" (role: {_role_label(role, min_mass)})" if role else ""
    return (f"Masked-LM loss {ablation['base_loss']:.3f} nats on {ablation['masked_tokens']} masked tokens of {ablation['sentences']} "
            f"sentences{f' (masking rate {rate:g})' if rate is not None else ''}; zeroing head {k // H}-{k % H}{role} "
            f"raises it most, by {inc.flat[k]:.3f} ± {ci.flat[k]:.3f} nats. {verdict}.")


def head_ablation_headline(r):
    inc, ci, k, beyond, role, _ = _ablation(r)
    H = r["head_ablation"]["num_heads"]
    head = f"head {k // H}-{k % H}" + (f" ({_ROLE_LABELS.get(role, 'no clear role')})" if role else "")
    if beyond:
        return (f"{beyond} of {inc.size} heads matter on their own: zeroing one raises the masked-word loss beyond "
                f"its 95% interval; the costliest is {head}, +{inc.flat[k]:.2f} nats.")
    return (f"No single head is needed on its own at this scale: zeroing any one leaves the masked-word loss within "
            f"its 95% interval (largest rise {inc.flat[k]:+.2f} ± {ci.flat[k]:.2f} nats, {head}).")


def head_ablation_tables(r):
    inc, ci, _, _, _, _ = _ablation(r)
    H = r["head_ablation"]["num_heads"]
    roles = _roles(r["heads"]) if r.get("heads") else None

    def row(k):
        role = _ROLE_LABELS.get(roles[0][k // H][k % H], "no role") if roles else "-"
        return [f"{k // H}-{k % H}", role, f"{inc.flat[k]:+.3f}", f"{ci.flat[k]:.3f}",
                "yes" if inc.flat[k] - ci.flat[k] > 0 else "no"]

    header = ["head", "role", "loss increase (nats)", "± 95%", "beyond its interval"]
    order = [int(k) for k in np.argsort(-inc, axis=None)]
    return [{"header": header, "rows": [row(k) for k in order[:5]]},
            {"header": header, "rows": [row(k) for k in range(inc.size)], "details": True}]


def _lens_gain(lens):
    """(gain, ci, below): each layer's gain over the unigram floor, its 95% half-width (NaN: one token) and the
    layers whose gain has its interval above 0; None without a floor."""
    if lens.get("floor") is None:
        return None
    gain = np.array(lens["gain"], dtype=float)
    ci = np.array([np.nan if c is None else c for c in lens["gain_interval95"]], dtype=float)
    return gain, ci, [layer for layer in range(len(gain)) if gain[layer] - ci[layer] > 0]


def logit_lens_text(r):
    """The loss by layer, and the first layer whose gain over the unigram floor has its 95% interval above 0 (or
    that no layer's has); without a floor, no verdict."""
    lens = r["logit_lens"]
    loss, accuracy = lens["loss"], lens["accuracy"]
    last, lowest = len(loss) - 1, int(np.argmin(loss))
    text = (f"Every layer's hidden state at {lens['masked_tokens']} masked tokens of {lens['sentences']} sentences "
            f"(masking rate {lens['mlm_probability']:g}), decoded through the model's final head: loss by layer "
            + ", ".join(f"{layer}: {x:.2f}" for layer, x in enumerate(loss)) + f" nats (lowest at layer {lowest}), "
            f"top-1 accuracy {accuracy[0]:.2f} at layer 0 and {accuracy[-1]:.2f} at layer {last}. ")
    caveat = (" Lower layers are read through a head trained on the last one: a high loss there need not mean the "
              "information is absent.")
    gains = _lens_gain(lens)
    if gains is None:
        return text + "No unigram floor was given, so no layer is compared with token frequencies alone." + caveat
    gain, ci, below = gains
    floor = f"the unigram floor ({lens['floor']:.2f} nats on the same tokens)"
    if not below:
        best = int(np.nanargmax(gain))
        return text + (f"No layer's loss is below {floor} beyond its 95% interval (largest gain {gain[best]:+.2f} ± "
                       f"{ci[best]:.2f} nats, at layer {best}): read through its head, no layer, not even the output, "
                       "predicts masked tokens better than token frequencies alone.") + caveat
    first = below[0]
    return text + (f"The loss first goes below {floor} beyond its 95% interval at layer {first} (gain {gain[first]:.2f} ± "
                   f"{ci[first]:.2f} nats); at the last layer the gain is {gain[-1]:+.2f} ± {ci[-1]:.2f} nats. "
                   + (f"Below layer {first}, no layer is shown to beat token frequencies alone through this head."
                      if first > 0 else "Even the embedding output beats token frequencies alone.")) + caveat


def logit_lens_headline(r):
    lens = r["logit_lens"]
    gains = _lens_gain(lens)
    if gains is None:
        lowest = int(np.argmin(lens["loss"]))
        return (f"Read through the masked-word head, layer {lowest} guesses masked words best "
                f"({lens['loss'][lowest]:.2f} nats); no word-frequency floor was given to compare with.")
    gain, ci, below = gains
    if not below:
        best = int(np.nanargmax(gain))
        return (f"Not resolved at this scale: no layer, read through the masked-word head, guesses masked words "
                f"better than word frequencies alone (largest gain {gain[best]:+.2f} ± {ci[best]:.2f} nats, layer "
                f"{best}).")
    first = below[0]
    if first == 0:
        return (f"Even layer 0, read through the masked-word head, guesses masked words better than word frequencies "
                f"alone (gain {gain[0]:.2f} ± {ci[0]:.2f} nats; last layer {gain[-1]:+.2f}).")
    return (f"Layer {first} is the first that, read through the masked-word head, guesses masked words better than "
            f"word frequencies alone (gain {gain[first]:.2f} ± {ci[first]:.2f} nats; last layer {gain[-1]:+.2f}).")


def logit_lens_tables(r):
    lens = r["logit_lens"]
    gains = _lens_gain(lens)
    ci = lens.get("interval95") or [None] * len(lens["loss"])
    header = ["layer", "loss (nats)", "± 95%", "top-1 accuracy"] + (["gain over the floor", "± 95%"] if gains else [])
    rows = []
    for layer, (loss, acc) in enumerate(zip(lens["loss"], lens["accuracy"])):
        row = [layer, f"{loss:.3f}", _cell(ci, layer, ".3f"), f"{acc:.3f}"]
        if gains:
            row += [f"{gains[0][layer]:+.3f}", "-" if np.isnan(gains[1][layer]) else f"{gains[1][layer]:.3f}"]
        rows.append(row)
    return [{"header": header, "rows": rows}]


def sense_verdict(interval, chance):
    """"above chance", "below chance" or "at chance: not at this scale", from where the 95% interval (a dict with
    low and high) lies against chance."""
    if interval["low"] > chance:
        return "above chance"
    if interval["high"] < chance:
        return "below chance"
    return "at chance: not at this scale"


SENSE_CONTROLS = {"position": "the word's position alone",
                  "position and length": "the word's position and the sentence's length alone"}


def _sense_claim(senses):
    """(verdict, control, its accuracy, beats it) at the last layer: the verdict against chance (sense_verdict) and,
    when above chance, whether the interval's low end is above the strongest control (the word's position, and its
    position with the sentence's length); None for files without intervals."""
    intervals = senses.get("accuracy_interval")
    if not intervals:
        return None
    controls = {"position": senses["position_accuracy"], "position and length": senses.get("length_accuracy")}
    controls = {k: v for k, v in controls.items() if v is not None}
    best_control, control = max(controls.items(), key=lambda kv: kv[1])
    verdict = sense_verdict(intervals[-1], senses["chance"])
    return verdict, best_control, control, verdict == "above chance" and intervals[-1]["low"] > control


def sense_accuracy_text(r, untrained=None):
    """The sense probe in words; the verdict is chosen by the last layer's interval against chance, then against
    the controls that see only the word's position and the sentence's length. `untrained`: the sense_accuracy dict
    of the same architecture at initialisation, shown beside. Files written before the intervals get no verdict."""
    senses = r["sense_accuracy"]
    acc, layers, chance = senses["accuracy"], senses["layers"], senses["chance"]
    intervals = senses.get("accuracy_interval")
    text = (f"{len(senses['words'])} homonyms ({', '.join(senses['words'])}), {senses['occurrences']} labelled "
            "sentences: ")
    raw = ", ".join(f"{a:.2f}" for a in senses.get("raw_accuracy", acc))  # older files: "accuracy" is raw
    if not intervals:  # an older file: raw vectors, no interval
        return text + (f"leave-one-out nearest-centroid sense accuracy (raw vectors) by layer {raw}, against "
                       f"chance {chance:.2f} and {senses['position_accuracy']:.2f} from the word's position alone. "
                       "This run recorded no interval, so no verdict.")
    by_layer = ", ".join(f"{layer}: {a:.2f} [{i['low']:.2f}, {i['high']:.2f}]"
                         for layer, a, i in zip(layers, acc, intervals))
    length = senses.get("length_accuracy")
    text += (f"leave-one-out nearest-centroid sense accuracy on centred vectors (All-but-the-Top), by layer with 95% "
             f"intervals over homonyms and contexts: {by_layer} (raw vectors: {raw}), "
             f"against chance {chance:.2f}. The same classifier on the word's position alone gets "
             f"{senses['position_accuracy']:.2f}" +
             (f", on its position and the sentence's length {length:.2f}" if length is not None else "") +
             " (static word embeddings: chance by construction). ")
    above = [layer for layer, i in zip(layers, intervals) if sense_verdict(i, chance) == "above chance"]
    verdict, best_control, control, beats = _sense_claim(senses)
    text += f"At the last layer ({layers[-1]}) sense accuracy is {verdict}"
    if verdict == "above chance":
        text += (f", and above the {best_control} control ({control:.2f})" if beats else
                 f", but not above the {best_control} control ({control:.2f}): the senses are not shown to be told "
                 "apart by meaning")
    text += f". Layers above chance: {', '.join(map(str, above)) or 'none'}."
    if untrained and untrained.get("accuracy_interval"):
        i = untrained["accuracy_interval"][-1]
        text += (f" The untrained model: {untrained['accuracy'][-1]:.2f} [{i['low']:.2f}, {i['high']:.2f}] at its last "
                 f"layer ({sense_verdict(i, untrained['chance'])}).")
    return text


def sense_accuracy_headline(r):
    senses = r["sense_accuracy"]
    acc, chance = senses["accuracy"][-1], senses["chance"]
    claim = _sense_claim(senses)
    if claim is None:
        return (f"No verdict: this run recorded no interval (last-layer sense accuracy {acc:.0%}, chance "
                f"{chance:.0%}).")
    verdict, best_control, control, beats = claim
    i = senses["accuracy_interval"][-1]
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
    return (f"Not resolved at this scale: at the last layer {found}, but its 95% interval ({i['low']:.0%} to "
            f"{i['high']:.0%}) includes chance ({chance:.0%}).")


def sense_accuracy_tables(r):
    senses = r["sense_accuracy"]
    layers, chance = senses["layers"], senses["chance"]
    intervals = senses.get("accuracy_interval") or [None] * len(layers)
    raw = senses.get("raw_accuracy")
    per_layer = {"header": ["layer", "accuracy", "95% interval", "raw vectors", "against chance"],
                 "rows": [[layer, f"{a:.2f}", "-" if i is None else f"[{i['low']:.2f}, {i['high']:.2f}]",
                           _cell(raw, n), "-" if i is None else sense_verdict(i, chance)]
                          for n, (layer, a, i) in enumerate(zip(layers, senses["accuracy"], intervals))]}
    controls = {"header": ["control", "accuracy"],
                "rows": [[label, _cell(senses.get(key))] for key, label in
                         (("chance", "chance"), ("position_accuracy", SENSE_CONTROLS["position"]),
                          ("length_accuracy", SENSE_CONTROLS["position and length"]),
                          ("static_accuracy", "static word embeddings")) if senses.get(key) is not None]}
    by_word = senses.get("accuracy_by_word") or {}
    words = {"header": ["homonym", "senses", *[f"layer {layer}" for layer in layers]], "details": True,
             "rows": [[w, ", ".join((senses.get("senses") or {}).get(w, [])),
                       *[_cell(v, n) for n in range(len(layers))]] for w, v in by_word.items()]}
    return [per_layer, controls] + ([words] if by_word else [])


def layer0_text(r):
    g = r["geometry"]
    static, layer0 = g["static"]["adjusted_self_similarity"], g["adjusted_self_similarity"][0]
    return (f"Layer 0 measured two ways: the embedding output (hidden_states[0], with positions) has adjusted "
            f"self-similarity {layer0:.2f}; the word embeddings alone (static, no positions) {static:.2f} (raw 1 by "
            f"construction minus their anisotropy baseline {g['static']['anisotropy']:.2f}). The position signal "
            + ("makes a word's occurrences less alike than the word alone." if layer0 < static else
               "does not make a word's occurrences less alike than the word alone.") + f" ({g.get('layer0_note', '')})")


def _edge_rule(graph):
    """The cut attention_graph used: relative_threshold / n (a multiple of uniform attention), an absolute one, or
    None where the graph does not record it."""
    t = graph.get("relative_threshold")
    if t is None:
        return f">= {graph['threshold']:.3g}" if "threshold" in graph else None
    return f">= {t:g}/n ({'twice' if t == 2 else f'{t:g} times'} uniform attention over the n words)"


def _edge_counts(r):
    """(raw edges, norm-weighted edges, "fewer" / "more" / "as many"), or None without both graphs."""
    raw, weighted = r.get("attention_graph") or {}, r.get("attention_graph_norm_weighted") or {}
    if not raw or not weighted:
        return None
    n_raw, n_weighted = len(raw["edges"]), len(weighted["edges"])
    return n_raw, n_weighted, ("fewer" if n_weighted < n_raw else "more" if n_weighted > n_raw else "as many")


def attention_norm_example_text(r):
    raw, weighted = r.get("attention_graph") or {}, r.get("attention_graph_norm_weighted") or {}
    text = "Head-mean attention of the first example, raw (top) and norm-weighted (bottom)"
    counts = _edge_counts(r)
    if counts is None:
        return text + "."
    rules = _edge_rule(raw), _edge_rule(weighted)
    if None in rules:
        text += "; both are exported as graphs"
    else:
        need = rules[0] if rules[0] == rules[1] else f"{rules[0]} (raw) and {rules[1]} (norm-weighted)"
        text += f"; both are exported as graphs whose edges need {need}"
    n_raw, n_weighted, verdict = counts
    return text + (f": {n_raw} edges raw, {n_weighted} norm-weighted, so norm weighting "
                   + {"fewer": "concentrates attention on fewer edges.", "more": "spreads it over more edges.",
                      "as many": "keeps as many edges."}[verdict])


def attention_norm_example_headline(r):
    counts = _edge_counts(r)
    if counts is None:
        return "The first example's head-mean attention by layer, raw and weighted by the size of what it moves."
    n_raw, n_weighted, verdict = counts
    numbers = f"{n_weighted} strong links against {n_raw} raw"
    if verdict == "as many":
        return f"No difference in count: weighting by the size of what it moves keeps as many strong links ({numbers})."
    return (f"Weighting by the size of what it moves {'concentrates' if verdict == 'fewer' else 'spreads'} the first "
            f"example's attention over {verdict} strong links ({numbers}).")


def attention_norm_example_tables(r):
    rows = [[name, len(g["edges"]), _edge_rule(g) or "-"] for name, g in
            (("raw", r.get("attention_graph")), ("norm-weighted", r.get("attention_graph_norm_weighted"))) if g]
    return [{"header": ["graph", "edges", "an edge needs"], "rows": rows}] if rows else []


GRAPH_MEANINGS = {  # what an edge a -> b of each graph says (attention_graphs section)
    "raw": "raw: one layer's attention weights, mean over heads: how that layer mixes the layer below, not the input "
           "words",
    "norm_weighted": "norm-weighted: each weight scaled by ||W_O W_V x_j||, the size of what word b actually moves "
                     "(Kobayashi et al. 2020)",
    "rollout": "rollout: every layer's head-mean attention with the residual connection (0.5 A + 0.5 I), multiplied "
               "from the input up: the share of input word b in a's representation after that layer, through "
               "attention and residuals (Abnar & Zuidema 2020)",
    "flow": "flow: the same layered graph read as a flow network: the maximum flow from input word b to a, rows "
            "normalised (Abnar & Zuidema 2020)",
}


def _graph_findings(r, k=5):
    """The numbers attention_graphs' sentences are chosen by: {"graphs", "last", "top" (rollout's strongest edges
    between different words at the last layer), "own" (a word's mean share of itself after the last layer), "uniform",
    "common" (how many of the top pairs raw attention also has among its strongest; None without raw)}."""
    from .results import GRAPHS, AttentionGraph

    graphs = {name: AttentionGraph.from_dict(r.get(key)) for name, key in GRAPHS.items()}
    rollout, raw = graphs["rollout"], graphs["raw"]
    last = rollout.layers[-1]
    top = rollout.strongest(last, k)
    common = None
    if raw is not None and top:
        raw_pairs = {(a, b) for a, b, _ in raw.strongest(last, len(top))}
        common = len(raw_pairs & {(a, b) for a, b, _ in top})
    return {"graphs": graphs, "last": last, "top": top, "own": rollout.self_share[-1],
            "uniform": 1 / len(rollout.labels), "common": common}


def attention_graphs_text(r, k=5):
    """What each graph of the first example means, rollout's strongest edges, and two findings chosen by the numbers:
    how much of a word's last-layer representation stays its own, and whether raw attention names the same pairs."""
    f = _graph_findings(r, k)
    rollout, last, top = f["graphs"]["rollout"], f["last"], f["top"]
    shown = [name for name, graph in f["graphs"].items() if graph is not None]
    text = (f"The first example's words as graphs at the last layer (layer {last}); an edge a -> b says that a draws "
            f"on b. " + "; ".join(GRAPH_MEANINGS[name] for name in shown) + ". ")
    if not top:
        return text + f"No rollout edge between different words reaches the threshold ({rollout.threshold:.3g})."
    own, uniform = f["own"], f["uniform"]
    text += ("The strongest edges, from rollout, between different words: "
             + ", ".join(f"{a} -> {b} ({w:.2f})" for a, b, w in top) + ". "
             f"After the last layer a word's representation is on average {own:.2f} its own input word (uniform "
             f"mixing: {uniform:.2f}), so " + ("the residual path keeps most of each word its own." if own > 0.5 else
                                                "most of each word comes from the other words.") + " ")
    if f["common"] is None:
        return text.rstrip()
    common = f["common"]
    return text + (f"{common} of rollout's {len(top)} strongest pairs are among raw attention's {len(top)} strongest at "
                   f"that layer: " + ("raw weights name mostly the same relations here." if 2 * common > len(top) else
                                      "read as word-to-word relations, raw weights would name different pairs here."))


def attention_graphs_headline(r):
    f = _graph_findings(r)
    own, uniform = f["own"], f["uniform"]
    what = "mostly still itself" if own > 0.5 else "mostly made of the other words"
    text = (f"After the last layer a word is {what} (on average {own:.2f} of it is its own input word; even mixing "
            f"would give {uniform:.2f})")
    if f["common"] is not None:
        same = 2 * f["common"] > len(f["top"])
        text += (f", and raw attention names {'mostly the same' if same else 'different'} strongest word pairs "
                 f"{'as' if same else 'than'} rollout")
    return text + "."


def attention_graphs_tables(r):
    f = _graph_findings(r)
    rollout, raw = f["graphs"]["rollout"], f["graphs"]["raw"]
    strongest = raw.strongest(f["last"], len(f["top"])) if raw is not None and f["top"] else []
    edges = {"header": ["rank", "rollout edge", "share", "raw attention edge", "weight"],
             "rows": [[n + 1, f"{a} -> {b}", f"{w:.2f}",
                       *((f"{strongest[n][0]} -> {strongest[n][1]}", f"{strongest[n][2]:.2f}") if n < len(strongest)
                         else ("-", "-"))] for n, (a, b, w) in enumerate(f["top"])]}
    own = {"header": ["after layer", "a word's share of its own input word (rollout)"],
           "rows": [[layer, f"{x:.2f}"] for layer, x in zip(rollout.layers, rollout.self_share or [])]}
    return [t for t in (edges, own) if t["rows"]]


def _geometry_with_layer0(r):
    return geometry_text(r) + (" " + layer0_text(r) if r["geometry"].get("static") else "")


ISSUE9_SECTIONS = {  # inserted after the named section: (name, title, text, needs)
    "sense": ("sense_accuracy", "Homonym senses by layer (leave-one-out)", sense_accuracy_text, "sense_accuracy"),
    "heads": ("head_roles", "Head roles by attention mass, ratio to uniform beside", head_roles_text, "heads"),
    "head_map": ("head_ablation", "Per-head ablation", head_ablation_text, "head_ablation"),
    "attention_example_2": ("norm_weighting", "Norm-weighted attention (Kobayashi et al. 2020)", norm_weighting_text,
                            "heads"),
    "norm_weighting": ("attention_norm_example", "Raw vs norm-weighted attention in the first example",
                       attention_norm_example_text, "heads"),
    "attention_norm_example": ("attention_graphs", "Attention as a graph: raw, norm-weighted, rollout and flow",
                               attention_graphs_text, "attention_graph_rollout"),
}


SECTIONS = (
    ("geometry", "Geometry by layer (Ethayarajh 2019)", _geometry_with_layer0, "geometry"),
    ("bands", "Context-specificity by word frequency", bands_text, "geometry"),
    ("benchmarks", "Word similarity and analogies", benchmarks_text, "benchmarks"),
    ("sense", "One word, several meanings", sense_text, "sense"),
    ("heads", "What the heads attend to (Clark et al. 2019)", heads_text, "heads"),
    ("head_map", "Head similarity map", head_map_text, "heads"),
    ("logit_lens", "The logit lens: every layer through the masked-LM head (nostalgebraist 2020)", logit_lens_text,
     "logit_lens"),  # after the head ablation (inserted below): both are masked-LM losses on the same tokens
    ("attention_example", "Attention in an example sentence", example_text, "heads"),
    ("attention_example_2", "Attention in a second example sentence", lambda r: example_text(r, 1), "heads"),
    ("weights", "QK and OV circuits", weights_text, "weights"),
    ("circuits", "Layer 0's circuits token by token: embedding similarity, co-occurrence, initialisation",
     circuits_text, "circuits"),
    ("drift", "Drift during training", drift_text, "drift"),
)


def _with_issue9(sections):
    out = []
    for section in sections:
        out.append(section)
        name = section[0]
        while name in ISSUE9_SECTIONS:
            out.append(ISSUE9_SECTIONS[name])
            name = ISSUE9_SECTIONS[name][0]
    return tuple(out)


SECTIONS = _with_issue9(SECTIONS)

# What each figure shows, for its alt text (report.html, then compare.html).
FIGURE_ALT = {
    "geometry": "Line charts by layer: self-similarity, intra-sentence similarity and maximum explainable variance, "
                "raw with their anisotropy baselines (left) and baseline-adjusted (right)",
    "bands": "Line chart: baseline-adjusted self-similarity by layer, one line per word-frequency band",
    "benchmarks": "Charts by layer: WordSim-353 and SimLex-999 Spearman correlations with 95% intervals for each "
                  "vector set, and analogy accuracy",
    "sense": "Heat maps, one per layer: cosine between the vectors of the same word in each pair of sentences",
    "heads": "Heat maps over layer and head: attention entropy and attention to self, previous token, next token, "
             "[CLS], [SEP] and punctuation",
    "head_map": "Scatter plot: every head (layer-head) placed by classical MDS of Jensen-Shannon distances, "
                "coloured by layer",
    "attention_example": "Grid of attention matrices, one per layer and head, for the first example sentence",
    "attention_example_2": "Grid of attention matrices, one per layer and head, for the second example sentence",
    "weights": "QK and OV circuit singular-value spectra per layer and their effective rank by layer, trained (and "
               "at initialisation where measured)",
    "circuits": "Grouped bars per head of layer 0: Spearman correlation of its query-key logits with the embedding "
                "similarity, co-occurrence and its initial form, with 95% intervals (left); OV copying score and "
                "positive eigenvalue share of the QK form, between -1 and 1 (right)",
    "drift": "Line charts over training steps, one line per parameter: distance from initialisation (and gradient "
             "norm and loss where recorded)",
    "head_roles": "Heat maps over layer and head: log2 of observed attention over what uniform attention gets, "
                  "per target",
    "norm_weighting": "Bar chart: mean raw and norm-weighted attention to each target",
    "attention_norm_example": "Head-mean attention matrices of the first example by layer, raw (top row) and "
                              "norm-weighted (bottom row)",
    "attention_graphs": "Graphs of the first example's words at the last layer, nodes on a circle, arrows a -> b "
                        "where a draws on b: raw attention, norm-weighted attention, attention rollout and attention "
                        "flow side by side",
    "head_ablation": "Heat map over layer and head: masked-LM loss increase when that head is zeroed",
    "logit_lens": "Line charts by layer: masked-token loss of each layer decoded through the masked-LM head, with 95% "
                  "intervals and the unigram floor as a dashed line (left), and top-1 accuracy (right)",
    "sense_accuracy": "Line chart: leave-one-out sense accuracy by layer, overall and per homonym, against chance "
                      "and position alone",
}
COMPARE_ALT = {"geometry": "Line chart: baseline-adjusted self-similarity by layer, one line per model",
               "benchmarks": "Charts by layer: WordSim-353, SimLex-999 and analogy scores, one line per model, each "
                             "model's word2vec baseline dashed"}


@functools.lru_cache(maxsize=None)
def _templates():
    return jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.dirname(os.path.abspath(__file__))),
                              autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _macros():
    return _templates().get_template("report_macros.html.j2").module


def _render(path, template, **context):
    with open(path, "w", encoding="utf-8") as f:
        f.write(_templates().get_template(template).render(**context))
    return path


DETAILS_ROWS = 20  # a table longer than this goes into the section's collapsed details


def _section(name, title, answer=None, png=None, alt="", tables=(), html=(), details=None, details_html=(),
             question=None):
    """One <section> of a report: its headline `answer`, the figure, `tables` [{header, rows}] and `html` pieces
    already escaped (Markup); then, collapsed, the full paragraph `details`, the tables marked "details" (or longer
    than DETAILS_ROWS) and `details_html`. `question`: the short question the summary row asks."""
    fold = [bool(t.get("details")) or len(t["rows"]) > DETAILS_ROWS for t in tables]
    folded = [t for t, f in zip(tables, fold) if f]
    return {"id": name, "title": title, "question": question or title, "answer": answer,
            "figure": _figure(png) if png else None, "thumbnail": _thumbnail(png) if png else None, "alt": alt,
            "tables": [t for t, f in zip(tables, fold) if not f],
            "html": list(html), "details": details, "details_tables": folded, "details_html": list(details_html)}


def provenance_html(provenance) -> str:
    """The run's record: date, seed, vector corpus, package versions and the command, as one paragraph."""
    if not provenance:
        return Markup("")
    versions = ", ".join(f"{name} {v}" for name, v in provenance.get("versions", {}).items() if v)
    return _macros().provenance(provenance, versions)


def neighbours_html(r):
    n = r["neighbours"]
    sets = [k for k in n["neighbours"] if k == "static" or k == "word2vec" or k.startswith("layer_")]
    rows = [[word, name, ", ".join(f"{w} ({c:.2f})" for w, c in n["neighbours"][name][word][:6])]
            for word in n["words"] if word not in n["oov"] for name in sets]
    return _macros().neighbours(rows, n["oov"])


NEIGHBOURS = 6  # nearest words shown and compared per vector set


def _neighbour_overlap(n):
    """(last layer's set name, {word: how many of its NEIGHBOURS nearest words the static embeddings and the last
    layer share}), or None without both sets."""
    layers = sorted((k for k in n["neighbours"] if k.startswith("layer_") and k[6:].isdigit()),
                    key=lambda k: int(k[6:]))
    if "static" not in n["neighbours"] or not layers:
        return None
    last, static = n["neighbours"][layers[-1]], n["neighbours"]["static"]
    near = lambda table, word: {w for w, _ in table.get(word, [])[:NEIGHBOURS]}  # noqa: E731
    return layers[-1], {word: len(near(static, word) & near(last, word)) for word in n["words"]
                        if word not in n["oov"] and word in static and word in last}


def neighbours_headline(r):
    n = r["neighbours"]
    overlap = _neighbour_overlap(n)
    if not overlap or not overlap[1]:
        return (f"The nearest words of {len(n['words'])} probe words in each vector set (no static and last-layer "
                "sets to compare).")
    last, shared = overlap
    mean = float(np.mean(list(shared.values())))
    verdict = "mostly stay the same as" if mean >= NEIGHBOURS / 2 else "mostly change from"
    return (f"At the last layer ({last.replace('_', ' ')}) the probe words' nearest words {verdict} those of the "
            f"input embeddings: on average {mean:.1f} of the {NEIGHBOURS} nearest are shared.")


def neighbours_tables(r):
    n = r["neighbours"]
    overlap = _neighbour_overlap(n)
    sets = [k for k in ("static", overlap[0] if overlap else None, "word2vec") if k and k in n["neighbours"]]
    shared = overlap[1] if overlap else {}
    near = lambda name, word: ", ".join(w for w, _ in n["neighbours"][name].get(word, [])[:NEIGHBOURS])  # noqa: E731
    shared_header = ["shared (static, last layer)"] if shared else []
    return [{"header": ["word", *[s.replace("_", " ") for s in sets], *shared_header],
             "rows": [[word, *[near(name, word) for name in sets], *([shared.get(word, "-")] if shared else [])]
                      for word in n["words"] if word not in n["oov"]]}]


def attention_view_headline(view):
    """A description, not a claim: what the interactive view holds and how to use it."""
    return (f"An interactive view of {len(view['sentences'])} sentences' attention ({view['num_layers']} layers x "
            f"{view['num_heads']} heads): pick a sentence, a layer and a head, then point at a token to see where it "
            "looks.")


# Per section: the short question its summary row asks, its headline (one sentence chosen by the numbers) and its
# tables ([{header, rows, "details": True for the collapsed block}]).
QUESTIONS = {
    "geometry": "Do higher layers make a word's vector depend more on its sentence?",
    "bands": "Do the most frequent words change most with their sentence?",
    "benchmarks": "Do the word vectors agree with human similarity judgements?",
    "neighbours": "Do a word's nearest words change by the last layer?",
    "sense": "Does the sentence move one word's vectors apart?",
    "sense_accuracy": "Can the vectors tell a word's meanings apart?",
    "attention_view": "Where does each token look, head by head?",
    "heads": "What do the attention heads look at?",
    "head_roles": "Do the heads have clear jobs?",
    "head_map": "Do heads in the same layer behave alike?",
    "head_ablation": "Which heads does the model need?",
    "logit_lens": "From which layer can the model guess a masked word?",
    "attention_example": "What does attention look like on one sentence?",
    "attention_example_2": "And on a second sentence?",
    "norm_weighting": "Does weighting attention by what it moves change the picture?",
    "attention_norm_example": "Does weighting by vector size change the attention graph?",
    "attention_graphs": "How much of a word is still itself after the last layer?",
    "weights": "Did training make the heads' weight matrices simpler?",
    "circuits": "What makes layer 0's heads attend to a token?",
    "drift": "Which weights did training change most?",
}
HEADLINES = {
    "geometry": geometry_headline, "bands": bands_headline, "benchmarks": benchmarks_headline,
    "neighbours": neighbours_headline, "sense": sense_headline, "sense_accuracy": sense_accuracy_headline,
    "heads": heads_headline, "head_roles": head_roles_headline, "head_map": head_map_headline,
    "head_ablation": head_ablation_headline, "logit_lens": logit_lens_headline,
    "attention_example": example_headline, "attention_example_2": lambda r: example_headline(r, 1),
    "norm_weighting": norm_weighting_headline, "attention_norm_example": attention_norm_example_headline,
    "attention_graphs": attention_graphs_headline, "weights": weights_headline, "circuits": circuits_headline,
    "drift": drift_headline,
}
TABLES = {
    "geometry": geometry_tables, "bands": bands_tables, "benchmarks": benchmarks_tables,
    "neighbours": neighbours_tables, "sense": sense_tables, "sense_accuracy": sense_accuracy_tables,
    "heads": heads_tables, "head_roles": head_roles_tables, "head_map": head_map_tables,
    "head_ablation": head_ablation_tables, "logit_lens": logit_lens_tables, "attention_example": example_tables,
    "attention_example_2": lambda r: example_tables(r, 1), "norm_weighting": norm_weighting_tables,
    "attention_norm_example": attention_norm_example_tables, "attention_graphs": attention_graphs_tables,
    "weights": weights_tables, "circuits": lambda r: [circuits_table(r)], "drift": drift_tables,
}


def write_report(r, plots, path, view=None):
    """report.html for one model; `r` is the probes.json dict, `plots` {figure name: PNG path}, `view` the
    interactive attention view's data (attention_view.py), shown first among the attention sections.

    The page opens with a summary: one row per section, its question, its headline and its figure small; each
    section then opens with the same headline, its figure and tables, the full paragraph collapsed below."""
    sections = []
    for name, title, text, needs in SECTIONS:
        if name == "sense" and r.get("neighbours"):  # a table, not a figure: between benchmarks and senses
            sections.append(_section("neighbours", "Nearest neighbours: static vs each layer", neighbours_headline(r),
                                     tables=neighbours_tables(r), details_html=[neighbours_html(r)],
                                     question=QUESTIONS["neighbours"]))
        if not r.get(needs) or name not in plots:
            continue
        sections.append(_section(name, title, HEADLINES[name](r), plots[name], FIGURE_ALT.get(name, title),
                                 TABLES[name](r), details=text(r), question=QUESTIONS.get(name)))
    if view:  # first of the attention sections
        at = next((i for i, s in enumerate(sections) if s["id"] == "heads"), len(sections))
        sections.insert(at, _section("attention_view", "Attention, interactive", attention_view_headline(view),
                                     html=[attention_view_html(view)], details=attention_view_text(view),
                                     question=QUESTIONS["attention_view"]))
    return _render(path, "report.html.j2", r=r, sections=sections, summary=True,
                   provenance=provenance_html(r.get("provenance")))


def attention_view_text(view):
    names = {"attention": "raw attention", "norm": "norm-weighted attention", "rollout": "rollout"}
    return (f"{len(view['sentences'])} sentences, {view['num_layers']} layers x {view['num_heads']} heads, as "
            f"{', '.join(names.get(w, w) for w in view['weightings'])}: pick a sentence, a layer and a head, then "
            "hover or focus a token to see its edges alone. The data is attention_view.json (docs/attention-graph.md).")


def attention_view_html(view):
    """The interactive view (attention_view.html.j2), script, style and data inline: it opens offline."""
    macro = _templates().get_template("attention_view.html.j2").module.view
    return macro(Markup(view_json(view)), view_assets())


def compare_cell(r, key):
    """Best encoder set with its 95% interval and word2vec's, from the typed results (results.py)."""
    from .benchmark_report import _score
    from .results import SavedProbeResults

    b = SavedProbeResults.from_dict(r).benchmarks
    top = b.best(key) if b else None
    w2v = b.systems.get("word2vec") if b else None
    return (f"{_score(top.similarity[key]) if top else 'n/a'} ({top.vectors if top else '-'}); "
            f"w2v {_score(w2v.similarity.get(key)) if w2v else 'n/a'}")


def write_compare_report(results, plots, path):
    """compare.html: several models' probes side by side; `results` {name: probes.json dict}."""
    rows = []
    for name, r in results.items():
        g = r["geometry"]
        best = {key: compare_cell(r, key) for key in ("wordsim353", "simlex999")}
        rows.append([name, r["model_class"], r["num_layers"], r["num_heads"], r["hidden_size"],
                     " → ".join(f"{a:.2f}" for a in g["adjusted_self_similarity"]), best["wordsim353"], best["simlex999"]])
    answers = {"geometry": "Adjusted self-similarity by layer for each model: a falling line means upper layers are more "
                           "context-specific; " + "; ".join(
                               f"{n}: {r['geometry']['adjusted_self_similarity'][0]:.2f} -> {r['geometry']['adjusted_self_similarity'][-1]:.2f}"
                               for n, r in results.items()) + ".",
               "benchmarks": "Word-similarity and analogy scores of each model's contextual vectors by layer, with each "
                             "model's word2vec baseline (dashed, same corpus) for reference."}
    sections = [_section(name, name, answers.get(name, ""), png, COMPARE_ALT.get(name, f"{name}, one line per model"))
                for name, png in plots.items()]
    return _render(path, "compare.html.j2", rows=rows, sections=sections)
