"""A self-contained report.html (PNGs embedded as base64): each figure with one sentence saying what it
shows and the answer it gives, written from the numbers in probes.json (no hand-written numbers)."""

import base64
import html
import os

import numpy as np

from .plots import benchmark_series


def _img(path):
    with open(path, "rb") as f:
        return f'<img src="data:image/png;base64,{base64.b64encode(f.read()).decode()}" style="max-width:100%">'


def _fmt(x, digits=2):
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def _table(header, rows):
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def geometry_text(r):
    g = r["geometry"]
    adj, layers = g["adjusted_self_similarity"], g["layers"]
    low = int(np.argmin(adj))
    trend = "falls" if adj[-1] < adj[0] else "does not fall"
    return (f"Baseline-adjusted self-similarity of {g['words_scored']} words (each seen >= 5 times, "
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


def bands_text(r):
    g = r["geometry"]
    bands = {b: v[-1] for b, v in g["adjusted_self_similarity_by_band"].items() if v[-1] is not None}
    if len(bands) < 2:
        return "Too few bands have words to compare frequencies."
    lowest = min(bands, key=bands.get)
    words = ", ".join(f"'{w}'" for w, _ in g["most_context_specific"][:6])
    return (f"At the last layer, adjusted self-similarity by frequency rank is "
            f"{'; '.join(f'{b}: {v:.2f}' for b, v in bands.items())}: the {lowest} band is the most context-specific "
            f"({'frequent (stop) words vary most with context, as published' if lowest == 'top 100' else 'not the stop words, unlike the published result'}). "
            f"The most context-specific words are {words}.")


def benchmarks_text(r):
    layers, families, singles = benchmark_series(r)
    parts = []
    for key, name in (("wordsim353", "WordSim-353"), ("simlex999", "SimLex-999")):
        candidates = {f"{fam.split()[0]} layer {l}": s[key] for fam, series in families.items()
                      for l, s in zip(layers, series) if s and s[key] is not None}
        candidates.update({k: s[key] for k, s in singles.items() if s[key] is not None})
        if not candidates:
            parts.append(f"{name}: every pair is out of vocabulary")
            continue
        best = max(candidates, key=candidates.get)
        oov = next(s for s in r["benchmarks"]["scores"])[f"{key}_oov"]
        extra = f", word2vec {candidates['word2vec']:.2f}" if "word2vec" in candidates else ""
        parts.append(f"{name} (OOV {oov:.0%} of pairs, the same pairs for every set): best is {best} "
                     f"(Spearman {candidates[best]:.2f}), static {_fmt(candidates.get('static'))}{extra}")
    ana = {s["vectors"]: s for s in r["benchmarks"]["scores"]}
    q = next(iter(ana.values()))["analogy_questions"]
    best_ana = max(ana, key=lambda k: -1 if ana[k]["analogy"] is None else ana[k]["analogy"])
    parts.append(f"analogies: {q} of 19,544 questions in vocabulary, best 3CosAdd accuracy {_fmt(ana[best_ana]['analogy'])} ({best_ana})")
    return ("Which vectors agree best with human similarity judgements (contextual = mean over the word's corpus "
            "occurrences, pieces mean-pooled; decontextualized = the word fed alone)? " + "; ".join(parts) + ".")


def sense_text(r):
    s = r["sense"]
    first, last = np.array(s["similarity"][0]), np.array(s["similarity"][-1])
    off = ~np.eye(len(first), dtype=bool)
    return (f"The same word '{s['word']}' in {len(s['sentences'])} sentences: the mean cosine between its occurrences is "
            f"{first[off].mean():.2f} at layer 0 and {last[off].mean():.2f} at layer {s['layers'][-1]}, so context "
            f"{'moves the vector apart with its sentence' if last[off].mean() < first[off].mean() else 'barely separates the occurrences'}; "
            f"the block structure shows whether same-sense sentences stay closer to each other.")


def heads_text(r):
    h = r["heads"]
    stats = {k: np.array(v) for k, v in h["stats"].items()}
    H = h["num_heads"]
    parts = []
    for key, label in (("previous", "previous token"), ("next", "next token"), ("self", "itself"),
                       ("sep", "[SEP]"), ("cls", "[CLS]"), ("punctuation", "punctuation")):
        if key in stats:
            k = int(np.argmax(stats[key]))
            parts.append(f"{label}: head {k // H}-{k % H} ({stats[key].flat[k]:.2f})")
    ent = stats["entropy"].mean(axis=1)
    return (f"Over {h['tokens']} query tokens in {h['sentences']} sentences, mean attention entropy per layer is "
            f"{', '.join(f'{e:.2f}' for e in ent)} nats against {h['uniform_entropy']:.2f} for uniform attention "
            f"({'broad' if ent.mean() > 0.8 * h['uniform_entropy'] else 'focused'} attention on average). The head "
            f"(layer-head) that attends most to each target: " + "; ".join(parts) + ".")


def head_map_text(r):
    h = r["heads"]
    js = np.array(h["js_divergence"])
    layer = np.repeat(np.arange(h["num_layers"]), h["num_heads"])
    same = (layer[:, None] == layer[None, :]) & ~np.eye(len(js), dtype=bool)
    different = layer[:, None] != layer[None, :]
    if not same.any() or not different.any():
        return "Too few heads to compare within and between layers."
    a, b = js[same].mean(), js[different].mean()
    return (f"Heads as points whose distances follow their Jensen-Shannon divergence: heads of the same layer are "
            f"{'closer' if a < b else 'not closer'} (mean JS {a:.3f}) than heads of different layers ({b:.3f}), "
            f"so {'heads cluster by layer' if a < b else 'behaviour does not cluster by layer'}.")


def example_text(r, index=0):
    sentence = r["heads"]["examples"][index]["sentence"]
    text = (f"Every head of every layer on {sentence!r} (row = attending token, column = attended token): the "
            "patterns behind the statistics above")
    return text + ("; the same attention pooled to words is exported as a weighted directed graph in "
                   "attention_graph.json." if index == 0 else ".")


def weights_text(r):
    w = r["weights"]
    t = {c: np.mean(w["trained"][f"{c}_effective_rank"]) for c in ("qk", "ov")}
    text = (f"Per-head QK (W_Q^T W_K) and OV (W_O W_V) circuits, from {w['source']}: mean effective rank "
            f"(entropy-based, Roy & Vetterli) QK {t['qk']:.1f}, OV {t['ov']:.1f} of at most {w['head_dim']}")
    if w.get("initial"):
        i = {c: np.mean(w["initial"][f"{c}_effective_rank"]) for c in ("qk", "ov")}
        verdict = "lower" if t["qk"] + t["ov"] < i["qk"] + i["ov"] else "not lower"
        text += (f", against QK {i['qk']:.1f}, OV {i['ov']:.1f} for the same model at initialisation: the trained "
                 f"circuits are {verdict} rank, i.e. {'training concentrates each head on fewer directions' if verdict == 'lower' else 'training did not concentrate the heads on fewer directions'}")
    return text + ". Biases and LayerNorm are ignored."


def drift_text(r):
    d = r["drift"]
    metric = next((m for m in ("drift", "rel_distance") if m in d["metrics"]), next(iter(d["metrics"])))
    final = {k: v for k, v in sorted(((p, s["values"][-1]) for p, s in d["metrics"][metric].items()), key=lambda x: -x[1])}
    names = list(final)
    return (f"From {os.path.basename(d['path'])}: by the end of training, {metric} is largest for {names[0]} "
            f"({final[names[0]]:.3g}) and smallest for {names[-1]} ({final[names[-1]]:.3g}): that is where training "
            f"moved the weights most and least.")


def neighbours_html(r):
    n = r["neighbours"]
    sets = [k for k in n["neighbours"] if k == "static" or k == "word2vec" or k.startswith("layer_")]
    rows = [[word, name, ", ".join(f"{w} ({c:.2f})" for w, c in n["neighbours"][name][word][:6])]
            for word in n["words"] if word not in n["oov"] for name in sets]
    note = f"<p>Not in the corpus vocabulary: {html.escape(', '.join(n['oov']))}.</p>" if n["oov"] else ""
    return _table(["word", "vectors", "nearest words (cosine)"], rows) + note


SECTIONS = (
    ("geometry", "Geometry by layer (Ethayarajh 2019)", geometry_text, "geometry"),
    ("bands", "Context-specificity by word frequency", bands_text, "geometry"),
    ("benchmarks", "Word similarity and analogies", benchmarks_text, "benchmarks"),
    ("sense", "One word, several meanings", sense_text, "sense"),
    ("heads", "What the heads attend to (Clark et al. 2019)", heads_text, "heads"),
    ("head_map", "Head similarity map", head_map_text, "heads"),
    ("attention_example", "Attention in an example sentence", example_text, "heads"),
    ("attention_example_2", "Attention in a second example sentence", lambda r: example_text(r, 1), "heads"),
    ("weights", "QK and OV circuits", weights_text, "weights"),
    ("drift", "Drift during training", drift_text, "drift"),
)

_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;"
          "font-size:85%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}p.answer{background:#f4f4f8;"
          "padding:.5em}")


