"""The numbers behind questions 4-7, from the probes of every seed (results["probes"], written by
`probing.probe_variants`): each is a mean over seeds with a 95% t-interval (df = seeds - 1) or, for word pairs, a
crossed bootstrap over seeds and pairs; comparisons are tested and Holm-adjusted per question
(`statistics.tested`, `statistics.holm_family`). Heads are not the same objects at different seeds (nothing ties
head 2 of one run to head 2 of another), so head-level numbers are summarised per seed first (counts of roles, the
costliest head) and only those summaries are averaged."""

from types import SimpleNamespace

import numpy as np

from hf_minattn.stats import crossed_bootstrap, mean_interval

from . import statistics as st
from .answers import rounded

ACCURACY_MARGIN = 0.05  # sense accuracies within +-0.05 of each other (or of chance) are "equivalent" by TOST


def over_seeds(values) -> dict | None:
    values = [v for v in values if v is not None]
    return mean_interval(values).to_dict() if values else None


def per_layer(rows) -> list:
    """[over_seeds of layer l] from one list of per-layer values per seed."""
    return [over_seeds([row[l] for row in rows]) for l in range(len(rows[0]))] if rows else []


def _seeds(probes, name):
    return [probes["by_seed"][name][s] for s in sorted(probes["by_seed"].get(name, {}))]


def js_trained_minus_init(probes: dict) -> dict:
    """Q4's family: per layer, the within-layer JS divergence trained - untrained, paired by seed id (the seeds both
    variants have), Holm-adjusted. No TOST: PROTOCOL.md gives these rows no equivalence margin (section 5, "-"),
    and the loss margin (nats) would mean nothing for a divergence."""
    by_seed = {name: {s: r["heads"]["within_layer_js"] for s, r in probes["by_seed"].get(name, {}).items()}
               for name in ("full", "untrained")}
    full, untrained = by_seed["full"], by_seed["untrained"]
    seeds = st.common_seeds(full, untrained)
    layers = len(full[min(full)])
    return st.holm_family({f"layer_{l}": st.tested([full[s][l] - untrained[s][l] for s in seeds], margin=None)
                           for l in range(layers)})


