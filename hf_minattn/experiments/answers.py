"""The numbers behind each answer, computed from results.json alone (no models, no files), so that the verdicts
can be tested on synthetic results. Losses are in nats; every comparison is a paired interval over seeds."""

import numpy as np

from . import statistics as st
from .dynamics import similarity_summary
from .training import VARIANTS


def rounded(x, digits=4):
    """Round for the report; FINDINGS.md prints exactly these values, so each is found in results.json."""
    return None if x is None else round(float(x), digits)


def within_layer_js(heads: dict) -> list:
    """Mean Jensen-Shannon divergence between the attention distributions of different heads of the same layer."""
    from hf_minattn.probes.heads import within_layer_divergence

    return [rounded(v) for v in within_layer_divergence(heads["js_divergence"], heads["num_layers"], heads["num_heads"])]


def head_roles(heads: dict) -> dict:
    """Each head's role as the probe labelled it: the statistic furthest above what uniform attention gets on the
    same queries (observed / uniform ratio), or "none" when no ratio reaches the probe's threshold."""
    roles = {}
    for layer, labels in enumerate(heads["roles"]):
        for head, role in enumerate(labels):
            ratio = heads["relative_to_uniform"][role][layer][head] if role != "none" else None
            roles[f"L{layer}H{head}"] = {"role": role, "ratio": rounded(ratio, 2),
                                        "entropy": rounded(heads["stats"]["entropy"][layer][head])}
    return roles


def scale_numbers(results: dict) -> dict:
    s = results["settings"]
    full_seeds = results["variants"]["full"]["seeds"]
    runs = [row for v in results["variants"].values() for row in v["seeds"] if row.get("train_minutes") is not None]
    return {
        "training_runs": len(runs), "training_minutes": rounded(sum(row["train_minutes"] for row in runs), 1),
        "parameters": results["parameters"]["full"], "layers": results["config"]["num_hidden_layers"],
        "hidden_size": results["config"]["hidden_size"], "heads": results["config"]["num_attention_heads"],
        "vocab_size": results["config"]["vocab_size"], "steps": s["max_steps"],
        "tokens_trained": s["max_steps"] * s["batch_size"] * s["max_seq_length"], "seeds": len(results["seeds"]),
        "enough_seeds": len(results["seeds"]) >= st.MIN_SEEDS_FOR_INTERVALS,
        "min_seeds": st.MIN_SEEDS_FOR_INTERVALS, "confidence_percent": round(100 * (1 - st.ALPHA)),
        "loss_margin": st.LOSS_MARGIN,
        "mask_draws": s["mask_draws"], "masked_tokens": full_seeds[0]["masked_tokens"],
        "unigram_loss": results["unigram_loss"],
    }


def loss_table(results: dict) -> dict:
    table = {}
    for variant in VARIANTS:
        if variant.name not in results["variants"]:
            continue
        table[variant.name] = {
            "loss": st.mean(results, variant.name),
            "below_unigram": st.difference(results, "unigram", variant.name),  # U - L: > 0 is below the floor
            "share_of_gain": st.share_of_gain(results, variant.name) if variant.name != "full" else None,
            "accuracy": st.mean(results, variant.name, "accuracy"),
        }
    return table


def answer_questions(results: dict) -> dict:
    answers = {"scale": scale_numbers(results), "losses": loss_table(results)}
    config = results["config"]

    # The full model against its floors.
    answers["floors"] = st.holm_family({
        "full_vs_unigram": st.difference(results, "full", "unigram"),
        "full_vs_untrained": st.difference(results, "full", "untrained"),
        "untrained_vs_unigram": st.difference(results, "untrained", "unigram"),
    })

    # 1. Are the input embeddings updated? Per-row drift against frequency; unseen rows must not move.
    d = results["drift"]["full"]
    rows = results["rows"]["full"]
    answers["q1"] = {
        "steps": d["step"], "drift": {k: rounded(v) for k, v in d["drift"].items()},
        "grad_norm": {k: rounded(v) for k, v in d["grad_norm"].items()},
        "frozen_word_embeddings_drift": rounded(results["drift"]["frozen_embeddings"]["drift"].get("word_embeddings")),
        "embeddings_updated": d["drift"]["word_embeddings"] > 0,
        "rows": rows,
        "rows_frozen_moved": results["rows"]["frozen_embeddings"]["not_in_text"]["moved"]
        + sum(b["moved"] for b in results["rows"]["frozen_embeddings"]["bins"][1:]),
        "never_input_moved": rows.get("never_input", {}).get("moved"),
        "not_in_text_moved": rows["not_in_text"]["moved"],
        "weight_decay": results["settings"]["weight_decay"],
    }

    # 2. Is there any need to train the embeddings? Paired over seeds, plus the trend during training.
    family = {"frozen_minus_full": st.difference(results, "frozen_embeddings", "full")}
    if "frozen_embeddings_matched" in results["variants"]:  # results from before the matched control: without it
        family["frozen_matched_minus_full"] = st.difference(results, "frozen_embeddings_matched", "full")
    answers["q2"] = {
        **st.holm_family(family),
        "frozen_share_of_gain": st.share_of_gain(results, "frozen_embeddings"),
        "frozen_matched_share_of_gain": (st.share_of_gain(results, "frozen_embeddings_matched")
                                         if "frozen_embeddings_matched" in results["variants"] else None),
        "gain_full": st.curve_gap(results, "full"),
        "gain_frozen": st.curve_gap(results, "frozen_embeddings"),
        "gain_full_minus_frozen": st.curve_difference(results, "full", "frozen_embeddings"),
        "similarity": similarity_summary(results["dynamics"]) if results.get("dynamics") else None,
    }

    # 3. W_Q, W_K and the embedding matrix; identity projections at matched parameter count; QKV learned from I.
    H, C = config["num_attention_heads"], config["hidden_size"]
    answers["q3"] = {
        "embedding_shape": [config["vocab_size"], C], "projection_shape": [C, C], "heads": H, "head_dim": C // H,
        "parameters": results["parameters"], "matched": results["matched"],
        **st.holm_family({"identity_minus_full": st.difference(results, "identity_qkv", "full"),
                          "from_identity_minus_full": st.difference(results, "qkv_from_identity", "full"),
                          "attention_only_minus_full": st.difference(results, "attention_only", "full")}),
        "identity_share_of_gain": st.share_of_gain(results, "identity_qkv"),
        "from_identity_share_of_gain": st.share_of_gain(results, "qkv_from_identity"),
        "attention_only_share_of_gain": st.share_of_gain(results, "attention_only"),
    }

    probes, extras = results.get("probes") or {}, results.get("extras") or {}
    if "full" in probes and "untrained" in probes:
        answers.update(probe_answers(results, probes, extras, config))
    answers["pairing"] = results["pairing"]
    return answers


