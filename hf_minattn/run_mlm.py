"""Train a MinAttn masked language model with `transformers.Trainer`.

Follows transformers' `examples/pytorch/language-modeling/run_mlm.py`: three groups of arguments parsed by
`HfArgumentParser`, `datasets.map` for tokenization (cached), concatenate-and-chunk or line-by-line sequences,
`DataCollatorForLanguageModeling`. What is specific to this project:

- with no data named, it trains on embedded English Wikipedia prose (`hf_minattn.data.load_wikipedia_corpus`: the
  gensim sample plus 10k article summaries), offline;
- a model is a size preset (`--model_size`) edited by `--config_overrides`, and the tokenizer is trained on the
  training split unless `--tokenizer_name` is given;
- evaluation reports loss, perplexity and masked-token accuracy on a validation set masked once with a fixed
  seed, so every evaluation (and every run) scores the same masked tokens;
- `drift.json` records how far embeddings and attention weights move (`hf_minattn.drift.DriftCallback`);
- with `--loss_allocation`, `loss_allocation.json` shares out each interval's loss change on a fixed batch over the
  parameter groups (`hf_minattn.loss_allocation.LossAllocationCallback`);
- the output folder is a Hub repository: weights, modeling code, tokenizer, metrics and a README.md model card.

Run `python training/run_mlm.py --help` for every flag; `accelerate launch training/run_mlm.py ...` runs it
distributed.
"""

import itertools
import json
import logging
import os
import sys
import zlib
from dataclasses import asdict, dataclass, field

import datasets
import transformers
import torch
from transformers import (
    AutoModelForMaskedLM,
    AutoTokenizer,
    HfArgumentParser,
    TrainingArguments,
    set_seed,
)
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import sort_checkpoints

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, train_tokenizer
from hf_minattn.data import (STREAM_EVAL_SEQUENCES, STREAM_SAMPLE_TEXTS, STREAM_UNIGRAM_SEQUENCES,
                             STREAM_VALIDATION_TEXTS, check_text_file, first_texts, lm_datasets, load_raw_datasets,
                             resolve_text_column)
from hf_minattn.drift import DriftCallback
from hf_minattn.loss_allocation import LossAllocationCallback
from hf_minattn.machine import accelerator_available, fast_bf16_available
from hf_minattn.masking import MLMCollator, mask_once, with_example_index
from hf_minattn.model_card import card_facts
from hf_minattn.sentence_embedding import write_sentence_transformers_files
from hf_minattn.trainer import MinAttnTrainer, metrics_computer, preprocess_logits_for_metrics
from hf_minattn.unigram import UnigramFloor

logger = logging.getLogger(__name__)

# Size presets; `--config_overrides` edits any field afterwards. The vocabulary size comes from the tokenizer.
MODEL_SIZES = {
    # Odd sizes catch dimension bugs; trains in seconds (tests).
    "tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64),
    # The demo model: trains in about ten minutes on two CPU cores. Rotary positions and no dropout are part of the
    # measured recipe (docs/recipe.md): with learned positions and dropout 0.1 it stays near the unigram floor.
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, max_position_embeddings=128,
                  position_embedding_type="rope", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    # BERT-base shape, for machines with a GPU.
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512),
}

