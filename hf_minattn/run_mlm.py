"""Train a MinAttn masked language model with `transformers.Trainer`.

Follows transformers' `examples/pytorch/language-modeling/run_mlm.py`: three groups of arguments parsed by
`HfArgumentParser`, `datasets.map` for tokenization (cached), concatenate-and-chunk or line-by-line sequences,
`DataCollatorForLanguageModeling`. What is specific to this project:

- with no data named, it trains on the English Wikipedia sample inside gensim (`hf_minattn.data`), offline;
- a model is a size preset (`--model_size`) edited by `--config_overrides`, and the tokenizer is trained on the
  training split unless `--tokenizer_name` is given;
- evaluation reports loss, perplexity and masked-token accuracy on a validation set masked once with a fixed
  seed, so every evaluation (and every run) scores the same masked tokens;
- `drift.json` records how far embeddings and attention weights move (`hf_minattn.drift.DriftCallback`);
- the output folder is a Hub repository: weights, modeling code, tokenizer, metrics and a README.md model card.

Run `python training/run_mlm.py --help` for every flag; `accelerate launch training/run_mlm.py ...` runs it
distributed.
"""

import json
import logging
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field
from itertools import chain

import datasets
import numpy as np
import torch
import transformers
from transformers import (
    AutoModelForMaskedLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    DataCollatorForTokenClassification,
    HfArgumentParser,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import sort_checkpoints

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, train_tokenizer
from hf_minattn.data import check_text_file, load_wikipedia_sample
from hf_minattn.drift import DriftCallback
from hf_minattn.trainer import MinAttnTrainer
from hf_minattn.sentence_embedding import write_sentence_transformers_files
from hf_minattn.model_card import CardFacts, tokenizer_facts
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

# With --streaming, what is read from the start of the stream instead of the whole split.
STREAM_VALIDATION_TEXTS = 1000  # held out when there is no validation split
STREAM_EVAL_SEQUENCES = 1000  # the evaluation set, unless --max_eval_samples
STREAM_SAMPLE_TEXTS = 100_000  # to train a tokenizer
STREAM_UNIGRAM_SEQUENCES = 10_000  # to count the unigram floor

WIKIPEDIA_SAMPLE_DESCRIPTION = (
    "the English Wikipedia sample shipped with gensim (the first pages of a dump: about 100 articles, 390k words of "
    "prose after markup, redirects, lists and reference sections are removed), split by article into train "
    "and validation"
)


def fast_bf16_available() -> bool:
    """Whether bf16 autocast speeds training up here: on a GPU that supports it, or on a CPU with native bf16
    matrix instructions (AVX512-BF16 or AMX), where it is several times faster than fp32. Without them torch
    emulates bf16 and matrix products get hundreds of times slower, so the default is then fp32."""
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    # torch.cpu exposes the CPU feature checks only as private functions; default to fp32 if they move.
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


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
    """What data to train and evaluate on. With no dataset name and no file: the embedded Wikipedia sample."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "A dataset on the Hub, e.g. 'wikitext' (needs the network). Unset: the Wikipedia sample inside gensim."}
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
                  "(for the Wikipedia sample: the percentage of articles)."},
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

    def __post_init__(self):
        if self.bf16 is None:
            self.bf16 = fast_bf16_available()
        # On a machine with no accelerator, transformers needs use_cpu to accept bf16 and, under
        # `accelerate launch --multi_gpu` or torchrun, to set up DDP over gloo (else each process trains alone).
        if not _accelerator_available():
            self.use_cpu = True
        super().__post_init__()


def _accelerator_available() -> bool:
    if hasattr(torch, "accelerator"):  # torch >= 2.6: CUDA, MPS, XPU, ...
        return torch.accelerator.is_available()
    return torch.cuda.is_available() or torch.backends.mps.is_available()


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


def load_raw_datasets(data_args: DataTrainingArguments, cache_dir: str | None) -> tuple[datasets.DatasetDict, str]:
    """The raw text as a DatasetDict with "train" and "validation" splits, and a sentence describing it."""
    pct = data_args.validation_split_percentage
    if data_args.dataset_name is not None:
        raw = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, cache_dir=cache_dir,
                                    streaming=data_args.streaming)
        description = f"`{data_args.dataset_name}`" + (f" (`{data_args.dataset_config_name}`)" if data_args.dataset_config_name else "")
    elif data_args.train_file is not None:
        data_files = {"train": data_args.train_file}
        if data_args.validation_file is not None:
            data_files["validation"] = data_args.validation_file
        extension = data_args.train_file.rsplit(".", 1)[-1]
        builder = {"txt": "text", "jsonl": "json"}.get(extension, extension)
        raw = datasets.load_dataset(builder, data_files=data_files, cache_dir=cache_dir, streaming=data_args.streaming)
        description = "local files: " + ", ".join(os.path.basename(f) for f in data_files.values())
    else:
        raw = load_wikipedia_sample(validation_percentage=pct)
        if data_args.streaming:
            raw = datasets.IterableDatasetDict({name: split.to_iterable_dataset() for name, split in raw.items()})
        return raw, WIKIPEDIA_SAMPLE_DESCRIPTION
    if "train" not in raw or is_empty(raw["train"]):
        raise ValueError(f"The training data ({description}) is empty")
    if "validation" not in raw and data_args.streaming:  # the length of a stream is unknown: hold out its start
        raw = datasets.IterableDatasetDict({"train": raw["train"].skip(STREAM_VALIDATION_TEXTS),
                                            "validation": raw["train"].take(STREAM_VALIDATION_TEXTS)})
        description += f", the first {STREAM_VALIDATION_TEXTS} texts held out for validation"
    elif "validation" not in raw:
        # Not shuffled, so that the held-out text is contiguous (the end of the file), not interleaved lines.
        split = raw["train"].train_test_split(test_size=pct / 100, shuffle=False)
        raw = datasets.DatasetDict({"train": split["train"], "validation": split["test"]})
        description += f", the last {pct}% held out for validation"
    return raw, description


def is_empty(dataset) -> bool:
    if isinstance(dataset, datasets.IterableDataset):
        return next(iter(dataset), None) is None
    return dataset.num_rows == 0


def column_names(dataset) -> list[str]:
    """The columns of a dataset; a stream whose features are not declared shows them in its first example."""
    if dataset.column_names is not None:
        return dataset.column_names
    return list(next(iter(dataset), {}))


def first_texts(dataset, column: str, n: int):
    """The texts of column `column`: all of them, or the first `n` of a stream."""
    if isinstance(dataset, datasets.IterableDataset):
        return [example[column] for example in dataset.take(n)]
    return dataset[column]


def resolve_text_column(raw: datasets.DatasetDict, name: str | None) -> str:
    columns = column_names(raw["train"])
    if name is None:
        return "text" if "text" in columns else columns[0]
    if name not in columns:
        raise ValueError(f"--text_column_name {name!r} is not a column of the training data; available columns: {columns}")
    return name


def build_config(model_args: ModelArguments) -> MinAttnConfig:
    if model_args.model_name_or_path is not None:
        return MinAttnConfig.from_pretrained(model_args.model_name_or_path)
    config = MinAttnConfig(**MODEL_SIZES[model_args.model_size])
    if model_args.config_overrides:
        logger.info(f"Overriding config: {model_args.config_overrides}")
        config.update_from_string(model_args.config_overrides)
        config.validate_minattn()  # update_from_string sets fields without MinAttnConfig's checks
    return config


def tokenize_and_group(raw, tokenizer, text_column, data_args, max_seq_length, training_args):
    """Tokenize with `datasets.map` (cached) and make sequences of at most `max_seq_length` tokens."""
    columns = column_names(raw["train"])
    streaming = isinstance(raw, datasets.IterableDatasetDict)  # a stream is mapped lazily: no cache, no processes
    map_kwargs = {} if streaming else dict(num_proc=data_args.preprocessing_num_workers,
                                           load_from_cache_file=not data_args.overwrite_cache)
    extra = dict(return_special_tokens_mask=True, return_offsets_mapping=data_args.whole_word_mask)

    if data_args.line_by_line:
        def tokenize(examples):
            lines = [line for line in examples[text_column] if line and not line.isspace()]
            return tokenizer(lines, truncation=True, max_length=max_seq_length, **extra)
    else:
        # Each text gets [CLS] ... [SEP]; the concatenation is then cut into equal chunks. Texts longer than
        # the model are expected here, so the tokenizer's length warning is noise.
        def tokenize(examples):
            return tokenizer(examples[text_column], verbose=False, **extra)

    with training_args.main_process_first(desc="tokenization"):
        tokenized = raw.map(tokenize, batched=True, remove_columns=columns,
                            **map_kwargs, **({} if streaming else {"desc": "Tokenizing"}))

    if data_args.line_by_line:
        return tokenized

    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples}
        total = (len(concatenated["input_ids"]) // max_seq_length) * max_seq_length  # drop the ragged end
        return {k: [t[i : i + max_seq_length] for i in range(0, total, max_seq_length)] for k, t in concatenated.items()}

    with training_args.main_process_first(desc="grouping texts"):
        return tokenized.map(group_texts, batched=True, **map_kwargs,
                             **({} if streaming else {"desc": f"Grouping texts in chunks of {max_seq_length}"}))


# Which masks an example gets: one stream per training epoch, and one (fixed) for evaluation.
EVAL_MASK_STREAM = -1
EXAMPLE_INDEX = "example_index"  # column naming each training example, for its masks


class MLMCollator(TrainerCallback):
    """Masks examples for the masked-LM loss; each example's masks are drawn from a generator seeded with
    (seed, epoch, example index).

    The masks therefore depend neither on the batch an example falls in, nor on the number of processes, nor
    on how far the DataLoader has prefetched. The usual global-RNG masking cannot be resumed exactly: the
    Trainer restores the RNG state of a checkpoint only after the first batches of the resumed epoch were
    drawn (and accelerate prefetches one batch ahead), so a resumed run would see different masks than an
    uninterrupted one. Each epoch still gets new masks (dynamic masking, as in RoBERTa).

    Evaluation examples are masked once by `mask_once` and arrive with labels: they are only padded. As a
    callback, the collator learns the current epoch from the Trainer.
    """

    def __init__(self, tokenizer, data_args, seed: int):
        self.masker = DataCollatorForLanguageModeling(
            tokenizer, mlm_probability=data_args.mlm_probability, whole_word_mask=data_args.whole_word_mask
        )
        self.pad = DataCollatorForTokenClassification(tokenizer)  # pads input_ids, attention_mask, and labels with -100
        self.seed = seed
        self.epoch = 0

    def on_epoch_begin(self, args, state, control, **kwargs):
        # state.epoch is the progress so far: an integer at an epoch boundary, a fraction when resuming mid-epoch.
        self.epoch = int(state.epoch or 0)

    def _mask(self, example: dict, stream: int, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(input_ids, labels) of one example, masked with its own generator; each (T,)."""
        state = np.random.SeedSequence([self.seed, stream + 1, index]).generate_state(2, dtype=np.uint32)
        # DataCollatorForLanguageModeling draws all its random numbers from `generator` when it is set.
        self.masker.generator = torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))
        # Its masking step alone, on tensors: calling the whole collator once per example (padding, list
        # conversions) cost as much again, about 8% of a training step.
        optional = {k: torch.tensor([example[k]]) for k in ("special_tokens_mask", "offset_mapping") if k in example}
        inputs, labels = self.masker.torch_mask_tokens(torch.tensor([example["input_ids"]]), **optional)
        return inputs[0], labels[0]

    def mask_example(self, example: dict, stream: int, index: int) -> dict:
        inputs, labels = self._mask(example, stream, index)
        return {"input_ids": inputs.tolist(), "attention_mask": [1] * len(inputs), "labels": labels.tolist()}

    def __call__(self, features):
        if "labels" in features[0]:  # masked once already (the validation set): only pad
            return self.pad(features)
        masked = [self._mask(f, self.epoch, f[EXAMPLE_INDEX]) for f in features]
        if len({len(inputs) for inputs, _ in masked}) == 1:  # equal lengths (concatenated texts): nothing to pad
            input_ids = torch.stack([inputs for inputs, _ in masked])  # (B, T)
            return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
                    "labels": torch.stack([labels for _, labels in masked])}
        return self.pad([{"input_ids": inputs.tolist(), "attention_mask": [1] * len(inputs), "labels": labels.tolist()}
                         for inputs, labels in masked])


