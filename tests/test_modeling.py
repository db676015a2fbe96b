"""The MinAttn config, model, heads and their Hugging Face integration."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    Trainer,
    TrainingArguments,
    default_data_collator,
    pipeline,
    set_seed,
)

from conftest import TEXTS, padded_batch, tiny_config
from hf_minattn import (
    MinAttnConfig,
    MinAttnForMaskedLM,
    MinAttnForSequenceClassification,
    MinAttnForTokenClassification,
    MinAttnModel,
    train_tokenizer,
)

VARIANTS = {
    "default": {},
    "attention_only": {"intermediate_size": 0},
    "identity_qkv": {"qkv_projection": "identity"},
    "sinusoidal": {"position_embedding_type": "sinusoidal"},
    "no_positions": {"position_embedding_type": "none"},
    "post_norm": {"norm_placement": "post"},
    "identity_attention_only_post": {"qkv_projection": "identity", "intermediate_size": 0, "norm_placement": "post"},
}


# ---------------------------------------------------------------- config


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("hidden_size", 30, "divisible by num_attention_heads"),
        ("hidden_size", 0, "hidden_size must be a positive integer"),
        ("num_hidden_layers", -1, "num_hidden_layers must be a positive integer"),
        ("vocab_size", 2.5, "vocab_size must be a positive integer"),
        ("intermediate_size", -3, "intermediate_size must be a non-negative integer"),
        ("position_embedding_type", "rotary", "position_embedding_type must be one of"),
        ("norm_placement", "sandwich", "norm_placement must be one of"),
        ("qkv_projection", "random", "qkv_projection must be one of"),
        ("hidden_act", "swishy", "hidden_act must be one of"),
        ("hidden_dropout_prob", 1.5, "hidden_dropout_prob must be a probability in [0, 1]"),
        ("attention_probs_dropout_prob", -0.1, "attention_probs_dropout_prob must be a probability"),
        ("layer_norm_eps", 0, "layer_norm_eps must be a positive number"),
        ("mask_token_id", 500, "mask_token_id must be an id in [0, vocab_size=99)"),
        ("pad_token_id", True, "pad_token_id must be an id in [0, vocab_size=99) or None"),  # a bool is no id
        # NaN compares False with every bound and inf passes "above 0": every float field must be finite
        ("layer_norm_eps", float("nan"), "layer_norm_eps must be a finite number"),
        ("rope_theta", float("inf"), "rope_theta must be a finite number"),
        ("initializer_range", float("nan"), "initializer_range must be a finite number"),
        ("qk_logit_init_std", float("inf"), "qk_logit_init_std must be a finite number"),
        ("hidden_dropout_prob", float("nan"), "hidden_dropout_prob must be a finite number"),
        ("classifier_dropout", float("-inf"), "classifier_dropout must be a finite number"),
        ("problem_type", "regresion", "problem_type must be one of ('regression', 'single_label_classification', "
                                      "'multi_label_classification') or None"),  # was binary cross-entropy
        ("num_labels", 0, "num_labels must be an integer of at least 1"),  # was a classifier with no outputs
        ("num_labels", -1, "num_labels must be an integer of at least 1"),  # the base class made it 0
        # checked before the base class, whose token-id check failed on it naming no field
        ("vocab_size", "8192", "vocab_size must be a positive integer"),
        ("hidden_act", ["gelu"], "hidden_act must be one of"),  # was "unhashable type: 'list'"
        ("dtype", "float99", "dtype must name a torch dtype"),  # was torch's AttributeError, from the base class
        ("torch_dtype", "auto", "torch_dtype must name a torch dtype"),
        # an int too large for a float: the model failed with OverflowError when built
        pytest.param("rope_theta", 10**400, "rope_theta must be a finite number", id="rope_theta-10**400"),
        pytest.param("layer_norm_eps", 10**400, "layer_norm_eps must be a finite number", id="layer_norm_eps-10**400"),
    ],
)
def test_invalid_config_names_field_and_value(field, value, message):
    with pytest.raises(ValueError) as error:
        tiny_config(**{field: value})
    assert message in str(error.value)
    assert field in str(error.value) and str(value) in str(error.value)


@pytest.mark.parametrize("field", ["id2label", "label2id"])
def test_a_label_map_that_is_no_dict_is_named(field):
    """The base class failed with "'list' object has no attribute 'items'"."""
    with pytest.raises(TypeError, match=rf"MinAttnConfig\.{field} must be a dict such as .*, got a list"):
        tiny_config(**{field: ["NEGATIVE", "POSITIVE"]})
    assert tiny_config(id2label={0: "NEGATIVE", 1: "POSITIVE"}, dtype="bfloat16").num_labels == 2


@pytest.mark.parametrize("overrides, message", [
    ("hidden_size=30", "divisible by num_attention_heads"),  # validated after the edit, as the constructor does
    ("position_embedding_type=rotary", "position_embedding_type must be one of"),
    ("hidden_size=abc", "config override 'hidden_size=abc'"),
    ("hidden_size", "config override 'hidden_size': expected key=value"),
    ("no_such_field=1", "no_such_field"),
    ("rope_theta=nan", "rope_theta must be a finite number, got nan"),
    ("layer_norm_eps=inf", "layer_norm_eps must be a finite number, got inf"),
    ("problem_type=regresion", "problem_type must be one of"),
    ("num_labels=0", "num_labels must be an integer of at least 1 (the classifier's outputs), got 0"),
    ("num_labels=-2", "num_labels must be an integer of at least 1 (the classifier's outputs), got -2"),
])
def test_every_edit_is_validated(overrides, message):
    config = tiny_config()
    with pytest.raises(ValueError, match=re.escape(message)):
        config.update_from_string(overrides)
    with pytest.raises(ValueError, match="divisible by num_attention_heads"):
        tiny_config().update({"num_attention_heads": 5})
    edited = tiny_config()
    edited.update_from_string("intermediate_size=0,qkv_projection=identity")
    assert edited.intermediate_size == 0 and edited.qkv_projection == "identity"


@pytest.mark.parametrize("edit", [
    lambda config: config.update({"hidden_size": 30}),  # refused by validation, after the base class set it
    lambda config: config.update_from_string("intermediate_size=0,hidden_size=30"),  # the first entry was fine
    lambda config: config.update_from_string("intermediate_size=0,hidden_size=abc"),  # the second cannot be parsed
    lambda config: config.update_from_string("intermediate_size=0,no_such_field=1"),
])
def test_a_refused_edit_leaves_the_config_as_it_was(edit):
    config = tiny_config()
    before = config.to_dict()
    with pytest.raises(ValueError):
        edit(config)
    assert config.to_dict() == before
    assert MinAttnModel(config).config.hidden_size == 36  # still a config a model can be built from


def test_overrides_set_fields_that_are_none():
    """A field that defaults to None (classifier_dropout) or was set to None (a special token id) takes a JSON value
    from --config_overrides; the base class, which parses by the current value's type, refused any."""
    config = tiny_config(pad_token_id=None)
    config.update_from_string("classifier_dropout=0.25,pad_token_id=5")
    assert config.classifier_dropout == 0.25 and config.pad_token_id == 5
    with pytest.raises(ValueError, match=re.escape("classifier_dropout must be a probability in [0, 1], got 'high'")):
        tiny_config().update_from_string("classifier_dropout=high")