def heads_answers(probes: dict) -> dict:
    full, untrained = _seeds(probes, "full"), _seeds(probes, "untrained")
    js = {name: [r["heads"]["within_layer_js"] for r in rows] for name, rows in (("full", full), ("untrained", untrained))}
    layers = len(js["full"][0])
    answer = {
        "js_within_layer_trained": per_layer(js["full"]), "js_within_layer_init": per_layer(js["untrained"]),
        "js_trained_minus_init": js_trained_minus_init(probes),
        "entropy_trained": over_seeds([np.mean(r["heads"]["stats"]["entropy"]) for r in full]),
        "entropy_init": over_seeds([np.mean(r["heads"]["stats"]["entropy"]) for r in untrained]),
        "uniform_entropy": rounded(full[0]["heads"]["uniform_entropy"]),
        "heads": layers * full[0]["heads"]["num_heads"], "role_min_mass": full[0]["heads"].get("role_min_mass"),
    }
    # Roles (Clark et al.: raw attention mass, a role only at >= role_min_mass), counted at every seed: a role no head
    # of a seed has counts 0 there, so each list has one count per seed, in the seeds' order.
    labels = [[role for layer in r["heads"]["roles"] for role in layer] for r in full]
    roles = {role: [seed_labels.count(role) for seed_labels in labels] for role in sorted(set().union(*labels))}
    answer["role_counts"] = roles
    answer["role_counts_mean"] = {role: over_seeds(counts) for role, counts in roles.items()}
    # Ablation: per seed, the costliest head (its role and mass), and per layer the summed cost.
    costliest, layer_cost = [], []
    for seed, r in zip(sorted(probes["by_seed"]["full"]), full):
        ablation = r.get("head_ablation")
        if not ablation:
            continue
        cost = np.array(ablation["loss_increase"])
        l, h = np.unravel_index(int(np.argmax(cost)), cost.shape)
        costliest.append({"seed": seed, "head": f"L{l}H{h}", "increase": rounded(cost[l, h]),
                          "interval95": rounded(np.array(ablation["interval95"])[l, h]),
                          "role": r["heads"]["roles"][l][h], "mass": rounded((r["heads"].get("role_mass") or [[None] * (h + 1)] * (l + 1))[l][h]),
                          "masked_tokens": ablation.get("masked_tokens")})
        layer_cost.append(cost.sum(axis=1).tolist())
    answer["costliest_head"] = costliest
    answer["costliest_increase"] = over_seeds([c["increase"] for c in costliest])
    answer["ablation_by_layer"] = per_layer(layer_cost)
    answer["ablation_mlm_probability"] = (full[0].get("head_ablation") or {}).get("mlm_probability")
    # Heads of one layer against the matched heads of another seed (same variant): is a head's behaviour a property
    # of the layer it sits in (reproduced across seeds) or of its random start?
    div = (probes.get("head_divergence") or {}).get("full")
    if div:
        answer["divergence"] = {
            "seed_pairs": div["seed_pairs"],
            "within_layer": [over_seeds(v) for v in div["within_layer"]],
            "matched_across_seeds": [over_seeds(v) for v in div["matched"]],
            # described, not tested: the seed pairs share seeds, so an interval over them is too narrow for a verdict
            "within_minus_matched": {f"layer_{l}": over_seeds(np.subtract(w, m).tolist())
                                     for l, (w, m) in enumerate(zip(div["within_layer"], div["matched"]))},
        }
        # the gap's null: the minimum matching against other layers pulls the matched divergence down as much
        if div.get("matched_other_layers"):
            answer["divergence"]["null_within_minus_matched"] = {
                f"layer_{l}": over_seeds(np.subtract(w, m).tolist())
                for l, (w, m) in enumerate(zip(div["within_layer"], div["matched_other_layers"]))}
    return answer


def related_answers(probes: dict, last: str) -> dict:
    """king/queen against king/dog (and man/woman against man/river), per seed in the space to read, then over seeds;
    the co-occurrence alignment (PPMI against cosine over the pairs with positive PPMI) over seeds, word2vec as the
    control."""
    extras = [probes["extras"]["full"][s] for s in sorted(probes["extras"]["full"])]
    untrained = [probes["extras"]["untrained"][s] for s in sorted(probes["extras"].get("untrained", {}))]
    out = {"related": {}, "cooccurrence": {}}
    for system in ("static", last, "word2vec"):
        rows = [e["related_words"].get(system) for e in extras]
        if not all(rows):
            continue
        entry = {"abtt": rows[0]["abtt"], "anisotropy": over_seeds([r["anisotropy"] for r in rows])}
        for related, unrelated in (("king/queen", "king/dog"), ("man/woman", "man/river")):
            pairs = [(r["cosine"][related], r["cosine"][unrelated]) for r in rows]
            if any(a is None or b is None for a, b in pairs):
                continue
            entry[related] = over_seeds([a for a, _ in pairs])
            entry[unrelated] = over_seeds([b for _, b in pairs])
            entry[f"{related} - {unrelated}"] = st.tested([a - b for a, b in pairs], margin=0.05)
        out["related"][system] = entry
    for name, rows in (("full", extras), ("untrained", untrained)):
        for system in ("static", last, "word2vec"):
            values = [(e["cooccurrence"].get("sets") or {}).get(system) for e in rows]
            if rows and all(values):
                out["cooccurrence"][f"{name}/{system}" if system != "word2vec" else "word2vec"] = {
                    "spearman": over_seeds([v["spearman"]["estimate"] for v in values]),
                    "raw": over_seeds([v["raw"]["estimate"] for v in values]), "abtt": values[0]["abtt"]}
    if extras:
        c = extras[0]["cooccurrence"]
        out["cooccurrence_pairs"] = {k: c.get(k) for k in ("top_words", "window", "pairs", "cooccurring_pairs",
                                                                 "positive_ppmi_pairs")}
    return out


