"""A run killed anywhere resumes (--resume) to what the run that was never stopped wrote: the end of a run killed
after its last checkpoint, checkpoints that cannot resume, the loss-allocation and drift records, the early grid.
Kills are in-process (helpers_training.killed_at raises a BaseException at the N-th call of a function, as
/tmp/review_resume/harness.py's os._exit(137) there), so that each run takes a couple of seconds."""

import json
import shutil

import pytest
from transformers import TrainerState

from hf_minattn import run_mlm
from hf_minattn.early_states import EarlyStates
from hf_minattn.run_mlm import main

from helpers_training import (Killed, intervals, killed_at, max_weight_difference, read_json, recorded_forward_calls,
                              tiny_argv)

# 8 steps, a log every 2, a checkpoint every 4, loss allocation every 3 on 4 validation sequences
ARGS = dict(report_to="none", loss_allocation="true", loss_allocation_every=3, loss_allocation_samples=4)


@pytest.fixture(scope="module")
def reference(tokenizer_dir, tmp_path_factory):
    """The run that was never stopped."""
    out = tmp_path_factory.mktemp("reference") / "model"
    main(tiny_argv(out, tokenizer_dir, **ARGS))
    return out


def assert_same_run(out, reference):
    """`out` holds what the uninterrupted run wrote: the same model, results, trainer state and records."""
    assert max_weight_difference(out, reference) < 1e-6
    for name in ("all_results.json", "eval_results.json"):
        assert read_json(out / name)["eval_loss"] == pytest.approx(read_json(reference / name)["eval_loss"], abs=1e-6)
    state, ref_state = read_json(out / "trainer_state.json"), read_json(reference / "trainer_state.json")
    assert state["global_step"] == ref_state["global_step"]
    def logs(history):  # the training summary's train_loss is that of the steps the last call trained (Trainer's)
        return [(h["step"], round(h["loss"], 5) if "loss" in h else "loss" in h) for h in history]

    assert logs(state["log_history"]) == logs(ref_state["log_history"])
    def drift_steps(folder):
        return [record["step"] for record in read_json(folder / "drift.json")["records"]]

    assert drift_steps(out) == drift_steps(reference)
    assert intervals(out) == intervals(reference)
    records = read_json(out / "loss_allocation.json")["records"]
    for record, ref in zip(records, read_json(reference / "loss_allocation.json")["records"]):
        assert record["observed"] == pytest.approx(ref["observed"], abs=1e-6)
        assert record["groups"] == pytest.approx(ref["groups"], abs=1e-6)
    assert "in progress" not in (out / "README.md").read_text() and "8 steps" in (out / "README.md").read_text()
    assert (out / "modules.json").is_file()  # the sentence-transformers files


def grad_norms(records) -> list:
    return [record["grad_norm"]["layers.0.W_Q"] or 0.0 for record in records]


def trained_steps(calls) -> int:
    return sum(call.training for call in calls)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["saving the model", "evaluating"])
def test_a_run_killed_after_its_last_checkpoint_gets_its_end_from_it_without_training(reference, tokenizer_dir,
                                                                                        tmp_path, where):
    """Killed after checkpoint-8 (--max_steps 8), in the end (the model still the initial one, or in the evaluation):
    --resume took checkpoint-8 for a finished run, left the untrained model and refused a plain rerun. Now only
    output_dir/trainer_state.json, written last, says finished: the end is redone from checkpoint-8, no step trained."""
    out = tmp_path / "model"
    target = (run_mlm.MinAttnTrainer, "save_model", 1, False, lambda self, output_dir=None, **kw: output_dir is None)
    if where == "evaluating":
        target = (run_mlm.MinAttnTrainer, "evaluate", 1, False, None)
    owner, name, call, after, when = target
    with killed_at(owner, name, call, after, when), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, **ARGS))
    assert not (out / "trainer_state.json").exists()
    with recorded_forward_calls() as calls:
        main(tiny_argv(out, tokenizer_dir, resume=True, **ARGS))
    assert trained_steps(calls) == 0
    assert_same_run(out, reference)
    assert read_json(out / "train_results.json")["train_loss"] == pytest.approx(
        read_json(reference / "train_results.json")["train_loss"], rel=1e-6)


