"""FINDINGS.md's sections on the probes, questions 4-7 (heads in `findings_heads`; here word similarity, contextual
embeddings, attention as a graph), each opened by its answer and a table of its comparisons. A section function
takes its own answers (`results["answers"]["q5"]`, ...), so that it can be rendered from synthetic probe
summaries."""

from . import statistics as st
from .findings_answers import REFERENCE_DESCRIPTIONS, VERSUS, opening
from .findings_format import (at_both_levels, block_output, ci, compared, comparisons_table, df_cell, family_rows, num,
                              p_cell, seed_count, table)
from .findings_heads import q4_section
from .probe_answers import layers_above_floor
from .word_pairs import HIERARCHICAL_WIDENING, pairs_method, stated_verdict


Q5_COMPARISONS = (("last_vs_untrained", "last layer - untrained last layer"), ("last_vs_word2vec", "last layer - word2vec"),
                  ("static_vs_untrained", "static - untrained static"), ("static_vs_word2vec", "static - word2vec"),
                  ("static_vs_random", "static - random vectors"), ("last_vs_reference", "last layer - reference"),
                  ("reference_vs_word2vec", "reference - word2vec"),
                  ("last_vs_word2vec_matched", "last layer - word2vec at the model's exposure"))


def reference_rows(ref: dict | None) -> list[tuple]:
    """The reference encoder's own comparisons (its Holm family), as (label, comparison) rows, each crossed one
    followed by its seed level (word2vec is trained once per seed)."""
    c = (ref or {}).get("comparisons") or {}
    return family_rows(c, [("vs_word2vec", f"{ref['name']}: last layer - word2vec"),
                           ("vs_static", f"{ref['name']}: last layer - its input embeddings")]) if c else []


def levels_lines(rows: list[tuple[str, dict | None, dict | None]], sample: str) -> list[str]:
    """A bullet naming the comparisons (label, crossed comparison, its seed level) whose two levels' verdicts differ,
    each at both levels (PROTOCOL.md, section 5); none where they agree."""
    parts = [f"{label}: " + at_both_levels(d, seeds, "higher", "no different", "lower", "not resolved", sample)
             for label, d, seeds in rows if d is not None and seeds is not None and st.verdict(d) != st.verdict(seeds)]
    return ["", "- Where the seeds alone give another verdict (the answer reads the level with " + sample
            + " as a sample too): " + "; ".join(parts) + "."] if parts else []


def finer_than_one(comparisons: list, standard_error: float | None) -> str:
    """After "one correlation ... has a standard error near SE": whether the differences of correlations, paired on
    the same pairs, are measured more finely than one correlation, by their 95% intervals' half-widths against one
    correlation's (1.96 standard errors), said only as far as the numbers show it; a hierarchical interval, drawn too
    narrow, taken HIERARCHICAL_WIDENING times as wide (as its verdict is)."""
    kept = [d for d in comparisons if d and d.get("low") is not None and d.get("high") is not None]
    if not kept or not standard_error:
        return ""
    widened = any(d.get("method") == "hierarchical" for d in kept)
    finer = sum((d["high"] - d["low"]) / 2 * (HIERARCHICAL_WIDENING if d.get("method") == "hierarchical" else 1)
                < 1.96 * standard_error for d in kept)
    than = "one correlation's" + (f" (a hierarchical one taken {HIERARCHICAL_WIDENING}x as wide)" if widened else "")
    if finer == len(kept):
        return ("; the differences, paired on the same pairs, are measured more finely: each one's 95% interval is "
                f"narrower than {than}")
    if finer == 0:
        return (f"; no difference's 95% interval is narrower than {than}: pairing on the same pairs does not measure "
                "them more finely here")
    return (f"; {finer} of the {len(kept)} differences' 95% intervals are narrower than {than}, the others' are not: "
            "pairing on the same pairs does not measure every difference more finely")


def too_narrow(comparisons: dict, subject: str = "These intervals") -> str:
    """Said under word-pair intervals drawn before the crossed draw (`pairs_method` "hierarchical";
    docs/experiments.md), "" otherwise."""
    if pairs_method(comparisons) != "hierarchical":
        return ""
    return (f"**{subject} are too narrow:** every seed scores the same pairs, yet the hierarchical bootstrap draws "
            "them again at each seed, which shrinks the pairs' share of the variance by about the seeds' count; "
            "`hf-minattn experiments` now draws them once for all seeds (crossed): 1.3-"
            f"{HIERARCHICAL_WIDENING}x wider on the replication's 5 seeds (docs/experiments.md). A verdict whose interval "
            f"would reach 0 if {HIERARCHICAL_WIDENING}x as wide may not hold: its verdict says so.")


