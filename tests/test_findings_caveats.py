"""FINDINGS' sentences say what their own numbers show, and each flips when the numbers do: the Holm caveat beside an
unadjusted interval that excludes 0, a difference below its margin, Q7 at the fixed residual weight, Q4's timing
read against the heads' own start, and the labels a reviewer asked for. Every case starts from a real run's
results.json, the first confirmation's (seeds 3-7, PROTOCOL.md version 1: a fixed file), and moves one number; the
README's phrases are checked against the run README answers from, docs/findings/results.json."""

import copy
import json
from pathlib import Path

import pytest

from hf_minattn.experiments.findings_answers import q4_answer, q5_answer, q7_answer
from hf_minattn.experiments.findings_format import caveat
from hf_minattn.experiments.findings_heads import own_start_lines
from hf_minattn.experiments.findings_probes import by_layer_lines
from hf_minattn.experiments.probe_answers import holm_q4

FINDINGS = Path(__file__).resolve().parent.parent / "docs" / "findings"
RESULTS = FINDINGS / "confirmation-v1" / "results.json"


@pytest.fixture
def results():
    return json.loads(RESULTS.read_text())


def comparison(estimate, low, high, verdict, family_size=7, p_holm=0.1, equivalent=False, margin=0.05):
    return {"estimate": estimate, "low": low, "high": high, "n": 5, "verdict": verdict, "family_size": family_size,
            "p_holm": p_holm, "p": p_holm / family_size, "margin": margin,
            "tost": {"equivalent": equivalent, "margin": margin}}


def test_the_caveat_names_holm_only_where_the_unadjusted_interval_excludes_0():
    assert "Holm's adjustment for 7 tests leaves p 0.1" in caveat(comparison(0.1, 0.001, 0.19, "unresolved"))
    assert caveat(comparison(0.1, -0.01, 0.19, "unresolved")) == ""  # the interval itself includes 0
    # a test alone (a crossed comparison, whose p is also the seeds' t-test's): no adjustment to blame, its p named
    alone = {**comparison(0.1, 0.001, 0.19, "unresolved", family_size=1), "p": 0.2}
    assert caveat(alone) == " (its 95% interval [0.001, 0.19] excludes 0, but its p, 0.2, does not reach 0.05)"
    assert caveat({**alone, "low": -0.01}) == ""
    assert caveat({**alone, "n": 1, "low": 0.1, "high": 0.1}) == ""  # one seed: its [x, x] excludes nothing
    assert "margin" in caveat(comparison(0.008, 0.007, 0.009, "higher", p_holm=0.001, equivalent=True, margin=0.02))
    assert caveat(comparison(0.08, 0.07, 0.09, "higher", p_holm=0.001)) == ""
    assert caveat(None) == ""


def test_the_caveat_says_when_the_unadjusted_p_itself_does_not_reach_alpha():
    """A percentile interval and its bootstrap p can part at the boundary (25 of 1000 draws at or below 0: p 0.05,
    the interval's end just above 0); Holm's adjustment is then not what left it unresolved."""
    at_boundary = {**comparison(0.1, 0.0001, 0.19, "unresolved"), "p": 0.05}
    assert caveat(at_boundary) == (" (its unadjusted 95% interval excludes 0, but its p does not reach 0.05: 0.05 "
                                   "before Holm's adjustment for 7 tests, 0.1 after)")
    assert "leaves p 0.1" in caveat({**at_boundary, "p": 0.0143})


