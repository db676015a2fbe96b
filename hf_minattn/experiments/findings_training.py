"""FINDINGS.md's sections on the trained variants: the loss table against the floors, and questions 1-3 (embedding
updates, frozen embeddings, W_Q/W_K and identity projections). Each section opens with its answer and a table of
its comparisons; the details follow as short bullets, long series collapsed."""

from . import statistics as st
from .findings_answers import AT_SCALE, opening
from .findings_format import ci, compared, comparisons_table, details, df_cell, num, p_cell, pct, seed_count, table
from .learning_rates import variant_learning_rate
from .training import VARIANTS


def below_floor(full_minus_floor: dict, floor: float) -> str:
    """The sentence for a full model below the unigram floor: it uses context only if its gain passes, interval and
    all, what copying the share of masked tokens the masking leaves unchanged (model_card.KEPT) could give, kept x
    the floor (docs/training.md)."""
    from hf_minattn.model_card import KEPT

    copying = f"copying the {KEPT:.0%} of masked tokens the masking leaves unchanged could give ({num(KEPT * floor)} nats)"
    if -full_minus_floor["high"] > KEPT * floor:
        return f"is below the unigram floor by more than {copying}: it uses context"
    return f"is below the unigram floor, but not surely by more than {copying}: that it uses context is not shown"


def loss_section(results: dict, fig) -> list[str]:
    losses, floors = results["answers"]["losses"], results["answers"]["floors"]
    # each variant's own learning rate where the preset has them (the learning-rate study's choice), else the preset's
    rows = [[v.name, v.description, num(variant_learning_rate(results["settings"], v.name)) if v.trained else "-",
             ci(r["loss"]), ci(r["below_unigram"]), p_cell(r["below_unigram"]),
             ci(r["share_of_gain"]) if r["share_of_gain"] else "-", ci(r["accuracy"])]
            for v in VARIANTS if (r := losses.get(v.name))]
    lines = table(["variant", "what it is", "learning rate", "validation loss (nats)", "unigram loss - loss", "p",
                   "share of the full model's gain over the unigram floor (%)", "masked-token accuracy"], rows)
    lines += [
        "",
        "The full model "
        + compared(floors["full_vs_unigram"], "is above the unigram floor: it has not yet learned even the token "
                   "frequencies", "is at the unigram floor: at this scale it has learned no more than token frequencies",
                   below_floor(floors["full_vs_unigram"], results["unigram_loss"]),
                   "is not told apart from the unigram floor: at this scale it has learned little beyond token "
                   "frequencies, and the comparisons below are between models near the floor")
        + ". " + untrained_floor_sentence(floors["untrained_vs_unigram"]),
        *comparisons_table([("full - unigram floor", floors["full_vs_unigram"]),
                            ("full - untrained", floors.get("full_vs_untrained")),
                            ("untrained - unigram floor", floors["untrained_vs_unigram"])], "loss, nats"),
        fig("loss_curves", "validation loss during training, with the unigram floor"),
    ]
    return lines


def untrained_floor_sentence(untrained_vs_unigram: dict) -> str:
    """Where the untrained model stands against the unigram floor, by the tested comparison, and so why shares of
    loss reduction are measured from the floor."""
    where = compared(untrained_vs_unigram, "is above the floor", "is at the floor", "is below the floor",
                     "is not told apart from the floor")
    if st.verdict(untrained_vs_unigram) == "higher":
        return (f"The untrained model {where}, which is why shares of loss reduction are measured from the unigram "
                "floor, not from the untrained loss.")
    return (f"The untrained model {where}; shares of loss reduction are measured from the unigram floor all the same, "
            "the loss that token frequencies alone reach.")


def grad_norm_kind(q1: dict) -> str:
    """What the gradient norms of drift.json are: ||dL/dW|| where the run says they were read before clipping
    (`grad_norm_before_clipping`); otherwise (runs before that field) they were read after the Trainer clipped the
    gradients."""
    if q1.get("grad_norm_before_clipping"):
        return "||dL/dW|| (before clipping)"
    return ("after clipping to max_grad_norm (read after the Trainer clipped the gradients of each step, so not "
            "||dL/dW|| wherever a step was clipped)")