def mask_once(dataset: datasets.Dataset, collator: MLMCollator) -> datasets.Dataset:
    """Mask an evaluation set once, with fixed seeds (and cached by `datasets`).

    The Trainer would otherwise draw new masks at every evaluation; fixed masks make evaluations comparable
    across checkpoints, runs and model variants.
    """
    return dataset.map(
        lambda example, index: collator.mask_example(example, EVAL_MASK_STREAM, index),
        with_indices=True, remove_columns=dataset.column_names, desc="Masking the validation set",
    )


def preprocess_logits_for_metrics(logits, labels):
    """Keep only the predicted token ids, laid out like `labels` (-100 where nothing was predicted).

    With `config.sparse_prediction` (on while run_mlm trains), MinAttnForMaskedLM returns logits only at the
    labelled positions, (n_labelled, vocab) in row-major order of `labels != -100`; otherwise (batch, seq, vocab).
    Either way the predictions go back in the (batch, seq) layout, so that the Trainer pads and gathers them
    across processes exactly as it does the labels.
    """
    if isinstance(logits, tuple):
        logits = logits[0]
    labelled = labels != -100
    predictions = torch.full_like(labels, -100)
    predictions[labelled] = logits.argmax(dim=-1) if logits.dim() == 2 else logits.argmax(dim=-1)[labelled]
    return predictions


