"""FINDINGS.md from results.json: each verdict sentence is chosen by a stored comparison's verdict (`statistics.verdict`:
a difference after Holm's correction, equivalence by TOST within a stated margin, or unresolved), and every number
printed is one stored in results.json."""

from . import statistics as st
from .training import VARIANTS


def ci(d: dict | None, unit: str = "") -> str:
    """"estimate [low, high]" of a stored interval, with its df (t-intervals) and Holm-adjusted p (tested ones)."""
    if d is None:
        return "n/a"
    extra = [f"df {d['df']}"] if d.get("df") is not None and d.get("method", "t") == "t" else []
    if d.get("p_holm") is not None:
        extra.append(f"Holm p {d['p_holm']}" + (f" of {d['family_size']}" if d.get("family_size", 1) > 1 else ""))
    return f"{d['estimate']}{unit} [{d['low']}, {d['high']}]" + (f" ({', '.join(extra)})" if extra else "")


def _list(values):
    return ", ".join("n/a" if v is None else str(v) for v in values)


def _pairs(related):
    return ", ".join(f"{pair} {value}" for pair, value in related.items() if value is not None) or "pairs not in the corpus"


def compared(diff: dict, worse: str, same: str, better: str, unresolved: str | None = None) -> str:
    """The phrase for a stored comparison a - b by its verdict: "higher" (a worse), "lower" (a better), "equivalent"
    (`same`, with the TOST margin), "unresolved" (`unresolved`, default: `same` is NOT claimed, the data cannot tell)."""
    verdict = st.verdict(diff)
    if verdict == "higher":
        return worse
    if verdict == "lower":
        return better
    if verdict == "equivalent":
        return f"{same} (equivalent within ±{diff['margin']} by a TOST test)"
    margin = f" nor equivalence within ±{diff['margin']}" if diff and diff.get("margin") else ""
    return unresolved or f"not resolved at this scale (neither a difference{margin})"


def scale_paragraph(results: dict) -> list[str]:
    scale, settings = results["answers"]["scale"], results["settings"]
    lines = [
        f"**Scale: {scale['parameters']} parameters ({scale['layers']} layers, hidden size {scale['hidden_size']}, "
        f"{scale['heads']} heads, vocabulary {scale['vocab_size']}), {scale['tokens_trained']} tokens trained "
        f"({scale['steps']} steps of {settings['batch_size']} x {settings['max_seq_length']}), {scale['seeds']} paired "
        f"seeds.** Each model is scored on the whole validation set masked {scale['mask_draws']} times "
        f"({scale['masked_tokens']} masked tokens per model). The floor: the unigram model (training-split token "
        f"frequencies) scores {scale['unigram_loss']} nats on the same masked tokens; a model has learned something "
        f"from context only as far as it is below that. Intervals are {scale['confidence_percent']}% t-intervals over "
        f"seeds (df = seeds - 1) of paired differences (same seed: same data order, masks and, where shapes agree, "
        "initial weights). Within each question's family of comparisons the p-values are Holm-adjusted; a difference "
        "is called one only when its adjusted p is below 0.05, \"equivalent\" only when a TOST test puts it within "
        f"±{scale['loss_margin']} nat, and anything else is \"not resolved at this scale\".",
    ]
    if not scale["enough_seeds"]:
        lines.append(f"\n**Only {scale['seeds']} seeds: intervals need >= {scale['min_seeds']} seeds to be "
                     "usable; read every verdict below as provisional.**")
    return lines


def loss_section(results: dict, fig) -> list[str]:
    table, floors = results["answers"]["losses"], results["answers"]["floors"]
    lines = ["", "| variant | what it is | validation loss (nats) | unigram loss - loss | share of the full model's "
             "gain over the unigram floor (%) | masked-token accuracy |", "| --- | --- | --- | --- | --- | --- |"]
    for variant in VARIANTS:
        if variant.name in table:
            row = table[variant.name]
            lines.append(f"| {variant.name} | {variant.description} | {ci(row['loss'])} | {ci(row['below_unigram'])} "
                         f"| {ci(row['share_of_gain']) if row['share_of_gain'] else '-'} | {ci(row['accuracy'])} |")
    lines += [
        "",
        "The full model "
        + compared(floors["full_vs_unigram"], "is above the unigram floor: it has not yet learned even the token "
                   "frequencies", "is at the unigram floor: at this scale it has learned no more than token frequencies",
                   "is below the unigram floor: it uses context",
                   "is not told apart from the unigram floor: at this scale it has learned little beyond token "
                   "frequencies, and the comparisons below are between models near the floor")
        + f" (loss - unigram loss {ci(floors['full_vs_unigram'])}). The untrained model is at "
        f"{ci(floors['untrained_vs_unigram'])} nats from the unigram floor, which is why shares of loss reduction are "
        "measured from the unigram floor, not from the untrained loss.",
        fig("loss_curves", "validation loss during training, with the unigram floor"),
    ]
    return lines