def test_a_hierarchical_verdict_that_would_not_survive_the_widening_is_not_stated(results):
    """The hierarchical draw's word-pair intervals are up to 2.1x too narrow: a "higher" whose interval widened 2.1x
    about its estimate reaches 0 is said not shown, in the answer and in the table's verdict."""
    from hf_minattn.experiments.findings_format import verdict_cell

    matched = results["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"]  # 0.129 [0.0558, 0.2]
    assert verdict_cell(matched) == "higher, not if 2.1x as wide"
    assert ("not shown above a word2vec trained for 1 epoch where the model made 1.43 passes over the text: above "
            "only by an interval drawn too narrow") in q5_answer(results)
    wide = copy.deepcopy(results)
    wide["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"]["low"] = 0.1  # widened: 0.068, still above 0
    assert "(tuned; above a word2vec trained for 1 epoch where" in q5_answer(wide)
    assert verdict_cell(wide["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"]) == "higher"
    crossed = copy.deepcopy(results)
    crossed["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"]["method"] = "crossed"  # nothing to widen
    assert "(tuned; above a word2vec" in q5_answer(crossed)
    more = copy.deepcopy(results)
    more["answers"]["q5"]["word2vec_matched"]["epochs"] = 2
    assert "a word2vec trained for 2 epochs where the model made 1.43 passes" in q5_answer(more)


def test_q5_says_why_an_interval_beside_not_told_apart_excludes_0(results):
    assert "not told apart from the untrained model's (its unadjusted 95% interval excludes 0" in q5_answer(results)
    moved = copy.deepcopy(results)
    moved["answers"]["q5"]["comparisons"]["last_vs_untrained"]["low"] = -0.01
    assert "not told apart from the untrained model's and below" in q5_answer(moved)


def test_q7_gives_the_fixed_weight_where_it_turns_the_comparison_around(results):
    text = q7_answer(results)
    assert "smaller than the untrained model's, whose layers measure larger residual weights" in text
    assert "(with the residual weight fixed at 0.5 in both: larger than it)" in text
    same = copy.deepcopy(results)
    same["answers"]["q7"]["mixing"]["comparisons"]["full_minus_untrained_half"]["verdict"] = "lower"
    assert "fixed at 0.5" not in q7_answer(same) and "smaller than the untrained model's;" in q7_answer(same)
    swapped = copy.deepcopy(results)
    weights = swapped["answers"]["q7"]["mixing"]["residual_weight"]
    weights["full"], weights["untrained"] = weights["untrained"], weights["full"]
    assert "whose layers measure smaller residual weights" in q7_answer(swapped)


def test_q7_says_when_the_reference_differs_by_less_than_the_margin(results):
    assert "larger than uniform attention's (by less than the ±0.02 margin" in q7_answer(results)
    wider = copy.deepcopy(results)
    wider["answers"]["q7"]["mixing"]["reference"]["measured"]["minus_uniform"]["tost"]["equivalent"] = False
    assert q7_answer(wider).endswith("larger than uniform attention's")


def early_grid(results):
    return results["answers"]["q4"]["over_training"]["early"]


def test_q4_timing_is_read_against_the_heads_own_start_too(results):
    early = early_grid(results)
    assert "stays above its own step-0 interval from step 60 on, before the plateau exit" in own_start_lines(early)[1]
    assert "the control's divergence falls from 0.0023" in own_start_lines(early)[1]
    assert "but not read against the heads' own start" not in q4_answer(results)
    late = copy.deepcopy(results)
    for step in early_grid(late)["divergence"][:8]:  # steps 0-140 at the start's level: the rise comes at 160
        step.update(low=0.0022, high=0.0024)
    assert "from step 160 on, after the plateau exit" in own_start_lines(early_grid(late))[1]
    assert q4_answer(late).endswith("(but not read against the heads' own start: then not before it)")
    never = copy.deepcopy(results)
    early_grid(never)["plateau_exit"] = None  # no seed left the plateau on the grid: no exit to read against
    assert "from step 60 on; the loss leaves its plateau at no step of this grid" in own_start_lines(early_grid(never))[1]


