"""Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

One layer's attention weights say how that layer mixes the representations of the layer below, not how the input
tokens mix: the residual connection carries each token's own representation past the attention, and the mixing
compounds over layers. Both methods model a layer as A' = 0.5 A + 0.5 I (A: the layer's attention averaged over
heads; I: the residual connection), rows renormalised to sum to 1, and follow the mixing down to the input tokens.
The weight 0.5 is the paper's assumption; `residual` also takes weights measured from the layer's own norms
(mixing.py, after Kobayashi et al. 2021).

Convention: row i = token i's representation after a layer, column j = input token j (the embedding output).
Layers are numbered as in `attentions`, 0 = the first attention layer.

- Rollout: rollout[l] = A'_l A'_(l-1) ... A'_0, the share of input token j in token i's representation after layer
  l when shares multiply along a path through the layers and add over paths. Every row sums to 1.
- Flow: the same layers as a graph of (L + 1) * n nodes, node k of layer l -> node i of layer l + 1 with capacity
  A'_l[i, k]; flow[i, j] is the maximum flow from input token j to token i of the last layer: the most of j that
  can reach i when each edge carries at most its weight (shares along a path are limited by the narrowest edge
  instead of multiplied). Rows are then normalised to sum to 1, as in the paper's code, to compare with rollout.
  scipy's max-flow needs integer capacities: they are scaled by FLOW_SCALE = 1e6 and rounded, an error of at most
  0.5e-6 per edge of the minimum cut (a random 5-token, 3-layer graph agrees with networkx's float max-flow to
  1e-5). Cost: n^2 max-flow runs on L n^2 edges (one CPU thread: 40 tokens 0.6 s at 4 layers, 1.4 s at 12; 64
  tokens 4 s at 4 layers, 12 s at 12), so flow is refused above FLOW_MAX_TOKENS tokens: it is meant for one
  example sentence.

`rollout_graph` and `flow_graph` turn them into graphs of one sentence in the schema of `heads.attention_graph`
(the same nodes and thresholds; head "mean", since both average the heads), pooled to words after the matrices are
computed at token level (a word's row is the mean of its pieces' rows, its column the sum of its pieces' columns).
"""

import numpy as np
import torch
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from .heads import GRAPH_RELATIVE_THRESHOLD, AttentionExample, attention_graph, word_level_attention

FLOW_SCALE = 1_000_000  # integer capacities for scipy's max-flow: weight * FLOW_SCALE, rounded
FLOW_MAX_TOKENS = 64  # n^2 max-flow runs: ~12 s for 64 tokens at 12 layers


def _as_array(a):
    return a.detach().float().cpu().numpy() if torch.is_tensor(a) else np.asarray(a, dtype=float)


def head_mean_attention(attentions):
    """(layers, n, n) attention averaged over heads, from (layers, heads, n, n), a list of (heads, n, n) per layer,
    or a model's `output.attentions` for one sentence (per layer (1, heads, n, n))."""
    if isinstance(attentions, (list, tuple)):
        if not attentions:
            raise ValueError("attentions is empty: expected one (heads, n, n) array per layer")
        layers = [_as_array(a) for a in attentions]
        shapes = {a.shape for a in layers}
        if len(shapes) > 1:
            raise ValueError(f"every layer's attention must have the same shape, got {sorted(shapes)}")
        att = np.stack(layers)
    else:
        att = _as_array(attentions)
    if att.ndim == 5:  # model output: (layers, batch, heads, n, n)
        if att.shape[1] != 1:
            raise ValueError(f"attentions of one sentence are needed (batch of 1), got a batch of {att.shape[1]}")
        att = att[:, 0]
    if att.ndim != 4 or att.shape[-1] != att.shape[-2] or 0 in att.shape:
        raise ValueError(f"attentions must be (layers, heads, n, n) with n > 0, got shape {att.shape}")
    if not np.isfinite(att).all() or (att < 0).any():
        bad = att[~np.isfinite(att) | (att < 0)].ravel()[0]
        raise ValueError(f"attention weights must be finite and >= 0, got {bad}")
    return att.mean(1)


