"""The finer grid of saved states early in training (hf_minattn.early_states): a real Trainer on a tiny model."""

import os

import pytest
import torch
from safetensors.torch import load_file
from transformers import Trainer, TrainerCallback, TrainingArguments

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.early_states import EarlyStates, StopAtStep, early_states_folder, early_steps

from conftest import tiny_config


def test_early_steps_are_the_multiples_up_to_the_last_and_none_when_off():
    assert early_steps(20, 100) == [20, 40, 60, 80, 100]
    assert early_steps(3, 10) == [3, 6, 9]
    assert early_steps(0, 400) == [] and early_steps(20, 0) == []
    with pytest.raises(ValueError, match="every.*-1"):
        early_steps(-1, 10)


def checkpoints(folder) -> list[int]:
    return sorted(int(n.split("-")[1]) for n in os.listdir(folder) if n.startswith("checkpoint-"))


def test_the_trainer_saves_model_only_states_at_exactly_the_early_steps_beside_its_own(tmp_path):
    torch.manual_seed(0)
    model = MinAttnForMaskedLM(tiny_config())
    ids = torch.randint(5, 99, (40, 12))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=9, per_device_train_batch_size=4, save_strategy="steps",
                             save_steps=4, save_only_model=True, save_total_limit=1, report_to="none", use_cpu=True,
                             logging_strategy="no", disable_tqdm=True)
    Trainer(model=model, args=args, train_dataset=data, callbacks=[EarlyStates(2, 7)]).train()
    early = early_states_folder(str(tmp_path))
    assert checkpoints(early) == [2, 4, 6]  # step 4 is the Trainer's own save too: copied, not moved
    assert checkpoints(tmp_path) == [9]  # save_total_limit 1 counted the Trainer's checkpoints only
    for step in (2, 4, 6):
        files = set(os.listdir(os.path.join(early, f"checkpoint-{step}")))
        assert "model.safetensors" in files and "optimizer.pt" not in files


def test_a_run_stopped_early_keeps_the_learning_rate_schedule_of_its_max_steps(tmp_path):
    model = MinAttnForMaskedLM(tiny_config())
    data = [{"input_ids": row, "labels": row} for row in torch.randint(5, 99, (40, 12))]
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=10, per_device_train_batch_size=4, save_strategy="no",
                             learning_rate=1e-3, report_to="none", use_cpu=True, logging_steps=1, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[StopAtStep(4)])
    trainer.train()
    assert trainer.state.global_step == 4
    rates = [log["learning_rate"] for log in trainer.state.log_history if "learning_rate" in log]
    assert rates[-1] == pytest.approx(1e-3 * 7 / 10)  # linear decay to 0 at step 10, not at step 4



def tiny_run(out, callbacks, eval_dataset=None, **arguments):
    """A real Trainer on a tiny model: 40 sequences in batches of 4 (10 steps an epoch)."""
    torch.manual_seed(0)
    data = [{"input_ids": row, "labels": row} for row in torch.randint(5, 99, (40, 12))]
    args = TrainingArguments(output_dir=str(out), per_device_train_batch_size=4, report_to="none", use_cpu=True,
                             logging_strategy="no", disable_tqdm=True, **arguments)
    return Trainer(model=MinAttnForMaskedLM(tiny_config()), args=args, train_dataset=data, eval_dataset=eval_dataset,
                   callbacks=callbacks, **({"compute_metrics": ranks()} if eval_dataset else {}))


class Resumable(TrainerCallback):
    """The checkpoints of output_dir after each step's save, when a kill would leave them to --resume."""

    def __init__(self):
        self.after = {}

    def on_step_begin(self, args, state, control, **kwargs):
        self.after[state.global_step] = checkpoints(args.output_dir)

    def on_train_end(self, args, state, control, **kwargs):
        self.on_step_begin(args, state, control)


def test_early_only_saves_leave_the_save_total_limit_to_the_trainers_checkpoints_and_a_killed_run_resumes(tmp_path):
    """The Trainer rotates inside its save, before on_save moved the early state out: checkpoint-6 counted against
    save_total_limit 1 and deleted checkpoint-4, then left, and a run killed at step 7 had nothing to resume from."""
    spy = Resumable()
    trainer = tiny_run(tmp_path, [spy, EarlyStates(2, 7), StopAtStep(7)], max_steps=9, save_strategy="steps",
                       save_steps=4, save_total_limit=1)
    trainer.train()  # stopped at step 7, unsaved: as if killed
    assert {step: spy.after[step] for step in range(4, 8)} == {4: [4], 5: [4], 6: [4], 7: [4]}
    assert checkpoints(early_states_folder(str(tmp_path))) == [2, 4, 6]
    assert trainer.args.save_total_limit == 1  # unset for the early-only saves only
    saved = torch.load(os.path.join(early_states_folder(str(tmp_path)), "checkpoint-6", "training_args.bin"),
                       weights_only=False)
    assert saved.save_total_limit == 1
    resumed = tiny_run(tmp_path, [EarlyStates(2, 7)], max_steps=9, save_strategy="steps", save_steps=4,
                       save_total_limit=1)
    resumed.train(resume_from_checkpoint=True)
    assert resumed.state.global_step == 9 and checkpoints(tmp_path) == [9]
    assert checkpoints(early_states_folder(str(tmp_path))) == [2, 4, 6]


