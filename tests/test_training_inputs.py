"""training/run_mlm.py refuses, before training, inputs that used to fail only after it (or never): a tokenizer with no
pad token, a validation set whose fixed masks chose no token, a --model_name_or_path folder with no tokenizer, an
arguments file whose values are of the wrong JSON type; its --help states what the run does; a model continued with
another tokenizer takes that tokenizer's special token ids."""

import dataclasses
import json
import re
import typing

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, run_mlm
from hf_minattn.arguments import MODEL_SIZES, DataTrainingArguments, MinAttnTrainingArguments, ModelArguments
from hf_minattn.checks import json_value_fits
from hf_minattn.configuration_minattn import SPECIAL_TOKEN_ID_FIELDS
from hf_minattn.run_mlm import main, parse_args

from helpers_training import tiny_argv

GROUPS = (ModelArguments, DataTrainingArguments, MinAttnTrainingArguments)


@pytest.fixture
def no_training(monkeypatch):
    """Training fails the test: each refusal here must come before it."""
    monkeypatch.setattr(run_mlm.MinAttnTrainer, "train", lambda self, **kwargs: pytest.fail("training started"))


def word_tokenizer(folder, texts, special_tokens, vocab_size=300) -> PreTrainedTokenizerFast:
    """A word-level fast tokenizer with `special_tokens` (their order gives their ids), saved into `folder`."""
    backend = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.train_from_iterator(texts, trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=special_tokens))
    names = {"[UNK]": "unk_token", "[MASK]": "mask_token", "[PAD]": "pad_token", "[CLS]": "cls_token",
             "[SEP]": "sep_token"}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=64,
                                        **{names[token]: token for token in special_tokens})
    tokenizer.save_pretrained(folder)
    return tokenizer


# ---------------------------------------------------------------------------------------------- the tokenizer


@pytest.mark.parametrize("extra", [{}, {"do_eval": "false"}])
def test_a_tokenizer_without_a_pad_token_is_refused_before_training(tmp_path, text_files, no_training, extra):
    """It trained, then failed at the final evaluation (with --line_by_line, at the first batch) in transformers'
    words, leaving a half-finished folder. Asked of every run, even one that would pad nothing (no evaluation,
    concatenated texts): the saved model is padded when used on batches of unequal texts."""
    texts = (text_files / "train.txt").read_text().splitlines()
    word_tokenizer(tmp_path / "nopad", texts, ["[UNK]", "[MASK]"])
    out = tmp_path / "out"
    message = f"The tokenizer ({tmp_path / 'nopad'}) has no pad token; run_mlm.py needs one"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        main(tiny_argv(out, tmp_path / "nopad", train_file=text_files / "train.txt", **extra))
    assert not out.exists()


def _model_folder(folder, vocab_size: int):
    MinAttnForMaskedLM(MinAttnConfig(**MODEL_SIZES["tiny"], vocab_size=vocab_size)).save_pretrained(folder)
    return folder


class DataRead(Exception):
    """Raised where the run reads its data: every check before it passed."""


def test_a_model_folder_without_a_tokenizer_is_refused_before_the_data_is_read(tmp_path, text_files, tokenizer_dir,
                                                                               monkeypatch):
    """Without --tokenizer_name the tokenizer comes from --model_name_or_path: a folder holding none failed once the
    data was read, with transformers' advice to install sentencepiece."""
    model = _model_folder(tmp_path / "model", 400)
    monkeypatch.setattr(run_mlm, "load_raw_datasets", lambda *args: pytest.fail("the data was read"))
    message = f"--model_name_or_path {str(model)!r} holds no tokenizer (none of tokenizer.json"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}.* and no --tokenizer_name is given"):
        main(tiny_argv(tmp_path / "out", model_size=None, model_name_or_path=model, train_file=text_files / "train.txt"))
    assert not (tmp_path / "out").exists()

    # with --tokenizer_name the model's folder needs none: the run goes on to read the data
    monkeypatch.setattr(run_mlm, "load_raw_datasets", lambda *args: (_ for _ in ()).throw(DataRead()))
    with pytest.raises(DataRead):
        main(tiny_argv(tmp_path / "out", tokenizer_dir, model_size=None, model_name_or_path=model,
                       train_file=text_files / "train.txt"))


