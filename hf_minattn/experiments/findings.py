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
        f"({scale['steps']} steps of {settings['batch_size']} x {settings['max_seq_length']}, {scale['precision']}), "
        f"{scale['seeds']} paired seeds.** Each model is scored on the whole validation set masked {scale['mask_draws']} times "
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
    over_seeds = q1.get("spearman_over_seeds")
    rho = over_seeds or rows["spearman_drift_vs_count"]
    how = (f"mean over {over_seeds['n']} seeds with its t-interval" if over_seeds else
           "bootstrap over tokens, first seed")
    trend = {1: "rows of frequent tokens move further", 0: "row movement is not told apart from frequency",
             -1: "rows of rare tokens move further"}[st.sign(rho)]
    bins = "; ".join(f"{b['min_count']}-{b['max_count'] if b['max_count'] is not None else 'more'} occurrences: "
                     f"{b['rows']} rows, median {b['median_drift']}" for b in rows["bins"] if b["rows"])
    never = rows.get("never_input")
    lines = [
        "## 1. Are the input embedding vectors updated during training, or only W_Q, W_K, W_V?",
        "",
        f"**{'Yes' if q1['embeddings_updated'] else 'No'}: backpropagation updates the input embeddings like every "
        f"other weight, row by row: {trend}** (Spearman correlation between a row's distance from its initial value "
        f"and its token's count in the training split: {ci(rho)}, {how}; the distances by count below are the first "
        "seed's).",
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
        *loss_allocation_lines(q1.get("loss_allocation"), fig),
    ]
    return lines


GROUP_NAMES = {"word_embeddings": "word embeddings", "position_embeddings": "position embeddings",
               "W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V", "W_O": "W_O", "feed_forward": "feed-forward",
               "layer_norms": "LayerNorms", "head_transform": "the MLM head's transform",
               "output_weights": "the output layer", "output_bias": "the output bias (token frequencies alone)",
               "other": "other parameters"}


def loss_allocation_lines(lca: dict | None, fig) -> list[str]:
    """Q1 in nats: how much of the fall of the loss each group's updates account for (Loss Change Allocation)."""
    if not lca:
        return []
    lowered = lca["lowered"]
    embeddings = lowered.get("word_embeddings")
    verdict = {"higher": "the word embeddings' own updates lowered the loss",
               "lower": "the word embeddings' own updates raised the loss",
               "equivalent": "the word embeddings' own updates did not change the loss (within the margin)",
               "unresolved": "whether the word embeddings' own updates lowered the loss is not resolved at this scale"
               }[st.verdict(embeddings)] if embeddings else "the word embeddings were not tracked"
    if lca["seeds"] < st.MIN_SEEDS_FOR_INTERVALS:
        verdict = f"{lca['seeds']} seeds give no interval ({st.MIN_SEEDS_FOR_INTERVALS} needed)"
    parts = "; ".join(f"{GROUP_NAMES.get(g, g)} {ci(d)}" + (f" ({lca['share_percent'][g]['estimate']}%)"
                                                          if g in lca.get("share_percent", {}) else "")
                      for g, d in sorted(lowered.items(), key=lambda item: -item[1]["estimate"]))
    lines = ["", f"- **In nats: {verdict}** (Loss Change Allocation of Lan, Liu, Zhou & Yosinski: each interval of "
             f"{lca['every']} optimizer steps, the change of the loss on a fixed batch of validation sequences is "
             "shared out over the parameters as the path integral of gradient x update, by Simpson's rule). The loss "
             f"fell by {ci(lca['fall'])} nats; the updates of each group lowered it by (mean over seeds, share of the "
             f"fall): {parts}"
             + (f"; attention (W_Q, W_K, W_V, W_O) together {ci(lca['attention_lowered'])}"
                + (f" ({lca['share_percent']['attention']['estimate']}%)" if "attention" in lca["share_percent"] else "")
                if lca.get("attention_lowered") else "")
             + ". Negative: that group's updates raised it. The allocations add up to the observed change "
             f"within {lca['relative_error_max']} of it (largest relative error over seeds)."]
    order = lca.get("bias_minus_attention_half_step")
    if order:
        half = lca["half_step"]
        lines.append(f"- Order: the output bias reached half of its part at step {ci(half.get('output_bias'))}, "
                     f"attention (W_Q, W_K, W_V, W_O) at step {ci(half.get('attention'))}: "
                     + (compared(order, "attention first, the output bias later", "at the same time",
                                 "the output bias first (token frequencies), context later")
                        if lca["seeds"] >= st.MIN_SEEDS_FOR_INTERVALS else "no verdict from fewer than 3 seeds")
                     + f" (difference {ci(order)} steps).")
    return lines + [fig("loss_allocation", "cumulative loss change allocation per group (mean over seeds)")]


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


