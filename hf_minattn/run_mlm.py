"""Train a MinAttn masked language model with `transformers.Trainer`.

Follows transformers' `examples/pytorch/language-modeling/run_mlm.py`: three groups of arguments parsed by
`HfArgumentParser` (`hf_minattn.arguments`, each value checked when parsed), `datasets.map` for tokenization (cached), concatenate-and-chunk or line-by-line sequences,
`DataCollatorForLanguageModeling`. What is specific to this project:

- with no data named, it trains on an embedded English corpus (`hf_minattn.data.load_wikipedia_corpus`: gensim's
  Wikipedia sample, 10k Wikipedia article summaries and the 293 distinct articles of gensim's Lee news corpus), offline;
- a new model is a size preset (`--model_size`) edited by `--config_overrides`, and its tokenizer is trained on the
  training split unless `--tokenizer_name` is given (`--model_name_or_path` brings its own tokenizer);
- evaluation reports loss, perplexity and masked-token accuracy on a validation set masked once with a fixed
  seed, so every evaluation (and every run) scores the same masked tokens;
- `drift.json` records how far embeddings and attention weights move (`hf_minattn.drift.DriftCallback`);
- with `--loss_allocation`, `loss_allocation.json` shares out each interval's loss change on a fixed batch over the
  parameter groups (`hf_minattn.loss_allocation.LossAllocationCallback`);
- the output folder of a run that trains is a Hub repository: weights, modeling code, tokenizer, metrics and a
  README.md model card.

Run `python training/run_mlm.py --help` for every flag; `accelerate launch training/run_mlm.py ...` runs it
distributed.
"""

import copy
import itertools
import logging
import os
import shutil
import sys
from contextlib import contextmanager
from dataclasses import asdict

import datasets
import transformers
from transformers import AutoModelForMaskedLM, AutoTokenizer, HfArgumentParser, set_seed
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import sort_checkpoints

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, train_tokenizer
from hf_minattn.arguments import (DataTrainingArguments, MinAttnTrainingArguments, ModelArguments, build_config,
                                  check_argument_groups, check_model_tokenizer, check_resumed_config)
from hf_minattn.checks import check_json_arguments, lies_within, read_json_object
from hf_minattn.cli import OneLineErrors
from hf_minattn.configuration_minattn import SPECIAL_TOKEN_ID_FIELDS
from hf_minattn.data import (STREAM_SAMPLE_TEXTS, STREAM_UNIGRAM_SEQUENCES, first_texts, lm_datasets, load_raw_datasets,
                             resolve_text_column)
from hf_minattn.drift import DriftCallback
from hf_minattn.early_states import EarlyStates, StopAtStep
from hf_minattn.initialization import initial_model
from hf_minattn.loss_allocation import LossAllocationCallback
from hf_minattn.masking import MLMCollator, mask_once, with_example_index
from hf_minattn.model_card import card_facts
from hf_minattn.model_source import ModelSource, check_tokenizer_json, find_model, hub_errors
from hf_minattn.sentence_embedding import write_sentence_transformers_files
from hf_minattn.record_files import write_json_atomically
from hf_minattn.run_folder import EVAL_ARGS, RUN_ARGS, checkpoint_to_resume, finished_run, holds_model
from hf_minattn.trainer import (MinAttnTrainer, metrics_computer, preprocess_logits_for_metrics, saved_results,
                                write_trainer_state)
from hf_minattn.unigram import UnigramFloor

logger = logging.getLogger(__name__)


class OneLineErrorParser(OneLineErrors, HfArgumentParser):
    """HfArgumentParser whose errors are one line, as every hf-minattn command's (OneLineErrors)."""


def parse_args(argv=None):
    # No abbreviated flags: "--hub_tok X" would set hub_token, which the card's command line then shows in clear.
    parser = OneLineErrorParser((ModelArguments, DataTrainingArguments, MinAttnTrainingArguments), description=__doc__,
                                allow_abbrev=False)
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 1 and argv[0].endswith(".json"):
        # HfArgumentParser.parse_json_file converts no value: each is checked against its field's type first.
        path = os.path.abspath(argv[0])
        values = read_json_object(path, "the arguments file")
        check_json_arguments(values, parser.dataclass_types, f"the arguments file {path!r}")
        groups = parser.parse_dict(values)
    else:
        *groups, unknown = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
        if unknown:  # HfArgumentParser raises a ValueError that names no close flag
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    check_argument_groups(*groups)
    return groups


