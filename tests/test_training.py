"""training/run_mlm.py: real (tiny) training runs, the Hub-format output, drift.json, distributed runs,
resuming after SIGKILL, and the errors raised before training starts. What the Trainer fed the model is recorded
(helpers_training.recorded_forward_calls): the evaluation is checked against its own batches, sparse prediction
against the logits' shapes, and every per-epoch draw (masks, order) by comparing epochs."""

import math
import signal
import socket
import subprocess
import sys
import time

import datasets
import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

import hf_minattn
from hf_minattn.cli import run_reporting_errors
from hf_minattn.data import tokenize_and_group
from hf_minattn.loss_allocation import read_loss_allocation
from hf_minattn.model_card import floor_sentence, validate_model_card
from hf_minattn.run_mlm import main, parse_args

from helpers_training import (ACCELERATE_CPU_CONFIG, RUN_MLM, read_json, recorded_forward_calls, run_script,
                              subprocess_env, tiny_argv)


@pytest.fixture(scope="module")
def trained(text_files, tmp_path_factory):
    """One tiny run on local .txt files, with a tokenizer trained by the script (the default), whole-word masking:
    (output folder, metrics, every forward call of the model by the Trainer)."""
    out = tmp_path_factory.mktemp("run") / "model"
    with recorded_forward_calls() as calls:
        metrics = main(tiny_argv(out, train_file=text_files / "train.txt", validation_file=text_files / "validation.txt",
                                 vocab_size=300, whole_word_mask=True))
    return out, metrics, calls


def test_help_lists_the_flags_people_look_for(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    for flag in ("--model_size", "--config_overrides", "--train_file", "--streaming", "--resume", "--bf16",
                 "--max_train_minutes", "--freeze_embeddings", "--tokenizer_model", "--push_to_hub", "--hub_model_id"):
        assert flag in help_text, flag
    assert "tiny: hidden_size=" in help_text  # the size presets are spelled out


def test_output_folder_is_a_hub_model(trained):
    out, _, _ = trained
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "configuration_minattn.py",
                 "modeling_minattn.py", "training_args.bin", "run_args.json", "train_results.json", "eval_results.json",
                 "trainer_state.json", "drift.json", "README.md", "modules.json", "sentence_bert_config.json",
                 "1_Pooling/config.json"):
        assert (out / name).is_file(), name
    auto_map = read_json(out / "config.json")["auto_map"]
    assert auto_map["AutoModelForMaskedLM"] == "modeling_minattn.MinAttnForMaskedLM"
    assert read_json(out / "run_args.json")["data_args"]["train_file"].endswith("train.txt")
    assert list((out / "runs").rglob("events.out.tfevents.*")), "TensorBoard is the default logger"
    model = AutoModelForMaskedLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert isinstance(model, hf_minattn.MinAttnForMaskedLM) and model.config.vocab_size == len(tokenizer)
    assert len(tokenizer) == 300
    assert read_json(out / "sentence_bert_config.json")["max_seq_length"] == 64


def test_training_projects_at_masked_positions_only_and_saves_the_config_as_chosen(trained):
    """Every loss the Trainer computed, in training and in evaluation, used sparse prediction (logits of shape
    (masked tokens, vocabulary)), while config.json says sparse_prediction false, the default the user left, in the
    final folder and in every checkpoint: the saved model gives the full logits code written for BERT expects."""
    out, _, calls = trained
    vocab_size = read_json(out / "config.json")["vocab_size"]
    assert sum(call.training for call in calls) == 8 and any(not call.training for call in calls)  # 8 steps, then eval
    for call in calls:
        assert call.sparse_prediction is True
        assert call.logits_shape == (int((call.labels != -100).sum()), vocab_size)
    checkpoints = sorted(out.glob("checkpoint-*"))
    assert checkpoints
    for folder in (out, *checkpoints):
        assert read_json(folder / "config.json")["sparse_prediction"] is False, folder
    model = AutoModelForMaskedLM.from_pretrained(out).eval()
    with torch.no_grad():
        assert model(**calls[-1].batch()).logits.shape == (*calls[-1].input_ids.shape, vocab_size)


def test_the_loss_is_the_same_with_and_without_sparse_prediction(trained):
    """On a batch the Trainer evaluated: the same loss whether the head projects at the masked positions only or at
    every position, the sparse logits are the full logits' masked rows, and both equal the loss the Trainer saw."""
    out, _, calls = trained
    model = AutoModelForMaskedLM.from_pretrained(out).eval()
    call = calls[-1]
    with torch.no_grad():
        sparse = model(**call.batch(), sparse_prediction=True)
        dense = model(**call.batch(), sparse_prediction=False)
    labelled = call.labels != -100
    assert sparse.logits.shape == (int(labelled.sum()), model.config.vocab_size)
    assert torch.allclose(sparse.logits, dense.logits[labelled], atol=1e-5)
    assert sparse.loss.item() == pytest.approx(dense.loss.item(), rel=1e-6)
    assert sparse.loss.item() == pytest.approx(call.loss, rel=1e-6)


def evaluated_batches(calls) -> list:
    """The calls of the last evaluation: those in eval mode after the last training step."""
    last_training = max((i for i, call in enumerate(calls) if call.training), default=-1)
    return [call for call in calls[last_training + 1 :] if not call.training]


def masked_accuracy_from_batches(out, batches) -> tuple[float, int]:
    """Masked-token accuracy and count from the evaluated batches alone: the top prediction of the model saved in
    `out` (its full logits) at every labelled position (labels != -100), against the label."""
    model = AutoModelForMaskedLM.from_pretrained(out).eval()
    correct = masked = 0
    with torch.no_grad():
        for call in batches:
            logits = model(input_ids=call.input_ids, attention_mask=call.attention_mask).logits  # (B, T, V)
            labelled = call.labels != -100
            correct += (logits.argmax(-1)[labelled] == call.labels[labelled]).sum().item()
            masked += labelled.sum().item()
    return correct / masked, masked


def check_masks_of_batches(batches, sequences, tokenizer, mlm_probability: float, whole_word_mask: bool) -> None:
    """The masks the evaluated batches carry, against the unmasked `sequences` (list of token id lists, in order):
    labels are the tokens that were there, unlabelled positions are untouched, special tokens are never masked,
    about `mlm_probability` of the other tokens are, and the inputs at masked positions are ~80% [MASK], the rest
    random tokens or the token itself; all [MASK] with whole-word masking (transformers' collator does so)."""
    input_ids = torch.cat([call.input_ids for call in batches])  # (N, T)
    labels = torch.cat([call.labels for call in batches])
    original = torch.tensor(sequences)
    assert input_ids.shape == original.shape
    labelled = labels != -100
    assert torch.equal(labels[labelled], original[labelled])
    assert torch.equal(input_ids[~labelled], original[~labelled])
    # the tokens the tokenizer adds; an [UNK] stands for a word of the text, and is masked as any word is (as BERT's
    # own masking does): the collator's special_tokens_mask marks only the added ones
    added = [i for i in tokenizer.all_special_ids if i != tokenizer.unk_token_id]
    special = torch.isin(original, torch.tensor(added))
    assert not (labelled & special).any()
    assert 0.5 * mlm_probability < labelled.sum().item() / (~special).sum().item() < 1.5 * mlm_probability
    shown = input_ids[labelled]  # what the model saw at the masked positions
    if whole_word_mask:
        assert (shown == tokenizer.mask_token_id).all()
        return
    assert 0.7 < (shown == tokenizer.mask_token_id).float().mean().item() < 0.9
    assert (shown == original[labelled]).any()
    assert ((shown != tokenizer.mask_token_id) & (shown != original[labelled])).any()


