"""The shuffled-label control of MLMCollator (run_mlm --shuffle_labels): the same masks, the same targets, at
random positions."""

from types import SimpleNamespace

import numpy as np
import torch

from hf_minattn.masking import EXAMPLE_INDEX, MLMCollator, seeded_generator, shuffled_targets


def test_shuffled_targets_permute_the_masked_targets_across_the_batch_by_hand():
    labels = [torch.tensor([-100, 7, -100, 8]), torch.tensor([9, -100, -100]), torch.tensor([-100, 10])]
    out = shuffled_targets(labels, seeded_generator(3))
    assert [len(l) for l in out] == [4, 3, 2]
    flat = torch.cat(out)
    assert (flat == -100).tolist() == (torch.cat(labels) == -100).tolist()  # the same positions are predicted
    assert sorted(flat[flat != -100].tolist()) == [7, 8, 9, 10]  # the same targets
    again = shuffled_targets(labels, seeded_generator(3))
    assert all(torch.equal(a, b) for a, b in zip(out, again))
    assert labels[0].tolist() == [-100, 7, -100, 8]  # the inputs are left alone


def collators(tokenizer, seed=0):
    args = dict(mlm_probability=0.3, whole_word_mask=False)
    return (MLMCollator(tokenizer, SimpleNamespace(**args), seed),
            MLMCollator(tokenizer, SimpleNamespace(**args, shuffle_labels=True), seed))


def batch(tokenizer, rows=16, length=24):
    generator = np.random.default_rng(0)
    ids = generator.integers(5, len(tokenizer), size=(rows, length)).tolist()
    return [{"input_ids": row, EXAMPLE_INDEX: i} for i, row in enumerate(ids)]


def test_the_control_masks_as_the_normal_collator_and_keeps_the_targets_but_not_their_places(tokenizer_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    normal, control = collators(tokenizer)
    features = batch(tokenizer)
    a, b = normal(features), control(features)
    assert torch.equal(a["input_ids"], b["input_ids"])  # identical masks and replacements
    assert torch.equal(a["labels"] == -100, b["labels"] == -100)
    masked = a["labels"] != -100
    assert sorted(a["labels"][masked].tolist()) == sorted(b["labels"][masked].tolist())
    # a permutation of about 100 targets over 16 sequences: few stay in place
    assert (a["labels"][masked] == b["labels"][masked]).float().mean() < 0.2
    assert torch.equal(control(features)["labels"], b["labels"])  # deterministic per (seed, epoch, indices)
    assert not torch.equal(collators(tokenizer, seed=1)[1](features)["labels"], b["labels"])


def test_the_ids_ever_masked_in_are_those_the_training_collator_feeds(tokenizer_dir):
    """`input_ids_ever_masked_in` (the rows that could get a gradient, for the drift probe) replays the masking of
    every epoch: it holds exactly the ids of the training batches the collator makes, random replacements included,
    and a new epoch's draws can add ids."""
    import datasets
    from transformers import AutoTokenizer

    from hf_minattn.experiments.evaluation import Splits, input_ids_ever_masked_in

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    rows = batch(tokenizer, rows=12, length=20)
    train = datasets.Dataset.from_list([{"input_ids": row["input_ids"]} for row in rows])
    args = SimpleNamespace(mlm_probability=0.3, whole_word_mask=False)
    splits = Splits(train, None, tokenizer, args)
    collator = MLMCollator(tokenizer, args, seed=4)
    fed = set()
    for epoch in range(2):
        collator.epoch = epoch
        fed |= set(collator(rows)["input_ids"].flatten().tolist())
        seen = input_ids_ever_masked_in(splits, seed=4, epochs=epoch + 1, vocab_size=len(tokenizer))
        assert set(np.flatnonzero(seen).tolist()) == fed
    assert fed - {i for row in rows for i in row["input_ids"]}  # random replacements are among them