def setup_logging(training_args) -> None:
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    if training_args.should_log:  # the Trainer's default level is warning; show our progress messages
        transformers.utils.logging.set_verbosity_info()
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    logger.warning(
        f"Process rank: {training_args.process_index}, world size: {training_args.world_size}, "
        f"device: {training_args.device}, bf16: {training_args.bf16}"
    )


def sequence_length(data_args, config: MinAttnConfig, pretrained: bool = False) -> int:
    """--max_seq_length (default: max_position_embeddings), checked against the longest input the model takes (the
    model's own rule, `MinAttnConfig.sequence_length_limit`: rotary or no positions take any length). `pretrained`:
    the config is that of --model_name_or_path, whose positions cannot be overridden."""
    max_seq_length = data_args.max_seq_length or config.max_position_embeddings
    limit = config.sequence_length_limit()
    if limit is not None and max_seq_length > limit:
        remedy = ("lower it: the positions of a pretrained model are fixed" if pretrained else
                  f"lower it or add max_position_embeddings={max_seq_length} to --config_overrides")
        raise ValueError(f"--max_seq_length {max_seq_length} is larger than the model's max_position_embeddings "
                         f"({limit}), the longest input {config.position_embedding_type} positions take; {remedy}")
    return max_seq_length


def load_or_train_tokenizer(model_args, training_args, raw, text_column, checkpoint, max_seq_length, source=None,
                            whole_word_mask=False):
    """The checkpoint's tokenizer when resuming, the one named, the model's (`source`), or one trained on the training
    split; `whole_word_mask` (--whole_word_mask) needs a fast one."""
    tokenizer_path = folder = checkpoint or model_args.tokenizer_name  # `folder`: where its files lie, if local
    pretrained = {"pretrained_model_name_or_path": tokenizer_path}
    if tokenizer_path is None and source is not None:
        tokenizer_path, pretrained, folder = source.label, source.pretrained(), source.folder  # the model's commit
    if tokenizer_path is None:
        # One process trains and saves it, the others load it: every process gets the same vocabulary.
        with training_args.main_process_first(desc="training the tokenizer", local=False):
            if training_args.process_index == 0:
                logger.info(f"Training a {model_args.tokenizer_model} tokenizer (at most {model_args.vocab_size} tokens) on the training split")
                tokenizer = train_tokenizer(first_texts(raw["train"], text_column, STREAM_SAMPLE_TEXTS),
                                            vocab_size=model_args.vocab_size,
                                            min_frequency=model_args.tokenizer_min_frequency,
                                            model_max_length=max_seq_length, model=model_args.tokenizer_model)
                tokenizer.save_pretrained(training_args.output_dir)
            else:
                tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
    else:
        check_tokenizer_json(folder, f"the tokenizer ({tokenizer_path})")
        # a Hub id that cannot be fetched (missing, offline) is one line naming it, as for --model_name_or_path
        with hub_errors(pretrained["pretrained_model_name_or_path"], pretrained.get("revision"), model_args.cache_dir):
            tokenizer = AutoTokenizer.from_pretrained(**pretrained, cache_dir=model_args.cache_dir,
                                                      trust_remote_code=model_args.trust_remote_code)
    if tokenizer.mask_token is None:
        raise ValueError(f"The tokenizer ({tokenizer_path}) has no mask token; masked-LM training needs one")
    if tokenizer.pad_token is None:  # of every run, padded or not: a rule that no flag changes
        raise ValueError(f"The tokenizer ({tokenizer_path}) has no pad token; run_mlm.py needs one (it pads the validation "
                         "batches and --line_by_line sequences, and so does batched use of the saved model): add one, "
                         "e.g. tokenizer.add_special_tokens({'pad_token': '[PAD]'}), and save it again")
    if whole_word_mask and not tokenizer.is_fast:  # a Python tokenizer ignores return_offsets_mapping, silently
        raise ValueError(f"--whole_word_mask finds words by character offsets, which only fast (Rust `tokenizers`) "
                         f"tokenizers give; the tokenizer ({tokenizer_path}) is a {type(tokenizer).__name__}: drop "
                         "--whole_word_mask or use a fast tokenizer")
    return tokenizer


