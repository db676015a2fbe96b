"""The heads over training (experiments/head_dynamics.py): known answers for the effective rank and the two steps,
the "before / as / after the loss leaves the plateau" sentence flipping with synthetic summaries, and head_curves on
tiny saved states (a head zeroed by hand costs nothing to ablate)."""

import copy
import json

import numpy as np
import pytest
import torch
from conftest import TEXTS, tiny_config
from test_experiments_probe_answers import CONFIG, SEEDS, probes
from test_experiments_verdicts import NUMBER
from test_findings import full_results, numbers_missing

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.experiments import caches
from hf_minattn.experiments.dynamics import remove_saved_states
from hf_minattn.experiments.findings import head_dynamics_lines, q4_section, render_findings
from hf_minattn.experiments import head_dynamics
from hf_minattn.experiments.findings_answers import q4_answer
from hf_minattn.experiments.head_dynamics import (CONTROL, MEASURES, PLATEAU_GAIN, control_threshold, early_curves,
                                                  head_curves, head_dynamics_summary, matched_specialisation_step,
                                                  matrix_effective_rank, plateau_exit_step, qk_effective_ranks,
                                                  specialisation_step)
from hf_minattn.experiments.probe_answers import probe_answers

STEPS = [0, 10, 20, 30, 40]
EVAL_STEPS = [10, 20, 30, 40]


# ------------------------------------------------------------------------------------------ known answers


def test_effective_rank_of_rank_one_is_one_and_of_the_identity_is_its_size():
    rng = np.random.default_rng(0)
    assert matrix_effective_rank(np.outer(rng.normal(size=7), rng.normal(size=5))) == pytest.approx(1.0, abs=1e-6)
    assert matrix_effective_rank(np.eye(9)) == pytest.approx(9.0)
    assert matrix_effective_rank(np.diag([1.0, 1.0, 0.0, 0.0])) == pytest.approx(2.0)


def test_qk_effective_rank_of_a_model_reads_each_heads_circuit():
    """Head 0 of layer 0: W_Q has one non-zero row, so W_Q^T W_K has rank 1; head 1: W_Q = W_K = the identity rows
    of the head's channels, so W_Q^T W_K is a projection of rank head_dim (9): effective ranks 1 and 9."""
    config = tiny_config()
    model = MinAttnForMaskedLM(config).eval()
    H, C = config.num_attention_heads, config.hidden_size
    D = C // H
    with torch.no_grad():
        w = model.minattn.layers[0].attention.qkv_proj.weight.view(3, H, D, C)
        w[0, 0].zero_()
        w[0, 0, 0] = torch.randn(C)
        w[0, 1] = w[1, 1] = torch.eye(C)[D:2 * D]
    ranks = qk_effective_ranks(model)
    assert np.shape(ranks) == (config.num_hidden_layers, H)
    assert ranks[0][0] == pytest.approx(1.0, abs=1e-6) and ranks[0][1] == pytest.approx(D)
    assert all(1 < r <= D for r in ranks[1])


def test_plateau_exit_and_specialisation_steps_by_hand():
    assert plateau_exit_step(EVAL_STEPS, [-0.1, 0.04, 0.06, 0.2]) == 30
    assert plateau_exit_step(EVAL_STEPS, [PLATEAU_GAIN, 0.051, 0.2, 0.3]) == 20  # strictly above the threshold
    assert plateau_exit_step(EVAL_STEPS, [None, 0.3, 0.4, 0.5]) == 20
    assert plateau_exit_step(EVAL_STEPS, [-0.1, 0.0, 0.01, 0.05]) is None
    # rise from step 0: 0, .01, .04, .08, .10: half (.05) is first reached at step 30
    assert specialisation_step(STEPS, [0.01, 0.02, 0.05, 0.09, 0.11]) == 30
    assert specialisation_step(STEPS, [0.01, 0.2, 0.15, 0.12, 0.11]) == 10  # overshoot: the first step counts
    assert specialisation_step(STEPS, [0.1, 0.09, 0.08, 0.07, 0.06]) is None  # heads became more alike
    assert specialisation_step(STEPS, [0.1] * 5) is None