def test_overrides_set_the_fields_that_may_be_none_to_none():
    """"null" (or "None") sets a special token id, classifier_dropout or problem_type to None, as the error of
    resize_token_embeddings tells users to do; the base class parsed it as an int ("invalid literal for int()"). A
    field that may not be None still refuses it."""
    config = tiny_config(classifier_dropout=0.2, problem_type="regression")
    config.update_from_string("pad_token_id=null,mask_token_id=None,classifier_dropout=null,problem_type=null")
    assert (config.pad_token_id, config.mask_token_id, config.classifier_dropout, config.problem_type) == (None,) * 4
    assert config.cls_token_id == 2  # the others untouched
    config.update_from_string("pad_token_id=0")  # and back to an id
    assert config.pad_token_id == 0
    with pytest.raises(ValueError, match=re.escape("config override 'hidden_size=null'")):
        config.update_from_string("hidden_size=null")


@pytest.mark.parametrize("num_labels", [0, -1])
def test_a_classifier_without_labels_is_refused_at_load(tmp_path, num_labels):
    MinAttnForMaskedLM(tiny_config()).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=f"num_labels must be an integer of at least 1.*got {num_labels}"):
        AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=num_labels)
    with pytest.raises(ValueError, match=re.escape(f"got {num_labels}")):
        tiny_config().update({"num_labels": num_labels})


@pytest.mark.parametrize("override, message", [
    ({"hidden_size": 7}, "hidden_size (7) must be divisible by num_attention_heads"),
    ({"position_embedding_type": "alibi"}, "position_embedding_type must be one of"),
    ({"hidden_dropout_prob": 5.0}, "hidden_dropout_prob must be a probability in [0, 1], got 5.0"),
])
def test_overrides_given_at_load_are_validated(tmp_path, override, message):
    """from_pretrained(folder, field=value) and from_dict set the overrides after __init__ validated: an invalid one
    was accepted, saved, and the saved config no longer loaded."""
    tiny_config().save_pretrained(tmp_path)
    for load in (MinAttnConfig.from_pretrained, AutoConfig.from_pretrained):
        with pytest.raises(ValueError, match=re.escape(message)):
            load(tmp_path, **override)
    with pytest.raises(ValueError, match=re.escape(message)):
        MinAttnConfig.from_dict(tiny_config().to_dict(), **override)
    with pytest.raises(ValueError, match=re.escape(message)):
        AutoModel.from_pretrained(tmp_path, **override)
    assert MinAttnConfig.from_pretrained(tmp_path, hidden_size=72).hidden_size == 72  # a valid one still applies
    config, unused = MinAttnConfig.from_pretrained(tmp_path, hidden_size=72, return_unused_kwargs=True, unknown=1)
    assert config.hidden_size == 72 and unused == {"unknown": 1}


def test_a_field_assigned_directly_is_validated_when_the_model_is_built():
    config = tiny_config()
    config.num_attention_heads = 5  # plain attribute assignment: no update() to validate it
    for model_class in (MinAttnModel, MinAttnForMaskedLM):
        with pytest.raises(ValueError, match=re.escape("num_attention_heads (5)")):
            model_class(config)
    config.num_attention_heads = 4
    assert MinAttnModel(config).config.num_attention_heads == 4


def test_config_round_trip_and_explicit_tying(tmp_path):
    config = tiny_config(qkv_projection="identity", intermediate_size=0, tie_word_embeddings=True)
    config.save_pretrained(tmp_path)
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(loaded, MinAttnConfig)
    assert loaded.to_diff_dict() == config.to_diff_dict()
    assert json.loads((tmp_path / "config.json").read_text())["tie_word_embeddings"] is True


# ---------------------------------------------------------------- shapes and variants


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_output_shapes_every_variant(variant):
    config = tiny_config(**VARIANTS[variant])
    model = MinAttnModel(config).eval()
    input_ids, attention_mask = padded_batch()
    out = model(input_ids, attention_mask=attention_mask, output_hidden_states=True, output_attentions=True)
    assert out.last_hidden_state.shape == (2, 9, 36)
    assert len(out.hidden_states) == config.num_hidden_layers + 1
    assert all(h.shape == (2, 9, 36) for h in out.hidden_states)
    assert len(out.attentions) == config.num_hidden_layers
    assert all(a.shape == (2, 4, 9, 9) for a in out.attentions)
    # each query's attention is a distribution over the real (unpadded) keys
    torch.testing.assert_close(out.attentions[0].sum(-1), torch.ones(2, 4, 9))
    assert out.attentions[0][1, :, :, 5:].abs().max() == 0

    mlm = MinAttnForMaskedLM(config).eval()
    assert mlm(input_ids, attention_mask=attention_mask).logits.shape == (2, 9, 99)
    classifier = MinAttnForSequenceClassification(tiny_config(num_labels=3, **VARIANTS[variant])).eval()
    assert classifier(input_ids, attention_mask=attention_mask).logits.shape == (2, 3)


