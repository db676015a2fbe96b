"""`hf-minattn experiments --quick`: real training of every variant at 2 paired seeds, re-scoring, probes, and
FINDINGS.md generated from numbers. The one slow end-to-end test of the experiments."""

import json
import math
import os
import re

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from test_findings import numbers_missing

from hf_minattn.experiments import VARIANTS, main

pytestmark = pytest.mark.slow

NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.]*\w)")


def test_quick_run_end_to_end(tmp_path, capsys):
    out = tmp_path
    # A run killed mid-training leaves model-only states, which cannot resume it: the rerun trains it again.
    killed = out / "models" / "full" / "seed0" / "checkpoint-5"
    killed.mkdir(parents=True)
    (killed / "config.json").write_text("{}")
    assert main(["--quick", "--out", str(out)]) == 0
    assert not killed.exists() and "holds an unfinished run" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    findings = (out / "FINDINGS.md").read_text()

    # every question answered, short answer in bold first, figures present, every number from results.json
    sections = re.split(r"^## ", findings, flags=re.M)[1:]
    assert [s.split(".", 1)[0] for s in sections[:7]] == ["1", "2", "3", "4", "5", "6", "7"]
    for s in sections[:7]:
        assert "**" in s.split("\n\n", 2)[1], s[:200]
    for link in re.findall(r"\]\((figures/[^)]+)\)", findings):
        assert (out / link).stat().st_size > 1000, link
    for figure in ("loss_curves", "learning_dynamics", "row_drift", "drift", "head_diversity"):
        assert f"figures/{figure}.png" in findings
    assert "intervals need >= 3 seeds" in findings  # --quick has 2 seeds
    assert "similarity / relatedness subsets (Agirre et al.;" in sections[4]
    assert len(NUMBER.findall(findings)) > 50 and not numbers_missing(findings, results)  # rounded as shown

    # schema: per-seed rows for every variant, a top-level unigram floor
    seeds = results["seeds"]
    assert len(seeds) == 2 and isinstance(results["unigram_loss"], float)
    for v in VARIANTS:
        rows = results["variants"][v.name]["seeds"]
        assert [row["seed"] for row in rows] == seeds
        assert all(math.isfinite(row["eval_loss"]) and len(row["by_draw"]) == 3 for row in rows)
        if v.trained:
            # draw 0 on run_mlm's evaluation sequences reproduces run_mlm's own final loss (the Trainer averages
            # per-batch means, not per-token losses: a small difference remains)
            for row in rows:
                assert row["run_mlm_masks_loss_on_trainer_eval_set"] == pytest.approx(row["trainer_eval"]["loss"], abs=0.02)
                assert len(row["curve"]["steps"]) >= 2 and None not in row["curve"]["gain_over_unigram"]
    # identity variant matched in parameters within one FFN unit
    m = results["matched"]
    assert abs(results["parameters"]["identity_qkv"] - results["parameters"]["full"]) <= m["unit_parameters"]

    # word similarity during training: step 0 (untrained) and every evaluation, for full and frozen, every seed;
    # the saved states are deleted once scored
    dynamics = results["dynamics"]
    for name in ("full", "frozen_embeddings"):
        assert dynamics["variants"][name]["steps"] == [0, 5, 10, 15, 20]  # every evaluation (more than 2 states)
        assert sorted(map(int, dynamics["variants"][name]["seeds"])) == seeds
        assert not list((out / "models" / name).glob("seed*/checkpoint-*"))
    static = dynamics["variants"]["frozen_embeddings"]["seeds"][str(seeds[0])]["static"]
    assert len(static) == 5 and len(set(static)) == 1  # frozen embeddings: the same static vectors at every step
    assert (out / "similarity_dynamics.json").is_file()
    # the heads at the same states (measured before the states were deleted), cached beside, answered in section 4
    heads = results["head_dynamics"]
    assert heads["steps"] == [0, 5, 10, 15, 20] and sorted(map(int, heads["seeds"])) == seeds
    assert (out / "head_dynamics.json").is_file() and "figures/head_dynamics.png" in findings
    assert results["answers"]["q4"]["over_training"]["steps"] == heads["steps"]
    assert "unigram plateau" in sections[3]

    # paired runs: the untrained model of a seed is the state its runs started from
    key = "minattn.embeddings.word_embeddings.weight"
    for seed in seeds:
        model = {v.name: load_file(out / "models" / v.name / f"seed{seed}" / "model.safetensors") for v in VARIANTS}
        assert torch.equal(model["frozen_embeddings"][key], model["untrained"][key])
        assert not torch.equal(model["full"][key], model["untrained"][key])
        assert not any("qkv_proj" in k for k in model["identity_qkv"])
        assert not any("mlp" in k for k in model["attention_only"])
        assert "lm_head.decoder.weight" in model["full"]  # untied
    assert results["pairing"]["initialisation"]["frozen_embeddings"]["identical_share"] == 1.0
    for name in ("qkv_from_identity", "identity_qkv", "attention_only"):  # other shapes, same draws where shared
        assert results["pairing"]["initialisation"][name]["word_embeddings_identical"], name
    assert results["pairing"]["initialisation"]["attention_only"]["identical_share"] > 0.5

    # rows never input in training do not move (weight decay 0); the frozen control moved no row
    rows = results["rows"]["full"]
    assert rows["never_input"]["moved"] == 0
    assert results["answers"]["q1"]["rows_frozen_moved"] == 0
    assert np.load(out / "rows.npz")["counts"].size == results["config"]["vocab_size"]

    # Q2 at matched capacity: the frozen variant widened to the full model's trainable parameter count
    trainable, mf = results["trainable_parameters"], results["matched_frozen"]
    assert abs(trainable["frozen_embeddings_matched"] - trainable["full"]) <= mf["unit_parameters"] / 2
    assert trainable["frozen_embeddings"] < trainable["full"] == results["parameters"]["full"]

    # every probe at every seed (each run's files on disk), word pairs on one pair set over the seeds, the reference
    probes = results["probes"]
    for name in ("full", "untrained"):
        assert sorted(map(int, probes["by_seed"][name])) == seeds  # JSON keys are strings
        for seed in seeds:
            assert (out / "probes" / name / f"seed{seed}" / "probes.json").is_file()
    assert probes["reference"]["name"] == "all-MiniLM-L6-v2"
    comparisons = results["answers"]["q5"]["comparisons"]
    assert {"last_vs_word2vec", "last_vs_untrained", "last_vs_reference"} <= set(comparisons)
    for c in comparisons.values():
        assert c["method"] == "hierarchical" and c["n"] == len(seeds) and c["p_holm"] >= c["p"]
        assert c["verdict"] in ("higher", "lower", "equivalent", "unresolved")
    assert results["answers"]["q6"]["senses"]["comparisons"]["vs_chance"]["df"] == len(seeds) - 1
    assert len(results["answers"]["q7"]["strongest"]) == 5
    # no path of the machine that made it (the command line is what the user typed)
    assert not any(p.startswith(str(out)) or os.path.isabs(p) for v in results["folders"].values() for p in v.values())