def q1_section(results: dict, fig) -> list[str]:
    q1 = results["answers"]["q1"]
    d, rows = q1["drift"], q1["rows"]
    rho = rows["spearman_drift_vs_count"]
    trend = {1: "rows of frequent tokens move further", 0: "row movement is not measurably related to frequency",
             -1: "rows of rare tokens move further"}[st.sign(rho)]
    bins = "; ".join(f"{b['min_count']}-{b['max_count'] if b['max_count'] is not None else 'more'} occurrences: "
                     f"{b['rows']} rows, median {b['median_drift']}" for b in rows["bins"] if b["rows"])
    never = rows.get("never_input")
    lines = [
        "## 1. Are the input embedding vectors updated during training, or only W_Q, W_K, W_V?",
        "",
        f"**{'Yes' if q1['embeddings_updated'] else 'No'}: backpropagation updates the input embeddings like every "
        f"other weight, row by row: {trend}** (Spearman correlation between a row's distance from its initial value "
        f"and its token's count in the training split: {ci(rho)}, bootstrap over tokens, first seed).",
        "",
        f"- Distance ||e_final - e_init|| of a row (median initial row norm {rows['initial_row_norm']}) by training "
        f"count: {bins}.",
    ]
    if never is not None:
        lines.append("- Rows of tokens that were never an input in training (not in the text and never drawn as a "
                     "random replacement by the masking): "
                     + ("none here: every id was an input in some example's masks in the epochs training touched, so "
                        "this check had no rows." if never["rows"] == 0 else
                        f"none of the {never['rows']} moved, as it should be (checked)." if never["moved"] == 0 else
                        f"{never['moved']} of {never['rows']} moved (up to {never['max_drift']}), though they never "
                        f"received a gradient: weight decay ({q1['weight_decay']}) or the optimiser moves them, "
                        "so the drift of rare rows is not only learning."))
    lines += [
        f"- Tokens absent from the training text: {rows['not_in_text']['moved']} of {rows['not_in_text']['rows']} "
        "rows moved anyway, because the masking replaces a tenth of the masked tokens by random ids, which makes them "
        "inputs.",
        f"- After {q1['steps']} steps, relative distance ||W - W_init|| / ||W_init||: word embeddings "
        f"{d.get('word_embeddings')}, W_Q {d.get('W_Q')}, W_K {d.get('W_K')}, W_V {d.get('W_V')}, W_O {d.get('W_O')} "
        f"(mean over layers); mean gradient norm: word embeddings {q1['grad_norm'].get('word_embeddings')}, "
        f"W_Q {q1['grad_norm'].get('W_Q')}, W_K {q1['grad_norm'].get('W_K')}, W_V {q1['grad_norm'].get('W_V')}.",
        f"- Control: the frozen variant's word embeddings moved {q1['frozen_word_embeddings_drift']} "
        f"({q1['rows_frozen_moved']} rows moved). The output layer is untied, so the embedding updates come only from "
        "their role as inputs.",
        fig("row_drift", "per-row drift against training frequency"), fig("drift", "distance from initialisation"),
    ]
    return lines


