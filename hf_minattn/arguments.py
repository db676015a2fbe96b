"""What `run_mlm` accepts: the model size presets and its three groups of arguments (`HfArgumentParser` dataclasses,
as in transformers' examples/pytorch/language-modeling/run_mlm.py). Every value is checked when the dataclass is
built, so that a bad one fails at once, with the flag's name, before any data is read or any tokenizer trained."""

import logging
import os
from dataclasses import dataclass, field

from transformers import TrainingArguments

from hf_minattn.checks import (check_bounds, check_data_file, check_dataset_source, check_finite_floats, check_idle,
                               check_output_folder, read_json_object)
from hf_minattn.configuration_minattn import SPECIAL_TOKEN_ID_FIELDS, MinAttnConfig
from hf_minattn.data import (STREAM_EVAL_SEQUENCES, STREAM_SAMPLE_TEXTS, STREAM_UNIGRAM_SEQUENCES,
                             STREAM_VALIDATION_TEXTS)
from hf_minattn.machine import accelerator_available, fast_bf16_available
from hf_minattn.model_source import (TOKENIZER_FILES, ModelSource, check_push_target, holds_tokenizer,
                                     require_folder_or_hub_id)
from hf_minattn.tokenization import SPECIAL_TOKENS

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

def check_tokenizer_name(name: str) -> None:
    """A one-line error naming --tokenizer_name unless `name` is a folder holding a tokenizer or a Hub id:
    transformers would blame a missing sentencepiece, or read a file as a config."""
    expected = "expected a folder written by a tokenizer's save_pretrained() or a Hub id"
    if os.path.isfile(name):
        raise ValueError(f"--tokenizer_name {name!r} is a file; {expected}")
    if os.path.isdir(name) and not holds_tokenizer(name):
        raise ValueError(f"--tokenizer_name {name!r} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
                         f"{expected}")
    require_folder_or_hub_id(name, "--tokenizer_name")


def check_argument_groups(model_args, data_args, training_args) -> None:
    """The checks across the three groups, once each is checked on its own. (Evaluating a freshly initialised model,
    never saved, would write a model card for a folder with no model.)"""
    if not training_args.do_train and model_args.model_name_or_path is None:
        raise ValueError("--do_train false evaluates the model of --model_name_or_path, and none is given (the model "
                         "would be a new, untrained one); give --model_name_or_path or drop --do_train false")
    if not (training_args.do_train or training_args.do_eval or training_args.push_to_hub):
        raise ValueError("--do_train false and --do_eval false leave nothing to do; drop one of them")
    from hf_minattn.run_folder import check_evaluation_folder  # here: it imports transformers' Trainer, heavy

    check_evaluation_folder(model_args.model_name_or_path, training_args)