def reference_similarity(pairs: dict) -> dict | None:
    """The reference encoder on the word pairs (`probing.reference_word_pairs`): its last layer's and its input
    embeddings' Spearman (bootstrap over the pairs) and its comparisons; None where the run had no reference."""
    ref = pairs.get("reference")
    if not ref:
        return None
    scores = (pairs.get("scores") or {}).get(pairs["key"]) or {}
    return {"name": ref["name"], "layer": ref["layer"], "system": ref["system"], "static_system": ref["static"],
            "rho": scores.get(ref["system"]), "static_rho": scores.get(ref["static"]),
            "comparisons": ref["comparisons"]}


def homonym_level_comparisons(full: dict | list, untrained: dict | list, last: int, chance: float, n_resamples: int,
                              position_p: float | None = None) -> dict:
    """The sense comparisons with the homonyms as a sample too: per seed and homonym, the last layer's accuracy, and
    its difference from chance and from the untrained model by a crossed bootstrap over seeds and homonyms (the
    same homonyms at every seed), Holm-adjusted together with the position-and-length control's: homonym by homonym
    where the probes kept the control's accuracy per homonym, else its test over seeds (`position_p`, its p): the
    protocol's family has 3 tests either way. `full`, `untrained`: {seed: sense accuracies}, the untrained model
    paired by seed id; a list is taken as already paired, position by position."""
    full, untrained = (rows if isinstance(rows, dict) else dict(enumerate(rows)) for rows in (full, untrained))
    words = full[min(full)]["words"]

    def matrix(rows, seeds):  # (seeds, homonyms)
        return np.array([[rows[s]["accuracy_by_word"][w][rows[s]["layers"].index(last)] for w in words] for s in seeds])

    trained, paired = matrix(full, sorted(full)), st.common_seeds(full, untrained)
    family = {"vs_chance": st.crossed_tested(trained - chance, ACCURACY_MARGIN, n_resamples),
              "vs_untrained": st.crossed_tested(matrix(full, paired) - matrix(untrained, paired), ACCURACY_MARGIN,
                                                n_resamples)}
    controls = [full[s].get("control_accuracy_by_word") for s in sorted(full)]
    if all(controls):  # the stronger control overall (as the seed-level test takes), homonym by homonym
        key = max(controls[0], key=lambda k: np.mean(list(controls[0][k].values())))
        control = np.array([[c[key][w] for w in words] for c in controls])  # (seeds, homonyms)
        family["vs_position"] = st.crossed_tested(trained - control, ACCURACY_MARGIN, n_resamples)
    return st.holm_family(family, [] if "vs_position" in family or position_p is None else [position_p])


