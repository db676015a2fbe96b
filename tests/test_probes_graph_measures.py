"""What an attention graph's numbers are, and what the report and the view call them: the norm graph's whole-layer
edges (the layer measure, or the head mean of older files), causal models measured once on the exact weights, the
Gram form of the layer measure, and rollout's uniform baseline under any recorded residual."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import probe_results

from hf_minattn.probes.attention_flow import attention_rollout, rollout_graph, self_share
from hf_minattn.probes import attention_norms, heads, mixing
from hf_minattn.probes.attention_norms import norm_weighted
from hf_minattn.probes.heads import AttentionExample, HeadStatistics, attention_graph
from hf_minattn.probes.mixing import sentence_self_shares, uniform_rollout_self_share
from hf_minattn.probes.report import attention_graphs, norm_weighting
from hf_minattn.probes.report.heads import heads_text
from hf_minattn.probes.results import SavedProbeResults

DEMO = Path(__file__).resolve().parent.parent / "docs" / "demo" / "probes.json"


@pytest.fixture(scope="module")
def demo():
    return json.loads(DEMO.read_text())


def _old_style(demo):
    """The demo's probes.json as the probe wrote it before the layer measure: the norm graph's "mean" edges the heads'
    mean shares, no whole_layer, no causal flag, no norm_weighted_layer."""
    r = copy.deepcopy(demo)
    for key in ("attention_graph", "attention_graph_norm_weighted", "attention_graph_rollout", "attention_graph_flow"):
        for field in ("whole_layer", "causal"):
            (r.get(key) or {}).pop(field, None)
    for example in r["heads"]["examples"]:
        example.pop("norm_weighted_layer", None), example.pop("causal", None)
    r["heads"].pop("causal", None)
    return SavedProbeResults.from_dict(r)


def _new_style(demo):
    """The demo's probes.json as today's probe writes it: the example keeps the layer measure, and the norm graph
    says its "mean" edges are that measure."""
    r = copy.deepcopy(_old_style(demo).raw)
    example = r["heads"]["examples"][0]
    example["norm_weighted_layer"] = np.array(example["norm_weighted"]).mean(1).tolist()  # any (L, T, T) shares
    r["attention_graph_norm_weighted"]["whole_layer"] = "layer"
    return SavedProbeResults.from_dict(r)


def _no_figure(monkeypatch):
    for module in (attention_graphs, norm_weighting):
        monkeypatch.setattr(module, "save_figure", lambda fig, path, figure_format=None: fig)


# ---------------------------------------------------------------- 1. the norm graph's whole-layer edges


def test_an_older_file_is_described_as_the_head_mean_it_holds(demo, monkeypatch):
    """Files from before the layer measure store the mean of the heads' norm shares under "mean": every sentence,
    table and figure says so, none the layer's ||sum_h ...||."""
    r = _old_style(demo)
    assert r.attention_graphs["norm_weighted"].whole_layer == "head mean"
    text = attention_graphs.attention_graphs_text(r)
    assert "the mean of the heads' shares" in text and "sum_h" not in text
    example = norm_weighting.attention_norm_example_text(r)
    assert "each head's and their mean together (the figure draws the heads' mean)" in example
    assert "the layer's" not in example
    assert norm_weighting.attention_norm_example_headline(r).endswith("every layer's heads and their mean).")
    _no_figure(monkeypatch)
    fig = attention_graphs.attention_graphs_plot(r, "x.png")
    assert fig._suptitle.get_text().startswith("a -> b: a draws on b (head mean;")
    assert "heads' norm shares" in norm_weighting.attention_norm_example_plot(r, "x.png").axes[-1].get_title()


def test_a_new_file_is_described_as_the_layer_measure(demo, monkeypatch):
    r = _new_style(demo)
    text = attention_graphs.attention_graphs_text(r)
    assert "for the layer (what the figure draws) ||sum_h a_ab^h W_O^h W_V^h x_b||" in text
    assert "each head's and the layer's together (the figure draws the layer's)" in (
        norm_weighting.attention_norm_example_text(r))
    assert "every layer's heads and the whole layer (raw: the head mean)" in (
        norm_weighting.attention_norm_example_headline(r))
    _no_figure(monkeypatch)
    assert "norm-weighted: the whole layer" in attention_graphs.attention_graphs_plot(r, "x.png")._suptitle.get_text()


