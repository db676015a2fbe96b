"""Rollout with measured residual weights (probes/mixing.py): uniform attention's closed form, the residual weight
worked out by hand, the attention output it reads checked against the model's own output projection, and a
tiny MinAttn and BERT measured sentence by sentence."""

import numpy as np
import pytest
import torch
from conftest import TEXTS, tiny_config
from transformers import BertConfig, BertModel

from hf_minattn import MinAttnModel
from hf_minattn.probes.attention_flow import attention_rollout, residual_weights, self_share
from hf_minattn.probes.attention_norms import attention_modules, capture_attention_inputs, transformed_values
from hf_minattn.probes.mixing import (measured_residual_weights, rollout_self_shares, sentence_self_shares,
                                      uniform_rollout_self_share)


@pytest.mark.parametrize("n, weights", [(15, [0.5] * 4), (7, [0.9, 0.2, 0.6]), (3, [0.0]), (4, [1.0, 1.0])])
def test_rollout_of_uniform_attention_has_its_closed_form(n, weights):
    uniform = np.full((len(weights), 2, n, n), 1.0 / n)  # (layers, heads, n, n)
    diagonal = np.diagonal(attention_rollout(uniform, np.array(weights))[-1])
    product = np.prod(weights)
    assert diagonal == pytest.approx(np.full(n, product + (1 - product) / n), abs=1e-12)
    assert uniform_rollout_self_share(n, weights) == pytest.approx(product + (1 - product) / n, abs=1e-15)


def test_fifteen_tokens_after_four_half_residual_layers_keep_one_eighth():
    """1/16 of the identity plus 15/16 spread evenly: 1/16 + 1/16."""
    assert uniform_rollout_self_share(15, [0.5] * 4) == 0.125
    assert self_share(attention_rollout(np.full((4, 1, 15, 15), 1 / 15), True)[-1:], None, "token")[0] == \
        pytest.approx(0.125, abs=1e-6)


def test_residual_weights_accept_the_paper_default_numbers_and_per_token_arrays():
    assert np.all(residual_weights(True, 2, 3) == 0.5) and np.all(residual_weights(False, 2, 3) == 0)
    per_token = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    assert np.array_equal(residual_weights(per_token, 2, 3), per_token)
    assert np.array_equal(residual_weights([0.2, 0.7], 2, 3)[:, 0], [0.2, 0.7])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        residual_weights(1.5, 2, 3)
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        residual_weights(np.ones((3, 3)) / 2, 2, 3)
    with pytest.raises(ValueError, match="positive number of tokens"):
        uniform_rollout_self_share(0, [0.5])


def test_a_measured_residual_weight_by_hand():
    """One layer, one head, two tokens. Token 0 attends to token 1 only, token 1 half to each. f(x_0) = (3, 0),
    f(x_1) = (0, 4); residuals r_0 = (0, 1), r_1 = (6, 8). o_0 = (0, 4): w_0 = 1 / (1 + 4) = 0.2;
    o_1 = (1.5, 2): ||o_1|| = 2.5, w_1 = 10 / 12.5 = 0.8."""
    attention = torch.tensor([[[[0.0, 1.0], [0.5, 0.5]]]])  # (layers=1, heads=1, 2, 2)
    transformed = [torch.tensor([[[3.0, 0.0], [0.0, 4.0]]])]  # per layer (heads, T, C)
    residuals = [torch.tensor([[0.0, 1.0], [6.0, 8.0]])]
    assert measured_residual_weights(attention, residuals, transformed) == pytest.approx(np.array([[0.2, 0.8]]))


def test_the_attention_output_read_is_the_models_own_output_projection_minus_its_bias(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    enc = tokenizer(TEXTS[:3], padding=True, truncation=True, max_length=24, return_tensors="pt")
    outputs = {}
    hooks = [m["output"].register_forward_hook(lambda mod, a, out, l=l: outputs.__setitem__(l, out - mod.bias))
             for l, m in enumerate(attention_modules(model))]
    model.set_attn_implementation("eager")
    with torch.inference_mode(), capture_attention_inputs(model) as inputs:
        out = model(**enc, output_attentions=True)
        transformed = transformed_values(model, inputs)
    for hook in hooks:
        hook.remove()
    for layer, (a, f) in enumerate(zip(out.attentions, transformed)):
        mine = torch.einsum("bhij,bhjc->bic", a, f)  # (B, T, C)
        assert torch.allclose(mine, outputs[layer], atol=1e-5)


@pytest.mark.parametrize("architecture", ["minattn", "bert"])
def test_rollout_self_shares_per_sentence_on_two_architectures(architecture, tokenizer):
    if architecture == "minattn":
        model = MinAttnModel(tiny_config(vocab_size=len(tokenizer)))
    else:  # randomly initialised, nothing downloaded
        model = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=36, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37, max_position_embeddings=32))
    sentences = list(dict.fromkeys(TEXTS))[:5]
    rows = rollout_self_shares(model, tokenizer, sentences, batch_size=2, level="token")
    assert len(rows) == len(sentences)
    for sentence, row in zip(sentences, rows):
        n = len(tokenizer(sentence, truncation=True, max_length=24)["input_ids"])
        w = np.array(row["residual_weight"])
        assert w.shape == (2,) and np.all((w > 0) & (w < 1))
        assert row["uniform_half"] == pytest.approx(uniform_rollout_self_share(n, [0.5, 0.5]), abs=1e-6)
        assert 0 < row["measured"] < 1 and 0 < row["half"] < 1
    # the order follows the sentences given, not the length-sorted batches
    alone = rollout_self_shares(model, tokenizer, sentences[3:4], level="token")[0]
    assert alone["measured"] == pytest.approx(rows[3]["measured"], abs=1e-5)
    if architecture == "minattn":  # the residual weights from the layer's own vectors, read here through hooks
        assert alone["residual_weight"] == pytest.approx(_residual_weights_by_hooks(model, tokenizer, sentences[3]),
                                                         abs=1e-5)


def _residual_weights_by_hooks(model, tokenizer, sentence):
    """Per layer, the mean over tokens of ||r|| / (||r|| + ||o||): r the block's input (what the residual carries), o
    what the attention adds to it, read at the output projection without its bias."""
    outputs = {}
    hooks = [layer.attention.o_proj.register_forward_hook(
        lambda mod, a, out, l=l: outputs.__setitem__(l, out[0] - mod.bias)) for l, layer in enumerate(model.layers)]
    enc = tokenizer(sentence, truncation=True, max_length=24, return_tensors="pt")
    with torch.no_grad():
        states = model(**enc, output_hidden_states=True).hidden_states
    for hook in hooks:
        hook.remove()
    weights = []
    for layer, o in sorted(outputs.items()):
        r_norm, o_norm = states[layer][0].norm(dim=-1), o.norm(dim=-1)
        weights.append(float((r_norm / (r_norm + o_norm)).mean()))
    return weights


def test_a_sentence_whose_residual_carries_everything_keeps_itself():
    attention = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 3, 4))  # (layers, heads, 4, 4)
    shares = sentence_self_shares(attention, [None, 0, 1, None], np.ones((2, 4)), level="token")
    assert shares["measured"] == pytest.approx(1.0) and shares["uniform_measured"] == pytest.approx(1.0)
    assert shares["half"] < 1 and shares["uniform_half"] == pytest.approx(uniform_rollout_self_share(4, [0.5, 0.5]))