def test_attention_only_and_identity_have_no_such_parameters():
    names = {n for n, _ in MinAttnModel(tiny_config(intermediate_size=0, qkv_projection="identity")).named_parameters()}
    assert not any("mlp" in n or "qkv_proj" in n for n in names)
    assert any("o_proj" in n for n in names)


def test_attention_is_not_causal():
    """An encoder: changing the last token changes the first token's output (sdpa would default to causal)."""
    model = MinAttnModel(tiny_config()).eval()
    input_ids, _ = padded_batch()
    changed = input_ids.clone()
    changed[0, -1] = (changed[0, -1] + 1) % 99
    assert not torch.allclose(model(changed).last_hidden_state[0, 0], model(input_ids).last_hidden_state[0, 0])


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("positions", ["learned", "rope"])
def test_padding_does_not_change_real_tokens(implementation, positions):
    model = MinAttnModel(tiny_config(position_embedding_type=positions, hidden_size=32)).eval()
    model.set_attn_implementation(implementation)
    input_ids, attention_mask = padded_batch()
    padded = model(input_ids, attention_mask=attention_mask).last_hidden_state[1, :5]
    alone = model(input_ids[1:, :5]).last_hidden_state[0]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=0)


# ---------------------------------------------------------------- the accessor used by the probes


def test_head_weights_reproduce_the_attention_pattern():
    """Rebuild layer 0's attention weights from get_head_weights() and compare with the model's own."""
    config = tiny_config(qkv_bias=False, position_embedding_type="none", norm_placement="post")
    model = MinAttnModel(config).eval()
    input_ids = torch.randint(5, 99, (1, 7))
    out = model(input_ids, output_hidden_states=True, output_attentions=True)
    x = out.hidden_states[0][0]  # (T, C): the input of layer 0 (post-norm: no norm before attention)
    W = model.get_head_weights()[0]
    q = torch.einsum("hdc,tc->htd", W["W_Q"], x)
    k = torch.einsum("hdc,tc->htd", W["W_K"], x)
    expected = torch.softmax(q @ k.transpose(1, 2) / (36 // 4) ** 0.5, dim=-1)
    torch.testing.assert_close(out.attentions[0][0], expected, atol=1e-5, rtol=0)
    # and W_O, W_V give the layer's attention output (before the residual and norm)
    v = torch.einsum("hdc,tc->htd", W["W_V"], x)
    z = expected @ v  # (H, T, D)
    moved = torch.einsum("hcd,htd->tc", W["W_O"], z) + model.layers[0].attention.o_proj.bias
    attended, _ = model.layers[0].attention(x[None])
    torch.testing.assert_close(moved, attended[0], atol=1e-5, rtol=0)


def test_head_weights_identity_variant():
    model = MinAttnModel(tiny_config(qkv_projection="identity"))
    W = model.get_head_weights()
    assert len(W) == 2
    assert W[0]["W_Q"].shape == (4, 9, 36) and W[0]["W_O"].shape == (4, 36, 9)
    # head h reads exactly its own 9 channels
    torch.testing.assert_close(W[0]["W_Q"].reshape(36, 36), torch.eye(36))
    assert W[0]["W_K"] is W[0]["W_Q"]


# ---------------------------------------------------------------- gradients and training


def test_every_embedding_and_projection_gets_a_gradient():
    model = MinAttnForMaskedLM(tiny_config())
    input_ids = torch.randint(5, 99, (3, 11))
    labels = input_ids.clone()
    labels[:, ::2] = -100
    model(input_ids, labels=labels).loss.backward()
    embeddings = model.minattn.embeddings
    assert embeddings.word_embeddings.weight.grad.abs().sum() > 0
    assert embeddings.position_embeddings.weight.grad[:11].abs().sum() > 0
    for layer, grads in enumerate(model.get_head_weights(grad=True)):
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            for head in range(4):
                assert grads[name][head].abs().sum() > 0, (layer, name, head)


def test_identity_variant_has_no_qkv_gradients_but_trains_the_rest():
    model = MinAttnForMaskedLM(tiny_config(qkv_projection="identity"))
    input_ids = torch.randint(5, 99, (3, 11))
    model(input_ids, labels=input_ids).loss.backward()
    for grads in model.get_head_weights(grad=True):
        assert grads["W_Q"] is None and grads["W_K"] is None and grads["W_V"] is None
        assert grads["W_O"].abs().sum() > 0
    assert model.minattn.embeddings.word_embeddings.weight.grad.abs().sum() > 0


def test_num_items_in_batch_turns_the_mean_into_a_sum_over_the_step():
    """The Trainer's num_items_in_batch: the loss is summed over this micro-batch and divided by the labelled
    tokens of the whole step (sparse and dense heads alike; their equality is in test_fast_paths.py)."""
    input_ids = torch.randint(5, 99, (2, 10))
    labels = torch.full_like(input_ids, -100)
    labels[0, 3], labels[1, 0], labels[1, 7] = 11, 12, 13
    for sparse_prediction in (False, True):
        model = MinAttnForMaskedLM(tiny_config(sparse_prediction=sparse_prediction)).eval()
        mean = model(input_ids, labels=labels).loss
        with_items = model(input_ids, labels=labels, num_items_in_batch=torch.tensor(6))
        torch.testing.assert_close(with_items.loss, mean * 3 / 6)


@pytest.mark.parametrize("configured", [False, True])
def test_the_sparse_prediction_argument_overrides_the_config_for_one_call(configured):
    """forward(sparse_prediction=...) decides the logits' shape for that call, None takes the config's value, and the
    config is left as it was."""
    input_ids = torch.randint(5, 99, (2, 10))
    labels = torch.full_like(input_ids, -100)
    labels[0, 3], labels[1, 0], labels[1, 7] = 11, 12, 13
    model = MinAttnForMaskedLM(tiny_config(sparse_prediction=configured)).eval()
    shapes = {True: (3, 99), False: (2, 10, 99)}
    for argument, expected in ((None, shapes[configured]), (True, shapes[True]), (False, shapes[False])):
        assert model(input_ids, labels=labels, sparse_prediction=argument).logits.shape == expected
    assert model.config.sparse_prediction is configured


# How each head is labelled in the accumulation test: per token (odd real positions), or one class per text.
HEAD_LABELS = {
    MinAttnForMaskedLM: lambda ids, mask, row: [t if real and i % 2 == 1 else -100
                                                for i, (t, real) in enumerate(zip(ids, mask))],
    MinAttnForTokenClassification: lambda ids, mask, row: [i % 3 if real and i % 2 == 1 else -100
                                                           for i, real in enumerate(mask)],
    MinAttnForSequenceClassification: lambda ids, mask, row: row % 3,
}


@pytest.mark.parametrize("head", HEAD_LABELS, ids=lambda head: head.__name__)
def test_gradient_accumulation_matches_one_big_batch(tmp_path, tokenizer, head):
    """Two micro-batches of 2 with accumulation must take the same step as one batch of 4, although the
    micro-batches hold different numbers of labelled tokens (a mean per micro-batch would weight them wrongly). The
    classifier's loss is a mean per batch: the Trainer must divide it by the accumulation steps (it did not, since
    the forward takes **kwargs, and the accumulated step was twice as long)."""
    texts = ["the king", "the king and the queen ruled the kingdom", "a dog", "a dog barked at the cat"]
    encodings = tokenizer(texts, padding="max_length", max_length=16)
    dataset = [{"input_ids": ids, "attention_mask": mask, "labels": HEAD_LABELS[head](ids, mask, row)}
               for row, (ids, mask) in enumerate(zip(encodings["input_ids"], encodings["attention_mask"]))]
    if head is not MinAttnForSequenceClassification:
        assert len({sum(l != -100 for l in example["labels"]) for example in dataset}) > 1

    def train(batch_size, accumulation):
        set_seed(0)
        model = head(tiny_config(vocab_size=len(tokenizer), num_labels=3))
        args = TrainingArguments(
            output_dir=str(tmp_path / f"b{batch_size}"), per_device_train_batch_size=batch_size,
            gradient_accumulation_steps=accumulation, max_steps=1, report_to=[], save_strategy="no",
            use_cpu=True, seed=0, bf16=False, max_grad_norm=0.0,
        )
        # plain SGD: the update is the gradient itself, so any loss-scaling error shows up
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=default_data_collator,
                          optimizers=(optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)))
        trainer.train()
        return model.minattn.embeddings.word_embeddings.weight.detach().clone()

    set_seed(0)
    initial = head(tiny_config(vocab_size=len(tokenizer), num_labels=3)).minattn.embeddings.word_embeddings.weight
    big, accumulated = train(4, 1), train(2, 2)
    assert not torch.allclose(big, initial)  # the step did something
    torch.testing.assert_close(big, accumulated, atol=1e-6, rtol=1e-5)