# ------------------------------------------------------------------------------------------ verdicts


def synthetic(specialised_at, exits_at, seeds=SEEDS):
    """head_curves' layout and the full run's curve: per seed, the divergence jumps from 0.01 to 0.2 at
    `specialised_at[i]`, and the gain over the floor from 0.0 to 0.3 at `exits_at[i]` (None: never)."""
    curves = {"steps": STEPS, "sentences": 32, "heads": 8, "head_dim": 9, "role_min_mass": 0.3, "seeds": {}}
    rows = []
    for i, seed in enumerate(seeds):
        js = [0.2 if s >= specialised_at[i] else 0.01 for s in STEPS]
        curves["seeds"][seed] = {m: [0.1 * (k + 1) + 0.01 * i for k in range(len(STEPS))] for m in MEASURES}
        curves["seeds"][seed]["within_layer_js"] = js
        gain = [0.3 if exits_at[i] is not None and s >= exits_at[i] else 0.0 for s in EVAL_STEPS]
        rows.append({"seed": seed, "curve": {"steps": EVAL_STEPS, "gain_over_unigram": gain}})
    results = {"seeds": list(seeds), "settings": {"eval_steps": 10}, "variants": {"full": {"seeds": rows}},
               "head_dynamics": curves}
    return curves, results


def sentence(specialised_at, exits_at, seeds=SEEDS):
    curves, results = synthetic(specialised_at, exits_at, seeds)
    return "\n".join(head_dynamics_lines(head_dynamics_summary(curves, results), lambda *a: ""))


def test_the_sentence_follows_the_paired_difference_of_the_two_steps():
    five, six = (0, 1, 2, 3, 4), (0, 1, 2, 3, 4, 5)
    before = sentence((10, 10, 20, 10, 20, 10), (30, 30, 40, 30, 40, 30), seeds=six)
    assert "**Heads specialise before the loss leaves the unigram plateau**" in before
    assert "| specialisation - exit, paired over 6 seeds | -20 | [-20, -20] |" in before
    # seeds 20 steps apart each: no spread, so only the signs count (p 0.0625 at 5 seeds), where the t-test gave p 0
    assert "is not resolved" in sentence((10, 10, 20, 10, 20), (30, 30, 40, 30, 40), seeds=five)
    after = sentence((40, 40, 30, 40, 30), (10, 10, 10, 20, 10), seeds=five)
    assert "**Heads specialise after the loss leaves the unigram plateau**" in after
    same = sentence((20, 30, 10, 20, 30), (20, 30, 10, 20, 30), seeds=five)
    assert "**Heads specialise as the loss leaves the unigram plateau (equivalent within ±10" in same
    assert "is not resolved" in sentence((20, 30, 10), (20, 30, 10))
    unresolved = sentence((10, 40, 20), (30, 10, 20))
    assert "**Whether heads specialise before, as or after the loss leaves the unigram plateau is not resolved" in unresolved
    never = sentence((10, 10, 20), (None, None, 30))
    assert "not resolved at this scale: 1 of 3 seeds have both steps (the loss left the plateau in 1" in never
    two = sentence((10, 10), (30, 30), seeds=(0, 1))
    assert "2 of 2 seeds have both steps" in two and "an interval needs 3" in two