def q3_section(results: dict, fig=lambda *args: "") -> list[str]:
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
        *circuits_lines(results["answers"].get("q3_circuits")),
        fig("circuits", "layer 0's query-key form against the hypotheses") if results["answers"].get("q3_circuits") else "",
        "",
    ]


def circuits_lines(c: dict | None) -> list[str]:
    """Q3 measured on the weights: does layer 0's QK form of the trained model follow the embedding similarity that
    W_Q = W_K = I would give, or something else? Chosen by the interval over seeds of the head-mean correlation."""
    if not c:
        return []
    full = c["full"]
    identity, initial, cooc = full["identity"], full["initial"], full["cooccurrence"]
    if identity is None or identity["n"] < 3:
        verdict = "Layer 0's circuits were measured on fewer than 3 seeds: no interval"
    elif identity["low"] > 0.5:
        verdict = "The trained W_Q/W_K of layer 0 reproduce the embedding similarity: their query-key form ranks token " \
                  "pairs much as LN(E) LN(E)^T (what W_Q = W_K = I gives) does"
    elif identity["low"] > 0:
        verdict = "The trained W_Q/W_K of layer 0 partly follow the embedding similarity (W_Q = W_K = I's form), " \
                  "but far from reproduce it"
    elif identity["high"] < 0:
        verdict = "The trained W_Q/W_K of layer 0 rank token pairs against the embedding similarity"
    else:
        verdict = "The trained W_Q/W_K of layer 0 compute something other than the embedding similarity (the " \
                  "correlation's interval includes 0)"
    lines = ["", f"- **{verdict}** (Spearman correlation of each head's query-key form over {c['pairs']} pairs of the "
             f"{c['tokens']} most frequent tokens with LN(E) LN(E)^T, mean over the {c['heads']} heads, over seeds: {ci(identity)}; "
             f"with the co-occurrence PPMI of the same tokens: {ci(cooc)}; with the form the same weights had at "
             f"initialisation: {ci(initial)}; OV copying score, 1 = copies, -1 = suppresses: {ci(full['ov_copying'])})."]
    if initial and identity and identity["n"] >= 3 and initial["low"] > max(identity["high"], 0.5):
        lines[-1] += " The form is still closer to its random initial one than to the embedding similarity."
    start = c.get("qkv_from_identity")
    if start and c.get("full_minus_from_identity"):
        lines.append(f"- Started at W = I, the trained projections' form correlates {ci(start['identity'])} with the "
                     "embedding similarity; the normally initialised model's minus that: "
                     f"{ci(c['full_minus_from_identity'])} ("
                     + (compared(c["full_minus_from_identity"], "closer to the embedding similarity",
                                 "as close", "further from it", "not told apart")
                        if identity and identity["n"] >= st.MIN_SEEDS_FOR_INTERVALS else "no verdict from fewer than 3 seeds")
                     + "). With W = I itself the correlation is "
                     + f"{ci((c.get('identity_qkv') or {}).get('identity'))} by construction (a check of the probe).")
    return lines


def _named(comparisons: dict | None, name: str) -> dict | None:
    return (comparisons or {}).get(name)


