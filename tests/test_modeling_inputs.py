"""What MinAttn's forward takes besides input ids and a mask: position_ids as BERT honours them, BERT's inputs it
cannot use refused by name, the rotary frequencies after the model is cast and cast back, and the heads' labels
(any integer dtype; floats where classes are expected refused by name; the problem type a refused call implies not
kept)."""

import copy
import re

import pytest
import torch
from conftest import tiny_config
from transformers import pipeline

from hf_minattn import (
    MinAttnForMaskedLM,
    MinAttnForSequenceClassification,
    MinAttnForTokenClassification,
    MinAttnModel,
)
from hf_minattn.modeling_minattn import rope_inverse_frequencies

POSITIONS = ["learned", "sinusoidal", "rope"]


def positional_model(positions: str, implementation: str = "sdpa") -> MinAttnModel:
    """hidden 32 = 4 heads of 8: rope needs an even head dimension."""
    model = MinAttnModel(tiny_config(position_embedding_type=positions, hidden_size=32)).eval()
    model.set_attn_implementation(implementation)
    return model


# ---------------------------------------------------------------- position_ids


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("positions", POSITIONS)
def test_a_left_padded_batch_with_position_ids_gives_each_sentence_what_it_gives_alone(positions, implementation):
    """Positions counted from each row's first real token: every real token gets the vector it gets alone. They were
    ignored (max difference 2.87 with learned positions). Rope is relative, so it matched already; the next test is
    the one that sees rope read them."""
    torch.manual_seed(0)
    model = positional_model(positions, implementation)
    sentences = [torch.randint(5, 99, (n,)) for n in (9, 4, 6)]
    input_ids = torch.zeros(3, 9, dtype=torch.long)
    attention_mask = torch.zeros(3, 9, dtype=torch.long)
    for row, sentence in enumerate(sentences):
        input_ids[row, 9 - len(sentence):] = sentence
        attention_mask[row, 9 - len(sentence):] = 1
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        batch = model(input_ids, attention_mask=attention_mask, position_ids=position_ids).last_hidden_state
        for row, sentence in enumerate(sentences):
            alone = model(sentence[None]).last_hidden_state[0]
            torch.testing.assert_close(batch[row, 9 - len(sentence):], alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("positions", POSITIONS)
def test_position_ids_with_gaps_equal_padding_in_the_gaps(positions):
    """Tokens at positions 0, 2, 4, 6 given as position_ids equal the same tokens with padding between them at their
    default positions: each kind of position (a table row, a rotary angle) is read from the ids."""
    torch.manual_seed(0)
    model = positional_model(positions)
    tokens = torch.randint(5, 99, (1, 4))
    spaced = torch.zeros(1, 7, dtype=torch.long)
    spaced[0, ::2] = tokens
    spaced_mask = (torch.arange(7) % 2 == 0).long()[None]
    with torch.no_grad():
        compact = model(tokens, position_ids=torch.tensor([[0, 2, 4, 6]])).last_hidden_state
        padded = model(spaced, attention_mask=spaced_mask).last_hidden_state[:, ::2]
        default = model(tokens).last_hidden_state
    torch.testing.assert_close(compact, padded, atol=1e-5, rtol=0)
    assert not torch.allclose(compact, default, atol=1e-3)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("positions", POSITIONS + ["none"])
def test_default_position_ids_give_the_same_bits_as_none(positions, implementation):
    """0 .. T-1 given, per row or once for the batch, is the path without position_ids (a table slice, torch.outer of
    the angles) to the last bit, training included: None keeps the numbers every committed run was trained with."""
    torch.manual_seed(0)
    model = MinAttnForMaskedLM(tiny_config(position_embedding_type=positions, hidden_size=32))
    model.set_attn_implementation(implementation)
    input_ids = torch.randint(5, 99, (2, 9))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 6:] = 0
    reference = model(input_ids, attention_mask=attention_mask).logits
    for position_ids in (torch.arange(9).expand(2, -1), torch.arange(9)[None]):
        got = model(input_ids, attention_mask=attention_mask, position_ids=position_ids).logits
        assert torch.equal(got, reference)