def q2_section(results: dict, fig) -> list[str]:
    q2 = results["answers"]["q2"]
    diff, matched, dyn = q2["frozen_minus_full"], q2.get("frozen_matched_minus_full"), q2["gain_full_minus_frozen"]
    mf = results.get("matched_frozen") or {}
    points = [(s, g) for s, g in zip(dyn["steps"], dyn["difference"]) if g is not None]
    lines = [
        "## 2. If W_Q, W_K, W_V are trained, is there any need to train the input embeddings?",
        "",
        "**" + compared(matched, "Yes, at this scale: frozen random embeddings are worse, even with the capacity "
                        "given back",
                        "No, at this scale: with the capacity given back, frozen random embeddings do as well as "
                        "trained ones",
                        "No, at this scale: with the capacity given back, frozen random embeddings are better",
                        "Not resolved at this scale: with the capacity given back, the data cannot tell frozen random "
                        f"embeddings from trained ones (neither a difference nor equivalence within ±{matched['margin']})"
                        if matched else None)
        + f"** (frozen, feed-forward widened from {mf.get('unmatched_intermediate_size')} to "
        f"{mf.get('intermediate_size')} units so that {mf.get('parameters')} parameters are trained against the full "
        f"model's {mf.get('full_parameters')}: frozen - full validation loss {ci(matched)} nats; "
        f"{ci(q2.get('frozen_matched_share_of_gain'), '%') if q2.get('frozen_matched_share_of_gain') else 'n/a'} of the "
        "full model's gain over the unigram floor). Random vectors are distinct, so the layers above can learn to read "
        "them, but they carry no similarity between related words until training puts it there.",
        "",
        f"- Without the capacity given back (the same shape, {mf.get('unmatched_parameters')} trainable parameters): "
        + compared(diff, "worse", "no different", "better")
        + f" (frozen - full {ci(diff)} nats; "
        f"{ci(q2['frozen_share_of_gain'], '%') if q2['frozen_share_of_gain'] else 'n/a'} of the gain). This gap mixes "
        "\"embeddings not trained\" with \"fewer trainable parameters\"; the matched comparison above separates them.",
    ]
    if points:
        (s0, g0), (s1, g1) = points[0], points[-1]
        trend = {1: "the trained embeddings are ahead", 0: "the two are not told apart",
                 -1: "the frozen embeddings are ahead"}
        lines += [
            f"- Trend during training (gain over the unigram floor, full - frozen, paired over seeds, on the "
            f"curve's {results['settings']['curve_eval_samples'] or 'full'} validation sequences): at step {s0} "
            f"{ci(g0)}, where {trend[st.sign(g0)]}; at step {s1} {ci(g1)}, where {trend[st.sign(g1)]}.",
            "- At every evaluation: " + "; ".join(f"step {s} {ci(g)}" for s, g in points) + ".",
        ]
    lines += similarity_lines(results)
    lines.append(fig("learning_dynamics", "gain over the unigram floor and word similarity during training"))
    return lines


def similarity_lines(results: dict) -> list[str]:
    """Word similarity during training: the change from step 0 to the end of each vector set, paired over seeds."""
    sim, dynamics = results["answers"]["q2"].get("similarity"), results.get("dynamics")
    if not sim:
        return []
    last = f"layer_{results['config']['num_hidden_layers']}"
    moved = {1: "rose", 0: "no change was resolved", -1: "fell"}
    pairs = dynamics["pairs"]
    lines = [f"- Word similarity during training (WordSim-353 Spearman on the {pairs['kept']} of {pairs['total']} "
             f"pairs whose words occur in >= {dynamics['min_contexts']} of {dynamics['sentences']} training sentences; "
             "mean over seeds [95% t-interval]; step 0 is the untrained model; with this few pairs a Spearman "
             "correlation has a standard error near 1 / sqrt(pairs - 3), so small changes are beyond this measurement):"]
    for variant in ("full", "frozen_embeddings"):
        for name, label in (("static", "static vectors"), (last, "last layer's pooled vectors")):
            x = sim[variant][name]
            if x["change"] is None:
                continue
            lines.append(f"  - {variant}, {label}: {moved[st.sign(x['change'])]}, from {ci(x['spearman'][0])} to "
                         f"{ci(x['spearman'][-1])} at step {x['steps'][-1]} (change {ci(x['change'])}); at every "
                         "saved step: " + ", ".join(f"{step} {_point(p)}" for step, p in zip(x["steps"], x["spearman"]))
                         + ".")
    end = sim.get("full_minus_frozen", {}).get(last)
    if end is not None:
        lines.append("  - At the end, the full model's last-layer vectors "
                     + compared(end, "match human similarity better than the frozen run's",
                                "match it as well as the frozen run's",
                                "match human similarity worse than the frozen run's",
                                "are not told apart from the frozen run's at this scale")
                     + f" (full - frozen {ci(end)}).")
    return lines


