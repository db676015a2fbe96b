"""Masking for the masked-LM objective, shared by training (run_mlm.py, the experiments) and the benchmark, so that
both mask as transformers' `DataCollatorForLanguageModeling` does (80% [MASK], 10% random token, 10% unchanged; with
whole-word masking every masked token becomes [MASK]), with every random draw from a generator we seed.
"""

import datasets
import numpy as np
import torch
from transformers import DataCollatorForLanguageModeling, DataCollatorForTokenClassification, TrainerCallback


def mask_tokens(masker: DataCollatorForLanguageModeling, input_ids: torch.Tensor, generator: torch.Generator,
                **optional) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels) of a (B, T) batch of ids, masked by `masker` with every random number drawn from
    `generator`. `optional`: `special_tokens_mask` (positions never masked; without it the tokenizer's special ids
    are found again) and, for whole-word masking, `offset_mapping`.

    Only the collator's masking step, on tensors: calling the whole collator once per example (padding, list
    conversions) cost as much again, about 8% of a training step.
    """
    masker.generator = generator  # DataCollatorForLanguageModeling draws from it when it is set
    return masker.torch_mask_tokens(input_ids.clone(), **optional)  # it masks its argument in place


# Which masks an example gets: one stream per training epoch, and one (fixed) for evaluation.
EVAL_MASK_STREAM = -1
EXAMPLE_INDEX = "example_index"  # column naming each training example, for its masks


SHUFFLE_STREAM = 0x5348  # first word of the seeds of --shuffle_labels' permutations, apart from every mask's seed


def seeded_generator(*entropy: int) -> torch.Generator:
    """A torch generator seeded from `entropy` (non-negative integers) through numpy's SeedSequence, so that nearby
    tuples give unrelated streams."""
    state = np.random.SeedSequence(list(entropy)).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


def shuffled_targets(labels: list[torch.Tensor], generator: torch.Generator) -> list[torch.Tensor]:
    """`labels` (each (T_i,), -100 where not masked) with their masked targets permuted across all their masked
    positions by `generator`: the same positions are masked, the same multiset of targets is predicted, but which
    target sits where is random."""
    flat = torch.cat(labels)  # a new tensor: the inputs are left as they were
    where = flat != -100
    targets = flat[where]
    flat[where] = targets[torch.randperm(len(targets), generator=generator)]
    return list(flat.split([len(l) for l in labels]))


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

    With `data_args.shuffle_labels` (a control without linguistic signal), every training batch is masked exactly
    as without it (the same inputs, the same masked positions), and then its masked targets are permuted across its
    masked positions (`shuffled_targets`), by a generator seeded with (seed, epoch, the batch's example indices in
    order). Why a permutation within the batch: the targets keep exactly the batch's own token frequencies (the
    unigram distribution the loss can still learn), while a target's position says nothing about its context, so
    the loss can learn token frequencies and nothing more. A target stays in its own sequence with probability
    about 1/batch size (6% at batch 16): the only trace of context left, and a topical one. The validation set
    keeps its true labels, so the evaluation loss shows what the control learnt.
    """

    def __init__(self, tokenizer, data_args, seed: int):
        self.masker = DataCollatorForLanguageModeling(
            tokenizer, mlm_probability=data_args.mlm_probability, whole_word_mask=data_args.whole_word_mask
        )
        self.pad = DataCollatorForTokenClassification(tokenizer)  # pads input_ids, attention_mask, and labels with -100
        self.seed = seed
        self.shuffle_labels = bool(getattr(data_args, "shuffle_labels", False))
        self.epoch = 0
        self._epoch_begun = False  # in the current train() call

    def on_train_begin(self, args, state, control, **kwargs):
        self._epoch_begun = False

    def on_epoch_begin(self, args, state, control, **kwargs):
        # The first epoch of a train() call: state.epoch is the progress so far, an integer, or a fraction when
        # resuming mid-epoch. Each later epoch is one more: state.epoch cannot say, since a stream that ends before
        # --max_steps leaves it below 1 (its epoch length is counted as max_steps), so its next pass would be
        # masked as the first.
        self.epoch = self.epoch + 1 if self._epoch_begun else int(state.epoch or 0)
        self._epoch_begun = True

    def _mask(self, example: dict, stream: int, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(input_ids, labels) of one example, masked with its own generator; each (T,)."""
        generator = seeded_generator(self.seed, stream + 1, index)
        optional = {k: torch.tensor([example[k]]) for k in ("special_tokens_mask", "offset_mapping") if k in example}
        inputs, labels = mask_tokens(self.masker, torch.tensor([example["input_ids"]]), generator, **optional)
        return inputs[0], labels[0]

    def mask_inputs(self, example: dict, stream: int, index: int) -> torch.Tensor:
        """The model inputs of `example` masked as in `stream` (an epoch), a (T,) tensor."""
        return self._mask(example, stream, index)[0]

    def mask_example(self, example: dict, stream: int, index: int) -> dict:
        inputs, labels = self._mask(example, stream, index)
        return {"input_ids": inputs.tolist(), "attention_mask": attention_of(example), "labels": labels.tolist()}

    def __call__(self, features):
        if "labels" in features[0]:  # masked once already (the validation set): only pad
            return self.pad(features)
        masked = [self._mask(f, self.epoch, f[EXAMPLE_INDEX]) for f in features]
        if self.shuffle_labels:
            indices = (f[EXAMPLE_INDEX] for f in features)
            generator = seeded_generator(SHUFFLE_STREAM, self.seed, self.epoch + 1, *indices)
            labels = shuffled_targets([labels for _, labels in masked], generator)
            masked = [(inputs, shuffled) for (inputs, _), shuffled in zip(masked, labels)]
        if len({len(inputs) for inputs, _ in masked}) == 1:  # equal lengths (concatenated texts): nothing to pad
            input_ids = torch.stack([inputs for inputs, _ in masked])  # (B, T)
            return {"input_ids": input_ids, "attention_mask": torch.tensor([attention_of(f) for f in features]),
                    "labels": torch.stack([labels for _, labels in masked])}
        return self.pad([{"input_ids": inputs.tolist(), "attention_mask": attention_of(f), "labels": labels.tolist()}
                         for f, (inputs, labels) in zip(features, masked)])


def attention_of(example: dict) -> list:
    """The example's own attention mask (0 at the padding of --pad_to_max_length), or all ones."""
    return list(example.get("attention_mask") or [1] * len(example["input_ids"]))


def mask_once(dataset: datasets.Dataset, collator: MLMCollator, first_index: int = 0) -> datasets.Dataset:
    """Mask an evaluation set once, with fixed seeds (and cached by `datasets`).

    The Trainer would otherwise draw new masks at every evaluation; fixed masks make evaluations comparable
    across checkpoints, runs and model variants. `first_index`: the index of the dataset's first sequence in the
    whole validation split (--skip_eval_samples), which seeds its masks, so a sequence is masked alike whatever
    part of the split is evaluated.
    """
    return dataset.map(
        lambda example, index: collator.mask_example(example, EVAL_MASK_STREAM, first_index + index),
        with_indices=True, remove_columns=dataset.column_names, desc="Masking the validation set",
    )


def with_example_index(dataset):
    """The training set with its EXAMPLE_INDEX column, from which MLMCollator seeds each example's masks."""
    if isinstance(dataset, datasets.IterableDataset):
        return dataset.map(lambda example, index: {EXAMPLE_INDEX: index}, with_indices=True)
    return dataset.add_column(EXAMPLE_INDEX, list(range(len(dataset))))