def test_the_summary_pairs_steps_by_seed_and_reads_the_gain_at_the_saved_steps():
    curves, results = synthetic((10, 20, 20), (30, 30, 40))
    summary = head_dynamics_summary(curves, results)
    assert [r["plateau_exit_step"] for r in summary["by_seed"]] == [30, 30, 40]
    assert [r["specialisation_step"] for r in summary["by_seed"]] == [10, 20, 20]
    assert summary["specialisation_minus_exit"]["estimate"] == pytest.approx(-50 / 3, abs=1e-3)
    assert summary["margin"] == 10 and summary["specialisation_minus_exit"]["margin"] == 10
    assert summary["gain"][0] is None and summary["gain"][-1]["estimate"] == pytest.approx(0.3)  # step 0: no eval
    assert summary["measures"]["ablation_max"][0]["estimate"] == pytest.approx(0.11)  # 0.1 + mean(0, .01, .02)
    assert len(summary["measures"]["qk_effective_rank"]) == len(STEPS)


def test_q4_prints_the_bullet_from_the_answers_and_every_number_is_stored():
    curves, results = synthetic((10, 10, 20), (30, 40, 40))
    p = probes()
    answers = probe_answers(results, p, CONFIG)
    text = "\n".join(q4_section(answers["q4"], lambda *a: ""))
    assert "**Heads specialise before the loss leaves the unigram plateau**" in text
    over = answers["q4"]["over_training"]
    lines = "\n".join(head_dynamics_lines(over, lambda *a: ""))
    assert len(NUMBER.findall(lines)) > 20 and not numbers_missing(lines, over)  # as rounded to the digits shown
    assert "over_training" not in probe_answers({"seeds": list(SEEDS)}, p, CONFIG)["q4"]  # older results: no bullet


# ------------------------------------------------------------------------------------------ the early grid


GRID = [0, 20, 40, 60, 80]


def test_the_control_sets_the_threshold_and_the_full_model_must_stay_above_it_by_hand():
    control = [0.00, 0.02, 0.03, 0.035, 0.04]  # neighbouring changes .02, .01, .005, .005: threshold .02
    assert control_threshold(control) == pytest.approx(0.02)
    # full - control: 0, .01, .04, .015, .08: above .02 at 40, below again at 60, above from 80 on
    assert matched_specialisation_step(GRID, [0.00, 0.03, 0.07, 0.05, 0.12], control) == 80
    # full - control: 0, .03, .05, .065, .08: above from step 20 on
    assert matched_specialisation_step(GRID, [0.00, 0.05, 0.08, 0.10, 0.12], control) == 20
    # a rise as large as the control's own (any training raises divergence): never specialised
    assert matched_specialisation_step(GRID, [0.00, 0.03, 0.045, 0.05, 0.055], control) is None
    assert matched_specialisation_step(GRID, [0.00, 0.05, 0.08, 0.10, 0.01], control) is None  # fell back at the end


ESTEPS = [0, 20, 40, 60, 80, 100]


def with_early(curves, specialised_at, exits_at, layers=0):
    """`curves` with an early grid: per seed the control's divergence creeps up (largest change .01), the full model's
    is the control's plus 0.1 from `specialised_at[i]` (None: never), and its gain over the floor jumps from 0 to 0.3
    at `exits_at[i]` (None: never). With `layers`, each layer's divergence too, spread around the mean over layers."""
    seeds = {}
    for i, seed in enumerate(sorted(curves["seeds"])):
        control = [0.0, 0.01, 0.015, 0.02, 0.022, 0.024]
        full = [c + (0.1 if specialised_at[i] is not None and s >= specialised_at[i] else 0.0)
                for s, c in zip(ESTEPS, control)]
        gain = [-1.0] + [0.3 if exits_at[i] is not None and s >= exits_at[i] else 0.0 for s in ESTEPS[1:]]
        seeds[seed] = {"full": {"within_layer_js": full, "gain_over_unigram": gain},
                       CONTROL: {"within_layer_js": control, "gain_over_unigram": [-1.0] + [-0.01] * 5}}
        for run in seeds[seed].values():
            if layers:
                run["within_layer_js_by_layer"] = [[v * 2 * (l + 1) / (layers + 1) for l in range(layers)]
                                                   for v in run["within_layer_js"]]
    return {**curves, "early": {"steps": ESTEPS, "every": 20, "until": 100, "control": CONTROL, "seeds": seeds}}