def shared_tokenizer(argv) -> str:
    """Only the start of the run that `argv` describes: its data loaded and tokenized into the datasets cache with the
    tokenizer it would train (or read), which is saved into its --output_dir. For runs that share one tokenizer
    (`--tokenizer_name` that folder): they can then all start at once instead of after the first. Returns the folder."""
    model_args, data_args, training_args = parse_args(argv)
    max_seq_length = sequence_length(data_args, build_config(model_args))
    raw, data_description = load_raw_datasets(data_args, model_args.cache_dir)
    text_column = resolve_text_column(raw, data_args.text_column_name, data_description)
    tokenizer = load_or_train_tokenizer(model_args, training_args, raw, text_column, None, max_seq_length,
                                        whole_word_mask=data_args.whole_word_mask)
    tokenizer.save_pretrained(training_args.output_dir)
    # Read back as the runs will read it, so that the cached sequences are the ones their fingerprint finds.
    tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
    lm_datasets(raw, tokenizer, text_column, data_args, max_seq_length, training_args, data_description)
    return training_args.output_dir


def use_tokenizer_ids(config: MinAttnConfig, tokenizer) -> None:
    """The config's special token ids (SPECIAL_TOKEN_ID_FIELDS) set to the tokenizer's: a new model's (the preset
    leaves the defaults), and a continued one's, whose config would keep the ids of its own tokenizer when
    --tokenizer_name gives another."""
    for name in SPECIAL_TOKEN_ID_FIELDS:
        setattr(config, name, getattr(tokenizer, name))


def check_eval_targets(eval_dataset, data_args, description: str) -> None:
    """A ValueError naming the validation split, --mlm_probability and --max_eval_samples when the validation set's
    masks, drawn once before training (mask_once), chose no token: the evaluation would fail after the whole training
    ("cross_entropy needs at least one target token")."""
    if any(label != -100 for labels in eval_dataset["labels"] for label in labels):
        return
    sequences, tokens = len(eval_dataset), sum(len(ids) for ids in eval_dataset["input_ids"])
    limit = f" (now {data_args.max_eval_samples})" if data_args.max_eval_samples is not None else ""
    skipped = (f", lower --skip_eval_samples (now {data_args.skip_eval_samples})"
               if data_args.skip_eval_samples else "")
    raise ValueError(f"The validation split ({description}) has no masked token: masked once at --mlm_probability "
                     f"{data_args.mlm_probability}, its {sequences} sequence{'s' * (sequences != 1)} ({tokens} tokens) "
                     f"got no mask, so the evaluation would have no target; raise --mlm_probability or "
                     f"--max_eval_samples{limit}{skipped}, or give more validation text")


def build_model(model_args, config: MinAttnConfig, tokenizer, seed: int, source=None) -> MinAttnForMaskedLM:
    if source is not None:
        model = AutoModelForMaskedLM.from_pretrained(**source.pretrained(), config=config, cache_dir=model_args.cache_dir,
                                                     trust_remote_code=model_args.trust_remote_code)
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:  # as transformers' run_mlm.py does
            logger.info(f"Resizing the token embeddings from {model.get_input_embeddings().num_embeddings} to "
                        f"{len(tokenizer)} for the tokenizer")
            model.resize_token_embeddings(len(tokenizer))
        use_tokenizer_ids(model.config, tokenizer)
    else:
        config.vocab_size = len(tokenizer)
        use_tokenizer_ids(config, tokenizer)
        model = initial_model(config, seed)
    if model_args.freeze_embeddings:
        for embedding in (model.minattn.embeddings.word_embeddings, model.minattn.embeddings.position_embeddings):
            if embedding is not None:
                embedding.weight.requires_grad_(False)
    logger.info(f"MinAttn masked LM: {model.num_parameters():,} parameters "
                f"({model.num_parameters(only_trainable=True):,} trainable)")
    return model