def senses_answers(probes: dict, n_resamples: int = 1000) -> dict | None:
    by_seed = {name: {s: r.get("sense_accuracy") for s, r in probes["by_seed"].get(name, {}).items()}
               for name in ("full", "untrained")}
    full, untrained = ([rows[s] for s in sorted(rows)] for rows in by_seed.values())
    if not all(full) or not all(untrained):
        return None
    last = full[0]["layers"][-1]
    at = lambda rows, key: [r[key][r["layers"].index(last)] for r in rows]  # noqa: E731
    acc, acc_u = at(full, "accuracy"), at(untrained, "accuracy")
    paired = st.common_seeds(*by_seed.values())  # vs_untrained pairs the same seed's two models, by seed id
    acc_paired = [at([by_seed[name][s] for s in paired], "accuracy") for name in ("full", "untrained")]
    # the stronger of the two controls that see no vectors: the word's place in its sentence, with or without the
    # sentence's length (in corpus text they differ between senses, so they beat 0.5)
    chance = full[0]["chance"]
    position = max(full[0]["position_accuracy"], full[0].get("length_accuracy") or 0)
    answer = {
        "words": len(full[0]["words"]), "occurrences": full[0]["occurrences"], "layer": last,
        "chance": rounded(chance), "position_accuracy": rounded(position),
        "length_accuracy": rounded(full[0].get("length_accuracy")),
        "accuracy": over_seeds(acc), "raw_accuracy": over_seeds(at(full, "raw_accuracy")),
        "untrained_accuracy": over_seeds(acc_u),
        "by_layer": per_layer([r["accuracy"] for r in full]),
        "untrained_by_layer": per_layer([r["accuracy"] for r in untrained]),
        "comparisons": st.holm_family({
            "vs_chance": st.tested([a - chance for a in acc], margin=ACCURACY_MARGIN),
            "vs_untrained": st.tested([a - b for a, b in zip(*acc_paired)], margin=ACCURACY_MARGIN),
            "vs_position": st.tested([a - position for a in acc], margin=ACCURACY_MARGIN),
        }),
    }
    if all(r.get("accuracy_by_word") for r in full + untrained):  # older probes kept no per-homonym accuracies
        answer["comparisons_items"] = homonym_level_comparisons(*by_seed.values(), last, chance, n_resamples,
                                                                answer["comparisons"]["vs_position"]["p"])
    ref = probes.get("reference") or {}
    if ref.get("sense_accuracy"):
        answer["reference"] = reference_senses(ref["sense_accuracy"], ref.get("name"), n_resamples)
    return answer


def reference_senses(senses: dict, name: str | None, n_resamples: int = 1000) -> dict:
    """The reference encoder's last layer on the homonyms: its accuracy with the probe's interval (homonyms, then
    contexts) and, where the probe kept per-homonym accuracies, its difference from chance tested by a bootstrap over
    the homonyms: one model, so the homonyms are its only sample (a test alone, unadjusted)."""
    answer = {"name": name, "accuracy": rounded(senses["accuracy"][-1]), "interval": senses["accuracy_interval"][-1],
              "layer": senses["layers"][-1], "chance": rounded(senses["chance"]), "homonyms": len(senses["words"])}
    by_word = senses.get("accuracy_by_word")
    if by_word:
        differences = np.array([[by_word[w][-1] - senses["chance"] for w in senses["words"]]])  # (1 model, homonyms)
        answer["vs_chance"] = {**st.crossed_tested(differences, ACCURACY_MARGIN, n_resamples, n=len(senses["words"])),
                               "family_size": 1}
    return answer


def geometry_answers(probes: dict) -> dict:
    full, untrained = _seeds(probes, "full"), _seeds(probes, "untrained")
    answer = {
        "layers": full[0]["geometry"]["layers"],
        "adjusted_self_similarity": per_layer([r["geometry"]["adjusted_self_similarity"] for r in full]),
        "adjusted_self_similarity_init": per_layer([r["geometry"]["adjusted_self_similarity"] for r in untrained]),
        "anisotropy": per_layer([r["geometry"]["anisotropy"] for r in full]),
        "words_scored": full[0]["geometry"]["words_scored"],
    }
    ref = (probes.get("reference") or {}).get("geometry")
    if ref and ref.get("adjusted_self_similarity"):
        answer["reference_adjusted_self_similarity"] = [rounded(x) for x in ref["adjusted_self_similarity"]]
    return answer


