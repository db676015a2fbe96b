"""Which heads does a language model need? Per-head ablation: the increase of the model's loss when one head's
output is zeroed (its slice of the input of W_O; b_O kept), on the same tokens for every head, with a 95% t-interval
over tokens. Sign: increase = loss with the head zeroed - loss intact, so > 0 means the model needs the head.
`zero_head` is the ablation itself, usable on its own; `ablation_over_seeds` gives per-head intervals over seeds.

The tokens scored (`scored_batches`, shared with the logit lens) are what the model's head predicts: masked tokens
for a masked LM (`*ForMaskedLM`), masked at the rate it was trained with (`mlm_probability`; the experiments train at
0.3, BERT at 0.15: with more of the context masked, a head's contribution changes); every next token for a
next-token LM (`*ForCausalLM`, GPT-2's `*LMHeadModel`), checked first to predict from the tokens before a position
only. `language_model_for` finds that model for an encoder probed without its head.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from hf_minattn.stats import mean_interval

from .attention_norms import attention_modules
from .heads import sentence_batches
from .layouts import head_geometry, hook_layers
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
    mlm_probability: float | None = 0.15  # None: a next-token LM (nothing masked)
    mask_draws: int = 1
    objective: str = "masked"  # or "next-token": what the scored tokens are (masked_tokens then counts those)
    note: str = ("Masking: each non-special token replaced by the mask token with probability mlm_probability (at "
                 "least one per sentence; no 80/10/10 split), mask_draws independent draws from the seed, shared by "
                 "every ablation. The interval treats masked tokens as independent (tokens of one sentence are not).")


NEXT_TOKEN_NOTE = ("Scored: every next token of each sentence that is a real, non-special token, predicted from the "
                   "tokens before it; nothing is masked. The interval treats those tokens as independent (tokens of "
                   "one sentence are not).")


def is_masked_lm(model):
    return type(model).__name__.endswith("ForMaskedLM")


def lm_objective(model):
    """What the model's head predicts: "masked" for a *ForMaskedLM, "next-token" for a *ForCausalLM or GPT-2's
    *LMHeadModel (scored_batches checks that it predicts from the tokens before a position only), else None."""
    if is_masked_lm(model):
        return "masked"
    return "next-token" if type(model).__name__.endswith(("ForCausalLM", "LMHeadModel")) else None


def language_model_for(model, model_path=None, lm_model=None, trust_remote_code=False):
    """(language model, None) for head ablation and the logit lens, or (None, why not): `lm_model` if given, `model`
    if it is one, else the checkpoint at `model_path` loaded with AutoModelForMaskedLM (or, for an architecture with
    no masked LM, AutoModelForCausalLM) if it has trained head weights."""
    if lm_model is not None:
        ok = lm_objective(lm_model) is not None
        return (lm_model.eval(), None) if ok else (None, f"{type(lm_model).__name__} is not a masked or next-token LM")
    if lm_objective(model):
        return model, None
    if model_path is None:
        return None, f"{type(model).__name__} has no masked-LM head and no checkpoint path was given to load one"
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    errors = []
    for auto in (AutoModelForMaskedLM, AutoModelForCausalLM):
        try:
            lm, info = auto.from_pretrained(model_path, trust_remote_code=trust_remote_code, dtype=model.dtype,
                                            output_loading_info=True)  # in the encoder's dtype
            break
        except (ValueError, OSError, KeyError) as error:
            errors.append(str(error).splitlines()[0])  # the first line: not transformers' list of every model type
    else:
        return None, f"{model_path} does not load as a masked LM ({errors[0]}), nor as a next-token LM"
    if info.get("missing_keys"):
        missing, kind = sorted(info["missing_keys"]), "masked-LM" if is_masked_lm(lm) else "language-model"
        return None, (f"{model_path} has no trained {kind} head (missing {len(missing)} weights, e.g. {missing[0]}); "
                      "a randomly initialised head would make the loss meaningless")
    return lm.to(model.device).eval(), None


@contextmanager
def zero_head(model, layer, head):
    """Within the block, head `head` of layer `layer` outputs zero: a forward pre-hook on the attention output
    projection (W_O, found through the layout table of layouts.py) zeroes channels head*D:(head+1)*D of its input
    (D: layouts.head_geometry; W_O's bias stays). UnsupportedArchitecture for a layout the table does not know."""
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"(layer, head) must lie in [0, {L}) x [0, {H}), got ({layer}, {head})")
    modules = [entry["output"] for entry in attention_modules(model)]  # the heads' shapes checked first
    D = head_geometry(model)[1]

    def hook(called, args, kwargs):
        if called != layer:  # W_O of another layer (ALBERT's layers share one)
            return None
        x = args[0].clone()
        x[..., head * D:(head + 1) * D] = 0
        return (x, *args[1:]), kwargs

    handles = hook_layers(model, modules, hook)
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