def test_a_file_from_before_the_field_with_the_layer_measure_reads_as_the_layer(demo):
    """Files written between the layer measure and the whole_layer field: the example's norm_weighted_layer says it."""
    r = _new_style(demo)
    raw = copy.deepcopy(r.raw)
    del raw["attention_graph_norm_weighted"]["whole_layer"]
    assert SavedProbeResults.from_dict(raw).attention_graphs["norm_weighted"].whole_layer == "layer"


def _two_heads():
    """Head 0 attends to token 1 moving norm 0.01, head 1 to token 2 moving norm 5 (3 tokens)."""
    a = torch.zeros(2, 3, 3)
    a[0, :, 1], a[1, :, 2] = 1, 1
    f = torch.zeros(2, 3, 4)
    f[0, :, 0], f[1, :, 1] = 0.01, 5.0
    return AttentionExample(sentence="a b c", tokens=list("abc"), word_ids=[0, 1, 2], attention=a[None].tolist(),
                            norm_weighted=norm_weighted(a, f.norm(dim=-1))[None].tolist(),
                            norm_weighted_layer=attention_norms.whole_layer_norm_weighting(a, f)[None].tolist())


def test_graphs_say_what_their_mean_edges_are():
    example = _two_heads()
    assert attention_graph(example)["whole_layer"] == "head mean"
    assert attention_graph(example, weighting="norm")["whole_layer"] == "layer"
    example.norm_weighted_layer = None
    assert attention_graph(example, weighting="norm")["whole_layer"] is None


# ---------------------------------------------------------------- 2. the layer measure in Gram form


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 4, 6, 6)])  # (layers, heads, T, C)
def test_the_gram_form_equals_the_norm_of_the_summed_vectors(shape):
    L, H, T, C = shape
    g = torch.Generator().manual_seed(sum(shape))
    attention = torch.rand(L, H, T, T, generator=g).softmax(-1)
    f = torch.randn(L, H, T, C, generator=g)
    direct = torch.einsum("lhij,lhjc->lijc", attention, f).norm(dim=-1)  # the (L, T, T, C) form
    gram = attention_norms.whole_layer_norm_weighting
    torch.testing.assert_close(gram(attention, f, normalise=False), direct, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gram(attention, f), direct / direct.sum(-1, keepdim=True))


# ---------------------------------------------------------------- 3. causal models, measured once


def _almost_causal(n=4, layers=2):
    """An encoder's attention whose weights after each query are all below 5e-5: 0 at the examples' 4 decimals."""
    a = torch.ones(n, n).tril() + 1e-5 * torch.ones(n, n).triu(1)
    return (a / a.sum(-1, keepdim=True)).expand(layers, 1, n, n)


def test_causal_is_measured_on_the_exact_weights_not_the_rounded_ones():
    exact = _almost_causal()
    rounded = exact.round(decimals=4)
    assert heads.is_causal(exact) is False and heads.is_causal(rounded) is True
    assert heads.is_causal(torch.ones(1, 1, 1, 1)) is None  # one token: nothing to tell by
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3],
                               attention=rounded.tolist(), causal=heads.is_causal(exact))
    graph = attention_graph(example, level="token")
    assert graph["causal"] is False and graph["threshold"] == pytest.approx(2 / 4)  # one cut, 2/n, for every query
    example.causal = None  # not measured (an example made by hand): the stored weights decide
    assert attention_graph(example, level="token")["causal"] is True


def test_the_report_reads_the_recorded_causal_flag(demo):
    """The rollout graph of an encoder whose stored (rounded) weights look causal: the recorded flag says it is not,
    so the baseline is full uniform attention, 0.5^2 + (1 - 0.5^2) / 4."""
    rounded = _almost_causal().round(decimals=4)
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3],
                               attention=rounded.tolist())
    graph = {**rollout_graph(example, level="token"), "causal": False}
    part = {"examples": [{"sentence": "a b c d", "tokens": list("abcd"), "attention": rounded.tolist()}],
             "causal": False}
    r = probe_results(attention_graph_rollout=graph, heads=part)
    assert attention_graphs._uniform_self_share(r, 4, 2) == pytest.approx(uniform_rollout_self_share(4, [0.5, 0.5]))


def test_a_decoder_has_no_next_token_head_in_the_text():
    part = {"num_heads": 1, "stats": {"entropy": [[1.0]], "next": [[0.0]], "self": [[0.4]]}, "uniform_entropy": 1.2,
             "relative_to_uniform": {"next": [[None]], "self": [[1.5]]}, "tokens": 10, "sentences": 2}
    assert "next token: head 0-0" in heads_text(probe_results(heads=part))
    part["causal"] = True
    text = heads_text(probe_results(heads=part))
    assert "next token" not in text and "itself: head 0-0" in text


