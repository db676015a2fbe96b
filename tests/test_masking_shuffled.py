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
