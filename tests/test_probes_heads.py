"""Known-answer tests of issue 9's head probes: roles relative to uniform attention, per-head ablation,
norm-weighted attention (Kobayashi et al. 2020), head divergence, relative graph thresholds, and the report
sentences they produce (each flipped by its numbers)."""

import numpy as np
import pytest
import torch
from conftest import TEXTS, tiny_config
from transformers import BertConfig, BertForMaskedLM, BertModel

from hf_minattn import MinAttnForMaskedLM, MinAttnModel
from hf_minattn.probes import report
from hf_minattn.probes.attention_norms import capture_attention_inputs, norm_weighted, transformed_value_norms
from hf_minattn.probes.head_ablation import head_ablation, zero_head
from hf_minattn.probes.head_divergence import (cross_js_divergence_sums, cross_model_head_divergence,
                                               matched_head_divergence)
from hf_minattn.probes.heads import (AttentionExample, HeadStatistics, attention_graph, head_roles, head_statistics,
                                     js_divergence_sums, within_layer_divergence)
from hf_minattn.probes.weights import UnsupportedArchitecture, head_weights


def _hand_attention():
    """Two sentences: n = 4 (tokens CLS a , SEP) and n = 2 (CLS SEP, then 2 pads). Head 0 is uniform over real keys,
    head 1 attends to the previous token (token 0 to itself)."""
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    uniform = mask[:, None, :].float().expand(2, 4, 4) / mask.sum(-1)[:, None, None]
    previous = torch.zeros(2, 4, 4)
    for t in range(4):
        previous[:, t, max(t - 1, 0)] = 1
    att = torch.stack([uniform, previous], dim=1)  # (B, heads, T, T)
    kinds = {"cls": torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]]).bool(), "sep": torch.tensor([[0, 0, 0, 1], [0, 1, 0, 0]]).bool(),
             "punctuation": torch.tensor([[0, 0, 1, 0], [0, 0, 0, 0]]).bool()}
    return [att], mask, kinds


def test_relative_to_uniform_by_hand():
    stats = HeadStatistics()
    stats.add(*_hand_attention())
    expected = stats.uniform_expectation()
    # self: 4 queries at 1/4 and 2 at 1/2 -> 2/6; previous: 3 queries at 1/4 and 1 at 1/2 -> 1.25/4
    assert expected["self"] == pytest.approx(2 / 6) and expected["previous"] == pytest.approx(1.25 / 4)
    assert expected["punctuation"] == pytest.approx(4 * 0.25 / 6)  # 1 of 4 keys in sentence 0, none in sentence 1
    assert expected["entropy"] == pytest.approx((4 * np.log(4) + 2 * np.log(2)) / 6)
    relative = stats.relative_to_uniform()
    for name, values in relative.items():  # a uniform head is at 1x on every statistic
        assert values[0][0] == pytest.approx(1.0), name
    assert relative["previous"][0][1] == pytest.approx(1 / (1.25 / 4))  # always previous: 3.2x
    assert head_roles(relative) == [["none", "previous"]]
    assert head_roles(relative, min_ratio=4.0) == [["none", "none"]]


def test_relative_ratio_is_none_without_any_key_of_a_kind():
    att, mask, kinds = _hand_attention()
    kinds["punctuation"][:] = False
    stats = HeadStatistics()
    stats.add(att, mask, kinds)
    assert stats.relative_to_uniform()["punctuation"] == [[None, None]]


def _bert_mlm(tokenizer):
    return BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                      intermediate_size=30, max_position_embeddings=24, hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0)).eval()


def _output_linear(model, layer):
    return model.base_model.layers[layer].attention.o_proj if hasattr(model.base_model, "layers") else \
        model.base_model.encoder.layer[layer].attention.output.dense