@dataclass
class ModelArguments:
    """Which model to train (from scratch unless --model_name_or_path) and with which tokenizer."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A MinAttn masked LM to continue training: a saved folder, or a Hub id ('org/name') "
                                "as from_pretrained takes it. Leave unset to train from scratch."}
    )
    model_revision: str | None = field(
        default=None, metadata={"help": "With a Hub id as --model_name_or_path: the branch, tag or commit to load. Unset: the "
                                "default branch."}
    )
    trust_remote_code: bool = field(
        default=False, metadata={"help": "Run modeling and tokenizer code saved with --model_name_or_path or --tokenizer_name "
                                 "(MinAttn models load without it where hf_minattn is installed)."}
    )
    model_size: str | None = field(
        default=None,  # "small", set in __post_init__: None tells a preset given with --model_name_or_path
        metadata={"help": "Size preset when training from scratch. Unset: small, or with --model_name_or_path that "
                  "model's saved config (which takes no preset). Presets: "
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
        default=None, metadata={"help": "Path (or Hub id) of a tokenizer to use. Unset: the tokenizer of "
                                "--model_name_or_path, else one trained on the training split (--tokenizer_model). A "
                                "resumed run uses its checkpoint's tokenizer either way."}
    )
    vocab_size: int = field(default=8192, metadata={"help": "Vocabulary size of a tokenizer trained here (see --tokenizer_name)."})
    tokenizer_model: str = field(
        default="wordpiece",
        metadata={"help": "Kind of tokenizer trained here (see --tokenizer_name): 'wordpiece' (sub-words) or 'word' "
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
        for name in ("config_overrides", "model_size"):
            if self.model_name_or_path is not None and getattr(self, name) is not None:
                raise ValueError(f"--{name} can't be used with --model_name_or_path (the saved config is used as is), "
                                 f"got --{name} {getattr(self, name)!r}")
        if self.model_revision is not None and self.model_name_or_path is None:
            raise ValueError(f"--model_revision {self.model_revision!r} needs --model_name_or_path (a Hub id)")
        if self.tokenizer_name is not None:
            check_tokenizer_name(self.tokenizer_name)
        if self.tokenizer_name is not None or self.model_name_or_path is not None:  # (a resumed run's: from the checkpoint)
            given = "--tokenizer_name" if self.tokenizer_name is not None else "--model_name_or_path"
            check_idle(self, ("vocab_size", "tokenizer_model", "tokenizer_min_frequency"),
                       f"the tokenizer comes from {given}, and none is trained")
        if self.model_size is None and self.model_name_or_path is None:
            self.model_size = "small"
        if self.model_size not in MODEL_SIZES and self.model_name_or_path is None:  # the command line offers only these; a JSON file may say anything
            raise ValueError(f"--model_size must be one of {list(MODEL_SIZES)}, got {self.model_size!r}")
        # the vocabulary holds the special tokens and at least one more
        check_bounds(self, {"vocab_size": (len(SPECIAL_TOKENS), 2**24 + 1, False),  # the tokenizer trainer's bounds
                            "tokenizer_min_frequency": (1, 2**64, True)})
        if self.config_overrides:  # a bad field or value fails now, with MinAttnConfig's message
            check_no_special_ids(self.config_overrides)
            MinAttnConfig(**MODEL_SIZES[self.model_size]).update_from_string(self.config_overrides)


@dataclass
class DataTrainingArguments:
    """What data to train and evaluate on. With no dataset name and no file: the embedded Wikipedia corpus."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "A dataset on the Hub, e.g. 'wikitext' (needs the network). Unset: the embedded Wikipedia corpus (hf_minattn.data.load_wikipedia_corpus)."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "Configuration of --dataset_name, e.g. 'wikitext-103-raw-v1'."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: a .txt (one text per line), .json/.jsonl, .csv or .parquet file."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Validation data, same formats. Unset: --validation_split_percentage of the training data."}
    )
    text_column_name: str | None = field(
        default=None, metadata={"help": "Column holding the text. Unset: 'text' if present, else the first column of strings."}
    )
    validation_split_percentage: int = field(
        default=5,
        metadata={"help": "Percentage of the training data held out for validation when there is no validation split. "
                  "For the embedded Wikipedia corpus it picks the gensim sample's articles held out: each is held out "
                  "when its title's hash falls in the first N of 100 buckets, about N percent of the articles in "
                  "expectation (5 holds out 11 of its 107 articles, 12.7 percent of its words); the added summaries and "
                  "news are all training text."},
    )
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Tokens per sequence. Unset: the model's max_position_embeddings. With learned "
                                "or sinusoidal positions it must not exceed that; rotary or no positions take any length."}
    )
    line_by_line: bool = field(
        default=False, metadata={"help": "One sequence per line of text (padded, truncated), instead of concatenating texts and cutting chunks."}
    )
    pad_to_max_length: bool = field(
        default=False, metadata={"help": "With --line_by_line: pad every sequence to --max_seq_length, so that every batch has the same shape (compiled or CUDA-graph training), as transformers' run_mlm.py does. Without it batches are padded to their longest sequence."}
    )
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenization and grouping."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Recompute the tokenized datasets instead of reading the cache."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only this many training sequences (debugging, quick runs)."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep only this many validation sequences."})
    skip_eval_samples: int = field(
        default=0,
        metadata={"help": "Leave the first N validation sequences out of the evaluation (those a learning rate was "
                  "chosen on, say); --max_eval_samples counts from there. Each sequence kept is masked as it is "
                  "in the whole split, so the evaluations of runs that skip differently agree where they overlap."},
    )
    mlm_probability: float = field(default=0.15, metadata={"help": "Fraction of tokens masked for the masked-LM loss."})
    whole_word_mask: bool = field(
        default=False, metadata={"help": "Mask all the sub-word tokens of a word together (needs a fast tokenizer; not with --line_by_line)."}
    )
    shuffle_labels: bool = field(
        default=False,
        metadata={"help": "A control without linguistic signal: the masks are drawn as usual, but the masked targets of "
                  "each training batch are permuted across its masked positions (the batch's own token frequencies, "
                  "no link to the context; hf_minattn.masking.MLMCollator). The validation labels stay true."},
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
        builders = {name: check_data_file(getattr(self, name), f"--{name}")
                    for name in ("train_file", "validation_file") if getattr(self, name) is not None}
        if self.validation_file is not None and self.train_file is None:
            raise ValueError("--validation_file needs --train_file")
        if len(set(builders.values())) > 1:  # one `datasets` builder reads both: a CSV read as text keeps its header
            raise ValueError(f"--validation_file {self.validation_file!r} is a {builders['validation_file']} file but "
                             f"--train_file {self.train_file!r} a {builders['train_file']} file; expected both in one "
                             "format")
        if self.dataset_config_name is not None and self.dataset_name is None:
            raise ValueError(f"--dataset_config_name {self.dataset_config_name!r} names a configuration of "
                             "--dataset_name, and none is given")
        if self.dataset_name is not None and self.train_file is not None:
            raise ValueError("Give either --dataset_name or --train_file, not both")
        if self.dataset_name is not None:
            check_dataset_source(self.dataset_name, "--dataset_name", "a dataset name on the Hub or a folder of data "
                                 "files (for one file: --train_file)")
        if not 0 < self.validation_split_percentage < 100:
            raise ValueError(f"--validation_split_percentage must be between 1 and 99, got {self.validation_split_percentage}")
        check_bounds(self, {"mlm_probability": (0, 1, False), "max_seq_length": (3, None, True),  # [CLS] a token [SEP]
                            "max_train_samples": (1, None, True), "max_eval_samples": (1, None, True),
                            "skip_eval_samples": (0, None, True),
                            "preprocessing_num_workers": (1, None, True)})
        check_finite_floats(self)
        if self.pad_to_max_length and not self.line_by_line:
            raise ValueError("--pad_to_max_length pads the sequences of --line_by_line; concatenated texts are cut into "
                             "sequences of --max_seq_length tokens already: add --line_by_line or drop it")
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
        metadata={"help": "bf16 autocast. Unset: on where it is fast (GPU with bf16, CPU with AVX512-BF16 or AMX), "
                  "else off (and off under --fp16). `--bf16 false` turns it off, `--bf16 true` forces it on."},
    )
    output_dir: str | None = field(
        default=None, metadata={"help": "Where the model, its checkpoints, results and logs are written. Unset: "
                                "trainer_output, in the working folder (transformers' default)."}
    )
    report_to: None | str | list[str] = field(default="tensorboard", metadata={"help": "Where to log: 'tensorboard', 'none', 'all', ..."})
    logging_steps: float = field(default=10, metadata={"help": "Log (and record embedding drift) every X optimizer steps."})
    logging_first_step: bool = field(default=True, metadata={"help": "Log the first step too."})
    save_total_limit: int | None = field(default=2, metadata={"help": "Keep at most this many checkpoints."})
    ddp_find_unused_parameters: bool | None = field(default=False, metadata={
        "help": "DDP: search for parameters without gradient at every step (not needed: every trainable parameter gets one)."})
    include_num_input_tokens_seen: str | bool = field(default=True, metadata={
        "help": "Count the tokens trained on, for tokens/s (padding included: none with concatenated texts)."})
    save_only_model: bool = field(default=False, metadata={
        "help": "Checkpoints hold the model alone, except the newest: it keeps the optimizer, scheduler and random "
                "states, so that a killed run resumes (--resume; transformers' own keeps none and cannot)."})
    resume: bool = field(
        default=False,
        metadata={"help": "Continue from the last complete checkpoint in --output_dir (checkpoints cut short or model-only "
                  "are skipped and named); a run killed after its last checkpoint gets its end "
                  "(model, results, card) from it, training nothing; a finished run is left as it is. Without a "
                  "checkpoint it starts afresh, unless --output_dir holds a trained model (see --overwrite_output_dir)."},
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Train afresh (or continue a --resume_from_checkpoint of another folder) into an --output_dir "
                  "that holds a trained model or checkpoints (refused without it), removing first the earlier run's "
                  "checkpoints, early states, trainer_state.json, results and drift and loss-allocation records. Not "
                  "with --resume, nor a checkpoint of --output_dir. With --do_train false: evaluate into the folder of "
                  "another run, removing nothing."},
    )
    max_train_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop training after this many minutes of training in all, or at --max_steps/--num_train_epochs "
                  "if sooner. The learning rate then decays linearly with the time spent, after --warmup_steps (whole "
                  "steps; with the linear schedule only). A resumed run counts the minutes its checkpoint had spent, "
                  "as --max_steps counts its steps: give more minutes to train on. Makes the run length fit a deadline "
                  "on machines of any speed, at the price of step-for-step reproducibility."},
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
    early_save_every: int = field(
        default=0,
        metadata={"help": "Also save a state every this many optimizer steps up to --early_save_until (0: off), into "
                  "output_dir/early_states/checkpoint-<step>, outside --save_total_limit's count (model-only with "
                  "--save_only_model; hf_minattn.early_states.EarlyStates). Not with --save_strategy best."},
    )
    early_save_until: int = field(default=0, metadata={"help": "With --early_save_every: the last step of the early grid."})
    stop_at_step: int | None = field(
        default=None,
        metadata={"help": "End training after this optimizer step, the learning-rate schedule still that of --max_steps "
                  "(a run that matches another's first steps exactly, learning rate included)."},
    )

    def __post_init__(self):
        check_bounds(self, {"loss_allocation_every": (1, None, True), "loss_allocation_samples": (1, None, True),
                            "early_save_every": (0, None, True), "early_save_until": (0, None, True),
                            "stop_at_step": (1, None, True), "dataloader_num_workers": (0, None, True),
                            "learning_rate": (0, None, True), "weight_decay": (0, None, True),
                            "warmup_steps": (0, None, True), "max_grad_norm": (0, None, True),
                            "adam_epsilon": (0, None, True), "adam_beta1": (0, 1, True), "adam_beta2": (0, 1, True),
                            "per_device_train_batch_size": (1, None, True), "per_device_eval_batch_size": (1, None, True),
                            "gradient_accumulation_steps": (1, None, True), "max_train_minutes": (0, None, False),
                            "num_train_epochs": (0, None, True), "seed": (0, 2**32, True), "data_seed": (0, 2**64, True),
                            # below 0 they never log, evaluate or save; 0 is transformers' to refuse or read
                            "logging_steps": (0, None, True), "eval_steps": (0, None, True), "save_steps": (0, None, True)})
        check_finite_floats(self)  # NaN and inf in the Trainer's other float flags (label smoothing, steps...)
        if not self.loss_allocation:
            check_idle(self, ("loss_allocation_every", "loss_allocation_samples"), "they shape --loss_allocation's "
                       "record, and it is off")
        self._check_steps()
        self._check_time_budget()
        if self.resume and self.overwrite_output_dir:  # (a checkpoint of --output_dir: check_checkpoint_folder)
            raise ValueError("--resume continues a run, --overwrite_output_dir true trains afresh over --output_dir; "
                             "give one of them")
        if self.bf16 is None:  # auto: never beside an fp16 the user asked for
            self.bf16 = fast_bf16_available() and not self.fp16
        # On a machine with no accelerator, transformers needs use_cpu to accept bf16 and, under
        # `accelerate launch --multi_gpu` or torchrun, to set up DDP over gloo (else each process trains alone).
        if not accelerator_available():
            self.use_cpu = True
        super().__post_init__()  # fills in the default --output_dir ("trainer_output") where none is given
        check_output_folder(self.output_dir, "--output_dir")
        if self.push_to_hub:
            check_push_target(self.hub_model_id, self.output_dir)
        if self.resume_from_checkpoint is not None:  # once the number of processes is known: each needs its RNG state
            # Imported here: it imports transformers' Trainer, heavy; the experiments read the presets without it.
            from hf_minattn.run_folder import check_checkpoint_folder

            check_checkpoint_folder(self)

    def _check_time_budget(self):
        """--max_train_minutes brings its own schedule: linear decay over the minutes, after whole warm-up steps."""
        if self.max_train_minutes is None:
            return
        scheduler = getattr(self.lr_scheduler_type, "value", self.lr_scheduler_type)
        if scheduler != "linear":
            raise ValueError(f"--max_train_minutes decays the learning rate linearly over the minutes, so "
                             f"--lr_scheduler_type {scheduler} would not be used: leave it out, or train by steps")
        if 0 < self.warmup_steps < 1:  # a share of the steps of --num_train_epochs, which a budget never reaches
            raise ValueError(f"--warmup_steps {self.warmup_steps:g} is a share of the run's steps, which "
                             "--max_train_minutes leaves open: give whole warm-up steps")

    def _check_steps(self):
        """--max_steps, and the step flags that must agree with it and with each other."""
        if self.max_steps == 0 or self.max_steps < -1:  # transformers reads any of them as "not set": train epochs
            raise ValueError(f"--max_steps must be a positive number of optimizer steps, or -1 (the default: train "
                             f"--num_train_epochs), got {self.max_steps}")
        if self.warmup_steps >= 1 and self.warmup_steps != int(self.warmup_steps):  # transformers would truncate it
            raise ValueError(f"--warmup_steps {self.warmup_steps!r}: from 1 up it counts whole steps (below 1, a share "
                             f"of the run's steps); expected a whole number such as {int(self.warmup_steps)}")
        if self.do_train and self.max_steps <= 0 and self.num_train_epochs <= 0:
            raise ValueError(f"nothing to train: --max_steps {self.max_steps} and --num_train_epochs "
                             f"{self.num_train_epochs:g}; give --max_steps > 0 or --num_train_epochs > 0")
        if self.stop_at_step is not None and 0 < self.max_steps < self.stop_at_step:
            raise ValueError(f"--stop_at_step {self.stop_at_step} is past --max_steps {self.max_steps}, where training "
                             f"ends anyway; expected a step from 1 to {self.max_steps}")
        if (self.early_save_every > 0) != (self.early_save_until > 0):
            given, missing = (("every", "until") if self.early_save_every else ("until", "every"))
            raise ValueError(f"--early_save_{given} {getattr(self, 'early_save_' + given)} needs --early_save_{missing} "
                             "(the early grid saves every --early_save_every steps up to --early_save_until)")
        if self.early_save_every and getattr(self.save_strategy, "value", self.save_strategy) == "best":
            raise ValueError("--early_save_every needs --save_strategy steps, epoch or no, not best")
        if self.early_save_every > self.early_save_until:
            raise ValueError(f"--early_save_every {self.early_save_every} is past --early_save_until "
                             f"{self.early_save_until}: the early grid would save nothing; expected at most "
                             f"{self.early_save_until}")


