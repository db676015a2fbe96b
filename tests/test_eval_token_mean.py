"""The gain over the unigram floor that run_mlm's evaluation logs is a mean over masked tokens, as the floor is: the
Trainer's eval_loss is a mean of per-batch means (weighted by sequences), which weighs a token by how few tokens its
batch holds."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import TrainingArguments

from conftest import tiny_config
from hf_minattn import MinAttnForMaskedLM
from hf_minattn.trainer import MinAttnTrainer, metrics_computer, preprocess_logits_for_metrics
from hf_minattn.unigram import UnigramFloor


class Unequal(Dataset):
    """Three sequences, evaluated two to a batch: the first batch holds 2 + 6 labelled tokens, the second 1."""

    def __init__(self):
        self.ids = torch.randint(5, 99, (3, 12), generator=torch.Generator().manual_seed(1))
        self.labelled = [[0, 5], [1, 2, 3, 7, 8, 9], [4]]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        labels = torch.full_like(self.ids[i], -100)
        labels[self.labelled[i]] = self.ids[i][self.labelled[i]]
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": labels}


@pytest.mark.parametrize("sparse", [True, False])
def test_the_logged_gain_is_the_floor_minus_the_mean_over_masked_tokens(tmp_path, sparse):
    torch.manual_seed(0)
    model = MinAttnForMaskedLM(tiny_config()).eval()
    data = Unequal()
    floor = UnigramFloor.from_token_ids([list(range(5, 99)) * 3], model.config.vocab_size)
    args = TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=2, report_to="none", use_cpu=True,
                             disable_tqdm=True, dataloader_num_workers=0)
    trainer = MinAttnTrainer(model=model, args=args, eval_dataset=data, compute_metrics=metrics_computer(floor),
                             preprocess_logits_for_metrics=preprocess_logits_for_metrics, sparse_prediction=sparse)
    metrics = trainer.evaluate()
    with torch.no_grad():  # by hand: every labelled token's cross-entropy, averaged over tokens
        batch = [data[i] for i in range(3)]
        logits = model(input_ids=torch.stack([b["input_ids"] for b in batch])).logits
        labels = torch.stack([b["labels"] for b in batch])
        per_token = F.cross_entropy(logits[labels != -100], labels[labels != -100], reduction="none")
    assert metrics["eval_token_loss"] == pytest.approx(float(per_token.mean()), abs=1e-5)
    # the Trainer's: each batch's mean repeated once per sequence of the batch, then averaged
    by_batch = (2 * float(per_token[:8].mean()) + float(per_token[8:].mean())) / 3
    assert metrics["eval_loss"] == pytest.approx(by_batch, abs=1e-5) and abs(by_batch - per_token.mean()) > 1e-3
    assert metrics["eval_gain_over_unigram"] == pytest.approx(metrics["eval_unigram_loss"] - float(per_token.mean()),
                                                              abs=1e-5)


def test_preprocessing_keeps_each_labelled_tokens_loss_in_the_labels_layout():
    labels = torch.tensor([[-100, 3, -100, 7], [2, -100, -100, -100]])
    dense = torch.randn(2, 4, 10)
    sparse = dense[labels != -100]  # (3, 10): what sparse prediction returns
    for logits in (dense, sparse):
        predictions, losses = preprocess_logits_for_metrics(logits, labels)
        np.testing.assert_array_equal(predictions[labels != -100], dense[labels != -100].argmax(-1))
        assert (predictions[labels == -100] == -100).all() and (losses[labels == -100] == 0).all()
        torch.testing.assert_close(losses[labels != -100], F.cross_entropy(sparse, labels[labels != -100], reduction="none"))
