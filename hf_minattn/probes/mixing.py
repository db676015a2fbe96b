"""How much of a word's representation after the last layer is still its own: attention rollout over many
sentences, with the residual weight measured rather than assumed, beside uniform attention.

Rollout (attention_flow.py) models a layer as A' = w I + (1 - w) A. Abnar & Zuidema (2020) set w = 0.5. Kobayashi
et al. (2021) show that the residual connection usually carries far more than the attention adds, so here w is also
measured per layer and token from the layer's own vectors: with r_i the layer's input at token i (what the residual
connection carries) and o_i = sum_h sum_j a_ij^h f_h(x_j) the attention's output there (attention_norms.py, output
bias left out as in Kobayashi et al. 2020), w_i = ||r_i|| / (||r_i|| + ||o_i||): the two summands' norms as their
shares, the norm-based reading of that paper.

A self-share means nothing alone: any mixing lowers it, so rollout of ANY attention gives a word a small share of
itself after a few layers. The control is uniform attention with the same residual weights on the same sentence
(`uniform_rollout`: in a causal model uniform over the keys each query sees; closed form for full attention and one
weight per layer: prod_l w_l + (1 - prod_l w_l) / n at token level), and the untrained model (run the same function on
it). Every number is per sentence, so sentences are the sample.
"""

import numpy as np
import torch

from .attention_flow import attention_rollout, self_share
from .attention_norms import attention_modules, capture_attention_inputs, transformed_values
from .heads import is_causal, sentence_batches
from .loading import eager_attention, max_length_for, run_model
from .progress import progress

HALF = 0.5  # Abnar & Zuidema's residual weight


def uniform_rollout_self_share(n, weights):
    """Token-level self-share after the last layer for uniform attention over n tokens with one residual weight per
    layer: A'_l = w_l I + (1 - w_l) J / n, and J / n is idempotent, so the product is W I + (1 - W) J / n with
    W = prod_l w_l; the diagonal is W + (1 - W) / n."""
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"n must be a positive number of tokens, got {n!r}")
    product = float(np.prod(np.asarray(weights, dtype=float)))
    return product + (1 - product) / n


def uniform_rollout(n, residual, layers, causal=False):
    """(layers, n, n): rollout of uniform attention over n tokens with the residual weights `residual` (as
    attention_rollout takes them: a number, per layer or per layer and token), each query attending evenly to every
    token or, in a causal model, to those up to itself: the baseline a rollout self-share is set against."""
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"n must be a positive number of tokens, got {n!r}")
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None] if causal else np.full((n, n), 1.0 / n)
    return attention_rollout(np.broadcast_to(uniform, (layers, 1, n, n)), residual)


def measured_residual_weights(attentions, residuals, transformed):
    """(layers, T) residual weights of one sentence from its per-layer attention (heads, T, T), layer inputs r (T, C)
    and transformed values f_h(x_j) (heads, T, C): w_i = ||r_i|| / (||r_i|| + ||o_i||), o_i = sum_h sum_j a_ij f_h(x_j)."""
    weights = []
    for a, r, f in zip(attentions, residuals, transformed):
        output = torch.einsum("hij,hjc->ic", a.float(), f.float())  # (T, C): the attention's output at each token
        r_norm, o_norm = r.float().norm(dim=-1), output.norm(dim=-1)
        weights.append((r_norm / (r_norm + o_norm).clamp_min(1e-30)).numpy())
    return np.stack(weights)


def sentence_self_shares(attention, word_ids, weights, level="word", causal=False):
    """One sentence's last-layer self-shares: rollout with the measured weights and with 0.5, and uniform attention
    with each (same tokens, same weights; `causal`: over the keys each query sees). attention (layers, heads, T, T)
    array; weights (layers, T)."""
    layers, T = weights.shape
    share = {}
    for name, w in (("measured", weights), ("half", HALF)):
        share[name] = self_share(attention_rollout(attention, w)[-1:], word_ids, level)[0]
        share[f"uniform_{name}"] = self_share(uniform_rollout(T, w, layers, causal)[-1:], word_ids, level)[0]
    share["residual_weight"] = weights.mean(-1).tolist()  # per layer, over the sentence's tokens
    return share


def rollout_self_shares(model, tokenizer, sentences, batch_size=16, level="word"):
    """Per sentence (in the given order), the dict of `sentence_self_shares`: the model's rollout self-share after
    its last layer with measured and with 0.5 residual weights, and uniform attention's with the same weights.
    Needs an architecture whose attention modules layouts.py knows (UnsupportedArchitecture otherwise)."""
    sentences = list(sentences)
    if not sentences:
        raise ValueError("no sentences to measure rollout on")
    attention_modules(model)  # fails early, naming the architecture, if it is not supported
    max_length, rows, causal = max_length_for(model, tokenizer), {}, None
    batches = list(sentence_batches(tokenizer, sentences, max_length, batch_size))
    model.eval()
    with eager_attention(model), torch.inference_mode(), capture_attention_inputs(model) as inputs:
        for texts, enc in progress(batches, desc="rollout"):
            out = run_model(model, enc, output_attentions=True, output_hidden_states=True)
            causal = is_causal(out.attentions, enc["attention_mask"]) if causal is None else causal  # measured once
            transformed = [f.cpu() for f in transformed_values(model, inputs)]  # per layer (B, H, T, C)
            for b, text in enumerate(texts):
                keep = enc["attention_mask"][b].bool()  # the sentence's tokens, wherever the padding side puts pads
                attention = torch.stack([a[b][:, keep][:, :, keep] for a in out.attentions])  # (layers, heads, n, n)
                residuals = [h[b, keep] for h in out.hidden_states[:-1]]  # layer l's input, (n, C)
                weights = measured_residual_weights(attention, residuals, [f[b][:, keep] for f in transformed])
                word_ids = [w for w, k in zip(enc.word_ids(b), keep.tolist()) if k]
                rows[text] = sentence_self_shares(attention.numpy(), word_ids, weights, level, bool(causal))
    return [rows[s] for s in sentences]
