"""Attention rollout and attention flow (Abnar & Zuidema 2020): known answers worked out by hand, an independent
max-flow (networkx) on a random graph, the probe entry point on MinAttn and BERT, the graphs' JSON round trip
through results.py, and the report sentences they produce (each flipped by its numbers)."""

import json

import numpy as np
import pytest
import torch
from conftest import TEXTS, probe_results, tiny_config
from transformers import BertConfig, BertModel

from hf_minattn import MinAttnModel
from hf_minattn.probes import report
from hf_minattn.probes.attention_flow import (FLOW_MAX_TOKENS, attention_flow, attention_rollout, flow_graph,
                                              rollout_graph)
from hf_minattn.probes.corpus import split_sentences
from hf_minattn.probes.heads import AttentionExample, word_level_attention
from hf_minattn.probes.report.attention_graphs import attention_graphs_plot, attention_graphs_text
from hf_minattn.probes.results import SavedProbeResults
from hf_minattn.probes import ProbeSettings, run_all_probes


def _three_tokens():
    """(layers=2, heads=2, 3, 3). Layer 0: head 0 attends to token 0, head 1 to token 2 (mean: 0.5 / 0 / 0.5 in
    every row); layer 1: both heads attend to the previous token (token 0 to itself)."""
    to_first = [[1, 0, 0], [1, 0, 0], [1, 0, 0]]
    to_last = [[0, 0, 1], [0, 0, 1], [0, 0, 1]]
    previous = [[1, 0, 0], [1, 0, 0], [0, 1, 0]]
    return np.array([[to_first, to_last], [previous, previous]], dtype=float)


def test_rollout_by_hand():
    # A'_0 = 0.5 * [[.5, 0, .5]] * 3 rows + 0.5 I            A'_1 = 0.5 * previous + 0.5 I
    #      = [[.75, 0, .25], [.25, .5, .25], [.25, 0, .75]]        = [[1, 0, 0], [.5, .5, 0], [0, .5, .5]]
    # rollout[0] = A'_0; rollout[1] = A'_1 A'_0: row 0 = row 0 of A'_0;
    # row 1 = (.75+.25, 0+.5, .25+.25) / 2 = (.5, .25, .25); row 2 = (.25+.25, .5+0, .25+.75) / 2 = (.25, .25, .5)
    expected = np.array([[[0.75, 0.00, 0.25], [0.25, 0.50, 0.25], [0.25, 0.00, 0.75]],
                         [[0.75, 0.00, 0.25], [0.50, 0.25, 0.25], [0.25, 0.25, 0.50]]])
    np.testing.assert_allclose(attention_rollout(_three_tokens()), expected, atol=1e-12)
    # a list of (heads, n, n) per layer, and a model's output for one sentence (per layer (1, heads, n, n)): the same
    np.testing.assert_allclose(attention_rollout(list(_three_tokens())), expected, atol=1e-12)
    np.testing.assert_allclose(attention_rollout(tuple(torch.tensor(_three_tokens())[:, None])), expected, atol=1e-7)


def test_rollout_rows_sum_to_one_and_one_layer_without_residual_is_the_head_mean():
    rng = np.random.default_rng(0)
    attention = rng.dirichlet(np.ones(7), size=(4, 3, 7))  # (layers, heads, n, n), rows on the simplex
    rollout = attention_rollout(attention.round(4))  # rounded as the examples store it: rows renormalised
    assert rollout.shape == (4, 7, 7)
    np.testing.assert_allclose(rollout.sum(-1), 1, atol=1e-12)
    np.testing.assert_allclose(attention_rollout(attention[:1], residual=False)[0], attention[0].mean(0), atol=1e-12)
    # without the residual, the identity no longer dominates: the diagonal is smaller
    assert np.trace(attention_rollout(attention, residual=False)[-1]) < np.trace(rollout[-1])