def test_the_early_grid_decides_the_sentence_against_the_control_where_the_run_has_one():
    curves, results = synthetic((40, 40, 30), (10, 10, 10))  # the saved states alone would say "after"
    early = head_dynamics_summary(with_early(curves, (20, 20, 40), (60, 80, 80)), results)
    assert [r["specialisation_step"] for r in early["early"]["by_seed"]] == [20, 20, 40]
    assert [r["plateau_exit_step"] for r in early["early"]["by_seed"]] == [60, 80, 80]
    assert early["early"]["specialisation_minus_exit"]["margin"] == 20
    assert early["specialisation_minus_exit"]["verdict"] == "higher"  # today's keys are still there
    before = "\n".join(head_dynamics_lines(early, lambda *a: ""))
    assert "**Heads specialise before the loss leaves the unigram plateau** (on states saved every 20 steps" in before
    assert "| specialisation - exit, paired over 3 seeds | -46.7 | [-75.4, -18] |" in before
    assert not numbers_missing(before, early)
    after = head_dynamics_summary(with_early(curves, (80, 80, 100), (20, 20, 20)), results)
    assert "**Heads specialise after the loss leaves" in "\n".join(head_dynamics_lines(after, lambda *a: ""))


def test_the_answer_says_before_or_after_by_the_early_grid_and_nothing_without_one():
    curves, results = synthetic((40, 40, 30), (10, 10, 10))

    def answer(specialised_at, exits_at):
        seeds = tuple(range(len(exits_at)))
        run, res = synthetic((40, 40, 30, 40, 30)[:len(seeds)], (10,) * len(seeds), seeds) if seeds != SEEDS else (curves, results)
        res = {**res, "head_dynamics": with_early(run, specialised_at, exits_at)}
        return q4_answer({"answers": probe_answers(res, probes(), CONFIG)})

    assert "without linguistic signal, they specialise before the loss leaves" in answer((20, 20, 40), (60, 80, 80))
    assert "they specialise after the loss leaves" in answer((80, 80, 100), (20, 20, 20))
    assert "they specialise as the loss leaves" in answer((20, 40, 60, 20, 40), (20, 40, 60, 20, 40))
    # on a 20-step grid, 3 seeds cannot show "as": equal steps have no spread (the signs alone), any spread is wider
    assert "before, as or after the loss leaves its unigram plateau is not resolved" in answer((20, 40, 60), (20, 40, 60))
    plain = q4_answer({"answers": probe_answers(results, probes(), CONFIG)})
    assert "linguistic signal" not in plain and "plateau" not in plain


# ------------------------------------------------------------------------------------------ measuring saved states


def save_states(tmp_path, tokenizer, **overrides):
    """A tiny full run's folder (tokenizer, `checkpoint-2`, `checkpoint-4`) and its untrained model; in
    checkpoint-4, head 2 of layer 1 has W_O's columns zeroed, so its output never reaches the residual stream
    (`overrides`: of the tiny config)."""
    config = tiny_config(vocab_size=len(tokenizer), **overrides)
    run, untrained = tmp_path / "full" / "seed0", tmp_path / "untrained" / "seed0"
    torch.manual_seed(1)
    MinAttnForMaskedLM(config).save_pretrained(untrained)
    tokenizer.save_pretrained(run)
    for step in (2, 4):
        torch.manual_seed(step)
        model = MinAttnForMaskedLM(config)
        if step == 4:
            D = config.hidden_size // config.num_attention_heads
            with torch.no_grad():
                model.minattn.layers[1].attention.o_proj.weight[:, 2 * D:3 * D] = 0
        model.save_pretrained(run / f"checkpoint-{step}")
    return {"full": {0: str(run), 1: str(run)}, "untrained": {0: str(untrained), 1: str(untrained)}}


