"""The experiments' final scores (experiments/evaluation.py `score_model`) leave out the validation sequences the
learning rates were chosen on (the preset's `scored_from`), and FINDINGS says which sequences it scored."""

import copy

import pytest
import torch
from conftest import tiny_config
from test_findings import full_results

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.experiments.evaluation import MaskDraw, score_model, token_losses
from hf_minattn.experiments.findings import scale_paragraph
from hf_minattn.experiments.training import SETTINGS
from hf_minattn.unigram import UnigramFloor


def test_the_scores_leave_out_the_first_sequences_and_the_check_still_reads_them(tmp_path):
    torch.manual_seed(0)
    model = MinAttnForMaskedLM(tiny_config(max_position_embeddings=16)).eval()
    model.save_pretrained(tmp_path)
    ids = torch.randint(5, 99, (6, 16), generator=torch.Generator().manual_seed(1))  # (sequences, T)
    labels = torch.full_like(ids, -100)
    labels[:, ::3] = ids[:, ::3]
    draw = MaskDraw(0, -1, ids, torch.ones_like(ids), labels)
    unigram = UnigramFloor.from_token_ids([ids.flatten().numpy()], 99)
    every = score_model(str(tmp_path), [draw], unigram, batch_size=4, check_samples=2)
    later = score_model(str(tmp_path), [draw], unigram, batch_size=4, check_samples=2, scored_from=2)
    losses, _, sequence = token_losses(model, draw, 4)
    assert later["eval_loss"] == pytest.approx(losses[sequence >= 2].mean()) != every["eval_loss"]
    assert every["eval_loss"] == pytest.approx(losses.mean())
    assert later["masked_tokens"] == int((labels[2:] != -100).sum()) < every["masked_tokens"]
    assert later["unigram_loss"] == pytest.approx(unigram.cross_entropy(labels[2:][labels[2:] != -100].numpy()))
    # run_mlm's own evaluation set (the first 2 here) is still scored, to compare with its eval_results.json
    check = pytest.approx(losses[sequence < 2].mean())
    assert later["run_mlm_masks_loss_on_trainer_eval_set"] == check == every["run_mlm_masks_loss_on_trainer_eval_set"]


def test_the_full_preset_scores_none_of_the_sequences_its_learning_rates_were_chosen_on():
    full = SETTINGS["full"]
    assert full["scored_from"] >= full["curve_eval_samples"]  # lr_study.py chose on the curve's sequences


def test_findings_say_which_validation_sequences_were_scored():
    results = full_results()
    assert "scored on the whole validation set masked" in scale_paragraph(results)[0]
    later = copy.deepcopy(results)
    later["scored_sequences"] = [128, 583]
    text = scale_paragraph(later)[0]
    assert ("scored on the 455 validation sequences after the first 128 (those the learning rates were chosen on) "
            "masked") in text and "whole validation set" not in text
    later["scored_sequences"] = [0, 583]
    assert "scored on the whole validation set" in scale_paragraph(later)[0]