def test_loss_falls_when_overfitting_one_batch():
    model = MinAttnForMaskedLM(tiny_config())
    input_ids = torch.randint(5, 99, (4, 12))
    labels = input_ids.clone()
    masked = input_ids.clone()
    masked[:, ::3] = 4
    labels[:, 1::3] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        loss = model(masked, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


def test_gradient_checkpointing_gives_same_gradients():
    config = tiny_config()
    plain, checkpointed = MinAttnForMaskedLM(config), MinAttnForMaskedLM(config)
    checkpointed.load_state_dict(plain.state_dict())
    checkpointed.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    assert checkpointed.minattn.layers[0].gradient_checkpointing
    input_ids = torch.randint(5, 99, (2, 9))
    for model in (plain, checkpointed):
        model.train()
        model(input_ids, labels=input_ids).loss.backward()
    for (name, a), (_, b) in zip(plain.named_parameters(), checkpointed.named_parameters()):
        torch.testing.assert_close(a.grad, b.grad, msg=name)


def test_sequence_classification_trains():
    model = MinAttnForSequenceClassification(tiny_config(num_labels=2))
    input_ids, attention_mask = padded_batch()
    out = model(input_ids, attention_mask=attention_mask, labels=torch.tensor([0, 1]))
    out.loss.backward()
    assert torch.isfinite(out.loss) and model.classifier.weight.grad.abs().sum() > 0


def test_token_classification_loss_is_the_mean_over_labelled_tokens():
    """One class per token; -100 (padding, special tokens) is left out of the mean, and with the Trainer's
    num_items_in_batch the loss is the sum over this micro-batch divided by the whole batch's count."""
    model = MinAttnForTokenClassification(tiny_config(num_labels=5)).eval()
    input_ids, attention_mask = padded_batch()
    labels = torch.randint(0, 5, (2, 9))
    labels[1, 5:] = -100
    labels[0, 0] = -100
    out = model(input_ids, attention_mask=attention_mask, labels=labels)
    assert out.logits.shape == (2, 9, 5)
    kept = labels != -100
    torch.testing.assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits[kept], labels[kept]))
    summed = model(input_ids, attention_mask=attention_mask, labels=labels, num_items_in_batch=40).loss
    torch.testing.assert_close(summed, out.loss * kept.sum() / 40)


