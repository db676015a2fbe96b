"""Scoring the saved models: the validation set (from the preset's `scored_from` on: the sequences before it chose
the learning rates), masked several times with `MLMCollator.mask_example` (the first draw is run_mlm's own), per-token
losses, the unigram floor on the same masked tokens, per-row embedding drift against training frequency, and whether
paired runs really start from the same weights."""

import contextlib
import json
import os
from dataclasses import dataclass

import numpy as np
import torch


class _OneProcess:
    """What `run_mlm.tokenize_and_group` needs of TrainingArguments in a single process."""

    @contextlib.contextmanager
    def main_process_first(self, desc=None, local=True):
        yield


@dataclass
class Splits:
    """The training and validation sequences exactly as run_mlm makes them (same tokenizer, same chunking)."""

    train: object  # datasets.Dataset
    validation: object
    tokenizer: object
    data_args: object


def load_splits(tokenizer_dir: str, max_seq_length: int, mlm_probability: float) -> Splits:
    from transformers import AutoTokenizer

    from hf_minattn.data import load_raw_datasets, resolve_text_column, tokenize_and_group
    from hf_minattn.arguments import DataTrainingArguments

    data_args = DataTrainingArguments(max_seq_length=max_seq_length, mlm_probability=mlm_probability)  # as in training
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    raw, _ = load_raw_datasets(data_args, None)
    column = resolve_text_column(raw, None)
    grouped = tokenize_and_group(raw, tokenizer, column, data_args, max_seq_length, _OneProcess())
    return Splits(grouped["train"], grouped["validation"], tokenizer, data_args)


@dataclass
class MaskDraw:
    """One masking of the whole validation set: model inputs and labels (-100 where not masked), (N, T)."""

    collator_seed: int
    stream: int
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor

    @property
    def targets(self) -> np.ndarray:
        return self.labels[self.labels != -100].numpy()


# `MLMCollator.mask_example` seeds with SeedSequence([seed, stream + 1, index]), which refuses streams below -1
# (negative entropy), and streams >= 0 are the training epochs' masks. So draw k > 0 uses stream -1 of a collator
# seeded with seed + k * DRAW_SEED_STEP: still the same masks for every variant of one seed (paired).
DRAW_SEED_STEP = 1_000_003


def mask_validation(splits: Splits, seed: int, draws: int = 3) -> list[MaskDraw]:
    """Mask every validation sequence `draws` times with `MLMCollator.mask_example`. Draw 0 is exactly what run_mlm
    evaluated with (the training seed, stream -1); every variant of one seed is scored on the same tokens."""
    from hf_minattn.masking import EVAL_MASK_STREAM, MLMCollator

    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}")
    rows = [splits.validation[i] for i in range(len(splits.validation))]
    result = []
    for k in range(draws):
        collator = MLMCollator(splits.tokenizer, splits.data_args, seed=seed + k * DRAW_SEED_STEP)
        masked = [collator.mask_example(row, EVAL_MASK_STREAM, i) for i, row in enumerate(rows)]
        result.append(MaskDraw(collator.seed, EVAL_MASK_STREAM,
                               *(torch.tensor([m[key] for m in masked]) for key in ("input_ids", "attention_mask", "labels"))))
    return result