def _score(scores: dict | None, key: str, system: str) -> str:
    return ci(((scores or {}).get(key) or {}).get(system))


def q4_section(q4: dict, fig) -> list[str]:
    layers = len(q4["js_within_layer_trained"])
    diff = q4["js_trained_minus_init"]
    apart = [l for l in range(layers) if st.verdict(diff[f"layer_{l}"]) == "higher"]
    lines = [
        "## 4. Where do the weight matrices come from, and do different heads end up doing different things?",
        "",
        "**From a random initialisation, then gradient descent. "
        + (f"Training makes the heads of {len(apart)} of {layers} layers attend more differently from each other than "
           "at initialisation" if apart else
           "Training does not make the heads of any layer measurably more different from each other than at "
           "initialisation")
        + f"** (mean Jensen-Shannon divergence between heads of one layer, trained - untrained, paired over "
        "seeds: " + "; ".join(f"layer {l} {ci(diff[f'layer_{l}'])}" for l in range(layers)) + ").",
        "",
        "- Within-layer divergence, trained: " + "; ".join(ci(x) for x in q4["js_within_layer_trained"])
        + "; at initialisation: " + "; ".join(ci(x) for x in q4["js_within_layer_init"]) + ".",
        f"- Mean attention entropy: {ci(q4['entropy_trained'])} trained, {ci(q4['entropy_init'])} at initialisation "
        f"(uniform attention: {q4['uniform_entropy']}).",
        f"- Roles as Clark et al. report them: a head has a role when it gives at least {q4['role_min_mass']} of "
        "its attention (mean over queries) to one kind of target; counts per seed out of "
        f"{q4['heads']} heads: " + "; ".join(f"{role} {_list(counts)}" for role, counts in q4["role_counts"].items())
        + ".",
    ]
    if q4.get("costliest_head"):
        lines.append(
            f"- The head whose removal costs most (masked-LM loss increase when its output is zeroed, at the training "
            f"mask rate {q4['ablation_mlm_probability']}), per seed: "
            + "; ".join(f"seed {c['seed']} {c['head']} +{c['increase']} nats (+-{c['interval95']} over "
                        f"{c['masked_tokens']} masked tokens), role {c['role']}"
                        + (f" (mass {c['mass']})" if c["mass"] is not None else "") for c in q4["costliest_head"])
            + f"; mean over seeds {ci(q4['costliest_increase'])}. Summed cost of a layer's heads: "
            + "; ".join(f"layer {l} {ci(x)}" for l, x in enumerate(q4["ablation_by_layer"])) + ".")
    div = q4.get("divergence")
    if div:
        closer = [l for l in range(layers) if st.verdict(div["within_minus_matched"][f"layer_{l}"]) == "higher"]
        lines.append(
            "- Heads across seeds: each head matched to the most similar head of the same layer in another seed's "
            f"model (Hungarian matching on their Jensen-Shannon divergence, {div['seed_pairs']} pairs of seeds, which "
            "share seeds, so the intervals are somewhat too narrow). "
            + (f"In {len(closer)} of {layers} layers a head is closer to its match in another run than to the other "
               "heads of its own layer: those heads' behaviours are reproduced by training, not accidents of the start"
               if closer else "In no layer is a head measurably closer to its match in another run than to the other "
                              "heads of its own layer")
            + " (within-layer - matched, per layer: "
            + "; ".join(f"layer {l} {ci(div['within_minus_matched'][f'layer_{l}'])}" for l in range(layers)) + ").")
    lines.append(fig("head_diversity", "head diversity"))
    return lines + head_dynamics_lines(q4.get("over_training"), fig)