@pytest.mark.parametrize("head, labels, message", [
    (MinAttnForTokenClassification, torch.full((2, 9), 3), "labels holds class 3, outside [0, num_labels=3)"),
    (MinAttnForTokenClassification, torch.full((2, 9), -2), "labels holds class -2, outside [0, num_labels=3)"),
    (MinAttnForTokenClassification, torch.zeros(2, dtype=torch.long), "labels has shape (2,), expected (2, 9)"),
    (MinAttnForSequenceClassification, torch.tensor([0, 7]), "labels holds class 7, outside [0, num_labels=3)"),
    (MinAttnForSequenceClassification, torch.zeros(2, 2, dtype=torch.long),
     "labels has shape (2, 2), expected (2,) or (2, 1) (one class index per sequence)"),
])
def test_class_labels_outside_the_classes_name_the_class(head, labels, message):
    """A class index the classifier does not have, or token labels of another shape, is a ValueError naming it, not
    torch's error from inside the loss; -100 (no label) is allowed."""
    model = head(tiny_config(num_labels=3)).eval()
    input_ids, attention_mask = padded_batch()
    with pytest.raises(ValueError, match=re.escape(message)):
        model(input_ids, attention_mask=attention_mask, labels=labels)
    fine = torch.full((2, 9), -100) if head is MinAttnForTokenClassification else torch.tensor([-100, 2])
    fine[0, ...] = 1
    assert torch.isfinite(model(input_ids, attention_mask=attention_mask, labels=fine).loss)


@pytest.mark.parametrize("bad, message", [
    (99, "labels holds token id 99, outside [0, vocab_size=99)"),
    (-3, "labels holds token id -3, outside [0, vocab_size=99)"),
])
@pytest.mark.parametrize("sparse", [False, True])
def test_masked_lm_labels_outside_the_vocabulary_name_the_token_id(bad, message, sparse):
    """A label id the vocabulary does not have is a ValueError naming it, as the classifiers' are, not an IndexError
    from inside the loss (a device-side assert on a GPU); -100 (no label) is allowed."""
    model = MinAttnForMaskedLM(tiny_config()).eval()
    input_ids, attention_mask = padded_batch()
    labels = torch.full((2, 9), -100)
    labels[0, 3] = 7
    assert torch.isfinite(model(input_ids, attention_mask=attention_mask, labels=labels, sparse_prediction=sparse).loss)
    labels[1, 2] = bad
    with pytest.raises(ValueError, match=re.escape(message)):
        model(input_ids, attention_mask=attention_mask, labels=labels, sparse_prediction=sparse)


@pytest.mark.parametrize("num_labels, labels, problem, loss", [
    (3, torch.tensor([0, 2]), "single_label_classification",
     lambda logits, y: torch.nn.functional.cross_entropy(logits, y)),
    (3, torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]), "multi_label_classification",
     lambda logits, y: torch.nn.functional.binary_cross_entropy_with_logits(logits, y)),
    (1, torch.tensor([0.5, -1.0]), "regression", lambda logits, y: torch.nn.functional.mse_loss(logits[:, 0], y)),
    # one target per sequence in a column: not broadcast against the (B,) predictions into a (B, B) difference
    (1, torch.tensor([[0.5], [-1.0]]), "regression",
     lambda logits, y: torch.nn.functional.mse_loss(logits[:, 0], y[:, 0])),
])
def test_the_classification_loss_follows_the_labels_as_berts_does(num_labels, labels, problem, loss):
    """Without a problem_type in the config, the labels choose the loss as in BERT: class ids cross-entropy,
    multi-hot floats binary cross-entropy (they used to go to cross-entropy and fail in torch), one output mean
    squared error; the choice is kept in the config."""
    model = MinAttnForSequenceClassification(tiny_config(num_labels=num_labels)).eval()
    input_ids, attention_mask = padded_batch()
    assert model.config.problem_type is None
    out = model(input_ids, attention_mask=attention_mask, labels=labels)
    assert model.config.problem_type == problem
    torch.testing.assert_close(out.loss, loss(out.logits, labels))


def test_a_problem_type_assigned_after_the_model_was_built_is_refused_by_name():
    """Assigned to the config of a built model, a misspelt problem_type is not validated; forward refuses it rather
    than falling through to binary cross-entropy, as any unknown name did."""
    model = MinAttnForSequenceClassification(tiny_config(num_labels=1)).eval()
    model.config.problem_type = "regresion"
    input_ids, attention_mask = padded_batch()
    with pytest.raises(ValueError, match=re.escape("config.problem_type must be one of ('regression', "
                                                   "'single_label_classification', 'multi_label_classification') "
                                                   "or None, got 'regresion'")):
        model(input_ids, attention_mask=attention_mask, labels=torch.tensor([0.5, -1.0]))
    assert model(input_ids, attention_mask=attention_mask).logits.shape == (2, 1)  # no labels: no loss to choose


def test_seeded_models_are_identical():
    set_seed(123)
    a = MinAttnForMaskedLM(tiny_config())
    set_seed(123)
    b = MinAttnForMaskedLM(tiny_config())
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    set_seed(124)
    c = MinAttnForMaskedLM(tiny_config())
    assert not torch.equal(a.minattn.embeddings.word_embeddings.weight, c.minattn.embeddings.word_embeddings.weight)


def test_residual_projections_use_scaled_init():
    model = MinAttnModel(tiny_config(num_hidden_layers=8, hidden_size=256, intermediate_size=512))
    std = model.config.initializer_range
    layer = model.layers[0]
    assert abs(layer.attention.qkv_proj.weight[2 * 256 :].std().item() - std) < 0.1 * std  # W_V; W_Q, W_K: test_levers
    assert abs(layer.attention.o_proj.weight.std().item() - std / 4) < 0.1 * std / 4  # sqrt(2 * 8) = 4
    assert abs(layer.mlp.down_proj.weight.std().item() - std / 4) < 0.1 * std / 4


# ---------------------------------------------------------------- saving, loading, pipelines