def q5_section(q5: dict, results: dict, fig) -> list[str]:
    comparisons, ref = q5["comparisons"] or {}, q5.get("reference_scores")
    note = too_narrow(comparisons)
    lines = [
        *opening({"answers": {"q5": q5, "scale": results["answers"].get("scale")}}, 5),
        *comparisons_table(family_rows(comparisons, Q5_COMPARISONS) + reference_rows(ref), "Spearman"),
        "",
        f"Differences of Spearman correlations on the same pairs, by a {pairs_method(comparisons)} bootstrap over "
        f"{results['answers']['scale']['seeds']} seeds and the pairs"
        + (f" ({ref['name']} is one model, the same at every seed: its own correlations are bootstrapped over the "
           "pairs alone)" if ref else "") + "; cosines after All-but-the-Top wherever a space's "
        f"anisotropy baseline is above 0.1; one correlation on this many pairs has a standard error near "
        f"{num(q5['standard_error'])}"
        + finer_than_one([comparisons.get(name) for name, _ in Q5_COMPARISONS]
                         + list(((ref or {}).get("comparisons") or {}).values()), q5["standard_error"])
        + f"; equivalence margin ±{num(q5['margin'])}." + (f" {note}" if note else ""),
        *levels_lines(q5_levels(q5), "the pairs"),
        *q5_scores(q5, results),
        *related_lines(q5, results),
        fig("related_words", "related word pairs"), fig("word_similarity", "word similarity by layer"),
    ]
    return lines


def q5_levels(q5: dict) -> list[tuple[str, dict | None, dict | None]]:
    """(label, crossed comparison, its seed level) for Q5's table, the reference's family after ours."""
    comparisons, ref = q5["comparisons"] or {}, q5.get("reference_scores") or {}
    ours, theirs = st.seed_levels(comparisons), st.seed_levels(ref.get("comparisons") or {})
    return ([(label, comparisons.get(name), ours.get(name)) for name, label in Q5_COMPARISONS]
            + [(f"{ref['name']}: last layer - {what}", ref["comparisons"].get(name), theirs.get(name))
               for name, what in (("vs_word2vec", "word2vec"), ("vs_static", "its input embeddings")) if theirs])


def _score(scores: dict | None, key: str, system: str) -> dict | None:
    return ((scores or {}).get(key) or {}).get(system)


def _reference_last(scores, key):
    layers = [s.split("/")[1] for s in (scores.get(key) or {}) if s.startswith("minilm/layer_")]
    return layers[-1] if layers else "static"


def q5_scores(q5: dict, results: dict) -> list[str]:
    """The Spearman scores behind the comparisons, and WordSim-353's subsets and SimLex-999 where measured."""
    last = f"layer_{results['config']['num_hidden_layers']}"
    key, scores, comparisons = q5["key"], q5["word_pairs"] or {}, q5["comparisons"] or {}
    systems = [("full, static", "full/static"), ("full, last layer", f"full/{last}"),
               ("untrained, static", "untrained/static"), ("untrained, last layer", f"untrained/{last}"),
               ("word2vec (one per seed, settings chosen on SimLex-999 and the analogies)", "word2vec"),
               ("random vectors", "random")]
    matched = q5.get("word2vec_matched")
    if matched:
        systems.insert(5, (f"word2vec at the model's exposure ({num(matched['epochs'])} "
                           f"epoch{'' if matched['epochs'] == 1 else 's'} against "
                           f"{matched['tuned_epochs']}: the model made {num(matched['model_passes'])} passes)",
                           "word2vec_matched"))
    ref = q5.get("reference_scores")
    if ref:
        systems += [(f"{ref['name']} (pretrained reference), last layer (bootstrap over pairs)", ref["system"]),
                    (f"{ref['name']}, input embeddings (bootstrap over pairs)", ref["static_system"])]
    elif q5.get("reference"):  # results from before the reference's own scores
        systems.append((f"{q5['reference']} (pretrained reference, last layer)",
                        f"minilm/{_reference_last(scores, key)}"))
    subsets = {name: scores.get(f"wordsim353_{name}_read") for name in ("similarity", "relatedness")}
    extra = all(subsets.values())
    header = ["vectors", "WordSim-353"] + (["similarity subset", "relatedness subset", "SimLex-999"] if extra else [])
    rows = [[label, ci(_score(scores, key, system))]
            + ([ci(subsets["similarity"].get(system)), ci(subsets["relatedness"].get(system)),
                ci(_score(scores, "simlex999_read", system))] if extra else []) for label, system in systems]
    lines = ["", "Spearman with human judgements (mean over seeds, 95% interval):", *table(header, rows), ""]
    if extra:
        lines.append("- WordSim-353's similarity / relatedness subsets (Agirre et al.; "
                     f"{q5['pairs']['wordsim353_similarity']['kept']} / {q5['pairs']['wordsim353_relatedness']['kept']} "
                     "pairs) are scored apart in the table.")
    if comparisons.get("last_vs_reference"):
        against = (ref or {}).get("comparisons", {}).get("vs_word2vec") or comparisons.get("reference_vs_word2vec")
        lines.append(f"- Last layer against {q5['reference']}: {VERSUS[stated_verdict(comparisons['last_vs_reference'])]}; "
                     f"{q5['reference']} against word2vec: {VERSUS[stated_verdict(against)]}.")
    return lines


