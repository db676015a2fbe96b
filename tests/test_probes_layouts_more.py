"""More of the layout table (probes/layouts.py) and the probes that read it: heads whose width is the config's head_dim
rather than hidden / heads (Gemma-7B, Mistral-Nemo), checked against weights sliced by hand and against the model's
own attention; models that normalise each head's queries and keys (Qwen 3), whose QK circuits are refused by the
weights and the circuits probes alike; and the notes of skipped probes, which name no reason that was not given."""

import pytest
import torch
from conftest import TEXTS

from hf_minattn.probes import layouts
from hf_minattn.probes.attention_norms import capture_attention_inputs, transformed_value_norms
from hf_minattn.probes.circuits import attention_inputs, circuit_hypotheses, ov_forms, qk_forms
from hf_minattn.probes.head_ablation import head_ablation, zero_head
from hf_minattn.probes.layouts import unless_unsupported
from hf_minattn.probes.logit_lens import logit_lens
from hf_minattn.probes.weights import UnsupportedArchitecture, head_weights, weight_spectra

C, H, KV, L, T, VOCAB = 32, 4, 2, 2, 7, 64  # hidden, query heads, key/value heads, layers, tokens
IDS = torch.arange(4, 16)
# (config and model prefix, head_dim): wider heads than hidden / heads = 8 (H * D = 48 > C, as Gemma-7B's) and
# narrower (24 < C, as Mistral-Nemo's)
HEAD_DIMS = [("Llama", 12), ("Mistral", 6), ("Gemma", 12)]


def _decoder(kind, head_dim):
    """A tiny random causal LM whose config sets head_dim apart from hidden / heads; grouped-query (2 key/value heads
    for 4 query heads); weights large enough for sharp attention, non-zero biases where it has them."""
    import transformers

    extra = {"attention_bias": True} if kind == "Llama" else {}
    config = getattr(transformers, f"{kind}Config")(
        vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H, num_key_value_heads=KV,
        head_dim=head_dim, intermediate_size=37, max_position_embeddings=40, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, **extra)
    torch.manual_seed(0)
    model = getattr(transformers, f"{kind}ForCausalLM")(config).eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.normal_(0, 0.5)
            elif param.dim() >= 2:
                param.normal_(0, 0.3)
    return model


@pytest.mark.parametrize("kind, D", HEAD_DIMS)
def test_heads_of_the_configs_head_dim_are_read_as_sliced_by_hand(kind, D):
    """W_Q, W_K, W_V: (H, D, C), W_O: (H, C, D) with D = config.head_dim; head 2 of layer 1 (key/value head 1 under
    grouped-query attention) has the QK and OV singular values of q_proj/k_proj/v_proj/o_proj sliced by hand."""
    model = _decoder(kind, D)
    heads, source = head_weights(model)
    assert source.startswith("Llama-style")
    assert {k: tuple(v.shape) for k, v in heads[1].items()} == {"W_Q": (H, D, C), "W_K": (H, D, C),
                                                                "W_V": (H, D, C), "W_O": (H, C, D)}
    spectra = weight_spectra(model, compare_with_init=False)
    assert spectra.head_dim == D
    attention, h, g = model.model.layers[1].self_attn, 2, 2 // (H // KV)
    W_Q = attention.q_proj.weight[h * D:(h + 1) * D].double()  # (D, C)
    W_K, W_V = (proj.weight[g * D:(g + 1) * D].double() for proj in (attention.k_proj, attention.v_proj))
    W_O = attention.o_proj.weight[:, h * D:(h + 1) * D].double()  # (C, D)
    qk = torch.linalg.svdvals(W_Q.T @ W_K)[:D]  # (C, C) of rank D
    ov = torch.linalg.svdvals(W_O @ W_V)[:D]
    assert spectra.trained.qk_singular_values[1][h] == pytest.approx(qk.tolist(), rel=1e-9, abs=1e-9)
    assert spectra.trained.ov_singular_values[1][h] == pytest.approx(ov.tolist(), rel=1e-9, abs=1e-9)


def _last_layer(model, input_ids):
    """(attentions of the last layer, its attention inputs x, rotary (cos, sin), o_proj's output), from one pass."""
    attention, seen = model.model.layers[L - 1].self_attn, {}
    handles = [attention.register_forward_pre_hook(
                   lambda m, args, kwargs: seen.update(rotary=kwargs["position_embeddings"]), with_kwargs=True),
               attention.o_proj.register_forward_hook(lambda m, args, out: seen.update(output=out))]
    try:
        with torch.no_grad(), capture_attention_inputs(model) as inputs:
            attentions = model(input_ids=input_ids, output_attentions=True).attentions
            captured = list(inputs)
    finally:
        for handle in handles:
            handle.remove()
    return attentions[L - 1], captured, seen["rotary"], seen["output"]


