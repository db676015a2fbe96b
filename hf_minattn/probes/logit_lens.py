"""Which layer already predicts the token? The logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens"):
each layer's hidden state at the scored positions (the masked ones of a masked LM, every position of a next-token
LM) is decoded through the model's own final norm (where the architecture has one after its last block) and output
head, and scored as the model's output would be: mean cross-entropy (nats) with a 95% t-interval over the scored
tokens, top-1 accuracy and, given a unigram floor, the gain over it (floor - loss, nats; > 0: the layer predicts
better than token frequencies alone).

Layer 0 is the embedding output, layer l the output of block l. Decoding the last layer gives the model's own logits
(checked on every batch). The other layers are read through a head trained on the last layer only: a high loss there
says that this head cannot read the layer, not that the layer lacks the information (a decoder trained per layer,
the "tuned lens" of Belrose et al. 2023, reads more).

Tokens: `scored_batches` of the head ablation; with the same sentences, batch size, seed, rate and draws they are
the same, and the last layer's loss is the ablation's base loss.
"""

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from hf_minattn.stats import mean_interval

from .head_ablation import NEXT_TOKEN_NOTE, check_masking, is_masked_lm, lm_objective, scored_batches
from .loading import max_length_for, run_model
from .weights import UnsupportedArchitecture


@dataclass
class LogitLens:
    """Masked-token loss and accuracy of every layer decoded through the final norm and MLM head."""

    num_layers: int
    sentences: int
    masked_tokens: int  # tokens scored at every layer (all mask draws)
    loss: list  # (layers + 1,): mean cross-entropy (nats); [0] = embedding output, [-1] = the model's own loss
    accuracy: list  # (layers + 1,): share of masked tokens whose top-1 prediction is the original token
    interval95: list  # (layers + 1,): half-width of the loss's 95% t-interval over tokens (df = masked_tokens - 1)
    floor: float | None = None  # unigram cross-entropy on the same masked tokens (nats); None: no floor given
    gain: list | None = None  # (layers + 1,): floor - loss (nats; > 0: better than token frequencies alone)
    gain_interval95: list | None = None  # (layers + 1,): half-width of the gain's 95% t-interval (paired per token)
    # (layers + 1, sentences): each sentence's mean gain over its masked tokens (all draws), in the order the sentences
    # were given, and how many masked tokens each has: the sentences are the sample (tokens of one are not independent)
    sentence_gain: list | None = None
    sentence_tokens: list | None = None
    mlm_probability: float | None = 0.15  # None: a next-token LM (nothing masked)
    mask_draws: int = 1
    objective: str = "masked"  # or "next-token": what the scored tokens are (masked_tokens then counts those)
    note: str = ("Layer 0 is the embedding output (hidden_states[0], before any block), layer l the output of block "
                 "l. Every layer is decoded through the model's final norm (where it has one after the last block) "
                 "and MLM head, which were trained on the last layer only: a high loss at a lower layer means this "
                 "head cannot read it, not that the information is absent (the logit-lens caveat). Masking as in the "
                 "head ablation: each non-special token replaced by the mask token with probability mlm_probability "
                 "(at least one per sentence), mask_draws draws from the seed. The interval treats masked tokens as "
                 "independent (tokens of one sentence are not).")


LENS_NEXT_TOKEN_NOTE = ("Layer 0 is the embedding output (hidden_states[0], before any block), layer l the output of "
                        "block l. Every layer is decoded through the model's final norm and output layer, which were "
                        "trained on the last layer only: a high loss at a lower layer means this head cannot read it, "
                        "not that the information is absent (the logit-lens caveat). " + NEXT_TOKEN_NOTE)


def _distilbert_head(model, hidden):
    return model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(hidden))))


