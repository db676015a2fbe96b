"""The experiments' final scores (experiments/evaluation.py `score_model`) leave out the validation sequences the
learning rates were chosen on (the preset's `scored_from`), and FINDINGS says which sequences it scored."""

import copy

import pytest
import torch
from conftest import benchmark_script, tiny_config
from test_findings import full_results

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.experiments.evaluation import MaskDraw, score_model, token_losses
from hf_minattn.experiments.findings import scale_paragraph
from hf_minattn.experiments.findings_training import curve_text
from hf_minattn.experiments.training import SETTINGS, VARIANTS, curve_sequences, variant_arguments
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
    every = score_model(str(tmp_path), [draw], unigram, batch_size=4, checked=range(2))
    later = score_model(str(tmp_path), [draw], unigram, batch_size=4, checked=range(2), scored_from=2)
    losses, _, sequence = token_losses(model, draw, 4)
    assert later["eval_loss"] == pytest.approx(losses[sequence >= 2].mean()) != every["eval_loss"]
    assert every["eval_loss"] == pytest.approx(losses.mean())
    assert later["masked_tokens"] == int((labels[2:] != -100).sum()) < every["masked_tokens"]
    assert later["unigram_loss"] == pytest.approx(unigram.cross_entropy(labels[2:][labels[2:] != -100].numpy()))
    # run_mlm's own evaluation set (the first 2 here) is still scored, to compare with its eval_results.json
    check = pytest.approx(losses[sequence < 2].mean())
    assert later["run_mlm_masks_loss_on_trainer_eval_set"] == check == every["run_mlm_masks_loss_on_trainer_eval_set"]
    # a run that evaluated later sequences (--skip_eval_samples) is checked on those
    skipped = score_model(str(tmp_path), [draw], unigram, batch_size=4, checked=range(2, 4), scored_from=2)
    assert skipped["run_mlm_masks_loss_on_trainer_eval_set"] == pytest.approx(
        losses[(sequence >= 2) & (sequence < 4)].mean()) != check


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def test_the_full_preset_reads_none_of_the_sequences_its_learning_rates_were_chosen_on():
    """benchmarks/lr_study.py chose the rates on the first curve_eval_samples validation sequences; the experiments
    leave them out of their final scores (scored_from) and, since PROTOCOL.md version 3, of the curves during
    training, the loss allocation's batch and the heads' plateau exit (curve_eval_from, run_mlm's
    --skip_eval_samples). The study itself still evaluates on them."""
    full = SETTINGS["full"]
    tuning = range(full["curve_eval_samples"])
    assert full["scored_from"] >= tuning.stop and curve_sequences(full, 583) == range(128, 256)
    run = variant_arguments(full, VARIANTS[0], 13, "folder")
    assert flag(run, "--skip_eval_samples") == "128" and flag(run, "--max_eval_samples") == "128"
    study = benchmark_script("lr_study").study_arguments(full, VARIANTS[0], 1e-3, 0, "folder", None)
    assert flag(study, "--skip_eval_samples") is None and flag(study, "--max_eval_samples") == str(tuning.stop)
    assert flag(study, "--learning_rate") == "0.001" and "--loss_allocation" not in study
    # the quick preset skips too (its tests run that path); results.json files without curve_eval_from: the first
    assert curve_sequences(SETTINGS["quick"], 50) == range(32, 50) and "--skip_eval_samples" in \
        variant_arguments(SETTINGS["quick"], VARIANTS[0], 0, "folder")
    assert curve_sequences({"curve_eval_samples": 32}, 50) == range(32)
    assert curve_sequences({"curve_eval_samples": None}, 50) == range(50)


def test_findings_name_the_sequences_of_the_curves():
    settings = {"curve_eval_samples": 128}
    assert curve_text(settings) == "128 validation sequences"
    assert curve_text({**settings, "curve_eval_from": 128}) == "validation sequences 128-255"
    assert curve_text({"curve_eval_samples": None}) == "full validation sequences"


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


def test_the_runs_that_read_the_shared_tokenizer_pass_no_vocab_size(tokenizer_dir, tmp_path):
    """Each run but the one that trains the shared tokenizer reads it (--tokenizer_name): run_mlm refuses a
    --vocab_size beside it, which it would ignore (the quick preset's 2000 is not run_mlm's default)."""
    from hf_minattn.run_mlm import parse_args

    run = variant_arguments(SETTINGS["quick"], VARIANTS[0], 0, str(tmp_path / "run"), str(tokenizer_dir))
    assert "--vocab_size" not in run and flag(run, "--tokenizer_name") == str(tokenizer_dir)
    parse_args(run)  # accepted
    assert flag(variant_arguments(SETTINGS["quick"], VARIANTS[0], 0, "folder"), "--vocab_size") == "2000"