@pytest.mark.parametrize("head", [MinAttnForMaskedLM, MinAttnForSequenceClassification, MinAttnForTokenClassification],
                         ids=lambda head: head.__name__)
def test_every_head_passes_position_ids_to_the_encoder(head):
    torch.manual_seed(0)
    model = head(tiny_config(num_labels=3)).eval()
    input_ids = torch.randint(5, 99, (2, 6))
    position_ids = torch.tensor([[3, 4, 5, 6, 7, 8], [0, 0, 1, 2, 3, 4]])
    with torch.no_grad():
        shifted = model(input_ids, position_ids=position_ids).logits
        encoded = model.minattn(input_ids, position_ids=position_ids).last_hidden_state
        by_hand = model.lm_head(encoded) if head is MinAttnForMaskedLM else model.classifier(
            encoded[:, 0] if head is MinAttnForSequenceClassification else encoded)
        default = model(input_ids).logits
    assert torch.equal(shifted, by_hand)
    assert not torch.allclose(shifted, default, atol=1e-4)


@pytest.mark.parametrize("positions, position_ids, error, message", [
    ("learned", [[0, 1, 24]], ValueError, "position_ids contains 24, expected positions [0, max_position_embeddings=24)"),
    ("sinusoidal", [[0, -1, 2]], ValueError, "position_ids contains -1, expected positions [0, max_position_embeddings=24)"),
    ("rope", [[0, -3, 2]], ValueError, "position_ids contains -3, expected positions at least 0"),
    ("learned", [[0, 1]], ValueError, "position_ids has shape (1, 2), expected the input's (2, 3) (batch, sequence) or (1, 3)"),
    ("learned", [[0.0, 1.0, 2.0]], TypeError, "position_ids must be a tensor of integer positions, got torch.float32"),
])
def test_position_ids_are_checked_at_the_boundary(positions, position_ids, error, message):
    """A shape, a dtype or an id the model cannot use, named, rather than torch's IndexError from the table (a
    device-side assert on a GPU) or a silent broadcast."""
    model = positional_model(positions)
    with pytest.raises(error, match=re.escape(message)):
        model(torch.randint(5, 99, (2, 3)), position_ids=torch.tensor(position_ids))


def test_rope_takes_any_nonnegative_position():
    model = positional_model("rope")
    assert model(torch.randint(5, 99, (1, 3)), position_ids=torch.tensor([[1000, 1001, 1002]])).last_hidden_state.shape \
        == (1, 3, 32)


# ---------------------------------------------------------------- BERT's inputs this model cannot use


def test_bert_inputs_the_model_cannot_use_are_refused_by_name():
    """token_type_ids of a second segment and a head mask would change a BERT's output; here they were dropped
    without a word. Through a head (they arrive in **kwargs) as through the encoder."""
    model = MinAttnForMaskedLM(tiny_config()).eval()
    input_ids = torch.randint(5, 99, (2, 6))
    token_type_ids = torch.zeros_like(input_ids)
    token_type_ids[:, 3:] = 1
    with pytest.raises(ValueError, match=re.escape("token_type_ids holds segment id 1: MinAttn has no segment "
                                                   "embeddings")):
        model(input_ids, token_type_ids=token_type_ids)
    with pytest.raises(ValueError, match=re.escape("head_mask (shape (2, 4)) is not supported")):
        model.minattn(input_ids, head_mask=torch.ones(2, 4))
    # all 0 is what BERT assumes without any: one segment, the same output
    plain = model(input_ids).logits
    assert torch.equal(model(input_ids, token_type_ids=torch.zeros_like(input_ids), head_mask=None).logits, plain)


