"""Known-answer tests of the layout table (probes/layouts.py): for tiny random models of every architecture
in the table, the per-head W_Q/W_K (with the biases read by hand here) reproduce the model's own attention
probabilities, W_V, b_V and W_O reproduce what the output projection computes, the attention-input hook sees the
attention sublayer's input, and zeroing a head with `zero_head` removes exactly that head's term. The oracles below
(`ARCHITECTURES`) are written from the transformers modeling files, independently of the table. An architecture the
table does not know is refused with a message naming the modules found, and the probes that need no weights still
run on it."""

import pytest
import torch
from conftest import TEXTS, tiny_config
from torch import nn

from hf_minattn import MinAttnModel
from hf_minattn.probes import layouts
from hf_minattn.probes.attention_norms import attention_modules, capture_attention_inputs, transformed_value_norms
from hf_minattn.probes.head_ablation import zero_head
from hf_minattn.probes.weights import UnsupportedArchitecture, head_weights, weight_spectra

C, H, L, T = 32, 4, 2, 7  # hidden, heads, layers, tokens
D = C // H
VOCAB = 64


def _bert_like(config_class, model_class, **extra):
    def make():
        import transformers

        config = getattr(transformers, config_class)(
            vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H, intermediate_size=37,
            max_position_embeddings=40, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **extra)
        return getattr(transformers, model_class)(config)
    return make


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    return DistilBertModel(DistilBertConfig(vocab_size=VOCAB, dim=C, n_layers=L, n_heads=H, hidden_dim=37,
                                            max_position_embeddings=40, dropout=0.0, attention_dropout=0.0))


def _modernbert():
    from transformers import ModernBertConfig, ModernBertModel

    return ModernBertModel(ModernBertConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H,
                                            intermediate_size=37, max_position_embeddings=40, attention_bias=True,
                                            pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                                            sep_token_id=2, mask_token_id=3, global_attn_every_n_layers=2))


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(vocab_size=VOCAB, n_embd=C, n_layer=L, n_head=H, n_positions=40, resid_pdrop=0.0,
                                embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=2))


def _llama(key_value_heads=H):
    def make():
        from transformers import LlamaConfig, LlamaModel

        return LlamaModel(LlamaConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H,
                                      num_key_value_heads=key_value_heads, intermediate_size=37,
                                      max_position_embeddings=40, attention_bias=True, bos_token_id=1, eos_token_id=2))
    return make


def _opt():
    from transformers import OPTConfig, OPTModel

    return OPTModel(OPTConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H, ffn_dim=37,
                              max_position_embeddings=40, word_embed_proj_dim=C, dropout=0.0, attention_dropout=0.0,
                              pad_token_id=1, bos_token_id=2, eos_token_id=2))


def _phi():  # rotary over the whole head (partial_rotary_factor 1), so that the oracle's rotation is Llama's
    from transformers import PhiConfig, PhiModel

    return PhiModel(PhiConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H,
                              intermediate_size=37, max_position_embeddings=40, partial_rotary_factor=1.0,
                              resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, bos_token_id=1, eos_token_id=2))


def _gpt_neox():
    from transformers import GPTNeoXConfig, GPTNeoXModel

    return GPTNeoXModel(GPTNeoXConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H,
                                      intermediate_size=37, max_position_embeddings=40, rotary_pct=1.0,
                                      bos_token_id=1, eos_token_id=2))


def _minattn(**overrides):
    return lambda: MinAttnModel(tiny_config(vocab_size=VOCAB, hidden_size=C, num_attention_heads=H, **overrides))


def _bert_oracle(layer):
    self_attention = layer.attention.self
    return dict(x=lambda h: h, q=self_attention.query.bias, k=self_attention.key.bias, v=self_attention.value.bias,
                output=layer.attention.output.dense)


def _distilbert_oracle(layer):
    a = layer.attention
    return dict(x=lambda h: h, q=a.q_lin.bias, k=a.k_lin.bias, v=a.v_lin.bias, output=a.out_lin)


def _deberta_v2_oracle(layer):  # post-norm, as BERT; the content term only (the test model has no relative terms)
    a = layer.attention.self
    return dict(x=lambda h: h, q=a.query_proj.bias, k=a.key_proj.bias, v=a.value_proj.bias,
                output=layer.attention.output.dense)