def q1_section(results: dict, fig) -> list[str]:
    q1 = results["answers"]["q1"]
    d, rows, g = q1["drift"], q1["rows"], q1["grad_norm"]
    over_seeds = q1.get("spearman_over_seeds")
    how = f"mean over {over_seeds['n']} seeds" if over_seeds else "first seed, bootstrap over tokens"
    bins = [[f"{b['min_count']}-{b['max_count'] if b['max_count'] is not None else 'more'}", str(b["rows"]),
             num(b["median_drift"])] for b in rows["bins"] if b["rows"]]
    lines = [
        *opening(results, 1),
        *comparisons_table([(f"Spearman: a row's distance from its start vs its token's training count ({how})",
                             over_seeds or rows["spearman_drift_vs_count"])]),
        "",
        f"Distance ||e_final - e_init|| of a row by its token's training count (first seed; median initial row norm "
        f"{num(rows['initial_row_norm'])}):",
        *table(["occurrences", "rows", "median distance"], bins),
        "",
        f"After {q1['steps']} steps, each matrix's distance from its start relative to its size, "
        f"||W - W_init|| / ||W_init|| (mean over layers), and its mean gradient norm {grad_norm_kind(q1)}:",
        *table(["matrix", "relative distance", "mean gradient norm" + ("" if q1.get("grad_norm_before_clipping")
                                                                       else " after clipping")],
               [[name, num(d.get(name)), num(g.get(name))] for name in ("word_embeddings", "W_Q", "W_K", "W_V", "W_O")
                if name in d]),
        "",
        *unmoved_rows_lines(q1),
        f"- Control: the frozen variant's word embeddings moved {num(q1['frozen_word_embeddings_drift'])} "
        f"({q1['rows_frozen_moved']} rows moved). The output layer is untied, so the embedding updates come only from "
        "their role as inputs.",
        fig("row_drift", "per-row drift against training frequency"), fig("drift", "distance from initialisation"),
        *loss_allocation_lines(q1.get("loss_allocation"), fig),
    ]
    return lines


def unmoved_rows_lines(q1: dict) -> list[str]:
    """Rows that received no gradient must not move: the check, and why absent tokens move anyway."""
    rows, never = q1["rows"], q1["rows"].get("never_input")
    lines = []
    if never is not None:
        lines.append("- Rows of tokens that were never an input in training (not in the text and never drawn as a "
                     "random replacement by the masking): "
                     + ("none here: every id was an input in some example's masks in the epochs training touched, so "
                        "this check had no rows." if never["rows"] == 0 else
                        f"none of the {never['rows']} moved, as it should be (checked)." if never["moved"] == 0 else
                        f"{never['moved']} of {never['rows']} moved (up to {num(never['max_drift'])}), though they "
                        f"never received a gradient: weight decay ({q1['weight_decay']}) or the optimiser moves them, "
                        "so the drift of rare rows is not only learning."))
    absent = rows["not_in_text"]
    why = (" anyway, because the masking replaces a tenth of the masked tokens by random ids, which makes them inputs"
           if absent["moved"] else "")
    return lines + [f"- Tokens absent from the training text: {absent['moved']} of {absent['rows']} rows moved{why}."]


GROUP_NAMES = {"word_embeddings": "word embeddings", "position_embeddings": "position embeddings",
               "W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V", "W_O": "W_O", "feed_forward": "feed-forward",
               "layer_norms": "LayerNorms", "head_transform": "the MLM head's transform",
               "output_weights": "the output layer", "output_bias": "the output bias (token frequencies alone)",
               "other": "other parameters", "attention": "attention (W_Q, W_K, W_V, W_O) together, not tested"}


