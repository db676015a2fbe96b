"""The README.md model card of a trained MinAttn folder, rendered with `huggingface_hub.ModelCard`.

The template (`model_card_template.md`, next to this file so it is installed with the package) holds the
prose; this module gathers the facts (config, data, results) and checks a card's metadata offline.
"""

import math
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from transformers import DataCollatorForLanguageModeling

from hf_minattn.record_files import write_text_atomically

TEMPLATE_PATH = Path(__file__).with_name("model_card_template.md")

# Metadata the Hub needs to show the model as one that loads with transformers (and the pipeline_tag of its class).
REQUIRED_METADATA = {"library_name": "transformers"}
REQUIRED_KEYS = ("license", "tags")

IN_PROGRESS_CARD = "Training is in progress"  # the card of a run that has not ended (model_card_template.md)


@dataclass
class CardFacts:
    """What the model card states about one trained model."""

    model_name: str
    config: object  # a MinAttnConfig
    num_parameters: int
    dataset_id: str | None  # Hub dataset id for the metadata, or None for local files
    dataset_config: str | None
    dataset_description: str  # the card's text says this in full
    dataset_title: str | None = None  # a few words: the Hub shows the results' dataset name as a title
    eval_metrics: dict = field(default_factory=dict)  # Trainer's "eval_*" metrics
    train_summary: str = ""
    command: str = ""
    max_seq_length: int = 128
    mlm_probability: float = 0.15
    whole_word_mask: bool = False
    line_by_line: bool = False
    frozen_embeddings: bool = False
    hardware: str = "CPU"
    repo_id: str | None = None
    license: str = "apache-2.0"
    eval_split_description: str = "held-out text"
    language: str | None = None  # ISO code of the training text where it is known (the embedded sample: "en")
    tokenizer: dict = field(default_factory=lambda: {"kind": "unknown", "lowercase": None})  # see tokenizer_facts
    in_progress: bool = False  # the card of checkpoints pushed during training: no results yet
    mask_token: str = "[MASK]"  # the tokenizer's: the fill-mask example must contain it
    unchanged_share: float | None = None  # see unchanged_share(); None: transformers' default masking
    continued_from: str | None = None  # --model_name_or_path: the model trained further (None: from scratch)
    shuffled_labels: bool = False  # --shuffle_labels: the control without linguistic signal
    validation_file: str | None = None  # --validation_file: validation text given apart (None: held out)


TOKENIZER_KINDS = {"WordPiece": "WordPiece", "WordLevel": "word-level", "BPE": "BPE", "Unigram": "Unigram"}


def tokenizer_facts(tokenizer) -> dict:
    """What the card says about the vocabulary, read from the tokenizer itself: its model (WordPiece, word-level,
    ...) and whether its normaliser lower-cases (None when it cannot be told: a slow tokenizer)."""
    import json

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return {"kind": "unknown", "lowercase": getattr(tokenizer, "do_lower_case", None)}
    normalizer = json.loads(backend.to_str()).get("normalizer") or {}
    steps = normalizer.get("normalizers", [normalizer])  # a Sequence of normalisers, or one
    lowercase = any(step.get("type") == "Lowercase" or step.get("lowercase") is True for step in steps)
    kind = type(backend.model).__name__
    return {"kind": TOKENIZER_KINDS.get(kind, kind), "lowercase": lowercase}


def _eval_results(facts: CardFacts) -> list[EvalResult]:
    common = dict(
        task_type="fill-mask",
        task_name="Masked language modelling",
        dataset_type=facts.dataset_id or "text",
        dataset_name=facts.dataset_id or facts.dataset_title or facts.dataset_description,
        dataset_config=facts.dataset_config,
        dataset_split="validation",
    )
    names = {"eval_perplexity": ("perplexity", "Perplexity"), "eval_accuracy": ("accuracy", "Masked-token accuracy"),
             "eval_loss": ("loss", "Cross-entropy loss")}
    return [
        EvalResult(metric_type=metric_type, metric_name=metric_name, metric_value=round(float(facts.eval_metrics[key]), 4), **common)
        for key, (metric_type, metric_name) in names.items()
        if key in facts.eval_metrics and math.isfinite(facts.eval_metrics[key])
    ]


