"""Which heads does a masked LM need? Per-head ablation: the increase of the masked-LM loss when one head's output
is zeroed (its slice of the input of W_O; b_O kept), on the same masked tokens for every head, with a 95% interval
over tokens. `zero_head` is the ablation itself, usable on its own.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from .attention_norms import attention_modules
from .heads import sentence_batches
from .loading import max_length_for, run_model
from .progress import progress
from .weights import UnsupportedArchitecture


@dataclass
class HeadAblation:
    """Masked-LM loss increase when one head's output is zeroed (its slice of the input of W_O; b_O kept)."""

    num_layers: int
    num_heads: int
    sentences: int
    masked_tokens: int  # tokens whose loss is averaged (the same masked tokens for every head)
    base_loss: float  # mean cross-entropy (nats) with every head on
    loss_increase: list  # (layers, heads): ablated loss - base loss
    interval95: list  # (layers, heads): half-width of a 95% normal interval over tokens (tokens are not independent)
    mask_probability: float = 0.15
    note: str = ("Masking: each non-special token replaced by the mask token with the given probability (at least one "
                 "per sentence; no 80/10/10 split), drawn once with the seed and shared by every ablation.")


def is_masked_lm(model):
    return type(model).__name__.endswith("ForMaskedLM")


@contextmanager
def zero_head(model, layer, head):
    """Within the block, head `head` of layer `layer` outputs zero: a forward pre-hook on the attention output
    projection zeroes channels head*D:(head+1)*D of its input (W_O's bias stays)."""
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"(layer, head) must lie in [0, {L}) x [0, {H}), got ({layer}, {head})")
    D = model.config.hidden_size // H
    output = attention_modules(model)[layer]["output"]

    def hook(module, args):
        x = args[0].clone()
        x[..., head * D:(head + 1) * D] = 0
        return (x, *args[1:])

    handle = output.register_forward_pre_hook(hook)
    try:
        yield model
    finally:
        handle.remove()


def _masked_batches(tokenizer, sentences, max_length, batch_size, mask_probability, seed):
    if tokenizer.mask_token_id is None:
        raise ValueError(f"{type(tokenizer).__name__} has no mask token; head ablation needs a masked-LM tokenizer")
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _, enc in sentence_batches(tokenizer, sentences, max_length, batch_size):
        special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                                for ids in enc["input_ids"].tolist()]).bool() | ~enc["attention_mask"].bool()
        chosen = (torch.rand(enc["input_ids"].shape, generator=generator) < mask_probability) & ~special
        for b in range(len(chosen)):  # at least one masked token per sentence
            if not chosen[b].any() and (~special[b]).any():
                candidates = (~special[b]).nonzero()[:, 0]
                chosen[b, candidates[torch.randint(len(candidates), (1,), generator=generator)]] = True
        labels = enc["input_ids"].clone()
        enc["input_ids"] = enc["input_ids"].masked_fill(chosen, tokenizer.mask_token_id)
        batches.append((enc, chosen, labels))
    return batches


def _token_losses(model, batches):
    losses = []
    for enc, chosen, labels in batches:
        logits = run_model(model, enc).logits  # (B, T, V)
        losses.append(torch.nn.functional.cross_entropy(logits[chosen].float(), labels[chosen], reduction="none"))
    return torch.cat(losses)


def head_ablation(model, tokenizer, sentences, max_sentences=64, batch_size=16, mask_probability=0.15, seed=0):
    """Per head, the increase of the masked-LM loss when that head's output is zeroed, on the same masked tokens.
    `model` must be a masked LM (`*ForMaskedLM`); cost: layers x heads + 1 forward passes over the sentences."""
    if not is_masked_lm(model):
        raise UnsupportedArchitecture(f"head ablation needs a masked-LM model (a *ForMaskedLM class), got "
                                      f"{type(model).__name__}; load it with AutoModelForMaskedLM")
    if not 0 < mask_probability < 1:
        raise ValueError(f"mask_probability must be in (0, 1), got {mask_probability!r}")
    sentences = list(sentences)[:max_sentences]
    if not sentences:
        raise ValueError("no sentences to measure head ablation on")
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    model.eval()
    batches = _masked_batches(tokenizer, sentences, max_length_for(model, tokenizer), batch_size, mask_probability, seed)
    with torch.inference_mode():
        base = _token_losses(model, batches)
        increase, interval = np.zeros((L, H)), np.zeros((L, H))
        for layer in range(L):
            for head in progress(range(H), desc=f"ablating heads of layer {layer}"):
                with zero_head(model, layer, head):
                    diff = (_token_losses(model, batches) - base).double()
                increase[layer, head] = float(diff.mean())
                interval[layer, head] = float(1.96 * diff.std() / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
    return HeadAblation(num_layers=L, num_heads=H, sentences=len(sentences), masked_tokens=len(base),
                        base_loss=float(base.mean()), loss_increase=increase.tolist(), interval95=interval.tolist(),
                        mask_probability=mask_probability)