def loss_allocation_lines(lca: dict | None, fig) -> list[str]:
    """Q1 in nats: how much of the fall of the loss each group's updates account for (Loss Change Allocation)."""
    if not lca:
        return []
    embeddings = lca["lowered"].get("word_embeddings")
    verdict = {"higher": "the word embeddings' own updates lowered the loss",
               "lower": "the word embeddings' own updates raised the loss",
               "equivalent": "the word embeddings' own updates did not change the loss (within the margin)",
               "unresolved": "whether the word embeddings' own updates lowered the loss is not resolved at this scale"
               }[st.verdict(embeddings)] if embeddings else "the word embeddings were not tracked"
    if lca["seeds"] < st.MIN_SEEDS_FOR_INTERVALS:
        verdict = f"no verdict from {seed_count(lca['seeds'])} ({st.MIN_SEEDS_FOR_INTERVALS} needed)"
    groups = sorted(lca["lowered"].items(), key=lambda item: -item[1]["estimate"])
    if lca.get("attention_lowered"):
        groups.append(("attention", lca["attention_lowered"]))
    shares = lca.get("share_percent", {})
    lines = ["", f"**In nats: {verdict}** (Loss Change Allocation of Lan, Liu, Zhou & Yosinski: each interval of "
             f"{lca['every']} optimizer steps, the change of the loss on a fixed batch of validation sequences is shared "
             "out over the parameters as the path integral of gradient x update, by Simpson's rule"
             + (f", integrated along the straight line across the interval's {lca['every']} steps, not step by step "
                "as Lan et al. do: the totals are the same, the split between matrices is not (it can change "
                "sign for small groups)" if lca["every"] > 1 else "") + "). The loss fell by "
             f"{ci(lca['fall'])} nats; the allocations add up to the observed change within "
             f"{pct(100 * lca['relative_error_max'])} of it (the largest relative error over seeds). How much each "
             "group's updates lowered it (mean over seeds; negative: they raised it):",
             *table(["group", "lowered the loss by (nats)", "95% interval", "df", "p", "share of the fall", "verdict"],
                    [[GROUP_NAMES.get(name, name), num(x["estimate"]), f"[{num(x['low'])}, {num(x['high'])}]",
                      df_cell(x), p_cell(x), pct((shares.get(name) or {}).get("estimate")),
                      {"higher": "lowered it", "lower": "raised it", "equivalent": f"no change (±{num(x.get('margin'))})",
                       "unresolved": "not resolved"}.get(x.get("verdict"), "-")
                      if lca["seeds"] >= st.MIN_SEEDS_FOR_INTERVALS else "-"] for name, x in groups])]
    order = lca.get("bias_minus_attention_half_step")
    if order:
        half = lca["half_step"]
        lines += ["", f"Order: the output bias reached half of its part at step {ci(half.get('output_bias'))}, "
                  f"attention (W_Q, W_K, W_V, W_O) at step {ci(half.get('attention'))}: "
                  + (compared(order, "attention first, the output bias later", "at the same time",
                              "the output bias first (token frequencies), context later")
                     if lca["seeds"] >= st.MIN_SEEDS_FOR_INTERVALS else "no verdict from fewer than 3 seeds") + ".",
                  *comparisons_table([("output bias - attention, step of half the part", order)], "steps")]
    return lines + [fig("loss_allocation", "cumulative loss change allocation per group (mean over seeds)")]


def trained_static_sentence(results: dict) -> str:
    """Whether training put word similarity into the input embeddings: Q5's trained static vectors against random
    ones on WordSim-353, by its verdict."""
    c = ((results["answers"].get("q5") or {}).get("comparisons") or {}).get("static_vs_random")
    if not c:
        return "whether training puts some there is Q5's question"
    return ("on WordSim-353 the trained input embeddings "
            + compared(c, "rank related words closer than random vectors do", "rank them as random vectors do",
                       "rank them less close than random vectors do", "are not told apart from random vectors")
            + f" (Q5: trained static - random, Spearman {ci(c)})")