def test_evaluation_reports_loss_perplexity_and_masked_accuracy(trained, text_files):
    out, metrics, calls = trained
    results = read_json(out / "eval_results.json")
    assert math.isfinite(results["eval_loss"])
    assert results["eval_perplexity"] == pytest.approx(math.exp(results["eval_loss"]))
    assert results == {k: v for k, v in metrics.items() if k in results}
    batches = evaluated_batches(calls)
    assert sum(len(call.input_ids) for call in batches) == 20  # --max_eval_samples, each sequence once
    accuracy, masked = masked_accuracy_from_batches(out, batches)
    assert results["eval_masked_tokens"] == masked
    assert results["eval_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    files = {"train": str(text_files / "train.txt"), "validation": str(text_files / "validation.txt")}
    _, data_args, training_args = parse_args(tiny_argv(out, train_file=files["train"], whole_word_mask=True))
    tokenizer = AutoTokenizer.from_pretrained(out)
    grouped = tokenize_and_group(datasets.load_dataset("text", data_files=files), tokenizer, "text", data_args, 64,
                                 training_args)
    check_masks_of_batches(batches, grouped["validation"]["input_ids"][:20], tokenizer, data_args.mlm_probability,
                           whole_word_mask=True)
    # Whole-word masking: a labelled word piece ("##...") always comes with the piece before it.
    labels = torch.cat([call.labels for call in batches])
    pieces = [(row, i) for row, i in (labels[:, 1:] != -100).nonzero().tolist()
              if tokenizer.convert_ids_to_tokens(int(labels[row, i + 1])).startswith("##")]
    assert pieces and all(labels[row, i] != -100 for row, i in pieces)
    # The unigram floor: token frequencies of the training sequences (special tokens left out, add-one smoothed),
    # scored on the same masked tokens; the gain is the floor minus the model's loss.
    train_ids = [t for seq in grouped["train"]["input_ids"][: data_args.max_train_samples]  # the sequences trained on
                 for t in seq if t not in tokenizer.all_special_ids]
    counts = torch.bincount(torch.tensor(train_ids), minlength=len(tokenizer)).double()
    floor = -torch.log((counts + 1) / (counts.sum() + len(tokenizer)))[labels[labels != -100]].mean().item()
    assert results["eval_unigram_loss"] == pytest.approx(floor, abs=1e-6)
    # the gain is a mean over masked tokens, as the floor is (eval_loss averages the batches' means)
    assert results["eval_gain_over_unigram"] == pytest.approx(floor - results["eval_token_loss"], abs=1e-9)
    assert results["eval_token_loss"] == pytest.approx(results["eval_loss"], abs=0.05)


# --- every per-epoch random draw, compared across epochs -------------------------------------------------------


def examples_by_epoch(calls, epochs: int) -> list[list[tuple]]:
    """Per epoch, the training examples in the order the Trainer fed them, each as (its unmasked tokens, the set of
    its masked positions); the unmasked tokens come from the batch itself (the label where there is one)."""
    training = [call for call in calls if call.training]
    assert len(training) % epochs == 0
    per_epoch = len(training) // epochs
    result = []
    for epoch in range(epochs):
        examples = []
        for call in training[epoch * per_epoch : (epoch + 1) * per_epoch]:
            labelled = call.labels != -100
            original = torch.where(labelled, call.labels, call.input_ids)
            examples += [(tuple(row.tolist()), frozenset(mask.nonzero()[:, 0].tolist()))
                         for row, mask in zip(original, labelled)]
        result.append(examples)
    return result


def assert_new_masks_every_epoch(epochs: list[list[tuple]]) -> None:
    """The same examples in every epoch, each masked at other positions than in the epoch before."""
    for before, after in zip(epochs, epochs[1:]):
        masks_before, masks_after = dict(before), dict(after)
        assert len(masks_before) == len(before) and masks_before.keys() == masks_after.keys()
        assert all(masks_before[example] != masks_after[example] for example in masks_before)


@pytest.fixture(scope="module")
def three_epochs(tokenizer_dir, tmp_path_factory):
    """Three epochs of 24 sequences (3 steps each) on the default corpus, with sparse_prediction chosen in the config:
    (output folder, every forward call of the model by the Trainer)."""
    out = tmp_path_factory.mktemp("epochs") / "model"
    with recorded_forward_calls() as calls:
        main(tiny_argv(out, tokenizer_dir, max_steps=None, num_train_epochs=3, max_train_samples=24, save_steps=9,
                       do_eval="false", report_to="none", config_overrides="sparse_prediction=true"))
    return out, calls


@pytest.mark.slow
def test_every_epoch_masks_each_example_anew(three_epochs):
    """As run_mlm's Trainer feeds them (its sampler, the collator, the epoch it is told): each example's masked
    positions differ from one epoch to the next."""
    _, calls = three_epochs
    assert_new_masks_every_epoch(examples_by_epoch(calls, 3))


@pytest.mark.slow
def test_every_epoch_shuffles_the_examples_anew(three_epochs):
    _, calls = three_epochs
    orders = [[tokens for tokens, _ in examples] for examples in examples_by_epoch(calls, 3)]
    assert sorted(orders[0]) == sorted(orders[1]) == sorted(orders[2])
    assert orders[0] != orders[1] and orders[1] != orders[2] and orders[0] != orders[2]


@pytest.mark.slow
def test_training_masks_replace_as_bert_does(three_epochs, tokenizer_dir):
    """The training batches (no whole-word masking): special tokens never masked, about 15% of the others masked,
    and of those ~80% shown as [MASK], the rest as a random token or themselves."""
    _, calls = three_epochs
    training = [call for call in calls if call.training]
    sequences = torch.cat([torch.where(call.labels != -100, call.labels, call.input_ids) for call in training])
    check_masks_of_batches(training, sequences.tolist(), AutoTokenizer.from_pretrained(tokenizer_dir), 0.15,
                           whole_word_mask=False)


@pytest.mark.slow
def test_a_chosen_sparse_prediction_is_saved_as_chosen(three_epochs):
    out, _ = three_epochs
    for folder in (out, out / "checkpoint-9"):
        assert read_json(folder / "config.json")["sparse_prediction"] is True


@pytest.mark.slow
def test_every_pass_over_a_stream_masks_each_example_anew(tokenizer_dir, text_files, tmp_path):
    """--streaming, --max_steps beyond the stream (24 sequences, 3 steps a pass, 6 steps): the second pass masks
    every sequence at other positions than the first."""
    with recorded_forward_calls() as calls:
        main(tiny_argv(tmp_path / "model", tokenizer_dir, train_file=text_files / "train.txt",
                       validation_file=text_files / "validation.txt", streaming=True, max_steps=6, max_train_samples=24,
                       do_eval="false", report_to="none"))
    assert_new_masks_every_epoch(examples_by_epoch(calls, 2))


def test_model_card_has_metadata_and_results(trained):
    out, metrics, _ = trained
    card = validate_model_card(out / "README.md")
    assert card.data.library_name == "transformers" and card.data.pipeline_tag == "fill-mask"
    perplexity = {r.metric_type: r.metric_value for r in card.data.eval_results}["perplexity"]
    assert perplexity == pytest.approx(metrics["eval_perplexity"], rel=1e-3)
    text = card.text
    for section in ("## Training", "## Results", "## How to use", "trust_remote_code=True", "## Limitations"):
        assert section in text
    assert f"{metrics['eval_perplexity']:.4f}" in text
    assert "Unigram floor" in text and f"{metrics['eval_unigram_loss']:.4f}" in text
    assert "every masked token shown as `[MASK]`" in text and "10% random" not in text  # whole-word masking
    assert floor_sentence(metrics, kept=0.0) in text  # whole-word masking leaves no scored token unchanged
    assert "in progress" not in text


def test_floor_sentence_follows_the_gain():
    below = floor_sentence({"eval_unigram_loss": 7.0, "eval_gain_over_unigram": 1.25})
    above = floor_sentence({"eval_unigram_loss": 7.0, "eval_gain_over_unigram": -0.03})
    assert "1.25 nats below the unigram floor (7.00)" in below and "so it uses their context (copying the 10% of " \
           "scored tokens the masking leaves unchanged could give at most 0.70 nats of it)." in below
    assert "not below the unigram floor" in above and "no better than their frequencies" in above
    copying = floor_sentence({"eval_unigram_loss": 7.0, "eval_gain_over_unigram": 0.5})  # under 10% x 7.0
    assert "no more than copying the 10% of scored tokens" in copying and "uses their context is not shown" in copying
    whole_words = floor_sentence({"eval_unigram_loss": 7.0, "eval_gain_over_unigram": 0.5}, kept=0.0)
    assert whole_words.endswith("so it uses their context.")  # every masked token is [MASK]: nothing to copy
    assert floor_sentence({"eval_loss": 6.0}) is None  # an evaluation without the floor says nothing about it


def test_drift_is_recorded_every_logging_step(trained):
    out, _, _ = trained
    drift = read_json(out / "drift.json")
    records = drift["records"]
    assert [r["step"] for r in records] == [0, 1, 2, 4, 6, 8]  # initial state, logging_first_step, every 2 steps
    expected = {"word_embeddings", "position_embeddings"} | {f"layers.{i}.{w}" for i in range(2) for w in ("W_Q", "W_K", "W_V", "W_O")}
    assert set(drift["tracked"]) == expected
    assert all(v == 0 for v in records[0]["drift"].values())
    last = records[-1]
    assert all(last["drift"][name] > 0 for name in expected)
    assert all(last["grad_norm"][name] > 0 for name in expected)
    # Monotone here: a few steps of Adam from the initial values only move away from them.
    words = [r["drift"]["word_embeddings"] for r in records]
    assert words == sorted(words)


@pytest.mark.slow
def test_default_corpus_frozen_embeddings_identity_qkv_line_by_line(tokenizer_dir, tmp_path):
    """The embedded Wikipedia sample (no dataset named), --freeze_embeddings, MinAttn fields through
    --config_overrides, and --line_by_line, in one run."""
    out = tmp_path / "model"
    main(tiny_argv(out, tokenizer_dir, max_steps=3, logging_steps=1, max_train_samples=48, freeze_embeddings=True,
                   line_by_line=True, config_overrides="intermediate_size=0,qkv_projection=identity", report_to="none"))
    config = read_json(out / "config.json")
    assert config["intermediate_size"] == 0 and config["qkv_projection"] == "identity"
    last = read_json(out / "drift.json")["records"][-1]
    assert last["drift"]["word_embeddings"] == 0 and last["grad_norm"]["word_embeddings"] is None
    assert last["drift"]["position_embeddings"] == 0
    assert last["drift"]["layers.0.W_Q"] == 0 and last["grad_norm"]["layers.0.W_Q"] is None  # fixed identity
    assert last["drift"]["layers.0.W_O"] > 0
    assert "gensim" in (out / "README.md").read_text()


def test_pad_to_max_length_gives_every_line_the_same_length_and_the_model_never_sees_its_padding(
        tokenizer_dir, text_files, tmp_path):
    """--line_by_line --pad_to_max_length: every sequence has --max_seq_length tokens; in the training batches and
    the masked validation set the padding has attention 0 and is never a target. Without the flag each line keeps
    its own length; without --line_by_line the flag is refused by name."""
    from hf_minattn.masking import MLMCollator, mask_once

    files = {"train": str(text_files / "train.txt"), "validation": str(text_files / "validation.txt")}
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    grouped = {}
    for pad in (False, True):
        _, data_args, training_args = parse_args(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=files["train"],
                                                           line_by_line=True, pad_to_max_length=pad or None))
        grouped[pad] = tokenize_and_group(datasets.load_dataset("text", data_files=files), tokenizer, "text",
                                          data_args, 128, training_args)
    lengths = {pad: {len(ids) for ids in g["train"]["input_ids"]} for pad, g in grouped.items()}
    assert lengths[True] == {128} and len(lengths[False]) > 1 and max(lengths[False]) <= 128
    collator = MLMCollator(tokenizer, data_args, seed=0)
    train = [{**grouped[True]["train"][i], "example_index": i} for i in range(16)]
    for batch in (collator(train), collator(list(mask_once(grouped[True]["validation"], collator))[:16])):
        padding = batch["input_ids"] == tokenizer.pad_token_id
        assert batch["input_ids"].shape[1] == 128 and padding.any()
        assert (batch["attention_mask"] == ~padding).all() and (batch["labels"][padding] == -100).all()
    with pytest.raises(ValueError, match="--pad_to_max_length pads the sequences of --line_by_line"):
        parse_args(tiny_argv(tmp_path / "out", train_file=files["train"], pad_to_max_length=True))