# Where each known *ForMaskedLM keeps its MLM head, and the head as a function of a hidden state (N, C) -> (N, V).
MLM_HEADS = {
    "lm_head": lambda model, hidden: model.lm_head(hidden),  # MinAttn, RoBERTa (dense, gelu, norm, decoder)
    "cls": lambda model, hidden: model.cls(hidden),  # BERT: BertOnlyMLMHead (transform, then decoder)
    "vocab_projector": _distilbert_head,  # DistilBERT: four modules, applied in its forward's order
    "predictions": lambda model, hidden: model.predictions(hidden),  # ALBERT: AlbertMLMHead
    # ELECTRA's generator: its transform (dense, gelu, norm), then the decoder
    "generator_lm_head": lambda model, hidden: model.generator_lm_head(model.generator_predictions(hidden)),
}


def mlm_head(model):
    """The language model's head as a function of hidden states (N, C) -> logits (N, V): a next-token LM's output
    layer, or a masked LM's whole head; UnsupportedArchitecture, naming the class, for a model with no such head or
    an MLM head kept where MLM_HEADS does not look."""
    name = type(model).__name__
    if lm_objective(model) is None or model.get_output_embeddings() is None:
        raise UnsupportedArchitecture(f"the logit lens needs a *ForMaskedLM model with an MLM head; {name} has none "
                                      "(nor is it a next-token LM). Load a checkpoint that has trained head weights "
                                      "with AutoModelForMaskedLM")
    if not is_masked_lm(model):  # decoders project the final hidden state with the output layer alone
        return model.get_output_embeddings()
    for attribute, head in MLM_HEADS.items():
        if hasattr(model, attribute):
            return lambda hidden: head(model, hidden)
    raise UnsupportedArchitecture(f"{name} keeps its MLM head under none of {', '.join(MLM_HEADS)}; add it to "
                                  "logit_lens.MLM_HEADS")


# Where a pre-norm model keeps the norm after its last block: MinAttn and ModernBERT, GPT-2, Llama (Mistral, Gemma,
# Qwen), GPT-NeoX, Phi, OPT
FINAL_NORMS = ("final_norm", "ln_f", "norm", "final_layer_norm", "final_layernorm", "decoder.final_layer_norm")


def final_norm(model):
    """The norm applied after the last block (FINAL_NORMS), or None (post-norm models: MinAttn post-norm, BERT,
    DistilBERT, RoBERTa). hidden_states[-1] has already been through it, the others not."""
    for path in FINAL_NORMS:
        module = model.base_model
        for name in path.split("."):
            module = getattr(module, name, None)
        if isinstance(module, torch.nn.Module):
            return module
    return None


def _check_last_layer(model, decoded, logits):
    """The lens must reproduce the model's logits at the last layer; otherwise the head table is wrong for it. A batch
    that scores no token (scored_batches refuses sentences with none at all) has nothing to compare."""
    if logits.numel() == 0:
        return
    tolerance = 1e-3 if logits.dtype == torch.float32 else 3e-2  # half precision: kernels may round differently
    error = float((decoded.float() - logits.float()).abs().max())
    if error > tolerance * (1 + float(logits.abs().max())):
        raise UnsupportedArchitecture(f"decoding the last layer of {type(model).__name__} does not give its own logits "
                                      f"(largest difference {error:.3g}): its hidden states or head are not laid out "
                                      "as logit_lens.MLM_HEADS and final_norm expect")


def _floor_log_probs(unigram):
    if unigram is None:
        return None
    log_probs = np.asarray(getattr(unigram, "log_probs", unigram), dtype=np.float64)  # a UnigramFloor or its (V,)
    if log_probs.ndim != 1:
        raise ValueError(f"unigram must be a UnigramFloor or a (vocab,) array of log-probs, got shape "
                         f"{log_probs.shape}")
    return log_probs


def _half_width(values):
    if len(values) < 2:
        return float("nan")
    t = mean_interval(values)
    return t.high - t.estimate