@pytest.mark.parametrize("kind, D", HEAD_DIMS[:2])  # Gemma's own scaling (query_pre_attn_scalar) aside
def test_heads_of_the_configs_head_dim_reproduce_the_attention_output_and_ablation(kind, D):
    """softmax(rotary(x W_Q^T + b_Q) rotary(x W_K^T + b_K)^T / sqrt(D)) is the model's attention, sum_h W_O^h a^h
    (x W_V^h + b_V^h) + b_O what o_proj returns, the norm weighting's ||f_h(x_j)|| that of the same vectors, and
    zero_head(model, layer, 1) removes exactly head 1's term: each reads D = head_dim channels per head."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    model = _decoder(kind, D)
    input_ids = torch.randint(4, VOCAB, (2, T), generator=torch.Generator().manual_seed(1))
    attention, inputs, rotary, output = _last_layer(model, input_ids)
    W, b = head_weights(model)[0][L - 1], layouts.layout_head_biases(model)[L - 1]
    x = inputs[L - 1]

    def project(name):  # (B, H, T, D)
        bias = b[f"b_{name}"]
        return torch.einsum("hdc,btc->bhtd", W[f"W_{name}"], x) + (0 if bias is None else bias[None, :, None])

    q, k = apply_rotary_pos_emb(project("Q"), project("K"), *rotary)
    logits = (q @ k.transpose(-1, -2) / D ** 0.5).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -torch.inf)
    torch.testing.assert_close(logits.softmax(-1), attention, atol=1e-5, rtol=1e-4)
    v = project("V")
    o_bias = model.model.layers[L - 1].self_attn.o_proj.bias
    rebuilt = torch.einsum("hcd,bhtd->btc", W["W_O"], attention @ v) + (0 if o_bias is None else o_bias)
    torch.testing.assert_close(rebuilt, output, atol=1e-5, rtol=1e-4)
    norms = transformed_value_norms(model, inputs)[L - 1]
    torch.testing.assert_close(norms, torch.einsum("hcd,bhtd->bhtc", W["W_O"], v).norm(dim=-1), atol=1e-5, rtol=1e-4)
    with zero_head(model, L - 1, 1):
        ablated = _last_layer(model, input_ids)[3]
    torch.testing.assert_close(ablated - output, -(attention[:, 1] @ v[:, 1]) @ W["W_O"][1].T, atol=1e-5, rtol=1e-4)


def test_the_circuits_build_a_qk_form_of_head_dim_wide_heads():
    """Layer 0's A_h of a model with head_dim 12 under a hidden size of 32: (X W_Q,h^T + b_Q,h)(X W_K,g^T + b_K,g)^T
    with the rows of head h (and its key/value head g) taken from q_proj and k_proj by hand."""
    model = _decoder("Llama", 12)
    attention, D = model.model.layers[0].self_attn, 12
    X = attention_inputs(model, IDS)  # (N, C) float64
    q = (X @ attention.q_proj.weight.double().T + attention.q_proj.bias.double()).view(len(IDS), H, D)
    k = (X @ attention.k_proj.weight.double().T + attention.k_proj.bias.double()).view(len(IDS), KV, D)
    k = k.repeat_interleave(H // KV, dim=1)  # query head h reads key head h // 2
    torch.testing.assert_close(qk_forms(model, IDS), torch.einsum("nhd,mhd->hnm", q, k), atol=1e-9, rtol=1e-9)
    result = circuit_hypotheses(model, n_tokens=12, n_resamples=10)
    assert result.head_dim == D and result.scaling == pytest.approx(D ** -0.5) and f"{D ** -0.5:.4g}" in result.note
    assert len(result.identity) == len(result.qk_positive) == len(result.ov_copying) == H


def test_queries_and_keys_normalised_per_head_keep_the_ov_circuits_only():
    """Qwen 3's q_norm/k_norm: the circuits probe gives no QK score (the form it would build is not what the model
    computes) and says so with the weights probe's reason, and keeps its OV scores, which W_V and W_O give."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H,
                                         num_key_value_heads=KV, head_dim=8, intermediate_size=37)).eval()
    reason = "Qwen3ForCausalLM normalises each head's queries and keys after W_Q and W_K (model.layers.0.self_attn.q_norm"
    with pytest.raises(UnsupportedArchitecture, match=r"normalises each head's queries and keys") as refused:
        weight_spectra(model)
    assert str(refused.value).startswith(reason)
    with pytest.raises(UnsupportedArchitecture, match=r"normalises each head's queries and keys"):
        qk_forms(model, IDS)
    result = circuit_hypotheses(model, n_tokens=12, n_resamples=10, initial_model=True, cooccurrence=[IDS.tolist()])
    assert result.identity is None and result.qk_positive is None and result.qk_self_rank is None
    assert result.initial is None and result.cooccurrence is None and result.pairs == {}
    assert f"QK scores skipped: {str(refused.value)};" in result.note
    assert len(result.ov_copying) == len(result.ov_self_rank) == H and ov_forms(model, IDS).shape == (H, 12, 12)


def test_a_reason_given_above_is_pointed_to_not_renamed(tokenizer):
    """XLNet's head reads the tokens after each position: the head ablation says so, and the logit lens, refused for
    the same reason, points to that note instead of blaming the attention layout; a layout the table does not know
    is named once, then said to not fit."""
    from transformers import XLNetConfig, XLNetLMHeadModel

    model = XLNetLMHeadModel(XLNetConfig(vocab_size=len(tokenizer), d_model=C, n_layer=L, n_head=H, d_inner=37)).eval()
    notes = []
    assert unless_unsupported(notes, "head ablation", lambda: head_ablation(model, tokenizer, TEXTS[:4])) is None
    assert unless_unsupported(notes, "logit lens", lambda: logit_lens(model, tokenizer, TEXTS[:4])) is None
    assert notes[0].startswith("head ablation skipped: XLNetLMHeadModel's predictions change with the tokens after")
    assert notes[1] == "logit lens skipped: for the reason given above (with head ablation)"
    for what in ("weights probe", "circuits"):
        assert unless_unsupported(notes, what, lambda: head_weights(model)) is None
    assert notes[2].startswith("weights probe skipped: don't know where XLNetLMHeadModel keeps its attention")
    assert notes[3] == "circuits skipped: the attention layout does not fit, as said above"