@pytest.mark.parametrize("kind", ["minattn", "bert"])
def test_ablating_a_head_whose_output_slice_is_zero_changes_nothing(tokenizer, kind):
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval() if kind == "minattn" else _bert_mlm(tokenizer)
    H = model.config.num_attention_heads
    D = model.config.hidden_size // H
    with torch.no_grad():
        _output_linear(model, 1).weight[:, 1 * D:2 * D] = 0  # layer 1, head 1 already outputs nothing
    result = head_ablation(model, tokenizer, TEXTS[:8], seed=1)
    increase = np.array(result.loss_increase)
    assert increase.shape == (2, H) and result.masked_tokens >= 8
    assert increase[1, 1] == 0.0
    assert increase[0, 0] != 0.0  # a head that does output something changes the loss


def test_zero_head_zeroes_exactly_that_slice(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    seen = []
    handle = model.layers[0].attention.o_proj.register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()))
    enc = tokenizer(TEXTS[1:3], padding=True, return_tensors="pt")
    with torch.no_grad(), zero_head(model, 0, 2):
        model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    handle.remove()
    # the hook registered first sees the input before zeroing; run again to see what W_O receives
    D = 9
    with torch.no_grad(), zero_head(model, 0, 2):
        captured = []
        h2 = model.layers[0].attention.o_proj.register_forward_hook(lambda m, args, out: captured.append(args[0].clone()))
        model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        h2.remove()
    assert torch.all(captured[0][..., 2 * D:3 * D] == 0) and torch.equal(captured[0][..., :2 * D], seen[0][..., :2 * D])
    with pytest.raises(ValueError, match="layer, head"):
        with zero_head(model, 5, 0):
            pass


def test_ablation_needs_a_masked_lm(tokenizer):
    with pytest.raises(UnsupportedArchitecture, match="masked-LM"):
        head_ablation(MinAttnModel(tiny_config(vocab_size=len(tokenizer))), tokenizer, TEXTS[:2])
    with pytest.raises(ValueError, match="mask_probability"):
        head_ablation(MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))), tokenizer, TEXTS[:2], mask_probability=2)


def test_norm_weighting_gives_a_zero_vector_zero_weight():
    attention = torch.full((1, 2, 3, 3), 1 / 3)
    norms = torch.tensor([[[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]]])
    shares = norm_weighted(attention, norms)
    assert torch.all(shares[0, 0, :, 1] == 0)
    torch.testing.assert_close(shares[0, 0, 0], torch.tensor([1 / 3, 0, 2 / 3]))
    torch.testing.assert_close(shares[0, 1], attention[0, 1])  # equal norms: shares = attention
    with pytest.raises(ValueError, match="must match"):
        norm_weighted(attention, norms[..., :2])


def test_norm_weighting_in_a_model_whose_value_of_one_token_is_zero(tokenizer):
    """Pre-norm, no positions, no Q/K/V bias: a token whose word embedding is 0 has LayerNorm(0) = 0, so
    W_V x + b_V = 0 and it moves nothing, whatever attention it gets."""
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer), position_embedding_type="none",
                                     intermediate_size=0, num_hidden_layers=1)).eval()
    enc = tokenizer(["the king and the queen"], return_tensors="pt")
    zero_id = int(enc["input_ids"][0, 2])
    with torch.no_grad():
        model.get_input_embeddings().weight[zero_id] = 0
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        att = model(**enc, output_attentions=True).attentions
        norms = transformed_value_norms(model, inputs)[0]
    assert torch.all(norms[0, :, 2] == 0) and torch.all(norms[0, :, 1] > 0)
    shares = norm_weighted(att[0], norms)
    assert torch.all(shares[0, :, :, 2] == 0) and torch.all(att[0][0, :, :, 2] > 0)