@pytest.mark.slow
def test_a_run_killed_after_its_last_checkpoint_still_ends_on_its_best_model(tokenizer_dir, tmp_path):
    """With --load_best_model_at_end, the end redone from the last checkpoint saved the last step's model, where the
    run never stopped saved the best one. The "best" here is the higher loss, so that it is checkpoint-4, not 8."""
    best = dict(eval_strategy="steps", eval_steps=4, load_best_model_at_end="true", metric_for_best_model="eval_loss",
                greater_is_better="true", save_total_limit=1)
    reference, out = tmp_path / "reference", tmp_path / "model"
    main(tiny_argv(reference, tokenizer_dir, **best))
    assert read_json(reference / "trainer_state.json")["best_model_checkpoint"].endswith("checkpoint-4")
    assert max_weight_difference(reference, reference / "checkpoint-4") == 0
    # killed as the training ends, before the best model is loaded and the other checkpoints removed
    with killed_at(run_mlm.MinAttnTrainer, "_load_best_model"), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, **best))
    assert max_weight_difference(out / "checkpoint-4", out / "checkpoint-8") > 1e-3  # the best is not the last
    main(tiny_argv(out, tokenizer_dir, resume=True, **best))
    assert max_weight_difference(out, out / "checkpoint-4") == 0
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-4"]  # the best alone, as the reference
    assert sorted(p.name for p in reference.glob("checkpoint-*")) == ["checkpoint-4"]
    assert read_json(out / "eval_results.json")["eval_loss"] == pytest.approx(
        read_json(reference / "eval_results.json")["eval_loss"], abs=1e-6)


