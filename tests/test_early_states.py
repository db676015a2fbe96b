"""The finer grid of saved states early in training (hf_minattn.early_states): a real Trainer on a tiny model."""

import os

import pytest
import torch
from transformers import Trainer, TrainingArguments

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