@pytest.fixture
def one_thread():
    """Tiny models run far faster on one thread when the machine is busy (11 s against 0.4 s here)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def test_head_curves_on_tiny_saved_states(tmp_path, tokenizer, one_thread):
    folders = save_states(tmp_path, tokenizer)
    sentences = list(dict.fromkeys(TEXTS))
    curves = head_curves(folders, {"mlm_probability": 0.3}, (0, 1), sentences)
    json.dumps(curves)  # cached as head_dynamics.json
    assert curves["steps"] == [0, 2, 4] and sorted(curves["seeds"]) == [0, 1]
    assert curves["heads"] == 8 and curves["head_dim"] == 9 and curves["sentences"] == len(sentences)
    for seed, row in curves["seeds"].items():
        assert all(len(row[m]) == 3 for m in MEASURES)
        ablation = np.array(row["by_head"]["ablation"])  # (states, layers, heads)
        assert ablation.shape == (3, 2, 4) and np.shape(row["by_head"]["role"]) == (3, 2, 4)
        assert ablation[2, 1, 2] == pytest.approx(0.0, abs=1e-7)  # the zeroed head costs nothing
        assert np.abs(ablation[1]).max() > 1e-5  # ... while the heads of a random model do cost something
        assert row["ablation_max"] == pytest.approx(ablation.max(axis=(1, 2)).tolist())
        assert row["ablation_mean"] == pytest.approx(ablation.mean(axis=(1, 2)).tolist())
        assert all(1 <= r <= 9 for r in row["qk_effective_rank"]) and all(j >= 0 for j in row["within_layer_js"])
        assert all(0 <= n <= 8 for n in row["heads_with_role"])
        by_head = row["by_head"]  # each measure of a state is its heads' numbers, counted or averaged
        assert row["heads_with_role"] == [sum(r != "none" for layer in roles for r in layer) for roles in by_head["role"]]
        assert row["max_role_mass"] == pytest.approx(np.mean(by_head["role_mass"], axis=(1, 2)).tolist())
        assert row["qk_effective_rank"] == pytest.approx(np.mean(by_head["qk_effective_rank"], axis=(1, 2)).tolist())
    # the same masks at every state of a seed, other masks at another seed
    assert curves["seeds"][0]["ablation_max"] != curves["seeds"][1]["ablation_max"]
    assert curves["seeds"][0]["qk_effective_rank"] == curves["seeds"][1]["qk_effective_rank"]


def test_the_phase_caches_its_numbers_and_the_states_go_only_when_asked(tmp_path, monkeypatch):
    """caches.head_dynamics writes head_dynamics.json and a rerun reads it back (seed keys as ints) without measuring;
    without states or a cache there is nothing to measure (None)."""
    run = tmp_path / "models" / "full" / "seed0"
    (run / "checkpoint-5").mkdir(parents=True)
    (run / "checkpoint-5" / "config.json").write_text("{}")
    folders = {"full": {0: str(run)}, "frozen_embeddings": {0: str(tmp_path / "frozen")}}
    calls = []

    def fake_curves(folders, settings, seeds, sentences):
        calls.append(len(sentences))
        return {"steps": [0, 5], "seeds": {0: {"within_layer_js": [0.0, 0.1]}}}

    monkeypatch.setattr(caches, "head_curves", fake_curves)
    monkeypatch.setattr("hf_minattn.probes.corpus.default_sentences", lambda n: ["a sentence ."] * n)
    first = caches.head_dynamics(str(tmp_path), folders, {}, (0,))
    assert calls == [32] and (tmp_path / "head_dynamics.json").is_file()
    assert (run / "checkpoint-5").is_dir()  # measuring leaves the states in place
    remove_saved_states(folders, (0,))
    assert not (run / "checkpoint-5").exists()
    again = caches.head_dynamics(str(tmp_path), folders, {}, (0,))
    assert calls == [32] and again == first and list(again["seeds"]) == [0]
    (tmp_path / "head_dynamics.json").unlink()
    assert caches.head_dynamics(str(tmp_path), folders, {}, (0,)) is None and calls == [32]


def test_the_figure_has_a_panel_per_measure_and_the_gain():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hf_minattn.experiments.figures import draw_head_dynamics

    curves, results = synthetic((10, 10, 20), (30, 30, 40))
    fig = draw_head_dynamics(plt, head_dynamics_summary(curves, results))
    titles = [ax.get_title() for ax in fig.axes]
    plt.close(fig)
    assert titles[0].startswith("gain over the unigram floor") and "within-layer JS divergence" in titles
    assert len([t for t in titles if t]) == 6


def early_figure(specialised_at, exits_at, layers):
    """The early grid's figure of a synthetic run, through the public summary, and its axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hf_minattn.experiments.figures import head_dynamics_early

    curves, results = synthetic((10, 10, 20), (30, 30, 40))
    over = head_dynamics_summary(with_early(curves, specialised_at, exits_at, layers), results)
    return plt, head_dynamics_early(plt, {"answers": {"q4": {"over_training": over}}}, None), over