# --- errors before training -------------------------------------------------------------------------------


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        main(tiny_argv(tmp_path / "out", train_file=missing))


def test_empty_corpus(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="no text|empty"):
        main(tiny_argv(tmp_path / "out", train_file=tmp_path / "empty.txt"))
    assert not (tmp_path / "out" / "tokenizer.json").exists()  # failed before training a tokenizer


def test_unknown_text_column_lists_the_columns(tmp_path):
    (tmp_path / "data.csv").write_text("title,body\n" + "a,some text here\n" * 20)
    with pytest.raises(ValueError, match=r"'content'.*\['title', 'body'\]"):
        main(tiny_argv(tmp_path / "out", train_file=tmp_path / "data.csv", text_column_name="content"))


def test_the_text_column_is_the_first_column_of_strings_and_a_column_of_numbers_is_refused(tmp_path):
    """A CSV whose first column holds numbers: without --text_column_name the text column is the first column of
    strings; naming the numbers is refused by name (both used to end in AttributeError: 'int' object has no
    attribute 'isspace')."""
    import datasets

    from hf_minattn.data import resolve_text_column

    rows = {"id": list(range(20)), "body": [f"some text here {i}" for i in range(20)]}
    raw = datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows),
                                "validation": datasets.Dataset.from_dict(rows)})
    assert resolve_text_column(raw, None) == "body"
    with pytest.raises(ValueError, match=r"column 'id' of the train split of the data holds int values such as 0, not "
                                         r"text; name the text column with --text_column_name \(columns: \['id', "
                                         r"'body'\]\)"):
        resolve_text_column(raw, "id")
    with pytest.raises(ValueError, match=r"--text_column_name 'title' is not a column of the train split of the data; "
                                         r"its columns: \['id', 'body'\]"):
        resolve_text_column(raw, "title")
    # a split with no rows (a stream of fewer texts than it holds out for validation) says so
    raw["train"] = datasets.Dataset.from_dict({"id": [], "body": []})
    with pytest.raises(ValueError, match=r"^The train split of the data is empty$"):
        resolve_text_column(raw, "body")