def write_report(r, plots, path):
    """report.html for one model; `r` is the probes.json dict, `plots` {figure name: PNG path}."""
    c = r["corpus"]
    parts = [f"<h1>Probes: {html.escape(str(r['model']))}</h1>",
             f"<p>{html.escape(r['model_class'])}: {r['num_layers']} layers, {r['num_heads']} heads, hidden "
             f"{r['hidden_size']}. Corpus: {c['sentences']} sentences, {c['words']} words, {c['vocabulary']} distinct "
             f"words, {c['tokens']} tokens (max length {c['max_length']}). Static = input-embedding rows, "
             f"contextual layer l = hidden_states[l] (layer 0 is the embedding output and already includes "
             f"positions); subword pieces are mean-pooled into words. Probe time: {r['timings'].get('total', 0):.1f}s.</p>"]
    for name, title, text, needs in SECTIONS:
        if name == "sense":  # neighbours are a table, not a figure: they go between benchmarks and senses
            parts.append("<h2>Nearest neighbours: static vs each layer</h2>" + neighbours_html(r))
        if not r.get(needs) or name not in plots:
            continue
        parts.append(f"<h2>{title}</h2>")
        parts.append(f'<p class="answer">{html.escape(text(r))}</p>')
        parts.append(_img(plots[name]))
        if name == "benchmarks":
            parts.append(benchmark_table(r))
        if name == "sense":
            s = r["sense"]
            parts.append(_table(["sentence", f"nearest words at layer {s['layers'][-1]}"],
                                [[sent, ", ".join(w for w, _ in near)] for sent, near in zip(s["sentences"], s["nearest"][-1])]))
    for note in r.get("notes", []):
        parts.append(f"<p><em>Note: {html.escape(note)}</em></p>")
    _write_html(path, f"Probes: {r['model']}", parts)
    return path


