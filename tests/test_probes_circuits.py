"""Known answers for the layer-0 circuit probe (hf_minattn/probes/circuits.py)."""

import copy
import re

import numpy as np
import pytest
import torch
from conftest import tiny_config
from test_probes_layouts import _t5_encoder

from hf_minattn import MinAttnForMaskedLM, MinAttnModel
from hf_minattn.probes.circuits import (
    attention_inputs,
    circuit_hypotheses,
    identity_forms,
    ov_forms,
    qk_forms,
    select_tokens,
)
from hf_minattn.probes.cooccurrence import ppmi_matrix
from hf_minattn.probes.weights import UnsupportedArchitecture
from hf_minattn.unigram import UnigramFloor

FAST = dict(n_tokens=40, n_resamples=20)  # 40 tokens: 1560 ordered pairs, a few ms per resample


def small(cls=MinAttnModel, **overrides):
    """hidden 32 = 4 heads of 8 (even, for rope), no positions unless asked, random LayerNorm weights and biases so
    that a wrong norm shows."""
    values = dict(hidden_size=32, num_attention_heads=4, position_embedding_type="none", intermediate_size=0)
    model = cls(tiny_config(**{**values, **overrides})).eval()
    with torch.no_grad():
        for norm in [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]:
            norm.weight.normal_(1.0, 0.3)
            norm.bias.normal_(0.0, 0.3)
    return model


def layer0_norm(model):
    """The LayerNorm layer 0's attention reads through, found independently of the probe."""
    base = model.base_model
    return base.embeddings.norm if model.config.norm_placement == "post" else base.layers[0].attention_norm