def metrics_computer(unigram: UnigramFloor | None = None):
    """`compute_metrics` for the Trainer: masked-token accuracy and count and, given the training split's unigram
    floor, its cross-entropy on the same masked tokens (`unigram_loss`)."""

    def compute_metrics(eval_prediction):
        predictions, labels = eval_prediction.predictions, eval_prediction.label_ids
        masked = labels != -100
        metrics = {"accuracy": float((predictions[masked] == labels[masked]).mean()), "masked_tokens": int(masked.sum())}
        if unigram is not None:
            metrics["unigram_loss"] = unigram.cross_entropy(labels[masked])
        return metrics

    return compute_metrics


def describe_training(training_args, train_metrics: dict, steps: int) -> str:
    a = training_args
    batch = a.per_device_train_batch_size * a.gradient_accumulation_steps * a.world_size
    schedule = (f"linear decay over {a.max_train_minutes:g} minutes of training" if a.max_train_minutes
                else f"{a.lr_scheduler_type} schedule")
    parts = [
        f"{steps} steps" + (f" ({train_metrics['epoch']:.2f} epochs)" if "epoch" in train_metrics else ""),
        f"batch {batch} sequences ({a.world_size} process{'es' if a.world_size > 1 else ''})",
        f"AdamW, learning rate {a.learning_rate:g}, warmup {a.warmup_steps:g} steps, {schedule}",
        f"weight decay {a.weight_decay:g} (none on the embeddings)",
        "bf16 autocast" if a.bf16 else "fp32",
        f"seed {a.seed}",
    ]
    if "train_runtime" in train_metrics:
        parts.append(f"{train_metrics['train_runtime'] / 60:.1f} min")
    if "train_tokens_per_second" in train_metrics:
        parts.append(f"{train_metrics['train_tokens_per_second']:,.0f} tokens/s")
    return ", ".join(parts)