def _kept(facts: CardFacts) -> float:
    if facts.unchanged_share is not None:
        return facts.unchanged_share
    return 0.0 if facts.whole_word_mask else KEPT  # transformers forces 100% [MASK] with whole-word masking


def build_model_card(facts: CardFacts) -> ModelCard:
    card_data = ModelCardData(
        language=facts.language,
        license=facts.license,
        library_name="transformers",
        pipeline_tag="fill-mask",
        tags=["minattn", "hf_minattn", "fill-mask", "masked-lm", "custom_code"],
        datasets=[facts.dataset_id] if facts.dataset_id else None,
        metrics=["perplexity", "accuracy"],
        model_name=facts.model_name,
        # model-index (the results shown on the Hub page) needs both a model name and results.
        eval_results=_eval_results(facts) or None,
    )
    labels = {"eval_loss": "Loss (cross-entropy, nats; the mean of the batches' means)", "eval_perplexity": "Perplexity",
              "eval_accuracy": "Masked-token accuracy",
              "eval_token_loss": "Loss per masked token (cross-entropy, nats; the mean over tokens)",
              "eval_unigram_loss": "Unigram floor (token frequencies alone, same masked tokens, nats)",
              "eval_gain_over_unigram": "Gain over the unigram floor (nats, per masked token)",
              "eval_samples": "Sequences", "eval_masked_tokens": "Masked tokens"}
    results = [(label, _format(facts.eval_metrics[key])) for key, label in labels.items() if key in facts.eval_metrics]
    return ModelCard.from_template(
        card_data,
        template_path=str(TEMPLATE_PATH),
        results=results,
        floor_sentence=floor_sentence(facts.eval_metrics, _kept(facts)),
        findings_command=FINDINGS_COMMAND,
        repo_id=facts.repo_id or f"path/to/{facts.model_name}",
        **{k: v for k, v in vars(facts).items() if k not in ("eval_metrics", "repo_id")},
    )


# The command of the committed findings the card points to (docs/findings/results.json's "command", --out left open):
# the confirmation seeds, not `hf-minattn experiments`' default exploration seeds.
FINDINGS_COMMAND = "hf-minattn experiments --seeds 13-17 --reference minilm --out DIR"

# The card prints nats with 2 decimals: a gain must clear the copying bound by more than that to show in the numbers.
PRINTED_NATS = 0.01


def unchanged_share(masker) -> float:
    """Of the masked (scored) tokens, the share that `masker` (a DataCollatorForLanguageModeling) leaves unchanged
    in the input: 0 with whole-word masking, where transformers shows every masked token as the mask token."""
    return round(1 - masker.mask_replace_prob - masker.random_replace_prob, 6)


# Of the tokens scored, the share the masking leaves unchanged with transformers' defaults (80% [MASK], 10% random).
KEPT = unchanged_share(DataCollatorForLanguageModeling)


def floor_sentence(eval_metrics: dict, kept: float = KEPT) -> str | None:
    """What the loss says against the unigram floor (None when the evaluation did not report the floor). Copying
    the `kept` share of scored tokens that the masking leaves in place could lower the loss by at most kept x the
    floor; only a gain beyond that, by more than the 0.01 nats printed, shows the model uses context."""
    gain = eval_metrics.get("eval_gain_over_unigram")
    if gain is None or not math.isfinite(gain):
        return None
    floor = eval_metrics["eval_unigram_loss"]
    copying = kept * floor
    below = f"The loss is {gain:.2f} nats below the unigram floor ({floor:.2f})"
    if gain - copying > PRINTED_NATS:
        bound = (f" (copying the {kept:.0%} of scored tokens the masking leaves unchanged could give at most "
                 f"{copying:.2f} nats of it)" if kept else "")
        return (f"{below}: the model predicts masked tokens better than their frequencies alone would, so it uses "
                f"their context{bound}.")
    if gain > 0 and kept:
        return (f"{below}, {'no' if gain <= copying else 'not clearly'} more than copying the {kept:.0%} of scored "
                f"tokens the masking leaves unchanged could give ({copying:.2f} nats): that the model uses their "
                "context is not shown.")
    if gain > 0:
        return (f"{below}, within the {PRINTED_NATS} nats shown: that the model predicts masked tokens better than their "
                "frequencies alone, and so uses their context, is not shown.")
    return (f"The loss is not below the unigram floor ({floor:.2f}; gain {gain:+.2f} nats): so far the model predicts "
            "masked tokens no better than their frequencies alone, which it can learn without using any context.")