def related_lines(q5: dict, results: dict) -> list[str]:
    """Single pairs (king/queen against king/dog, man/woman against man/river) and co-occurrence against cosine."""
    last = f"layer_{results['config']['num_hidden_layers']}"
    rows = []
    for system, label in (("static", "static vectors"), (last, "last layer"), ("word2vec", "word2vec")):
        r = q5["related"].get(system) or {}
        for near, far in (("king/queen", "king/dog"), ("man/woman", "man/river")):
            d = r.get(f"{near} - {far}")
            if d:
                rows.append([label, "after All-but-the-Top" if r["abtt"] else "raw", ci(r["anisotropy"]),
                             f"{near} {ci(r[near])}", f"{far} {ci(r[far])}", ci(d), p_cell(d),
                             compared(d, f"{near.split('/')[1]} is closer", "no closer",
                                      f"{far.split('/')[1]} is closer", "not told apart")])
    lines = ["", "Single pairs, an illustration (cosine, mean over seeds; t-interval over the seeds alone, unadjusted: "
             "each row is one pair, so the pairs' own variance is in no interval, and no answer rests on them):",
             *table(["vectors", "cosines", "anisotropy baseline", "pair", "against", "difference", "p", "verdict"], rows)]
    cooc = q5["cooccurrence"]
    if cooc:
        p = q5.get("cooccurrence_pairs") or {}
        # The Spearman runs over the pairs with positive PPMI only, fewer than co-occur (older results lack that count).
        of = f" (of {p['cooccurring_pairs']} that co-occur)" if p.get("cooccurring_pairs") is not None else ""
        lines += ["", f"- Words that occur together (PPMI within {p.get('window')} words, over the "
                  f"{p.get('positive_ppmi_pairs')} pairs with positive PPMI{of} among the {p.get('top_words')} most "
                  "frequent words): "
                  "Spearman between PPMI and cosine, mean over seeds: "
                  + "; ".join(f"{name} {ci(v['spearman'])}" for name, v in cooc.items())
                  + " (word2vec, trained on co-occurrence, is the positive control)."]
    return lines if rows or cooc else []


