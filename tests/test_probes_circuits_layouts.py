"""The layer-0 circuit probe on every architecture of the layout table: its X is layer 0's own attention input (read
here through the oracles of tests/test_probes_layouts.py, written from the transformers modeling files), its QK form
is built from the oracle's biases, and its OV form is what the model's own value and output modules write to its
output layer."""

from dataclasses import asdict

import pytest
import torch
from conftest import TEXTS, probe_results
from test_probes_layouts import ARCHITECTURES, C, D, H, VOCAB, _model, _per_head, _run

from hf_minattn.probes.circuits import POSITIONS, attention_inputs, circuit_hypotheses, ov_forms, qk_forms
from hf_minattn.probes.report.circuits import _sentences
from hf_minattn.probes.weights import head_weights

# where layer 0's attention input carries no position vector: rotary positions (and MinAttn's tiny config's default)
POSITION_FREE = {"modernbert", "llama", "llama_grouped_query", "phi", "gpt_neox"}
IDS = torch.arange(4, 14)  # ten non-special tokens of the tiny vocabularies


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_the_circuits_read_layer_0s_own_input_and_biases(name):
    """X is layer 0's attention input of each token repeated along a sequence, averaged over positions 1..P; A_h is
    (X W_Q,h^T + b_Q,h)(X W_K,h^T + b_K,h)^T with the oracle's biases; the note says whether positions moved X."""
    model = _model(name)
    _, seen, oracles = _run(model, name, IDS[:, None].expand(-1, 1 + POSITIONS))
    with torch.no_grad():
        x = oracles[0]["x"](seen["layer_input"][0])[:, 1:].double()  # (N, P, C): layer 0's attention input
    X = x.mean(1)
    torch.testing.assert_close(attention_inputs(model, IDS), X, atol=1e-5, rtol=1e-5)
    W = head_weights(model)[0][0]
    q = torch.einsum("hdc,nc->hnd", W["W_Q"].double(), X) + _per_head(oracles[0]["q"]).double()[:, None]  # (H, N, D)
    k = torch.einsum("hdc,nc->hnd", W["W_K"].double(), X) + _per_head(oracles[0]["k"]).double()[:, None]
    torch.testing.assert_close(qk_forms(model, IDS), q @ k.transpose(1, 2), atol=1e-5, rtol=1e-5)
    moved = float((x - x.mean(1, keepdim=True)).norm() / x.norm()) > 1e-6
    model_type = model.config.model_type
    assert moved == (name not in POSITION_FREE and not (model_type == "minattn"
                                                        and model.config.position_embedding_type != "learned"))
    result = circuit_hypotheses(model, n_tokens=20, n_resamples=10)
    assert ("holds position vectors" in result.note) == moved
    assert len(result.identity) == H and result.head_dim == D
    # where the attention adds terms of its own to these logits, the sentences the report shows say they are left out
    others = {"deberta_v2": "content-to-position and position-to-content", "mpnet": "a relative position bias"}
    shown = _sentences(result.note, 3)
    assert ("to these logits, left out here" in shown) == (name in others) and others.get(name, "") in shown


def _randomised(model):
    torch.manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0, 0.3)
    return model.eval()


def _bert_mlm():
    from transformers import BertConfig, BertForMaskedLM

    model = _randomised(BertForMaskedLM(BertConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=1,
                                                   num_attention_heads=H, intermediate_size=37,
                                                   tie_word_embeddings=False)))
    layer = model.bert.encoder.layer[0].attention
    return model, layer.self.value, layer.output.dense, model.cls.predictions.decoder, lambda v: v


def _gpt2_lm():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = _randomised(GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=C, n_layer=1, n_head=H, n_positions=40)))
    attention = model.transformer.h[0].attn
    return model, attention.c_attn, attention.c_proj, model.lm_head, lambda qkv: qkv[:, 2 * C:]  # [q | k | v]