def benchmark_table(r):
    rows = [[s["vectors"], _fmt(s["wordsim353"]), f"{s['wordsim353_oov']:.0%}", _fmt(s["simlex999"]),
             f"{s['simlex999_oov']:.0%}", _fmt(s["analogy"], 3), s["analogy_questions"]] for s in r["benchmarks"]["scores"]]
    return _table(["vectors", "WordSim-353", "OOV", "SimLex-999", "OOV", "analogy acc.", "questions"], rows)


def _write_html(path, title, parts):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                f"<style>{_STYLE}</style></head><body>" + "\n".join(parts) + "</body></html>")


def write_compare_report(results, plots, path):
    """compare.html: several models' probes side by side; `results` {name: probes.json dict}."""
    parts = ["<h1>Probe comparison</h1>"]
    rows = []
    for name, r in results.items():
        g = r["geometry"]
        best = {}
        for key in ("wordsim353", "simlex999"):
            scores = [s for s in (r.get("benchmarks") or {}).get("scores", []) if s["vectors"] != "word2vec" and s[key] is not None]
            top = max(scores, key=lambda s: s[key], default=None)
            w2v = next((s[key] for s in (r.get("benchmarks") or {}).get("scores", []) if s["vectors"] == "word2vec"), None)
            best[key] = f"{_fmt(top[key]) if top else 'n/a'} ({top['vectors'] if top else '-'}); w2v {_fmt(w2v)}"
        rows.append([name, r["model_class"], r["num_layers"], r["num_heads"], r["hidden_size"],
                     " → ".join(f"{a:.2f}" for a in g["adjusted_self_similarity"]), best["wordsim353"], best["simlex999"]])
    parts.append(_table(["model", "class", "layers", "heads", "hidden", "adjusted self-similarity by layer",
                         "best WordSim-353", "best SimLex-999"], rows))
    answers = {"geometry": "Adjusted self-similarity by layer for each model: a falling line means upper layers are more "
                           "context-specific; " + "; ".join(
                               f"{n}: {r['geometry']['adjusted_self_similarity'][0]:.2f} -> {r['geometry']['adjusted_self_similarity'][-1]:.2f}"
                               for n, r in results.items()) + ".",
               "benchmarks": "Word-similarity and analogy scores of each model's contextual vectors by layer, with each "
                             "model's word2vec baseline (dashed, same corpus) for reference."}
    for name, png in plots.items():
        parts.append(f"<h2>{name}</h2><p class='answer'>{html.escape(answers.get(name, ''))}</p>{_img(png)}")
    _write_html(path, "Probe comparison", parts)
    return path