def test_flow_by_hand():
    # 2 tokens, 2 one-head layers, no residual. Input j -> middle k has capacity A0[k, j], middle k -> output i
    # capacity A1[i, k]. Each path uses its own middle node, so flow(j -> i) = sum_k min(A0[k, j], A1[i, k]):
    # (0->0) min(.9, .6) + min(.3, .4) = .9    (1->0) min(.1, .6) + min(.7, .4) = .5
    # (0->1) min(.9, .5) + min(.3, .5) = .8    (1->1) min(.1, .5) + min(.7, .5) = .6
    attention = np.array([[[[0.9, 0.1], [0.3, 0.7]]], [[[0.6, 0.4], [0.5, 0.5]]]])
    np.testing.assert_allclose(attention_flow(attention, residual=False, normalise=False), [[0.9, 0.5], [0.8, 0.6]],
                               atol=1e-6)  # capacities are rounded to 1e-6
    np.testing.assert_allclose(attention_flow(attention, residual=False),
                               [[0.9 / 1.4, 0.5 / 1.4], [0.8 / 1.4, 0.6 / 1.4]], atol=1e-6)
    # rollout of the same layers multiplies instead: row 0 = .6 * (.9, .1) + .4 * (.3, .7) = (.66, .34)
    np.testing.assert_allclose(attention_rollout(attention, residual=False)[-1], [[0.66, 0.34], [0.6, 0.4]], atol=1e-12)


def test_flow_matches_networkx_on_a_random_graph():
    nx = pytest.importorskip("networkx")  # installed with torch; an independent max-flow implementation
    rng = np.random.default_rng(1)
    attention = rng.dirichlet(np.ones(5), size=(3, 2, 5))  # (layers, heads, n, n)
    mixed = 0.5 * attention.mean(1) + 0.5 * np.eye(5)
    graph = nx.DiGraph()
    for layer, a in enumerate(mixed):
        for i in range(5):
            for k in range(5):
                graph.add_edge((layer, k), (layer + 1, i), capacity=a[i, k])
    expected = np.array([[nx.maximum_flow_value(graph, (0, j), (3, i)) for j in range(5)] for i in range(5)])
    np.testing.assert_allclose(attention_flow(attention, normalise=False), expected, atol=1e-5)
    # a different measure from rollout
    assert not np.allclose(attention_flow(attention), attention_rollout(attention)[-1], atol=1e-3)


def test_flow_token_limit_and_bad_input():
    n = FLOW_MAX_TOKENS + 1
    too_long = np.full((1, 1, n, n), 1 / n)
    with pytest.raises(ValueError, match=f"{n} tokens is above max_tokens={FLOW_MAX_TOKENS}"):
        attention_flow(too_long)
    attention_rollout(too_long)  # rollout has no limit
    with pytest.raises(ValueError, match="batch of 2"):
        attention_rollout(torch.full((2, 2, 1, 3, 3), 1 / 3).unbind(0))
    with pytest.raises(ValueError, match=r"\(layers, heads, n, n\)"):
        attention_rollout(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="same shape"):
        attention_rollout([np.ones((1, 2, 2)), np.ones((1, 3, 3))])


