"""training/run_mlm.py at its boundaries (outputs/review_cli.md): NaN and inf in any float flag, an output folder that
cannot be written, flags that contradict each other or would be ignored, data too small to split, a config.json or a
checkpoint that is not one, a resume under another config; and what a failed run leaves behind."""

import json
import os
import re
import shutil
from argparse import Namespace
from dataclasses import fields

import pytest

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM
from hf_minattn.arguments import MODEL_SIZES, DataTrainingArguments, MinAttnTrainingArguments, ModelArguments
from hf_minattn.checks import check_bounds, check_output_folder
from hf_minattn.model_card import IN_PROGRESS_CARD
from hf_minattn.run_mlm import main, parse_args

from helpers_training import read_json, tiny_argv

FLOAT_FLAGS = sorted({f.name for group in (ModelArguments, DataTrainingArguments, MinAttnTrainingArguments)
                      for f in fields(group) if f.init and "float" in str(f.type)})


def test_the_float_flags_are_the_ones_the_review_names():
    assert {"learning_rate", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm",
            "num_train_epochs", "warmup_steps", "mlm_probability", "max_train_minutes"} <= set(FLOAT_FLAGS)


@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize("flag", FLOAT_FLAGS)
def test_every_float_flag_refuses_nan_and_inf_when_parsed(tmp_path, flag, value):
    """NaN passed every bound (it compares False), inf every bound without an upper limit: the run then trained a NaN
    model and exited 0, or failed in torch after the tokenizer was trained and the initial model saved."""
    with pytest.raises(ValueError, match=rf"^--{flag} must be a finite number.*, got {value}$"):
        parse_args(tiny_argv(tmp_path / "out", **{flag: value}))
    assert not (tmp_path / "out").exists()


def test_check_bounds_names_the_bound_of_a_non_finite_value():
    bounds = {"learning_rate": (0, None, True), "mlm_probability": (0, 1, False), "steps": (1, None, True)}
    with pytest.raises(ValueError, match=re.escape("--learning_rate must be a finite number at least 0, got nan")):
        check_bounds(Namespace(learning_rate=float("nan"), mlm_probability=0.2, steps=3), bounds)
    with pytest.raises(ValueError, match=re.escape("--mlm-probability must be a finite number in (0, 1), got nan")):
        check_bounds(Namespace(learning_rate=1.0, mlm_probability=float("nan"), steps=3), bounds, separator="-")
    with pytest.raises(ValueError, match=re.escape("--learning_rate must be a finite number at least 0, got inf")):
        check_bounds(Namespace(learning_rate=float("inf"), mlm_probability=0.2, steps=3), bounds)
    check_bounds(Namespace(learning_rate=0.0, mlm_probability=0.5, steps=1), bounds)  # in bounds: no error


@pytest.mark.skipif(not os.path.isdir("/sys"), reason="needs /sys, a folder that takes no new files even for root")
def test_an_output_folder_that_cannot_be_created_is_refused_when_parsed(tmp_path):
    with pytest.raises(ValueError, match=r"^--output_dir '/sys/x' cannot be written: its nearest existing folder "
                                         r"'/sys' takes no new files"):
        parse_args(tiny_argv("/sys/x"))
    with pytest.raises(ValueError, match=r"^--out '/sys' cannot be written: takes no new files"):
        check_output_folder("/sys", "--out")


def test_an_output_folder_under_a_file_is_refused_and_a_new_one_is_not_created(tmp_path):
    (tmp_path / "corpus.txt").write_text("text")
    with pytest.raises(ValueError, match=r"^--output_dir '.*corpus\.txt/sub/deeper' lies under '.*corpus\.txt', a "
                                         r"file; expected a folder"):
        parse_args(tiny_argv(tmp_path / "corpus.txt" / "sub" / "deeper"))
    check_output_folder(tmp_path / "new" / "deeper", "--out")  # can be created: no error, and nothing made
    check_output_folder(tmp_path, "--out")
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt"]


