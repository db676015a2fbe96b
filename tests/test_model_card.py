"""The model card: its data named in a few words where the Hub shows a title and in full in its text; what it says
about the run (command, hyper-parameters, the floor), the architecture and what is learned (frozen embeddings,
identity projections); the command of the committed findings; a fill-mask example that runs."""

import json
import os
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
from transformers import DataCollatorForLanguageModeling, TrainingArguments, pipeline

from conftest import TEXTS, tiny_config
from hf_minattn import MinAttnForMaskedLM, train_tokenizer
from hf_minattn.arguments import DataTrainingArguments, ModelArguments
from hf_minattn.data import WIKIPEDIA_CORPUS_DESCRIPTION
from hf_minattn.model_card import (
    EMBEDDED_CORPUS_TITLE,
    FINDINGS_COMMAND,
    CardFacts,
    build_model_card,
    card_facts,
    dataset_title,
    describe_training,
    floor_sentence,
    unchanged_share,
    validate_model_card,
    write_model_card,
)


def data_args(dataset_name=None, dataset_config_name=None, train_file=None):
    return SimpleNamespace(dataset_name=dataset_name, dataset_config_name=dataset_config_name, train_file=train_file)


def test_the_dataset_title_is_the_hub_id_the_file_name_or_the_embedded_corpus():
    assert dataset_title(data_args("wikitext", "wikitext-103-raw-v1")) == "wikitext (wikitext-103-raw-v1)"
    assert dataset_title(data_args("wikitext")) == "wikitext"
    assert dataset_title(data_args(train_file="/data/corpus/my.txt")) == "my.txt"
    assert dataset_title(data_args()) == EMBEDDED_CORPUS_TITLE


def test_the_results_name_the_embedded_corpus_briefly_and_the_text_describes_it(tmp_path):
    facts = CardFacts(model_name="minattn-test", config=tiny_config(), num_parameters=1234, dataset_id=None,
                      dataset_config=None, dataset_description=WIKIPEDIA_CORPUS_DESCRIPTION,
                      dataset_title=dataset_title(data_args()), train_summary="100 steps, seed 0",
                      eval_metrics={"eval_loss": 5.0, "eval_perplexity": 148.41, "eval_accuracy": 0.1})
    card = validate_model_card(write_model_card(tmp_path, facts))
    names = {result.dataset_name for result in card.data.eval_results}
    assert names == {EMBEDDED_CORPUS_TITLE} and len(EMBEDDED_CORPUS_TITLE.split()) <= 8
    assert WIKIPEDIA_CORPUS_DESCRIPTION in card.text
    # Time and throughput are not copied into the card: it links the file that holds them.
    assert "[`train_results.json`](train_results.json)" in card.text and "tokens/s" not in card.text


def run_facts(tmp_path, tokenizer, argv=(), data_collator=None, data_args=None, eval_dataset=None,
              **training) -> CardFacts:
    """card_facts of a run that trained nothing: TrainingArguments, a tiny model, no datasets."""
    args = TrainingArguments(output_dir=str(tmp_path / "run"), report_to="none", use_cpu=True, **training)
    args.max_train_minutes = None  # run_mlm's own argument
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer)))
    trainer = SimpleNamespace(args=args, model=model, eval_dataset=eval_dataset, state=SimpleNamespace(global_step=3),
                              data_collator=data_collator)
    return card_facts(trainer, ModelArguments(), data_args or DataTrainingArguments(), "a test corpus", tokenizer, {},
                      {}, 24, list(argv))


def test_the_validation_split_is_named_where_a_file_gave_it(tmp_path, tokenizer):
    """A --validation_file was "N sequences of held-out text", which it need not be."""
    held_out = run_facts(tmp_path, tokenizer, eval_dataset=[0] * 7)
    assert held_out.eval_split_description == "7 sequences of held-out text" and held_out.validation_file is None
    for name in ("train.txt", "other.txt"):
        (tmp_path / name).write_text("some text here\n")
    data_args = DataTrainingArguments(train_file=str(tmp_path / "train.txt"), validation_file=str(tmp_path / "other.txt"))
    given = run_facts(tmp_path, tokenizer, data_args=data_args, eval_dataset=[0] * 7)
    assert given.eval_split_description == "7 sequences of `other.txt`" and given.validation_file == "other.txt"