def q6_section(q6: dict, fig, scale: dict | None = None) -> list[str]:
    """Q6's section; `scale`: results["answers"]["scale"], for the answer's size of our model."""
    senses, comparisons = q6.get("senses"), q6.get("comparisons") or {}
    note = too_narrow(comparisons, "The WordSim-353 rows' intervals")
    c = (senses or {}).get("comparisons") or {}
    items = (senses or {}).get("comparisons_items") or {}
    ref = (senses or {}).get("reference") or {}
    pair_levels = st.seed_levels(comparisons)
    lines = [*opening({"answers": {"q6": q6, "scale": scale}}, 6),
             *comparisons_table([("sense accuracy - chance", c.get("vs_chance")),
                                 ("the same, seeds x homonyms", items.get("vs_chance")),
                                 ("sense accuracy - untrained model", c.get("vs_untrained")),
                                 ("the same, seeds x homonyms", items.get("vs_untrained")),
                                 ("sense accuracy - position-and-length control", c.get("vs_position")),
                                 ("the same, seeds x homonyms", items.get("vs_position"))]
                                + family_rows(comparisons, q6_pairs_named(q6))
                                + ([(f"{ref['name']}, last layer: sense accuracy - chance, over its "
                                     f"{ref['homonyms']} homonyms", ref["vs_chance"])] if ref.get("vs_chance") else [])),
             *(["", note] if note else []),
             *levels_lines([(label, comparisons.get(name), pair_levels.get(name))
                            for name, label in q6_pairs_named(q6)], "the pairs")]
    if senses:
        lines += ["", f"Leave-one-out nearest-centroid accuracy on {senses['words']} homonyms, {senses['occurrences']} "
                  f"labelled occurrences, vectors after All-but-the-Top: {ci(senses['accuracy'])} over seeds, raw "
                  f"{ci(senses['raw_accuracy'])}; chance {num(senses['chance'])}.",
                  "",
                  f"- Against the untrained model ({ci(senses['untrained_accuracy'])}): "
                  + at_both_levels(items.get("vs_untrained") or c["vs_untrained"], c["vs_untrained"] if items else None,
                                   "better", "the same", "worse", "not told apart", "the homonyms", always=True)
                  + "; against the control that sees no vectors (the word's place in its sentence, with the "
                  f"sentence's length: {num(senses['position_accuracy'])}, "
                  + beside_interval(senses["position_accuracy"], senses["untrained_accuracy"], "the untrained model's")
                  + "): "
                  + at_both_levels(items.get("vs_position") or c["vs_position"], c["vs_position"] if "vs_position" in items
                                   else None, "better", "the same", "worse", "not told apart", "the homonyms", always=True)
                  + (" over seeds alone (this run kept no accuracy per homonym for this control)"
                     if items and "vs_position" not in items else "")
                  + "."]
        if senses.get("reference"):
            r = senses["reference"]
            lines.append(f"- {r.get('name') or 'The pretrained reference'}'s last layer: {num(r['accuracy'])} "
                         f"[{num(r['interval']['low'])}, {num(r['interval']['high'])}] (bootstrap over homonyms and "
                         "contexts)" + (f"; against chance ({num(r['chance'])}), over the homonyms: "
                                        + compared(r["vs_chance"], "better", "the same", "worse", "not told apart")
                                        if r.get("vs_chance") else "") + ".")
    lines += by_layer_lines(q6)
    lines += [*logit_lens_lines(q6.get("logit_lens"), fig),
              fig("full_geometry", "geometry by layer (first seed, for illustration)")]
    return lines


def q6_pairs_named(q6: dict) -> list[tuple[str, str]]:
    """(name, label) of Q6's word-pair comparisons, static against contextual vectors."""
    return [("last_vs_static", "WordSim-353 Spearman, last layer - static"),
            ("best_layer_vs_static", f"WordSim-353 Spearman, best layer ({q6.get('best_layer')}, chosen on these pairs, "
                                     "so optimistic) - static")]


def beside_interval(value: float, interval: dict, whose: str) -> str:
    """"above / below {whose}" only beyond its 95% interval's ends, "within {whose} interval" otherwise."""
    if value > interval["high"]:
        return f"above {whose}"
    return f"below {whose}" if value < interval["low"] else f"within {whose} interval"


def by_layer_lines(q6: dict) -> list[str]:
    """One row per layer (embedding output first): sense accuracy, adjusted self-similarity (Ethayarajh; lower = more
    context-specific), trained and untrained, and the pretrained reference's where measured."""
    columns = [("sense accuracy", (q6.get("senses") or {}).get("by_layer")),
               ("adjusted self-similarity", q6["adjusted_self_similarity"]),
               ("untrained", q6["adjusted_self_similarity_init"])]
    columns = [(name, values) for name, values in columns if values]
    reference = q6.get("reference_adjusted_self_similarity")
    layers = max(len(values) for _, values in columns + [("reference", reference or [])])  # a deeper reference too
    rows = [[str(layer), *(ci(values[layer]) if layer < len(values) else "-" for _, values in columns)]
            + ([num(reference[layer]) if layer < len(reference) else "-"] if reference else [])
            for layer in range(layers)]
    return ["", f"By layer (embedding output first; {q6['words_scored']} words scored for self-similarity; mean over "
            "seeds, 95% t-interval; the pretrained reference is one model, its every layer shown, without interval):",
            *table(["layer", *(name for name, _ in columns)] + (["pretrained reference"] if reference else []), rows)]