def _mpnet_oracle(layer):  # post-norm; W_O inside the self-attention module
    a = layer.attention.attn
    return dict(x=lambda h: h, q=a.q.bias, k=a.k.bias, v=a.v.bias, output=a.o)


def _albert_oracle(layer):  # post-norm, as BERT; the module may serve several layers
    a = layer.attention
    return dict(x=lambda h: h, q=a.query.bias, k=a.key.bias, v=a.value.bias, output=a.dense)


def _albert(groups):
    def make():
        from transformers import AlbertConfig, AlbertModel

        return AlbertModel(AlbertConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=C, num_hidden_layers=L,
                                        num_hidden_groups=groups, num_attention_heads=H, intermediate_size=37,
                                        max_position_embeddings=40, hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0))
    return make


def _albert_layers(model):  # layer i runs group int(i / (L / groups))'s one layer
    groups = model.encoder.albert_layer_groups
    return [groups[int(i / (L / len(groups)))].albert_layers[0] for i in range(L)]


def _fused(bias):  # q, k, v stacked along the output: [b_q | b_k | b_v]
    return dict(q=bias[:C], k=bias[C:2 * C], v=bias[2 * C:])


def _modernbert_oracle(layer):  # pre-norm: attn_norm (Identity in layer 0, LayerNorm after) then Wqkv
    return dict(x=layer.attn_norm, output=layer.attn.Wo, attention=layer.attn, **_fused(layer.attn.Wqkv.bias))


def _gpt2_oracle(layer):  # pre-norm: ln_1 then c_attn (Conv1D)
    return dict(x=layer.ln_1, output=layer.attn.c_proj, **_fused(layer.attn.c_attn.bias))