def check_minattn_checkpoint(source: ModelSource) -> None:
    """A ValueError unless the config.json of `source` is a MinAttn one (transformers would build a MinAttnConfig
    from any config.json, with a warning, and so train a new MinAttn model in place of the one named); one naming the
    file when it is no JSON object."""
    model_type = read_json_object(os.path.join(source.folder, "config.json"),
                                  f"--model_name_or_path {source.name!r}").get("model_type")
    if model_type != "minattn":
        raise ValueError(f"--model_name_or_path {source.name!r} is a {model_type!r} checkpoint; run_mlm.py continues "
                         "training a MinAttn model (model_type 'minattn'). Leave it unset to train one from scratch, "
                         "or train other models with transformers' own run_mlm.py example")


def check_no_special_ids(overrides: str) -> None:
    """A ValueError naming a special token id or vocab_size set in --config_overrides: run_mlm.py gives the config
    the tokenizer's (a new model's and a continued one's), so the override would be dropped without a word."""
    fields = [item.split("=")[0].strip() for item in overrides.split(",")]
    if named := [f for f in fields if f in SPECIAL_TOKEN_ID_FIELDS + ("vocab_size",)]:
        raise ValueError(f"--config_overrides sets {', '.join(named)}; the vocabulary size and the special token ids "
                         f"come from the tokenizer: drop them from --config_overrides (the size is --vocab_size)")