def residual_weights(residual, layers, n):
    """The residual weight w of A' = w I + (1 - w) A as a (layers, n) array, one per layer and query token: from
    True (0.5, Abnar & Zuidema's choice), False (0: attention alone), one number in [0, 1], one per layer (layers,),
    or one per layer and token (layers, n), e.g. measured from the layer's norms (mixing.measured_residual_weights)."""
    if isinstance(residual, (bool, np.bool_)):
        residual = 0.5 if residual else 0.0
    w = np.asarray(residual, dtype=float)
    if w.ndim == 1:
        w = w[:, None]  # one weight per layer, the same for every token
    if w.ndim > 2 or (w.ndim == 2 and w.shape[0] != layers) or (w.ndim == 2 and w.shape[1] not in (1, n)):
        raise ValueError(f"residual weights must be a number, ({layers},) or ({layers}, {n}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any((w < 0) | (w > 1)):
        raise ValueError(f"residual weights must lie in [0, 1], got {residual!r}")
    return np.broadcast_to(w, (layers, n))


def residual_attention(attentions, residual=True):
    """(layers, n, n): per layer A' = w I + (1 - w) A with A the head-mean attention and w the residual weight of
    each query token (`residual_weights`; w = 0.5 by default), rows renormalised to sum to 1 (they already do, up to
    rounding: the examples store 4 decimals)."""
    mixed = head_mean_attention(attentions)
    w = residual_weights(residual, *mixed.shape[:2])[..., None]  # (layers, n, 1): one weight per row
    mixed = w * np.eye(mixed.shape[-1]) + (1 - w) * mixed
    return mixed / np.maximum(mixed.sum(-1, keepdims=True), 1e-30)


def attention_rollout(attentions, residual=True):
    """Every layer's rollout, (layers, n, n): rollout[l] = A'_l ... A'_0 (see the module docstring). Row i = token
    i's representation after layer l, column j = input token j; rows sum to 1."""
    mixed = residual_attention(attentions, residual)
    rollout = np.empty_like(mixed)
    current = np.eye(mixed.shape[-1])
    for layer, a in enumerate(mixed):
        current = a @ current  # (n, n): layer l's mixing applied to the rollout below it
        rollout[layer] = current
    return rollout


def _layered_graph(mixed, scale):
    """csr capacities of the flow graph: node l * n + k is token k after l layers (l = 0: the input tokens)."""
    L, n, _ = mixed.shape
    capacity = np.rint(mixed * scale).astype(np.int32)  # (L, n, n); rows sum to ~scale, far below 2^31
    sources, targets, values = [], [], []
    for layer in range(L):
        i, k = np.nonzero(capacity[layer])  # A'_l[i, k] > 0: node k of layer l feeds node i of layer l + 1
        sources.append(layer * n + k)
        targets.append((layer + 1) * n + i)
        values.append(capacity[layer][i, k])
    size = (L + 1) * n
    return csr_array((np.concatenate(values), (np.concatenate(sources), np.concatenate(targets))), shape=(size, size))


def attention_flow(attentions, residual=True, normalise=True, max_tokens=FLOW_MAX_TOKENS, scale=FLOW_SCALE):
    """Attention flow to the last layer, (n, n): flow[i, j] = maximum flow from input token j to token i after the
    last layer through the graph of residual-adjusted attention weights (see the module docstring); with
    `normalise`, rows scaled to sum to 1 as in the paper, else the flow values themselves (each <= 1).
    Raises ValueError for more than `max_tokens` tokens (the cost grows with n^2 max-flow runs)."""
    mixed = residual_attention(attentions, residual)
    L, n, _ = mixed.shape
    if n > max_tokens:
        raise ValueError(f"attention flow runs n^2 = {n * n} max-flow problems; {n} tokens is above max_tokens="
                         f"{max_tokens} (use a shorter sentence, or attention_rollout)")
    if not (isinstance(scale, (int, np.integer)) and 1 <= scale <= 2**31 // (n + 1)):
        raise ValueError(f"scale must be an integer in [1, {2**31 // (n + 1)}] (capacities are int32), got {scale!r}")
    graph = _layered_graph(mixed, scale)
    flow = np.array([[maximum_flow(graph, j, L * n + i, method="dinic").flow_value for j in range(n)]
                     for i in range(n)], dtype=float) / scale
    if normalise:
        flow = flow / np.maximum(flow.sum(-1, keepdims=True), 1e-30)
    return flow


def _relation_graph(example, matrices, weighting, layers, **graph_options):
    """A graph in attention_graph's schema from (layers, n, n) token-level matrices: attention_graph on a stack of
    one 'head' (so the word pooling and thresholds are the same), keeping the head-mean edges, with each edge's layer
    renumbered to `layers`."""
    single = AttentionExample(sentence=example.sentence, tokens=example.tokens, word_ids=example.word_ids,
                              attention=np.asarray(matrices)[:, None].tolist(),  # (layers, 1, n, n)
                              labels=example.labels, words=example.words,
                              causal=getattr(example, "causal", None))  # the model's, measured on exact weights
    graph = attention_graph(single, **graph_options)
    graph["edges"] = [{**edge, "layer": layers[edge["layer"]]} for edge in graph["edges"] if edge["head"] == "mean"]
    return {**graph, "weighting": weighting, "layers": list(layers),
            "self_share": _self_share(matrices, example.word_ids, graph_options.get("level", "word"))}


def self_share(matrices, word_ids, level="word"):
    """Per layer, the mean share of a node in itself (the diagonal), at `level` ("word" or "token"): self edges can
    fall below a graph's threshold, and a word's share of its own pieces is summed over them."""
    matrices = torch.as_tensor(np.asarray(matrices)).float()  # (layers, n, n)
    if level == "word":
        matrices, _ = word_level_attention(matrices, word_ids)  # (layers, words, words)
    return [float(d) for d in matrices.diagonal(dim1=-2, dim2=-1).mean(-1)]


def _self_share(matrices, word_ids, level):
    return [round(d, 4) for d in self_share(matrices, word_ids, level)]


def rollout_graph(example, residual=True, level="word", threshold=None, relative_threshold=GRAPH_RELATIVE_THRESHOLD):
    """Every layer's rollout of `example` (a heads.AttentionExample) as a graph: an edge source -> target at layer l
    means input word `target` has a share >= the threshold in word `source`'s representation after layer l. Keys as
    attention_graph's, weighting "rollout", plus "layers" and "self_share" (per layer, the mean share of a word's own
    input word)."""
    rollout = attention_rollout(example.attention, residual)
    graph = _relation_graph(example, rollout, "rollout", range(len(rollout)), level=level, threshold=threshold,
                            relative_threshold=relative_threshold)
    return {**graph, "residual": _as_json(residual)}


def _as_json(residual):
    """The residual weight as a graph file stores it: a number, or per-layer (per-token) lists, not an array."""
    return residual.tolist() if isinstance(residual, np.ndarray) else residual


def flow_graph(example, residual=True, level="word", threshold=None, relative_threshold=GRAPH_RELATIVE_THRESHOLD,
               max_tokens=FLOW_MAX_TOKENS):
    """The last layer's attention flow of `example` as a graph (edges at layer L - 1 only), rows normalised as in
    the paper; keys as rollout_graph's, weighting "flow", plus "capacity_scale". ValueError above `max_tokens`."""
    flow = attention_flow(example.attention, residual, max_tokens=max_tokens)
    last = len(example.attention) - 1
    graph = _relation_graph(example, flow[None], "flow", [last], level=level, threshold=threshold,
                            relative_threshold=relative_threshold)
    return {**graph, "residual": _as_json(residual), "capacity_scale": FLOW_SCALE}
