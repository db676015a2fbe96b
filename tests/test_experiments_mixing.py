"""Q7 over many sentences (experiments/mixing.py): the comparisons' verdicts follow the per-sentence numbers, the
intervals treat the sentences as a sample shared by every seed, and FINDINGS' answer and section follow the verdicts."""

import copy

import numpy as np
import pytest
from test_findings import full_results, numbers_missing, section, summary_line

from hf_minattn.experiments.findings import render_findings
from hf_minattn.experiments.findings_answers import ANSWERS
from hf_minattn.experiments.mixing import MIXING_MARGIN, mixing_answers

SEEDS, SENTENCES = (0, 1, 2), 40


def columns(measured, uniform, weight=0.9):
    return {"measured": list(measured), "half": list(np.asarray(measured) - 0.05),
            "uniform_measured": list(uniform), "uniform_half": list(np.asarray(uniform) - 0.05),
            "residual_weight": [weight, weight - 0.1]}


def mixing(delta_uniform=0.1, delta_untrained=0.05, reference_delta=0.2):
    """Per-sentence self-shares: uniform attention's differ by sentence (its length), the trained model adds
    `delta_uniform` to them with a little noise per seed and sentence, the untrained one `delta_uniform -
    delta_untrained`."""
    rng = np.random.default_rng(0)
    uniform = rng.uniform(0.3, 0.6, SENTENCES)
    out = {"sentences": SENTENCES, "full": {}, "untrained": {}}
    for seed in SEEDS:
        noise = rng.normal(0, 0.005, SENTENCES)
        out["full"][seed] = columns(uniform + delta_uniform + noise, uniform)
        # noise of its own: with the full model's, every seed's difference was exactly delta_untrained (no spread)
        out["untrained"][seed] = columns(uniform + delta_uniform - delta_untrained + rng.normal(0, 0.005, SENTENCES),
                                         uniform, 0.8)
    out["reference"] = {**columns(uniform + reference_delta, uniform, 0.7), "name": "all-MiniLM-L6-v2"}
    return out


def test_verdicts_follow_the_per_sentence_differences():
    up, down, same = (mixing_answers(mixing(d), n_resamples=300) for d in (0.1, -0.1, 0.0))
    assert up["comparisons"]["full_minus_uniform_measured"]["verdict"] == "higher"
    assert down["comparisons"]["full_minus_uniform_measured"]["verdict"] == "lower"
    assert same["comparisons"]["full_minus_uniform_measured"]["verdict"] == "equivalent"  # noise << margin
    assert up["comparisons"]["full_minus_untrained_measured"]["verdict"] == "higher"
    assert up["comparisons"]["full_minus_uniform_measured"]["family_size"] == 4
    assert up["comparisons"]["full_minus_uniform_measured"]["estimate"] == pytest.approx(0.1, abs=0.005)
    assert up["reference"]["measured"]["minus_uniform"]["verdict"] == "higher"
    assert up["residual_weight"]["full"][0]["estimate"] == pytest.approx(0.9)
    assert same["margin"] == MIXING_MARGIN and up["sentences"] == SENTENCES and up["seeds"] == len(SEEDS)


def test_a_shift_shared_by_every_seed_widens_the_interval_as_one_sentence_sample():
    """The sentences are the same at every seed: a difference that varies from sentence to sentence but not from
    seed to seed must keep the sentences' spread in its interval (crossed resampling), not shrink it by the seeds."""
    data = mixing(0.1)
    spread = np.random.default_rng(1).normal(0, 0.2, SENTENCES)
    for seed in SEEDS:
        data["full"][seed]["measured"] = list(np.asarray(data["full"][seed]["uniform_measured"]) + 0.1 + spread)
    d = mixing_answers(data, n_resamples=1000)["comparisons"]["full_minus_uniform_measured"]
    half_width = 1.96 * spread.std(ddof=1) / np.sqrt(SENTENCES)
    assert (d["high"] - d["low"]) / 2 == pytest.approx(half_width, rel=0.2)


def with_mixing(results, **kwargs):
    results = copy.deepcopy(results)
    results["answers"]["q7"]["mixing"] = mixing_answers(mixing(**kwargs), n_resamples=300)
    return results


def test_the_answer_and_its_section_follow_the_verdicts():
    base = full_results()
    more, less = with_mixing(base, delta_uniform=0.1), with_mixing(base, delta_uniform=-0.1)
    answer = ANSWERS[6][2]
    own = "rollout attributes to its own input in our 1k-parameter model at this scale is"
    assert f"{own} larger than uniform attention's" in answer(more)
    assert f"{own} smaller than uniform attention's" in answer(less)
    assert "in a model trained at scale (all-MiniLM-L6-v2)" in answer(more)
    for results in (more, less):
        text = render_findings(results, {})
        assert f"**{answer(results)}**" in section(text, 7) and answer(results) in summary_line(text, 7)
        assert "residual weight measured" in section(text, 7) and "crossed bootstrap" in section(text, 7)
        assert "not a plain masked language model" in section(text, 7)
        assert numbers_missing(text, results) == []