def test_fill_mask_pipeline_works_with_a_tokenizer_that_returns_token_type_ids(tokenizer):
    """A BERT-style tokenizer (one of --tokenizer_name's) returns token_type_ids of 0 for one sentence, and the
    pipeline passes everything the tokenizer returns: that must keep working."""
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval()
    bert_like = copy.deepcopy(tokenizer)  # the fixture is shared by the session
    bert_like.model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    assert "token_type_ids" in bert_like("the king")
    predictions = pipeline("fill-mask", model=model, tokenizer=bert_like)("the king and the [MASK]")
    assert len(predictions) == 5


# ---------------------------------------------------------------- rotary frequencies after a cast


def test_a_cast_to_bf16_and_back_restores_the_exact_rope_frequencies():
    """model.bfloat16().float() rounded inv_freq to bf16 and kept it (fp32 dtype, bf16 values); it is recomputed
    from rope_theta, so the model is the fp32 model of its rounded weights, bit for bit. Exact buffers are kept."""
    torch.manual_seed(0)
    model = positional_model("rope")
    exact = model.rotary.inv_freq
    assert torch.equal(exact, rope_inverse_frequencies(8, 10000.0))
    model.float()
    assert model.rotary.inv_freq is exact  # nothing to restore: the same tensor
    model.bfloat16().float()
    assert model.rotary.inv_freq.dtype == torch.float32
    assert torch.equal(model.rotary.inv_freq, exact)
    fresh = positional_model("rope")
    fresh.load_state_dict(model.state_dict())  # the rounded weights, exact frequencies
    ids = torch.randint(5, 99, (1, 20))
    with torch.no_grad():
        assert torch.equal(model(ids).last_hidden_state, fresh(ids).last_hidden_state)


def test_a_rope_model_built_on_the_meta_device_gets_its_frequencies_when_materialised():
    with torch.device("meta"):
        model = MinAttnModel(tiny_config(position_embedding_type="rope", hidden_size=32))
    model.to_empty(device="cpu")
    assert torch.equal(model.rotary.inv_freq, rope_inverse_frequencies(8, 10000.0))


# ---------------------------------------------------------------- labels


def head_labels(head, dtype) -> torch.Tensor:
    """Labels of `dtype` a head with num_labels=3 accepts for a (2, 6) input: token ids or classes, -100 in places."""
    if head is MinAttnForSequenceClassification:
        return torch.tensor([0, 2], dtype=dtype)
    labels = torch.tensor([[7, -100, 9, 2, -100, 1], [-100, 1, 1, 0, 2, -100]])
    return (labels.clamp(max=2) if head is MinAttnForTokenClassification else labels).to(dtype)


# The sequence classifier reads only int64 and int32 as class ids, as BERT's does: int16 labels it takes for multi-hot.
@pytest.mark.parametrize("head, dtype", [
    (MinAttnForMaskedLM, torch.int32),
    (MinAttnForMaskedLM, torch.int16),
    (MinAttnForSequenceClassification, torch.int32),
    (MinAttnForTokenClassification, torch.int32),
    (MinAttnForTokenClassification, torch.int16),
], ids=lambda value: getattr(value, "__name__", str(value)))
def test_labels_of_any_integer_dtype_give_the_loss_of_int64_labels(head, dtype):
    """An int32 label column (numpy, or `datasets` with_format("torch")) is as good as the int32 input_ids the
    encoder takes; it failed inside torch ("expected scalar type Long")."""
    torch.manual_seed(0)
    model = head(tiny_config(num_labels=3)).eval()
    input_ids = torch.randint(5, 99, (2, 6))
    with torch.no_grad():
        expected = model(input_ids, labels=head_labels(head, torch.long)).loss
        model.config.problem_type = None
        assert torch.equal(model(input_ids, labels=head_labels(head, dtype)).loss, expected)