def test_a_model_continued_with_another_tokenizer_takes_its_special_token_ids(tmp_path, text_files, tokenizer_dir):
    """The embeddings were resized to the new tokenizer, but config.json kept the special token ids of the model's
    own (here [PAD]=0 [CLS]=2 [SEP]=3 [MASK]=4), where a new model takes the tokenizer's."""
    from hf_minattn.arguments import build_config
    from hf_minattn.model_source import find_model

    own = AutoTokenizer.from_pretrained(tokenizer_dir)
    model_folder = _model_folder(tmp_path / "model", len(own))
    texts = (text_files / "train.txt").read_text().splitlines()
    other = word_tokenizer(tmp_path / "other", texts, ["[UNK]", "[MASK]", "[SEP]", "[CLS]", "[PAD]"], vocab_size=600)
    assert len(other) > len(own)  # the embeddings grow

    model_args = ModelArguments(model_name_or_path=str(model_folder), tokenizer_name=str(tmp_path / "other"))
    source = find_model(str(model_folder))
    model = run_mlm.build_model(model_args, build_config(model_args, source), other, seed=0, source=source)
    assert model.get_input_embeddings().num_embeddings == len(other)
    expected = {"pad_token_id": 4, "cls_token_id": 3, "sep_token_id": 2, "mask_token_id": 1}
    assert {name: getattr(other, name) for name in SPECIAL_TOKEN_ID_FIELDS} == expected
    model.save_pretrained(tmp_path / "saved")
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert {name: saved[name] for name in SPECIAL_TOKEN_ID_FIELDS} == expected


# ---------------------------------------------------------------------------------------------- the validation masks


@pytest.mark.parametrize("case", ["one short line", "tiny masking rate", "later sequences"])
def test_a_validation_set_whose_masks_chose_no_token_is_refused_before_training(tmp_path, text_files, tokenizer_dir,
                                                                                no_training, case):
    """The masks are drawn once, before training: a validation set where none was drawn trained fully, then failed
    at the evaluation ("cross_entropy needs at least one target token")."""
    if case == "one short line":
        (tmp_path / "yes.txt").write_text("Yes.\n")
        extra = {"validation_file": tmp_path / "yes.txt", "line_by_line": True}
        shown = ("The validation split (local files: train.txt, yes.txt) has no masked token: masked once at "
                 "--mlm_probability 0.15, its 1 sequence (5 tokens) got no mask")
    else:
        extra = {"mlm_probability": "0.00001", **({"skip_eval_samples": 3} if case == "later sequences" else {})}
        shown = "has no masked token: masked once at --mlm_probability 1e-05, its 20 sequences (1280 tokens) got no mask"
    skipped = r", lower --skip_eval_samples \(now 3\)" if case == "later sequences" else ""
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=re.escape(shown) + r".*raise --mlm_probability or --max_eval_samples "
                                                            r"\(now 20\)" + skipped + r", or give more validation text$"):
        main(tiny_argv(out, tokenizer_dir, train_file=text_files / "train.txt", **extra))
    assert not out.exists()


# ---------------------------------------------------------------------------------------------- an arguments file


def _arguments_file(tmp_path, **values):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"output_dir": str(tmp_path / "out"), "max_steps": 2, **values}))
    return path


@pytest.mark.parametrize("key, value, expected", [
    ("max_steps", "abc", '"max_steps" is "abc" (a string); expected an integer'),
    ("max_steps", True, '"max_steps" is true (a boolean); expected an integer'),
    ("max_eval_samples", 2.5, '"max_eval_samples" is 2.5 (a number); expected an integer or null'),
    ("mlm_probability", "0.2", '"mlm_probability" is "0.2" (a string); expected a number'),
    ("line_by_line", "false", '"line_by_line" is "false" (a string); expected true or false'),
    ("bf16", 0, '"bf16" is 0 (an integer); expected true or false or null'),
    ("train_file", 7, '"train_file" is 7 (an integer); expected a string or null'),
    ("tokenizer_model", "bpe", '"tokenizer_model" is "bpe" (a string); expected one of "wordpiece", "word"'),
    ("report_to", ["none", 1], '"report_to" is ["none", 1] (a list); expected null, a string or a list of strings'),
])
def test_an_arguments_file_value_of_the_wrong_type_is_named(tmp_path, key, value, expected):
    """HfArgumentParser.parse_json_file converts nothing: "max_steps": "abc" failed in a comparison deep inside the
    checks ("'<' not supported between instances of 'str' and 'int'"), and "line_by_line": "false" was true."""
    path = _arguments_file(tmp_path, **{key: value})
    with pytest.raises(ValueError, match=f"^{re.escape(f'the arguments file {str(path)!r}: {expected}')}$"):
        parse_args([str(path)])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, expected", [
    ("[1, 2]", "holds a JSON list; expected a JSON object"),
    ('{"max_steps": ', "is not valid JSON (Expecting value"),
])
def test_an_arguments_file_that_is_no_json_object_is_named(tmp_path, content, expected):
    (tmp_path / "args.json").write_text(content)
    with pytest.raises(ValueError, match=re.escape(f"the arguments file: {str(tmp_path / 'args.json')!r} {expected}")):
        parse_args([str(tmp_path / "args.json")])