def test_a_null_or_blank_text_is_skipped_in_both_kinds_of_sequences(tmp_path, tokenizer):
    """A JSON-lines row whose text is null passes the text-column check (None is a missing text): the concatenated
    sequences skip it, as the line-by-line ones and the tokenizer trainer do (the concatenation used to hand None to
    the tokenizer: a TypeError from inside datasets.map). Blank texts (a text file's empty lines between
    paragraphs) are skipped too: the concatenation used to add a [CLS] [SEP] pair for each."""
    import json

    texts = ["The king and the queen ruled.", None, "", "  ", "A dog barked at the cat."]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    raw = datasets.load_dataset("json", data_files={"train": str(tmp_path / "data.jsonl"),
                                                    "validation": str(tmp_path / "data.jsonl")},
                                cache_dir=str(tmp_path / "cache"))
    for line_by_line in (False, True):
        _, data_args, training_args = parse_args(tiny_argv(tmp_path / "out", line_by_line=line_by_line or None))
        grouped = tokenize_and_group(raw, tokenizer, "text", data_args, 4, training_args)
        if line_by_line:  # one sequence per text, cut to 4 tokens
            expected = [tokenizer(t, truncation=True, max_length=4)["input_ids"] for t in texts if t and t.strip()]
        else:  # the texts' [CLS] ... [SEP] concatenated, then cut into chunks of 4
            flat = [token for t in texts if t and t.strip() for token in tokenizer(t)["input_ids"]]
            expected = [flat[i:i + 4] for i in range(0, len(flat) // 4 * 4, 4)]
        assert list(grouped["train"]["input_ids"]) == expected, f"line_by_line={line_by_line}"


def test_a_parquet_file_trains_and_a_file_that_is_not_parquet_is_refused_by_name(tmp_path):
    """--train_file takes Parquet, the format of the Hub's datasets (its first column of strings is the text), and a
    .parquet file that is something else is refused before anything is built."""
    import datasets

    rows = {"id": list(range(200)), "body": [f"the king and the queen ruled the land, year {i}." for i in range(200)]}
    datasets.Dataset.from_dict(rows).to_parquet(str(tmp_path / "data.parquet"))
    main(tiny_argv(tmp_path / "out", train_file=tmp_path / "data.parquet", max_steps=2))
    assert read_json(tmp_path / "out" / "trainer_state.json")["global_step"] == 2
    assert "local files: data.parquet" in (tmp_path / "out" / "README.md").read_text()  # the card names the data
    (tmp_path / "fake.parquet").write_text("id,body\n1,text\n")
    with pytest.raises(ValueError, match=r"--train_file '.*fake\.parquet' is not a Parquet file"):
        main(tiny_argv(tmp_path / "out2", train_file=tmp_path / "fake.parquet"))
    assert not (tmp_path / "out2").exists()


def test_fp16_asked_for_turns_the_automatic_bf16_off(tmp_path, monkeypatch):
    """bf16 is on by default where it is fast; asking for fp16 must not then meet transformers' "At most one of fp16
    and bf16 can be True" about a bf16 the user never asked for."""
    from hf_minattn import arguments
    from hf_minattn.arguments import MinAttnTrainingArguments

    monkeypatch.setattr(arguments, "fast_bf16_available", lambda: True)  # a machine where bf16 is fast
    assert MinAttnTrainingArguments(output_dir=str(tmp_path / "a")).bf16
    half = MinAttnTrainingArguments(output_dir=str(tmp_path / "b"), fp16=True)
    assert half.fp16 and not half.bf16
    with pytest.raises(ValueError, match="At most one of fp16 and bf16"):  # both asked for: still refused
        MinAttnTrainingArguments(output_dir=str(tmp_path / "c"), fp16=True, bf16=True)


def test_max_seq_length_above_positions(text_files, tmp_path):
    with pytest.raises(ValueError, match=r"--max_seq_length 100 .*max_position_embeddings \(64\)"):
        main(tiny_argv(tmp_path / "out", train_file=text_files / "train.txt", max_seq_length=100))
    assert not (tmp_path / "out" / "tokenizer.json").exists()


def test_max_seq_length_above_positions_is_the_models_rule_rope_takes_any_length(tokenizer_dir, tmp_path):
    """run_mlm refuses a --max_seq_length where the model would refuse the input (MinAttnConfig.sequence_length_limit):
    rotary positions (the "small" preset's) take any length, so they train on sequences longer than
    max_position_embeddings; learned ones are refused, with a remedy that a pretrained model can follow."""
    from hf_minattn import MinAttnConfig
    from hf_minattn.arguments import MODEL_SIZES
    from hf_minattn.run_mlm import sequence_length

    out = tmp_path / "rope"
    main(tiny_argv(out, tokenizer_dir, config_overrides="position_embedding_type=rope", max_seq_length=100, max_steps=2,
                   save_strategy="no", max_train_samples=16, report_to="none"))
    assert read_json(out / "config.json")["max_position_embeddings"] == 64
    assert read_json(out / "all_results.json")["eval_masked_tokens"] > 0

    _, data_args, _ = parse_args(tiny_argv(tmp_path / "out", max_seq_length=100))
    learned = MinAttnConfig(**MODEL_SIZES["tiny"])
    with pytest.raises(ValueError, match=r"max_position_embeddings \(64\).*to --config_overrides"):
        sequence_length(data_args, learned)
    with pytest.raises(ValueError, match="lower it: the positions of a pretrained model are fixed"):
        sequence_length(data_args, learned, pretrained=True)


def test_existing_checkpoints_need_resume(tmp_path):
    (tmp_path / "out" / "checkpoint-4").mkdir(parents=True)
    with pytest.raises(ValueError, match="checkpoint-4.*--resume"):
        main(tiny_argv(tmp_path / "out"))


@pytest.mark.parametrize("flag, value, message", [
    ("learning_rate", "-0.001", "--learning_rate must be at least 0, got -0.001"),
    ("warmup_steps", "-5", "--warmup_steps must be at least 0, got -5"),
    ("warmup_steps", "50.5", "--warmup_steps 50.5: from 1 up it counts whole steps (below 1, a share of the run's "
                             "steps); expected a whole number such as 50"),
    ("weight_decay", "-0.1", "--weight_decay must be at least 0, got -0.1"),
    ("per_device_train_batch_size", "0", "--per_device_train_batch_size must be at least 1, got 0"),
    ("adam_beta2", "1.0", "--adam_beta2 must be in [0, 1), got 1.0"),
    ("max_train_minutes", "0", "--max_train_minutes must be above 0, got 0.0"),
    ("loss_allocation_every", "0", "--loss_allocation_every must be at least 1, got 0"),
    ("mlm_probability", "1.5", "--mlm_probability must be in (0, 1), got 1.5"),
    ("max_seq_length", "2", "--max_seq_length must be at least 3, got 2"),
    ("max_eval_samples", "0", "--max_eval_samples must be at least 1, got 0"),
    ("vocab_size", "5", "--vocab_size must be in (5, 16777217), got 5"),
    ("tokenizer_min_frequency", "0", "--tokenizer_min_frequency must be in [1, 18446744073709551616), got 0"),
    ("config_overrides", "no_such_field=3", "no_such_field"),
    ("num_train_epochs", "0", "nothing to train: --max_steps -1 and --num_train_epochs 0"),
    ("max_steps", "-5", "--max_steps must be a positive number of optimizer steps, or -1 (the default: train "
                        "--num_train_epochs), got -5"),
    ("max_steps", "0", "--max_steps must be a positive number of optimizer steps"),
])
def test_every_argument_is_checked_before_any_work(text_files, tmp_path, flag, value, message):
    """A bad value fails when the arguments are parsed, naming its flag: before the data is read and the tokenizer
    trained (a negative learning rate, left to the optimizer, would fail only after both)."""
    import re

    overrides = {flag: value, **({"max_steps": -1} if flag == "num_train_epochs" else {})}
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_args(tiny_argv(tmp_path / "out", train_file=text_files / "train.txt", **overrides))
    with pytest.raises(ValueError, match=re.escape(message)):
        main(tiny_argv(tmp_path / "out", train_file=text_files / "train.txt", **overrides))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_resume_on_a_finished_run_trains_no_more(tokenizer_dir, tmp_path, caplog):
    """--resume on a run that reached --max_steps says so and returns its results: no step trained, no file written,
    however often it is rerun. The same without checkpoints (its final state says it). A larger --max_steps
    continues it."""
    out = tmp_path / "model"
    first = main(tiny_argv(out, tokenizer_dir, report_to="none"))  # 8 steps, checkpoints at 4 and 8
    written = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    for _ in range(2):
        again = main(tiny_argv(out, tokenizer_dir, report_to="none", resume=True))
        assert again == read_json(out / "all_results.json") and again["eval_loss"] == first["eval_loss"]
        assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == written
    assert f"{out} holds a complete run (step 8 of --max_steps 8): nothing to train" in caplog.text
    assert read_json(out / "trainer_state.json")["global_step"] == 8

    no_checkpoints = tmp_path / "no-checkpoints"
    main(tiny_argv(no_checkpoints, tokenizer_dir, report_to="none", save_strategy="no"))
    written = {p: p.stat().st_mtime_ns for p in no_checkpoints.rglob("*") if p.is_file()}
    main(tiny_argv(no_checkpoints, tokenizer_dir, report_to="none", save_strategy="no", resume=True))
    assert {p: p.stat().st_mtime_ns for p in no_checkpoints.rglob("*") if p.is_file()} == written

    main(tiny_argv(out, tokenizer_dir, report_to="none", resume=True, max_steps=10))
    assert read_json(out / "trainer_state.json")["global_step"] == 10


@pytest.mark.slow
def test_resume_leaves_the_trained_model_in_place_until_training_replaces_it(tokenizer_dir, tmp_path, monkeypatch):
    """--resume of a run that ended (here after --max_steps 8; a --max_train_minutes run alike) and is given more
    steps: before training, the model is still at its initialisation, so nothing of it is written over the trained
    model, its tokenizer and its card. A resumed run that dies as training starts leaves the folder as it was; one
    that trains on replaces the model at its end."""
    from hf_minattn import run_mlm

    out = tmp_path / "model"
    main(tiny_argv(out, tokenizer_dir, report_to="none"))  # 8 steps, checkpoints at 4 and 8
    kept = ("model.safetensors", "config.json", "README.md", "tokenizer.json")
    trained = {name: (out / name).read_bytes() for name in kept}

    def dies(*args, **kwargs):
        raise RuntimeError("the resumed run died")

    monkeypatch.setattr(run_mlm, "train", dies)  # run_mlm's own step, after everything saved before training
    with pytest.raises(RuntimeError, match="died"):
        main(tiny_argv(out, tokenizer_dir, report_to="none", resume=True, max_steps=10))
    assert {name: (out / name).read_bytes() for name in kept} == trained
    monkeypatch.undo()

    main(tiny_argv(out, tokenizer_dir, report_to="none", resume=True, max_steps=10))
    assert read_json(out / "trainer_state.json")["global_step"] == 10
    assert (out / "model.safetensors").read_bytes() != trained["model.safetensors"]
    assert "10 steps" in validate_model_card(out / "README.md").text


@pytest.mark.slow
def test_resume_of_a_run_that_stopped_at_its_stop_step_trains_no_more(tokenizer_dir, tmp_path, caplog):
    """A --stop_at_step 4 run whose last checkpoint is step 4 is complete: --resume says so and writes nothing (it
    used to train step 5 and save it over the 4-step model); --resume_from_checkpoint of that step writes its end."""
    out = tmp_path / "control"
    args = dict(max_steps=8, save_steps=4, stop_at_step=4, report_to="none")
    main(tiny_argv(out, tokenizer_dir, **args))
    assert read_json(out / "trainer_state.json")["global_step"] == 4
    written = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = main(tiny_argv(out, tokenizer_dir, resume=True, **args))
    assert again == read_json(out / "all_results.json")
    assert f"{out} holds a complete run (step 4 of --stop_at_step 4): nothing to train" in caplog.text
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == written
    # an explicit checkpoint at the stop step is the end of that run, as one at --max_steps is: its end is written
    # into the new folder from it, no step trained (it was refused, and one at --max_steps was not)
    main(tiny_argv(tmp_path / "other", tokenizer_dir, resume_from_checkpoint=str(out / "checkpoint-4"), **args))
    assert read_json(tmp_path / "other" / "trainer_state.json")["global_step"] == 4
    assert (tmp_path / "other" / "model.safetensors").read_bytes() == (out / "checkpoint-4" / "model.safetensors").read_bytes()
    with pytest.raises(ValueError, match=r"checkpoint-4 is at step 4, past --stop_at_step 3 of this run"):
        main(tiny_argv(tmp_path / "third", tokenizer_dir, resume_from_checkpoint=str(out / "checkpoint-4"),
                       **{**args, "stop_at_step": 3}))


# --- distributed and reliability (subprocesses) -----------------------------------------------------------


@pytest.mark.slow
def test_accelerate_launch_two_cpu_processes(tokenizer_dir, tmp_path):
    out = tmp_path / "model"
    # with loss change allocation: the same fixed batch on both ranks, the file written once
    argv = tiny_argv(out, tokenizer_dir, max_steps=4, save_steps=4, report_to="none", loss_allocation=True,
                     loss_allocation_every=2, loss_allocation_samples=4)
    with socket.socket() as free:  # a port of its own: the default 29500 may be held by anything on the machine
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    launcher = (sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ACCELERATE_CPU_CONFIG),
                "--main_process_port", str(port))
    result = run_script(argv, launcher=launcher, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = result.stdout + result.stderr
    assert "Process rank: 0, world size: 2" in log and "Process rank: 1, world size: 2" in log
    train = read_json(out / "train_results.json")
    assert train["world_size"] == 2
    # Tokens are gathered from both processes: 2 ranks x 4 steps x 8 sequences x 64 tokens.
    assert train["num_input_tokens_seen"] == 2 * 4 * 8 * 64
    assert math.isfinite(train["train_loss"]) and math.isfinite(read_json(out / "eval_results.json")["eval_loss"])
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-4"]
    # Predictions and labels gathered from both processes, without the samples repeated to even out batches: the
    # same as an evaluation of the saved model in this one process, whose batches give the expected numbers.
    with recorded_forward_calls() as calls:
        single = main(tiny_argv(tmp_path / "evaluated-here", model_size=None, model_name_or_path=out, do_train="false",
                                report_to="none"))
    accuracy, masked = masked_accuracy_from_batches(out, evaluated_batches(calls))
    assert single["eval_masked_tokens"] == masked and single["eval_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert read_json(out / "eval_results.json")["eval_masked_tokens"] == masked
    assert read_json(out / "eval_results.json")["eval_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    allocation = read_json(out / "loss_allocation.json")
    assert [(r["step_start"], r["step_end"]) for r in allocation["records"]] == [(0, 2), (2, 4)]
    assert allocation["batch"]["sequences"] == 4
    history = read_loss_allocation(out)  # the allocations add up to the change on that batch, under DDP too
    assert history.relative_error < 1e-2 and history.loss_change != 0


@pytest.mark.parametrize("outcome", ["returns", "user error"])
def test_a_run_leaves_its_process_group_before_the_process_exits(tmp_path, outcome):
    # A rank that exits still in its gloo group can abort at interpreter teardown (CI saw rank 1 of the test above
    # end with SIGABRT after a complete run): run_mlm.py's entry point leaves the group, after an error too.
    store = torch.distributed.FileStore(str(tmp_path / "store"), 1)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        def job(argv):
            assert torch.distributed.is_initialized()  # the group is there while the job runs
            if outcome == "user error":
                raise ValueError("--max_steps must be positive, got -1")
            return {"eval_loss": 1.0}

        assert run_reporting_errors(job, [], prog="run_mlm.py") == (0 if outcome == "returns" else 2)
        assert not torch.distributed.is_initialized()
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_resume_after_sigkill_matches_uninterrupted_run(tokenizer_dir, tmp_path):
    # 12 steps per epoch: the run crosses an epoch boundary after the resume.
    common = dict(max_steps=20, save_steps=5, logging_steps=5, max_train_samples=96, report_to="none")
    reference = main(tiny_argv(tmp_path / "uninterrupted", tokenizer_dir, **common))

    out = tmp_path / "interrupted"
    # The same number of threads as this process, so that every step computes the same floating-point sums.
    env = {**subprocess_env(), "OMP_NUM_THREADS": str(torch.get_num_threads())}
    proc = subprocess.Popen([sys.executable, str(RUN_MLM), *tiny_argv(out, tokenizer_dir, **common)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while not (out / "checkpoint-5" / "trainer_state.json").exists():
            assert proc.poll() is None, "the run ended before its first checkpoint"
            assert time.time() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "eval_results.json").exists(), "killed too late: the run had finished"
    # What a push during training uploads: the checkpoint's weights and config copied beside the modeling code,
    # the tokenizer and a card that says training is in progress, with no results and no step count.
    interim = validate_model_card(out / "README.md")
    assert "**Training is in progress**" in interim.text and not interim.data.eval_results
    assert "| Metric | Value |" not in interim.text and " steps (" not in interim.text
    assert (out / "modeling_minattn.py").is_file() and (out / "tokenizer.json").is_file()

    resumed = main(tiny_argv(out, tokenizer_dir, resume=True, **common))
    assert resumed["eval_loss"] == pytest.approx(reference["eval_loss"], abs=1e-4)
    final = validate_model_card(out / "README.md")
    assert "in progress" not in final.text and "| Metric | Value |" in final.text and "20 steps" in final.text
    # drift.json continues the history of the killed run, measured from the same initial weights.
    ref_records = read_json(tmp_path / "uninterrupted" / "drift.json")["records"]
    records = read_json(out / "drift.json")["records"]
    assert [r["step"] for r in records] == [r["step"] for r in ref_records]
    assert records[-1]["drift"]["word_embeddings"] == pytest.approx(ref_records[-1]["drift"]["word_embeddings"], rel=1e-4)


@pytest.mark.slow
def test_resume_from_an_explicit_checkpoint_folder(tokenizer_dir, tmp_path):
    """--resume_from_checkpoint DIR continues from DIR (here a copy of another run's step-4 checkpoint, marked so
    that its use shows in the final trainer state) and ends where the uninterrupted run ends; a missing DIR is named."""
    import json
    import shutil

    reference = main(tiny_argv(tmp_path / "uninterrupted", tokenizer_dir))  # 8 steps, checkpoints at 4 and 8
    saved = tmp_path / "saved-at-step-4"
    shutil.copytree(tmp_path / "uninterrupted" / "checkpoint-4", saved)
    state = read_json(saved / "trainer_state.json")
    state["log_history"].append({"step": 4, "marker": "from the saved checkpoint"})
    (saved / "trainer_state.json").write_text(json.dumps(state))
    resumed = main(tiny_argv(tmp_path / "resumed", tokenizer_dir, resume_from_checkpoint=saved))
    assert resumed["eval_loss"] == pytest.approx(reference["eval_loss"], abs=1e-4)
    history = read_json(tmp_path / "resumed" / "trainer_state.json")["log_history"]
    assert {"step": 4, "marker": "from the saved checkpoint"} in history  # training went on from that state
    with pytest.raises(FileNotFoundError, match="nowhere"):
        main(tiny_argv(tmp_path / "again", tokenizer_dir, resume_from_checkpoint=tmp_path / "nowhere"))


def test_embeddings_get_no_weight_decay(tmp_path):
    # With weight decay on the embeddings, the rows of tokens that never occur would shrink at every step.
    from transformers import TrainingArguments

    from hf_minattn.trainer import MinAttnTrainer

    model = hf_minattn.MinAttnForMaskedLM(hf_minattn.MinAttnConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
        max_position_embeddings=8, tie_word_embeddings=False))
    trainer = MinAttnTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), weight_decay=0.1, report_to="none"))
    decayed = set(trainer.get_decay_parameter_names(model))
    assert "minattn.layers.0.attention.qkv_proj.weight" in decayed and "lm_head.decoder.weight" in decayed
    assert not {"minattn.embeddings.word_embeddings.weight", "minattn.embeddings.position_embeddings.weight"} & decayed
    optimizer = trainer.create_optimizer()
    embedding_group = next(g for g in optimizer.param_groups
                           if any(p is model.minattn.embeddings.word_embeddings.weight for p in g["params"]))
    assert embedding_group["weight_decay"] == 0.0


@pytest.mark.parametrize("fast", [True, False])
def test_bf16_default_comes_through_the_parser(tmp_path, monkeypatch, fast):
    """HfArgumentParser gives a bool field False whatever its default_factory: the computed default must be
    applied after parsing, so `--bf16` unset means "on where it is fast"."""
    import hf_minattn.arguments as arguments

    monkeypatch.setattr(arguments, "fast_bf16_available", lambda: fast)
    assert parse_args(["--output_dir", str(tmp_path)])[2].bf16 is fast
    assert parse_args(["--output_dir", str(tmp_path), "--bf16", "false"])[2].bf16 is False
    assert parse_args(["--output_dir", str(tmp_path), "--bf16", "true"])[2].bf16 is True


def test_bf16_default_follows_this_machines_cpu_flags(tmp_path):
    """No monkeypatch: on a CPU-only Linux machine the default is bf16 exactly where /proc/cpuinfo lists native bf16
    matrix instructions (AVX512-BF16 or AMX), read here independently of torch."""
    import os

    from hf_minattn.machine import fast_bf16_available

    if torch.cuda.is_available() or not os.path.exists("/proc/cpuinfo"):
        pytest.skip("checks the CPU path on Linux")
    with open("/proc/cpuinfo") as f:
        flags = set(f.read().split())
    expected = bool({"avx512_bf16", "amx_tile"} & flags)
    assert fast_bf16_available() is expected
    assert parse_args(["--output_dir", str(tmp_path)])[2].bf16 is expected


def test_bf16_default_is_off_on_a_gpu_that_only_emulates_it(monkeypatch):
    """A T4 or V100: torch.cuda.is_bf16_supported() says True by default (including_emulation=True), though bf16 is
    emulated there and slower than fp32; the default asks for native support only."""
    from hf_minattn.machine import fast_bf16_available

    def pre_ampere(including_emulation=True):  # torch's answer on such a GPU
        return including_emulation

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", pre_ampere)
    assert fast_bf16_available() is False
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)  # Ampere or later
    assert fast_bf16_available() is True