def head_dynamics_lines(d: dict | None, fig) -> list[str]:
    """Q4 over training: do the heads specialise before, as or after the loss leaves the unigram plateau? Chosen by
    the paired difference of the two steps over seeds (margin: one evaluation interval)."""
    if not d:
        return []
    order, m = d["specialisation_minus_exit"], d["measures"]
    if d["paired_seeds"] < d["min_seeds"]:
        verdict = (f"When heads specialise, relative to the loss leaving the unigram plateau, is not resolved at this "
                   f"scale: {d['paired_seeds']} of {d['seeds']} seeds have both steps (the loss left the plateau in "
                   f"{d['seeds_with_exit']}, the heads' divergence rose in {d['seeds_specialised']}) and an interval "
                   f"needs {d['min_seeds']}")
    else:
        verdict = compared(order, "Heads specialise after the loss leaves the unigram plateau",
                           "Heads specialise as the loss leaves the unigram plateau",
                           "Heads specialise before the loss leaves the unigram plateau",
                           "Whether heads specialise before, as or after the loss leaves the unigram plateau is not "
                           "resolved at this scale")
    first, last = d["steps"][0], d["steps"][-1]
    span = lambda name: f"{ci(m[name][0])} to {ci(m[name][-1])}"  # noqa: E731
    return [
        f"- **{verdict}** (per seed, the loss leaves the plateau at the first evaluation whose gain over the unigram "
        f"floor exceeds {d['plateau_gain']} nat, and the heads specialise at the first saved step where the mean "
        "Jensen-Shannon divergence between the heads of a layer has risen half of the way from its value at step "
        f"{first} to its value at step {last}. Plateau exit: step {ci(d['plateau_exit'])}; specialisation: step "
        f"{ci(d['specialisation'])}; specialisation - exit, paired over {d['paired_seeds']} seeds: {ci(order)} steps, "
        f"equivalence margin ±{d['margin']} steps, one evaluation interval.)",
        f"- The heads from step {first} to step {last} (mean over {d['seeds']} seeds; every saved state measured on the "
        f"same {d['sentences']} sentences): heads with a role (mass >= {d['role_min_mass']}) {span('heads_with_role')} "
        f"of {d['heads']}; mean over heads of the largest role mass {span('max_role_mass')}, over what uniform "
        f"attention gives it {span('max_role_ratio')}; within-layer divergence {span('within_layer_js')}; loss increase "
        f"when the costliest head is zeroed {span('ablation_max')} nats, mean over heads {span('ablation_mean')}; "
        f"effective rank of W_Q,h^T W_K,h (at most {d['head_dim']}) {span('qk_effective_rank')}.",
        fig("head_dynamics", "the heads during training, beside the gain over the unigram floor"),
    ]