def next_token_batches(tokenizer, sentences, max_length, batch_size):
    """[(encoding, chosen (B, T) bool, labels (B, T))] over the sentences: at every real position whose next position
    holds a real, non-special token, that token is the label (labels[:, t] = input_ids[:, t + 1]), as a causal LM's
    loss scores it; left or right padding alike."""
    batches = []
    for _, enc in sentence_batches(tokenizer, sentences, max_length, batch_size):
        ids, real = enc["input_ids"], enc["attention_mask"].bool()
        special = torch.tensor([tokenizer.get_special_tokens_mask(row, already_has_special_tokens=True)
                                for row in ids.tolist()]).bool()
        chosen = real & (real & ~special).roll(-1, dims=1)
        chosen[:, -1] = False  # the last position has no next token (roll brought the first one round)
        batches.append((enc, chosen, ids.roll(-1, dims=1)))
    return batches


def check_next_token(model, enc):
    """A next-token LM's prediction at a position must not change when a later token does; a head on a bidirectional
    encoder (XLNet's, or BERT's without is_decoder) would read the answer. UnsupportedArchitecture if it does. Read
    on the batch's longest sentence."""
    row = int(enc["attention_mask"].sum(1).argmax())
    one = {key: value[row:row + 1] for key, value in enc.items()}
    real = one["attention_mask"][0].bool()
    last = int(real.nonzero().max())  # the last real position, with left or right padding
    before = real.clone()
    before[last:] = False
    if not before.any():
        return
    intact = run_model(model, one).logits[0, before]
    one["input_ids"] = one["input_ids"].clone()
    one["input_ids"][0, last] = (one["input_ids"][0, last] + 1) % model.config.vocab_size
    changed = run_model(model, one).logits[0, before]
    if not torch.allclose(intact.float(), changed.float(), atol=1e-4, rtol=1e-3):
        raise UnsupportedArchitecture(f"{type(model).__name__}'s predictions change with the tokens after them: it is "
                                      "no next-token LM (its head would read the answer), and it has no masked-LM head")


def scored_batches(model, tokenizer, sentences, max_length, batch_size, mlm_probability, seed, mask_draws):
    """(batches, objective): the tokens the model's head is scored on, as (encoding, chosen, labels) batches: masked
    tokens for a masked LM (`masked_batches`), every next token for a next-token LM (`next_token_batches`, after
    `check_next_token`). UnsupportedArchitecture for a model that is neither; a ValueError where no token is scored."""
    objective = lm_objective(model)
    if objective == "masked":
        batches = masked_batches(tokenizer, sentences, max_length, batch_size, mlm_probability, seed, mask_draws)
    elif objective is None:
        raise UnsupportedArchitecture(f"scoring needs a masked LM (a *ForMaskedLM class) or a next-token LM (a "
                                      f"*ForCausalLM class), got {type(model).__name__}; load it with "
                                      "AutoModelForMaskedLM")
    else:
        batches = next_token_batches(tokenizer, sentences, max_length, batch_size)
        check_next_token(model, batches[-1][0])  # the longest sentences come last
    _require_scored_tokens(batches, tokenizer, len(sentences), objective)
    return batches, objective


def _require_scored_tokens(batches, tokenizer, n_sentences, objective):
    """A ValueError where the batches score no token (a loss over none would be NaN): every token of the sentences
    is a special one, as under a tokenizer that knows only its special tokens (each word its unknown token)."""
    if sum(int(chosen.sum()) for _, chosen, _ in batches):
        return
    what = ("a non-special token to mask" if objective == "masked" else
            "a real, non-special token after its first")
    raise ValueError(f"no token to score: none of the {n_sentences} sentences has {what} under the tokenizer "
                     f"{tokenizer.name_or_path!r} (is it the model's own? one that knows only its special tokens reads "
                     "every word as its unknown token)")


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
    """Per head, the increase of the model's loss when that head's output is zeroed, on the same tokens: loss with
    the head zeroed - loss intact (nats), with a 95% t-interval over the tokens. `model` is a masked LM
    (`*ForMaskedLM`: pass the `mlm_probability` it was trained with) or a next-token LM (scored_batches).
    Cost: (layers x heads + 1) x mask_draws forward passes over the sentences (one draw for a next-token LM)."""
    if lm_objective(model) is None:
        raise UnsupportedArchitecture(f"head ablation needs a masked-LM model (a *ForMaskedLM class) or a next-token "
                                      f"LM (a *ForCausalLM class), got {type(model).__name__}; load it with "
                                      "AutoModelForMaskedLM")
    check_masking(mlm_probability, mask_draws)
    sentences = list(sentences)[:max_sentences]
    if not sentences:
        raise ValueError("no sentences to measure head ablation on")
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    model.eval()
    with torch.inference_mode():
        batches, objective = scored_batches(model, tokenizer, sentences, max_length_for(model, tokenizer), batch_size,
                                            mlm_probability, seed, mask_draws)
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
    masked = objective == "masked"
    return HeadAblation(num_layers=L, num_heads=H, sentences=len(sentences), masked_tokens=len(base),
                        base_loss=float(base.mean()), loss_increase=increase.tolist(), interval95=interval.tolist(),
                        mlm_probability=mlm_probability if masked else None, mask_draws=mask_draws if masked else 1,
                        objective=objective, **({} if masked else {"note": NEXT_TOKEN_NOTE}))


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
