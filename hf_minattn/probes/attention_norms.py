"""Norm-weighted attention (Kobayashi et al. 2020, "Attention is Not Only a Weight").

Head h of a layer adds to token i the vector sum_j a_ij^h f_h(x_j), with f_h(x) = W_O^h (W_V^h x + b_V^h): the
value of token j (value bias included, as in the paper) mapped by head h's slice of the output projection. Token
j's contribution to token i through head h is therefore ||a_ij^h f_h(x_j)|| = a_ij^h ||f_h(x_j)||: a large weight
on a token whose transformed vector is short (e.g. [SEP], punctuation) moves little. The output bias b_O is the
same for every token and is left out (as in the paper). x is the input of the attention sublayer (after the
LayerNorm in a pre-norm model, the layer input in a post-norm one). Shares are the contributions normalised to sum
to 1 per query, comparable with the attention weights themselves.

A whole layer (the paper's measure of multi-head attention, `whole_layer_norm_weighting`) is scored by the norm of
the sum over heads, ||sum_h a_ij^h f_h(x_j)||: a head that moves long vectors weighs more than one that moves short
ones, where a mean of the heads' shares would count them alike.

Also here: `attention_modules`, where each supported architecture (the table of layouts.py) keeps its attention
input and output projection, also used for per-head ablation (zeroing head h's slice of the input of W_O removes
exactly that head's output, bias b_O kept).
"""

from contextlib import contextmanager

import torch

from . import layouts
from .weights import UnsupportedArchitecture, head_weights


def attention_modules(model):
    """Per layer {"input": module whose forward input is x (the attention sublayer input), "output": W_O module
    (its forward input is the heads' outputs concatenated, head h at channels h*D:(h+1)*D), "value_bias": b_V or
    None}, from the layout table of layouts.py. Raises UnsupportedArchitecture for layouts it does not know."""
    return layouts.layout_attention_modules(model)


@contextmanager
def capture_attention_inputs(model):
    """Within the block, `inputs[layer]` is the latest (B, T, C) input x of each layer's attention sublayer."""
    modules = attention_modules(model)
    inputs = [None] * len(modules)

    def hook(layer, args, kwargs):
        inputs[layer] = layouts.sublayer_input(args, kwargs).detach()

    handles = layouts.hook_layers(model, [entry["input"] for entry in modules], hook)
    try:
        yield inputs
    finally:
        for handle in handles:
            handle.remove()


def transformed_values(model, inputs):
    """Per layer (B, heads, T, C): f_h(x_j) = W_O^h (W_V^h x_j + b_V^h) from the captured attention inputs."""
    weights, _ = head_weights(model)
    modules = attention_modules(model)
    transformed = []
    for layer, x in enumerate(inputs):
        W_V, W_O = weights[layer]["W_V"].float(), weights[layer]["W_O"].float()  # (H, D, C), (H, C, D)
        values = torch.einsum("hdc,btc->bhtd", W_V, x.float())
        bias = modules[layer]["value_bias"]
        if bias is not None:
            values = values + bias.float().view(W_V.shape[0], 1, W_V.shape[1])
        transformed.append(torch.einsum("hcd,bhtd->bhtc", W_O, values))
    return transformed


def transformed_value_norms(model, inputs):
    """Per layer (B, heads, T): ||f_h(x_j)|| = ||W_O^h (W_V^h x_j + b_V^h)|| from the captured attention inputs."""
    return [f.norm(dim=-1).cpu() for f in transformed_values(model, inputs)]  # beside the CPU attentions


def norm_weighted(attention, value_norms, normalise=True):
    """attention (..., heads, T, T) and ||f(x_j)|| (..., heads, T) -> contributions a_ij ||f(x_j)|| (..., heads, T, T);
    with `normalise`, as shares per query (rows sum to 1; a row whose contributions are all 0 stays 0)."""
    attention, value_norms = torch.as_tensor(attention).float(), torch.as_tensor(value_norms).float()
    if attention.shape[:-1] != value_norms.shape or attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"attention (..., T, T) and value_norms (..., T) must match, got {tuple(attention.shape)} "
                         f"and {tuple(value_norms.shape)}")
    contributions = attention * value_norms[..., None, :]
    return _shares(contributions) if normalise else contributions


def whole_layer_norm_weighting(attention, transformed, normalise=True):
    """attention (..., heads, T, T) and f_h(x_j) (..., heads, T, C) -> a layer's contributions ||sum_h a_ij^h f_h(x_j)||
    (..., T, T); with `normalise`, as shares per query (rows sum to 1; a row whose contributions are all 0 stays 0).

    Computed in Gram form, ||sum_h a^h f_h||^2 = sum_{h,g} a^h a^g <f_h, f_g>: memory (..., heads, heads, T) plus the
    attention's own size, rather than the (..., T, T, C) of the vectors themselves (1.7 GB for BERT-large at 128
    tokens)."""
    attention, transformed = torch.as_tensor(attention).float(), torch.as_tensor(transformed).float()
    if attention.shape[:-1] != transformed.shape[:-1] or attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"attention (..., heads, T, T) and transformed values (..., heads, T, C) must match, got "
                         f"{tuple(attention.shape)} and {tuple(transformed.shape)}")
    gram = torch.einsum("...hjc,...gjc->...hgj", transformed, transformed)  # (..., H, H, T): <f_h(x_j), f_g(x_j)>
    # two steps, so no (..., H, H, T, T) intermediate: sum_h a_ij^h <f_h, f_g>(x_j), then times a_ij^g summed over g
    mixed = torch.einsum("...hij,...hgj->...gij", attention, gram)  # (..., H, T, T), the attention's own size
    squared = (mixed * attention).sum(-3)  # (..., T, T)
    contributions = squared.clamp_min(0).sqrt()  # rounding can leave a tiny negative where the sum is ~0
    return _shares(contributions) if normalise else contributions


def _shares(contributions):
    """Contributions (..., T, T) as shares of each query's total (a row of zeros stays zeros)."""
    return contributions / contributions.sum(-1, keepdim=True).clamp_min(1e-30)