def test_the_q4_family_holds_the_timing_beside_the_layers(results):
    q4 = copy.deepcopy(results["answers"]["q4"])
    timing = q4["over_training"]["early"]["specialisation_minus_exit"]
    timing["p"] = 1e-12  # the smallest of the five: Holm multiplies it by 5
    holm_q4(q4)
    assert timing["family_size"] == 5 and q4["js_trained_minus_init"]["layer_0"]["family_size"] == 5
    assert timing["p_holm"] == pytest.approx(5e-12)
    alone = copy.deepcopy(results["answers"]["q4"])
    del alone["over_training"]["early"]  # no early grid: the layers stay a family of 4
    assert holm_q4(alone)["js_trained_minus_init"]["layer_0"]["family_size"] == 4


def test_the_by_layer_table_shows_every_layer_of_a_deeper_reference(results):
    q6 = results["answers"]["q6"]
    rows = [line for line in by_layer_lines(q6) if line.startswith("| ")][2:]
    assert len(rows) == len(q6["reference_adjusted_self_similarity"]) == 7
    assert rows[-1].startswith("| 6 | - | - | - | 0.6")


def test_the_position_control_is_placed_against_the_untrained_model_by_the_numbers(results):
    from hf_minattn.experiments.findings_probes import q6_section

    def line(r):
        return next(l for l in q6_section(r["answers"]["q6"], lambda *a: "") if "sees no vectors" in l)

    assert "length: 0.629, below the untrained model's): better over seeds alone (this run kept no" in line(results)
    moved = copy.deepcopy(results)
    moved["answers"]["q6"]["senses"]["position_accuracy"] = 0.8
    assert "length: 0.8, above the untrained model's)" in line(moved)


def test_the_readme_margin_phrase_stands_on_the_stored_tost():
    """README's short answers that rest on more than a verdict (test_findings checks those): all-MiniLM-L6-v2's excess
    over uniform attention below the margin (the stored TOST), the untrained model's larger residual weights, Q5's
    "not told apart" and its word2vec of as many passes."""
    readme = (FINDINGS.parents[1] / "README.md").read_text()
    results = json.loads((FINDINGS / "results.json").read_text())
    assert "in all-MiniLM-L6-v2 larger than uniform attention's, by less than the 0.02 margin" in readme
    tested = results["answers"]["q7"]["mixing"]["reference"]["measured"]["minus_uniform"]
    assert tested["tost"]["equivalent"] and tested["margin"] == 0.02
    assert "smaller than the untrained model's, whose layers weigh their residual path more" in readme
    weights = results["answers"]["q7"]["mixing"]["residual_weight"]
    assert all(u["low"] > t["high"] for t, u in zip(weights["full"], weights["untrained"]))
    # Q5's "not told apart": an interval above 0 left unresolved by Holm alone must say so; one spanning 0 need not
    q5 = results["answers"]["q5"]["comparisons"]["last_vs_untrained"]
    assert q5["verdict"] == "unresolved" and ("after Holm's adjustment its last layer" in readme) == (q5["low"] > 0)
    matched = results["answers"]["q5"]["word2vec_matched"]  # README: "a word2vec trained for as many passes"
    assert "trained for as many passes over the text" in readme and matched["epochs"] == matched["model_passes"]


def test_the_whole_runs_grid_is_reported_beside_the_early_one(results):
    from hf_minattn.experiments.findings_heads import coarse_beside_early

    over = results["answers"]["q4"]["over_training"]
    line = coarse_beside_early(over)[1]
    assert "every 120 steps" in line and "specialisation - exit 0 [0, 0] steps" in line
    assert line.endswith("cannot order the two within one of its steps, hence the early grid above.")
    before = copy.deepcopy(over)
    before["specialisation_minus_exit"].update(estimate=-240.0, low=-300.0, high=-180.0, verdict="lower")
    assert coarse_beside_early(before)[1].endswith("As on the early grid above.")
    before["early"]["specialisation_minus_exit"]["verdict"] = "higher"
    assert coarse_beside_early(before)[1].endswith("Unlike the early grid above.")