def test_graphs_in_the_attention_graph_schema():
    """A 3-word sentence whose second word has two pieces: the graphs pool after rollout, at word level."""
    attention = _three_tokens()[:, :, [0, 1, 1, 2]][..., [0, 1, 1, 2]]  # (2, 2, 4, 4): token 1 split in two
    attention /= attention.sum(-1, keepdims=True)
    example = AttentionExample(sentence="a bc d", tokens=["a", "b", "##c", "d"], word_ids=[0, 1, 1, 2],
                               attention=attention.tolist())
    graph = rollout_graph(example, relative_threshold=0.0)
    assert graph["weighting"] == "rollout" and graph["layers"] == [0, 1] and graph["level"] == "word"
    assert [n["label"] for n in graph["nodes"]] == ["a", "bc", "d"]
    words, _ = word_level_attention(torch.tensor(attention_rollout(attention)), example.word_ids)  # (2, 3, 3)
    weights = {(e["layer"], e["source"], e["target"]): e["weight"] for e in graph["edges"]}
    assert {e["head"] for e in graph["edges"]} == {"mean"} and len(weights) == 2 * 3 * 3
    for (layer, source, target), weight in weights.items():
        assert weight == pytest.approx(float(words[layer, source, target]), abs=1e-4)
    assert graph["self_share"] == pytest.approx(words.diagonal(dim1=-2, dim2=-1).mean(-1).tolist(), abs=1e-4)
    flow = flow_graph(example)
    assert flow["weighting"] == "flow" and flow["layers"] == [1] and {e["layer"] for e in flow["edges"]} == {1}
    assert flow["threshold"] == pytest.approx(2 / 3)  # the default: twice uniform over the 3 words


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["minattn", "bert"])
def test_probe_entry_point_writes_rollout_and_flow(architecture, tokenizer, tmp_path):
    if architecture == "minattn":
        model = MinAttnModel(tiny_config(vocab_size=len(tokenizer)))
    else:  # randomly initialised, nothing downloaded
        model = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=36, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37, max_position_embeddings=32))
    settings = ProbeSettings(min_count=2, word2vec=False, decontextualized=False, weights=False, ablation=False,
                             bootstrap=10, head_sentences=8)
    results = run_all_probes(model.eval(), tokenizer, split_sentences(TEXTS, max_sentences=0), settings,
                             log=lambda m: None)
    example = results.heads.examples[0]
    # an independent rollout from a fresh forward pass: torch matrix products, pooled to words
    enc = tokenizer(example.sentence, truncation=True, max_length=len(example.tokens), return_tensors="pt")
    enc = {k: v for k, v in enc.items() if k != "token_type_ids" or architecture == "bert"}
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        attentions = model(**enc, output_attentions=True).attentions
    n = enc["input_ids"].shape[1]
    rollout = torch.eye(n, dtype=torch.float64)
    for a in attentions:
        rollout = (0.5 * a[0].double().mean(0) + 0.5 * torch.eye(n, dtype=torch.float64)) @ rollout
    words, _ = word_level_attention(rollout, example.word_ids)
    graph = results.attention_graph_rollout
    last = [e for e in graph["edges"] if e["layer"] == 1]
    assert last and graph["layers"] == [0, 1]
    for e in last:  # the stored attention has 4 decimals
        assert e["weight"] == pytest.approx(float(words[e["source"], e["target"]]), abs=2e-3)
    assert results.attention_graph_flow["weighting"] == "flow"
    assert results.timings["attention rollout and flow"] >= 0

    # JSON round trip through the typed reader
    saved = SavedProbeResults.from_dict(json.loads(json.dumps(results.to_dict(), allow_nan=False)))
    assert set(saved.attention_graphs) == {"raw", "norm_weighted", "rollout", "flow"}
    typed = saved.attention_graphs["rollout"]
    assert typed.edges == graph["edges"] and typed.layers == [0, 1] and typed.weighting == "rollout"
    top = typed.strongest(1, k=3)
    expected = sorted((e for e in last if e["source"] != e["target"]), key=lambda e: -e["weight"])[:3]
    assert top == [(typed.labels[e["source"]], typed.labels[e["target"]], e["weight"]) for e in expected]
    assert saved.attention_graphs["raw"].weighting == "attention"
    assert saved.attention_graphs["flow"].layers == [1]

    # the report's figure and section
    r = results.to_dict()
    png = attention_graphs_plot(probe_results(**r), str(tmp_path / "graphs.png"))
    assert png and (tmp_path / "graphs.png").stat().st_size > 1000
    page = report.write_report(r, {"attention_graphs": png}, str(tmp_path / "report.html"))
    html = open(page, encoding="utf-8").read()
    # the sentence this random model's numbers choose (both branches are pinned on synthetic graphs below)
    chosen = "The strongest edges, from rollout" if expected else "No rollout edge between different words reaches"
    assert '<section id="attention_graphs"' in html and chosen in html


def test_old_probe_files_load_without_the_graphs():
    saved = SavedProbeResults.from_dict({"model": "old", "num_layers": 2})
    assert saved.attention_graphs == {"raw": None, "norm_weighted": None, "rollout": None, "flow": None}


def _graph(weighting, edges, self_share=None):
    """A 3-word graph in probes.json's schema with head-mean edges (source, target, weight) at layer 1."""
    return {"directed": True, "sentence": "a b c", "level": "word", "weighting": weighting, "threshold": 0.2,
            "relative_threshold": None, "nodes": [{"id": i, "label": w} for i, w in enumerate("abc")],
            "edges": [{"source": s, "target": t, "layer": 1, "head": "mean", "weight": w} for s, t, w in edges],
            "layers": [0, 1] if weighting == "rollout" else None, "self_share": self_share}