def test_the_early_figure_has_a_panel_per_layer_and_the_gain_with_both_runs_and_the_steps_marked(tmp_path):
    from hf_minattn.probes.plots import save_figure

    plt, fig, over = early_figure((20, 20, 40), (60, 60, 80), layers=3)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == [f"layer {l}: JS divergence between heads" for l in range(3)] + \
        ["gain over the unigram floor (nats)"]
    for layer, ax in enumerate(axes[:3]):
        full, control, exit_line, specialised = ax.get_lines()  # two bands' lines, then the two marked steps
        assert list(full.get_xdata()) == ESTEPS and list(control.get_xdata()) == ESTEPS
        assert full.get_ydata()[-1] == pytest.approx(0.124 * 2 * (layer + 1) / 4)  # the mean over the three seeds
        assert control.get_ydata()[-1] == pytest.approx(0.024 * 2 * (layer + 1) / 4)
        assert list(exit_line.get_xdata()) == [pytest.approx(200 / 3, abs=1e-3)] * 2  # mean exit over seeds: 60, 60, 80
        assert list(specialised.get_xdata()) == [pytest.approx(80 / 3, abs=1e-3)] * 2  # 20, 20, 40
        assert len(ax.collections) == 2  # one band over seeds per run
    assert len(axes[3].get_lines()) == 5  # full, control, the plateau threshold and the two steps
    written = save_figure(fig, str(tmp_path / "head_dynamics_early.png"))
    assert (tmp_path / "head_dynamics_early.png").stat().st_size > 1000 and written.endswith(".png")


def test_the_early_figure_marks_only_the_steps_found_and_is_absent_without_an_early_grid():
    from hf_minattn.experiments.figures import head_dynamics_early

    plt, never, _ = early_figure((None, None, None), (60, 60, 80), layers=2)
    assert len(never.axes) == 3 and all(len(ax.get_lines()) == 3 for ax in never.axes[:2])  # no specialisation line
    still, flat = early_figure((20, 20, 40), (None, None, None), layers=2)[1:]
    assert flat["early"]["plateau_exit"] is None and len(still.axes[0].get_lines()) == 3  # no exit line
    older = early_figure((20, 20, 40), (60, 60, 80), layers=0)[1]  # early curves without the per-layer numbers
    assert [ax.get_title() for ax in older.axes][0] == "mean over layers: JS divergence between heads"
    assert len(older.axes) == 2
    for figure in (never, still, older):
        plt.close(figure)
    curves, results = synthetic((10, 10, 20), (30, 30, 40))
    over = head_dynamics_summary(curves, results)  # no early grid
    assert head_dynamics_early(plt, {"answers": {"q4": {"over_training": over}}}, None) is None
    assert head_dynamics_early(plt, {"answers": {"q4": {}}}, None) is None