def train(trainer: MinAttnTrainer, checkpoint, data_args, max_seq_length, at_end: bool = False) -> dict:
    """Train (or, `at_end`, end the training that `checkpoint` finished: `MinAttnTrainer.finish_from_checkpoint`),
    save the model (in Hub format, plus the sentence-transformers files) and the train metrics."""
    args, model = trainer.args, trainer.model
    if at_end:
        logger.warning(f"{checkpoint} is at the end of training: the run's end is written from it, no step trained")
        metrics = trainer.finish_from_checkpoint(checkpoint)
    else:
        metrics = dict(trainer.train(resume_from_checkpoint=checkpoint).metrics)
    trainer.save_model()  # weights, config (with auto_map), modeling code, tokenizer, training_args.bin
    if args.should_save:  # SentenceTransformer(output_dir) loads it as a mean-pooling sentence encoder
        write_sentence_transformers_files(args.output_dir, model.config.hidden_size, max_seq_length)
    metrics["train_samples"] = (trainer.state.global_step * args.train_batch_size * args.gradient_accumulation_steps
                                * args.world_size if data_args.streaming else len(trainer.train_dataset))
    metrics["world_size"] = args.world_size
    speeds = [log["train_tokens_per_second"] for log in trainer.state.log_history if "train_tokens_per_second" in log]
    if speeds:
        metrics["train_tokens_per_second"] = speeds[-1]
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    return metrics


def evaluate(trainer: MinAttnTrainer) -> dict:
    logger.info("*** Evaluate ***")
    metrics = trainer.evaluate()  # eval_perplexity and eval_gain_over_unigram come from MinAttnTrainer.log
    metrics["eval_samples"] = len(trainer.eval_dataset)
    trainer.log_metrics("eval", metrics)
    trainer.save_metrics("eval", metrics)
    return metrics


def finished_run_results(training_args) -> dict | None:
    """With --resume on a run that needs no more training: its saved results (all_results.json, or {}); else None."""
    done = finished_run(training_args) if training_args.resume and training_args.do_train else None
    if not done:
        return None
    pushed = (f"; to push it: hf-minattn push {training_args.output_dir} {training_args.hub_model_id or 'REPO_ID'}"
              if training_args.push_to_hub else "")
    logger.warning(f"{training_args.output_dir} holds a complete run ({done}): nothing to train or save{pushed}")
    return saved_results(training_args.output_dir)


def loss_allocation_callbacks(model, collator: MLMCollator, eval_dataset, training_args) -> list:
    """[LossAllocationCallback] with --loss_allocation (and --do_train), else []."""
    if not (training_args.loss_allocation and training_args.do_train):
        return []
    # The validation set is masked once with a fixed seed: its first sequences are a fixed batch, the same on
    # every process.
    fixed = list(itertools.islice(eval_dataset, training_args.loss_allocation_samples))
    return [LossAllocationCallback(model, collator(fixed), every=training_args.loss_allocation_every,
                                   source=f"the first {len(fixed)} validation sequences, masked once")]