def _format(value) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4f}"
    return f"{int(value):,}" if isinstance(value, (int, float)) else str(value)


def write_model_card(output_dir, facts: CardFacts) -> Path:
    """Write the card as `output_dir/README.md`, whole or not at all (push uploads the folder's README.md)."""
    path = Path(output_dir) / "README.md"
    write_text_atomically(str(path), str(build_model_card(facts)))
    return path


def validate_model_card(path, pipeline_tag: str = "fill-mask") -> ModelCard:
    """Check a model card's YAML metadata without the network (the Hub's own validator is online only).

    Raises `ValueError` listing every problem: unparsable YAML or model-index, or missing/wrong metadata
    (`pipeline_tag`: what the model's class does, "fill-mask" for a masked LM).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No model card: {path} does not exist")
    try:
        card = ModelCard.load(path, ignore_metadata_errors=False)  # parses YAML and model-index
    except Exception as error:  # the YAML parser and huggingface_hub raise various types
        raise ValueError(f"{path}: invalid model card metadata: {error}") from error
    metadata = card.data.to_dict()
    problems = [
        f"{key} must be {expected!r}, got {metadata.get(key)!r}"
        for key, expected in {**REQUIRED_METADATA, "pipeline_tag": pipeline_tag}.items()
        if metadata.get(key) != expected
    ]
    problems += [f"{key} is missing" for key in REQUIRED_KEYS if not metadata.get(key)]
    if "model-index" in metadata and not card.data.eval_results:
        problems.append("model-index has no evaluation results")
    if problems:
        raise ValueError(f"{path}: invalid model card metadata: " + "; ".join(problems))
    return card


def describe_training(args, train_metrics: dict, steps: int | None) -> str:
    """The hyper-parameters line of the model card, from the run's TrainingArguments (`steps` None: not yet known)."""
    batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    minutes = args.max_train_minutes
    schedule = (f"linear decay over {minutes:g} minute{'' if minutes == 1 else 's'} of training" if minutes
                else f"{_value(args.lr_scheduler_type)} schedule")
    parts = [
        *([f"{steps} steps" + (f" ({train_metrics['epoch']:.2f} epochs)" if "epoch" in train_metrics else "")]
          if steps is not None else []),
        f"batch {batch} sequences ({args.world_size} process{'es' if args.world_size > 1 else ''})",
        f"{_value(args.optim)} optimizer, learning rate {args.learning_rate:g}, {_warmup(args)}, {schedule}",
        f"weight decay {args.weight_decay:g} (none on the embeddings)",
        "bf16 autocast" if args.bf16 else "fp16 autocast (mixed precision, loss scaling)" if args.fp16 else "fp32",
        f"seed {args.seed}",
    ]
    return ", ".join(parts)  # time and throughput: the card links train_results.json, which holds them


def _value(option) -> str:
    """An option as the user passes it: TrainingArguments turns some into enums (SchedulerType.LINEAR: "linear")."""
    return str(getattr(option, "value", option))


def _warmup(args) -> str:
    # transformers 5 reads a --warmup_steps below 1 as a share of the training steps planned (max_steps, or the
    # epochs' steps), which a run stopped early by its time budget does not all take.
    if args.warmup_steps >= 1 or args.warmup_steps == 0:
        return f"warmup {int(args.warmup_steps)} steps"
    planned = f", {args.get_warmup_steps(args.max_steps)} steps" if args.max_steps > 0 else ""
    return f"warmup over {args.warmup_steps:.0%} of the planned steps{planned}"