def qkv_weight(model):
    """(3, H, D, C) view of layer 0's fused weight, rows [W_Q; W_K; W_V], head-major inside each."""
    config = model.config
    H, C = config.num_attention_heads, config.hidden_size
    return model.base_model.layers[0].attention.qkv_proj.weight.data.view(3, H, C // H, C)


@pytest.mark.parametrize("norm_placement", ["pre", "post"])
def test_identity_projection_form_is_the_identity_hypothesis(norm_placement):
    model = small(qkv_projection="identity", norm_placement=norm_placement)
    ids, _ = select_tokens(model, n_tokens=40)
    with torch.no_grad():
        X = layer0_norm(model)(model.embeddings.word_embeddings.weight[ids]).double()  # (N, C)
    X_heads = X.view(len(ids), 4, 8).transpose(0, 1)  # (H, N, D)
    expected = X_heads @ X_heads.transpose(1, 2)  # (H, N, N)
    torch.testing.assert_close(qk_forms(model, ids), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(identity_forms(model, ids), expected, atol=1e-5, rtol=1e-5)
    result = circuit_hypotheses(model, **FAST)
    assert all(r["estimate"] == pytest.approx(1.0) and r["low"] == pytest.approx(1.0) for r in result.identity)
    assert "qkv_projection='identity'" in result.note


@pytest.mark.parametrize("norm_placement", ["pre", "post"])
def test_qk_form_gives_the_models_own_attention(norm_placement):
    """softmax(A_h / sqrt(D)) over a sentence of the chosen tokens is layer 0's attention (biases included)."""
    model = small(norm_placement=norm_placement)
    with torch.no_grad():
        model.layers[0].attention.qkv_proj.bias.normal_()
    ids, _ = select_tokens(model, n_tokens=7)
    attentions = model(ids[None], output_attentions=True).attentions[0][0].double()  # (H, T, T)
    expected = torch.softmax(qk_forms(model, ids) * 8**-0.5, dim=-1)
    torch.testing.assert_close(attentions, expected, atol=1e-5, rtol=1e-4)


def test_orthogonal_shared_projection_is_the_identity_hypothesis():
    """W_Q,h = W_K,h = R_h P_h (R_h orthogonal, P_h head h's rows of I): W_Q,h^T W_K,h = P_h^T P_h, the identity
    hypothesis of head h exactly."""
    model = small(qkv_bias=False)
    with torch.no_grad():
        weight = qkv_weight(model)
        for h in range(4):
            R = torch.linalg.qr(torch.randn(8, 8)).Q
            P = torch.eye(32)[h * 8:(h + 1) * 8]  # (D, C)
            weight[0, h] = weight[1, h] = R @ P
    ids, _ = select_tokens(model, n_tokens=40)
    torch.testing.assert_close(qk_forms(model, ids), identity_forms(model, ids), atol=1e-5, rtol=1e-5)
    result = circuit_hypotheses(model, **FAST)
    assert [r["estimate"] for r in result.identity] == pytest.approx([1.0] * 4)


@pytest.mark.parametrize("sign", [1, -1])
def test_shared_query_and_key_give_a_definite_qk_form(sign):
    """W_K = sign * W_Q, b_K = sign * b_Q: A_h = sign * Q_h Q_h^T, (semi)definite, so the eigenvalue share is sign."""
    model = small()
    with torch.no_grad():
        qkv_weight(model)[1] = sign * qkv_weight(model)[0]
        bias = model.layers[0].attention.qkv_proj.bias
        bias.normal_()
        bias[32:64] = sign * bias[:32]
    result = circuit_hypotheses(model, **FAST)
    assert result.qk_positive == pytest.approx([sign] * 4, abs=1e-6)


def copying_model(sign):
    """One head, W_Q = W_K = W_V = I, W_O = I, W_U = sign * LN(E): M = sign * X X^T, whose rows all have the norm
    sqrt(C) (LayerNorm with unit gain and no bias), so a token's own logit is the largest (sign 1) or the smallest
    (sign -1) of what it writes."""
    model = MinAttnForMaskedLM(tiny_config(hidden_size=32, num_attention_heads=1, qkv_projection="identity",
                                           position_embedding_type="none", tie_word_embeddings=False,
                                           intermediate_size=0)).eval()
    with torch.no_grad():
        model.minattn.layers[0].attention.o_proj.weight.copy_(torch.eye(32))
        X = attention_inputs(model, torch.arange(model.config.vocab_size))  # (V, C)
        model.lm_head.decoder.weight.copy_(sign * X)
    return model


@pytest.mark.parametrize("sign", [1, -1])
def test_copying_score_of_a_copying_head(sign):
    result = circuit_hypotheses(copying_model(sign), **FAST)
    assert result.ov_copying == pytest.approx([sign], abs=1e-6)
    assert result.ov_self_rank == pytest.approx([1.0 if sign == 1 else 40.0])


def test_ov_form_is_what_the_attention_writes_to_the_logits():
    """With every bias 0, sum_h M_h[:, j] is W_U applied to layer 0's attention output for token j alone."""
    model = small(MinAttnForMaskedLM, qkv_bias=False, tie_word_embeddings=False)
    attention = model.minattn.layers[0].attention
    with torch.no_grad():
        attention.o_proj.bias.zero_()
    ids, _ = select_tokens(model, n_tokens=12)
    X = attention_inputs(model, ids).float()  # (N, C)
    with torch.no_grad():
        written = attention(X[:, None, :])[0][:, 0]  # (N, C): N one-token sequences, each attends to itself
    expected = model.lm_head.decoder.weight[ids] @ written.T  # (N output tokens, N source tokens)
    torch.testing.assert_close(ov_forms(model, ids).sum(0).float(), expected, atol=1e-5, rtol=1e-4)


def test_a_model_against_its_own_initial_state():
    model = small()
    result = circuit_hypotheses(model, initial_model=copy.deepcopy(model), **FAST)
    assert [r["estimate"] for r in result.initial] == pytest.approx([1.0] * 4)
    # True re-creates the initial state from the config and `seed`: a model still at its seed-3 initialisation
    # correlates 1 with it at seed 3, and not at seed 4
    from hf_minattn.initialization import initial_model

    at_init = initial_model(model.config, 3, MinAttnModel).eval()
    same = circuit_hypotheses(at_init, initial_model=True, seed=3, **FAST).initial
    other = circuit_hypotheses(at_init, initial_model=True, seed=4, **FAST).initial
    assert [r["estimate"] for r in same] == pytest.approx([1.0] * 4)
    assert max(abs(r["estimate"]) for r in other) < 0.5


def test_cooccurrence_matrix_and_sequences():
    model = small(qkv_projection="identity")
    ids, _ = select_tokens(model, n_tokens=40)
    # A positive, increasing function of head 0's (symmetric) form: rho 1 for head 0.
    association = np.exp(identity_forms(model, ids)[0].numpy() / 32)
    result = circuit_hypotheses(model, cooccurrence=association, **FAST)
    assert result.cooccurrence[0]["estimate"] == pytest.approx(1.0)
    assert result.pairs["cooccurrence"] == 40 * 39 // 2
    # Running text: the pairs are those with a positive PPMI, as cooccurrence.ppmi_matrix counts them.
    rng = np.random.default_rng(0)
    sequences = [rng.choice(ids.numpy(), 12).tolist() for _ in range(30)]
    result = circuit_hypotheses(model, cooccurrence=sequences, window=3, **FAST)
    _, ppmi = ppmi_matrix(sequences, ids.tolist(), 3)
    assert result.pairs["cooccurrence"] == int(np.triu(ppmi > 0, k=1).sum())
    assert result.window == 3 and all(np.isfinite(r["estimate"]) for r in result.cooccurrence)


def test_tokens_by_frequency_without_special_ids():
    model = small()
    counts = np.zeros(99)
    counts[[0, 2, 50, 7, 30]] = [1000, 900, 40, 30, 20]  # ids 0 ([PAD]) and 2 ([CLS]) are special
    ids, how = select_tokens(model, counts, n_tokens=3)
    assert ids.tolist() == [50, 7, 30] and "most frequent" in how
    floor = UnigramFloor.from_token_ids([[50] * 40 + [7] * 30 + [30] * 20 + [2] * 900], vocab_size=99)
    assert select_tokens(model, floor, n_tokens=3)[0].tolist() == [50, 7, 30]
    ids, how = select_tokens(model, n_tokens=3)
    assert ids.tolist() == [1, 5, 6] and "No token counts" in how  # 0, 2, 3, 4: pad, cls, sep, mask


@pytest.mark.parametrize("kind, phrase", [("learned", "averages each token's input over positions 1-16"),
                                          ("rope", "same position")])
def test_note_says_how_positions_were_treated(kind, phrase):
    assert phrase in circuit_hypotheses(small(position_embedding_type=kind), **FAST).note


def test_bare_encoder_with_untied_embeddings_has_no_ov_scores():
    result = circuit_hypotheses(small(tie_word_embeddings=False), **FAST)
    assert result.ov_copying is None and "no unembedding" in result.note


def test_bad_inputs_name_the_value():
    model = small()
    with pytest.raises(ValueError, match="n_tokens .* got 1"):
        circuit_hypotheses(model, n_tokens=1)
    with pytest.raises(ValueError, match=r"\(99,\).* got shape \(98,\)"):
        circuit_hypotheses(model, counts=np.ones(98))
    with pytest.raises(ValueError, match=r"\(40, 40\).* got shape \(3, 3\)"):
        circuit_hypotheses(model, cooccurrence=np.ones((3, 3)), **FAST)
    for bad in (5, "[CLS]", [1.5]):
        with pytest.raises(ValueError, match=r"special_ids must be token ids .* got " + re.escape(repr(bad))):
            circuit_hypotheses(model, special_ids=bad)
    with pytest.raises(UnsupportedArchitecture, match="T5EncoderModel"):  # a layout the table does not know
        circuit_hypotheses(_t5_encoder())


def test_identity_initialised_projection_starts_as_the_identity_hypothesis():
    """qkv_init="identity": learned W_Q = W_K = I with zero biases, so at initialisation A_h = X_h X_h^T."""
    model = small(qkv_init="identity")
    ids, _ = select_tokens(model, n_tokens=40)
    torch.testing.assert_close(qk_forms(model, ids), identity_forms(model, ids), atol=1e-5, rtol=1e-5)