def subsets_line(subsets: dict | None) -> list[str]:
    """WordSim-353's similarity and relatedness subsets side by side; nothing for results from before them."""
    if not subsets or subsets["similarity"]["pairs"] is None:
        return []
    sim, rel = subsets["similarity"], subsets["relatedness"]
    pair = lambda key: f"{sim[key]} / {rel[key]}"  # noqa: E731
    return [f"- WordSim-353 split into its similarity / relatedness subsets (Agirre et al.; {pair('pairs')} pairs "
            f"in every vocabulary): static {pair('static')}, last layer {pair('last_layer')}, word2vec "
            f"{pair('word2vec')}."]


def _point(interval: dict | None) -> str:
    return "n/a" if interval is None else str(interval["estimate"])


def q3_section(results: dict) -> list[str]:
    q3 = results["answers"]["q3"]
    m = q3["matched"]
    share = lambda key: ci(q3[key], "%") if q3[key] else "n/a"  # noqa: E731
    return [
        "## 3. Are W_Q and W_K the embedding matrix? What if W_Q = W_K = W_V = I?",
        "",
        f"**No: they are separate matrices with their own shapes and gradients.** The embedding matrix is "
        f"{q3['embedding_shape'][0]} x {q3['embedding_shape'][1]} (one row per token); each layer's W_Q and W_K are "
        f"{q3['projection_shape'][0]} x {q3['projection_shape'][1]}, read as {q3['heads']} heads of {q3['head_dim']} "
        "dimensions, and act on the normalised residual stream, not on tokens. With W_Q = W_K = W_V = I and the "
        f"feed-forward widened from {m['unmatched_intermediate_size']} to {m['intermediate_size']} units "
        f"({m['parameters']} parameters against the full model's {m['full_parameters']}; one unit is "
        f"{m['unit_parameters']}), the model "
        + compared(q3["identity_minus_full"], "is worse", "does as well", "is better",
                   "is not told apart from the full model at this scale")
        + f" (identity - full loss {ci(q3['identity_minus_full'])} nats; {share('identity_share_of_gain')} of the "
        "full model's gain over the unigram floor).",
        "",
        "- Learned W_Q, W_K, W_V that start at I: "
        + compared(q3["from_identity_minus_full"], "worse than", "equivalent to", "better than",
                   "not told apart at this scale from")
        + f" the normal initialisation (difference {ci(q3['from_identity_minus_full'])}; "
        f"{share('from_identity_share_of_gain')} of the gain).",
        "- Dropping the feed-forward sublayers instead (attention-only): "
        + compared(q3["attention_only_minus_full"], "worse", "equivalent", "better", "not told apart at this scale")
        + f" (difference {ci(q3['attention_only_minus_full'])}; {share('attention_only_share_of_gain')} of the gain).",
        "",
    ]