def logit_lens(model, tokenizer, sentences, max_sentences=64, batch_size=16, mlm_probability=0.15, seed=0,
               mask_draws=1, unigram=None) -> LogitLens:
    """Loss on the scored tokens (nats, with a 95% t-interval over tokens) and top-1 accuracy of every layer's hidden
    state decoded through the model's final norm and head; layer 0 = embedding output. `model` is a masked LM
    (`*ForMaskedLM`: pass the `mlm_probability` it was trained with) or a next-token LM (head_ablation.scored_batches).
    `unigram`: a `hf_minattn.unigram.UnigramFloor` (or its log-probs) for the floor and the gain per layer. Cost:
    mask_draws forward passes over the sentences (one for a next-token LM)."""
    check_masking(mlm_probability, mask_draws)
    head = mlm_head(model)
    log_probs = _floor_log_probs(unigram)
    sentences = list(sentences)[:max_sentences]
    if not sentences:
        raise ValueError("no sentences to run the logit lens on")
    norm = final_norm(model)
    model.eval()
    losses, correct, targets = [], [], []  # per batch: (layers + 1, N) and (N,), N = the batch's scored tokens
    with torch.inference_mode():
        batches, objective = scored_batches(model, tokenizer, sentences, max_length_for(model, tokenizer), batch_size,
                                            mlm_probability, seed, mask_draws)
        owners = _token_sentences(batches, sentences)
        for enc, chosen, labels in batches:
            output = run_model(model, enc, output_hidden_states=True)
            last = len(output.hidden_states) - 1
            target = labels[chosen]  # (N,)
            batch_losses, batch_correct = [], []
            for layer, states in enumerate(output.hidden_states):  # states: (B, T, C) on the CPU
                hidden = states[chosen].to(model.device)  # (N, C): the masked positions only
                if norm is not None and layer < last:  # hidden_states[last] has been through it already
                    hidden = norm(hidden)
                logits = head(hidden).cpu()  # (N, V)
                if layer == last:
                    _check_last_layer(model, logits, output.logits[chosen])
                batch_losses.append(F.cross_entropy(logits.float(), target, reduction="none"))
                batch_correct.append(logits.argmax(-1) == target)
            losses.append(torch.stack(batch_losses))
            correct.append(torch.stack(batch_correct))
            targets.append(target)
    losses = torch.cat(losses, dim=1).double().numpy()  # (layers + 1, masked tokens)
    correct = torch.cat(correct, dim=1).double().numpy()
    targets = torch.cat(targets).numpy()
    masked = objective == "masked"
    lens = LogitLens(num_layers=last, sentences=len(sentences), masked_tokens=len(targets),
                     loss=losses.mean(1).tolist(), accuracy=correct.mean(1).tolist(),
                     interval95=[_half_width(x) for x in losses], mlm_probability=mlm_probability if masked else None,
                     mask_draws=mask_draws if masked else 1, objective=objective,
                     **({} if masked else {"note": LENS_NEXT_TOKEN_NOTE}))
    if log_probs is not None:
        if targets.max() >= len(log_probs):
            raise ValueError(f"the unigram floor covers {len(log_probs)} token ids but a masked token has id "
                             f"{int(targets.max())}; count it with the model's tokenizer")
        floor = -log_probs[targets]  # (masked tokens,): the floor's loss on each token
        lens.floor = float(floor.mean())
        lens.gain = (floor - losses).mean(1).tolist()  # paired per token, so the interval below is too
        lens.gain_interval95 = [_half_width(floor - x) for x in losses]
        lens.sentence_tokens = np.bincount(owners, minlength=len(sentences)).tolist()
        per_sentence = np.stack([np.bincount(owners, weights=floor - x, minlength=len(sentences)) for x in losses])
        lens.sentence_gain = np.round(per_sentence / np.maximum(lens.sentence_tokens, 1), 4).tolist()
    return lens


def _token_sentences(batches, sentences) -> np.ndarray:
    """(masked tokens,): the index in `sentences` of each masked token, in the order the batches yield them.
    masked_batches runs sentence_batches once per mask draw, which sorts the sentences by length (stably)."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    owners, row = [], 0
    for _, chosen, _ in batches:
        rows = chosen.nonzero()[:, 0].numpy()  # the batch row of each masked token, row-major like states[chosen]
        owners.append(np.asarray(order)[(row + rows) % len(sentences)])
        row += len(chosen)
    return np.concatenate(owners)