def test_word_level_tokenizer_through_the_script(text_files, tmp_path):
    """--tokenizer_model word: whole words seen >= --tokenizer_min_frequency times become single tokens, the rest
    [UNK]; the saved folder loads and fills a mask with whole words."""
    from collections import Counter

    from transformers import pipeline

    out = tmp_path / "word"
    main(tiny_argv(out, train_file=text_files / "train.txt", validation_file=text_files / "validation.txt",
                   tokenizer_model="word", tokenizer_min_frequency=3, vocab_size=5000, max_steps=2))
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert read_json(out / "tokenizer.json")["model"]["type"] == "WordLevel"
    backend = tokenizer.backend_tokenizer
    words = Counter(w for line in (text_files / "train.txt").read_text().split("\n")
                    for w, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(line)))
    frequent = next(w for w, c in words.most_common() if c >= 3 and len(w) > 8 and w.isalpha())
    rare = next(w for w, c in words.items() if c == 1 and len(w) > 8 and w.isalpha())
    assert tokenizer.tokenize(frequent) == [frequent] and tokenizer.tokenize(rare) == ["[UNK]"]
    assert len(tokenizer) == 5 + sum(1 for c in words.values() if c >= 3)  # 5 special tokens, no cap reached
    filled = pipeline("fill-mask", model=str(out))(f"the {tokenizer.mask_token} of the")
    assert all(" " not in f["token_str"] and not f["token_str"].startswith("##") for f in filled)


