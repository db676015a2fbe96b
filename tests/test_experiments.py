"""`hf-minattn experiments --quick`: real training of every variant at 2 paired seeds, re-scoring, probes, and
FINDINGS.md generated from numbers. One quick run (a module fixture, a few minutes), read by each test below."""

import contextlib
import io
import json
import math
import os
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from test_findings import numbers_missing

from hf_minattn.experiments import VARIANTS, main

pytestmark = pytest.mark.slow

NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.]*\w)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One quick run into a folder where a run killed mid-training left a model-only state (checkpoint-5 of the full
    model, seed 0): the folder, the killed state's path, results.json, FINDINGS.md and what the run printed."""
    out = tmp_path_factory.mktemp("experiments")
    killed = out / "models" / "full" / "seed0" / "checkpoint-5"
    killed.mkdir(parents=True)
    (killed / "config.json").write_text("{}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["--quick", "--out", str(out)]) == 0
    return SimpleNamespace(out=out, killed=killed, printed=printed.getvalue(),
                           results=json.loads((out / "results.json").read_text()),
                           findings=(out / "FINDINGS.md").read_text())


def test_every_run_reads_the_one_tokenizer_trained_before_the_runs(run):
    """The tokenizer is trained once, before any run (so the first two runs start together), and every trained and
    untrained model holds exactly its vocabulary: their input rows are comparable word for word."""
    from transformers import AutoTokenizer

    shared = run.out / "tokenizer"
    vocab = AutoTokenizer.from_pretrained(shared).get_vocab()
    assert "training the tokenizer every run reads" in run.printed
    # each finished run says how many are done and the training time left; the last, none
    done = re.findall(r"(\d+) of (\d+) runs done(?:, about (\d+) min of training left)?", run.printed)
    runs = len(run.results["seeds"]) * sum(v.trained for v in VARIANTS)
    assert sorted(int(k) for k, _, _ in done) == list(range(1, runs + 1)) and {n for _, n, _ in done} == {str(runs)}
    assert all((m == "") == (int(k) == runs) for k, _, m in done)  # the time left on every line but the last
    for variant in VARIANTS:
        for seed in run.results["seeds"]:
            assert AutoTokenizer.from_pretrained(run.out / "models" / variant.name / f"seed{seed}").get_vocab() == vocab
            if variant.trained:
                command = (run.out / "logs" / f"{variant.name}-seed{seed}.log").read_text().split("\n", 1)[0]
                assert f"--tokenizer_name {shared}" in command, command


def test_a_killed_runs_model_only_states_are_trained_again(run):
    """Model-only states cannot resume a run: the rerun trains that model again and says why."""
    assert not run.killed.exists() and "holds an unfinished run" in run.printed


def test_findings_answer_every_question_with_numbers_from_the_results(run):
    """Every question answered, the short answer in bold first, the figures linked and on disk, and every number in
    the prose found in results.json."""
    findings, out = run.findings, run.out
    sections = re.split(r"^## ", findings, flags=re.M)[1:]
    assert [s.split(".", 1)[0] for s in sections[:7]] == ["1", "2", "3", "4", "5", "6", "7"]
    for s in sections[:7]:
        assert "**" in s.split("\n\n", 2)[1], s[:200]
    for link in re.findall(r"\]\((figures/[^)]+)\)", findings):
        assert (out / link).stat().st_size > 1000, link
    for figure in ("loss_curves", "learning_dynamics", "row_drift", "drift", "head_diversity", "head_dynamics"):
        assert f"figures/{figure}.png" in findings
    assert "intervals need >= 3 seeds" in findings  # --quick has 2 seeds
    assert "similarity / relatedness subsets (Agirre et al.;" in sections[4]
    assert "unigram plateau" in sections[3]
    assert len(NUMBER.findall(findings)) > 50 and not numbers_missing(findings, run.results)  # rounded as shown


def test_every_variant_is_scored_at_every_seed_and_matched_in_size(run):
    """Per-seed rows for every variant (three mask draws; draw 0 on run_mlm's evaluation sequences gives run_mlm's own
    final loss), a top-level unigram floor, the identity variant within one FFN unit of the full model's parameters
    and the matched frozen variant within half a unit of its trainable parameters."""
    results = run.results
    seeds = results["seeds"]
    assert len(seeds) == 2 and isinstance(results["unigram_loss"], float)
    for v in VARIANTS:
        rows = results["variants"][v.name]["seeds"]
        assert [row["seed"] for row in rows] == seeds
        assert all(math.isfinite(row["eval_loss"]) and len(row["by_draw"]) == 3 for row in rows)
        for row in rows if v.trained else ():
            # the Trainer averages per-batch means, not per-token losses: a small difference remains
            assert row["run_mlm_masks_loss_on_trainer_eval_set"] == pytest.approx(row["trainer_eval"]["loss"], abs=0.02)
            # its per-token mean is the re-scoring's on the same tokens: run_mlm evaluated sequences 32-63
            # (--skip_eval_samples), masked as in the whole split, as the re-scoring masks them
            assert row["run_mlm_masks_loss_on_trainer_eval_set"] == pytest.approx(row["trainer_eval"]["token_loss"],
                                                                                  abs=1e-4)
            assert len(row["curve"]["steps"]) >= 2 and None not in row["curve"]["gain_over_unigram"]
    m = results["matched"]
    assert abs(results["parameters"]["identity_qkv"] - results["parameters"]["full"]) <= m["unit_parameters"]
    trainable, mf = results["trainable_parameters"], results["matched_frozen"]
    assert abs(trainable["frozen_embeddings_matched"] - trainable["full"]) <= mf["unit_parameters"] / 2
    assert trainable["frozen_embeddings"] < trainable["full"] == results["parameters"]["full"]


def test_similarity_and_heads_are_measured_at_every_evaluation_then_the_states_go(run):
    """Word similarity at step 0 and every evaluation, for full and frozen at every seed (the frozen run's static
    vectors the same at every step); the heads at the same states, cached beside; the saved states deleted after."""
    results, out, seeds = run.results, run.out, run.results["seeds"]
    dynamics = results["dynamics"]
    for name in ("full", "frozen_embeddings"):
        assert dynamics["variants"][name]["steps"] == [0, 5, 10, 15, 20]  # every evaluation (more than 2 states)
        assert sorted(map(int, dynamics["variants"][name]["seeds"])) == seeds
        assert not list((out / "models" / name).glob("seed*/checkpoint-*"))
    static = dynamics["variants"]["frozen_embeddings"]["seeds"][str(seeds[0])]["static"]
    assert len(static) == 5 and len(set(static)) == 1
    assert (out / "similarity_dynamics.json").is_file()
    heads = results["head_dynamics"]
    assert heads["steps"] == [0, 5, 10, 15, 20] and sorted(map(int, heads["seeds"])) == seeds
    assert (out / "head_dynamics.json").is_file()
    assert results["answers"]["q4"]["over_training"]["steps"] == heads["steps"]
    early = heads["early"]  # the finer grid, beside the shuffled-label control at the same steps
    assert early["steps"] == [0, 2, 4, 6, 8, 10] and all(set(runs) == {"full", "shuffled_labels"} for runs in early["seeds"].values())
    assert results["answers"]["q4"]["over_training"]["early"]["margin"] == 2 and not list(out.glob("models/*/seed*/early_states"))


def test_the_runs_of_a_seed_start_from_its_untrained_model(run):
    """Paired runs: the untrained model of a seed is the state its runs started from (the frozen run keeps its word
    embeddings), other shapes share the draws they can; rows never input do not move, nor any row of the frozen run."""
    results, out = run.results, run.out
    key = "minattn.embeddings.word_embeddings.weight"
    for seed in results["seeds"]:
        model = {v.name: load_file(out / "models" / v.name / f"seed{seed}" / "model.safetensors") for v in VARIANTS}
        assert torch.equal(model["frozen_embeddings"][key], model["untrained"][key])
        assert not torch.equal(model["full"][key], model["untrained"][key])
        assert not any("qkv_proj" in k for k in model["identity_qkv"])
        assert not any("mlp" in k for k in model["attention_only"])
        assert "lm_head.decoder.weight" in model["full"]  # untied
    initialisation = results["pairing"]["initialisation"]
    assert initialisation["frozen_embeddings"]["identical_share"] == 1.0
    for name in ("qkv_from_identity", "identity_qkv", "attention_only"):
        assert initialisation[name]["word_embeddings_identical"], name
    assert initialisation["attention_only"]["identical_share"] > 0.5
    assert results["rows"]["full"]["never_input"]["moved"] == 0  # weight decay 0
    assert results["answers"]["q1"]["rows_frozen_moved"] == 0
    assert np.load(out / "rows.npz")["counts"].size == results["config"]["vocab_size"]


def test_every_probe_ran_at_every_seed_and_the_comparisons_are_paired(run):
    """Every probe at every seed (each run's files on disk), the pretrained reference, word pairs compared by a
    crossed bootstrap over the seeds and pairs with Holm's correction, and no path of the machine in results.json."""
    results, out, seeds = run.results, run.out, run.results["seeds"]
    probes = results["probes"]
    for name in ("full", "untrained"):
        assert sorted(map(int, probes["by_seed"][name])) == seeds  # JSON keys are strings
        for seed in seeds:
            assert (out / "probes" / name / f"seed{seed}" / "probes.json").is_file()
    assert probes["reference"]["name"] == "all-MiniLM-L6-v2"
    comparisons = results["answers"]["q5"]["comparisons"]
    assert {"last_vs_word2vec", "last_vs_untrained", "last_vs_reference", "last_vs_word2vec_matched"} <= set(comparisons)
    matched = probes["word2vec_matched"]  # as many passes as the model made: --quick makes less than one
    assert matched["epochs"] == round(matched["model_passes"], 2) < 1 and matched["training_tokens"] == 20 * 16 * 64
    if (os.cpu_count() or 1) >= 2:  # both word2vecs of each seed trained on the runs' workers; the probes read them
        assert f"training the probes' {2 * len(seeds)} word2vecs with the runs, one thread each" in run.printed
        assert "word2vecs for the probes, 2 at a time" not in run.printed  # nothing left for the probe phase
        assert all(probes["by_seed"]["full"][str(s)]["word2vec"]["word2vec_cached"] for s in seeds)
    for c in comparisons.values():
        assert c["method"] == "crossed" and c["n"] == len(seeds) and c["p_holm"] >= c["p"]
        assert c["verdict"] in ("higher", "lower", "equivalent", "unresolved")
    assert results["answers"]["q6"]["senses"]["comparisons"]["vs_chance"]["df"] == len(seeds) - 1
    # the reference beside ours: one model, so its own intervals rest on its pairs and homonyms alone
    reference = results["answers"]["q5"]["reference_scores"]
    assert reference["rho"]["n"] == reference["rho"]["pairs"] and set(reference["comparisons"]) == {"vs_word2vec", "vs_static"}
    senses = results["answers"]["q6"]["senses"]["reference"]
    assert senses["vs_chance"]["method"] == "crossed" and senses["vs_chance"]["n"] == senses["homonyms"] > 2
    assert "in a model trained at scale (all-MiniLM-L6-v2)" in run.findings.split("\n## ")[0]
    circuits = results["answers"]["q3_circuits"]["reference"]  # its layer-0 circuits, beside ours in Q3
    assert circuits["heads"] == 12 and len(circuits["identity"]) == 12 and circuits["copies"] is not None
    assert "- In a model trained at scale (all-MiniLM-L6-v2, measured the same way on its own" in run.findings
    assert len(results["answers"]["q7"]["strongest"]) == 5
    mixing = results["answers"]["q7"]["mixing"]  # Q7 over many sentences, the reference beside ours
    assert mixing["sentences"] == 30 and mixing["seeds"] == len(seeds)
    assert mixing["reference"]["name"] == "all-MiniLM-L6-v2"
    assert all(0 < w["estimate"] < 1 for w in mixing["residual_weight"]["full"])
    assert mixing["comparisons"]["full_minus_uniform_measured"]["method"] == "crossed"
    # the command line is what the user typed; the folders are relative
    assert not any(p.startswith(str(out)) or os.path.isabs(p) for v in results["folders"].values() for p in v.values())


def test_scoring_is_kept_with_what_it_was_computed_from(run):
    """scoring.json keeps the re-scored numbers beside their key: the seeds, the settings scoring reads, and each
    model file's size and time. A model written again, or another setting, gives another key (and a new scoring)."""
    from hf_minattn.experiments.caches import rows_key, scoring_key
    from hf_minattn.experiments.training import SETTINGS

    kept = json.loads((run.out / "scoring.json").read_text())
    folders = {name: {int(s): str(run.out / p) for s, p in v.items()} for name, v in run.results["folders"].items()}
    seeds, settings = run.results["seeds"], dict(SETTINGS["quick"])
    assert kept["key"] == scoring_key(folders, settings, seeds) == rows_key(str(run.out / "rows.npz"))
    assert kept["scored"]["epochs_touched"] == run.results["epochs_touched"]
    assert scoring_key(folders, {**settings, "mask_draws": 2}, seeds) != kept["key"]
    model = os.path.join(folders["attention_only"][seeds[-1]], "model.safetensors")
    info = os.stat(model)
    os.utime(model, ns=(info.st_atime_ns, info.st_mtime_ns + 1))
    try:
        assert scoring_key(folders, settings, seeds) != kept["key"]
    finally:
        os.utime(model, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_rerun_reads_every_probe_and_the_scoring_back_instead_of_computing_them_again(run):
    """Each probed run, the reference encoder's too, keeps what the answers read of it beside its report (kept.json,
    kept.npz), and the scoring phase its numbers in scoring.json: a rerun into the same folder (after a kill, say)
    reads them back, and the numbers are the first call's. Last in this module: it rewrites the run's results.json."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["--quick", "--out", str(run.out)]) == 0
    reused = re.findall(r"(\w+), seed (\d+): probed by an earlier call", printed.getvalue())
    assert sorted(reused) == sorted((name, str(seed)) for seed in run.results["seeds"] for name in ("full", "untrained"))
    assert "scoring: read back from scoring.json" in printed.getvalue()
    assert re.search(r"the reference encoder [\w-]+: probed by an earlier call", printed.getvalue())
    assert "scoring seed" not in printed.getvalue()
    again = json.loads((run.out / "results.json").read_text())
    # "mixing" is computed again, with the reference encoder loaded afresh: the first call's, loaded once and probed
    # first, gave the same numbers
    for key in ("by_seed", "extras", "word_pairs", "rollout", "word2vec_matched", "reference", "mixing"):
        assert again["probes"][key] == run.results["probes"][key], key
    for key in ("variants", "rows", "unigram", "epochs_touched", "pairing"):
        assert again[key] == run.results[key], key