@pytest.mark.slow
def test_a_trainer_state_cut_short_in_the_output_folder_is_named_and_the_end_redone(reference, tokenizer_dir,
                                                                                   tmp_path, caplog):
    out = tmp_path / "model"
    shutil.copytree(reference, out)
    text = (out / "trainer_state.json").read_text()
    (out / "trainer_state.json").write_text(text[: len(text) // 2])  # killed while writing it
    main(tiny_argv(out, tokenizer_dir, resume=True, **ARGS))
    assert f"{out / 'trainer_state.json'}" in caplog.text and "is not valid JSON" in caplog.text
    assert_same_run(out, reference)


@pytest.mark.slow
@pytest.mark.parametrize("finished", [True, False])
def test_an_all_results_file_cut_short_is_rebuilt_not_a_json_error(reference, tokenizer_dir, tmp_path, finished,
                                                                     caplog, monkeypatch):
    """The Trainer wrote all_results.json in place: one cut short by a kill made every --resume fail in json.load,
    naming no file, both on a finished run (its results read back) and while the end is redone (merged into)."""
    out = tmp_path / "model"
    shutil.copytree(reference, out)
    text = (out / "all_results.json").read_text()
    (out / "all_results.json").write_text(text[: len(text) // 2])
    if not finished:
        (out / "trainer_state.json").unlink()
    results = main(tiny_argv(out, tokenizer_dir, resume=True, **ARGS))
    expected = read_json(reference / "all_results.json")
    assert results["eval_loss"] == pytest.approx(expected["eval_loss"], abs=1e-6)
    if finished:  # read back from the train and eval results, as they were; a push is left to hf-minattn push
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)  # parsed with --push_to_hub
        main(tiny_argv(out, tokenizer_dir, resume=True, push_to_hub=True, hub_model_id="me/tiny", **ARGS))
        assert f"nothing to train or save; to push it: hf-minattn push {out} me/tiny" in caplog.text
        assert results == {**read_json(reference / "train_results.json"), **read_json(reference / "eval_results.json")}
    else:  # the end redone: written whole
        assert read_json(out / "all_results.json")["eval_loss"] == pytest.approx(expected["eval_loss"], abs=1e-6)


@pytest.mark.slow
def test_a_run_stopped_at_its_stop_step_is_finished_whatever_its_last_checkpoint(tokenizer_dir, tmp_path):
    """--stop_at_step 3 with checkpoints every 2: its last checkpoint is step 2, and --resume trained step 3 again
    from it at every call. The trainer_state.json of the folder says it ended: nothing is trained or written."""
    out = tmp_path / "control"
    args = dict(ARGS, stop_at_step=3, save_steps=2)
    main(tiny_argv(out, tokenizer_dir, **args))
    written = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    with recorded_forward_calls() as calls:
        main(tiny_argv(out, tokenizer_dir, resume=True, **args))
    assert trained_steps(calls) == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == written


@pytest.mark.slow
def test_killed_at_its_stop_step_checkpoint_the_end_is_redone_from_it(tokenizer_dir, tmp_path):
    args = dict(ARGS, stop_at_step=4)
    reference = tmp_path / "reference"
    main(tiny_argv(reference, tokenizer_dir, **args))
    out = tmp_path / "model"
    with killed_at(run_mlm, "evaluate"), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, **args))
    with recorded_forward_calls() as calls:
        main(tiny_argv(out, tokenizer_dir, resume=True, **args))
    assert trained_steps(calls) == 0 and max_weight_difference(out, reference) == 0
    assert read_json(out / "trainer_state.json")["global_step"] == 4
    assert read_json(out / "eval_results.json")["eval_loss"] == read_json(reference / "eval_results.json")["eval_loss"]
    assert "in progress" not in (out / "README.md").read_text()
    assert intervals(out) == intervals(reference) == [(0, 3), (3, 4)]


def killed_after_checkpoint(out, tokenizer_dir, step: int, **args):
    """A run of `args` killed right after its checkpoint of `step` is complete (its trainer_state.json written)."""
    def at_step(self, json_path):
        return f"checkpoint-{step}" in json_path

    with killed_at(TrainerState, "save_to_json", after=True, when=at_step), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, **args))


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["scheduler.pt", "optimizer.pt", "rng_state.pth", "trainer state cut short"])
def test_the_last_complete_checkpoint_is_chosen_and_each_one_skipped_is_named(reference, tokenizer_dir, tmp_path,
                                                                             damage, caplog):
    """A checkpoint without its optimizer, scheduler or RNG state resumed silently with a fresh optimizer and a
    restarted schedule (another model), and one whose trainer_state.json was cut short failed naming no file: each
    is skipped, saying why, and the run resumes from the one before."""
    out = tmp_path / "model"
    killed_after_checkpoint(out, tokenizer_dir, 6, **dict(ARGS, save_steps=2))
    last = out / "checkpoint-6"
    if damage == "trainer state cut short":
        text = (last / "trainer_state.json").read_text()
        (last / "trainer_state.json").write_text(text[:300])
    else:
        (last / damage).unlink()
    main(tiny_argv(out, tokenizer_dir, resume=True, **dict(ARGS, save_steps=2)))
    assert f"Skipping {last}: it " in caplog.text and f"Resuming from {out / 'checkpoint-4'}" in caplog.text
    if damage == "trainer state cut short":
        assert f"{last / 'trainer_state.json'} is not valid JSON" in caplog.text
    elif damage.startswith("rng_state"):  # the optimizer and scheduler are there: the save was cut short
        assert f"was cut short while saving (no {damage}: a process's random state)" in caplog.text
    else:
        assert f"is model-only (no {damage})" in caplog.text
    assert_same_run(out, reference)