def test_model_card_states_what_the_tokenizer_and_data_are(tmp_path):
    """Language, casing and vocabulary kind come from the facts (the tokenizer itself), not from the template."""
    from hf_minattn import MinAttnConfig, train_tokenizer
    from hf_minattn.model_card import CardFacts, build_model_card, tokenizer_facts

    texts = ["The King and the Queen of England", "a Dog and a Cat"] * 10
    config = MinAttnConfig(vocab_size=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=0, position_embedding_type="rope")

    def card(tokenizer, **facts):
        facts = {"dataset_id": None, **facts}
        return build_model_card(CardFacts(model_name="m", config=config, num_parameters=1, dataset_config=None,
                                          dataset_description="local text", max_seq_length=64,
                                          tokenizer=tokenizer_facts(tokenizer), **facts))

    wordpiece = train_tokenizer(texts, vocab_size=60, show_progress=False)
    assert tokenizer_facts(wordpiece) == {"kind": "WordPiece", "lowercase": True}
    embedded = card(wordpiece, language="en")
    assert embedded.data.language == "en" and embedded.data.datasets is None  # the gensim sample is no Hub dataset
    assert "60 WordPiece tokens, lower-cased" in embedded.text and "English only, lower-cased" in embedded.text
    assert "transformers >= 5" in embedded.text and 'attn_implementation="eager"' not in embedded.text
    assert "trained on sequences of 64 tokens" in embedded.text  # rotary positions: no fixed maximum

    cased = train_tokenizer(texts, vocab_size=60, show_progress=False, model="word", lowercase=False)
    assert tokenizer_facts(cased) == {"kind": "word-level", "lowercase": False}
    local = card(cased, dataset_id="user/corpus")
    assert local.data.language is None and local.data.datasets == ["user/corpus"]
    assert "60 word-level tokens, cased" in local.text and "English only" not in local.text