def test_the_heads_across_seeds_are_described_not_tested(results):
    """The seed pairs share seeds: their rows leave the comparisons table (no p, no verdict) for a descriptive one,
    and the count of layers reads their intervals."""
    from hf_minattn.experiments.findings_heads import q4_section

    text = "\n".join(q4_section(results["answers"]["q4"], lambda *a: ""))
    assert "within-layer - matched across seeds | " not in text.split("| layer | within-layer - matched")[0]
    assert "| 3 | 0.0794 | [0.0215, 0.137] |" in text and "these rows describe, they do not test" in text
    # the committed run measured no null for the minimum matching: its positive gaps are not read as recurrence
    assert "This run measured no null for it" in text and "may recur" not in text


def test_q1_names_gradient_norms_after_clipping_and_the_straight_line_of_loss_allocation(results):
    """A run whose drift summary does not say its gradient norms were read before clipping (the committed ones) prints
    them as after clipping; loss allocation over intervals of more than one step says it is not Lan et al.'s
    step-by-step split."""
    from hf_minattn.experiments.findings_training import q1_section

    text = "\n".join(q1_section(results, lambda *a: ""))
    assert "mean gradient norm after clipping to max_grad_norm" in text and "| mean gradient norm after clipping |" in text
    assert "integrated along the straight line across the interval's 15 steps, not step by step" in text
    before = copy.deepcopy(results)
    before["answers"]["q1"]["grad_norm_before_clipping"] = True
    before["answers"]["q1"]["loss_allocation"]["every"] = 1
    text = "\n".join(q1_section(before, lambda *a: ""))
    assert "mean gradient norm ||dL/dW|| (before clipping)" in text and "after clipping" not in text
    assert "straight line" not in text and "each interval of 1 optimizer steps" in text


def test_every_sentence_reads_a_hierarchical_verdict_through_the_widening():
    """compared(), the table's verdict and the reference line state a hierarchical verdict only where a 2.1x wider
    interval keeps it; an equivalence only where its 90% interval 2.1x as wide stays inside the margins."""
    from hf_minattn.experiments.findings_format import compared, verdict_cell
    from hf_minattn.experiments.word_pairs import stated_verdict

    higher = {**comparison(0.129, 0.0558, 0.2, "higher", p_holm=0.007), "method": "hierarchical"}
    assert compared(higher, "closer", "as close", "further") == (
        "not resolved at this scale (closer only by an interval drawn too narrow, which would reach 0 if 2.1x as wide)")
    assert compared({**higher, "method": "crossed"}, "closer", "as close", "further") == "closer"
    same = {**comparison(0.01, -0.02, 0.04, "equivalent", p_holm=0.5), "method": "hierarchical",
            "tost": {"equivalent": True, "low": -0.015, "high": 0.035, "margin": 0.05}}
    assert stated_verdict(same) == "unresolved"  # widened 90%: [-0.044, 0.0625], past +0.05
    assert verdict_cell(same) == "equivalent within ±0.05, not if 2.1x as wide"
    assert "whose 90% interval 2.1x as wide would leave the ±0.05 margins" in compared(same, "a", "as close", "b")
    narrow_tost = {**same, "tost": {"equivalent": True, "low": 0.0, "high": 0.02, "margin": 0.05}}
    assert stated_verdict(narrow_tost) == "equivalent" and verdict_cell(narrow_tost) == "equivalent within ±0.05"


@pytest.mark.parametrize("gain_low, gain_high, says", [
    (1.31, 1.37, "by more than copying the 10% of masked tokens the masking leaves unchanged could give (0.704 nats): "
                 "it uses context"),
    (0.40, 0.69, "but not surely by more than copying the 10% of masked tokens the masking leaves unchanged could give "
                 "(0.704 nats): that it uses context is not shown"),
    (0.60, 0.80, "that it uses context is not shown")])