@pytest.mark.parametrize("argv", [["--push_to_hub", "--hub_token", "hf_SECRET", "--seed", "1"],
                                  ["--push_to_hub", "--hub_token=hf_SECRET", "--seed", "1"],
                                  ["--push_to_hub", "--hub-token", "hf_SECRET", "--seed", "1"]])
def test_the_reproduce_command_hides_the_hub_token(tmp_path, tokenizer, argv):
    text = write_model_card(tmp_path, run_facts(tmp_path, tokenizer, argv)).read_text()
    assert "hf_SECRET" not in text
    command = next(line for line in text.splitlines() if line.startswith("python training/run_mlm.py"))
    assert "<HUB_TOKEN>" in command and "--push_to_hub" in command and command.endswith("--seed 1")


def fill_example(card_text: str) -> str:
    return re.search(r'^fill\("(.*)"\)$', card_text, re.MULTILINE).group(1)


def test_the_fill_mask_example_uses_the_tokenizer_mask_and_casing(tmp_path):
    """A tokenizer whose mask is "<mask>" (RoBERTa's, XLM-R's) and which keeps case: the example runs as printed."""
    tokenizer = train_tokenizer(TEXTS, vocab_size=120, min_frequency=1, show_progress=False, model="word",
                                lowercase=False)
    tokenizer.add_special_tokens({"mask_token": "<mask>"})
    facts = run_facts(tmp_path, tokenizer)
    folder = tmp_path / "model"
    MinAttnForMaskedLM(facts.config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    text = write_model_card(folder, facts).read_text()
    example = fill_example(text)
    assert example == "The capital of France is <mask>." and "[MASK]" not in text
    assert "80% `<mask>`" in text
    predictions = pipeline("fill-mask", model=str(folder), tokenizer=str(folder), device="cpu")(example)
    assert len(predictions) == 5

    lower = train_tokenizer(TEXTS, vocab_size=120, min_frequency=1, show_progress=False)
    assert fill_example(str(build_model_card(run_facts(tmp_path, lower)))) == "the capital of france is [MASK]."


def training_args(**options) -> TrainingArguments:
    args = TrainingArguments(output_dir="unused", report_to="none", use_cpu=True, **options)
    args.max_train_minutes = None
    return args


def test_the_hyper_parameters_line_says_what_the_run_used():
    default = describe_training(training_args(), {}, 10)
    assert "linear schedule" in default and "SchedulerType" not in default
    assert "adamw_torch_fused optimizer" in default and ", fp32," in default and "warmup 0 steps" in default
    assert "cosine schedule" in describe_training(training_args(lr_scheduler_type="cosine"), {}, 10)
    sgd = describe_training(training_args(optim="sgd"), {}, 10)
    assert "sgd optimizer" in sgd and "AdamW" not in sgd and "adamw" not in sgd
    # transformers 5 reads a warmup below 1 as a share of the planned steps
    ratio = describe_training(training_args(warmup_steps=0.1, max_steps=1000), {}, 700)
    assert "warmup over 10% of the planned steps, 100 steps" in ratio and "0.1 steps" not in ratio
    assert "warmup over 10% of the planned steps," in describe_training(training_args(warmup_steps=0.1), {}, None)
    assert "warmup 25 steps" in describe_training(training_args(warmup_steps=25), {}, 10)
    fp16 = describe_training(training_args(fp16=True), {}, 10)
    assert "fp16 autocast" in fp16 and "fp32" not in fp16
    assert "bf16 autocast" in describe_training(training_args(bf16=True), {}, 10)
    timed = training_args()
    timed.max_train_minutes = 1
    assert "linear decay over 1 minute of training" in describe_training(timed, {}, 10)
    timed.max_train_minutes = 2.5
    assert "linear decay over 2.5 minutes of training" in describe_training(timed, {}, 10)


def test_the_floor_sentence_claims_context_only_beyond_the_printed_precision():
    floor = 5.0
    # whole-word masking (nothing left to copy): a gain printed as 0.00 shows nothing; 0.02 does
    tiny = floor_sentence({"eval_unigram_loss": floor, "eval_gain_over_unigram": 0.004}, kept=0.0)
    assert "0.00 nats below" in tiny and "so it uses" not in tiny and tiny.endswith("is not shown.")
    clear = floor_sentence({"eval_unigram_loss": floor, "eval_gain_over_unigram": 0.02}, kept=0.0)
    assert clear.endswith("so it uses their context.")
    # with 10% of scored tokens unchanged the bound is 0.50: 0.505 (printed 0.50 or 0.51) is not clearly above it
    close = floor_sentence({"eval_unigram_loss": floor, "eval_gain_over_unigram": 0.505})
    assert "not clearly more than copying the 10%" in close and close.endswith("is not shown.")
    above = floor_sentence({"eval_unigram_loss": floor, "eval_gain_over_unigram": 0.52})
    assert "so it uses their context (copying the 10%" in above


def test_the_unchanged_share_comes_from_the_masking_settings(tmp_path, tokenizer):
    assert unchanged_share(DataCollatorForLanguageModeling(tokenizer)) == pytest.approx(0.1)
    masker = DataCollatorForLanguageModeling(tokenizer, mask_replace_prob=0.5, random_replace_prob=0.2)
    assert unchanged_share(masker) == pytest.approx(0.3)
    facts = run_facts(tmp_path, tokenizer, data_collator=SimpleNamespace(masker=masker))
    facts.eval_metrics = {"eval_loss": 5.0, "eval_unigram_loss": 5.0, "eval_gain_over_unigram": 2.0}
    assert facts.unchanged_share == pytest.approx(0.3)
    assert "copying the 30% of scored tokens" in str(build_model_card(facts))


def card_text(frozen=False, facts=None, **config) -> str:
    return build_model_card(CardFacts(model_name="m", config=tiny_config(**config), num_parameters=1, dataset_id=None,
                                      dataset_config=None, dataset_description="text", max_seq_length=16,
                                      frozen_embeddings=frozen, **(facts or {}))).text


def test_a_continued_model_a_shuffled_label_control_and_a_validation_file_are_said_as_they_are():
    """The card said "trained from scratch", "starts from a random initialisation" and "frozen at their random initial
    values" of a model continued from --model_name_or_path, nothing of --shuffle_labels (the control read as a plain
    masked-LM run), and "held-out text of the same source" of a --validation_file."""
    plain = " ".join(card_text(frozen=True).split())
    assert "trained from scratch with `transformers.Trainer`" in plain and "starts from a random initialisation" in plain
    assert "frozen at their random initial values" in plain and "held-out text of the same source" in plain
    assert "permuted" not in plain
    changed = " ".join(card_text(frozen=True, facts={"continued_from": "me/base", "shuffled_labels": True,
                                                     "validation_file": "other.txt"}).split())
    assert "trained further from `me/base` with `transformers.Trainer`" in changed and "from scratch" not in changed
    assert "Every parameter starts from its value in `me/base` and, the frozen embeddings excepted," in changed
    assert "random initial" not in changed and "frozen at their values in `me/base`" in changed
    assert "**with the masked targets of each training batch permuted across its masked positions**" in changed
    assert "the validation file given (`other.txt`), which may come from another source," in changed
    assert "same source" not in changed


def test_the_architecture_lines_follow_the_config():
    assert "| Positions | learned, up to 24 tokens |" in card_text()
    for positions in ("rope", "none"):  # no position table: any length
        text = card_text(position_embedding_type=positions, hidden_size=32)
        assert f"| Positions | {positions}, any number of tokens (trained on 16) |" in text and "up to 24" not in text
    assert "W_Q and W_K with std sqrt(" in card_text()
    assert "W_Q and W_K with std" not in card_text(qkv_projection="identity")  # there are no W_Q, W_K
    assert "W_Q and W_K with std" not in card_text(qkv_init="identity")  # they start at the identity


def test_the_initialisation_and_frozen_lines_follow_the_config():
    """With no feed-forward there is no feed-forward output to scale, and without learned positions there are no
    position embeddings to freeze (rope and none have no table; a sinusoidal one is fixed, not random): the card
    said both whatever the config."""
    bare = " ".join(card_text(frozen=True, position_embedding_type="rope", intermediate_size=0, hidden_size=32).split())
    assert "the residual output projections W_O scaled down by sqrt(2 x layers))" in bare
    assert "feed-forward output" not in bare
    assert "- **Embeddings frozen**: the word embeddings kept their random initial values during training." in bare
    assert "position) embeddings" not in bare and "position embeddings kept" not in bare

    full = " ".join(card_text(frozen=True).split())  # learned positions, a 37-wide feed-forward
    assert "the residual output projections W_O and the feed-forward output scaled down by sqrt(2 x layers))" in full
    assert "the word and position embeddings kept their random initial values during training." in full

    sinusoidal = " ".join(card_text(frozen=True, position_embedding_type="sinusoidal").split())
    assert ("the word embeddings kept their random initial values during training (the sinusoidal position encoding "
            "is fixed, not learned, in any case).") in sinusoidal


def test_the_card_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """A write killed before its last step (here: the rename) leaves the previous card, not a truncated one."""
    facts = CardFacts(model_name="m", config=tiny_config(), num_parameters=1, dataset_id=None, dataset_config=None,
                      dataset_description="first")
    path = write_model_card(tmp_path, facts)
    before = path.read_text()

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    facts.dataset_description = "second"
    with pytest.raises(KeyboardInterrupt):
        write_model_card(tmp_path, facts)
    assert path.read_text() == before
    monkeypatch.undo()
    assert "second" in write_model_card(tmp_path, facts).read_text()
    assert sorted(os.listdir(tmp_path)) == ["README.md"]


def test_what_is_learned_follows_frozen_embeddings_and_identity_projections():
    full = card_text()
    assert "and is trained by backpropagation" in full and "excepted, is trained" not in full
    assert "W_Q and W_K are not the embedding matrix, and the embeddings are updated too." in full
    assert "Not in this model" not in full

    frozen = card_text(frozen=True)
    assert "Not in this model: they were frozen" in frozen
    assert "and, the frozen embeddings excepted, is trained by backpropagation" in frozen
    assert "the embeddings are updated too" not in frozen and "the embeddings are not updated (frozen)" in frozen

    identity = card_text(qkv_projection="identity")
    assert "Not in this model: W_Q = W_K = W_V = I" in identity
    assert "W_Q and W_K are not the embedding matrix" not in identity
    assert "W_Q, W_K and W_V are not learned matrices but the identity, and the embeddings are updated too" in identity

    both = " ".join(card_text(frozen=True, qkv_projection="identity").split())
    assert "not learned matrices but the identity, and the embeddings are not updated (frozen)." in both
    assert "updated too" not in both


def test_the_card_points_to_the_command_of_the_committed_findings():
    """The command FINDINGS.md's numbers come from (the confirmation seeds and the reference), not the exploration
    seeds that `hf-minattn experiments` runs by default."""
    results = Path(__file__).resolve().parents[1] / "docs" / "findings" / "results.json"
    committed = shlex.split(json.loads(results.read_text(encoding="utf-8"))["command"])
    out = committed.index("--out")
    assert shlex.split(FINDINGS_COMMAND) == committed[:out + 1] + ["DIR"] + committed[out + 2:]
    assert f"reproducible with\n`{FINDINGS_COMMAND}`." in card_text()