@dataclass
class ModelArguments:
    """Which model to train (from scratch unless --model_name_or_path) and with which tokenizer."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved MinAttn masked-LM folder to continue training. Leave unset to train from scratch."}
    )
    model_size: str = field(
        default="small",
        metadata={"help": "Size preset when training from scratch: "
                  + "; ".join(f"{name}: {', '.join(f'{k}={v}' for k, v in sizes.items())}" for name, sizes in MODEL_SIZES.items()),
                  "choices": list(MODEL_SIZES)},
    )
    config_overrides: str | None = field(
        default=None,
        metadata={"help": "Override config fields of the preset, e.g. "
                  "'hidden_size=128,num_hidden_layers=2,intermediate_size=0,qkv_projection=identity,"
                  "position_embedding_type=sinusoidal,norm_placement=post' (see MinAttnConfig)."},
    )
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "Path (or Hub id) of a tokenizer to use. Unset: train a WordPiece tokenizer on the training split."}
    )
    vocab_size: int = field(default=8192, metadata={"help": "Vocabulary size of the tokenizer trained when --tokenizer_name is unset."})
    tokenizer_model: str = field(
        default="wordpiece",
        metadata={"help": "Kind of tokenizer trained when --tokenizer_name is unset: 'wordpiece' (sub-words) or 'word' "
                  "(whole words seen at least --tokenizer_min_frequency times, [UNK] for the rest).",
                  "choices": ["wordpiece", "word"]},
    )
    tokenizer_min_frequency: int = field(
        default=2, metadata={"help": "Minimum count of a token (a word, for --tokenizer_model word) in the training split to enter the vocabulary."}
    )
    freeze_embeddings: bool = field(
        default=False,
        metadata={"help": "Keep the word and position embeddings at their initial values (requires_grad False). With tied "
                  "embeddings (the default) this also freezes the output layer; add tie_word_embeddings=false to "
                  "--config_overrides to train it."},
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where to store datasets and models downloaded from the Hub."})

    def __post_init__(self):
        if self.model_name_or_path is not None and self.config_overrides is not None:
            raise ValueError("--config_overrides can't be used with --model_name_or_path (the saved config is used as is)")


@dataclass
class DataTrainingArguments:
    """What data to train and evaluate on. With no dataset name and no file: the embedded Wikipedia corpus."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "A dataset on the Hub, e.g. 'wikitext' (needs the network). Unset: the embedded Wikipedia corpus (hf_minattn.data.load_wikipedia_corpus)."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "Configuration of --dataset_name, e.g. 'wikitext-103-raw-v1'."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: a .txt (one text per line), .json/.jsonl or .csv file."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Validation data, same formats. Unset: --validation_split_percentage of the training data."}
    )
    text_column_name: str | None = field(
        default=None, metadata={"help": "Column holding the text. Default: 'text' if present, else the first column."}
    )
    validation_split_percentage: int = field(
        default=5,
        metadata={"help": "Percentage of the training data held out for validation when there is no validation split "
                  "(for the embedded Wikipedia corpus: the percentage of the gensim sample's articles; the added "
                  "summaries are all training text)."},
    )
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Tokens per sequence. Default: the model's max_position_embeddings. Must not exceed it."}
    )
    line_by_line: bool = field(
        default=False, metadata={"help": "One sequence per line of text (padded, truncated), instead of concatenating texts and cutting chunks."}
    )
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenization and grouping."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Recompute the tokenized datasets instead of reading the cache."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only this many training sequences (debugging, quick runs)."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep only this many validation sequences."})
    mlm_probability: float = field(default=0.15, metadata={"help": "Fraction of tokens masked for the masked-LM loss."})
    whole_word_mask: bool = field(
        default=False, metadata={"help": "Mask all the sub-word tokens of a word together (needs a fast tokenizer; not with --line_by_line)."}
    )
    streaming: bool = field(
        default=False,
        metadata={"help": "Read the data as a stream (datasets' streaming mode) instead of preparing all of it first, as "
                  f"transformers' run_mlm.py does; needs --max_steps. Without a validation split the first "
                  f"{STREAM_VALIDATION_TEXTS} texts are held out; the evaluation uses the first --max_eval_samples "
                  f"sequences (default {STREAM_EVAL_SEQUENCES}); a tokenizer trained here uses the first "
                  f"{STREAM_SAMPLE_TEXTS:,} texts, the unigram floor the first {STREAM_UNIGRAM_SEQUENCES:,} sequences."},
    )

    def __post_init__(self):
        # Fail on bad files now, before any tokenizer or model is built.
        for name in ("train_file", "validation_file"):
            path = getattr(self, name)
            if path is None:
                continue
            if path.rsplit(".", 1)[-1] not in ("txt", "json", "jsonl", "csv"):
                raise ValueError(f"--{name} {path!r}: expected a .txt, .json, .jsonl or .csv file")
            check_text_file(path, f"--{name}")
        if self.validation_file is not None and self.train_file is None:
            raise ValueError("--validation_file needs --train_file")
        if self.dataset_name is not None and self.train_file is not None:
            raise ValueError("Give either --dataset_name or --train_file, not both")
        if not 0 < self.validation_split_percentage < 100:
            raise ValueError(f"--validation_split_percentage must be between 1 and 99, got {self.validation_split_percentage}")
        if self.whole_word_mask and self.line_by_line:
            # DataCollatorForLanguageModeling(whole_word_mask=True) needs equal-length inputs with offset mappings.
            raise ValueError("--whole_word_mask works on concatenated texts only; drop --line_by_line")