@pytest.mark.parametrize("make", [_bert_mlm, _gpt2_lm], ids=["bert-masked-lm", "gpt2-lm"])
def test_the_ov_form_is_what_a_head_writes_to_the_output_layer(make):
    """Column j of M_h: token j's value through head h alone and the output projection (biases off), read by the
    model's output layer (its bias off): the direct path, from the model's own modules."""
    model, value, output, decoder, value_part = make()
    X = attention_inputs(model, IDS).float()  # (N, C)
    with torch.no_grad():
        v = value_part(value(X)) - value_part(value(torch.zeros(1, C)))  # (N, C): values, bias off
        forms = ov_forms(model, IDS)
        for h in range(H):
            alone = torch.zeros_like(v)
            alone[:, h * D:(h + 1) * D] = v[:, h * D:(h + 1) * D]  # head h's output only
            written = output(alone) - output(torch.zeros(1, C))  # (N, C)
            logits = written @ decoder.weight[IDS].T  # (N source, N output)
            torch.testing.assert_close(forms[h], logits.T.double(), atol=1e-4, rtol=1e-4)


def test_factorised_embeddings_and_untied_bare_models_skip_the_ov_scores_saying_why():
    from transformers import AlbertConfig, AlbertForMaskedLM, LlamaConfig, LlamaModel

    albert = AlbertForMaskedLM(AlbertConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=C, num_hidden_layers=1,
                                            num_attention_heads=H, intermediate_size=37)).eval()
    result = circuit_hypotheses(albert, n_tokens=20, n_resamples=10)
    assert result.ov_copying is None and "reads 16 features, not the hidden size 32" in result.note
    llama = LlamaModel(LlamaConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=1, num_attention_heads=H,
                                   intermediate_size=37, tie_word_embeddings=False)).eval()
    result = circuit_hypotheses(llama, n_tokens=20, n_resamples=10)
    assert result.ov_copying is None and "no unembedding" in result.note and result.identity


def test_a_tokenizers_special_ids_are_left_out():
    """A BERT config names only its pad id: [CLS], [SEP] and [MASK] come from the tokenizer's all_special_ids."""
    from transformers import BertConfig, BertModel

    bert = BertModel(BertConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=1, num_attention_heads=H,
                                intermediate_size=37)).eval()
    counts = torch.zeros(VOCAB)
    counts[[37, 7, 9, 11]] = torch.tensor([1000.0, 30, 20, 10])  # id 37 stands for [CLS] here
    assert circuit_hypotheses(bert, counts=counts, n_tokens=3, n_resamples=10).token_ids == [37, 7, 9]
    result = circuit_hypotheses(bert, counts=counts, n_tokens=3, n_resamples=10, special_ids=[37])
    assert result.token_ids == [7, 9, 11]


def test_a_probe_run_on_a_bert_masked_lm_gets_its_circuits(tokenizer):
    """`hf-minattn probe` on a BERT-style masked LM: the circuits run (they used to be skipped as "MinAttn only"),
    against its own initial state, with W_U its decoder and learned positions averaged, and its report says so."""
    from transformers import BertConfig, BertForMaskedLM

    from hf_minattn.probes import ProbeSettings, run_all_probes
    from hf_minattn.probes.corpus import split_sentences
    from hf_minattn.probes.report.circuits import circuits_text

    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=C, num_hidden_layers=2,
                                       num_attention_heads=H, intermediate_size=37, max_position_embeddings=24)).eval()
    results = run_all_probes(model, tokenizer, split_sentences(TEXTS, max_sentences=0),
                             ProbeSettings(min_count=2, word2vec=False, untrained=False, bootstrap=20),
                             log=lambda message: None)
    circuits = results.circuits
    assert circuits is not None and len(circuits.identity) == H and len(circuits.initial) == H
    assert len(circuits.ov_copying) == H and "the output layer of the language-model head" in circuits.note
    assert "holds position vectors" in circuits.note and "positions 1-16" in circuits.note
    assert not set(circuits.token_ids) & set(tokenizer.all_special_ids)
    assert any(note.startswith("circuits: token counts") for note in results.notes)
    assert circuits_text(probe_results(circuits=asdict(circuits))).count("Head ") == H