def q5_section(q5: dict, results: dict, fig) -> list[str]:
    last = f"layer_{results['config']['num_hidden_layers']}"
    key, comparisons, scores = q5["key"], q5["comparisons"] or {}, q5["word_pairs"] or {}
    pairs = (q5["pairs"] or {}).get("wordsim353", {})
    w2v_static, w2v_last = _named(comparisons, "static_vs_word2vec"), _named(comparisons, "last_vs_word2vec")
    untrained = _named(comparisons, "last_vs_untrained")
    versus = {"higher": "above", "lower": "below", "equivalent": "equivalent to", "unresolved": "not told apart from"}
    lines = [
        "## 5. Does training put words that occur together, or that are related, close together?",
        "",
        f"**Measured against human similarity judgements (WordSim-353, {pairs.get('kept')} of {pairs.get('total')} "
        "pairs, both words in every vocabulary), the full model's last-layer vectors are "
        f"{versus[st.verdict(untrained)]} the untrained model's and {versus[st.verdict(w2v_last)]} word2vec's** "
        f"(Spearman difference on the same pairs: {ci(untrained)} against the untrained model, {ci(w2v_last)} against "
        f"word2vec; hierarchical bootstrap over {results['answers']['scale']['seeds']} seeds and the pairs; cosines "
        "after All-but-the-Top wherever a space's anisotropy baseline is above 0.1; a correlation on this many pairs "
        f"has a standard error near {q5['standard_error']}, so differences below about twice that are beyond this "
        f"measurement; equivalence margin ±{q5['margin']}).",
        "",
        f"- Spearman with WordSim-353: full static {_score(scores, key, 'full/static')}, full last layer "
        f"{_score(scores, key, 'full/' + last)}, untrained static {_score(scores, key, 'untrained/static')}, untrained "
        f"last layer {_score(scores, key, 'untrained/' + last)}, word2vec (one per seed, settings chosen on SimLex-999 "
        f"and the analogies) {_score(scores, key, 'word2vec')}, random vectors {_score(scores, key, 'random')}"
        + (f", {q5['reference']} (pretrained reference, last layer) "
           f"{_score(scores, key, 'minilm/' + _reference_last(scores, key))}" if q5.get("reference") else "") + ".",
        f"- Static vectors against word2vec: {versus[st.verdict(w2v_static)]} ({ci(w2v_static)}); against random "
        f"vectors: {versus[st.verdict(_named(comparisons, 'static_vs_random'))]} "
        f"({ci(_named(comparisons, 'static_vs_random'))}).",
    ]
    if _named(comparisons, "last_vs_reference"):
        lines.append(f"- Last layer against {q5['reference']}: {versus[st.verdict(comparisons['last_vs_reference'])]} "
                     f"({ci(comparisons['last_vs_reference'])}); {q5['reference']} against word2vec: "
                     f"{versus[st.verdict(comparisons['reference_vs_word2vec'])]} "
                     f"({ci(comparisons['reference_vs_word2vec'])}).")
    sub = [(name, scores.get(f"wordsim353_{name}_read") or {}) for name in ("similarity", "relatedness")]
    if all(s for _, s in sub):
        lines.append("- WordSim-353's similarity / relatedness subsets (Agirre et al.; "
                     f"{q5['pairs']['wordsim353_similarity']['kept']} / {q5['pairs']['wordsim353_relatedness']['kept']} "
                     f"pairs): full last layer {ci(sub[0][1].get('full/' + last))} / {ci(sub[1][1].get('full/' + last))}, "
                     f"word2vec {ci(sub[0][1].get('word2vec'))} / {ci(sub[1][1].get('word2vec'))}; SimLex-999: full "
                     f"last layer {_score(scores, 'simlex999_read', 'full/' + last)}, word2vec "
                     f"{_score(scores, 'simlex999_read', 'word2vec')}.")
    related = q5["related"]
    for system, label in (("static", "static vectors"), (last, "last layer"), ("word2vec", "word2vec")):
        r = related.get(system)
        if r and r.get("king/queen - king/dog"):
            d = r["king/queen - king/dog"]
            lines.append(f"- king/queen against king/dog, {label} ({'after All-but-the-Top' if r['abtt'] else 'raw'}; "
                         f"anisotropy baseline {ci(r['anisotropy'])}): cosine {ci(r['king/queen'])} against "
                         f"{ci(r['king/dog'])}, difference {ci(d)}: "
                         + compared(d, "queen is closer", "no closer", "dog is closer", "not told apart") + ".")
    cooc = q5["cooccurrence"]
    if cooc:
        p = q5.get("cooccurrence_pairs") or {}
        lines.append(f"- Words that occur together (PPMI within {p.get('window')} words, over the "
                     f"{p.get('positive_ppmi_pairs')} co-occurring pairs of the {p.get('top_words')} most frequent "
                     "words): Spearman between PPMI and cosine, mean over seeds: "
                     + "; ".join(f"{name} {ci(v['spearman'])}" for name, v in cooc.items())
                     + " (word2vec, trained on co-occurrence, is the positive control).")
    lines += [fig("related_words", "related word pairs"), fig("word_similarity", "word similarity by layer")]
    return lines


def _reference_last(scores, key):
    layers = [s.split("/")[1] for s in (scores.get(key) or {}) if s.startswith("minilm/layer_")]
    return layers[-1] if layers else "static"