@pytest.mark.parametrize("variant", ["default", "sinusoidal"])
def test_save_load_round_trip_is_bit_exact_with_tied_weights_once(tmp_path, variant):
    model = MinAttnForMaskedLM(tiny_config(**VARIANTS[variant])).eval()
    assert model.lm_head.decoder.weight is model.minattn.embeddings.word_embeddings.weight
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert "minattn.embeddings.word_embeddings.weight" in keys
    assert "lm_head.decoder.weight" not in keys  # stored once

    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is MinAttnForMaskedLM
    assert loaded.lm_head.decoder.weight is loaded.minattn.embeddings.word_embeddings.weight
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name
    input_ids = torch.randint(5, 99, (2, 9))
    assert torch.equal(model(input_ids).logits, loaded(input_ids).logits)  # includes the sinusoid buffer


@pytest.mark.parametrize("size, pad_to_multiple_of, expected", [(109, None, 109), (84, None, 84), (5, None, 5),
                                                                  (99, 64, 128), (3, 8, 8)])
def test_a_resized_model_saves_and_loads_with_the_same_logits(tmp_path, size, pad_to_multiple_of, expected):
    """Grown (as transformers' common test: 10 more), shrunk (15 fewer; or down to the largest special id + 1), or
    padded to a multiple: the resized model saves, loads back through from_pretrained, and gives the same logits."""
    model = MinAttnForMaskedLM(tiny_config()).eval()
    model.resize_token_embeddings(size, pad_to_multiple_of=pad_to_multiple_of)
    assert model.config.vocab_size == model.lm_head.bias.shape[0] == expected
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    assert loaded.config.vocab_size == expected and loaded.config.mask_token_id == 4
    input_ids = torch.randint(0, min(expected, 99), (2, 9))
    with torch.no_grad():
        assert torch.equal(model(input_ids).logits, loaded(input_ids).logits)


def test_a_size_or_flag_of_the_wrong_type_is_named_not_passed_to_torch():
    model = MinAttnForMaskedLM(tiny_config())
    with pytest.raises(TypeError, match=r"new_num_tokens must be a whole number of tokens or None, got 3\.5"):
        model.resize_token_embeddings(3.5)  # torch's TypeError from nn.Embedding, before
    with pytest.raises(TypeError, match=r"pad_to_multiple_of must be a whole number of tokens or None, got '8'"):
        model.resize_token_embeddings(120, pad_to_multiple_of="8")
    input_ids = torch.randint(5, 99, (1, 6))
    with pytest.raises(TypeError, match=r"sparse_prediction must be True, False or None, got 'no'"):
        model(input_ids, labels=input_ids, sparse_prediction="no")  # was read as True: (6, V) logits
    assert model.config.vocab_size == 99 and model(input_ids, labels=input_ids, sparse_prediction=False).logits.dim() == 3
    with pytest.raises(TypeError, match=r"grad must be True or False, got 'no'"):
        model.get_head_weights(grad="no")


@pytest.mark.parametrize("size, pad_to_multiple_of, named", [(4, None, "mask_token_id=4"),
                                                             (2, None, "cls_token_id=2, sep_token_id=3, mask_token_id=4"),
                                                             (2, 3, "sep_token_id=3, mask_token_id=4")])
def test_resizing_below_a_special_id_is_refused_and_changes_nothing(size, pad_to_multiple_of, named):
    """A size that would leave a special token id outside the vocabulary (the config could then not be loaded
    again), also after rounding up to `pad_to_multiple_of`, raises a ValueError naming the ids and the smallest size
    allowed; weights and config stay as they were."""
    model = MinAttnForMaskedLM(tiny_config())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=re.escape(named) + ".*expected at least 5 tokens"):
        model.resize_token_embeddings(size, pad_to_multiple_of=pad_to_multiple_of)
    assert model.config.vocab_size == 99
    after = model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    model.config.mask_token_id = None  # a special token given up on purpose: then the size is allowed
    model.resize_token_embeddings(4)
    assert model.config.vocab_size == 4


def test_checkpoint_carries_code_and_complete_auto_map(tmp_path):
    MinAttnForMaskedLM(tiny_config()).save_pretrained(tmp_path)
    assert (tmp_path / "modeling_minattn.py").exists() and (tmp_path / "configuration_minattn.py").exists()
    auto_map = json.loads((tmp_path / "config.json").read_text())["auto_map"]
    assert auto_map == {
        "AutoConfig": "configuration_minattn.MinAttnConfig",
        "AutoModel": "modeling_minattn.MinAttnModel",
        "AutoModelForMaskedLM": "modeling_minattn.MinAttnForMaskedLM",
        "AutoModelForSequenceClassification": "modeling_minattn.MinAttnForSequenceClassification",
        "AutoModelForTokenClassification": "modeling_minattn.MinAttnForTokenClassification",
    }
    assert type(AutoModel.from_pretrained(tmp_path)) is MinAttnModel
    assert type(AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=2)).__name__ == (
        "MinAttnForSequenceClassification"
    )
    assert type(AutoModelForTokenClassification.from_pretrained(tmp_path, num_labels=2)).__name__ == (
        "MinAttnForTokenClassification"
    )


# hf_minattn made unimportable, as on a machine where only transformers is installed.
BLOCK_PACKAGE = textwrap.dedent(
    """
    import sys, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "hf_minattn" or name.startswith("hf_minattn."):
                raise ImportError("hf_minattn is blocked in this test")
    sys.meta_path.insert(0, Block())
    """
)
LOAD_WITHOUT_PACKAGE = BLOCK_PACKAGE + textwrap.dedent(
    """
    import json
    try:
        import hf_minattn
        raise SystemExit("hf_minattn should not be importable here")
    except ImportError:
        pass
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
    folder = sys.argv[1]
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    inputs = tokenizer(["the king and the queen"], return_tensors="pt")
    mlm = AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True).eval()
    base = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    with torch.no_grad():
        logits = mlm(**inputs).logits
        hidden = base(**inputs).last_hidden_state
    print(json.dumps({"mlm": type(mlm).__name__, "base": type(base).__name__, "module": type(mlm).__module__,
                      "logits": logits[0, 1, :5].tolist(), "hidden": hidden[0, 1, :5].tolist()}))
    """
)