@pytest.mark.parametrize("kind", ["minattn", "bert"])
def test_transformed_values_reproduce_the_attention_output(tokenizer, kind):
    """sum_h sum_j a_ij W_O^h (W_V^h x_j + b_V^h) + b_O is exactly what W_O outputs: the decomposition behind the norms."""
    if kind == "minattn":
        model = MinAttnModel(tiny_config(vocab_size=len(tokenizer), qkv_bias=True)).eval()
        with torch.no_grad():
            model.layers[0].attention.qkv_proj.bias.normal_()
    else:
        model = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                     intermediate_size=30, max_position_embeddings=24)).eval()
        model.set_attn_implementation("eager")
    output = _output_linear(model, 0)
    captured = []
    handle = output.register_forward_hook(lambda m, args, out: captured.append(out))
    enc = tokenizer(["the king and the queen ruled"], return_tensors="pt")
    enc.pop("token_type_ids", None)
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        att = model(**enc, output_attentions=True).attentions
        x = inputs[0]
    handle.remove()
    weights = head_weights(model)[0][0]
    C = model.config.hidden_size
    bias = (model.layers[0].attention.qkv_proj.bias[2 * C:] if kind == "minattn"
            else model.encoder.layer[0].attention.self.value.bias).detach()
    values = torch.einsum("hdc,btc->bhtd", weights["W_V"], x) + bias.view(weights["W_V"].shape[0], 1, -1)
    f = torch.einsum("hcd,bhtd->bhtc", weights["W_O"], values)  # (B, H, T, C)
    rebuilt = torch.einsum("bhij,bhjc->bic", att[0], f) + output.bias
    torch.testing.assert_close(rebuilt, captured[0], atol=1e-5, rtol=1e-4)
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        model(**enc)
        torch.testing.assert_close(transformed_value_norms(model, inputs)[0], f.norm(dim=-1), atol=1e-5, rtol=1e-4)


def test_head_statistics_carry_relative_and_norm_weighted_numbers(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    result = head_statistics(model, tokenizer, TEXTS[:8], examples=[TEXTS[0]])
    assert np.array(result.relative_to_uniform["punctuation"]).shape == (2, 4)
    assert np.array(result.roles).shape == (2, 4) and len(result.within_layer_js) == 2
    assert np.array(result.norm_weighted_stats["cls"]).shape == (2, 4)
    shares = np.array(result.examples[0].norm_weighted)
    np.testing.assert_allclose(shares.sum(-1), 1, atol=1e-3)
    off = head_statistics(model, tokenizer, TEXTS[:8], norm_weighting=False)
    assert off.norm_weighted_stats == {} and off.roles == result.roles


def test_within_layer_and_matched_head_divergence(tokenizer):
    js = np.array([[0, .2, .5, .5], [.2, 0, .5, .5], [.5, .5, 0, .4], [.5, .5, .4, 0]])
    assert within_layer_divergence(js, 2, 2) == pytest.approx([0.2, 0.4])
    with pytest.raises(ValueError, match="js must be"):
        within_layer_divergence(js, 3, 2)
    # b = a with the heads of each layer swapped: matched divergence 0 through the swap
    cross = np.array([[.3, 0, .5, .5], [0, .3, .5, .5], [.5, .5, .2, 0], [.5, .5, 0, .2]])
    result = matched_head_divergence(cross, js, js, 2, 2)
    assert result.matched == [0, 0] and result.matching == [[1, 0], [1, 0]]
    # one model against itself: every head matches itself at divergence 0, below the within-layer divergence
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    same = cross_model_head_divergence(model, model, tokenizer, TEXTS[:8])
    assert np.allclose(same.matched, 0, atol=1e-6) and same.matching == [[0, 1, 2, 3]] * 2
    assert all(w > 0 for w in same.within_layer_a)
    enc = tokenizer(TEXTS[1:4], padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        att = model(**enc, output_attentions=True).attentions
    torch.testing.assert_close(cross_js_divergence_sums(att, att, enc["attention_mask"]),
                               js_divergence_sums(att, enc["attention_mask"]), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="same layers x heads"):
        cross_model_head_divergence(model, MinAttnModel(tiny_config(vocab_size=len(tokenizer), num_hidden_layers=1)),
                                    tokenizer, TEXTS[:2])


def test_graph_threshold_is_relative_to_uniform():
    n = 4
    uniform = torch.full((1, 1, n, n), 1 / n)
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3], attention=uniform.tolist(),
                               norm_weighted=torch.eye(n)[None, None].tolist())
    assert len([e for e in attention_graph(example, relative_threshold=1.0)["edges"] if e["head"] == 0]) == n * n
    graph = attention_graph(example)  # default: 2x uniform
    assert graph["threshold"] == pytest.approx(2 / n) and graph["edges"] == []
    norm = attention_graph(example, weighting="norm")
    assert {(e["source"], e["target"]) for e in norm["edges"] if e["head"] == 0} == {(i, i) for i in range(n)}
    with pytest.raises(ValueError, match="weighting"):
        attention_graph(example, weighting="raw")