def probe_answers(results, probes, extras, config) -> dict:
    """Questions 4-7, from the probes of the first seed's models (one seed: no intervals; numbers only)."""
    answers = {}
    answers["q4"] = {
        "js_within_layer_init": within_layer_js(probes["untrained"]["heads"]),
        "js_within_layer_trained": within_layer_js(probes["full"]["heads"]),
        "entropy_init": rounded(np.mean(probes["untrained"]["heads"]["stats"]["entropy"])),
        "entropy_trained": rounded(np.mean(probes["full"]["heads"]["stats"]["entropy"])),
        "uniform_entropy": rounded(probes["full"]["heads"]["uniform_entropy"]),
        "roles_trained": head_roles(probes["full"]["heads"]),
    }
    last = f"layer_{config['num_hidden_layers']}"
    related = {name: extras[name]["related_words"] for name in ("full", "untrained")}
    cooc = {name: extras[name]["cooccurrence"]["spearman"] for name in ("full", "untrained", "frozen_embeddings")
            if name in extras}
    bench = {s["vectors"]: s for s in (probes["full"].get("benchmarks") or {}).get("scores", [])}
    pairs = (probes["full"].get("benchmarks") or {}).get("pairs", {})
    answers["q5"] = {
        "related_static": related["full"]["static"], "related_last_layer": related["full"].get(last, {}),
        "related_static_untrained": related["untrained"]["static"],
        "cooccurrence_spearman_static": cooc["full"]["static"],
        "cooccurrence_spearman_last_layer": cooc["full"].get(last),
        "cooccurrence_spearman_static_untrained": cooc["untrained"]["static"],
        "cooccurrence_spearman_static_frozen": cooc.get("frozen_embeddings", {}).get("static"),
        "cooccurrence_top_words": extras["full"]["cooccurrence"]["top_words"],
        "wordsim_static": rounded(bench.get("static", {}).get("wordsim353")),
        "wordsim_word2vec": rounded(bench.get("word2vec", {}).get("wordsim353")),
        "wordsim_oov": rounded(bench.get("static", {}).get("wordsim353_oov")),
        # WordSim-353's similarity and relatedness subsets (Agirre et al. 2009); probes from before them: None
        "wordsim_subsets": {subset: {"pairs": pairs.get(f"wordsim353_{subset}", {}).get("kept"),
                                     **{system: rounded(bench.get(key, {}).get(f"wordsim353_{subset}"))
                                        for system, key in (("static", "static"), ("last_layer", last),
                                                            ("word2vec", "word2vec"))}}
                            for subset in ("similarity", "relatedness")},
    }
    geometry = probes["full"]["geometry"]
    sense = probes["full"].get("sense")
    sense_numbers = None
    if sense:  # sentences 0-1 use one sense, 2-3 the other (the default sense sentences)
        same = [rounded((np.array(m)[0, 1] + np.array(m)[2, 3]) / 2) for m in sense["similarity"]]
        cross = [rounded(np.array(m)[:2, 2:].mean()) for m in sense["similarity"]]
        sense_numbers = {"word": sense["word"], "same_sense": same, "other_sense": cross}
    answers["q6"] = {
        "adjusted_self_similarity": [rounded(x) for x in geometry["adjusted_self_similarity"]],
        "anisotropy": [rounded(x) for x in geometry["anisotropy"]],
        "words_scored": geometry["words_scored"], "sense": sense_numbers,
        "wordsim_by_layer": [rounded(bench.get(f"layer_{l}", {}).get("wordsim353")) for l in geometry["layers"]],
    }
    graph = probes["full"].get("attention_graph")
    if graph:
        layer = config["num_hidden_layers"] - 1
        edges = [e for e in graph["edges"] if e["layer"] == layer and e["head"] == "mean" and e["source"] != e["target"]]
        edges.sort(key=lambda e: -e["weight"])
        labels = {n["id"]: n["label"] for n in graph["nodes"]}
        answers["q7"] = {
            "sentence": graph["sentence"], "nodes": len(graph["nodes"]), "layer": layer, "threshold": graph["threshold"],
            "edges": len(edges),
            "strongest": [[labels[e["source"]], labels[e["target"]], rounded(e["weight"], 3)] for e in edges[:5]],
        }
    return answers