def q2_section(results: dict, fig) -> list[str]:
    q2 = results["answers"]["q2"]
    diff, matched, dyn = q2["frozen_minus_full"], q2.get("frozen_matched_minus_full"), q2["gain_full_minus_frozen"]
    mf = results.get("matched_frozen") or {}
    points = [(s, g) for s, g in zip(dyn["steps"], dyn["difference"]) if g is not None]
    lines = [
        *opening(results, 2),
        *comparisons_table([("frozen (feed-forward widened) - full", matched), ("frozen (same shape) - full", diff),
                            ("frozen with a learned scale (widened) - full", q2.get("frozen_gain_minus_full")),
                            ("frozen with a learned scale - frozen (both widened)",
                             q2.get("frozen_gain_minus_frozen_matched"))], "validation loss, nats"),
        "",
        f"The matched control widens the frozen model's feed-forward from {mf.get('unmatched_intermediate_size')} to "
        f"{mf.get('intermediate_size')} units, so that {mf.get('parameters')} parameters are trained against the full "
        f"model's {mf.get('full_parameters')}; it reaches {ci(q2.get('frozen_matched_share_of_gain'), '%')} of the full "
        "model's gain over the unigram floor. Random vectors are distinct, so the layers above can learn to read them, "
        f"but they carry no similarity between related words; {trained_static_sentence(results)}.",
        "",
        f"- Without the capacity given back (the same shape, {mf.get('unmatched_parameters')} trainable parameters): "
        + compared(diff, "worse", "no different", "better")
        + f" (frozen - full {ci(diff)} nats; {ci(q2['frozen_share_of_gain'], '%')} of the gain). This gap mixes "
        "\"embeddings not trained\" with \"fewer trainable parameters\"; the matched comparison separates them.",
    ]
    if q2.get("frozen_gain_minus_frozen_matched"):
        lines.append("- With one learned scale of the frozen rows (their norm is otherwise fixed at initialisation): "
                     + compared(q2["frozen_gain_minus_frozen_matched"], "worse than without it",
                                "no different from without it", "better than without it")
                     + f" (frozen with scale - frozen {ci(q2['frozen_gain_minus_frozen_matched'])} nats; "
                     f"{ci(q2.get('frozen_gain_share_of_gain'), '%')} of the gain).")
    if points:
        (s0, g0), (s1, g1) = points[0], points[-1]
        trend = {1: "the trained embeddings are ahead", 0: "the two are not told apart",
                 -1: "the frozen embeddings are ahead"}
        lines.append(f"- Trend during training (gain over the unigram floor, full - frozen, paired over seeds, on the "
                     f"curve's {curve_text(results['settings'])}): at step "
                     f"{s0} {ci(g0)}, where {trend[st.sign(g0)]}; at step {s1} {ci(g1)}, where {trend[st.sign(g1)]}.")
        lines += details("Full - frozen gain at every evaluation (nats, 95% t-interval over seeds)",
                         table(["step", "full - frozen", "95% interval"],
                               [[str(s), num(g["estimate"]), f"[{num(g['low'])}, {num(g['high'])}]"]
                                for s, g in points])[1:])
    lines += similarity_lines(results)
    lines.append(fig("learning_dynamics", "gain over the unigram floor and word similarity during training"))
    return lines