@dataclass
class MinAttnTrainingArguments(TrainingArguments):
    """`TrainingArguments` with defaults for this script, and `--resume`."""

    do_train: bool = field(default=True, metadata={"help": "Whether to run training."})
    do_eval: bool = field(default=True, metadata={"help": "Whether to evaluate on the validation split at the end."})
    # None, resolved in __post_init__: HfArgumentParser gives a bool field False whatever its default_factory says.
    bf16: bool | None = field(
        default=None,
        metadata={"help": "bf16 autocast. Default: on where it is fast (GPU with bf16, CPU with AVX512-BF16 or AMX), "
                  "else off. `--bf16 false` turns it off, `--bf16 true` forces it on."},
    )
    report_to: None | str | list[str] = field(default="tensorboard", metadata={"help": "Where to log: 'tensorboard', 'none', 'all', ..."})
    logging_steps: float = field(default=10, metadata={"help": "Log (and record embedding drift) every X optimizer steps."})
    logging_first_step: bool = field(default=True, metadata={"help": "Log the first step too."})
    save_total_limit: int | None = field(default=2, metadata={"help": "Keep at most this many checkpoints."})
    ddp_find_unused_parameters: bool | None = field(
        default=False, metadata={"help": "DDP: search for parameters without gradient at every step (not needed: every trainable parameter gets one)."}
    )
    include_num_input_tokens_seen: str | bool = field(
        default=True, metadata={"help": "Count the tokens trained on, for tokens/s (padding included: none with concatenated texts)."}
    )
    resume: bool = field(
        default=False, metadata={"help": "Continue from the last checkpoint in --output_dir if there is one (else start afresh)."}
    )
    max_train_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop training after this many minutes (of this session), or at --max_steps/--num_train_epochs if "
                  "sooner. The learning rate then decays linearly with the time spent, after --warmup_steps. Makes the "
                  "run length fit a deadline on machines of any speed, at the price of step-for-step reproducibility."},
    )
    loss_allocation: bool = field(
        default=False,
        metadata={"help": "Record Loss Change Allocation (Lan et al. 2019) in loss_allocation.json: each interval's change "
                  "of the loss on a fixed batch (the first --loss_allocation_samples validation sequences), shared out "
                  "over parameter groups (embeddings, W_Q, W_K, W_V, W_O, feed-forward, norms, head) and layers. Costs "
                  "two forward and backward passes on that batch per interval."},
    )
    loss_allocation_every: int = field(
        default=1, metadata={"help": "With --loss_allocation: one interval every this many optimizer steps (>= 1)."}
    )
    loss_allocation_samples: int = field(
        default=32, metadata={"help": "With --loss_allocation: validation sequences in the fixed batch (>= 1)."}
    )

    def __post_init__(self):
        for name in ("loss_allocation_every", "loss_allocation_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.bf16 is None:
            self.bf16 = fast_bf16_available()
        # On a machine with no accelerator, transformers needs use_cpu to accept bf16 and, under
        # `accelerate launch --multi_gpu` or torchrun, to set up DDP over gloo (else each process trains alone).
        if not accelerator_available():
            self.use_cpu = True
        super().__post_init__()


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The newest checkpoint of `output_dir` that was completely written, or None.

    The Trainer writes trainer_state.json last: a run killed while saving leaves a checkpoint folder without
    it, which `get_last_checkpoint` would pick and resuming from it would fail.
    """
    for checkpoint in reversed(sort_checkpoints(output_dir)):
        if os.path.isfile(os.path.join(checkpoint, TRAINER_STATE_NAME)):
            return checkpoint
    return None


def parse_args(argv=None):
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, MinAttnTrainingArguments), description=__doc__)
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 1 and argv[0].endswith(".json"):
        return parser.parse_json_file(json_file=os.path.abspath(argv[0]))
    return parser.parse_args_into_dataclasses(args=argv)


def build_config(model_args: ModelArguments) -> MinAttnConfig:
    if model_args.model_name_or_path is not None:
        return MinAttnConfig.from_pretrained(model_args.model_name_or_path)
    config = MinAttnConfig(**MODEL_SIZES[model_args.model_size])
    if model_args.config_overrides:
        logger.info(f"Overriding config: {model_args.config_overrides}")
        config.update_from_string(model_args.config_overrides)  # validated, as every edit of a MinAttnConfig
    return config


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


def checkpoint_to_resume(training_args) -> str | None:
    """The checkpoint to continue from: --resume_from_checkpoint, or with --resume the last complete one."""
    checkpoint = training_args.resume_from_checkpoint
    output_dir = training_args.output_dir
    if checkpoint is None and training_args.do_train and os.path.isdir(output_dir) and sort_checkpoints(output_dir):
        if not training_args.resume:
            raise ValueError(
                f"--output_dir {output_dir} already holds checkpoints ({os.path.basename(sort_checkpoints(output_dir)[-1])}): "
                "pass --resume to continue from the last one, or choose another --output_dir"
            )
        checkpoint = last_complete_checkpoint(output_dir)
        logger.warning(f"Resuming from {checkpoint}" if checkpoint else "No complete checkpoint to resume from: starting afresh")
    if checkpoint is not None and not os.path.isdir(checkpoint):
        raise FileNotFoundError(f"--resume_from_checkpoint {checkpoint} does not exist")
    return checkpoint


def sequence_length(data_args, config: MinAttnConfig) -> int:
    max_seq_length = data_args.max_seq_length or config.max_position_embeddings
    if max_seq_length > config.max_position_embeddings and config.position_embedding_type != "none":
        raise ValueError(
            f"--max_seq_length {max_seq_length} is larger than the model's max_position_embeddings "
            f"({config.max_position_embeddings}); lower it or add max_position_embeddings={max_seq_length} to --config_overrides"
        )
    return max_seq_length


def load_or_train_tokenizer(model_args, training_args, raw, text_column, checkpoint, max_seq_length):
    """The checkpoint's tokenizer when resuming, the one named, or one trained on the training split."""
    tokenizer_path = checkpoint or model_args.tokenizer_name or model_args.model_name_or_path
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
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_path, cache_dir=model_args.cache_dir)
    if tokenizer.mask_token is None:
        raise ValueError(f"The tokenizer ({tokenizer_path}) has no mask token; masked-LM training needs one")
    return tokenizer