def _heads_dict(previous_ratio, punct_ratio):
    return {"num_layers": 1, "num_heads": 2, "role_min_ratio": 2.0,
            "relative_to_uniform": {"previous": [[previous_ratio, 1.0]], "punctuation": [[punct_ratio, 1.0]]},
            "stats": {"previous": [[0.5, 0.1]], "punctuation": [[0.2, 0.1]]},
            "uniform_expectation": {"previous": 0.1, "punctuation": 0.1},
            "roles": head_roles({"previous": [[previous_ratio, 1.0]], "punctuation": [[punct_ratio, 1.0]]})}


def test_head_roles_sentence_follows_the_numbers():
    assert "most heads stay close to uniform" in report.head_roles_text({"heads": _heads_dict(1.5, 1.2)})
    assert "commonest role is previous token" in report.head_roles_text({"heads": _heads_dict(5.0, 1.2)})
    assert "commonest role is punctuation" in report.head_roles_text({"heads": _heads_dict(2.5, 3.0)})


def test_norm_weighting_sentence_follows_the_numbers():
    h = {"stats": {"cls": [[0.6]], "sep": [[0.1]]}, "norm_weighted_stats": {"cls": [[0.1]], "sep": [[0.1]]}}
    assert "[CLS] falls from 0.60 to 0.10" in report.norm_weighting_text({"heads": h})
    h["norm_weighted_stats"]["cls"] = [[0.9]]
    assert "[CLS] rises from 0.60 to 0.90" in report.norm_weighting_text({"heads": h})


def test_ablation_sentence_follows_the_numbers():
    a = {"num_heads": 2, "base_loss": 5.0, "masked_tokens": 10, "sentences": 2, "loss_increase": [[0.5, 0.0]],
         "interval95": [[0.1, 0.1]]}
    assert "1 of 2 heads raise the loss beyond" in report.head_ablation_text({"head_ablation": a})
    assert "head 0-0 raises it most" in report.head_ablation_text({"head_ablation": a})
    a["loss_increase"] = [[0.05, 0.0]]
    assert "No single head" in report.head_ablation_text({"head_ablation": a})


def test_norm_example_sentence_follows_the_numbers():
    r = {"attention_graph": {"edges": [1, 2, 3]}, "attention_graph_norm_weighted": {"edges": [1]}}
    assert "fewer edges" in report.attention_norm_example_text(r)
    r["attention_graph_norm_weighted"]["edges"] = [1, 2, 3, 4]
    assert "more edges" in report.attention_norm_example_text(r)


def test_run_all_probes_writes_the_new_keys(tmp_path, tokenizer):
    import json

    from hf_minattn.probes.corpus import split_sentences
    from hf_minattn.probes.loading import load_encoder
    from hf_minattn.probes.run import run_all_probes

    MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, tok = load_encoder(str(tmp_path))  # the base model: the masked LM is loaded from the folder for ablation
    results = run_all_probes(model, tok, split_sentences(TEXTS, max_sentences=0), min_count=2, model_path=str(tmp_path),
                             word2vec=False, decontextualized=False, weights=False, log=lambda m: None)
    d = json.loads(json.dumps(results.to_dict(), allow_nan=False))
    assert np.array(d["head_ablation"]["loss_increase"]).shape == (2, 4)
    assert d["sense_accuracy"]["chance"] == 0.5 and d["geometry"]["static"]["self_similarity"] == pytest.approx(1, abs=1e-5)
    assert d["attention_graph_norm_weighted"]["weighting"] == "norm" and d["heads"]["relative_to_uniform"]
    assert d["attention_graph"]["relative_threshold"] == 2.0  # old key kept, threshold now relative to 1/n
    no_head = run_all_probes(model, tok, split_sentences(TEXTS, max_sentences=0), min_count=2, word2vec=False,
                             decontextualized=False, weights=False, log=lambda m: None)
    assert no_head.head_ablation is None and any("head ablation skipped" in n for n in no_head.notes)