@pytest.mark.parametrize("overrides, message", [
    ({"model_name_or_path": "some/model", "model_size": "base"},
     "--model_size can't be used with --model_name_or_path (the saved config is used as is), got --model_size 'base'"),
    ({"early_save_every": "1"}, "--early_save_every 1 needs --early_save_until"),
    ({"early_save_until": "4"}, "--early_save_until 4 needs --early_save_every"),
    ({"early_save_every": "5", "early_save_until": "4"}, "--early_save_every 5 is past --early_save_until 4"),
    # refused by the callback too, but only once the tokenizer and the initial model were written
    ({"early_save_every": "2", "early_save_until": "4", "save_strategy": "best", "eval_strategy": "steps",
      "eval_steps": "2", "metric_for_best_model": "eval_loss"}, "--early_save_every needs --save_strategy steps, epoch "
                                                                  "or no, not best"),
    ({"stop_at_step": "9"}, "--stop_at_step 9 is past --max_steps 8, where training ends anyway"),
    ({"do_train": "false"}, "--do_train false evaluates the model of --model_name_or_path, and none is given"),
    ({"do_train": "false", "do_eval": "false", "model_name_or_path": "some/model", "model_size": None},
     "--do_train false and --do_eval false leave nothing to do"),
    ({"dataset_config_name": "wikitext-2-raw-v1"},
     "--dataset_config_name 'wikitext-2-raw-v1' names a configuration of --dataset_name, and none is given"),
    # a negative step interval: transformers would never log, evaluate or save (0 is its own to read or refuse)
    ({"logging_steps": "-10"}, "--logging_steps must be at least 0, got -10"),
    ({"eval_strategy": "steps", "eval_steps": "-5"}, "--eval_steps must be at least 0, got -5"),
    ({"save_strategy": "steps", "save_steps": "-3"}, "--save_steps must be at least 0, got -3"),
    # numpy's "Seed must be between 0 and 2**32 - 1" named no flag, and came after the run had started
    ({"seed": "-1"}, "--seed must be in [0, 4294967296), got -1"),
    ({"data_seed": str(2**64)}, "--data_seed must be in [0, 18446744073709551616), got 18446744073709551616"),
    # torch's DataLoader refused it only after the tokenizer was trained and an "in progress" card written
    ({"dataloader_num_workers": "-1"}, "--dataloader_num_workers must be at least 0, got -1"),
    # the tokenizer trainer's bound, refused after the data was read
    ({"vocab_size": str(2**24 + 1)}, "--vocab_size must be in (5, 16777217), got 16777217"),
    # the tokenizer-training flags beside a tokenizer that is not trained, loss allocation's beside none
    ({"tokenizer_name": "some/tokenizer", "vocab_size": "100"},
     "--vocab_size 100 would be ignored: the tokenizer comes from --tokenizer_name, and none is trained; drop "
     "--vocab_size"),
    ({"model_name_or_path": "some/model", "model_size": None, "tokenizer_min_frequency": "7"},
     "--tokenizer_min_frequency 7 would be ignored: the tokenizer comes from --model_name_or_path"),
    ({"tokenizer_name": "some/tokenizer", "tokenizer_model": "word"}, "--tokenizer_model 'word' would be ignored"),
    ({"loss_allocation_every": "5"}, "--loss_allocation_every 5 would be ignored: they shape --loss_allocation's "
                                     "record, and it is off; drop --loss_allocation_every"),
    ({"loss_allocation_samples": "3"}, "--loss_allocation_samples 3 would be ignored"),
    # a typo in a local path: datasets looked for it on the Hub ("Couldn't reach 'data/my_texts' on the Hub")
    ({"dataset_name": "./data/my_texts"}, "--dataset_name './data/my_texts': no such file or folder; expected a "
                                          "dataset name on the Hub or a folder of data files"),
    ({"dataset_name": "data/my_texts.jsonl"}, "--dataset_name 'data/my_texts.jsonl': no such file or folder"),
    # the Trainer creates the repository after the data is read and the tokenizer trained
    ({"push_to_hub": True, "hub_model_id": "my model!!"}, "--hub_model_id 'my model!!' is not a valid Hub repository id"),
])
def test_flags_that_would_be_ignored_are_refused_when_parsed(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_args(tiny_argv(tmp_path / "out", **overrides))


def test_the_bounds_leave_what_transformers_reads():
    """0 steps is transformers' own: eval_steps 0 means every logging_steps, and a strategy other than "steps" ignores
    the others; a data_seed goes to torch's generator, which takes 64 bits."""
    args = parse_args(tiny_argv("unused", eval_strategy="steps", eval_steps=0, save_strategy="no", save_steps=0,
                                data_seed=2**32, vocab_size=2**24))[2]
    assert (args.eval_steps, args.data_seed) == (args.logging_steps, 2**32)


def test_the_step_flags_that_agree_are_accepted(tmp_path):
    _, _, args = parse_args(tiny_argv(tmp_path / "out", stop_at_step=8, early_save_every=2, early_save_until=6))
    assert (args.stop_at_step, args.early_save_every, args.early_save_until) == (8, 2, 6)
    assert parse_args(tiny_argv(tmp_path / "out", max_steps=-1, stop_at_step=50))[2].stop_at_step == 50  # epochs
    model_args = parse_args(tiny_argv(tmp_path / "out", model_size=None))[0]
    assert model_args.model_size == "small"  # the default preset, when no model is named


@pytest.mark.parametrize("make, message", [
    (lambda path: path.write_text("text"), "is a file; expected a checkpoint folder the Trainer wrote"),
    (lambda path: path.mkdir(), "is not a checkpoint: it has no config.json nor trainer_state.json"),
])
def test_resume_from_checkpoint_that_is_a_file_or_no_checkpoint_is_named_when_parsed(tmp_path, make, message):
    make(tmp_path / "runs")
    with pytest.raises(ValueError, match=re.escape(f"--resume_from_checkpoint '{tmp_path / 'runs'}' {message}")):
        parse_args(tiny_argv(tmp_path / "out", resume_from_checkpoint=tmp_path / "runs"))


def test_a_tokenizer_name_that_holds_no_tokenizer_is_named_when_parsed(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "corpus.txt").write_text("text")
    with pytest.raises(ValueError, match=r"--tokenizer_name '.*adir' holds no tokenizer \(none of tokenizer.json"):
        parse_args(tiny_argv(tmp_path / "out", tokenizer_name=tmp_path / "adir"))
    with pytest.raises(ValueError, match=r"--tokenizer_name '.*corpus\.txt' is a file; expected a folder written by"):
        parse_args(tiny_argv(tmp_path / "out", tokenizer_name=tmp_path / "corpus.txt"))


def test_a_tokenizer_file_cut_short_is_named(tmp_path, tokenizer_dir, text_files):
    """json's own message came alone ("Expecting value: line 225 column 14 (char 4000)"), naming no file."""
    shutil.copytree(tokenizer_dir, tmp_path / "cut")
    tokenizer = tmp_path / "cut" / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:4000])  # a copy stopped part-way
    message = f"the tokenizer ({tmp_path / 'cut'}): {str(tokenizer)!r} is not valid JSON (Expecting"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}.*; expected a JSON object$"):
        main(tiny_argv(tmp_path / "out", tmp_path / "cut", train_file=text_files / "train.txt"))
    assert not (tmp_path / "out").exists()
    # read before the data (it was read after: a dataset named on the Hub was downloaded first), so its error comes
    # before that of a data file datasets cannot parse
    (tmp_path / "train.json").write_text("not json\n")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        main(tiny_argv(tmp_path / "out", tmp_path / "cut", train_file=tmp_path / "train.json"))