@pytest.mark.slow
@pytest.mark.parametrize("save", [dict(save_steps=4), dict(save_strategy="epoch", max_steps=30)])
def test_loss_allocation_resumes_every_interval(tokenizer_dir, tmp_path, save):
    """Every 3 steps with checkpoints at 4: the resumed file had (0,3),(4,7),(7,8), the interval 3->4 lost (the
    next one started at the checkpoint's weights). Each checkpoint keeps the open interval's start: the records are
    those of the run never stopped, for saves at steps and at an epoch's end (25 steps) alike."""
    args = dict(ARGS, **save)
    reference = tmp_path / "reference"
    main(tiny_argv(reference, tokenizer_dir, **args))
    out = tmp_path / "model"
    step = 4 if "save_steps" in save else 25
    killed_after_checkpoint(out, tokenizer_dir, step, **args)
    main(tiny_argv(out, tokenizer_dir, resume=True, **args))
    assert intervals(out) == intervals(reference)
    for record, ref in zip(read_json(out / "loss_allocation.json")["records"],
                           read_json(reference / "loss_allocation.json")["records"]):
        assert record["loss_start"] == pytest.approx(ref["loss_start"], abs=1e-6)
        assert record["groups"] == pytest.approx(ref["groups"], abs=1e-6)
    # drift too: at step 25 (between logs at 24 and 26) the checkpoint keeps the gradient norm of step 25, so that
    # the record of step 26 averages steps 25 and 26 as the run never stopped does
    drift, ref_drift = read_json(out / "drift.json")["records"], read_json(reference / "drift.json")["records"]
    assert [r["step"] for r in drift] == [r["step"] for r in ref_drift]
    assert grad_norms(drift) == pytest.approx(grad_norms(ref_drift), rel=1e-5)


@pytest.mark.slow
def test_an_early_state_left_among_the_checkpoints_by_a_kill_is_moved_when_the_run_resumes(tokenizer_dir, tmp_path):
    """Killed after the Trainer saved early state 3 and before EarlyStates.on_save moved it: the resumed run never
    saved step 3 again, and rotation deleted checkpoint-3. It is moved (here copied: the run resumes from it) at
    train begin."""
    args = dict(report_to="none", early_save_every=1, early_save_until=3)
    out = tmp_path / "model"
    with killed_at(EarlyStates, "on_save", when=lambda self, args, state, control, **kw: state.global_step == 3), \
            pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, **args))
    assert (out / "checkpoint-3").is_dir() and not (out / "early_states" / "checkpoint-3").exists()
    main(tiny_argv(out, tokenizer_dir, resume=True, **args))
    early = sorted(p.name for p in (out / "early_states").iterdir())
    assert early == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    assert read_json(out / "early_states" / "checkpoint-3" / "trainer_state.json")["global_step"] == 3
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-8"]


@pytest.mark.slow
def test_a_checkpoint_of_another_folder_brings_its_drift_and_loss_allocation_history(reference, tokenizer_dir,
                                                                                    tmp_path):
    """--resume_from_checkpoint OTHER/checkpoint-4 into a new --output_dir: drift.json and loss_allocation.json
    were read from --output_dir only, and started at step 4. The checkpoint's own copies carry them over, even from
    a checkpoint copied alone."""
    alone = tmp_path / "saved-at-step-4"
    shutil.copytree(reference / "checkpoint-4", alone)
    for source in (reference / "checkpoint-4", alone):
        out = tmp_path / f"from-{source.name}"
        main(tiny_argv(out, tokenizer_dir, resume_from_checkpoint=source, **ARGS))
        assert_same_run(out, reference)
        drift, ref_drift = read_json(out / "drift.json")["records"], read_json(reference / "drift.json")["records"]
        assert grad_norms(drift) == pytest.approx(grad_norms(ref_drift), rel=1e-5)


