"""Is head diversity more than seed noise? Models of the same shape (e.g. seeds of one variant) on the same
sentences: the Jensen-Shannon divergence between matched heads of two models (heads matched one-to-one within each
layer by the Hungarian algorithm on the cross-model JS matrix) beside the within-layer divergence between the heads of
each model. If heads of one layer differ from each other no more than a head differs from its match in another seed,
their diversity is no more than seed noise.

The matched divergence is a minimum over assignments, so it is below the mean cross-seed divergence of a layer's heads
even where no head recurs, which biases "within-layer minus matched" upward (it can still be negative, where a
layer's heads are alike within each model). Its null is the same matching
between different layers (`matched_other_layers`: layer l of one model against each other layer of the other, the
minimum-cost assignment again), which has the same downward pull but no reason to pair a head with its counterpart. A
gap above the null gap says that heads find closer matches at their own layer in another seed; a layer whose heads
are alike in kind at every depth makes the null conservative, layers that differ in kind make it lenient.

Attention distributions are needed, not probes.json (which keeps each model's own JS matrix but no cross-model one):
`cross_model_head_divergence(model_a, model_b, ...)` for one pair, `seed_pairs_head_divergence(models, ...)` for
every pair of several seeds in one pass.
"""

from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
import torch

from .heads import attention_entropy, js_divergence_sums, sentence_batches, within_layer_divergence
from .loading import eager_attention, max_length_for, run_model


def cross_js_divergence_sums(attentions_a, attentions_b, attention_mask):
    """Sum over query tokens of the JS divergence between every head of one model (rows) and every head of another
    (columns), on the same batch: (K_a, K_b). attentions_*: per layer (B, heads, T, T); attention_mask (B, T)."""
    a = torch.stack([x.float() for x in attentions_a], dim=1)  # (B, L, H, T, T)
    b = torch.stack([x.float() for x in attentions_b], dim=1)
    if a.shape[0] != b.shape[0] or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"the two models' attentions must cover the same batch and tokens, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)} (use the same tokenizer and sentences)")
    Ka, Kb = a.shape[1] * a.shape[2], b.shape[1] * b.shape[2]
    total = torch.zeros(Ka, Kb)
    for i in range(a.shape[0]):
        real = attention_mask[i].bool()  # the real tokens, wherever the padding side puts the pads
        n = int(real.sum())
        p = a[i][..., real, :][..., real].reshape(Ka, n, n)  # (L, H, n, n) -> (K_a, n, n)
        q = b[i][..., real, :][..., real].reshape(Kb, n, n)
        hp, hq = attention_entropy(p), attention_entropy(q)
        for k in range(Ka):
            total[k] += (attention_entropy((p[k, None] + q) / 2) - (hp[k, None] + hq) / 2).sum(-1)
    return total


@dataclass
class HeadDivergence:
    """Is head diversity more than seed noise? Within-layer divergence of each model beside the divergence
    between matched heads of the two models (heads matched one-to-one within each layer, minimising the summed JS)."""

    num_layers: int
    num_heads: int
    queries: int  # query tokens averaged over
    within_layer_a: list  # per layer: mean JS between distinct heads of model a
    within_layer_b: list
    matched: list  # per layer: mean JS between each head of a and its matched head of b
    matching: list  # per layer: for each head of a, the index of its matched head in b
    # per layer l: the same minimum matching of layer l of a against each other layer of b, mean over those layers
    # (the null of `matched`; None with one layer)
    matched_other_layers: list
    cross_js: list  # (L*H, L*H): JS between head k of a (rows) and head k' of b (columns)


def matched_head_divergence(cross_js, js_a, js_b, num_layers, num_heads, queries=0):
    """From the cross-model JS matrix (heads of a x heads of b) and each model's own JS matrix, all
    (L*H, L*H) and already averaged over queries: HeadDivergence, with heads matched within each layer
    by the assignment that minimises the summed JS (Hungarian algorithm)."""
    from scipy.optimize import linear_sum_assignment

    cross = np.asarray(cross_js, dtype=float)
    K = num_layers * num_heads
    if cross.shape != (K, K):
        raise ValueError(f"cross_js must be ({K}, {K}) for {num_layers} layers x {num_heads} heads (both models "
                         f"alike), got {cross.shape}")
    def block(l, m):  # heads of layer l of a (rows) against heads of layer m of b (columns)
        return cross[l * num_heads:(l + 1) * num_heads, m * num_heads:(m + 1) * num_heads]

    def assigned(costs):
        rows, cols = linear_sum_assignment(costs)
        return float(costs[rows, cols].mean()), cols.tolist()

    matched, matching = zip(*(assigned(block(l, l)) for l in range(num_layers)))
    other = [float(np.mean([assigned(block(l, m))[0] for m in range(num_layers) if m != l])) if num_layers > 1 else None
             for l in range(num_layers)]
    return HeadDivergence(num_layers=num_layers, num_heads=num_heads, queries=queries,
                          within_layer_a=within_layer_divergence(js_a, num_layers, num_heads),
                          within_layer_b=within_layer_divergence(js_b, num_layers, num_heads),
                          matched=list(matched), matching=list(matching), cross_js=cross.tolist(),
                          matched_other_layers=other)


def cross_model_head_divergence(model_a, model_b, tokenizer, sentences, max_sentences=64, batch_size=16):
    """Run two models of the same shape (e.g. two seeds) with one tokenizer on the same sentences and compare
    their heads: `HeadDivergence` (within-layer divergence of each, divergence between matched heads)."""
    return seed_pairs_head_divergence([model_a, model_b], tokenizer, sentences, max_sentences, batch_size)[0]


def seed_pairs_head_divergence(models, tokenizer, sentences, max_sentences=64, batch_size=16):
    """For every pair (i, j), i < j, of `models` (>= 2, same layers x heads, one tokenizer; e.g. the seeds of one
    variant), `HeadDivergence` of model i (a) against model j (b) on the same sentences, in the order
    (0, 1), (0, 2), ..., (1, 2), ...; each model runs once per batch."""
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"need at least two models to compare heads across seeds, got {len(models)}")
    shapes = [(m.config.num_hidden_layers, m.config.num_attention_heads) for m in models]
    if len(set(shapes)) > 1:
        raise ValueError(f"every model needs the same layers x heads to match heads, got {shapes}")
    pairs = [(i, j) for i in range(len(models)) for j in range(i + 1, len(models))]
    max_length = min(max_length_for(m, tokenizer) for m in models)
    own, cross, queries = [None] * len(models), {pair: None for pair in pairs}, 0
    for model in models:
        model.eval()
    with ExitStack() as stack, torch.inference_mode():
        for model in models:
            stack.enter_context(eager_attention(model))
        for _, enc in sentence_batches(tokenizer, list(sentences)[:max_sentences], max_length, batch_size):
            mask = enc["attention_mask"]
            att = [run_model(model, enc, output_attentions=True).attentions for model in models]
            for i, a in enumerate(att):
                js = js_divergence_sums(a, mask)
                own[i] = js if own[i] is None else own[i] + js
            for i, j in pairs:
                js = cross_js_divergence_sums(att[i], att[j], mask)
                cross[i, j] = js if cross[i, j] is None else cross[i, j] + js
            queries += int(mask.sum())
    if queries == 0:
        raise ValueError("no sentences to compare the models' heads on")
    own = [(v / queries).clamp(min=0).numpy() for v in own]
    return [matched_head_divergence((cross[i, j] / queries).clamp(min=0).numpy(), own[i], own[j], *shapes[0],
                                    queries=queries) for i, j in pairs]