def _llama_oracle(layer):  # pre-norm: input_layernorm (RMSNorm) then q_proj/k_proj/v_proj; rotary as ModernBERT's
    a = layer.self_attn

    def per_query_head(bias):  # grouped-query: query head h reads key/value head h // (H / key-value heads)
        shared = bias.view(-1, D)
        return torch.cat([shared[h // (H // shared.shape[0])] for h in range(H)])

    return dict(x=layer.input_layernorm, q=a.q_proj.bias, k=per_query_head(a.k_proj.bias),
                v=per_query_head(a.v_proj.bias), output=a.o_proj, attention=a)


def _opt_oracle(layer):  # pre-norm: self_attn_layer_norm then q_proj/k_proj/v_proj, learned positions
    a = layer.self_attn
    return dict(x=layer.self_attn_layer_norm, q=a.q_proj.bias, k=a.k_proj.bias, v=a.v_proj.bias, output=a.out_proj)


def _phi_oracle(layer):  # pre-norm: input_layernorm then q_proj/k_proj/v_proj (the MLP reads the same input)
    a = layer.self_attn
    return dict(x=layer.input_layernorm, q=a.q_proj.bias, k=a.k_proj.bias, v=a.v_proj.bias, output=a.dense,
                attention=a)


def _gpt_neox_oracle(layer):  # pre-norm: input_layernorm then query_key_value, whose rows are (head, q/k/v, D)
    a = layer.attention
    q, k, v = (torch.cat([a.query_key_value.bias[(3 * h + part) * D:(3 * h + part + 1) * D] for h in range(H)])
               for part in range(3))
    return dict(x=layer.input_layernorm, q=q, k=k, v=v, output=a.dense, attention=a)


def _minattn_oracle(layer):  # pre-norm (the default): attention_norm then attention.qkv_proj
    qkv = layer.attention.qkv_proj
    biases = _fused(qkv.bias) if qkv is not None else dict(q=None, k=None, v=None)
    return dict(x=layer.attention_norm, output=layer.attention.o_proj, **biases)


# name: (make the model, each layer from the bare model, that layer's oracle, expected source, causal)
ARCHITECTURES = {
    "bert": (_bert_like("BertConfig", "BertModel"), lambda m: m.encoder.layer, _bert_oracle, "BERT-style", False),
    "roberta": (_bert_like("RobertaConfig", "RobertaModel", pad_token_id=1, bos_token_id=0, eos_token_id=2),
                lambda m: m.encoder.layer, _bert_oracle, "BERT-style", False),
    "electra": (_bert_like("ElectraConfig", "ElectraModel", embedding_size=16), lambda m: m.encoder.layer,
                _bert_oracle, "BERT-style", False),
    "distilbert": (_distilbert, lambda m: m.transformer.layer, _distilbert_oracle, "DistilBERT-style", False),
    # DeBERTa's position-to-content and content-to-position terms off: the oracle's softmax is of the content term
    "deberta_v2": (_bert_like("DebertaV2Config", "DebertaV2Model", relative_attention=False, pos_att_type=[],
                              position_biased_input=True), lambda m: m.encoder.layer, _deberta_v2_oracle,
                   "DeBERTa-v2-style", False),
    "mpnet": (_bert_like("MPNetConfig", "MPNetModel"), lambda m: m.encoder.layer, _mpnet_oracle, "MPNet-style", False),
    "albert": (_albert(groups=1), _albert_layers, _albert_oracle, "ALBERT-style", False),  # one layer run L times
    "albert_two_groups": (_albert(groups=2), _albert_layers, _albert_oracle, "ALBERT-style", False),
    "modernbert": (_modernbert, lambda m: m.layers, _modernbert_oracle, "ModernBERT-style", False),
    "gpt2": (_gpt2, lambda m: m.h, _gpt2_oracle, "GPT-2-style", True),
    "llama": (_llama(), lambda m: m.layers, _llama_oracle, "Llama-style", True),
    "llama_grouped_query": (_llama(key_value_heads=2), lambda m: m.layers, _llama_oracle, "Llama-style", True),
    "opt": (_opt, lambda m: m.decoder.layers, _opt_oracle, "OPT-style", True),
    "phi": (_phi, lambda m: m.layers, _phi_oracle, "Phi-style", True),
    "gpt_neox": (_gpt_neox, lambda m: m.layers, _gpt_neox_oracle, "GPT-NeoX-style", True),
    "minattn": (_minattn(), lambda m: m.layers, _minattn_oracle, "get_head_weights()", False),
}


def _model(name):
    """A tiny random model with weights large enough for sharp attention and non-zero biases everywhere (HF inits
    biases at 0, which would hide a wrong bias slice)."""
    torch.manual_seed(0)
    model = ARCHITECTURES[name][0]().eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        for param_name, param in model.named_parameters():
            if "relative_attention_bias" in param_name:  # MPNet's position bias, added to the scores: left at 0
                param.zero_()
            elif param_name.endswith("bias"):
                param.normal_(0, 0.5)
            elif param.dim() >= 2:
                param.normal_(0, 0.3)
    return model


def _layer_input(args, kwargs):
    return args[0] if args else kwargs["hidden_states"]


def _run(model, name, input_ids):
    """The model's attentions, each layer's input and each oracle output module's output, on `input_ids`. Each
    hooked module records its calls in order; layer i gets the call of its module that the layers before it using
    the same module leave (ALBERT's layers share one module; elsewhere each module runs once)."""
    layers = ARCHITECTURES[name][1](model)
    oracles = [ARCHITECTURES[name][2](layer) for layer in layers]
    calls, handles = {}, []  # (what, id(module)) -> values in call order

    def record(what, module, value):
        calls.setdefault((what, id(module)), []).append(value)

    hooked = set()
    for layer, oracle in zip(layers, oracles):
        if id(layer) in hooked:
            continue
        hooked.add(id(layer))
        handles.append(layer.register_forward_pre_hook(
            lambda m, args, kwargs: record("layer_input", m, _layer_input(args, kwargs)), with_kwargs=True))
        handles.append(oracle["output"].register_forward_hook(lambda m, args, out: record("output", m, out)))
        if "attention" in oracle:  # ModernBERT, Llama, GPT-NeoX: the rotary cos, sin its attention receives
            handles.append(oracle["attention"].register_forward_pre_hook(
                lambda m, args, kwargs: record("rotary", m, kwargs["position_embeddings"]), with_kwargs=True))
    try:
        with torch.no_grad(), capture_attention_inputs(model) as inputs:
            attentions = model(input_ids=input_ids, output_attentions=True).attentions
            table_input = list(inputs)
    finally:
        for handle in handles:
            handle.remove()
    seen, used = {"table_input": table_input}, {}
    for what, module_of in (("layer_input", lambda i: layers[i]), ("output", lambda i: oracles[i]["output"]),
                            ("rotary", lambda i: oracles[i].get("attention"))):
        seen[what] = []
        for i in range(L):
            key = (what, id(module_of(i)))
            seen[what].append(calls[key][used.get(key, 0)] if key in calls else None)
            used[key] = used.get(key, 0) + 1
    return attentions, seen, oracles


def _input_ids():
    return torch.randint(4, VOCAB, (2, T), generator=torch.Generator().manual_seed(1))


def _per_head(vector):  # (C,) -> (H, D): head h owns channels h*D:(h+1)*D
    return torch.zeros(H, D) if vector is None else vector.detach().view(H, D)


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_head_weights_shapes_and_source(name):
    model = _model(name)
    heads, source = head_weights(model)
    assert ARCHITECTURES[name][3] in source and len(heads) == L
    for layer in heads:
        assert {k: tuple(v.shape) for k, v in layer.items()} == {"W_Q": (H, D, C), "W_K": (H, D, C), "W_V": (H, D, C),
                                                                 "W_O": (H, C, D)}
    table_heads, table_source = layouts.layout_head_weights(model)  # the table itself, for MinAttn too
    assert table_source.startswith("MinAttn" if name == "minattn" else ARCHITECTURES[name][3])
    for mine, theirs in zip(table_heads, heads):
        assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    spectra = weight_spectra(model, compare_with_init=False)  # the weights probe runs on it
    assert spectra.head_dim == D and len(spectra.trained.qk_effective_rank) == L


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_returned_weights_reproduce_the_models_attention_and_output(name):
    """Per layer and head: softmax((W_Q x + b_Q)(W_K x + b_K)^T / sqrt(D)) is the model's own attention (rotary and
    the causal mask applied where the model applies them), and sum_h W_O^h sum_j a_ij (W_V^h x_j + b_V^h) + b_O is
    what the output projection returns. The input hook sees the attention sublayer's input (the normed layer input
    in a pre-norm model), and value_bias is b_V."""
    model = _model(name)
    attentions, seen, oracles = _run(model, name, _input_ids())
    heads, _ = head_weights(model)
    modules = attention_modules(model)
    causal = ARCHITECTURES[name][4]
    for i in range(L):
        oracle, W = oracles[i], heads[i]
        with torch.no_grad():
            x = oracle["x"](seen["layer_input"][i])  # (B, T, C)
        torch.testing.assert_close(seen["table_input"][i], x)
        assert modules[i]["output"] is oracle["output"]
        if oracle["v"] is None:
            assert modules[i]["value_bias"] is None
        else:
            assert torch.equal(modules[i]["value_bias"], oracle["v"].detach())

        q = torch.einsum("hdc,btc->bhtd", W["W_Q"], x) + _per_head(oracle["q"])[None, :, None]  # (B, H, T, D)
        k = torch.einsum("hdc,btc->bhtd", W["W_K"], x) + _per_head(oracle["k"])[None, :, None]
        if seen["rotary"][i] is not None:
            from transformers.models.modernbert.modeling_modernbert import apply_rotary_pos_emb

            q, k = apply_rotary_pos_emb(q, k, *seen["rotary"][i])
        logits = q @ k.transpose(-1, -2) / D ** 0.5  # (B, H, T, T)
        if causal:
            logits = logits.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        torch.testing.assert_close(logits.softmax(-1), attentions[i], atol=1e-5, rtol=1e-4)
        # and the check can fail: the keys of the neighbouring head (a slicing off by one head) give other attention
        wrong = (q @ k.roll(1, dims=1).transpose(-1, -2) / D ** 0.5)
        if causal:
            wrong = wrong.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        assert (wrong.softmax(-1) - attentions[i]).abs().max() > 0.05

        v = torch.einsum("hdc,btc->bhtd", W["W_V"], x) + _per_head(oracle["v"])[None, :, None]
        z = attentions[i] @ v  # (B, H, T, D): each head's output
        rebuilt = torch.einsum("hcd,bhtd->btc", W["W_O"], z) + oracle["output"].bias
        torch.testing.assert_close(rebuilt, seen["output"][i], atol=1e-5, rtol=1e-4)
        norms = transformed_value_norms(model, seen["table_input"])[i]  # ||W_O^h (W_V^h x_j + b_V^h)||
        torch.testing.assert_close(norms, torch.einsum("hcd,bhtd->bhtc", W["W_O"], v).norm(dim=-1), atol=1e-5,
                                   rtol=1e-4)


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_zero_head_removes_exactly_that_heads_term(name):
    """Zeroing head 1 of the last layer changes that layer's output projection by -W_O^1 z^1, nothing else (its
    inputs come from the earlier layers, untouched)."""
    model = _model(name)
    input_ids = _input_ids()
    attentions, intact, _ = _run(model, name, input_ids)
    with zero_head(model, L - 1, 1):
        _, ablated, _ = _run(model, name, input_ids)
    W = head_weights(model)[0][L - 1]
    x = intact["table_input"][L - 1]
    oracle = ARCHITECTURES[name][2](ARCHITECTURES[name][1](model)[L - 1])
    v = torch.einsum("dc,btc->btd", W["W_V"][1], x) + _per_head(oracle["v"])[1]
    z = attentions[L - 1][:, 1] @ v  # (B, T, D)
    torch.testing.assert_close(ablated["output"][L - 1] - intact["output"][L - 1], -z @ W["W_O"][1].T, atol=1e-5,
                               rtol=1e-4)
    torch.testing.assert_close(ablated["output"][0], intact["output"][0], atol=0, rtol=0)


def test_queries_and_keys_normalised_per_head_skip_the_weights_probe_only():
    """Qwen 3 normalises each head's queries and keys after q_proj and k_proj (q_norm, k_norm): its names are
    Llama's, so the table reads its heads, and the norm weighting (W_V, W_O) holds, but W_Q^T W_K is not the form
    its attention computes: the weights probe refuses it by name rather than report those circuits."""
    from transformers import Qwen3Config, Qwen3Model

    model = Qwen3Model(Qwen3Config(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=L, num_attention_heads=H,
                                   num_key_value_heads=2, head_dim=D, intermediate_size=37))
    assert len(head_weights(model)[0]) == L and len(attention_modules(model)) == L
    with pytest.raises(UnsupportedArchitecture, match=r"Qwen3Model normalises each head's queries and keys after W_Q "
                                                      r"and W_K \(layers.0.self_attn.q_norm and 3 more\)"):
        weight_spectra(model)


def test_gpt2_conv1d_weights_are_transposed():
    """Conv1D stores (in, out): head h's query is columns h*D:(h+1)*D of c_attn.weight, its value columns 2C + h*D..,
    and its W_O rows h*D:(h+1)*D of c_proj.weight; the forward computes x @ weight + bias."""
    model = _model("gpt2")
    attn = model.h[0].attn
    W = head_weights(model)[0][0]
    for h in range(H):
        assert torch.equal(W["W_Q"][h], attn.c_attn.weight[:, h * D:(h + 1) * D].T)
        assert torch.equal(W["W_K"][h], attn.c_attn.weight[:, C + h * D:C + (h + 1) * D].T)
        assert torch.equal(W["W_V"][h], attn.c_attn.weight[:, 2 * C + h * D:2 * C + (h + 1) * D].T)
        assert torch.equal(W["W_O"][h], attn.c_proj.weight[h * D:(h + 1) * D, :].T)
    x = torch.randn(C)
    with torch.no_grad():
        q = attn.c_attn(x[None])[0, :C] - attn.c_attn.bias[:C]
    torch.testing.assert_close(torch.einsum("hdc,c->hd", W["W_Q"], x).reshape(C), q)
    assert torch.equal(attention_modules(model)[0]["value_bias"], attn.c_attn.bias[2 * C:].detach())


def test_minattn_identity_projection_through_the_table():
    """qkv_proj None: the table gives W_Q = W_K = W_V = I split into heads, no value bias, x enters `attention`."""
    model = _minattn(qkv_projection="identity")().eval()
    heads, _ = layouts.layout_head_weights(model)
    assert all(torch.equal(a, b) for mine, theirs in zip(heads, model.get_head_weights()) for a, b in
               ((mine[k], theirs[k]) for k in mine))
    assert torch.equal(heads[0]["W_Q"].reshape(C, C), torch.eye(C))
    modules = attention_modules(model)
    assert modules[0]["value_bias"] is None and modules[0]["input"] is model.layers[0].attention


def _t5_encoder():
    from transformers import T5Config, T5EncoderModel

    return T5EncoderModel(T5Config(vocab_size=130, d_model=C, num_layers=L, num_heads=H, d_kv=D, d_ff=37,
                                   dropout_rate=0.0, decoder_start_token_id=0)).eval()


def _mixer():
    """A PreTrainedModel whose layers mix tokens with no module named *attn*/*attention*."""
    from transformers import PretrainedConfig, PreTrainedModel

    class MixerConfig(PretrainedConfig):
        model_type = "test-mixer"

    class Mixer(PreTrainedModel):
        config_class = MixerConfig

        def __init__(self, config):
            super().__init__(config)
            self.blocks = nn.ModuleList(nn.ModuleDict({"mix": nn.Linear(C, C), "gate": nn.Linear(C, C)})
                                        for _ in range(L))

    return Mixer(MixerConfig(hidden_size=C, num_attention_heads=H, num_hidden_layers=L))


def test_unknown_layout_names_what_it_found_and_what_it_knows(tokenizer):
    model = _t5_encoder()
    for probe in (head_weights, attention_modules):
        with pytest.raises(UnsupportedArchitecture) as error:
            probe(model)
        message = str(error.value)
        assert "T5EncoderModel" in message and "encoder.block[0]" in message
        assert "layer.0.SelfAttention (T5Attention)" in message and "layer.0.SelfAttention.q (Linear)" in message
        assert "get_head_weights()" in message
        assert all(layout.name in message for layout in layouts.LAYOUTS)
    with pytest.raises(UnsupportedArchitecture, match="T5EncoderModel"):
        with zero_head(model, 0, 0):
            pass
    with pytest.raises(UnsupportedArchitecture, match=r"Mixer .*blocks\[0\].*no module named \*attn\*.*mix \(Linear\), "
                                                      r"gate \(Linear\)"):
        head_weights(_mixer())

    # the probes that need no weights still run on it: the head statistics, without the norm-weighted ones
    from hf_minattn.probes.heads import head_statistics

    stats = head_statistics(model, tokenizer, TEXTS[:4], max_sentences=4, js_sentences=2)
    assert any(note.startswith("norm-weighted attention skipped: don't know where T5EncoderModel")
               for note in stats.notes)
    assert len(stats.stats["self"]) == L and len(stats.stats["self"][0]) == H


def test_a_matching_layout_with_other_shapes_is_refused():
    """BERT names, but a query projection of 16 outputs (e.g. grouped-query): refused, not misread."""
    model = _model("bert")
    model.encoder.layer[1].attention.self.query = nn.Linear(C, 16)
    with pytest.raises(UnsupportedArchitecture, match=r"layer 1's query maps 32 -> 16 features .* need 32 -> 32"):
        head_weights(model)
    model = _model("gpt2")
    model.h[0].attn.c_proj = nn.Linear(C, C)  # not a Conv1D: GPT-2's names, but not its layout
    with pytest.raises(UnsupportedArchitecture, match="GPT2Model"):
        head_weights(model)
    grouped = _model("llama_grouped_query")
    grouped.config.num_key_value_heads = 3  # keys of 2 heads, but the config says 3
    with pytest.raises(UnsupportedArchitecture, match=r"4 query heads do not share 3 key/value heads evenly"):
        head_weights(grouped)
    grouped.config.num_key_value_heads = 4
    with pytest.raises(UnsupportedArchitecture, match=r"Llama-style .* layer 0's key maps 32 -> 16 features"):
        attention_modules(grouped)  # so the norm weighting and the ablation are skipped too