@pytest.mark.parametrize("name, text, extra", [
    ("one.txt", "just one line of text here\n", {}),
    ("one.txt", "just one line of text here\n", {"line_by_line": True}),
    ("one.json", '{"text": "hi"}\n', {}),
])
def test_data_of_one_row_names_the_file_and_the_split_percentage(tmp_path, tokenizer_dir, name, text, extra):
    (tmp_path / name).write_text(text)
    message = (f"--train_file '{tmp_path / name}' has 1 row: holding out --validation_split_percentage 5% of them for "
               "validation (1) leaves none to train on")
    with pytest.raises(ValueError, match=re.escape(message)):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=tmp_path / name, **extra))
    assert not (tmp_path / "out").exists()


def test_a_dataset_folder_whose_file_datasets_cannot_parse_is_named(tmp_path):
    """Only --train_file's reading was wrapped: a local --dataset_name folder of a malformed train.json gave
    datasets' DatasetGenerationError traceback from inside its builder."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.json").write_text('{"text": "a sentence"\n{"text": broken}\n')
    with pytest.raises(ValueError, match=rf"^--dataset_name '{re.escape(str(tmp_path / 'data'))}': datasets could "
                                         r"not read it \(JSON parse error: .*\); expected data files datasets reads"):
        main(tiny_argv(tmp_path / "out", dataset_name=tmp_path / "data"))
    assert not (tmp_path / "out").exists()

def test_a_csv_file_of_a_header_only_has_no_rows(tmp_path, tokenizer_dir):
    (tmp_path / "x.csv").write_text("a,b\n")
    (tmp_path / "header.csv").write_text("text\n")
    (tmp_path / "full.csv").write_text("text\n" + "some words of text\n" * 30)
    with pytest.raises(ValueError, match=r"^--train_file '.*x\.csv' has no rows; expected csv data"):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=tmp_path / "x.csv"))
    with pytest.raises(ValueError, match=r"^--validation_file '.*header\.csv' has no rows"):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=tmp_path / "full.csv",
                       validation_file=tmp_path / "header.csv"))
    # a header-only validation file with other columns: datasets' DatasetGenerationCastError before
    with pytest.raises(ValueError, match=r"^--train_file '.*full\.csv' and --validation_file '.*x\.csv' have "
                                         r"different columns \(the validation file has 2 new columns .* and 1 missing"):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=tmp_path / "full.csv",
                       validation_file=tmp_path / "x.csv"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, expected", [
    ("[1, 2, 3]", "holds a JSON list; expected a JSON object"),
    ('{"model_type": "minattn", "hidden_size": ', "is not valid JSON (Expecting value"),
])
def test_a_config_json_that_is_no_object_names_the_file_and_the_flag(tmp_path, content, expected):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(content)
    message = f"--model_name_or_path {str(tmp_path / 'model')!r}: {str(tmp_path / 'model' / 'config.json')!r} {expected}"
    with pytest.raises(ValueError, match=re.escape(message)):
        main(tiny_argv(tmp_path / "out", model_size=None, model_name_or_path=tmp_path / "model"))
    assert not (tmp_path / "out").exists()


def test_a_model_that_is_a_file_or_a_folder_with_a_revision_names_the_flags(tmp_path):
    """The errors said "model path '...' is a file" and "drop the revision": run_mlm's flags are --model_name_or_path
    and --model_revision."""
    (tmp_path / "model.txt").write_text("not a model")
    with pytest.raises(ValueError, match=re.escape(f"--model_name_or_path {str(tmp_path / 'model.txt')!r} is a file; "
                                                   "expected a model folder")):
        main(tiny_argv(tmp_path / "out", model_size=None, model_name_or_path=tmp_path / "model.txt"))
    MinAttnConfig(**MODEL_SIZES["tiny"]).save_pretrained(tmp_path / "model")
    with pytest.raises(ValueError, match=re.escape(f"--model_revision 'main' names a version of a Hub repository, but "
                                                   f"{str(tmp_path / 'model')!r} is a local folder; drop "
                                                   "--model_revision or pass a Hub id")):
        main(tiny_argv(tmp_path / "out", model_size=None, model_name_or_path=tmp_path / "model", model_revision="main"))
    assert not (tmp_path / "out").exists()


def _checkpoint(folder, **overrides):
    """A folder that reads as a complete Trainer checkpoint of the tiny preset at step 4 (its config and trainer
    state; the optimizer, scheduler and RNG states, empty: a checkpoint without them cannot resume)."""
    MinAttnConfig(**{**MODEL_SIZES["tiny"], **overrides}).save_pretrained(folder)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": []}))
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (folder / name).write_bytes(b"")
    return folder


def test_resuming_under_another_config_is_refused_before_the_data_is_read(tmp_path, text_files, monkeypatch):
    """Loading the checkpoint into a model of another shape failed late, in torch's words (a size mismatch, or an
    optimizer group that does not match): the differing fields are named at once."""
    from hf_minattn import run_mlm
    from hf_minattn.arguments import check_resumed_config

    _checkpoint(tmp_path / "out" / "checkpoint-4")
    monkeypatch.setattr(run_mlm, "load_raw_datasets", lambda *args: pytest.fail("the data was read"))
    message = (f"--model_size 'tiny' with --config_overrides 'hidden_size=64' gives a config that differs from that "
               f"of {tmp_path / 'out' / 'checkpoint-4'} (hidden_size 64 where it has 32); resuming continues that model")
    with pytest.raises(ValueError, match=re.escape(message)):
        main(tiny_argv(tmp_path / "out", train_file=text_files / "train.txt", resume=True,
                       config_overrides="hidden_size=64"))
    with pytest.raises(ValueError, match=r"position_embedding_type 'rope' where it has 'learned'"):
        main(tiny_argv(tmp_path / "other", train_file=text_files / "train.txt",
                       resume_from_checkpoint=tmp_path / "out" / "checkpoint-4",
                       config_overrides="position_embedding_type=rope"))
    # The same preset passes, whatever the tokenizer set in the saved config (vocabulary size, special token ids).
    config = MinAttnConfig(**MODEL_SIZES["tiny"])
    _checkpoint(tmp_path / "same", vocab_size=123, pad_token_id=7)
    check_resumed_config(config, str(tmp_path / "same"), ModelArguments(model_size="tiny"))


def _fail(*args, **kwargs):
    raise RuntimeError("failed on purpose")


def test_a_failed_run_removes_the_output_folder_it_created(tmp_path, text_files, tokenizer_dir, monkeypatch):
    """A run that failed after saving the tokenizer, the initial model and an "in progress" card left a folder that
    looked like a model; with nothing to resume from, the folder it created is removed."""
    from hf_minattn import run_mlm

    (tmp_path / "three.txt").write_text("a few words\nand a few more\nthe end\n")
    with pytest.raises(ValueError, match="gives no sequence of 64 tokens"):  # after the tokenizer was trained
        main(tiny_argv(tmp_path / "out", train_file=tmp_path / "three.txt", vocab_size=50))
    assert not (tmp_path / "out").exists()

    monkeypatch.setattr(run_mlm, "load_or_train_tokenizer", _fail)  # a failure before training starts
    with pytest.raises(RuntimeError, match="failed on purpose"):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=text_files / "train.txt"))
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()

    # once training has started, the folder holds the run's logs and records, which say why it failed: kept
    monkeypatch.setattr(run_mlm.MinAttnTrainer, "train", lambda self, **kwargs: _fail())
    with pytest.raises(RuntimeError, match="failed on purpose"):
        main(tiny_argv(tmp_path / "started", tokenizer_dir, train_file=text_files / "train.txt"))
    assert (tmp_path / "started" / "model.safetensors").exists()

    (tmp_path / "mine").mkdir()  # a folder that existed before the run is the user's: kept
    with pytest.raises(RuntimeError, match="failed on purpose"):
        main(tiny_argv(tmp_path / "mine", tokenizer_dir, train_file=text_files / "train.txt"))
    assert (tmp_path / "mine" / "model.safetensors").exists()


def test_a_failed_run_keeps_its_checkpoints(tmp_path, text_files, tokenizer_dir, monkeypatch):
    from hf_minattn import run_mlm

    monkeypatch.setattr(run_mlm, "evaluate", _fail)
    with pytest.raises(RuntimeError, match="failed on purpose"):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=text_files / "train.txt", max_steps=2,
                       save_steps=2, report_to="none"))
    assert (tmp_path / "out" / "checkpoint-2" / "trainer_state.json").exists()


def test_a_run_that_fails_after_its_trained_model_is_saved_keeps_it(tmp_path, text_files, tokenizer_dir, monkeypatch):
    """Trained with no checkpoint (--save_strategy no), then a failure writing the sentence-transformers files: the
    trained model was removed with the folder, as if nothing had been done."""
    from hf_minattn import run_mlm

    monkeypatch.setattr(run_mlm, "write_sentence_transformers_files", _fail)
    with pytest.raises(RuntimeError, match="failed on purpose"):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=text_files / "train.txt", max_steps=2,
                       save_strategy="no", report_to="none"))
    assert not list((tmp_path / "out").glob("checkpoint-*"))
    assert (tmp_path / "out" / "model.safetensors").exists()
    # trainer_state.json comes last: without it --resume does not take the unfinished folder for a finished run
    assert not (tmp_path / "out" / "trainer_state.json").exists()


def test_an_abbreviated_flag_is_refused_naming_the_flag_meant(tmp_path, capsys):
    """argparse took "--hub_tok X" for --hub_token, and the card's command line hides only whole *_token flags.
    Refused, the message names the flag it is close to (HfArgumentParser's own named none)."""
    from hf_minattn.run_mlm import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--output_dir", str(tmp_path / "out"), "--hub_tok", "hf_secret"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()  # "PROG: error: ...", PROG as the process was started
    assert err.split(": error: ", 1)[1] == ("unrecognized arguments: --hub_tok hf_secret; did you mean --hub_token "
                                            "for --hub_tok? (--help lists every flag)")


def test_an_error_of_datasets_that_is_not_named_keeps_its_cause(tmp_path, text_files, monkeypatch):
    from hf_minattn import data
    from hf_minattn.run_mlm import parse_args

    def failing(*args, **kwargs):
        try:
            raise KeyError("inner")
        except KeyError as cause:
            raise ValueError("something else") from cause

    monkeypatch.setattr(data.datasets, "load_dataset", failing)
    data_args = parse_args(tiny_argv(tmp_path / "out", train_file=text_files / "train.txt"))[1]
    with pytest.raises(ValueError, match="^something else$") as error:
        data.load_raw_datasets(data_args, None)
    assert isinstance(error.value.__cause__, KeyError)


def test_an_evaluation_without_training_writes_no_model_card(tmp_path, text_files, tokenizer_dir):
    """--do_train false evaluates --model_name_or_path and saves no model: a card would describe a model that the
    folder does not hold."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    MinAttnForMaskedLM(MinAttnConfig(**MODEL_SIZES["tiny"], vocab_size=len(tokenizer))).save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    metrics = main(tiny_argv(tmp_path / "out", model_size=None, model_name_or_path=tmp_path / "m", do_train="false",
                             train_file=text_files / "train.txt", report_to="none"))
    assert "eval_loss" in metrics
    assert (tmp_path / "out" / "eval_results.json").exists() and not (tmp_path / "out" / "README.md").exists()


def test_an_evaluation_is_not_written_over_the_records_of_another_run(tmp_path, text_files, tokenizer_dir):
    """--do_train false --output_dir b, where b held another trained model, rewrote b's run_args.json and the eval_*
    keys of its all_results.json: b's records then described the model evaluated. Refused, naming both, unless
    --overwrite_output_dir true; the model's own folder is fine, and keeps its run_args.json (eval_args.json beside
    it holds the evaluation's arguments)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    model, other = tmp_path / "m", tmp_path / "b"
    for folder in (model, other):
        MinAttnForMaskedLM(MinAttnConfig(**MODEL_SIZES["tiny"], vocab_size=len(tokenizer))).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "run_args.json").write_text('{"training_args": {"seed": 1}}')
    (other / "trainer_state.json").write_text('{"global_step": 8}')
    (other / "all_results.json").write_text('{"train_loss": 4.0, "eval_loss": 5.0}')
    written = {p: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    argv = tiny_argv(other, model_size=None, model_name_or_path=model, do_train="false", report_to="none",
                     train_file=text_files / "train.txt")
    refused = (f"--output_dir {other} holds another run ({{}}), whose results would then describe --model_name_or_path "
               f"{model}, evaluated there by --do_train false: evaluate into the model's own folder or another "
               "--output_dir, or pass --overwrite_output_dir true to write it there")
    with pytest.raises(ValueError, match=re.escape(refused.format("trainer_state.json"))):
        main(argv)
    (other / "trainer_state.json").unlink()
    (other / "README.md").write_text(IN_PROGRESS_CARD)  # its weights are no trained model: its run_args.json is a run
    with pytest.raises(ValueError, match=re.escape(refused.format("run_args.json"))):
        main(argv)
    (other / "run_args.json").unlink()
    (other / "checkpoint-4").mkdir()
    with pytest.raises(ValueError, match=re.escape(refused.format("checkpoints"))):
        main(argv)
    assert {p: p.read_bytes() for p in other.rglob("*") if p.is_file() and p.name != "README.md"} == {
        p: content for p, content in written.items() if p.name not in ("trainer_state.json", "run_args.json")}

    main([*argv, "--overwrite_output_dir", "true"])
    assert read_json(other / "eval_args.json")["model_args"]["model_name_or_path"] == str(model)
    main(tiny_argv(model, model_size=None, model_name_or_path=model, do_train="false", report_to="none",
                   train_file=text_files / "train.txt"))
    assert (model / "run_args.json").read_text() == '{"training_args": {"seed": 1}}'
    assert "eval_loss" in read_json(model / "eval_results.json") and (model / "eval_args.json").is_file()


def test_the_repository_of_push_to_hub_is_checked_when_parsed(tmp_path, monkeypatch):
    """transformers' Trainer creates it only after the data is read and the tokenizer trained: a name the Hub refuses
    (by default the --output_dir folder's) or an offline Hub ended the run there."""
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the machine's own setting aside
    with pytest.raises(ValueError, match=re.escape("--push_to_hub's repository (the --output_dir folder's name; give "
                                                   "--hub_model_id) 'my run!' is not a valid Hub repository id")):
        parse_args(tiny_argv(tmp_path / "my run!", push_to_hub=True))
    parse_args(tiny_argv(tmp_path / "my-run", push_to_hub=True))  # the folder's name is a valid id
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ValueError, match="--push_to_hub uploads to the Hub, and HF_HUB_OFFLINE is set"):
        parse_args(tiny_argv(tmp_path / "out", push_to_hub=True, hub_model_id="me/tiny"))