def build_trainer(model_args, data_args, training_args, checkpoint) -> tuple[MinAttnTrainer, str, int]:
    """The Trainer with its data, tokenizer (`processing_class`) and model, the data's description and the
    sequence length. The data is checked before anything expensive."""
    set_seed(training_args.seed)
    # A folder, or a Hub id whose config.json is fetched now: a wrong id or revision fails before any data is read.
    source = (find_model(model_args.model_name_or_path, model_args.model_revision, model_args.cache_dir,
                         flag="--model_revision", what="--model_name_or_path")
              if model_args.model_name_or_path is not None else None)
    config = build_config(model_args, source)
    if source is not None and model_args.tokenizer_name is None and checkpoint is None:  # the model's tokenizer is used
        check_model_tokenizer(source)
    if checkpoint is not None:  # a model of another shape would fail to load it, late and in torch's words
        check_resumed_config(config, checkpoint, model_args)
    max_seq_length = sequence_length(data_args, config, pretrained=source is not None)
    # A tokenizer read (the checkpoint's, --tokenizer_name's, the model's) is read before the data, so that a wrong
    # one fails before a dataset is downloaded; one trained here needs the data.
    tokenizer = (None if checkpoint is None and model_args.tokenizer_name is None and source is None else
                 load_or_train_tokenizer(model_args, training_args, None, None, checkpoint, max_seq_length, source,
                                         data_args.whole_word_mask))
    with training_args.main_process_first(desc="loading the raw data"):
        raw, data_description = load_raw_datasets(data_args, model_args.cache_dir)
    text_column = resolve_text_column(raw, data_args.text_column_name, data_description)
    if tokenizer is None:  # (a tokenizer's truth is its length)
        tokenizer = load_or_train_tokenizer(model_args, training_args, raw, text_column, checkpoint, max_seq_length,
                                            source, data_args.whole_word_mask)
    model = build_model(model_args, config, tokenizer, training_args.seed, source)
    drift = DriftCallback(model)  # copies the initial weights: before the Trainer loads any checkpoint

    # Sequences, the unigram floor, the masks.
    train_dataset, eval_dataset = lm_datasets(raw, tokenizer, text_column, data_args, max_seq_length, training_args,
                                              data_description)
    unigram = UnigramFloor.from_dataset(train_dataset, len(tokenizer), stream_sequences=STREAM_UNIGRAM_SEQUENCES)
    logger.info(f"Unigram floor: entropy {unigram.entropy():.3f} nats over {unigram.num_tokens:,} maskable training tokens")
    collator = MLMCollator(tokenizer, data_args, seed=training_args.seed)
    with training_args.main_process_first(desc="masking the validation set"):
        eval_dataset = mask_once(eval_dataset, collator, data_args.skip_eval_samples)
    if training_args.do_eval or (training_args.loss_allocation and training_args.do_train):  # before any training step
        check_eval_targets(eval_dataset, data_args, data_description)

    # We already removed every column the model does not take, except those the collator needs
    # (special_tokens_mask, offset_mapping, example_index), which the Trainer would otherwise drop.
    training_args.remove_unused_columns = False
    trainer = MinAttnTrainer(
        model=model,
        args=training_args,
        train_dataset=with_example_index(train_dataset) if training_args.do_train else None,
        eval_dataset=eval_dataset if training_args.do_eval else None,
        processing_class=tokenizer,
        data_collator=collator,
        compute_metrics=metrics_computer(unigram) if training_args.do_eval else None,
        preprocess_logits_for_metrics=preprocess_logits_for_metrics if training_args.do_eval else None,
        callbacks=[collator, *loss_allocation_callbacks(model, collator, eval_dataset, training_args),
                   EarlyStates(training_args.early_save_every, training_args.early_save_until),
                   StopAtStep(training_args.stop_at_step)],
        drift=drift,
        time_budget_minutes=training_args.max_train_minutes,
    )
    return trainer, data_description, max_seq_length


def holds_progress(folder: str) -> bool:
    """Whether `folder` holds something a rerun continues from: a checkpoint (the Trainer's, or an early state), or
    the trainer_state.json of a finished training."""
    return bool(sort_checkpoints(folder) or os.path.isdir(os.path.join(folder, "early_states"))
                or os.path.isfile(os.path.join(folder, TRAINER_STATE_NAME)))


@contextmanager
def removed_if_failed(training_args):
    """A run that fails (an exception; a killed process cannot clean up) before training starts removes
    --output_dir if the run created it and it holds nothing to continue from (`holds_progress`), so that no
    tokenizer, initial model or "in progress" card is left looking like a trained model. Once training has started
    (run() sets the yielded dict's "training"), the folder holds the run's logs, drift and loss records, which say
    why it failed: kept. A folder that existed before the run, or holds a checkpoint, is kept as it is: a failed run
    resumes from it. Only the process that saves removes it (one per run, or per node)."""
    output_dir = training_args.output_dir
    created = not os.path.lexists(output_dir)
    progress = {"training": False}
    try:
        yield progress
    except Exception:
        if (created and not progress["training"] and training_args.should_save and os.path.isdir(output_dir)
                and not holds_progress(output_dir)):
            logger.warning(f"Removing {output_dir}: this failed run created it and left nothing to resume from")
            shutil.rmtree(output_dir, ignore_errors=True)
        raise


