"""What layer 0 (`hidden_states[0]`, the embedding output) is made of, measured on the model: whether a token's vector
changes with its position (a position term added to the token vectors) and whether the word embedding is taken as it
is or normalised. geometry.py scores layer 0 beside the word embeddings alone, and words what it measured here."""

import inspect

import numpy as np
import torch

from .loading import run_model

# position_embedding_type values that name no position term of the embedding output (rotary positions turn queries
# and keys inside attention); only used to NAME a position term that embedding_output_layout measured.
NO_POSITION_TERM = ("none", "rope", "rotary")
# Relative tolerances of the layer-0 measurements: bf16 rounds at about 4e-3, while a position term or a LayerNorm
# moves the vectors by a sizeable share of their norm (and the same computation twice is exact).
SAME, PLAIN = 1e-3, 0.05
SPECIAL_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id", "mask_token_id")


def _ordinary_ids(model, n=8):
    """Up to `n` ids of no special token (a padding row is zero; RoBERTa's positions skip padding) from the upper half
    of the vocabulary (the whole if that half holds fewer), spread over the rows' norms, smallest to largest."""
    special = {getattr(model.config, key, None) for key in SPECIAL_IDS}
    weight = model.get_input_embeddings().weight
    ids = [i for i in range(weight.shape[0] // 2, weight.shape[0]) if i not in special]
    ids = ids if len(ids) >= n else [i for i in range(weight.shape[0]) if i not in special]
    by_norm = np.array(ids, dtype=int)[np.argsort(weight[ids].detach().float().norm(dim=-1).cpu().numpy())]
    return by_norm[np.linspace(0, len(ids) - 1, n).round().astype(int)].tolist() if len(ids) > n else ids


def _one_scale(h, e):
    """(c, misfit): the least-squares c of h_i - mean h = c (e_i - mean e) over the tokens i at each position, and the
    worst position's residual share (or c's spread over the positions)."""
    x, de = h - h.mean(0), e - e.mean(0)  # (tokens, positions, H), (tokens, H): a term of the position cancels
    scale = torch.einsum("tph,th->p", x, de) / (de * de).sum()  # (positions,)
    residual = (x - scale[None, :, None] * de[:, None]).norm(dim=(0, 2)) / x.norm(dim=(0, 2)).clamp_min(1e-30)
    spread = (scale.max() - scale.min()) / scale.abs().max().clamp_min(1e-30)
    return float(scale.mean()), float(max(residual.max(), spread))


def _affine_in_embedding(model, row):
    """Whether hidden_states[0] moves by a constant step along e when the input embedding steps 0, e, 2e (e: a row,
    at two positions): a plain sum c e + (a term of the position) does, a normalisation does not (LayerNorm(2e) =
    LayerNorm(e) without positions). None where the model takes no inputs_embeds."""
    embeds = (torch.tensor([0.0, 1.0, 2.0], dtype=row.dtype, device=row.device)[:, None] * row)[:, None]
    if "inputs_embeds" not in inspect.signature(model.forward).parameters:
        return None
    try:  # 0, 1, 2 are exact in every float format; (3 steps, 2 positions, E)
        h = run_model(model, {"inputs_embeds": embeds.expand(3, 2, -1), "attention_mask": torch.ones(3, 2).long()},
                      output_hidden_states=True).hidden_states[0].double()  # (steps, positions, H)
    except (TypeError, ValueError, NotImplementedError):  # a model that refuses inputs_embeds
        return None
    e, slope, bend = row.double().cpu(), h[2] - h[0], h[2] - 2 * h[1] + h[0]  # (E,), (positions, H) each
    off, moves = (slope - (slope @ e / (e @ e))[:, None] * e).norm(dim=-1), slope.norm(dim=-1)
    return bool((moves > SAME * h.norm(dim=-1).amax(0)).all() and (bend.norm(dim=-1) <= PLAIN * moves).all()
                and (off <= PLAIN * moves).all())


def embedding_output_layout(model):
    """What hidden_states[0] is, measured on 8 ordinary tokens of different norms at positions 0 and 1: {"position":
    a token's vector changes with its position (rotary positions leave none), "plain": c x word embedding + a term of
    the position (+ a constant) by one scale over the tokens AND a constant step along the input embedding (a fresh
    model's rows have nearly equal norms: a LayerNorm fits one scale too) (True); not (False: BERT's LayerNorm); None:
    "projected" to another width, no inputs_embeds and norms too alike, or < 2 ordinary tokens, "scale": c if plain}."""
    ids = _ordinary_ids(model)
    if len(ids) < 2:
        return {"position": None, "plain": None, "scale": None, "projected": False}
    was_training = model.training
    model.eval()  # dropout would make position 0 and 1 differ by chance
    with torch.inference_mode():
        batch = {"input_ids": torch.tensor(ids)[:, None].repeat(1, 2), "attention_mask": torch.ones(len(ids), 2).long()}
        h = run_model(model, batch, output_hidden_states=True).hidden_states[0].double()  # (tokens, 2 positions, H)
        rows = model.get_input_embeddings().weight[ids].detach()  # (tokens, E)
        projected = h.shape[-1] != rows.shape[-1]
        affine = None if projected else _affine_in_embedding(model, rows[rows.float().norm(dim=-1).argmax()])
    model.train(was_training)
    position = bool((h[:, 1] - h[:, 0]).norm(dim=-1).max() > SAME * h.norm(dim=-1).max())
    if projected:
        return {"position": position, "plain": None, "scale": None, "projected": True}
    scale, misfit = _one_scale(h, e := rows.double().cpu())
    alike = e.norm(dim=-1).max() < (1 + 4 * PLAIN) * e.norm(dim=-1).min()  # a LayerNorm would fit one scale too
    plain = None if affine is None and misfit <= PLAIN and alike else bool(misfit <= PLAIN and affine is not False)
    return {"position": position, "plain": plain, "scale": scale if plain else None, "projected": False}


def layer0_note(model, layout=None):
    """What layer 0 and `static` are for `model` (None: said in general terms): GeometryResults.layer0_note. The
    position term and the normalisation are measured (`embedding_output_layout`, or `layout` where the caller has
    measured it already), not read from config fields that other architectures lack; what cannot be measured is not
    said."""
    head = "layer 0 = hidden_states[0], the embedding output"
    layout = layout if layout is not None or model is None else embedding_output_layout(model)
    if layout is None or layout["position"] is None:
        return f"{head} (the word embedding, plus any position embedding)" + (
            "." if model is None else "; not measured: fewer than 2 ordinary (non-special) tokens.")
    static = "static = the word embeddings alone (input-embedding rows, pieces mean-pooled)"
    times = f" times {layout['scale']:.3g}" if layout["plain"] and abs(layout["scale"] - 1) > PLAIN else ""
    unknown = " (whether it is then normalised is not measured)"
    if layout["position"]:
        kind = getattr(model.config, "position_embedding_type", None)
        named = f"{kind} " if isinstance(kind, str) and kind not in NO_POSITION_TERM else ""
        how = {True: f"{times}, a plain sum with no embedding LayerNorm",
               False: ", then normalised (not their plain sum: an embedding LayerNorm, as in BERT)",
               None: ", in another width than the word embeddings' (projected)" if layout["projected"] else unknown}
        return (f"{head}: word embedding + {named}position embedding{how[layout['plain']]}; measured, a "
                f"token's vector changes with its position. {static}, without the position signal.")
    alone = {True: f"the word embedding alone{times}",
             False: "the word embedding alone, then normalised (e.g. an embedding LayerNorm)",
             None: "a function of the word embedding alone, in another width (projected)" if layout["projected"] else
             f"the word embedding alone{unknown}"}[layout["plain"]]
    return (f"{head}: {alone}, with no position term; measured, a token's vector is the same at every "
            f"position (positions, if any, act inside attention). {static}.")