# The layers are read by their intervals, not tested: the protocol's Q6 lens family is the last block's gain alone.
PER_LAYER = " (one unadjusted interval a layer, not a test: the last block's gain below is the tested comparison)"


def logit_lens_verdict(lens: dict) -> str:
    """Which layers the MLM head can read the prediction from, by the intervals (with the sentences' variance where
    the probes kept it); never where it "forms": the head was trained on the last layer only."""
    above, last = layers_above_floor(lens), len(lens["gain"]) - 1  # from the intervals printed beside it
    first = above[0] if above else None
    if lens["seeds"] < 3:
        return f"Where the MLM head can read the prediction: no verdict from {seed_count(lens['seeds'])} (3 needed)"
    if first is None:
        return ("Where the MLM head can read the prediction: no layer, decoded by it, predicts masked tokens better "
                "than token frequencies alone beyond its 95% interval (not at this scale)")
    if first == last:
        return (f"Where the MLM head can read the prediction: the last layer (layer {last}) beats token frequencies "
                "alone beyond its 95% interval; no earlier layer is shown to, which does not say they hold nothing"
                + PER_LAYER)
    if above == list(range(first, last + 1)):
        return (f"Where the MLM head can read the prediction: from layer {first} of {last} on, the layers decoded by "
                "it beat token frequencies alone beyond their 95% intervals" + PER_LAYER)
    return (f"Where the MLM head can read the prediction: layers {', '.join(map(str, above))} of {last}, decoded by "
            "it, beat token frequencies alone beyond their 95% intervals; the other layers are not shown to" + PER_LAYER)


def logit_lens_lines(lens: dict | None, fig) -> list[str]:
    """Which layers the MLM head can read the prediction from (logit lens: each layer decoded through the final norm
    and MLM head)."""
    if not lens:
        return []
    crossed, untrained = lens.get("gain_crossed"), lens["gain_untrained"] or []
    last_block = lens.get("last_block_crossed") or lens["last_block"]
    rows = [[str(layer), ci(g), *([ci(crossed[layer])] if crossed else []),
             ci(untrained[layer]) if layer < len(untrained) else "-"] for layer, g in enumerate(lens["gain"])]
    header = ["layer", "gain, trained (seeds)", *(["gain per sentence, trained (seeds x sentences)"] if crossed else []),
              "gain, untrained"]
    return ["", f"**{logit_lens_verdict(lens)}** (logit lens: each layer's masked-token loss through the final norm "
            f"and MLM head, as gain over the unigram floor of the same {lens['masked_tokens']} tokens, nats"
            + (f"; intervals over seeds and the {lens['sentences']} sentences average each sentence's gain, so they "
               "weigh sentences, not tokens, alike" if crossed else "")
            + f"). The last block adds {ci(last_block)} nats ("
            + (compared(last_block, "more gain", "no difference", "less gain", "not resolved")
               if lens["seeds"] >= st.MIN_SEEDS_FOR_INTERVALS else "no verdict from fewer than 3 seeds")
            + "). A head trained on the last layer only reads the others: a layer it cannot read may still hold the "
            "information.",
            *table(header, rows),
            *comparisons_table([("last block: gain of the last layer - the one before (seeds)", lens["last_block"]),
                                ("the same, seeds x sentences", lens.get("last_block_crossed"))], "nats"),
            fig("logit_lens", "gain over the unigram floor of every layer, decoded by the MLM head")]