def similarity_lines(results: dict) -> list[str]:
    """Word similarity during training: the change from step 0 to the end of each vector set, paired over seeds."""
    sim, dynamics = results["answers"]["q2"].get("similarity"), results.get("dynamics")
    if not sim:
        return []
    last = f"layer_{results['config']['num_hidden_layers']}"
    def moved(change):  # frozen static vectors are the same at every step: say so, not "not resolved"
        if change["estimate"] == change["low"] == change["high"] == 0:
            return "unchanged at every seed"
        return {1: "rose", 0: "no change was resolved", -1: "fell"}[st.sign(change)]

    pairs = dynamics["pairs"]
    lines = ["", f"- Word similarity during training (WordSim-353 Spearman on the {pairs['kept']} of {pairs['total']} "
             f"pairs whose words occur in >= {dynamics['min_contexts']} of {dynamics['sentences']} training sentences; "
             "mean over seeds [95% t-interval over the seeds alone, unadjusted: the pairs are not resampled, so a "
             "change holds for these pairs, untested beyond them]; step 0 is the untrained model; with this few pairs a Spearman "
             "correlation has a standard error near 1 / sqrt(pairs - 3), so small changes are beyond this measurement):"]
    series = []
    for variant in ("full", "frozen_embeddings"):
        for name, label in (("static", "static vectors"), (last, "last layer's pooled vectors")):
            x = sim[variant][name]
            if x["change"] is None:
                continue
            series.append((f"{variant}, {label}", x))
            lines.append(f"  - {variant}, {label}: {moved(x['change'])}, from {ci(x['spearman'][0])} to "
                         f"{ci(x['spearman'][-1])} at step {x['steps'][-1]} (change {ci(x['change'])}).")
    end = sim.get("full_minus_frozen", {}).get(last)
    if end is not None:
        lines.append("  - At the end, the full model's last-layer vectors "
                     + compared(end, "match human similarity better than the frozen run's",
                                "match it as well as the frozen run's",
                                "match human similarity worse than the frozen run's",
                                "are not told apart from the frozen run's at this scale")
                     + f" (full - frozen {ci(end)}).")
    if series:
        steps = series[0][1]["steps"]
        lines += details("Spearman at every saved step (mean over seeds)",
                         table(["step", *(label for label, _ in series)],
                               [[str(step), *(num((x["spearman"][i] or {}).get("estimate")) for _, x in series)]
                                for i, step in enumerate(steps)])[1:])
    return lines


