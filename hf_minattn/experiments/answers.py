"""The numbers behind each answer, computed from results.json alone (no models, no files), so that the verdicts
can be tested on synthetic results. Losses are in nats; every comparison is a paired interval over seeds."""

from . import statistics as st
from .dynamics import similarity_summary
from .training import VARIANTS


def rounded(x, digits=4):
    """Round for the report; FINDINGS.md prints exactly these values, so each is found in results.json."""
    return None if x is None else round(float(x), digits)


def mean_over_seeds(values) -> dict:
    """Mean of one number per seed with its 95% t-interval (df = seeds - 1)."""
    return st.mean_interval(values).to_dict()


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
        "masked_tokens_by_seed": {row["seed"]: row["masked_tokens"] for row in full_seeds},
        "unigram_loss": results["unigram_loss"],
        # run_experiments resolves "auto" before training; None only in results.json files written before that
        "precision": {True: "bf16 autocast", False: "fp32"}.get(s.get("bf16"), "bf16 autocast where the hardware has it"),
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


def loss_allocation_answers(results: dict) -> dict | None:
    """Loss change allocation of the full model over seeds: the nats the loss fell on the fixed batch, how many of
    them each group's updates account for (`lowered`: minus its allocation, tested against 0, Holm over the groups),
    its share of the fall, and whether the output bias (token frequencies alone) reaches half of its part before
    attention does (paired difference of the steps, margin: one allocation interval)."""
    seeds = {s: row for s, row in (results.get("loss_allocation") or {}).items() if row}
    if not seeds:
        return None
    rows = [seeds[s] for s in sorted(seeds)]
    # "attention" is W_Q + W_K + W_V + W_O together: shown, but no hypothesis of its own in the family
    groups = [g for g in rows[0]["groups"] if all(g in r["groups"] for r in rows) and g != "attention"]
    answer = {
        "seeds": len(rows), "every": rows[0]["every"], "intervals": rows[0]["intervals"],
        "fall": mean_over_seeds([-r["loss_change"] for r in rows]),
        "relative_error_max": rounded(max(r["relative_error"] for r in rows)),
        "lowered": st.holm_family({g: st.tested([-r["groups"][g] for r in rows]) for g in groups}),
        "attention_lowered": (mean_over_seeds([-r["groups"]["attention"] for r in rows])
                              if all("attention" in r["groups"] for r in rows) else None),
        "share_percent": {g: mean_over_seeds([100 * r["groups"][g] / r["loss_change"] for r in rows])
                          for g in [*groups, "attention"] if all(r["loss_change"] != 0 and g in r["groups"] for r in rows)},
        "half_step": {g: mean_over_seeds([r["half_step"][g] for r in rows])
                      for g in [*groups, "attention"] if all(r["half_step"].get(g) is not None for r in rows)},
    }
    if all(r["half_step"].get("output_bias") is not None and r["half_step"].get("attention") is not None for r in rows):
        answer["bias_minus_attention_half_step"] = st.tested(
            [r["half_step"]["output_bias"] - r["half_step"]["attention"] for r in rows], margin=rows[0]["every"])
    return answer


def answer_questions(results: dict) -> dict:
    """The numbers behind every answer of FINDINGS.md: scale, losses, floors, one entry per question (q1 to q3; q3's
    circuits and q4 to q7 when the probes ran at every seed) and the pairing of the runs."""
    answers = {"scale": scale_numbers(results), "losses": loss_table(results), "floors": floor_answers(results),
               "q1": embeddings_updated_answers(results), "q2": frozen_embeddings_answers(results),
               "q3": projection_answers(results)}
    probes = results.get("probes") or {}
    if "full" in (probes.get("by_seed") or {}) and "untrained" in probes["by_seed"]:
        from .probe_answers import probe_answers

        answers.update(probe_answers(results, probes, results["config"]))
    answers["pairing"] = results["pairing"]
    return answers


def floor_answers(results: dict) -> dict:
    """The full model against its floors (unigram, untrained), and the untrained model against the unigram floor."""
    return st.holm_family({
        "full_vs_unigram": st.difference(results, "full", "unigram"),
        "full_vs_untrained": st.difference(results, "full", "untrained"),
        "untrained_vs_unigram": st.difference(results, "untrained", "unigram"),
    })