@pytest.mark.slow
def test_loads_with_remote_code_where_package_is_not_importable(tmp_path, tokenizer):
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    script = tmp_path / "load.py"
    script.write_text(LOAD_WITHOUT_PACKAGE)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    result = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["mlm"] == "MinAttnForMaskedLM" and loaded["base"] == "MinAttnModel"
    assert loaded["module"].startswith("transformers_modules")  # the copied code, not the package
    inputs = tokenizer(["the king and the queen"], return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(torch.tensor(loaded["logits"]), model(**inputs).logits[0, 1, :5])
        torch.testing.assert_close(torch.tensor(loaded["hidden"]), model.minattn(**inputs).last_hidden_state[0, 1, :5])


def interop_snippet_without_package(folder: str) -> str:
    """The first python block of docs/interoperability.md that loads `folder` without importing hf_minattn."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "interoperability.md").read_text(encoding="utf-8")
    for code in re.findall(r"```python\n(.*?)```", page, re.DOTALL):
        if folder in code and "import hf_minattn" not in code:
            return code
    raise AssertionError(f"docs/interoperability.md has no snippet loading {folder} without hf_minattn")


@pytest.mark.slow
def test_the_documented_load_without_the_package_asks_nothing(tmp_path, tokenizer):
    """AutoTokenizer reads the folder's config (and its auto_map) first: without trust_remote_code=True it asked
    "Do you wish to run the custom code?" on the terminal. tests/test_docs.py runs the snippet with hf_minattn
    importable, where no flag is needed."""
    folder = tmp_path / "model"
    MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    code = BLOCK_PACKAGE + interop_snippet_without_package("outputs/minattn-wiki").replace("outputs/minattn-wiki",
                                                                                         str(folder))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "custom code" not in run.stdout + run.stderr
    assert "torch.Size([1, " in run.stdout


def test_trained_tokenizer_round_trip(tmp_path, tokenizer):
    assert [tokenizer.convert_ids_to_tokens(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert tokenizer.model_max_length == 24
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.is_fast and loaded.model_max_length == 24
    encoded = loaded("The king barked.")
    assert encoded["input_ids"][0] == 2 and encoded["input_ids"][-1] == 3
    assert encoded == tokenizer("The king barked.")
    assert "token_type_ids" not in encoded
    assert loaded.decode(encoded["input_ids"], skip_special_tokens=True) == "the king barked."


def test_wordpiece_training_keeps_the_same_vocabulary_every_time():
    """Texts full of equally frequent merges, which the tokenizers trainer alone breaks by hash-map order (7
    different vocabularies in 30 trainings of these): ours keeps one. The continuation forms handed to the trainer
    to fix its numbering are plain vocabulary afterwards, not special tokens matched in raw text."""
    texts = ["Wel come to the Tok en izers libr ary.", "Another tiny line with ties: abc abd abe acd ace bcd bce"] * 3
    vocabularies = {tuple(sorted(train_tokenizer(texts, vocab_size=60, min_frequency=1, show_progress=False)
                                 .get_vocab().items())) for _ in range(30)}
    assert len(vocabularies) == 1
    tokenizer = train_tokenizer(texts, vocab_size=60, min_frequency=1, show_progress=False)
    assert "##e" in tokenizer.get_vocab() and "##e" not in tokenizer.all_special_tokens
    assert "##e" not in tokenizer.tokenize("the ##e")  # as a special token it would be kept whole


def test_train_tokenizer_rejects_bad_input():
    with pytest.raises(ValueError, match="vocab_size.*got 3"):
        train_tokenizer(TEXTS, vocab_size=3)
    with pytest.raises(ValueError, match="no non-empty text"):
        train_tokenizer(["", "  "], vocab_size=50)
    with pytest.raises(TypeError, match="not a single string"):
        train_tokenizer("the king", vocab_size=50)


@pytest.mark.parametrize("arguments, error, message", [
    # were OverflowError, or a TypeError from inside the Rust trainer, naming no argument
    ({"min_frequency": -1}, ValueError, "min_frequency must be an integer in [0, 18446744073709551615]"),
    ({"min_frequency": "2"}, ValueError, "min_frequency must be an integer in [0, 18446744073709551615]"),
    ({"min_frequency": 2.5}, ValueError, "min_frequency must be an integer in [0, 18446744073709551615]"),
    ({"vocab_size": 2**64}, ValueError, "vocab_size must be an integer in [6, 16777216]"),
    ({"lowercase": "no"}, TypeError, "lowercase must be True or False, got 'no'"),
    ({"show_progress": None}, TypeError, "show_progress must be True or False, got None"),
    ({"texts": None}, TypeError, "texts must be an iterable of strings, got NoneType None"),
    # were dropped silently ("no non-empty text")
    ({"texts": [b"the king"]}, TypeError, "texts must hold strings (or None), got an item of type bytes: b'the king'"),
    ({"texts": [*TEXTS, 3]}, TypeError, "texts must hold strings (or None), got an item of type int: 3"),
])
def test_train_tokenizer_names_each_bad_argument(arguments, error, message):
    arguments = {"texts": TEXTS, "vocab_size": 50, "show_progress": False, **arguments}
    with pytest.raises(error, match=re.escape(message)):
        train_tokenizer(**arguments)


def test_train_tokenizer_skips_missing_texts():
    """None is a missing text of a dataset column (data.check_text_column lets it through): skipped, not refused."""
    with_none = train_tokenizer([None, *TEXTS, None], vocab_size=60, min_frequency=1, show_progress=False)
    assert with_none.get_vocab() == train_tokenizer(TEXTS, vocab_size=60, min_frequency=1, show_progress=False).get_vocab()


def test_fill_mask_and_feature_extraction_pipelines(tmp_path, tokenizer):
    set_seed(0)
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer)))
    # teach it one fact so that fill-mask has a right answer to find
    batch = tokenizer(["the king and the queen"] * 8, return_tensors="pt")
    labels = torch.full_like(batch["input_ids"], -100)
    queen = tokenizer.convert_tokens_to_ids("queen")
    position = batch["input_ids"][0].tolist().index(queen)
    labels[:, position] = queen
    batch["input_ids"][:, position] = tokenizer.mask_token_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(30):
        loss = model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)

    fill = pipeline("fill-mask", model=str(tmp_path), tokenizer=str(tmp_path))
    predictions = fill("the king and the [MASK]")
    assert predictions[0]["token_str"] == "queen"
    assert len(predictions) == 5 and predictions[0]["score"] > predictions[1]["score"]

    extract = pipeline("feature-extraction", model=str(tmp_path), tokenizer=str(tmp_path))
    features = extract("the king and the queen")
    n_tokens = len(tokenizer("the king and the queen")["input_ids"])
    assert torch.tensor(features).shape == (1, n_tokens, 36)


def test_token_classification_pipeline_labels_each_word(tmp_path, tokenizer):
    """A token-classification folder runs in transformers' pipeline, its labels named from the config's id2label:
    a model whose classifier always prefers class 1 tags every word of the sentence with that name."""
    model = MinAttnForTokenClassification(tiny_config(vocab_size=len(tokenizer), num_labels=3,
                                                      id2label={0: "O", 1: "ROYAL", 2: "ANIMAL"}))
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([0.0, 50.0, 0.0]))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    tagger = pipeline("token-classification", model=str(tmp_path), tokenizer=str(tmp_path))
    tags = tagger("the king and the queen")
    assert [tag["word"] for tag in tags] == ["the", "king", "and", "the", "queen"]
    assert {tag["entity"] for tag in tags} == {"ROYAL"}
    # grouped into entities with character offsets from the fast tokenizer: one span over the whole sentence
    grouped = pipeline("token-classification", model=str(tmp_path), tokenizer=str(tmp_path),
                       aggregation_strategy="simple")("the king and the queen")
    assert [(g["entity_group"], g["start"], g["end"]) for g in grouped] == [("ROYAL", 0, 22)]


# ---------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def small_model():
    return MinAttnForMaskedLM(tiny_config()).eval()


def test_out_of_range_id_names_the_id(small_model):
    with pytest.raises(ValueError, match=r"id 99, outside \[0, vocab_size=99\)"):
        small_model(torch.tensor([[5, 99, 6]]))
    with pytest.raises(ValueError, match=r"id -1"):
        small_model(torch.tensor([[5, -1, 6]]))


def test_too_long_sequence_names_both_lengths(small_model):
    with pytest.raises(ValueError, match="length 30 .*max_position_embeddings=24"):
        small_model(torch.randint(5, 99, (1, 30)))
    # without positions there is no limit
    MinAttnModel(tiny_config(position_embedding_type="none"))(torch.randint(5, 99, (1, 30)))


def test_mask_shape_mismatch(small_model):
    with pytest.raises(ValueError, match=r"attention_mask has shape \(1, 5\) but the input has shape \(1, 6\)"):
        small_model(torch.randint(5, 99, (1, 6)), attention_mask=torch.ones(1, 5))


def test_neither_or_both_inputs(small_model):
    with pytest.raises(ValueError, match="exactly one of input_ids or inputs_embeds.*neither"):
        small_model()
    with pytest.raises(ValueError, match="both"):
        small_model(torch.randint(5, 99, (1, 6)), inputs_embeds=torch.randn(1, 6, 36))
    # inputs_embeds alone works
    assert small_model(inputs_embeds=torch.randn(1, 6, 36)).logits.shape == (1, 6, 99)


def test_float_token_ids_and_an_empty_input_are_refused_by_name(small_model):
    """Token ids given as floats (a tensor built from a float list) and an input without tokens: a TypeError and a
    ValueError naming them, not torch's embedding or reshape errors."""
    with pytest.raises(TypeError, match=r"input_ids must be integer token ids, got a tensor of torch\.float32"):
        small_model(torch.tensor([[5.0, 6.0, 7.0]]))
    with pytest.raises(ValueError, match=r"the input is empty \(batch, sequence\) = \(1, 0\)"):
        small_model(torch.zeros((1, 0), dtype=torch.long))
    with pytest.raises(ValueError, match=r"the input is empty \(batch, sequence\) = \(0, 6\)"):
        small_model(inputs_embeds=torch.randn(0, 6, 36))
    assert small_model(torch.tensor([[5, 6, 7]], dtype=torch.int32)).logits.shape == (1, 3, 99)  # int32 ids are ids


def test_token_lists_are_refused_with_the_tokenizer_flag_that_makes_tensors(small_model):
    """A tokenizer called without return_tensors="pt" gives Python lists: a TypeError naming the argument and the
    flag, not torch's AttributeError from inside the forward."""
    with pytest.raises(TypeError, match=r"input_ids must be a torch tensor, got a list; .*return_tensors='pt'"):
        small_model([[5, 6, 7]])
    with pytest.raises(TypeError, match=r"attention_mask must be a torch tensor, got a list"):
        small_model(torch.tensor([[5, 6, 7]]), attention_mask=[[1, 1, 1]])
    with pytest.raises(TypeError, match=r"inputs_embeds must be a torch tensor, got a tuple"):
        small_model(inputs_embeds=((0.0,) * 36,))


def test_truncated_or_corrupt_safetensors_names_the_file(tmp_path):
    MinAttnForMaskedLM(tiny_config()).save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(OSError, match="model.safetensors.*truncated or corrupt"):
        AutoModelForMaskedLM.from_pretrained(tmp_path)
    weights.write_bytes(b"not a safetensors file")
    with pytest.raises(OSError, match="model.safetensors"):
        AutoModel.from_pretrained(tmp_path)