def initial_model(config: MinAttnConfig, seed: int) -> MinAttnForMaskedLM:
    """A masked LM at initialisation, each module drawn from a generator seeded by (seed, the module's name).

    So two models of the same seed start from the same weights in every module they share by name and shape,
    whatever else differs (a wider feed-forward, no W_Q/W_K/W_V, no feed-forward): the experiments' variants are
    paired on their initial weights too, not only on data order and masks. The global RNG is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        model = MinAttnForMaskedLM(config)
        for name, module in model.named_modules():
            torch.manual_seed(zlib.crc32(f"{seed}/{name}".encode()))  # the CPU generator keeps 32 bits
            model._init_weights(module)
    return model


def build_model(model_args, config: MinAttnConfig, tokenizer, seed: int) -> MinAttnForMaskedLM:
    if model_args.model_name_or_path is not None:
        model = AutoModelForMaskedLM.from_pretrained(model_args.model_name_or_path, config=config)
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:  # as transformers' run_mlm.py does
            logger.info(f"Resizing the token embeddings from {model.get_input_embeddings().num_embeddings} to "
                        f"{len(tokenizer)} for the tokenizer")
            model.resize_token_embeddings(len(tokenizer))
    else:
        config.vocab_size = len(tokenizer)
        for name in ("pad_token_id", "cls_token_id", "sep_token_id", "mask_token_id"):
            setattr(config, name, getattr(tokenizer, name))
        model = initial_model(config, seed)
    # Training needs logits at the masked positions only (a fraction of the (B, T, V) projection); the saved
    # model gives the full logits that code written for BERT expects (see `train` below).
    model.config.sparse_prediction = True
    if model_args.freeze_embeddings:
        for embedding in (model.minattn.embeddings.word_embeddings, model.minattn.embeddings.position_embeddings):
            if embedding is not None:
                embedding.weight.requires_grad_(False)
    logger.info(f"MinAttn masked LM: {model.num_parameters():,} parameters "
                f"({model.num_parameters(only_trainable=True):,} trainable)")
    return model


def save_for_hub(trainer: MinAttnTrainer, save) -> None:
    """`save()` with the config saying what the saved model gives: full logits (training and evaluation go on sparse)."""
    trainer.model.config.sparse_prediction = False
    save()
    trainer.model.config.sparse_prediction = True


def train(trainer: MinAttnTrainer, checkpoint, data_args, max_seq_length) -> dict:
    """Train, save the model (in Hub format, plus the sentence-transformers files) and the train metrics."""
    args, model = trainer.args, trainer.model
    result = trainer.train(resume_from_checkpoint=checkpoint)
    save_for_hub(trainer, trainer.save_model)  # weights, config (with auto_map), modeling code, tokenizer, training_args.bin
    if args.should_save:  # SentenceTransformer(output_dir) loads it as a mean-pooling sentence encoder
        write_sentence_transformers_files(args.output_dir, model.config.hidden_size, max_seq_length)
    metrics = dict(result.metrics)
    metrics["train_samples"] = (trainer.state.global_step * args.train_batch_size * args.gradient_accumulation_steps
                                * args.world_size if data_args.streaming else len(trainer.train_dataset))
    metrics["world_size"] = args.world_size
    speeds = [log["train_tokens_per_second"] for log in trainer.state.log_history if "train_tokens_per_second" in log]
    if speeds:
        metrics["train_tokens_per_second"] = speeds[-1]
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    return metrics


def evaluate(trainer: MinAttnTrainer) -> dict:
    logger.info("*** Evaluate ***")
    metrics = trainer.evaluate()  # eval_perplexity and eval_gain_over_unigram come from MinAttnTrainer.log
    metrics["eval_samples"] = len(trainer.eval_dataset)
    trainer.log_metrics("eval", metrics)
    trainer.save_metrics("eval", metrics)
    return metrics


def main(argv=None):
    model_args, data_args, training_args = parse_args(argv)
    setup_logging(training_args)
    checkpoint = checkpoint_to_resume(training_args)
    if data_args.streaming and training_args.max_steps <= 0:
        raise ValueError(f"--streaming needs --max_steps (a stream has no known length), got --max_steps "
                         f"{training_args.max_steps}")
    set_seed(training_args.seed)

    # Data, checked before anything expensive; then the tokenizer and the model.
    with training_args.main_process_first(desc="loading the raw data"):
        raw, data_description = load_raw_datasets(data_args, model_args.cache_dir)
    text_column = resolve_text_column(raw, data_args.text_column_name, data_description)
    config = build_config(model_args)
    max_seq_length = sequence_length(data_args, config)
    tokenizer = load_or_train_tokenizer(model_args, training_args, raw, text_column, checkpoint, max_seq_length)
    model = build_model(model_args, config, tokenizer, training_args.seed)
    drift = DriftCallback(model)  # copies the initial weights: before the Trainer loads any checkpoint

    # Sequences, the unigram floor, the masks.
    train_dataset, eval_dataset = lm_datasets(raw, tokenizer, text_column, data_args, max_seq_length, training_args,
                                              data_description)
    unigram = UnigramFloor.from_dataset(train_dataset, len(tokenizer), stream_sequences=STREAM_UNIGRAM_SEQUENCES)
    logger.info(f"Unigram floor: entropy {unigram.entropy():.3f} nats over {unigram.num_tokens:,} maskable training tokens")
    train_dataset = with_example_index(train_dataset)
    collator = MLMCollator(tokenizer, data_args, seed=training_args.seed)
    with training_args.main_process_first(desc="masking the validation set"):
        eval_dataset = mask_once(eval_dataset, collator)

    callbacks = [collator]
    if training_args.loss_allocation and training_args.do_train:
        # The validation set is masked once with a fixed seed: its first sequences are a fixed batch, the same on
        # every process.
        fixed = list(itertools.islice(eval_dataset, training_args.loss_allocation_samples))
        callbacks.append(LossAllocationCallback(model, collator(fixed), every=training_args.loss_allocation_every,
                                                source=f"the first {len(fixed)} validation sequences, masked once"))

    # We already removed every column the model does not take, except those the collator needs
    # (special_tokens_mask, offset_mapping, example_index), which the Trainer would otherwise drop.
    training_args.remove_unused_columns = False
    trainer = MinAttnTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset if training_args.do_train else None,
        eval_dataset=eval_dataset if training_args.do_eval else None,
        processing_class=tokenizer,
        data_collator=collator,
        compute_metrics=metrics_computer(unigram) if training_args.do_eval else None,
        preprocess_logits_for_metrics=preprocess_logits_for_metrics if training_args.do_eval else None,
        callbacks=callbacks,
        drift=drift,
        time_budget_minutes=training_args.max_train_minutes,
    )
    if training_args.do_train and training_args.should_save:
        # A push during training (hub_strategy every_save, checkpoint) uploads output_dir after copying only the
        # checkpoint's weights and config there: the modeling code, the tokenizer and a card saying that training is
        # in progress must already be in it. (Plain save_pretrained: Trainer.save_model would push the initial weights.)
        save_for_hub(trainer, lambda: (model.save_pretrained(training_args.output_dir),
                                       tokenizer.save_pretrained(training_args.output_dir)))
        trainer.card_facts = card_facts(trainer, model_args, data_args, data_description, tokenizer, {}, {},
                                        max_seq_length, argv, in_progress=True)
        trainer.create_model_card()
    train_metrics = train(trainer, checkpoint, data_args, max_seq_length) if training_args.do_train else {}
    eval_metrics = evaluate(trainer) if training_args.do_eval else {}

    trainer.card_facts = card_facts(trainer, model_args, data_args, data_description, tokenizer, train_metrics,
                                    eval_metrics, max_seq_length, argv)
    if training_args.should_save:
        trainer.create_model_card()
        with open(os.path.join(training_args.output_dir, "run_args.json"), "w") as f:
            json.dump({"model_args": asdict(model_args), "data_args": asdict(data_args),
                       "training_args": training_args.to_dict()}, f, indent=2, default=str)
    if training_args.push_to_hub:
        trainer.push_to_hub()
    return {**train_metrics, **eval_metrics}


if __name__ == "__main__":
    from hf_minattn.cli import run_reporting_errors

    sys.exit(run_reporting_errors(main, prog="run_mlm.py"))