def test_an_arguments_file_of_the_right_types_is_read_as_given(tmp_path):
    path = _arguments_file(tmp_path, learning_rate=1, max_eval_samples=None, line_by_line=True, bf16=False,
                           lr_scheduler_type="cosine", report_to=["none"], model_size="tiny")
    model_args, data_args, training_args = parse_args([str(path)])
    assert (training_args.max_steps, training_args.learning_rate, training_args.bf16) == (2, 1, False)
    assert data_args.line_by_line is True and data_args.max_eval_samples is None and model_args.model_size == "tiny"
    assert training_args.lr_scheduler_type.value == "cosine" and training_args.report_to == []  # "none": no logger


def test_every_flags_default_fits_its_own_type():
    """The type check reads every annotation of the three groups (unions, enums, Literal, list[str], dict[str, X]):
    a default that it refused would mean it misreads that annotation, and refuses a valid value in a file."""
    for group in GROUPS:
        hints = typing.get_type_hints(group)
        for field in dataclasses.fields(group):
            if field.init and isinstance(field.default, (bool, int, float, str, type(None))):
                assert json_value_fits(field.default, hints[field.name]), (field.name, field.default)
    assert not json_value_fits(1, bool) and not json_value_fits(True, int) and not json_value_fits(True, float)
    assert json_value_fits(False, typing.Union[str, None, typing.Literal[False]])
    assert not json_value_fits(0, typing.Union[str, None, typing.Literal[False]])


# ---------------------------------------------------------------------------------------------- --help


def test_help_states_the_text_column_and_the_output_folder_the_run_uses(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Unset: 'text' if present, else the first column of strings." in text  # as default_text_column does
    assert "Unset: trainer_output, in the working folder (transformers' default)" in text


@pytest.mark.parametrize("overrides, named", [("pad_token_id=null", "pad_token_id"),
                                              ("hidden_size=64, mask_token_id=7,cls_token_id=1", "mask_token_id, cls_token_id"),
                                              ("vocab_size=1000", "vocab_size")])
def test_a_special_token_id_in_config_overrides_is_refused(overrides, named):
    """run_mlm.py gives the config the tokenizer's special ids and size: an override would be dropped without a word."""
    with pytest.raises(ValueError, match=f"--config_overrides sets {named}; the vocabulary size and the special token "
                                         "ids come from the tokenizer"):
        ModelArguments(model_size="tiny", config_overrides=overrides)
    assert ModelArguments(model_size="tiny", config_overrides="classifier_dropout=null").config_overrides




def test_skip_eval_samples_evaluates_later_sequences_masked_as_in_the_whole_split(tokenizer_dir, text_files, tmp_path):
    """--skip_eval_samples 3 --max_eval_samples 4: the validation split's sequences 3-6, each masked as it is when
    the whole split is evaluated (its masks seeded by its index there), so the curves of runs that skip differently
    agree where they overlap; skipping every sequence is refused by name before any training."""
    import datasets

    from hf_minattn.data import lm_datasets
    from hf_minattn.masking import MLMCollator, mask_once

    files = {"train": str(text_files / "train.txt"), "validation": str(text_files / "validation.txt")}
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    raw = datasets.load_dataset("text", data_files=files)

    def validation(**flags):
        _, data_args, training_args = parse_args(tiny_argv(tmp_path / "out", tokenizer_dir, train_file=files["train"],
                                                           validation_file=files["validation"], **flags))
        source = datasets.load_dataset("text", data_files=files, streaming=True) if data_args.streaming else raw
        kept = lm_datasets(source, tokenizer, "text", data_args, 64, training_args, "the test files")[1]
        return kept, mask_once(kept, MLMCollator(tokenizer, data_args, seed=0), data_args.skip_eval_samples)

    whole, whole_masked = validation(max_eval_samples=None)
    part, part_masked = validation(max_eval_samples=4, skip_eval_samples=3)
    assert len(whole) > 7 and part["input_ids"] == whole["input_ids"][3:7]
    assert part_masked["labels"] == whole_masked["labels"][3:7]
    streamed, streamed_masked = validation(max_eval_samples=4, skip_eval_samples=3, streaming=True)
    assert streamed["input_ids"] == part["input_ids"] and streamed_masked["labels"] == part_masked["labels"]
    assert part_masked["labels"] != mask_once(part, MLMCollator(tokenizer, parse_args(tiny_argv(
        tmp_path / "out", tokenizer_dir))[1], seed=0))["labels"]  # seeded from index 0, as it was: other masks
    shown = re.escape(f"--skip_eval_samples {len(whole)} leaves no validation sequence of the test files to evaluate "
                      f"(it has {len(whole)} sequences of 64 tokens); lower it")
    with pytest.raises(ValueError, match=shown):
        validation(max_eval_samples=None, skip_eval_samples=len(whole))
    with pytest.raises(ValueError, match=re.escape("--skip_eval_samples must be at least 0, got -1")):
        parse_args(tiny_argv(tmp_path / "out", tokenizer_dir, skip_eval_samples=-1))
