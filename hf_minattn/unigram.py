"""The unigram floor: the masked-LM loss of a model that knows only how often each token occurs.

A masked-LM first learns the output bias, i.e. token frequencies, and reaches the unigram cross-entropy before it
uses any context; its loss is only evidence of learning language once it is below that floor. Every evaluation
therefore reports the floor of its own vocabulary on its own masked tokens, beside the model's loss.
"""

from dataclasses import dataclass

import datasets
import numpy as np


@dataclass
class UnigramFloor:
    """Add-one smoothed token frequencies of a training set: `log_probs[i]` = log((count_i + 1) / (N + V))."""

    log_probs: np.ndarray  # (V,)
    num_tokens: int  # N: the tokens counted

    @classmethod
    def from_token_ids(cls, batches, vocab_size: int) -> "UnigramFloor":
        """Count the ids of an iterable of id sequences (or arrays), e.g. the training sequences' tokens that can be
        masked (special tokens left out)."""
        counts = np.zeros(vocab_size, dtype=np.int64)
        for ids in batches:
            ids = _check_ids(ids, vocab_size)
            counts += np.bincount(ids, minlength=vocab_size)
        total = int(counts.sum())
        return cls(log_probs=np.log((counts + 1) / (total + vocab_size)), num_tokens=total)

    @classmethod
    def from_dataset(cls, dataset, vocab_size: int, batch_size: int = 1000, stream_sequences: int = 10_000) -> "UnigramFloor":
        """From a tokenized `datasets.Dataset` with `input_ids` and, if present, `special_tokens_mask` (the tokens
        the masking never picks, which are not counted). Of a stream (an IterableDataset), the first
        `stream_sequences` sequences are counted."""
        if isinstance(dataset, datasets.IterableDataset):
            dataset = datasets.Dataset.from_list(list(dataset.take(stream_sequences)))
        has_mask = "special_tokens_mask" in dataset.column_names

        def maskable(batch):
            for ids, special in zip(batch["input_ids"], batch["special_tokens_mask"] if has_mask else batch["input_ids"]):
                ids = np.asarray(ids)
                yield ids[np.asarray(special) == 0] if has_mask else ids

        columns = ["input_ids", "special_tokens_mask"] if has_mask else ["input_ids"]
        return cls.from_token_ids(
            (ids for batch in dataset.select_columns(columns).iter(batch_size=batch_size) for ids in maskable(batch)),
            vocab_size,
        )

    def entropy(self) -> float:
        """The entropy of the smoothed unigram distribution, in nats."""
        return float(-(np.exp(self.log_probs) * self.log_probs).sum())

    def cross_entropy(self, targets) -> float:
        """Mean -log p(target) over the given target ids (e.g. the masked tokens of an evaluation), in nats."""
        targets = _check_ids(targets, len(self.log_probs))  # a -100 (no label) would read log_probs[-100] silently
        if targets.size == 0:
            raise ValueError("cross_entropy needs at least one target token")
        return float(-self.log_probs[targets].mean())


def _check_ids(ids, vocab_size: int) -> np.ndarray:
    """`ids` as a flat int64 array; a ValueError naming one outside [0, vocab_size)."""
    ids = np.asarray(ids, dtype=np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"token id {int(ids.max() if ids.max() >= vocab_size else ids.min())} is outside "
                         f"[0, vocab_size={vocab_size})")
    return ids