@pytest.mark.parametrize("head, message", [
    (MinAttnForMaskedLM, "labels has dtype torch.float32, expected integers: a token id in [0, vocab_size=99) or "
                         "-100 per label"),
    (MinAttnForTokenClassification, "labels has dtype torch.float32, expected integers: a class in [0, num_labels=3) "
                                    "or -100 per label"),
    (MinAttnForSequenceClassification, "labels has dtype torch.float32, expected integers: a class in "
                                       "[0, num_labels=3) or -100 per label"),
], ids=["masked_lm", "token_classes", "sequence_classes"])
def test_floating_labels_where_class_ids_are_expected_are_a_type_error_naming_the_dtype(head, message):
    """Floats where each label is a class (the masked LM, token classes, a sequence classifier told
    single_label_classification) were torch's RuntimeError from inside the loss."""
    model = head(tiny_config(num_labels=3, problem_type="single_label_classification")).eval()
    with pytest.raises(TypeError, match=re.escape(message)):
        model(torch.randint(5, 99, (2, 6)), labels=head_labels(head, torch.float32))


@pytest.mark.parametrize("kind", ["list", "numpy"])
@pytest.mark.parametrize("head", [MinAttnForMaskedLM, MinAttnForTokenClassification, MinAttnForSequenceClassification])
def test_labels_that_are_no_tensor_are_a_type_error_naming_them(head, kind):
    """A list (a collator without return_tensors="pt") or a numpy array was an AttributeError from inside the head."""
    labels = head_labels(head, torch.long)
    labels = labels.tolist() if kind == "list" else labels.numpy()
    model = head(tiny_config(num_labels=3)).eval()
    with pytest.raises(TypeError, match=rf"^labels must be a torch tensor, got a {type(labels).__name__}; make one "
                                        r"with torch\.tensor\(labels\)$"):
        model(torch.randint(5, 99, (2, 6)), labels=labels)


def test_inputs_embeds_of_another_dtype_than_the_models_are_a_type_error_naming_both():
    """float64 (torch.from_numpy) passed the checks and failed in torch's LayerNorm or matmul; under autocast each op
    casts, so there any floating dtype goes on."""
    model = MinAttnForMaskedLM(tiny_config(position_embedding_type="rope", hidden_size=32)).eval()
    for dtype in (torch.float64, torch.bfloat16, torch.long):
        with pytest.raises(TypeError, match=rf"^inputs_embeds must be a floating tensor of the model's dtype "
                                            rf"torch\.float32, got {dtype}; convert it with \.to\(model\.dtype\)$"):
            model(inputs_embeds=torch.ones(1, 4, 32, dtype=dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model(inputs_embeds=torch.randn(1, 4, 32, dtype=torch.bfloat16)).logits.shape == (1, 4, 99)
    model.to(torch.bfloat16)
    assert model(inputs_embeds=torch.randn(1, 4, 32, dtype=torch.bfloat16)).logits.shape == (1, 4, 99)


def test_labels_a_call_refuses_leave_the_problem_type_unchosen():
    """The problem type the labels imply is kept in the config only once the call succeeds. Refused multi-hot floats
    of the wrong shape left multi_label_classification behind: the next, correct call (class ids) was then refused
    as not multi-hot, and a save would have stored it. A problem type the user set is still respected."""
    model = MinAttnForSequenceClassification(tiny_config(num_labels=3)).eval()
    input_ids = torch.randint(5, 99, (2, 6))
    refused = "labels has shape (2, 1), expected (2, 3) (3 targets per sequence)"
    with pytest.raises(ValueError, match=re.escape(refused)):
        model(input_ids, labels=torch.tensor([[1.0], [0.0]]))
    assert model.config.problem_type is None
    assert torch.isfinite(model(input_ids, labels=torch.tensor([0, 2])).loss)
    assert model.config.problem_type == "single_label_classification"

    chosen = MinAttnForSequenceClassification(tiny_config(num_labels=3, problem_type="multi_label_classification"))
    multi_hot = torch.tensor([[1, 0, 1], [0, 1, 0]])  # int64, which alone would mean class ids
    out = chosen.eval()(input_ids, labels=multi_hot)
    torch.testing.assert_close(out.loss, torch.nn.functional.binary_cross_entropy_with_logits(out.logits,
                                                                                               multi_hot.float()))
    assert chosen.config.problem_type == "multi_label_classification"