def test_findings_link_the_early_figure_only_where_the_run_has_an_early_grid():
    curves, results = synthetic((10, 10, 20), (30, 30, 40))
    findings = full_results()
    figures = {"head_dynamics": "figures/head_dynamics.png", "head_dynamics_early": "figures/head_dynamics_early.png"}
    link = "](figures/head_dynamics_early.png)"
    findings["answers"]["q4"]["over_training"] = head_dynamics_summary(with_early(curves, (20, 20, 40), (60, 60, 80),
                                                                                  layers=2), results)
    q4 = render_findings(findings, figures).split("\n## ")[4]
    assert q4.startswith("4. ") and q4.count(link) == 1
    assert q4.index("](figures/head_dynamics.png)") < q4.index(link)  # after the heads over training
    assert link not in render_findings(findings, {"head_dynamics": "figures/head_dynamics.png"})  # not drawn
    findings["answers"]["q4"]["over_training"] = head_dynamics_summary(curves, results)  # no early grid
    assert link not in render_findings(findings, figures)  # a figure kept from an older run is not linked


def test_synthetic_summaries_do_not_change_their_inputs():
    curves, results = synthetic((10, 10, 20), (30, 30, 40))
    before = copy.deepcopy((curves, results))
    head_dynamics_summary(curves, results)
    assert (curves, results) == before


def test_early_curves_measure_the_full_run_and_the_control_on_the_same_grid(tmp_path, tokenizer, one_thread,
                                                                             monkeypatch):
    """The same states under both runs give the same divergence; the gain comes from the scorer, per seed; without
    the control's states there is no early grid; remove_early_states deletes both runs' early states."""
    import shutil

    from hf_minattn.early_states import early_states_folder

    folders = save_states(tmp_path, tokenizer)
    control = tmp_path / CONTROL / "seed0"
    folders[CONTROL] = {0: str(control), 1: str(control)}
    settings = {"early_save_every": 2, "early_save_until": 4}
    assert early_curves(folders, settings, (0, 1), TEXTS) is None  # no early states yet
    for run in (folders["full"][0], str(control)):
        for step in (2, 4):
            shutil.copytree(f"{folders['full'][0]}/checkpoint-{step}", f"{early_states_folder(run)}/checkpoint-{step}")
    monkeypatch.setattr(head_dynamics, "gain_scorer", lambda folder, settings: lambda model, seed: 0.5 + seed)
    early = early_curves(folders, settings, (0, 1), list(dict.fromkeys(TEXTS)))
    json.dumps(early)  # cached in head_dynamics.json
    assert early["steps"] == [0, 2, 4] and early["every"] == 2 and early["control"] == CONTROL
    for seed in (0, 1):
        full, ctrl = early["seeds"][seed]["full"], early["seeds"][seed][CONTROL]
        assert full["within_layer_js"] == pytest.approx(ctrl["within_layer_js"]) and len(full["within_layer_js"]) == 3
        assert full["within_layer_js"][0] != full["within_layer_js"][2]
        assert full["gain_over_unigram"] == [0.5 + seed] * 3
        by_layer = np.array(full["within_layer_js_by_layer"])  # (states, layers), for the early figure
        assert by_layer.shape == (3, 2) and by_layer.mean(axis=1) == pytest.approx(full["within_layer_js"])
    head_dynamics.remove_early_states(folders, (0, 1))
    assert not (tmp_path / "full" / "seed0" / "early_states").exists() and not (control / "early_states").exists()
    assert (tmp_path / "full" / "seed0" / "checkpoint-2").is_dir()  # the saved states are another phase's