def main(argv=None):
    model_args, data_args, training_args = parse_args(argv)
    with removed_if_failed(training_args) as progress:
        return run(model_args, data_args, training_args, argv, progress)


def run(model_args, data_args, training_args, argv=None, progress=None):
    """main's run, once its arguments are parsed; `progress["training"]` is set once training starts."""
    setup_logging(training_args)
    results = finished_run_results(training_args)
    if results is not None:
        return results
    checkpoint, at_end = checkpoint_to_resume(training_args)
    if data_args.streaming and training_args.max_steps <= 0:
        raise ValueError(f"--streaming needs --max_steps (a stream has no known length), got --max_steps "
                         f"{training_args.max_steps}")
    trainer, data_description, max_seq_length = build_trainer(model_args, data_args, training_args, checkpoint)
    model, tokenizer = trainer.model, trainer.processing_class

    def facts(train_metrics, eval_metrics, **kwargs):
        return card_facts(trainer, model_args, data_args, data_description, tokenizer, train_metrics, eval_metrics,
                          max_seq_length, argv, **kwargs)

    # Resuming into a folder that holds a model: it already has what a push needs (below), and the model here is
    # still the initial one (the Trainer loads the checkpoint when training starts): saving it would replace the
    # trained model of the run being continued, which a resumed run that dies must leave in place. A checkpoint of
    # another folder continues another run: the model there (if --overwrite_output_dir let it) is not its own.
    continuing = (checkpoint is not None and lies_within(checkpoint, training_args.output_dir)
                  and holds_model(training_args.output_dir))
    if training_args.do_train and training_args.should_save and not continuing:
        # A push during training (hub_strategy every_save, checkpoint) uploads output_dir after copying only the
        # checkpoint's weights and config there: the modeling code, the tokenizer and a card saying that training is
        # in progress must already be in it. (Plain save_pretrained: Trainer.save_model would push the initial weights.)
        # The card first: weights without it would be taken for a trained model by a rerun (`trained_model_in`).
        trainer.card_facts = facts({}, {}, in_progress=True)
        trainer.create_model_card()
        model.save_pretrained(training_args.output_dir)
        tokenizer.save_pretrained(training_args.output_dir)
    if progress is not None:
        progress["training"] = True
    train_metrics = train(trainer, checkpoint, data_args, max_seq_length, at_end) if training_args.do_train else {}
    trained = copy.deepcopy(trainer.state)  # as training left it: the final evaluation's log is no point of its curve
    eval_metrics = evaluate(trainer) if training_args.do_eval else {}

    trainer.card_facts = facts(train_metrics, eval_metrics)
    if training_args.should_save:
        if training_args.do_train:  # without training no model is saved here: a card would describe none
            trainer.create_model_card()
        arguments = RUN_ARGS if training_args.do_train else EVAL_ARGS  # an evaluation keeps the training's record
        write_json_atomically(os.path.join(training_args.output_dir, arguments),
                              {"model_args": asdict(model_args), "data_args": asdict(data_args),
                               "training_args": training_args.to_dict()}, indent=2, default=str)
        if training_args.do_train:  # last, after the model, results and card: --resume takes it for a finished run
            write_trainer_state(trained, training_args.output_dir)
    if training_args.push_to_hub:
        trainer.push_to_hub(saved=training_args.do_train)  # alike on every process: a sharded save gathers on all
    return {**train_metrics, **eval_metrics}


if __name__ == "__main__":
    from hf_minattn.cli import end_with_parent, run_reporting_errors

    end_with_parent()
    sys.exit(run_reporting_errors(main, prog="run_mlm.py"))