def check_model_tokenizer(source: ModelSource) -> None:
    """A ValueError naming --model_name_or_path when `source`, a local folder that is to give the run its tokenizer
    (no --tokenizer_name, no checkpoint), holds none: transformers would blame a missing sentencepiece, once the data
    is read. (A Hub id is not looked into: its files are fetched only when loaded.)"""
    if not source.is_hub and not holds_tokenizer(source.folder):
        raise ValueError(f"--model_name_or_path {source.name!r} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}) "
                         "and no --tokenizer_name is given; expected a folder saved with its tokenizer "
                         "(tokenizer.save_pretrained), or give --tokenizer_name")


def build_config(model_args: ModelArguments, source: ModelSource | None = None) -> MinAttnConfig:
    """The config of the model `source` (found from --model_name_or_path), or of the size preset with its overrides."""
    if source is not None:
        check_minattn_checkpoint(source)
        return MinAttnConfig.from_pretrained(**source.pretrained(), cache_dir=model_args.cache_dir)
    config = MinAttnConfig(**MODEL_SIZES[model_args.model_size])
    if model_args.config_overrides:
        logger.info(f"Overriding config: {model_args.config_overrides}")
        config.update_from_string(model_args.config_overrides)  # validated, as every edit of a MinAttnConfig
    return config