def test_drift_and_perplexity_reach_tensorboard(trained):
    """They are logged through the Trainer's log, so every reporter gets them, not only drift.json and stdout."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, metrics, _ = trained
    (events,) = {path.parent for path in (out / "runs").rglob("events.out.tfevents.*")}
    tags = set(EventAccumulator(str(events)).Reload().Tags()["scalars"])
    assert {"train/drift/word_embeddings", "train/drift/W_Q", "train/drift/W_O", "eval/perplexity",
            "eval/gain_over_unigram"} <= tags, sorted(tags)
    last = read_json(out / "drift.json")["records"][-1]["drift"]
    logged = [log for log in read_json(out / "trainer_state.json")["log_history"] if "drift/word_embeddings" in log]
    assert logged[-1]["drift/word_embeddings"] == pytest.approx(last["word_embeddings"], rel=1e-6)


@pytest.mark.slow
def test_time_budget_progress_bar_shows_the_budget(text_files, tmp_path, capfd):
    """A budgeted run of "100 epochs" shows a bar over the seconds of its budget, and logs the minutes left."""
    out = tmp_path / "out"
    main(tiny_argv(out, train_file=text_files / "train.txt", max_steps=None, num_train_epochs=100,
                   max_train_minutes=0.05, disable_tqdm="false", logging_steps=1, save_steps=1000, do_eval="false"))
    err = capfd.readouterr().err
    assert "training (time budget)" in err and "/3 s [" in err
    left = [log["time_budget_minutes_left"] for log in read_json(out / "trainer_state.json")["log_history"]
            if "time_budget_minutes_left" in log]
    assert len(left) >= 2 and left == sorted(left, reverse=True) and 0 <= left[-1] < 0.05


def test_streaming_a_local_file(text_files, tmp_path):
    """--streaming reads the text as a datasets stream (the same code path as a Hub dataset streamed), with the
    start of the validation stream as the fixed evaluation set."""
    out = tmp_path / "out"
    metrics = main(tiny_argv(out, train_file=text_files / "train.txt", validation_file=text_files / "validation.txt",
                             vocab_size=300, streaming=True, max_steps=4, max_train_samples=None))
    assert read_json(out / "trainer_state.json")["global_step"] == 4
    assert math.isfinite(metrics["eval_loss"]) and metrics["eval_samples"] == 20  # --max_eval_samples 20
    assert metrics["train_samples"] == 4 * 8
    assert (out / "model.safetensors").is_file() and math.isfinite(metrics["eval_unigram_loss"])
    with pytest.raises(ValueError, match="--streaming needs --max_steps"):
        main(tiny_argv(tmp_path / "out2", train_file=text_files / "train.txt", streaming=True, max_steps=-1))


def test_initial_weights_are_paired_by_module_name_across_shapes():
    from hf_minattn.initialization import initial_model

    base = dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                tie_word_embeddings=False)
    full = dict(initial_model(hf_minattn.MinAttnConfig(**base), seed=3).named_parameters())
    identity = dict(initial_model(hf_minattn.MinAttnConfig(**{**base, "intermediate_size": 48},
                                                           qkv_projection="identity"), seed=3).named_parameters())
    shared = [name for name, p in identity.items() if name in full and full[name].shape == p.shape]
    assert "minattn.embeddings.word_embeddings.weight" in shared and "lm_head.decoder.weight" in shared
    for name in shared:
        assert torch.equal(full[name], identity[name]), name
    other_seed = dict(initial_model(hf_minattn.MinAttnConfig(**base), seed=4).named_parameters())
    assert not torch.equal(full["minattn.embeddings.word_embeddings.weight"],
                           other_seed["minattn.embeddings.word_embeddings.weight"])
    # The qk-logit scaling still applies: W_Q rows are drawn with std sqrt(qk_logit_init_std / hidden), not 0.02.
    config = hf_minattn.MinAttnConfig(**base)
    w_q = full["minattn.layers.0.attention.qkv_proj.weight"][: base["hidden_size"]]
    assert w_q.std().item() == pytest.approx(math.sqrt(config.qk_logit_init_std / base["hidden_size"]), rel=0.2)
    # The global RNG is left as it was.
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    initial_model(config, seed=3)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("seed, error", [(1.0, TypeError), (True, TypeError), (None, TypeError), ("abc", TypeError),
                                         (-1, ValueError)])
def test_initial_model_takes_an_integer_seed_only(seed, error):
    """The seed reaches the generators as text: 1.0 and True gave weights other than seed 1's, None and "abc" some
    weights; a numpy integer is its value."""
    import numpy as np

    from hf_minattn.initialization import initial_model

    config = hf_minattn.MinAttnConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=0)
    with pytest.raises(error) as caught:
        initial_model(config, seed)
    assert "seed must be an integer >= 0, got" in str(caught.value) and repr(seed) in str(caught.value)
    name = "minattn.embeddings.word_embeddings.weight"
    assert torch.equal(initial_model(config, np.int64(1)).state_dict()[name], initial_model(config, 1).state_dict()[name])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_training_on_cuda_records_drift_and_evaluates(tokenizer_dir, tmp_path):
    """On a GPU the Trainer moves the model there after the drift callback copied the initial weights: the run
    trains, evaluates and records the drift on the GPU as it does on the CPU."""
    torch.cuda.reset_peak_memory_stats()
    metrics = main(tiny_argv(tmp_path / "model", tokenizer_dir, report_to="none"))
    assert torch.cuda.max_memory_allocated() > 0, "the run did not use the GPU"
    assert math.isfinite(metrics["eval_loss"]) and metrics["eval_loss"] < math.log(len(AutoTokenizer.from_pretrained(tokenizer_dir)))
    records = read_json(tmp_path / "model" / "drift.json")["records"]
    assert [r["step"] for r in records] == [0, 1, 2, 4, 6, 8]
    assert records[-1]["drift"]["word_embeddings"] > 0


def test_a_flag_argparse_refuses_is_one_line_not_the_usage_of_every_flag(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--model_size", "huge", "--output_dir", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1
    assert "invalid choice: 'huge'" in err[0] and err[0].endswith("(--help lists every flag)")


def test_without_output_dir_the_trainers_default_folder_is_used(text_files, monkeypatch, tmp_path):
    """transformers fills in "trainer_output" when --output_dir is left out; the folder check reads that, not None."""
    monkeypatch.chdir(tmp_path)
    argv = tiny_argv(tmp_path, train_file=text_files / "train.txt")
    at = argv.index("--output_dir")
    argv = argv[:at] + argv[at + 2:]
    assert parse_args(argv)[2].output_dir == "trainer_output"
    (tmp_path / "trainer_output").write_text("a file")
    with pytest.raises(ValueError, match="--output_dir 'trainer_output' is a file"):
        parse_args(argv)


def test_a_validation_file_in_another_format_than_the_training_file_is_refused(text_files, tmp_path):
    """One `datasets` builder reads both files: a .csv validation file beside a .txt training file was read as
    text lines, its header and labels scored as sentences."""
    valid = tmp_path / "valid.csv"
    valid.write_text('text,label\n"a sentence here",1\n')
    argv = tiny_argv(tmp_path / "out", train_file=text_files / "train.txt") + ["--validation_file", str(valid)]
    with pytest.raises(ValueError, match=r"--validation_file '.*valid\.csv' is a csv file but --train_file "
                                         r"'.*train\.txt' a text file; expected both in one format"):
        parse_args(argv)
    assert not (tmp_path / "out").exists()


def test_whole_word_masking_with_a_python_tokenizer_is_refused_before_the_model(text_files, tmp_path):
    """Whole-word masking finds words by character offsets, which a Python (slow) tokenizer silently leaves out."""
    from transformers import CanineTokenizer  # a Python tokenizer with a mask token that needs no vocabulary file

    CanineTokenizer().save_pretrained(tmp_path / "slow")
    argv = tiny_argv(tmp_path / "out", tmp_path / "slow", train_file=text_files / "train.txt", whole_word_mask=True)
    with pytest.raises(ValueError, match=r"--whole_word_mask finds words by character offsets.*is a CanineTokenizer"):
        main(argv)


def test_a_data_file_datasets_cannot_parse_is_one_error_naming_it(tmp_path):
    bad = tmp_path / "train.json"
    bad.write_text('{"text": "a sentence"\n{"text": broken}\n')
    with pytest.raises(ValueError, match=r"--train_file '.*train\.json': datasets could not read it as json "
                                         r"\(.*\); expected json data file$"):
        main(tiny_argv(tmp_path / "out", train_file=bad))