def q3_section(results: dict, fig=lambda *args: "") -> list[str]:
    q3, circuits = results["answers"]["q3"], results["answers"].get("q3_circuits")
    m = q3["matched"]
    share = lambda key: ci(q3[key], "%") if q3[key] else "n/a"  # noqa: E731
    return [
        *opening(results, 3),
        *comparisons_table([("W_Q = W_K = W_V = I (capacity matched) - full", q3["identity_minus_full"]),
                            ("learned, started at I - full", q3["from_identity_minus_full"]),
                            ("attention-only - full", q3["attention_only_minus_full"])], "validation loss, nats"),
        "",
        f"The embedding matrix is {q3['embedding_shape'][0]} x {q3['embedding_shape'][1]} (one row per token); each "
        f"layer's W_Q and W_K are {q3['projection_shape'][0]} x {q3['projection_shape'][1]}, read as {q3['heads']} "
        f"heads of {q3['head_dim']} dimensions, and act on the normalised residual stream, not on tokens. With W_Q = "
        f"W_K = W_V = I and the feed-forward widened from {m['unmatched_intermediate_size']} to "
        f"{m['intermediate_size']} units ({m['parameters']} parameters against the full model's "
        f"{m['full_parameters']}; one unit is {m['unit_parameters']}), the model "
        + compared(q3["identity_minus_full"], "is worse", "does as well", "is better",
                   "is not told apart from the full model at this scale")
        + f" (identity - full loss {ci(q3['identity_minus_full'])} nats; {share('identity_share_of_gain')} of the "
        "full model's gain over the unigram floor).",
        "",
        "- Learned W_Q, W_K, W_V that start at I: "
        + compared(q3["from_identity_minus_full"], "worse than", "equivalent to", "better than",
                   "not told apart at this scale from")
        + f" the normal initialisation ({share('from_identity_share_of_gain')} of the gain).",
        "- Dropping the feed-forward sublayers instead (attention-only): "
        + compared(q3["attention_only_minus_full"], "worse", "equivalent", "better", "not told apart at this scale")
        + f" ({share('attention_only_share_of_gain')} of the gain).",
        *circuits_lines(circuits),
        fig("circuits", "layer 0's query-key form against the hypotheses") if circuits else "",
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
        verdict = "Layer 0's circuits were measured on fewer than 3 seeds: no verdict"
    elif identity["low"] > 0.5:
        verdict = "The trained W_Q/W_K of layer 0 reproduce the embedding similarity: their query-key form ranks token " \
                  "pairs much as LN(E) LN(E)^T (what W_Q = W_K = I gives) does"
    elif identity["low"] > 0:
        verdict = ("The trained W_Q/W_K of layer 0 partly follow the embedding similarity (W_Q = W_K = I's form)"
                   + (", far from reproducing it (the correlation's interval stays below 0.5)" if identity["high"] < 0.5
                      else "; how closely is not resolved (the correlation's interval reaches above 0.5)"))
    elif identity["high"] < 0:  # "weakly" while the whole interval lies above -0.3
        verdict = (f"The trained W_Q/W_K of layer 0 rank token pairs {'weakly ' if identity['low'] > -0.3 else ''}"
                   "against the embedding similarity")
    else:
        verdict = "The trained W_Q/W_K of layer 0 compute something other than the embedding similarity (the " \
                  "correlation's interval includes 0)"
    if initial and identity and identity["n"] >= 3 and initial["low"] > max(identity["high"], 0.5):
        verdict += "; the form is still closer to its random initial one than to the embedding similarity"
    start, delta = c.get("qkv_from_identity"), c.get("full_minus_from_identity")
    lines = ["", f"- **{verdict}** (Spearman correlation of each head's query-key form over {c['pairs']} pairs of the "
             f"{c['tokens']} most frequent tokens, mean over the {c['heads']} heads, over seeds; OV copying score: "
             "1 = copies, -1 = suppresses):",
             *comparisons_table([("trained form vs LN(E) LN(E)^T", identity), ("trained form vs co-occurrence PPMI", cooc),
                                 ("trained form vs its form at initialisation", initial),
                                 ("OV copying score", full["ov_copying"]),
                                 ("started at W = I: trained form vs LN(E) LN(E)^T", (start or {}).get("identity")),
                                 ("normal start - start at I, correlation with LN(E) LN(E)^T", delta),
                                 ("W = I itself (a check of the probe: 1 by construction)",
                                  (c.get("identity_qkv") or {}).get("identity"))])]
    lines += reference_circuits_lines(c.get("reference"))
    if start and delta:
        lines += ["", "- The normally initialised model's form against the one started at W = I: "
                  + (compared(delta, "closer to the embedding similarity", "as close", "further from the embedding "
                             "similarity", "not told apart")
                     if identity and identity["n"] >= st.MIN_SEEDS_FOR_INTERVALS else "no verdict from fewer than 3 seeds")
                  + "."]
    return lines


def reference_circuits_lines(ref: dict | None) -> list[str]:
    """The reference encoder's layer-0 circuits, measured as ours on the same corpus, in the report's words: how many
    of its heads follow the embedding similarity (interval above 0) and copy, each head chosen by its interval."""
    if not ref:
        return []
    from hf_minattn.probes.report.circuits import headline_text

    against = sum(d["high"] < 0 for d in ref["identity"]) if ref.get("identity") else None  # as the probe counts
    headline = headline_text(ref["heads"], ref["follow"], ref["closely"], ref["copies"], leans=ref.get("leans"),
                             against=against)
    spread = (f"; its heads' correlations run from {ref['range'][0]:.2f} to {ref['range'][1]:.2f}" if ref["range"]
              else "")
    return ["", f"- {AT_SCALE[0].upper() + AT_SCALE[1:]} ({ref['name']}, measured the same way on its own "
            f"{ref['tokens']} most frequent tokens): {headline[0].lower() + headline[1:-1]}{spread}."]


def curve_text(settings: dict) -> str:
    """The validation sequences of the curves during training, in words: "128 validation sequences" (the first
    ones), "validation sequences 128-255" (from `curve_eval_from`), "full validation sequences" (all)."""
    count, start = settings["curve_eval_samples"], settings.get("curve_eval_from", 0)
    if not start:
        return f"{count or 'full'} validation sequences"
    return f"validation sequences {start}-{start + count - 1}" if count else f"validation sequences from {start} on"