def main(argv=None):
    model_args, data_args, training_args = parse_args(argv)

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

    # Which checkpoint to continue from, if any.
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

    if data_args.streaming and training_args.max_steps <= 0:
        raise ValueError(f"--streaming needs --max_steps (a stream has no known length), got --max_steps "
                         f"{training_args.max_steps}")
    set_seed(training_args.seed)

    # Data, checked before anything expensive.
    with training_args.main_process_first(desc="loading the raw data"):
        raw, data_description = load_raw_datasets(data_args, model_args.cache_dir)
    text_column = resolve_text_column(raw, data_args.text_column_name)
    for split in ("train", "validation"):
        if not any(t and not t.isspace() for t in first_texts(raw[split], text_column, STREAM_VALIDATION_TEXTS)):
            raise ValueError(f"The {split} split of {data_description} has no text in column {text_column!r}")

    config = build_config(model_args)
    max_seq_length = data_args.max_seq_length or config.max_position_embeddings
    if max_seq_length > config.max_position_embeddings and config.position_embedding_type != "none":
        raise ValueError(
            f"--max_seq_length {max_seq_length} is larger than the model's max_position_embeddings "
            f"({config.max_position_embeddings}); lower it or add max_position_embeddings={max_seq_length} to --config_overrides"
        )

    # Tokenizer: the checkpoint's when resuming, the one named, or one trained on the training split.
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

    # Model.
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
        model = MinAttnForMaskedLM(config)
    # Training needs logits at the masked positions only (a fraction of the (B, T, V) projection); the saved
    # model gives the full logits that code written for BERT expects (see `save_model` below).
    model.config.sparse_prediction = True
    if model_args.freeze_embeddings:
        for embedding in (model.minattn.embeddings.word_embeddings, model.minattn.embeddings.position_embeddings):
            if embedding is not None:
                embedding.weight.requires_grad_(False)
    n_params = model.num_parameters()
    logger.info(f"MinAttn masked LM: {n_params:,} parameters ({model.num_parameters(only_trainable=True):,} trainable)")
    # Copy the initial weights now, before the Trainer loads any checkpoint into the model.
    drift_callback = DriftCallback(model)

    # Sequences.
    lm_datasets = tokenize_and_group(raw, tokenizer, text_column, data_args, max_seq_length, training_args)
    train_dataset, eval_dataset = lm_datasets["train"], lm_datasets["validation"]
    if data_args.streaming:  # the evaluation set is fixed (masked once): the start of the validation stream
        eval_dataset = datasets.Dataset.from_list(list(eval_dataset.take(data_args.max_eval_samples or STREAM_EVAL_SEQUENCES)))
    for split, dataset in (("train", train_dataset), ("validation", eval_dataset)):
        if is_empty(dataset):
            raise ValueError(
                f"The {split} split of {data_description} gives no sequence of {max_seq_length} tokens; "
                "add text, lower --max_seq_length or use --line_by_line"
            )
    if data_args.max_train_samples is not None:
        train_dataset = (train_dataset.take(data_args.max_train_samples) if data_args.streaming else
                         train_dataset.select(range(min(len(train_dataset), data_args.max_train_samples))))
    if data_args.max_eval_samples is not None and not data_args.streaming:
        eval_dataset = eval_dataset.select(range(min(len(eval_dataset), data_args.max_eval_samples)))
    counted = (datasets.Dataset.from_list(list(train_dataset.take(STREAM_UNIGRAM_SEQUENCES)))
               if data_args.streaming else train_dataset)  # a stream: its first sequences
    unigram = UnigramFloor.from_dataset(counted, len(tokenizer))
    logger.info(f"Unigram floor: entropy {unigram.entropy():.3f} nats over {unigram.num_tokens:,} maskable training tokens")
    if data_args.streaming:
        train_dataset = train_dataset.map(lambda example, index: {EXAMPLE_INDEX: index}, with_indices=True)
    else:
        train_dataset = train_dataset.add_column(EXAMPLE_INDEX, list(range(len(train_dataset))))
    collator = MLMCollator(tokenizer, data_args, seed=training_args.seed)
    with training_args.main_process_first(desc="masking the validation set"):
        eval_dataset = mask_once(eval_dataset, collator)

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
        callbacks=[collator],
        drift=drift_callback,
        time_budget_minutes=training_args.max_train_minutes,
    )

    train_metrics = {}
    if training_args.do_train:
        train_result = trainer.train(resume_from_checkpoint=checkpoint)
        model.config.sparse_prediction = False  # what the saved config says; training and evaluation go on sparse
        trainer.save_model()  # weights, config (with auto_map), modeling code, tokenizer, training_args.bin
        model.config.sparse_prediction = True
        if training_args.should_save:  # SentenceTransformer(output_dir) loads it as a mean-pooling sentence encoder
            write_sentence_transformers_files(training_args.output_dir, model.config.hidden_size, max_seq_length)
        train_metrics = dict(train_result.metrics)
        train_metrics["train_samples"] = (trainer.state.global_step * training_args.train_batch_size
                                          * training_args.gradient_accumulation_steps * training_args.world_size
                                          if data_args.streaming else len(train_dataset))
        train_metrics["world_size"] = training_args.world_size
        speeds = [log["train_tokens_per_second"] for log in trainer.state.log_history if "train_tokens_per_second" in log]
        if speeds:
            train_metrics["train_tokens_per_second"] = speeds[-1]
        trainer.log_metrics("train", train_metrics)
        trainer.save_metrics("train", train_metrics)
        trainer.save_state()

    eval_metrics = {}
    if training_args.do_eval:
        logger.info("*** Evaluate ***")
        eval_metrics = trainer.evaluate()
        eval_metrics["eval_samples"] = len(eval_dataset)  # (eval_perplexity comes from MinAttnTrainer.log)
        trainer.log_metrics("eval", eval_metrics)
        trainer.save_metrics("eval", eval_metrics)

    trainer.card_facts = CardFacts(
        model_name=(training_args.hub_model_id or os.path.basename(os.path.abspath(training_args.output_dir))).split("/")[-1],
        config=model.config,
        num_parameters=n_params,
        # The embedded sample is gensim's, not a Hub dataset: only a Hub dataset name goes into the metadata.
        dataset_id=data_args.dataset_name,
        language="en" if data_args.dataset_name is None and data_args.train_file is None else None,
        tokenizer=tokenizer_facts(tokenizer),
        dataset_config=data_args.dataset_config_name,
        dataset_description=data_description,
        eval_metrics=eval_metrics,
        train_summary=describe_training(training_args, train_metrics, trainer.state.global_step),
        command="python training/run_mlm.py " + shlex.join(sys.argv[1:] if argv is None else argv),
        max_seq_length=max_seq_length,
        mlm_probability=data_args.mlm_probability,
        whole_word_mask=data_args.whole_word_mask,
        line_by_line=data_args.line_by_line,
        frozen_embeddings=model_args.freeze_embeddings,
        hardware=f"{training_args.world_size} x {training_args.device.type}" + (f" ({os.cpu_count()} cores)" if training_args.device.type == "cpu" else ""),
        repo_id=training_args.hub_model_id,
        eval_split_description=f"{len(eval_dataset)} sequences of held-out text",
    )
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