# Config fields a run sets from its tokenizer (the preset leaves them at their defaults) or that describe no shape.
NOT_COMPARED_ON_RESUME = {"vocab_size", *SPECIAL_TOKEN_ID_FIELDS, "architectures", "auto_map", "dtype", "torch_dtype",
                          "transformers_version", "_name_or_path"}


def check_resumed_config(config: MinAttnConfig, checkpoint: str, model_args: ModelArguments) -> None:
    """A `config` (from --model_size and --config_overrides, or --model_name_or_path) that differs from the resumed
    checkpoint's config.json is refused, naming the fields, before any data is read. (Building the checkpoint's config
    instead would silently ignore the flags given; loading its weights into another shape fails late.)"""
    saved = read_json_object(os.path.join(checkpoint, "config.json"), f"--resume_from_checkpoint {checkpoint!r}")
    ours = config.to_dict()
    differing = [f"{name} {ours[name]!r} where it has {saved[name]!r}" for name in sorted(ours.keys() & saved.keys())
                 if name not in NOT_COMPARED_ON_RESUME and ours[name] != saved[name]]
    if differing:
        given = (f"--model_name_or_path {model_args.model_name_or_path!r}" if model_args.model_name_or_path else
                 f"--model_size {model_args.model_size!r}"
                 + (f" with --config_overrides {model_args.config_overrides!r}" if model_args.config_overrides else ""))
        raise ValueError(f"{given} gives a config that differs from that of {checkpoint} ({'; '.join(differing)}); "
                         "resuming continues that model: give the arguments of the run that saved it")