def test_uniform_entropy_is_the_expected_entropy():
    """HeadStatistics keeps uniform attention's entropy once, with the other expectations: log n per query."""
    mask = torch.ones(1, 5, dtype=torch.long)
    kinds = {name: torch.zeros(1, 5, dtype=torch.bool) for name in ("cls", "sep", "punctuation")}
    stats = HeadStatistics()
    stats.add([torch.full((1, 2, 5, 5), 0.2)], mask, kinds, causal=False)
    assert stats.uniform_expectation()["entropy"] == pytest.approx(np.log(5)) and not hasattr(stats, "log_n_sum")


def test_a_causal_graphs_cut_is_named_per_query(monkeypatch):
    """The smallest cut is not the cut: a causal graph's captions say 2/n_i."""
    uniform = torch.ones(4, 4).tril() / torch.arange(1, 5)[:, None]
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3],
                               attention=uniform.expand(2, 1, 4, 4).tolist(), causal=True)
    r = probe_results(attention_graph=attention_graph(example), attention_graph_rollout=rollout_graph(example))
    graph = r.attention_graphs["raw"]
    assert graph.causal and attention_graphs.cut_text(graph) == "2/n_i (0.50 at the last query, more before)"
    assert "over the n_i words query i sees" in norm_weighting._edge_rule(graph)
    _no_figure(monkeypatch)
    titles = [ax.get_title() for ax in attention_graphs.attention_graphs_plot(r, "x.png").axes]
    assert titles and all("2/n_i" in t for t in titles)


def test_mixing_sets_a_decoder_against_causal_uniform_attention():
    """One layer, w = 0.5, 3 tokens attending causally: the uniform baseline keeps 0.5 + 0.5 / (i + 1) of token i."""
    attention = np.tril(np.ones((3, 3)))[None, None] / np.arange(1, 4)[:, None]
    shares = sentence_self_shares(attention, [0, 1, 2], np.full((1, 3), 0.5), level="token", causal=True)
    assert shares["uniform_half"] == pytest.approx(np.mean([1, 0.75, 0.5 + 0.5 / 3]))
    assert shares["half"] == pytest.approx(shares["uniform_half"])  # the attention is that uniform attention


# ---------------------------------------------------------------- 4. rollout's residual as recorded


def _words_example(n=5, layers=3):
    attention = torch.rand(layers, 2, n, n, generator=torch.Generator().manual_seed(0)).softmax(-1)
    return AttentionExample(sentence=" ".join(f"w{i}" for i in range(n)), tokens=[f"w{i}" for i in range(n)],
                            word_ids=list(range(n)), attention=attention.tolist(), causal=False)


@pytest.mark.parametrize("residual", [[0.3, 0.6, 0.9], "per token"])
def test_a_per_layer_or_per_token_residual_is_compared_with_uniform_attention_under_it(residual):
    n, layers = 5, 3
    weights = np.linspace(0.2, 0.8, layers * n).reshape(layers, n) if residual == "per token" else np.array(residual)
    graph = rollout_graph(_words_example(n, layers), residual=weights.tolist())
    r = probe_results(attention_graph_rollout=graph)
    assert r.attention_graphs["rollout"].residual == weights.tolist()  # typed, as the graph records it
    uniform = np.full((layers, 1, n, n), 1 / n)
    expected = self_share(attention_rollout(uniform, weights)[-1:], None, "token")[0]
    assert attention_graphs._uniform_self_share(r, n, layers) == pytest.approx(expected)
    if residual != "per token":
        assert expected == pytest.approx(uniform_rollout_self_share(n, residual))  # the closed form agrees
    headline = attention_graphs.attention_graphs_headline(r)
    assert "residual path weighted as measured" in headline and f"against {expected:.2f})" in headline
    assert "0.30, 0.60, 0.90 by layer" in headline if residual != "per token" else "0.50 on average" in headline


def test_uniform_rollout_is_the_closed_form_without_a_causal_mask():
    w = [0.5, 0.25]
    diag = np.diagonal(mixing.uniform_rollout(6, w, 2)[-1]).mean()
    assert diag == pytest.approx(uniform_rollout_self_share(6, w))


def test_the_committed_demo_holds_the_layer_measure(demo):
    """docs/demo/probes.json comes from today's probe: its norm graph's whole-layer edges are the layer's measure."""
    r = SavedProbeResults.from_dict(demo)
    assert r.attention_graphs["norm_weighted"].whole_layer == "layer"
    assert r.heads.examples[0].norm_weighted_layer is not None