def test_graphs_sentence_follows_the_numbers():
    rollout = [(0, 1, 0.4), (1, 2, 0.3), (2, 0, 0.25), (0, 0, 0.9)]
    r = {"attention_graph_rollout": _graph("rollout", rollout, self_share=[0.8, 0.7]),
         "attention_graph": _graph("attention", [(0, 1, 0.5), (1, 2, 0.4), (2, 1, 0.3)])}
    text = attention_graphs_text(probe_results(**r))
    assert "strongest edges, from rollout, between different words: a -> b (0.40), b -> c (0.30), c -> a (0.25)" in text
    assert "a -> a" not in text  # self edges are left out
    # even attention over 3 words with the residual at 0.5, 2 layers: 0.25 + 0.75 / 3 = 0.50 (not 1/3)
    assert "rollout attributes on average 0.70 of a word to its own input word, against 0.50 if every layer attended " \
           "evenly with the same residual weight, so rollout attributes more of each word to its own input word than it " \
           "would under even attention." in text
    assert "2 of rollout's 3 strongest pairs are among raw attention's 3 strongest" in text
    assert "raw weights name mostly the same relations here" in text
    assert "rollout: every layer's head-mean attention" in text and "flow:" not in text  # meanings of the graphs shown
    assert "that rollout gives input word b" in text and "in a's representation" not in text  # what rollout assigns
    r["attention_graph_rollout"]["self_share"] = [0.8, 0.3]
    r["attention_graph"] = _graph("attention", [(0, 2, 0.5), (2, 1, 0.4), (1, 0, 0.3)])
    text = attention_graphs_text(probe_results(**r))
    assert "so rollout attributes more of each word to the other words than it would under even attention" in text
    assert "0 of rollout's 3 strongest pairs" in text and "raw weights would name different pairs here" in text
    r["attention_graph_rollout"]["edges"] = r["attention_graph_rollout"]["edges"][-1:]  # only the self edge
    assert "No rollout edge between different words reaches the threshold" in attention_graphs_text(
        probe_results(**r))


def _uniform_results(causal):
    """The typed results of a sentence of 10 one-token words between [CLS] and [SEP] whose 4 layers all attend
    evenly (to every token, or in a causal model to those up to the query): rollout keeps no word to itself beyond
    what the residual does."""
    L, n = 4, 12
    tokens, word_ids = ["[CLS]", *[f"w{i}" for i in range(n - 2)], "[SEP]"], [None, *range(n - 2), None]
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None] if causal else np.full((n, n), 1 / n)
    attention = np.broadcast_to(uniform, (L, 1, n, n)).tolist()
    example = AttentionExample(sentence=" ".join(tokens[1:-1]), tokens=tokens, word_ids=word_ids, attention=attention,
                               labels=tokens, words=tokens[1:-1])
    return probe_results(attention_graph_rollout=rollout_graph(example),
                         heads={"examples": [{"sentence": example.sentence, "tokens": tokens, "attention": attention}]})


@pytest.mark.parametrize("causal", [False, True])
def test_a_word_is_compared_with_even_attention_under_the_same_residual(causal):
    """Rollout of even attention keeps 0.5^4 + (1 - 0.5^4) / 12 = 0.14 of each word (full attention; more in a causal
    model, whose early words see few others): that, not 1/12, is what the self-share is set against."""
    from hf_minattn.probes.report.attention_graphs import attention_graphs_headline

    r = _uniform_results(causal)
    own = r.attention_graphs["rollout"].self_share[-1]
    headline, text = attention_graphs_headline(r), attention_graphs_text(r)
    assert f"attributes about as much of a word to its own input word as even attention with the same residual " \
           f"would (on average {own:.2f}, against {own:.2f})" in headline
    assert "the attention adds no measurable preference for a word's own input" in text
    if not causal:
        assert f"{own:.2f}" == "0.14"
    r.attention_graphs["rollout"].self_share[-1] = own + 0.05
    assert "attributes more of a word to its own input word than even attention" in attention_graphs_headline(r)


def test_bad_attention_weights_and_token_counts_are_named_in_the_error():
    from hf_minattn.probes.attention_flow import head_mean_attention
    from hf_minattn.probes.circuits import _as_counts

    att = np.full((1, 2, 3, 3), 1 / 3)
    att[0, 1, 2, 0] = -0.5
    with pytest.raises(ValueError, match=r"finite and >= 0, got -0.5"):
        head_mean_attention(att)
    with pytest.raises(ValueError, match=r"got -1.0 for token id 2"):
        _as_counts(np.array([3.0, 1.0, -1.0, 0.0]), 4)


def test_graphs_store_measured_residual_weights_as_json_and_keep_the_examples_causality():
    """rollout_graph stored a per-layer residual array as given (json.dumps refused it), and the graph's example lost
    the causality measured on the exact weights."""
    import json

    from hf_minattn.probes.attention_flow import flow_graph, rollout_graph
    from hf_minattn.probes.heads import AttentionExample

    n, layers = 4, 2
    causal = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # uniform over the keys up to each query
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3],
                               attention=np.broadcast_to(causal, (layers, 2, n, n)).tolist(), causal=True)
    for make in (rollout_graph, flow_graph):
        graph = make(example, residual=np.array([0.3, 0.6]))
        assert json.loads(json.dumps(graph))["residual"] == [0.3, 0.6]
        assert graph["causal"] is True