def q6_section(q6: dict, fig) -> list[str]:
    senses = q6.get("senses")
    lines = ["## 6. What do the contextual embeddings capture that the static ones do not?", ""]
    if senses:
        c = senses["comparisons"]
        verdict = st.verdict(c["vs_chance"])
        beats_controls = st.verdict(c["vs_position"]) == "higher" and st.verdict(c["vs_untrained"]) == "higher"
        lines.append(
            "**" + {"higher": "Senses: the last layer tells a homonym's senses apart above chance"
                              + (", above the untrained model and above the control that sees only position and "
                                 "sentence length" if beats_controls else
                                 ", but not above both the untrained model and the control that sees only position "
                                 "and sentence length: that it comes from meaning is not shown at this scale"),
                    "lower": "Senses: the last layer classifies a homonym's senses below chance",
                    "equivalent": "Senses: the last layer is at chance on a homonym's senses (not at this scale)",
                    "unresolved": "Senses: not resolved at this scale whether the last layer tells a homonym's senses "
                                  "apart"}[verdict]
            + f"** (leave-one-out nearest-centroid accuracy on {senses['words']} homonyms, {senses['occurrences']} "
            f"labelled occurrences, vectors after All-but-the-Top: {ci(senses['accuracy'])} over seeds, raw "
            f"{ci(senses['raw_accuracy'])}; chance {senses['chance']}; minus chance {ci(c['vs_chance'])}).")
        lines += ["",
                  f"- Against the untrained model ({ci(senses['untrained_accuracy'])}): "
                  + compared(c["vs_untrained"], "better", "the same", "worse", "not told apart")
                  + f" ({ci(c['vs_untrained'])}); against the stronger control that sees no vectors (the word's place in "
                  f"its sentence, with the sentence's length: {senses['position_accuracy']}): "
                  + compared(c["vs_position"], "better", "the same", "worse", "not told apart")
                  + f" ({ci(c['vs_position'])}).",
                  "- By layer (embedding output first): " + "; ".join(ci(x) for x in senses["by_layer"]) + "."]
        if senses.get("reference"):
            r = senses["reference"]
            lines.append(f"- The pretrained reference's last layer: {r['accuracy']} [{r['interval']['low']}, "
                         f"{r['interval']['high']}] (bootstrap over homonyms and contexts).")
    else:
        lines.append("**Senses were not measured in this run.**")
    lines += [
        "",
        "- Adjusted self-similarity by layer (Ethayarajh; embedding output first; lower = more "
        "context-specific): " + "; ".join(ci(x) for x in q6["adjusted_self_similarity"]) + "; untrained: "
        + "; ".join(ci(x) for x in q6["adjusted_self_similarity_init"])
        + (f"; pretrained reference: {_list(q6['reference_adjusted_self_similarity'])}"
           if q6.get("reference_adjusted_self_similarity") else "")
        + f" ({q6['words_scored']} words scored).",
    ]
    comparisons = q6.get("comparisons") or {}
    if comparisons.get("last_vs_static"):
        lines.append("- Word similarity, last layer against static vectors (WordSim-353, same pairs): "
                     + compared(comparisons["last_vs_static"], "higher", "equivalent", "lower", "not told apart")
                     + f" ({ci(comparisons['last_vs_static'])}); the best contextual layer (layer {q6['best_layer']}, "
                     f"chosen on these pairs, so optimistic) against static: "
                     f"{ci(comparisons.get('best_layer_vs_static'))}.")
    lines += [*logit_lens_lines(q6.get("logit_lens"), fig), fig("full_geometry", "geometry by layer (first seed, for illustration)")]
    return lines