def test_early_curves_of_one_head_models_have_no_divergence_and_no_early_summary(tmp_path, tokenizer, one_thread,
                                                                                  monkeypatch):
    """One head a layer: no divergence between heads, as measure_state says (None), not a crash on None values."""
    import shutil

    from hf_minattn.early_states import early_states_folder

    folders = save_states(tmp_path, tokenizer, num_attention_heads=1)
    folders[CONTROL] = folders["full"]
    for step in (2, 4):
        shutil.copytree(f"{folders['full'][0]}/checkpoint-{step}", f"{early_states_folder(folders['full'][0])}/checkpoint-{step}")
    monkeypatch.setattr(head_dynamics, "gain_scorer", lambda folder, settings: lambda model, seed: 0.5)
    early = early_curves(folders, {"early_save_every": 2, "early_save_until": 4}, (0, 1), list(dict.fromkeys(TEXTS)))
    json.dumps(early)
    assert early["seeds"][0]["full"]["within_layer_js"] == [None] * 3
    assert early["seeds"][0]["full"]["within_layer_js_by_layer"] == [[None, None]] * 3
    assert not head_dynamics.early_has_divergence(early)


@pytest.mark.slow
def test_the_gain_of_a_state_is_scored_on_run_mlms_evaluation_masks(tokenizer_dir, one_thread):
    """A model that predicts uniformly over the vocabulary loses exactly log(V) a token: its gain over the unigram
    floor is the floor's cross-entropy minus log(V), negative, the same at every call of a seed."""
    from transformers import AutoTokenizer

    from hf_minattn.experiments.head_dynamics import gain_scorer

    vocab = len(AutoTokenizer.from_pretrained(tokenizer_dir))
    model = MinAttnForMaskedLM(tiny_config(vocab_size=vocab, max_position_embeddings=64, tie_word_embeddings=False))
    with torch.no_grad():
        model.lm_head.decoder.weight.zero_()
        model.lm_head.bias.zero_()
    gain = gain_scorer(str(tokenizer_dir), {"max_seq_length": 64, "mlm_probability": 0.3, "curve_eval_samples": 8,
                                            "batch_size": 4})
    first = gain(model.eval(), 0)
    assert first < 0 and gain(model, 0) == first
    assert -np.log(vocab) < first  # the unigram floor's cross-entropy is positive
    # From curve_eval_from on (PROTOCOL.md version 3): those rows of the whole split, each with its own masks
    from hf_minattn.experiments.evaluation import load_splits, mask_validation
    from hf_minattn.unigram import UnigramFloor

    held_out = gain_scorer(str(tokenizer_dir), {"max_seq_length": 64, "mlm_probability": 0.3, "curve_eval_samples": 8,
                                                "curve_eval_from": 8, "batch_size": 4})(model, 0)
    splits = load_splits(str(tokenizer_dir), 64, 0.3)
    labels = mask_validation(splits, 0, draws=1)[0].labels[8:16]
    floor = UnigramFloor.from_dataset(splits.train, vocab).cross_entropy(labels[labels != -100].numpy())
    assert held_out == pytest.approx(floor - np.log(vocab), abs=1e-4) and held_out != pytest.approx(first)


def test_a_results_json_read_back_answers_the_plateau_exits_it_was_answered_with():
    """JSON makes the seed keys strings; head_dynamics_summary looked the full run's curves up by int seed, so from a
    results.json read back every plateau exit was None and the timing comparison vanished."""
    from test_findings import FINDINGS

    from hf_minattn.experiments.findings import load_results

    results = load_results(FINDINGS / "confirmation-v1" / "results.json")  # seeds 3-7: each left the plateau
    again = head_dynamics_summary(results["head_dynamics"], results)
    stored = results["answers"]["q4"]["over_training"]
    exits = [row["plateau_exit_step"] for row in again["by_seed"]]
    assert None not in exits and exits == [row["plateau_exit_step"] for row in stored["by_seed"]]
    assert [row["seed"] for row in again["by_seed"]] == sorted(results["seeds"])  # 10 after 9, not after 1
    assert again["specialisation_minus_exit"]["estimate"] == stored["specialisation_minus_exit"]["estimate"]