def test_below_the_floor_says_context_only_beyond_the_copying_bound(results, gain_low, gain_high, says):
    """A full model below the unigram floor uses context only if its gain passes what copying the unchanged masked
    tokens could give (10% x the floor 7.04): below the floor alone could be copying (docs/training.md)."""
    from hf_minattn.experiments.findings_training import loss_section

    full = results["answers"]["floors"]["full_vs_unigram"]
    full.update(estimate=-(gain_low + gain_high) / 2, low=-gain_high, high=-gain_low, verdict="lower")
    text = "\n".join(loss_section(results, lambda name, caption: f"![{caption}]({name})"))
    assert says in text.split("The full model is below the unigram floor", 1)[1].split(". ", 1)[0]
    assert ("nats): it uses context" in text) == (gain_low > 0.704)


def test_one_pair_of_seeds_counts_no_layer_as_recurring():
    """With one pair of seeds (the quick preset's two seeds) each gap and its null are points (n 1): no interval lies
    above another, whatever the points; with more pairs the intervals decide."""
    from hf_minattn.experiments.findings_heads import recurrence_sentence

    def point(x, n, half=0.0):
        return {"estimate": x, "low": x - half, "high": x + half, "n": n}

    one_pair = recurrence_sentence([point(0.25, 1)], [point(-0.02, 1)], 1)
    assert "not shown" in one_pair and "may recur" not in one_pair
    assert "may recur" in recurrence_sentence([point(0.25, 3, 0.05)], [point(-0.02, 3, 0.05)], 1)
    # a gap below 0 is no recurrence, however far below it its null lies (layer 0 of the committed run)
    assert "may recur" not in recurrence_sentence([point(-0.0016, 5, 0.0012)], [point(-0.254, 5, 0.02)], 1)


def test_q2_says_what_training_put_into_the_input_embeddings_by_q5s_verdict(results):
    """"no similarity between related words until training puts it there" was fixed text, whatever Q5 found: the
    sentence now follows the trained static vectors against random ones."""
    from hf_minattn.experiments.findings_training import trained_static_sentence

    c = results["answers"]["q5"]["comparisons"]["static_vs_random"]
    c.update(estimate=0.2, low=0.1, high=0.3, p=0.001, p_holm=0.005, verdict="higher", method="crossed")
    assert trained_static_sentence(results).startswith("on WordSim-353 the trained input embeddings rank related "
                                                       "words closer than random vectors do (Q5: trained static")
    c.update(estimate=0.0, low=-0.1, high=0.1, p=0.9, p_holm=1.0, verdict="unresolved")
    assert "are not told apart from random vectors" in trained_static_sentence(results)


def test_absent_rows_moved_anyway_only_where_some_moved(results):
    """"moved anyway, because the masking ..." was written for 0 moved rows too."""
    from hf_minattn.experiments.findings_training import unmoved_rows_lines

    q1 = results["answers"]["q1"]
    q1["rows"]["not_in_text"].update(rows=5, moved=5)
    assert "5 of 5 rows moved anyway, because the masking" in unmoved_rows_lines(q1)[-1]
    q1["rows"]["not_in_text"].update(moved=0)
    assert unmoved_rows_lines(q1)[-1] == "- Tokens absent from the training text: 0 of 5 rows moved."


def test_q7_prints_the_untrained_models_residual_weights_its_answer_rests_on(results):
    """The answer says the untrained model's layers measure larger residual weights: those weights are printed."""
    from hf_minattn.experiments.findings_probes import q7_mixing_lines

    mixing = results["answers"]["q7"]["mixing"]
    line = next(x for x in q7_mixing_lines(mixing) if x.startswith("The residual weight measured"))
    from hf_minattn.experiments.findings_format import ci

    assert f"; untrained: {', '.join(ci(w) for w in mixing['residual_weight']['untrained'])}" in line
    del mixing["residual_weight"]["untrained"]
    assert "untrained" not in next(x for x in q7_mixing_lines(mixing) if x.startswith("The residual weight measured"))
