"""The encoder written out by hand from its raw weights (the equations of Vaswani et al. 2017 and, for pre-norm, of
Xiong et al. 2020): embeddings, then per block multi-head attention and the feed-forward in their residual branches,
with every LayerNorm and GELU spelled out here rather than taken from torch.nn. Every other model test compares the
model with itself (sdpa vs eager, export, save and load); this one would notice a norm applied in the wrong place,
a residual dropped or a different activation. The fixed position table is checked against its formula too."""

import math

import pytest
import torch
from conftest import tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.modeling_minattn import sinusoidal_table


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(-1, keepdim=True)  # the biased variance, as LayerNorm uses
    return (x - mean) / torch.sqrt(variance + eps) * weight + bias


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))  # the exact GELU of Hendrycks & Gimpel, not tanh's


def attention(x, w, prefix, heads):
    """Multi-head self-attention of x (T, C) with the fused W_Q/W_K/W_V rows [0:C), [C:2C), [2C:3C)."""
    T, C = x.shape
    D = C // heads
    qkv = x @ w[prefix + "qkv_proj.weight"].T + w[prefix + "qkv_proj.bias"]  # (T, 3C)
    q, k, v = (part.reshape(T, heads, D).transpose(0, 1) for part in qkv.split(C, dim=-1))  # each (H, T, D)
    weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(D), dim=-1)  # (H, T, T)
    z = (weights @ v).transpose(0, 1).reshape(T, C)  # heads concatenated
    return z @ w[prefix + "o_proj.weight"].T + w[prefix + "o_proj.bias"]


def encoder_by_hand(model, ids):
    """The last hidden state of one sentence `ids` (T,), computed from the state dict alone."""
    config, w = model.config, {name: value.detach() for name, value in model.state_dict().items()}
    pre, eps = config.norm_placement == "pre", config.layer_norm_eps

    def norm(x, name):
        return layer_norm(x, w[name + ".weight"], w[name + ".bias"], eps)

    def mlp(x, prefix):
        up = gelu(x @ w[prefix + "up_proj.weight"].T + w[prefix + "up_proj.bias"])
        return up @ w[prefix + "down_proj.weight"].T + w[prefix + "down_proj.bias"]

    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)]
    if not pre:
        x = norm(x, "embeddings.norm")  # BERT normalises the embeddings
    for layer in range(config.num_hidden_layers):
        p = f"layers.{layer}."
        if pre:  # x + f(LN(x)) for each sublayer, one LayerNorm after the last block
            x = x + attention(norm(x, p + "attention_norm"), w, p + "attention.", config.num_attention_heads)
            x = x + mlp(norm(x, p + "mlp_norm"), p + "mlp.")
        else:  # LN(x + f(x)) for each sublayer
            x = norm(x + attention(x, w, p + "attention.", config.num_attention_heads), p + "attention_norm")
            x = norm(x + mlp(x, p + "mlp."), p + "mlp_norm")
    return norm(x, "final_norm") if pre else x


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_the_encoder_is_the_transformer_equations_on_its_own_weights(placement):
    torch.manual_seed(0)
    config = tiny_config(norm_placement=placement, position_embedding_type="learned", qkv_bias=True)
    model = MinAttnModel(config).eval()
    with torch.no_grad():
        # Every weight drawn afresh at unit scale: LayerNorms at their initial 1 and 0 would hide a norm applied in
        # the wrong place, and the small initial weights keep the feed-forward where GELU's approximations agree.
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.copy_(torch.randn_like(parameter) * 0.5 + (1.0 if name.endswith("weight") else 0.0))
            else:
                fan_in = parameter.shape[-1] if parameter.dim() == 2 and "embeddings" not in name else 1
                parameter.copy_(torch.randn_like(parameter) / math.sqrt(fan_in))
    ids = torch.randint(5, config.vocab_size, (11,))
    expected = encoder_by_hand(model, ids)
    for implementation in ("eager", "sdpa"):
        model.set_attn_implementation(implementation)
        got = model(ids[None]).last_hidden_state[0]
        torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-5)


def test_the_fixed_position_table_is_sin_and_cos_of_position_over_10000_to_the_channel_fraction():
    table = sinusoidal_table(5, 7)  # an odd width: the last channel is a sine without its cosine
    for position in range(5):
        for channel in range(7):
            angle = position / 10000 ** ((channel - channel % 2) / 7)
            expected = math.sin(angle) if channel % 2 == 0 else math.cos(angle)
            assert table[position, channel].item() == pytest.approx(expected, abs=1e-6)