def embeddings_updated_answers(results: dict) -> dict:
    """Q1, are the input embeddings updated? Per-row drift against frequency (rows never input must not move), the
    frozen control, and the loss change allocation."""
    d = results["drift"]["full"]
    rows = results["rows"]["full"]
    by_seed = (results["rows"].get("by_seed") or {}).get("full") or {}
    rhos = [r["spearman_drift_vs_count"]["estimate"] for r in by_seed.values() if r["spearman_drift_vs_count"]]
    frozen = results["rows"]["frozen_embeddings"]
    return {
        "spearman_over_seeds": mean_over_seeds(rhos) if len(rhos) == len(by_seed) and rhos else None,
        "never_input_moved_any_seed": sum(r["never_input_moved"] or 0 for r in by_seed.values()) if by_seed else None,
        "steps": d["step"], "drift": {k: rounded(v) for k, v in d["drift"].items()},
        "grad_norm": {k: rounded(v) for k, v in d["grad_norm"].items()},
        "grad_norm_before_clipping": d.get("grad_norm_before_clipping"),
        "frozen_word_embeddings_drift": rounded(results["drift"]["frozen_embeddings"]["drift"].get("word_embeddings")),
        "embeddings_updated": d["drift"]["word_embeddings"] > 0,
        "rows": rows,
        "rows_frozen_moved": frozen["not_in_text"]["moved"] + sum(b["moved"] for b in frozen["bins"][1:]),
        "never_input_moved": rows.get("never_input", {}).get("moved"),
        "not_in_text_moved": rows["not_in_text"]["moved"],
        "weight_decay": results["settings"]["weight_decay"],
        "loss_allocation": loss_allocation_answers(results),
    }


def frozen_embeddings_answers(results: dict) -> dict:
    """Q2, is there any need to train the embeddings? Frozen against full (and at matched capacity) paired over
    seeds, their shares of the gain, the gap during training and word similarity during training."""
    matched = "frozen_embeddings_matched" in results["variants"]  # results from before the matched control lack it
    family = {"frozen_minus_full": st.difference(results, "frozen_embeddings", "full")}
    if matched:
        family["frozen_matched_minus_full"] = st.difference(results, "frozen_embeddings_matched", "full")
    gain = "frozen_embeddings_gain" in results["variants"]  # the learned-scale control came later still
    if gain:
        family["frozen_gain_minus_full"] = st.difference(results, "frozen_embeddings_gain", "full")
        family["frozen_gain_minus_frozen_matched"] = st.difference(results, "frozen_embeddings_gain",
                                                                   "frozen_embeddings_matched")
    return {
        **st.holm_family(family),
        "frozen_share_of_gain": st.share_of_gain(results, "frozen_embeddings"),
        "frozen_matched_share_of_gain": st.share_of_gain(results, "frozen_embeddings_matched") if matched else None,
        "frozen_gain_share_of_gain": st.share_of_gain(results, "frozen_embeddings_gain") if gain else None,
        "gain_full": st.curve_gap(results, "full"),
        "gain_frozen": st.curve_gap(results, "frozen_embeddings"),
        "gain_full_minus_frozen": st.curve_difference(results, "full", "frozen_embeddings"),
        "similarity": similarity_summary(results["dynamics"]) if results.get("dynamics") else None,
    }


def projection_answers(results: dict) -> dict:
    """Q3, W_Q, W_K and the embedding matrix: their shapes, and identity projections (at matched parameter count),
    QKV learned from the identity and attention alone against the full model, paired over seeds."""
    config = results["config"]
    H, C = config["num_attention_heads"], config["hidden_size"]
    return {
        "embedding_shape": [config["vocab_size"], C], "projection_shape": [C, C], "heads": H, "head_dim": C // H,
        "parameters": results["parameters"], "matched": results["matched"],
        **st.holm_family({"identity_minus_full": st.difference(results, "identity_qkv", "full"),
                          "from_identity_minus_full": st.difference(results, "qkv_from_identity", "full"),
                          "attention_only_minus_full": st.difference(results, "attention_only", "full")}),
        "identity_share_of_gain": st.share_of_gain(results, "identity_qkv"),
        "from_identity_share_of_gain": st.share_of_gain(results, "qkv_from_identity"),
        "attention_only_share_of_gain": st.share_of_gain(results, "attention_only"),
    }