def logit_lens_answers(probes: dict, n_resamples: int = 1000) -> dict | None:
    """Which layers the MLM head can read the prediction from: per layer (embedding output first), the gain over
    the unigram floor of the masked-token loss decoded through the MLM head (logit lens), mean over seeds with a 95%
    t-interval, for the trained and the untrained model; the first layer whose interval lies above 0; and what the
    last block adds (the last layer's gain minus the one before, paired by seed); where the probes kept per-sentence
    gains, the same with the sentences as a sample too (`sentence_level_gain`), which then chooses the first layer."""
    full = [r["logit_lens"] for r in _seeds(probes, "full") if r.get("logit_lens") and r["logit_lens"].get("gain")]
    if not full:
        return None
    untrained = [r["logit_lens"] for r in _seeds(probes, "untrained") if r.get("logit_lens") and r["logit_lens"].get("gain")]
    gain = per_layer([lens["gain"] for lens in full])
    answer = {"gain": gain, "gain_untrained": per_layer([lens["gain"] for lens in untrained]),
              "loss": per_layer([lens["loss"] for lens in full]), "accuracy": per_layer([lens["accuracy"] for lens in full]),
              "floor": over_seeds([lens["floor"] for lens in full]), "masked_tokens": full[0]["masked_tokens"],
              "last_block": st.tested([lens["gain"][-1] - lens["gain"][-2] for lens in full]), "seeds": len(full)}
    if all(lens.get("sentence_gain") for lens in full):  # older probes kept no per-sentence gains
        answer.update(sentence_level_gain([np.array(lens["sentence_gain"]) for lens in full], n_resamples))
    above = layers_above_floor(answer)
    return {**answer, "first_layer_above_floor": above[0] if above else None}


def layers_above_floor(lens: dict) -> list:
    """The layers whose logit-lens gain over the unigram floor has its 95% interval above 0 (3 seeds or more): the
    t-interval over seeds and, where the probes kept per-sentence gains, the crossed interval with the sentences'
    variance too (over a handful of seeds a percentile bootstrap alone comes out narrow: `crossed_tested`)."""
    levels = [lens["gain"], *([lens["gain_crossed"]] if lens.get("gain_crossed") else [])]
    return [layer for layer in range(len(lens["gain"]))
            if all(g[layer] and g[layer]["n"] > 2 and g[layer]["low"] > 0 for g in levels)]


def sentence_level_gain(gains: list, n_resamples: int) -> dict:
    """The logit lens with the probe sentences as a sample shared by every seed: per layer the gain's crossed
    bootstrap over seeds and sentences, and the last block's gain tested the same way. `gains`: per seed
    (layers + 1, sentences) per-sentence mean gains."""
    stacked = np.stack(gains)  # (seeds, layers + 1, sentences)
    return {"gain_crossed": [crossed_bootstrap(stacked[:, layer], n_resamples=n_resamples).to_dict()
                             for layer in range(stacked.shape[1])],
            "last_block_crossed": {**st.crossed_tested(stacked[:, -1] - stacked[:, -2], st.LOSS_MARGIN, n_resamples),
                                   "family_size": 1},
            "sentences": stacked.shape[2]}


def circuits_answers(probes: dict) -> dict | None:
    """Q3 measured: per variant, the Spearman correlation of layer 0's QK form with each hypothesis (identity: the
    embedding similarity that W_Q = W_K = I gives; co-occurrence PPMI; the form at initialisation) and the OV copying
    score, each averaged over the heads of a seed, then over seeds with a 95% t-interval; and the full model against
    the one started at I (paired by seed). Heads are not matched across seeds, so only head means are averaged."""
    circuits = probes.get("circuits") or {}
    if not circuits.get("full"):
        return None

    def head_mean(row, key):
        values = row.get(key)
        if not values:
            return None
        return float(np.mean([v["estimate"] if isinstance(v, dict) else v for v in values]))

    def per_seed(name, key):  # {seed: the heads' mean}
        return {s: head_mean(row, key) for s, row in (circuits.get(name) or {}).items()}

    answer = {}
    for name in circuits:
        answer[name] = {key: over_seeds([v for _, v in sorted(per_seed(name, key).items())])
                        for key in ("identity", "cooccurrence", "initial", "ov_copying", "qk_positive")}
    full, started_at_i = per_seed("full", "identity"), per_seed("qkv_from_identity", "identity")
    paired = st.common_seeds(full, started_at_i)  # the same seed's two models, by seed id
    if paired and all(full[s] is not None and started_at_i[s] is not None for s in paired):
        answer["full_minus_from_identity"] = st.tested([full[s] - started_at_i[s] for s in paired], margin=0.05)
    first = circuits["full"][sorted(circuits["full"])[0]]
    answer["heads"], answer["tokens"] = first["num_heads"], first.get("tokens")
    answer["pairs"] = (first.get("pairs") or {}).get("identity")
    reference = probes.get("reference") or {}
    if reference.get("circuits"):  # the encoder trained at scale, measured the same way (one model: no seeds)
        from hf_minattn.probes.report.circuits import head_counts

        ref = reference["circuits"]
        estimates = [r["estimate"] for r in ref["identity"] if r["estimate"] is not None]
        answer["reference"] = {**ref, "name": reference["name"],
                               "range": [min(estimates), max(estimates)] if estimates else None,
                               **head_counts(SimpleNamespace(**ref, token_ids=range(ref["tokens"])))}
    return answer


