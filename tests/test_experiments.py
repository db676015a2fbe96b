"""`hf-minattn experiments --quick`: real training of every variant, probes, FINDINGS.md generated from numbers."""

import json
import math
import re

import pytest
import torch
from safetensors.torch import load_file

from hf_minattn.experiments import VARIANTS, main

pytestmark = pytest.mark.slow

NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.]*\w)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("experiments")
    assert main(["--quick", "--out", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text())


def numbers_in(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from numbers_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from numbers_in(v)
    elif isinstance(value, str):  # e.g. the command line and the machine description
        yield from (float(x) for x in NUMBER.findall(value))


def test_every_question_is_answered_with_its_figures(run):
    out, results = run
    findings = (out / "FINDINGS.md").read_text()
    sections = re.split(r"^## ", findings, flags=re.M)[1:]
    assert [s.split(".", 1)[0] for s in sections] == ["1", "2", "3", "4", "5", "6", "7"]
    for section in sections:
        assert "**" in section.split("\n\n", 2)[1], section[:200]  # a short answer in bold first
    for link in re.findall(r"\]\((figures/[^)]+)\)", findings):
        assert (out / link).stat().st_size > 1000, link
    for figure in ("loss_curves", "drift", "word_similarity", "head_diversity", "attention_graph"):
        assert f"figures/{figure}.png" in findings


def test_every_number_in_findings_comes_from_the_results(run):
    out, results = run
    known = set(numbers_in(results))
    body = [line for line in (out / "FINDINGS.md").read_text().splitlines()
            if not line.startswith("#") and not line.startswith("![")]
    found = [float(x) for line in body for x in NUMBER.findall(line)]
    assert len(found) > 50
    missing = [x for x in found if not any(math.isclose(x, k, rel_tol=1e-9, abs_tol=1e-12) for k in known)]
    assert not missing, missing


def test_variants_trained_on_the_same_footing(run):
    out, results = run
    variants = results["variants"]
    assert set(variants) == {v.name for v in VARIANTS}
    for name, metrics in variants.items():
        assert math.isfinite(metrics["eval_loss"]), name
        folder = out / "models" / name
        card = (folder / "README.md").read_text()
        assert "pipeline_tag: fill-mask" in card and f"| {metrics['eval_loss']:.4f} |" in card, name
    # training beats the untrained floor; every trained variant has a validation curve
    assert variants["full"]["eval_loss"] < variants["untrained"]["eval_loss"]
    assert all(len(variants[v.name]["curve"]["steps"]) >= 2 for v in VARIANTS if v.trained)

    models = {name: load_file(out / "models" / name / "model.safetensors") for name in variants}
    key = "minattn.embeddings.word_embeddings.weight"
    # the untrained floor is exactly the state training started from, and frozen embeddings stayed there
    assert torch.equal(models["frozen_embeddings"][key], models["untrained"][key])
    assert not torch.equal(models["full"][key], models["untrained"][key])
    assert not any("qkv_proj" in k for k in models["identity_qkv"])
    assert not any("mlp" in k for k in models["attention_only"])
    assert "lm_head.decoder.weight" in models["full"]  # untied: the output layer is not the embedding matrix


def test_answers_match_the_measurements(run):
    out, results = run
    answers = results["answers"]
    assert answers["q1"]["embeddings_updated"] and answers["q1"]["drift"]["word_embeddings"] > 0
    assert answers["q1"]["frozen_word_embeddings_drift"] == 0
    assert answers["q2"]["loss_frozen"] == results["variants"]["frozen_embeddings"]["eval_loss"]
    assert len(answers["q4"]["js_within_layer_trained"]) == results["config"]["num_hidden_layers"]
    graph = json.loads((out / "probes" / "full" / "attention_graph.json").read_text())
    assert graph["directed"] and answers["q7"]["nodes"] == len(graph["nodes"])