def logit_lens_lines(lens: dict | None, fig) -> list[str]:
    """Where along the depth the prediction forms (logit lens: each layer decoded through the final norm and MLM head)."""
    if not lens:
        return []
    first, last = lens["first_layer_above_floor"], len(lens["gain"]) - 1
    if lens["seeds"] < 3:
        verdict = f"Where the prediction forms: {lens['seeds']} seeds give no interval (3 needed)"
    elif first is None:
        verdict = "Where the prediction forms: no layer, decoded by the MLM head, predicts masked tokens better than " \
                  "token frequencies alone beyond its 95% interval (not at this scale)"
    elif first == last:
        verdict = (f"Where the prediction forms: only at the last layer (layer {last}); decoded by the same head, no "
                   "earlier layer beats token frequencies alone beyond its interval")
    else:
        verdict = (f"Where the prediction forms: from layer {first} of {last} on, the layers decoded by the MLM head "
                   "beat token frequencies alone beyond their 95% intervals")
    return ["", f"- **{verdict}** (logit lens: each layer's masked-token loss through the final norm and MLM head, "
            f"gain over the unigram floor of the same {lens['masked_tokens']} tokens, embedding output first: "
            + "; ".join(ci(g) for g in lens["gain"]) + f"; untrained: " + "; ".join(ci(g) for g in lens["gain_untrained"])
            + f"). The last block adds {ci(lens['last_block'])} nats ("
            + (compared(lens["last_block"], "more gain", "no difference", "less gain", "not resolved")
               if lens["seeds"] >= st.MIN_SEEDS_FOR_INTERVALS else "no verdict from fewer than 3 seeds")
            + "). A head trained on the last layer only reads the others: a layer it cannot read may still hold the "
            "information.", fig("logit_lens", "gain over the unigram floor of every layer, decoded by the MLM head")]


def q7_section(q7: dict, fig) -> list[str]:
    return [
        "## 7. Is self-attention a graph?",
        "",
        "**Each head's attention weights are a weighted directed graph over the tokens (every row sums to one), but a "
        "layer's edges are not word-to-word relations: residual connections carry each word's own vector through, and "
        "each layer mixes what earlier layers mixed.** Attention rollout (Abnar & Zuidema) follows both: it "
        "multiplies the layers' head-averaged attention, each with the residual added (0.5 A + 0.5 I), and gives the "
        "share of each input word in a word's representation. Norm-weighted attention (Kobayashi et al.) scales "
        "each weight by the size of the vector it moves; both are drawn beside the raw graph in the probe reports.",
        "",
        f"- For \"{q7['sentence']}\", after layer {q7['layer']}: a word's share of its own input, mean over seeds "
        f"{ci(q7['self_share'])}; "
        + ("the residual path keeps most of each word its own." if (q7["self_share"] or {}).get("low", 0) > 0.5 else
           "most of each word comes from the other words." if (q7["self_share"] or {}).get("high", 1) < 0.5 else
           "whether most of a word stays its own is not resolved.")
        + " Strongest rollout edges between different words (mean over seeds): "
        + ", ".join(f"{e} ({ci(w)})" for e, w in q7["strongest"]) + ".",
        "- Each seed's graphs (raw, norm-weighted, rollout, flow) are in `probes/full/seed<k>/` (attention_graph.json "
        "and report.html; probes.json in the run's own output folder).",
        fig("attention_graph", "attention as a graph"),
    ]


def probe_sections(results: dict, fig) -> list[str]:
    a = results["answers"]
    if "q4" not in a:
        return []
    lines = [*q4_section(a["q4"], fig), *q5_section(a["q5"], results, fig), *q6_section(a["q6"], fig)]
    if "q7" in a:
        lines += q7_section(a["q7"], fig)
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
        f"Produced by `{results['command']}` on {results['machine']} ({results['date']}), on "
        f"{results.get('corpus', 'the Wikipedia sample bundled with gensim')}. "
        f"{results['answers']['scale']['training_runs']} training runs of "
        f"{results['answers']['scale']['training_minutes']} minutes in all (each run's own clock), and "
        f"{results['minutes']} minutes for this call (which reuses any model already trained in its output folder"
        + (": " + ", ".join(f"{name} {m}" for name, m in results["phase_minutes"].items())
           if results.get("phase_minutes") else "")
        + "). All numbers below are in `results.json`.",
        "",
        *scale_paragraph(results), *loss_section(results, fig), *q1_section(results, fig), *q2_section(results, fig),
        *q3_section(results, fig), *probe_sections(results, fig), *pairing_lines(results),
    ]
    return "\n".join(lines) + "\n"
