"""Which heads does a masked LM need? Per-head ablation: the increase of the masked-LM loss when one head's output
is zeroed (its slice of the input of W_O; b_O kept), on the same masked tokens for every head, with a 95% t-interval
over tokens. Sign: increase = loss with the head zeroed - loss intact, so > 0 means the model needs the head.
`zero_head` is the ablation itself, usable on its own; `ablation_over_seeds` gives per-head intervals over seeds.

Mask at the rate the model was trained with (`mlm_probability`; the experiments train at 0.3, BERT at 0.15): with
more of the context masked, a head's contribution changes.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from hf_minattn.stats import mean_interval

from .attention_norms import attention_modules
from .heads import sentence_batches
from .layouts import hook_layers
from .loading import max_length_for, run_model
from .progress import progress
from .weights import UnsupportedArchitecture


@dataclass
class HeadAblation:
    """Masked-LM loss increase when one head's output is zeroed (its slice of the input of W_O; b_O kept)."""

    num_layers: int
    num_heads: int
    sentences: int
    masked_tokens: int  # tokens whose loss is averaged (the same masked tokens for every head, all mask draws)
    base_loss: float  # mean cross-entropy (nats) with every head on
    loss_increase: list  # (layers, heads): loss with the head zeroed - base loss (nats; > 0: the model needs the head)
    interval95: list  # (layers, heads): half-width of the 95% t-interval over tokens (df = masked_tokens - 1)
    mlm_probability: float = 0.15
    mask_draws: int = 1
    note: str = ("Masking: each non-special token replaced by the mask token with probability mlm_probability (at "
                 "least one per sentence; no 80/10/10 split), mask_draws independent draws from the seed, shared by "
                 "every ablation. The interval treats masked tokens as independent (tokens of one sentence are not).")


def is_masked_lm(model):
    return type(model).__name__.endswith("ForMaskedLM")


@contextmanager
def zero_head(model, layer, head):
    """Within the block, head `head` of layer `layer` outputs zero: a forward pre-hook on the attention output
    projection (W_O, found through the layout table of layouts.py) zeroes channels head*D:(head+1)*D of its input
    (W_O's bias stays). UnsupportedArchitecture for a layout the table does not know."""
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"(layer, head) must lie in [0, {L}) x [0, {H}), got ({layer}, {head})")
    D = model.config.hidden_size // H

    def hook(called, args, kwargs):
        if called != layer:  # W_O of another layer (ALBERT's layers share one)
            return None
        x = args[0].clone()
        x[..., head * D:(head + 1) * D] = 0
        return (x, *args[1:]), kwargs

    handles = hook_layers(model, [entry["output"] for entry in attention_modules(model)], hook)
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


def masked_batches(tokenizer, sentences, max_length, batch_size, mlm_probability, seed, mask_draws=1):
    """[(encoding with masked input_ids, chosen (B, T) bool, labels (B, T) original ids)] for `mask_draws` draws of
    the mask over the sentences, from one generator seeded with `seed`."""
    if tokenizer.mask_token_id is None:
        raise ValueError(f"{type(tokenizer).__name__} has no mask token; masking sentences (the head ablation, the "
                         "logit lens) needs a masked-LM tokenizer")
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(mask_draws):
        for _, enc in sentence_batches(tokenizer, sentences, max_length, batch_size):
            special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                                    for ids in enc["input_ids"].tolist()]).bool() | ~enc["attention_mask"].bool()
            chosen = (torch.rand(enc["input_ids"].shape, generator=generator) < mlm_probability) & ~special
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


def check_masking(mlm_probability, mask_draws, draws_name="mask_draws"):
    """The ablation's masking arguments, checked where they enter (`draws_name`: the caller's name for mask_draws)."""
    if isinstance(mlm_probability, bool) or not isinstance(mlm_probability, (int, float)) or not 0 < mlm_probability < 1:
        raise ValueError(f"mlm_probability must be a number in (0, 1), got {mlm_probability!r}")
    if isinstance(mask_draws, bool) or not isinstance(mask_draws, int) or mask_draws < 1:
        raise ValueError(f"{draws_name} must be a positive integer, got {mask_draws!r}")


def head_ablation(model, tokenizer, sentences, max_sentences=64, batch_size=16, mlm_probability=0.15, seed=0,
                  mask_draws=1):
    """Per head, the increase of the masked-LM loss when that head's output is zeroed, on the same masked tokens:
    loss with the head zeroed - loss intact (nats), with a 95% t-interval over the masked tokens.
    `model` must be a masked LM (`*ForMaskedLM`); pass the `mlm_probability` it was trained with.
    Cost: (layers x heads + 1) x mask_draws forward passes over the sentences."""
    if not is_masked_lm(model):
        raise UnsupportedArchitecture(f"head ablation needs a masked-LM model (a *ForMaskedLM class), got "
                                      f"{type(model).__name__}; load it with AutoModelForMaskedLM")
    check_masking(mlm_probability, mask_draws)
    sentences = list(sentences)[:max_sentences]
    if not sentences:
        raise ValueError("no sentences to measure head ablation on")
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    model.eval()
    batches = masked_batches(tokenizer, sentences, max_length_for(model, tokenizer), batch_size, mlm_probability, seed,
                             mask_draws)
    with torch.inference_mode():
        base = _token_losses(model, batches)
        increase, interval = np.zeros((L, H)), np.full((L, H), np.nan)
        for layer in range(L):
            for head in progress(range(H), desc=f"ablating heads of layer {layer}"):
                with zero_head(model, layer, head):
                    diff = (_token_losses(model, batches) - base).double()  # zeroed - intact, per masked token
                increase[layer, head] = float(diff.mean())
                if len(diff) > 1:
                    t = mean_interval(diff.numpy())
                    interval[layer, head] = t.high - t.estimate
    return HeadAblation(num_layers=L, num_heads=H, sentences=len(sentences), masked_tokens=len(base),
                        base_loss=float(base.mean()), loss_increase=increase.tolist(), interval95=interval.tolist(),
                        mlm_probability=mlm_probability, mask_draws=mask_draws)


def ablation_over_seeds(ablations):
    """Per-head loss increase averaged over seeds (one HeadAblation, or its probes.json dict, per seed; all of the
    same shape) with a 95% t-interval over seeds: {"mean", "low", "high"} (layers, heads) lists, "seeds", "df"."""
    increases = [np.asarray(a["loss_increase"] if isinstance(a, dict) else a.loss_increase, dtype=float)
                 for a in ablations]
    if not increases:
        raise ValueError("ablation_over_seeds needs at least one ablation result")
    if any(x.shape != increases[0].shape for x in increases):
        raise ValueError(f"every seed needs the same layers x heads, got {[x.shape for x in increases]}")
    per_head = np.stack(increases)  # (seeds, layers, heads)
    L, H = per_head.shape[1:]
    intervals = [[mean_interval(per_head[:, l, h]) for h in range(H)] for l in range(L)]
    return {"mean": [[t.estimate for t in row] for row in intervals],
            "low": [[t.low for t in row] for row in intervals], "high": [[t.high for t in row] for row in intervals],
            "seeds": len(increases), "df": len(increases) - 1}
