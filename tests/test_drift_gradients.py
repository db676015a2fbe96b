"""drift.json's gradient norms are ||dL/dW||, read before the Trainer clips the gradients to max_grad_norm."""

import json

import pytest
import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments

from conftest import tiny_config
from hf_minattn import MinAttnForMaskedLM
from hf_minattn.drift import DRIFT_FILE, DriftCallback, read_drift
from hf_minattn.trainer import MinAttnTrainer


class Batches(Dataset):
    def __init__(self):
        self.ids = torch.randint(5, 99, (8, 12), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        labels = torch.full_like(self.ids[i], -100)
        labels[::3] = self.ids[i][::3]
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": labels}


def train(folder, max_grad_norm, trainer_class=MinAttnTrainer):
    torch.manual_seed(0)
    model = MinAttnForMaskedLM(tiny_config())
    drift = DriftCallback(model)
    args = TrainingArguments(output_dir=str(folder), max_steps=2, logging_steps=1, per_device_train_batch_size=4,
                             max_grad_norm=max_grad_norm, report_to="none", save_strategy="no", use_cpu=True,
                             disable_tqdm=True, dataloader_num_workers=0)
    if trainer_class is MinAttnTrainer:
        trainer = MinAttnTrainer(model=model, args=args, train_dataset=Batches(), drift=drift, sparse_prediction=False)
    else:
        trainer = trainer_class(model=model, args=args, train_dataset=Batches(), callbacks=[drift])
    trainer.train()
    with open(folder / DRIFT_FILE) as f:
        return json.load(f)


def first_step_norms(data):
    return data["records"][1]["grad_norm"]


def test_gradient_norms_are_measured_before_clipping(tmp_path):
    # With max_grad_norm 1e-6 every step is clipped; the recorded norms of the first step (same weights, same batch)
    # must still be those of the unclipped run. Read after clipping, they would all be about 1e-6 or less.
    clipped, unclipped = train(tmp_path / "clipped", 1e-6), train(tmp_path / "unclipped", 0.0)
    for name, value in first_step_norms(unclipped).items():
        if value is not None:
            assert first_step_norms(clipped)[name] == pytest.approx(value, rel=1e-5), name
    assert clipped["grad_norm_before_clipping"] is True and unclipped["grad_norm_before_clipping"] is True
    assert read_drift(tmp_path / "clipped").grad_norm_before_clipping is True


def test_a_plain_trainer_says_its_norms_are_after_clipping(tmp_path):
    # A plain Trainer clips before the only callback hook that sees the gradients: the file says so
    assert train(tmp_path / "plain", 1e-6, trainer_class=Trainer)["grad_norm_before_clipping"] is False
    assert train(tmp_path / "off", 0.0, trainer_class=Trainer)["grad_norm_before_clipping"] is True


def test_a_file_without_the_field_reads_as_after_clipping(tmp_path):
    record = {"step": 0, "epoch": 0, "loss": None, "drift": {"word_embeddings": 0.0}, "grad_norm": {"word_embeddings": None}}
    (tmp_path / DRIFT_FILE).write_text(json.dumps({"tracked": ["word_embeddings"], "records": [record]}))
    assert read_drift(tmp_path).grad_norm_before_clipping is False