def graph_answers(probes: dict, config: dict) -> dict | None:
    rollout = [probes["rollout"][s] for s in sorted(probes.get("rollout") or {}) if probes["rollout"][s]]
    if not rollout:
        return None
    common = set.intersection(*(set(r["edges"]) for r in rollout))
    edges = {e: over_seeds([r["edges"][e] for r in rollout]) for e in common}
    strongest = sorted(edges, key=lambda e: -edges[e]["estimate"])[:5]
    return {"sentence": rollout[0]["sentence"], "layer": config["num_hidden_layers"] - 1,
            "strongest": [[e, edges[e]] for e in strongest],
            "self_share": over_seeds([r["self_share"] for r in rollout]), "seeds": len(rollout)}


def holm_q4(q4: dict) -> dict:
    """PROTOCOL.md's Q4 family: the layers' trained - untrained divergences and, where the early grid ran, the timing
    (specialisation - plateau exit), Holm-adjusted together in place. Returns q4."""
    timing = ((q4.get("over_training") or {}).get("early") or {}).get("specialisation_minus_exit")
    if timing is not None and "p" in timing:
        st.holm_family({**q4["js_trained_minus_init"], "timing": timing})  # the same dicts: adjusted in place
    return q4


def probe_answers(results: dict, probes: dict, config: dict) -> dict:
    last = f"layer_{config['num_hidden_layers']}"
    pairs = probes.get("word_pairs") or {}
    answers = {"q3_circuits": circuits_answers(probes), "q4": heads_answers(probes)}
    if results.get("head_dynamics"):  # the heads at every saved state; results from before that phase have none
        from .head_dynamics import head_dynamics_summary

        answers["q4"]["over_training"] = head_dynamics_summary(results["head_dynamics"], results)
        holm_q4(answers["q4"])
    answers["q5"] = {**related_answers(probes, last), "word_pairs": pairs.get("scores"),
                     "comparisons": pairs.get("q5"), "pairs": pairs.get("pairs"), "margin": pairs.get("margin"),
                     "standard_error": pairs.get("standard_error"), "key": pairs.get("key"),
                     "reference": (probes.get("reference") or {}).get("name"),
                     "reference_scores": reference_similarity(pairs),
                     "word2vec_matched": probes.get("word2vec_matched")}
    n_resamples = results.get("settings", {}).get("n_resamples", 1000)
    answers["q6"] = {**geometry_answers(probes), "senses": senses_answers(probes, n_resamples),
                     "comparisons": pairs.get("q6"),
                     "best_layer": pairs.get("best_layer"),
                     "logit_lens": logit_lens_answers(probes, n_resamples)}
    graph = graph_answers(probes, config)
    if graph:
        answers["q7"] = graph
    if probes.get("mixing"):  # results from before the many-sentence rollout have only the one example
        from .mixing import mixing_answers  # it reads per_layer from here

        answers.setdefault("q7", {})["mixing"] = mixing_answers(probes["mixing"], n_resamples)
    return answers