def hide_tokens(argv: list[str]) -> list[str]:
    """`argv` with the value of every `--*_token` option (`--hub_token hf_...` or `--hub_token=hf_...`) replaced by
    `<HUB_TOKEN>`, as TrainingArguments.to_dict hides it in run_args.json: the card is pushed to the Hub."""
    hidden = list(argv)
    for i, word in enumerate(hidden):
        name, equals, _ = word.partition("=")
        if not (name.startswith("--") and name.replace("-", "_").endswith("_token")):
            continue
        placeholder = f"<{name.lstrip('-').replace('-', '_').upper()}>"
        if equals:
            hidden[i] = f"{name}={placeholder}"
        elif i + 1 < len(hidden) and not hidden[i + 1].startswith("--"):
            hidden[i + 1] = placeholder
    return hidden


EMBEDDED_CORPUS_TITLE = "English Wikipedia prose (hf_minattn's embedded corpus)"


def dataset_title(data_args) -> str:
    """The training data in a few words: a Hub dataset's id (and configuration), a local file's name, or the
    embedded corpus."""
    if data_args.dataset_name:
        config = data_args.dataset_config_name
        return data_args.dataset_name + (f" ({config})" if config else "")
    if data_args.train_file:
        return os.path.basename(data_args.train_file)
    return EMBEDDED_CORPUS_TITLE


def _masker_share(trainer) -> float | None:
    """unchanged_share of the trainer's masking (run_mlm's MLMCollator holds transformers' collator as `masker`)."""
    masker = getattr(getattr(trainer, "data_collator", None), "masker", None)
    return None if masker is None else unchanged_share(masker)


def card_facts(trainer, model_args, data_args, data_description, tokenizer, train_metrics, eval_metrics,
               max_seq_length, argv, in_progress: bool = False) -> CardFacts:
    args = trainer.args
    return CardFacts(
        model_name=(args.hub_model_id or os.path.basename(os.path.abspath(args.output_dir))).split("/")[-1],
        config=trainer.model.config,
        num_parameters=trainer.model.num_parameters(),
        # The embedded sample is gensim's, not a Hub dataset: only a Hub dataset name goes into the metadata.
        dataset_id=data_args.dataset_name,
        language="en" if data_args.dataset_name is None and data_args.train_file is None else None,
        tokenizer=tokenizer_facts(tokenizer),
        mask_token=tokenizer.mask_token,
        unchanged_share=_masker_share(trainer),
        dataset_config=data_args.dataset_config_name,
        dataset_description=data_description,
        dataset_title=dataset_title(data_args),
        eval_metrics=eval_metrics,
        train_summary=describe_training(args, train_metrics, None if in_progress else trainer.state.global_step),
        in_progress=in_progress,
        command="python training/run_mlm.py " + shlex.join(hide_tokens(sys.argv[1:] if argv is None else argv)),
        max_seq_length=max_seq_length,
        mlm_probability=data_args.mlm_probability,
        whole_word_mask=data_args.whole_word_mask,
        line_by_line=data_args.line_by_line,
        frozen_embeddings=model_args.freeze_embeddings,
        continued_from=model_args.model_name_or_path,
        shuffled_labels=data_args.shuffle_labels,
        validation_file=os.path.basename(data_args.validation_file) if data_args.validation_file else None,
        hardware=f"{args.world_size} x {args.device.type}" + (f" ({os.cpu_count()} cores)" if args.device.type == "cpu" else ""),
        repo_id=args.hub_model_id,
        eval_split_description=(f"{len(trainer.eval_dataset)} sequences of "
                                + (f"`{os.path.basename(data_args.validation_file)}`" if data_args.validation_file
                                   else "held-out text")) if trainer.eval_dataset else "none",
    )