@torch.no_grad()
def token_losses(model, draw: MaskDraw, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per masked token (row-major over the draw): the loss in nats, whether the top prediction is right, and the
    index of the sequence it belongs to."""
    model.eval()
    where = next(model.parameters()).device
    losses, correct = [], []
    for start in range(0, len(draw.labels), batch_size):
        labels = draw.labels[start : start + batch_size]
        logits = model(input_ids=draw.input_ids[start : start + batch_size].to(where),
                       attention_mask=draw.attention_mask[start : start + batch_size].to(where),
                       labels=labels.to(where), sparse_prediction=True).logits.float()  # (n_labelled, V)
        targets = labels[labels != -100].to(where)
        losses.append(torch.nn.functional.cross_entropy(logits, targets, reduction="none").cpu())
        correct.append((logits.argmax(-1) == targets).cpu())
    sequence = torch.nonzero(draw.labels != -100)[:, 0]
    return torch.cat(losses).numpy(), torch.cat(correct).numpy(), sequence.numpy()


def score_model(folder: str, draws: list[MaskDraw], unigram, batch_size: int, checked: range | None = None,
                scored_from: int = 0) -> dict:
    """The model's masked-LM loss and accuracy on every draw (pooled over draws: `eval_loss`), and the unigram
    floor on the same tokens, over the validation sequences from index `scored_from` on (the preset's
    `scored_from`: those before it chose the learning rates). `checked`: also the loss on draw 0's sequences in that
    range (`training.curve_sequences`), the set run_mlm's own final evaluation scored, to compare with its
    `eval_results.json` (None: every sequence)."""
    from transformers import AutoModelForMaskedLM

    from hf_minattn.probes.loading import resolve_device

    model = AutoModelForMaskedLM.from_pretrained(folder).to(resolve_device(None))  # the GPU when there is one
    by_draw, all_losses, all_correct, all_unigram = [], [], [], []
    check = None
    for draw in draws:
        losses, correct, sequence = token_losses(model, draw, batch_size)
        if draw is draws[0]:  # run_mlm's own masks
            checked_here = np.isin(sequence, checked) if checked is not None else np.ones_like(losses, dtype=bool)
            check = float(losses[checked_here].mean())
        scored = sequence >= scored_from  # per masked token, row-major like draw.targets
        losses, correct, targets = losses[scored], correct[scored], draw.targets[scored]
        by_draw.append({"collator_seed": draw.collator_seed, "stream": draw.stream, "eval_loss": float(losses.mean()),
                        "unigram_loss": unigram.cross_entropy(targets), "accuracy": float(correct.mean()),
                        "masked_tokens": int(losses.size)})
        all_losses.append(losses), all_correct.append(correct), all_unigram.append(-unigram.log_probs[targets])
    losses, unigram_losses = np.concatenate(all_losses), np.concatenate(all_unigram)
    return {"eval_loss": float(losses.mean()), "unigram_loss": float(unigram_losses.mean()),
            "gain_over_unigram": float(unigram_losses.mean() - losses.mean()),
            "accuracy": float(np.concatenate(all_correct).mean()), "masked_tokens": int(losses.size),
            "loss_se": float(losses.std(ddof=1) / np.sqrt(losses.size)), "by_draw": by_draw,
            "run_mlm_masks_loss_on_trainer_eval_set": check}


def trainer_metrics(folder: str) -> dict:
    """run_mlm's own final evaluation and its curve during training (validation loss, unigram floor, gain), from
    eval_results.json and trainer_state.json; empty for the untrained models."""
    result = {}
    path = os.path.join(folder, "eval_results.json")
    if os.path.isfile(path):
        with open(path) as f:
            metrics = json.load(f)
        result["trainer_eval"] = {k: metrics.get(f"eval_{k}") for k in ("loss", "token_loss", "unigram_loss",
                                                                           "gain_over_unigram", "accuracy",
                                                                           "masked_tokens", "samples")}
    path = os.path.join(folder, "train_results.json")
    if os.path.isfile(path):  # the run's own clock: true even when a later call reuses the model
        with open(path) as f:
            result["train_minutes"] = json.load(f)["train_runtime"] / 60
    path = os.path.join(folder, "trainer_state.json")
    if os.path.isfile(path):
        with open(path) as f:
            state = json.load(f)
        points = [h for h in state["log_history"] if "eval_loss" in h]
        result["steps"] = state["global_step"]
        result["curve"] = {"steps": [h["step"] for h in points], "eval_loss": [h["eval_loss"] for h in points],
                           "unigram_loss": [h.get("eval_unigram_loss") for h in points],
                           "gain_over_unigram": [h.get("eval_gain_over_unigram") for h in points]}
    return result


# ------------------------------------------------------------------------------------------ embedding rows


def word_embeddings(folder: str) -> np.ndarray:
    from safetensors.numpy import load_file

    weights = load_file(os.path.join(folder, "model.safetensors"))
    return weights["minattn.embeddings.word_embeddings.weight"].astype(np.float64)


def token_counts(dataset, vocab_size: int) -> np.ndarray:
    """How often each id occurs in the sequences' text (special tokens included: they are inputs too)."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for batch in dataset.select_columns(["input_ids"]).iter(batch_size=1000):
        counts += np.bincount(np.asarray(batch["input_ids"]).ravel(), minlength=vocab_size)
    return counts


def input_ids_ever_masked_in(splits: Splits, seed: int, epochs: int, vocab_size: int) -> np.ndarray:
    """Every id that is an input in some training example's masked version in epochs 0..epochs-1 (the masking
    replaces 10% of the masked tokens by random ids): a superset of the rows that received a gradient."""
    from hf_minattn.masking import MLMCollator

    collator = MLMCollator(splits.tokenizer, splits.data_args, seed=seed)
    seen = torch.zeros(vocab_size, dtype=torch.bool)
    examples = list(splits.train)  # once: reading rows of a Dataset one by one costs more than masking them
    for epoch in range(epochs):
        for i, example in enumerate(examples):
            seen[collator.mask_inputs(example, epoch, i)] = True
    return seen.numpy()


def row_drift(trained: np.ndarray, initial: np.ndarray, counts: np.ndarray, ever_input: np.ndarray | None) -> dict:
    """Per-row distance ||e_final - e_init|| against training frequency, binned, and a check on unseen rows."""
    from hf_minattn.stats import spearman_interval

    drift = np.linalg.norm(trained - initial, axis=1)
    bins = [(0, 0), (1, 9), (10, 99), (100, 999), (1000, None)]
    binned = []
    for low, high in bins:
        rows = (counts >= low) & ((counts <= high) if high is not None else True)
        binned.append({"min_count": low, "max_count": high, "rows": int(rows.sum()),
                       "median_drift": float(np.median(drift[rows])) if rows.any() else None,
                       "moved": int((drift[rows] > 0).sum())})
    seen_text = counts > 0
    result = {"rows": int(drift.size), "bins": binned, "initial_row_norm": float(np.median(np.linalg.norm(initial, axis=1))),
              "spearman_drift_vs_count": (spearman_interval(counts[seen_text], drift[seen_text], n_resamples=300).to_dict()
                                          if np.ptp(drift[seen_text]) > 0 else None),  # None: no row moved
              "not_in_text": {"rows": int((~seen_text).sum()), "moved": int((drift[~seen_text] > 0).sum()),
                              "max_drift": float(drift[~seen_text].max()) if (~seen_text).any() else None}}
    if ever_input is not None:
        never = ~ever_input
        result["never_input"] = {"rows": int(never.sum()), "moved": int((drift[never] > 0).sum()),
                                 "max_drift": float(drift[never].max()) if never.any() else None}
    return result


def initialisation_agreement(settings: dict, vocab_size: int, seed: int) -> dict:
    """For each variant, built as run_mlm builds it (`initial_model`): the share of the full model's parameters,
    by count, that are bit-identical at initialisation (names and shapes agreeing)."""
    from hf_minattn.initialization import initial_model

    from .training import VARIANTS, build_config, variant_overrides

    def initial(variant):
        return dict(initial_model(build_config(settings, variant_overrides(settings, variant, vocab_size), vocab_size),
                                  seed).named_parameters())

    full = initial(VARIANTS[0])
    total = sum(p.numel() for p in full.values())
    result = {}
    for variant in VARIANTS[1:]:
        if not variant.trained:
            continue
        other = initial(variant)
        same = [n for n, p in full.items() if n in other and other[n].shape == p.shape and torch.equal(other[n], p)]
        result[variant.name] = {"identical_share": sum(full[n].numel() for n in same) / total,
                                "word_embeddings_identical": "minattn.embeddings.word_embeddings.weight" in same}
    return result


def drift_summary(folder: str) -> dict | None:
    """From run_mlm's drift.json: final relative distance from the initial values and mean gradient norm over
    training, per matrix kind (W_* averaged over layers)."""
    from hf_minattn.drift import matrix_kind, read_drift

    history = read_drift(folder)
    if history is None:
        return None
    summary = {"step": history.steps[-1], "drift": {}, "grad_norm": {}, "series": {"steps": history.steps},
               "grad_norm_before_clipping": history.grad_norm_before_clipping}
    for kind in ("word_embeddings", "position_embeddings", "W_Q", "W_K", "W_V", "W_O"):
        names = [n for n in history.drift if matrix_kind(n) == kind]
        if not names:
            continue
        series = [float(np.mean([history.drift[n][i] for n in names])) for i in range(len(history.steps))]
        summary["drift"][kind], summary["series"][kind] = series[-1], series
        grads = [g for i in range(len(history.steps)) for n in names if (g := history.grad_norm[n][i]) is not None]
        summary["grad_norm"][kind] = float(np.mean(grads)) if grads else None
    return summary


def half_step(steps: list[int], cumulative: list[float]) -> int | None:
    """The first step at which a cumulative allocation reaches half of its final value (None if that is 0)."""
    final = cumulative[-1]
    if final == 0:
        return None
    return next(step for step, value in zip(steps, cumulative) if value / final >= 0.5)


ATTENTION_GROUPS = ("W_Q", "W_K", "W_V", "W_O")


def loss_allocation_summary(folder: str) -> dict | None:
    """From run_mlm's loss_allocation.json (Loss Change Allocation on a fixed batch): the loss change, the total
    allocation per group (negative: the group's updates lowered the loss), the step at which each group (and attention,
    W_Q + W_K + W_V + W_O) reached half of its total, the approximation error, and the cumulative curves."""
    from hf_minattn.loss_allocation import read_loss_allocation

    history = read_loss_allocation(folder)
    if history is None or len(history.steps) < 2:
        return None
    curves = dict(history.groups)
    attention = [name for name in ATTENTION_GROUPS if name in curves]
    if attention:
        curves["attention"] = [sum(curves[name][i] for name in attention) for i in range(len(history.steps))]
    return {"loss_change": history.loss_change, "relative_error": history.relative_error,
            "abs_error": history.abs_error, "every": history.every, "intervals": len(history.errors),
            "tied_word_embeddings": history.tied_word_embeddings,
            "groups": {name: curve[-1] for name, curve in curves.items()},
            "half_step": {name: half_step(history.steps, curve) for name, curve in curves.items()},
            "curve": {"steps": history.steps, "observed": history.observed, "groups": curves}}


def evaluate(folders: dict, settings: dict, seeds) -> tuple[dict, dict]:
    """Re-score every model on the validation set from `scored_from` on (several mask draws), per seed; the unigram
    floor on the same tokens; per-row embedding drift for the full and frozen variants. Returns the numbers and the
    per-row arrays of the first seed (training counts, each variant's drift) that rows.npz keeps for the figures."""
    from hf_minattn.unigram import UnigramFloor

    from .training import VARIANTS, curve_sequences, log

    first = folders["full"][seeds[0]]
    splits = load_splits(first, settings["max_seq_length"], settings["mlm_probability"])
    vocab = len(splits.tokenizer)
    unigram = UnigramFloor.from_dataset(splits.train, vocab)
    counts = token_counts(splits.train, vocab)
    epochs = -(-settings["max_steps"] * settings["batch_size"] // len(splits.train))  # epochs training started
    variants = {v.name: {"description": v.description, "trained": v.trained, "seeds": []} for v in VARIANTS}
    rows, arrays = {}, {}
    scored_from = settings.get("scored_from", 0)
    if not 0 <= scored_from < len(splits.validation):
        raise ValueError(f"scored_from must leave validation sequences to score: {scored_from} of "
                         f"{len(splits.validation)}")
    for seed in seeds:
        log(f"scoring seed {seed}: validation sequences {scored_from}-{len(splits.validation) - 1} x "
            f"{settings['mask_draws']} mask draws")
        draws = mask_validation(splits, seed, settings["mask_draws"])
        for variant in VARIANTS:
            folder = folders[variant.name][seed]
            trainer = trainer_metrics(folder)
            row = {"seed": seed, **score_model(folder, draws, unigram, settings["batch_size"],
                                               curve_sequences(settings, len(splits.validation))
                                               if variant.trained else None, scored_from), **trainer}
            variants[variant.name]["seeds"].append(row)
        # per-row drift at every seed: the bins of the first seed are shown, the frequency correlation over seeds
        initial = word_embeddings(folders["untrained"][seed])
        ever = input_ids_ever_masked_in(splits, seed, epochs, vocab)
        for name in ("full", "frozen_embeddings"):
            trained = word_embeddings(folders[name][seed])
            drift = row_drift(trained, initial, counts, ever)
            if seed == seeds[0]:
                rows[name] = drift
                arrays[f"{'frozen' if name != 'full' else 'full'}_drift"] = np.linalg.norm(trained - initial, axis=1)
            rows.setdefault("by_seed", {}).setdefault(name, {})[seed] = {
                "spearman_drift_vs_count": drift["spearman_drift_vs_count"],
                "never_input_moved": (drift.get("never_input") or {}).get("moved"),
                "not_in_text_moved": drift["not_in_text"]["moved"]}
    scored = {"variants": variants, "rows": rows, "unigram_entropy": unigram.entropy(),
              "scored_sequences": [scored_from, len(splits.validation)],
              "unigram_tokens": unigram.num_tokens, "vocab_size": vocab, "epochs_touched": epochs}
    return scored, {"counts": counts, **arrays}