def test_drift_of_a_resumed_run_averages_the_gradient_norms_of_the_same_steps(reference):
    """Checkpoint 4 sits between logs at 4 and 6: nothing pending there; the copy keeps the records up to step 4."""
    kept = read_json(reference / "checkpoint-4" / "drift.json")
    assert [r["step"] for r in kept["records"]] == [0, 1, 2, 4] and kept["pending"] == {"grad_sums": {}, "grad_steps": 0}
    assert json.loads((reference / "checkpoint-4" / "loss_allocation.json").read_text())["records"][-1]["step_end"] == 3


@pytest.mark.slow
def test_a_kill_while_a_resumed_run_writes_a_later_checkpoint_again_leaves_it_incomplete(reference, tokenizer_dir,
                                                                                         tmp_path):
    """Resumed from its step-4 checkpoint into its own folder, a run writes checkpoint-8 again in place. Killed after
    the new weights and before the new optimizer state, that checkpoint kept the old trainer_state.json, the mark of
    a whole checkpoint, over a mix of old and new files, and --resume took it. The old mark now goes first."""
    from transformers import Trainer

    from hf_minattn.run_folder import checkpoint_problem, last_complete_checkpoint

    out = tmp_path / "model"
    shutil.copytree(reference, out)
    assert checkpoint_problem(out / "checkpoint-8", 1) is None
    with killed_at(Trainer, "_save_optimizer_and_scheduler"), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, resume_from_checkpoint=out / "checkpoint-4", **ARGS))
    assert checkpoint_problem(out / "checkpoint-8", 1) == "has no trainer_state.json: its save was cut short"
    assert last_complete_checkpoint(out, 1) == str(out / "checkpoint-4")


@pytest.mark.slow
@pytest.mark.parametrize("kill", ["after the newest checkpoint", "before its optimizer state"])
def test_model_only_checkpoints_keep_the_newest_one_resumable(reference, tokenizer_dir, tmp_path, kill):
    """--save_only_model (the experiments' saved states) left no checkpoint to resume from: a killed run trained again
    from its start. The newest checkpoint is now saved whole, and the older ones lose the optimizer, scheduler and
    random states after it; killed before it is whole, the run resumes from the one before, which still has them. The
    rotation (--save_total_limit 2) keeps the newest two: removing the states kept each folder's time, by which it
    orders them."""
    from transformers import Trainer

    from hf_minattn.run_folder import checkpoint_problem
    from hf_minattn.trainer import MinAttnTrainer

    out = tmp_path / "model"
    args = dict(ARGS, save_steps=2, save_only_model="true", save_total_limit=2, early_save_every=1, early_save_until=2)
    killed = (killed_at(MinAttnTrainer, "training_step", call=7) if kill == "after the newest checkpoint" else
              killed_at(Trainer, "_save_optimizer_and_scheduler", call=3))  # at checkpoint-6's
    with killed, pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, **args))
    problems = {c.name: checkpoint_problem(c, 1) for c in out.glob("checkpoint-*")}
    resumable = "checkpoint-6" if kill == "after the newest checkpoint" else "checkpoint-4"
    assert [name for name, problem in problems.items() if problem is None] == [resumable], problems
    cut_short = {"checkpoint-6": "has no trainer_state.json: its save was cut short"} if resumable == "checkpoint-4" else {}
    assert {name: problem for name, problem in problems.items() if problem and not problem.startswith("is model-only")
            } == cut_short
    if kill == "after the newest checkpoint":
        assert sorted(problems) == ["checkpoint-4", "checkpoint-6"]  # the rotation kept the newest two
    assert not list((out / "early_states").glob("*/optimizer.pt"))  # the early state copied from checkpoint-2
    main(tiny_argv(out, tokenizer_dir, resume=True, **args))
    assert_same_run(out, reference)
    left = {c.name: checkpoint_problem(c, 1) for c in out.glob("checkpoint-*")}
    assert sorted(left) == ["checkpoint-6", "checkpoint-8"] and left["checkpoint-8"] is None
    assert left["checkpoint-6"].startswith("is model-only")
