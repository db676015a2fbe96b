"""A self-contained report.html (PNGs embedded as base64): each figure with one sentence saying what it
shows and the answer it gives, written from the numbers in probes.json (no hand-written numbers).

The sentences are chosen here, in Python, from the numbers (`SECTIONS`); the page layout (contents, sections,
figures with alt text, tables) lives in the Jinja templates next to this file: report.html.j2, compare.html.j2
and report_macros.html.j2, rendered with autoescaping, so every value from the data is escaped."""

import base64
import functools
import os
import re
from collections import Counter

import jinja2
import numpy as np
from markupsafe import Markup


def _png(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def _word_filter(r):
    """The thresholds the geometry probe used, as stored in probes.json (min_contexts: distinct sentences;
    min_count: the run's --min-count, implied by min_contexts when it is not larger)."""
    min_contexts = r["geometry"].get("min_contexts")
    min_count = ((r.get("provenance") or {}).get("arguments") or {}).get("min_count")
    if min_contexts is None:
        return f"each seen >= {min_count} times, " if min_count is not None else ""
    more = f" and seen >= {min_count} times" if min_count is not None and min_count > min_contexts else ""
    return f"each in >= {min_contexts} distinct sentences{more}, "


def geometry_text(r):
    g = r["geometry"]
    adj, layers = g["adjusted_self_similarity"], g["layers"]
    low = int(np.argmin(adj))
    trend = "falls" if adj[-1] < adj[0] else "does not fall"
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
    """Written by benchmark_report.py from the intervals and coverage (see results.DECISION_RULE)."""
    from .benchmark_report import benchmarks_text as text

    return text(r)


def sense_text(r):
    sense = r["sense"]
    first, last = np.array(sense["similarity"][0]), np.array(sense["similarity"][-1])
    off = ~np.eye(len(first), dtype=bool)
    return (f"The same word '{sense['word']}' in {len(sense['sentences'])} sentences: the mean cosine between its occurrences is "
            f"{first[off].mean():.2f} at layer 0 and {last[off].mean():.2f} at layer {sense['layers'][-1]}, so context "
            f"{'moves the vector apart with its sentence' if last[off].mean() < first[off].mean() else 'barely separates the occurrences'}; "
            f"the block structure shows whether same-sense sentences stay closer to each other.")


def heads_text(r):
    h = r["heads"]
    stats = {k: np.array(v) for k, v in h["stats"].items()}
    H = h["num_heads"]
    relative = h.get("relative_to_uniform") or {}
    parts = []
    for key, label in (("previous", "previous token"), ("next", "next token"), ("self", "itself"),
                       ("sep", "[SEP]"), ("cls", "[CLS]"), ("punctuation", "punctuation")):
        if key in stats:
            k = int(np.argmax(stats[key]))
            ratio = relative[key][k // H][k % H] if key in relative else None
            parts.append(f"{label}: head {k // H}-{k % H}, {_mass(stats[key].flat[k], ratio)}")
    ent = stats["entropy"].mean(axis=1)
    return (f"Over {h['tokens']} query tokens in {h['sentences']} sentences, mean attention entropy per layer is "
            f"{', '.join(f'{e:.2f}' for e in ent)} nats against {h['uniform_entropy']:.2f} for uniform attention "
            f"({'broad' if ent.mean() > 0.8 * h['uniform_entropy'] else 'focused'} attention on average). The head "
            f"(layer-head) that attends most to each target, with its attention mass (mean over queries) and the "
            f"ratio to uniform attention on the same queries: " + "; ".join(parts) + ".")


def _mass(mass, ratio=None):
    """ "mass 0.45 (12x uniform)": a head's mean attention on a target, with its ratio to uniform where known."""
    if ratio is None:
        return f"mass {mass:.2f}"
    return f"mass {mass:.2f} ({ratio:.1f}x uniform)" if ratio < 10 else f"mass {mass:.2f} ({ratio:.0f}x uniform)"


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
        identity = c["identity"][h]
        if _above(identity, CIRCUIT_FOLLOWS):
            text = f"Head {h}'s W_Q/W_K reproduce the embedding similarity ({_rho(identity)})"
        elif _above(identity, 0):
            text = f"Head {h}'s W_Q/W_K partly follow the embedding similarity ({_rho(identity)})"
        elif identity["low"] is None:  # NaN in the probe: a head whose logits are all equal
            text = f"Head {h} attends by something other than embedding similarity (ρ undefined: constant logits)"
        else:
            where = "includes 0" if identity["high"] >= 0 else "is below 0"
            text = (f"Head {h} attends by something other than embedding similarity ({_rho(identity)}: the interval "
                    f"{where})")
        co = (c.get("cooccurrence") or [None] * (h + 1))[h]
        if _above(co, 0):
            text += f"{' and' if _above(identity, 0) else '; it does follow'} words that occur together ({_rho(co)})"
        initial = (c.get("initial") or [None] * (h + 1))[h]
        # "mostly" its initial form: a strong correlation with it (as "reproduce" is for the identity), above the
        # identity one; a correlation near 0 with both is neither
        if identity["high"] is not None and _above(initial, max(identity["high"], CIRCUIT_FOLLOWS)):
            text += f"; its QK form is still mostly its initial random form ({_rho(initial)} with it)"
        copying = (c.get("ov_copying") or [None] * (h + 1))[h]
        if copying is not None:
            rank = c["ov_self_rank"][h]
            numbers = f"score {copying:.2f}, a token's own logit ranked {rank:.1f} of {N} on average, chance {chance:.1f}"
            if copying > OV_COPIES and rank < OV_SELF_RANK * chance:
                text += f"; its OV circuit copies: a token it attends to raises that token's own logit ({numbers})"
            elif copying < -OV_COPIES:
                text += f"; its OV circuit suppresses: a token it attends to lowers its own logit ({numbers})"
            else:
                text += f"; its OV circuit does no copying ({numbers})"
        sentences.append(text + ".")
    # the note's first three sentences: which tokens, what layer 0 reads (X = LN(E[t])) and what of positions
    return " ".join(sentences) + " " + _sentences(c.get("note", ""), 3)


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


def drift_text(r):
    d = r["drift"]
    metric = "drift" if "drift" in d["metrics"] else next(iter(d["metrics"]))
    final = {k: v for k, v in sorted(((p, s["values"][-1]) for p, s in d["metrics"][metric].items()), key=lambda x: -x[1])}
    names = list(final)
    return (f"From {os.path.basename(d['path'])}: by the end of training, {metric} is largest for {names[0]} "
            f"({final[names[0]]:.3g}) and smallest for {names[-1]} ({final[names[-1]]:.3g}): that is where training "
            f"moved the weights most and least.")


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


def _role_label(role, min_mass):
    """A role's name; "none" says the mass a role needs in this run (heads.role_min_mass)."""
    return _ROLE_LABELS.get(role) or f"no role (no target gets {min_mass:g} of the attention)"


def head_roles_text(r):
    h = r["heads"]
    roles, mass, ratio, min_mass = _roles(h)
    H = h["num_heads"]
    # per head k = layer * H + head: (role, mass, ratio)
    cells = [cell for row in zip(roles, mass, ratio) for cell in zip(*row)]
    counts = Counter(role for role, _, _ in cells)
    parts = []
    for role, n in sorted(counts.items(), key=lambda x: (x[0] == "none", -x[1])):  # named roles first, commonest first
        if role == "none":
            parts.append(f"{n} {_role_label(role, min_mass)}")
            continue
        k = max((k for k, cell in enumerate(cells) if cell[0] == role), key=lambda k: cells[k][1])
        parts.append(f"{n} {_role_label(role, min_mass)} (strongest: head {k // H}-{k % H}, {_mass(*cells[k][1:])})")
    if counts["none"] > len(cells) / 2:
        verdict = f"most heads ({counts['none']} of {len(cells)}) give no single target {min_mass:g} of their attention"
    else:  # at least half the heads have a role
        n, top = max((n, role) for role, n in counts.items() if role != "none")
        verdict = f"the commonest role is {_role_label(top, min_mass)} ({n} of {len(cells)} heads)"
    return (f"Roles as Clark et al. (2019) report them: a head's role is the target it gives the largest attention "
            f"mass (mean over queries), if that mass is >= {min_mass:g}; the ratio to uniform attention on the same "
            f"queries is shown beside it, but does not choose the role (its ceiling differs by target). Roles: "
            + "; ".join(parts) + f". So {verdict}.")


def norm_weighting_text(r):
    h = r["heads"]
    changes = {k: (float(np.mean(h["stats"][k])), float(np.mean(h["norm_weighted_stats"][k])))
               for k in ("cls", "sep", "punctuation", "self", "previous", "next") if k in h["norm_weighted_stats"]}
    key = max(changes, key=lambda k: abs(changes[k][1] - changes[k][0]))
    raw, weighted = changes[key]
    moves = ", ".join(f"{_ROLE_LABELS[k]} {a:.2f} -> {b:.2f}" for k, (a, b) in changes.items())
    return (f"Weighting each attention weight by the norm of the vector it moves (||a_ij W_O W_V x_j||, value bias "
            f"included; Kobayashi et al. 2020), mean attention {moves}. The largest change: attention to "
            f"{_ROLE_LABELS[key]} {'falls' if weighted < raw else 'rises'} from {raw:.2f} to {weighted:.2f}, so "
            + ("raw weights overstate how much these tokens contribute." if weighted < raw else
               "raw weights understate how much these tokens contribute."))


def head_ablation_text(r):
    ablation = r["head_ablation"]
    inc, ci = np.array(ablation["loss_increase"]), np.array(ablation["interval95"])
    H = ablation["num_heads"]
    k = int(np.argmax(inc))
    beyond = int(np.sum(inc - ci > 0))
    verdict = (f"{beyond} of {inc.size} heads raise the loss beyond their 95% interval: removing them costs the model"
               if beyond else "No single head raises the loss beyond its 95% interval: no head is needed alone")
    rate = ablation.get("mlm_probability", ablation.get("mask_probability"))  # older files: mask_probability
    role = ""
    if r.get("heads"):  # the costliest head's role: a head with no role can still matter
        roles, _, _, min_mass = _roles(r["heads"])
        role = f" (role: {_role_label(roles[k // H][k % H], min_mass)})"
    return (f"Masked-LM loss {ablation['base_loss']:.3f} nats on {ablation['masked_tokens']} masked tokens of {ablation['sentences']} "
            f"sentences{f' (masking rate {rate:g})' if rate is not None else ''}; zeroing head {k // H}-{k % H}{role} "
            f"raises it most, by {inc.flat[k]:.3f} ± {ci.flat[k]:.3f} nats. {verdict}.")


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
    if lens.get("floor") is None:
        return text + "No unigram floor was given, so no layer is compared with token frequencies alone." + caveat
    gain = np.array(lens["gain"], dtype=float)
    ci = np.array([np.nan if c is None else c for c in lens["gain_interval95"]], dtype=float)  # NaN: one token
    below = [layer for layer in range(len(gain)) if gain[layer] - ci[layer] > 0]  # interval above 0
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


def sense_verdict(interval, chance):
    """"above chance", "below chance" or "at chance: not at this scale", from where the 95% interval (a dict with
    low and high) lies against chance."""
    if interval["low"] > chance:
        return "above chance"
    if interval["high"] < chance:
        return "below chance"
    return "at chance: not at this scale"


def sense_accuracy_text(r, untrained=None):
    """The sense probe in words; the verdict is chosen by the last layer's interval against chance, then against
    the controls that see only the word's position and the sentence's length. `untrained`: the sense_accuracy dict
    of the same architecture at initialisation, shown beside. Files written before the intervals get no verdict."""
    senses = r["sense_accuracy"]
    acc, layers, chance = senses["accuracy"], senses["layers"], senses["chance"]
    intervals = senses.get("accuracy_interval")
    controls = {"position": senses["position_accuracy"], "position and length": senses.get("length_accuracy")}
    controls = {k: v for k, v in controls.items() if v is not None}
    text = (f"{len(senses['words'])} homonyms ({', '.join(senses['words'])}), {senses['occurrences']} labelled "
            "sentences: ")
    raw = ", ".join(f"{a:.2f}" for a in senses.get("raw_accuracy", acc))  # older files: "accuracy" is raw
    if not intervals:  # an older file: raw vectors, no interval
        return text + (f"leave-one-out nearest-centroid sense accuracy (raw vectors) by layer {raw}, against "
                       f"chance {chance:.2f} and {controls['position']:.2f} from the word's position alone. This run "
                       "recorded no interval, so no verdict.")
    by_layer = ", ".join(f"{layer}: {a:.2f} [{i['low']:.2f}, {i['high']:.2f}]"
                         for layer, a, i in zip(layers, acc, intervals))
    text += (f"leave-one-out nearest-centroid sense accuracy on centred vectors (All-but-the-Top), by layer with 95% "
             f"intervals over homonyms and contexts: {by_layer} (raw vectors: {raw}), "
             f"against chance {chance:.2f}. The same classifier on the word's position alone gets "
             f"{controls['position']:.2f}" +
             (f", on its position and the sentence's length {controls['position and length']:.2f}"
              if "position and length" in controls else "") +
             " (static word embeddings: chance by construction). ")
    above = [layer for layer, i in zip(layers, intervals) if sense_verdict(i, chance) == "above chance"]
    verdict = sense_verdict(intervals[-1], chance)
    text += f"At the last layer ({layers[-1]}) sense accuracy is {verdict}"
    if verdict == "above chance":
        best_control, control = max(controls.items(), key=lambda kv: kv[1])
        text += (f", and above the {best_control} control ({control:.2f})" if intervals[-1]["low"] > control else
                 f", but not above the {best_control} control ({control:.2f}): the senses are not shown to be told "
                 "apart by meaning")
    text += f". Layers above chance: {', '.join(map(str, above)) or 'none'}."
    if untrained and untrained.get("accuracy_interval"):
        i = untrained["accuracy_interval"][-1]
        text += (f" The untrained model: {untrained['accuracy'][-1]:.2f} [{i['low']:.2f}, {i['high']:.2f}] at its last "
                 f"layer ({sense_verdict(i, untrained['chance'])}).")
    return text


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


def attention_norm_example_text(r):
    raw, weighted = r.get("attention_graph") or {}, r.get("attention_graph_norm_weighted") or {}
    text = "Head-mean attention of the first example, raw (top) and norm-weighted (bottom)"
    if not raw or not weighted:
        return text + "."
    rules = _edge_rule(raw), _edge_rule(weighted)
    if None in rules:
        text += "; both are exported as graphs"
    else:
        need = rules[0] if rules[0] == rules[1] else f"{rules[0]} (raw) and {rules[1]} (norm-weighted)"
        text += f"; both are exported as graphs whose edges need {need}"
    n_raw, n_weighted = len(raw["edges"]), len(weighted["edges"])
    return text + (f": {n_raw} edges raw, {n_weighted} norm-weighted, so norm weighting "
                   + ("concentrates attention on fewer edges." if n_weighted < n_raw else
                      "spreads it over more edges." if n_weighted > n_raw else "keeps as many edges."))


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


def attention_graphs_text(r, k=5):
    """What each graph of the first example means, rollout's strongest edges, and two findings chosen by the numbers:
    how much of a word's last-layer representation stays its own, and whether raw attention names the same pairs."""
    from .results import GRAPHS, AttentionGraph

    graphs = {name: AttentionGraph.from_dict(r.get(key)) for name, key in GRAPHS.items()}
    rollout, raw = graphs["rollout"], graphs["raw"]
    last = rollout.layers[-1]
    shown = [name for name, graph in graphs.items() if graph is not None]
    text = (f"The first example's words as graphs at the last layer (layer {last}); an edge a -> b says that a draws "
            f"on b. " + "; ".join(GRAPH_MEANINGS[name] for name in shown) + ". ")
    top = rollout.strongest(last, k)
    if not top:
        return text + f"No rollout edge between different words reaches the threshold ({rollout.threshold:.3g})."
    uniform, own = 1 / len(rollout.labels), rollout.self_share[-1]
    text += ("The strongest edges, from rollout, between different words: "
             + ", ".join(f"{a} -> {b} ({w:.2f})" for a, b, w in top) + ". "
             f"After the last layer a word's representation is on average {own:.2f} its own input word (uniform "
             f"mixing: {uniform:.2f}), so " + ("the residual path keeps most of each word its own." if own > 0.5 else
                                                "most of each word comes from the other words.") + " ")
    if raw is None:
        return text.rstrip()
    raw_pairs = {(a, b) for a, b, _ in raw.strongest(last, len(top))}
    common = len(raw_pairs & {(a, b) for a, b, _ in top})
    return text + (f"{common} of rollout's {len(top)} strongest pairs are among raw attention's {len(top)} strongest at "
                   f"that layer: " + ("raw weights name mostly the same relations here." if 2 * common > len(top) else
                                      "read as word-to-word relations, raw weights would name different pairs here."))


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


def _section(name, title, answer=None, png=None, alt="", tables=(), html=()):
    """One <section> of a report: `tables` [{header, rows}], `html` pieces already escaped (Markup)."""
    return {"id": name, "title": title, "answer": answer, "figure": _png(png) if png else None, "alt": alt,
            "tables": list(tables), "html": list(html)}


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


def write_report(r, plots, path):
    """report.html for one model; `r` is the probes.json dict, `plots` {figure name: PNG path}."""
    sections = []
    for name, title, text, needs in SECTIONS:
        if name == "sense" and r.get("neighbours"):  # a table, not a figure: between benchmarks and senses
            sections.append(_section("neighbours", "Nearest neighbours: static vs each layer",
                                     html=[neighbours_html(r)]))
        if not r.get(needs) or name not in plots:
            continue
        tables, pieces = [], []
        if name == "benchmarks":
            pieces.append(Markup(benchmark_table(r)))  # escaped by benchmark_report
        if name == "circuits":
            tables.append(circuits_table(r))
        if name == "sense":
            sense = r["sense"]
            tables.append({"header": ["sentence", f"nearest words at layer {sense['layers'][-1]}"],
                           "rows": [[sent, ", ".join(w for w, _ in near)]
                                    for sent, near in zip(sense["sentences"], sense["nearest"][-1])]})
        sections.append(_section(name, title, text(r), plots[name], FIGURE_ALT.get(name, title), tables, pieces))
    return _render(path, "report.html.j2", r=r, sections=sections, provenance=provenance_html(r.get("provenance")))


def benchmark_table(r):
    from .benchmark_report import benchmark_table as table

    return table(r)


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