def q7_mixing_lines(mixing: dict) -> list[str]:
    """Q7 over many sentences: self-shares by residual weighting (crossed intervals over seeds and sentences), the
    measured residual weights per layer, and the comparisons."""
    ref = mixing.get("reference")
    rows = [[label, *(ci(mixing[w][key]) for w in ("measured", "half"))]
            for label, key in (("our model, trained", "full"), ("uniform attention, same weights", "uniform"),
                               ("our model, untrained", "untrained"))]
    if ref:
        rows.append([ref["name"], *(ci(ref[w]["self_share"]) for w in ("measured", "half"))])
    weights, untrained = mixing["residual_weight"]["full"], mixing["residual_weight"].get("untrained")
    lines = [f"A word's share of its own input after the last layer, mean over {mixing['sentences']} sentences and "
             f"{mixing['seeds']} seeds (95% crossed bootstrap over seeds and sentences):",
             *table(["model", "residual weight measured", "residual weight 0.5"], rows), "",
             "The residual weight measured from the layers' norms, ||r|| / (||r|| + ||attention output||), per layer "
             f"(trained): {', '.join(ci(w) for w in weights)}"
             + (f"; untrained: {', '.join(ci(w) for w in untrained)}" if untrained else "")
             + (f"; {ref['name']}: {', '.join(num(w) for w in ref['residual_weight'])}" if ref else "") + "."]
    if ref and ref["name"] in REFERENCE_DESCRIPTIONS:
        lines += ["", f"{ref['name']} {REFERENCE_DESCRIPTIONS[ref['name']]}"]
    c = mixing["comparisons"]
    named = [("full_minus_uniform_measured", "trained - uniform attention (measured weights)"),
             ("full_minus_untrained_measured", "trained - untrained (measured weights)"),
             ("full_minus_uniform_half", "trained - uniform attention (weight 0.5)"),
             ("full_minus_untrained_half", "trained - untrained (weight 0.5)")]
    rows = family_rows(c, named)
    if ref:
        rows.append((f"{ref['name']} - uniform attention (measured weights)", ref["measured"]["minus_uniform"]))
    levels = st.seed_levels(c)
    return [*lines, *comparisons_table(rows, "self-share"),
            *levels_lines([(label, c.get(name), levels.get(name)) for name, label in named], "the sentences"), ""]


def q7_section(q7: dict, fig, scale: dict | None = None) -> list[str]:
    """Q7's section; `scale`: results["answers"]["scale"], for the answer's size of our model."""
    share = q7["self_share"]
    against_half = ("-" if not share else "one seed: no interval" if share.get("n", 2) < 2 else "above 0.5"
                    if share["low"] > 0.5 else "below 0.5" if share["high"] < 0.5 else "includes 0.5")
    one_example = table(["comparison", "estimate", "95% interval", "df", "p", "verdict"],
                        [[f"a word's share of its own input after layer {block_output(q7['layer'])} (rollout, mean over seeds)",
                          num((share or {}).get("estimate")),
                          f"[{num((share or {}).get('low'))}, {num((share or {}).get('high'))}]",
                          df_cell(share), "-", against_half]])
    return [
        *opening({"answers": {"q7": q7, "scale": scale}}, 7),
        *(["", *q7_mixing_lines(q7["mixing"])] if q7.get("mixing") else one_example),
        "",
        "Every row of a head's attention sums to one, so each head is a weighted directed graph over the tokens; but "
        "residual connections carry each word's own vector through, and each layer mixes what earlier layers mixed. "
        "Attention rollout (Abnar & Zuidema) follows both: it multiplies the layers' head-averaged attention, each "
        "with the residual added (w I + (1 - w) A, w the residual weight: measured from each layer's norms where the "
        "tables say so, Abnar & Zuidema's 0.5 otherwise), and gives the share of each input word in a word's "
        "representation. "
        "Norm-weighted attention (Kobayashi et al.) scales each weight by the size of the vector it moves; both are "
        "drawn beside the raw graph in the probe reports.",
        "",
        f"For \"{q7['sentence']}\", after layer {block_output(q7['layer'])}, the strongest rollout edges between "
        "different words (residual weight 0.5; mean over seeds, 95% t-interval):",
        *table(["edge", "share"], [[edge, ci(w)] for edge, w in q7["strongest"]]),
        "",
        "- Each seed's graphs (raw, norm-weighted, rollout, flow) are in `probes/full/seed<k>/` (attention_graph.json "
        "and report.html; probes.json in the run's own output folder).",
        fig("attention_graph", "attention as a graph"),
    ]


def probe_sections(results: dict, fig) -> list[str]:
    a = results["answers"]
    if "q4" not in a:
        return []
    lines = [*q4_section(a["q4"], fig), *q5_section(a["q5"], results, fig), *q6_section(a["q6"], fig, a.get("scale"))]
    if "q7" in a:
        lines += q7_section(a["q7"], fig, a.get("scale"))
    return lines