def probe_sections(results: dict, fig) -> list[str]:
    a = results["answers"]
    if "q4" not in a:
        return []
    q4, q5, q6 = a["q4"], a["q5"], a["q6"]
    caveat = "First seed's models only: one sample, no interval, so these numbers are descriptions, not verdicts."
    lines = [
        "## 4. Where do the weight matrices come from, and do different heads end up doing different things?",
        "",
        "**From a random initialisation, then gradient descent; the heads' measured behaviour is below.** " + caveat,
        "",
        f"- Mean Jensen-Shannon divergence between heads of the same layer, per layer: "
        f"{_list(q4['js_within_layer_init'])} at initialisation, {_list(q4['js_within_layer_trained'])} trained.",
        f"- Mean attention entropy: {q4['entropy_init']} at initialisation, {q4['entropy_trained']} trained "
        f"(uniform attention: {q4['uniform_entropy']}).",
        "- Role of each trained head, relative to uniform attention on the same queries (observed / uniform): "
        + ", ".join(f"{h} {info['role']}" + (f" ({info['ratio']}x)" if info["ratio"] is not None else "")
                    for h, info in q4["roles_trained"].items()) + ".",
        fig("head_diversity", "head diversity"),
        "## 5. Does training put words that occur together, or that are related, close together?",
        "",
        f"**Measured on the static vectors and each layer's; {caveat[0].lower() + caveat[1:]}** Spearman correlation "
        f"between co-occurrence PPMI and cosine over the {q5['cooccurrence_top_words']} most frequent words: "
        f"{q5['cooccurrence_spearman_static']} trained, {q5['cooccurrence_spearman_static_untrained']} at "
        f"initialisation, {q5['cooccurrence_spearman_static_frozen'] or 'n/a (not probed)'} with frozen embeddings, "
        f"{q5['cooccurrence_spearman_last_layer']} for the last layer.",
        "",
        f"- Cosine of related and unrelated pairs, static vectors: {_pairs(q5['related_static'])} "
        f"(at initialisation: {_pairs(q5['related_static_untrained'])}); last layer: {_pairs(q5['related_last_layer'])}.",
        f"- WordSim-353 Spearman of the static vectors: {q5['wordsim_static']} against {q5['wordsim_word2vec']} for "
        f"word2vec (pairs out of vocabulary: {q5['wordsim_oov']}).",
        *subsets_line(q5.get("wordsim_subsets")),
        fig("related_words", "related word pairs"), fig("word_similarity", "word similarity by layer"),
        "## 6. What do the contextual embeddings capture that the static ones do not?",
        "",
        "**Context: a static vector is the same in every sentence, a contextual one moves with the sentence.** "
        + caveat,
        "",
        f"- Adjusted self-similarity by layer (embedding output first): {_list(q6['adjusted_self_similarity'])} "
        f"(anisotropy baseline: {_list(q6['anisotropy'])}; {q6['words_scored']} words scored).",
        f"- WordSim-353 by layer (embedding output first): {_list(q6['wordsim_by_layer'])}.",
    ]
    if q6["sense"]:
        lines.append(f"- '{q6['sense']['word']}' in two senses, cosine between occurrences by layer: same sense "
                     f"{_list(q6['sense']['same_sense'])}, different sense {_list(q6['sense']['other_sense'])}.")
    lines += [fig("full_geometry", "geometry by layer"), fig("full_sense", "one word in several sentences")]
    if "q7" in a:
        q7 = a["q7"]
        lines += [
            "## 7. Is self-attention a graph?",
            "",
            "**Yes: each head's attention weights are a weighted directed graph over the tokens** (every row sums to "
            f"one). For \"{q7['sentence']}\" ({q7['nodes']} nodes), layer {q7['layer']} averaged over heads has "
            f"{q7['edges']} edges of weight at least {q7['threshold']} between different words.",
            "",
            "- Strongest edges: " + ", ".join(f"{src} -> {dst} ({w})" for src, dst, w in q7["strongest"]) + ".",
            "- The whole graph, every layer and head, is in `probes/full/attention_graph.json`.",
            fig("attention_graph", "attention as a graph"),
        ]
    return lines


def pairing_lines(results: dict) -> list[str]:
    init = results["answers"]["pairing"]["initialisation"]
    return ["## How the runs are paired", "",
            "Same seed: the Trainer's data order and the collator's per-example masks are functions of the seed only. "
            "Initial weights, share of the full model's parameters that are identical at the same seed: "
            + ", ".join(f"{name} {v['identical_share']}" for name, v in init.items())
            + " (each module's initial weights are drawn from a generator seeded by the seed and the module's name, "
            "so variants share every module they have in common by name and shape; the rest differs by design).", ""]


def render_findings(results: dict, figures: dict) -> str:
    fig = lambda name, caption: f"\n![{caption}]({figures[name]})\n" if name in figures else ""  # noqa: E731
    lines = [
        "# Findings: what self-attention training does, measured",
        "",
        f"Produced by `{results['command']}` on {results['machine']} ({results['date']}), on the Wikipedia sample "
        f"bundled with gensim: {results['answers']['scale']['training_runs']} training runs of "
        f"{results['answers']['scale']['training_minutes']} minutes in all (each run's own clock), and "
        f"{results['minutes']} minutes for this call (which reuses any model already trained in its output folder"
        + (": " + ", ".join(f"{name} {m}" for name, m in results["phase_minutes"].items())
           if results.get("phase_minutes") else "")
        + "). All numbers below are in `results.json`.",
        "",
        *scale_paragraph(results), *loss_section(results, fig), *q1_section(results, fig), *q2_section(results, fig),
        *q3_section(results), *probe_sections(results, fig), *pairing_lines(results),
    ]
    return "\n".join(lines) + "\n"