def test_with_the_epoch_strategy_the_trainers_saves_at_early_steps_stay_to_resume_from(tmp_path):
    """Step 10 ends the first epoch, step 15 is where training stops: both are the Trainer's own saves (at the epoch's
    end), copied to early_states/ where they were moved, leaving nothing to resume from during the next epoch."""
    spy = Resumable()
    tiny_run(tmp_path, [spy, EarlyStates(5, 15), StopAtStep(15)], num_train_epochs=2, save_strategy="epoch",
             save_total_limit=3).train()
    assert all(spy.after[step] == [10] for step in range(10, 15)), spy.after
    assert checkpoints(tmp_path) == [10, 15]
    assert checkpoints(early_states_folder(str(tmp_path))) == [5, 10, 15]


def ranks():
    """compute_metrics whose "rank" grows at every evaluation: with greater_is_better false, the first is the best."""
    count = iter(range(1000))
    return lambda prediction: {"rank": float(next(count))}


def test_a_best_model_saved_as_an_early_state_is_loaded_from_early_states(tmp_path):
    """The best model (step 2, evaluated every 2 steps) was saved early-only and moved: the Trainer kept its old
    path, could not load it, and failed at the end comparing that path with its checkpoints (save_total_limit 1)."""
    evaluation = [{"input_ids": row, "labels": row} for row in torch.randint(5, 99, (4, 12))]
    trainer = tiny_run(tmp_path, [EarlyStates(2, 2)], evaluation, max_steps=4, save_strategy="steps", save_steps=4,
                       eval_strategy="steps", eval_steps=2, load_best_model_at_end=True, metric_for_best_model="rank",
                       greater_is_better=False, save_total_limit=1, learning_rate=1e-2)
    trainer.train()
    best = os.path.join(early_states_folder(str(tmp_path)), "checkpoint-2")
    assert trainer.state.best_model_checkpoint == best
    weights = load_file(os.path.join(best, "model.safetensors"))
    assert len(weights.keys() & trainer.model.state_dict().keys()) > 5
    assert all(torch.equal(weights[name], tensor) for name, tensor in trainer.model.state_dict().items()
               if name in weights)


def test_early_states_refuse_the_best_save_strategy(tmp_path):
    """With save_strategy "best", the Trainer drops a save asked for at an evaluation that is no new best."""
    evaluation = [{"input_ids": row, "labels": row} for row in torch.randint(5, 99, (4, 12))]
    trainer = tiny_run(tmp_path, [EarlyStates(2, 2)], evaluation, max_steps=4, save_strategy="best",
                       eval_strategy="steps", eval_steps=2, metric_for_best_model="rank")
    with pytest.raises(ValueError, match="not best"):
        trainer.train()


@pytest.mark.parametrize("step", ["4", True, 0, 2.0])
def test_stop_at_step_refuses_what_is_no_step_at_once(step):
    with pytest.raises(ValueError, match=repr(step).replace(".", r"\.")):
        StopAtStep(step)
    assert StopAtStep(None).step is None and StopAtStep(3).step == 3

@pytest.mark.slow
def test_run_mlm_saves_the_early_grid_of_a_shuffled_label_control_that_stops_early(tokenizer_dir, tmp_path):
    """run_mlm wires the three flags: the early states, model only, in early_states/; training ends at --stop_at_step
    while the learning rate follows --max_steps; --shuffle_labels trains on the default corpus."""
    import json

    from helpers_training import tiny_argv

    from hf_minattn.run_mlm import main

    out = tmp_path / "control"
    main(tiny_argv(out, tokenizer_dir, max_steps=8, save_steps=None, save_strategy="no", save_only_model="true",
                   max_train_samples=64, shuffle_labels="true", stop_at_step=4, early_save_every=2,
                   early_save_until=4, report_to="none", logging_steps=1))
    assert checkpoints(early_states_folder(str(out))) == [2, 4] and checkpoints(out) == []
    assert "optimizer.pt" not in os.listdir(os.path.join(early_states_folder(str(out)), "checkpoint-4"))
    with open(out / "trainer_state.json") as f:
        state = json.load(f)
    assert state["global_step"] == 4
    assert [log["learning_rate"] for log in state["log_history"] if "learning_rate" in log][-1] > 0
