"""Are W_Q and W_K the embedding matrix in disguise? Layer 0's circuits at token level against named hypotheses.

The attention of layer 0 reads X = LN(E[t]) for a token t (E: the word-embedding matrix; LN: the norm the model
applies before that attention), plus a position vector where the model adds one before that norm. X is taken from the
model itself (layer 0's attention input, found by the layout table of layouts.py), so any architecture of that
table works: MinAttn, BERT-style encoders, GPT-2, Llama, ... For each head h and the N most frequent tokens:

- the QK form A_h = (X W_Q,h^T + b_Q,h)(X W_K,h^T + b_K,h)^T, (N, N): A_h[i, j] is the logit of query token i for
  key token j before the model's scaling by 1/sqrt(head_dim), which no rank-based number here depends on. It is
  correlated (Spearman, bootstrap interval over tokens) with three hypotheses:
    identity      X_h X_h^T, X_h = head h's 1/H of X's channels (X[:, h*D:(h+1)*D] where H * D is the hidden
                  size): what W_Q = W_K = I gives head h (the `qkv_projection="identity"` model: a head's query and
                  key are its slice of the input channels);
    cooccurrence  the PPMI of the two tokens within a window of running text (cooccurrence.ppmi_matrix);
    initial       A_h of the same architecture at initialisation.
  Beside them: the share of A_h's eigenvalues that are positive, weighted by magnitude (1: A_h is positive
  semi-definite, each token prefers keys like itself), and the mean rank of A_h[i, i] in its row.
- the OV circuit M_h = W_U W_O,h W_V,h X^T restricted to the N tokens, (N, N): column j holds the logits that
  source token j, moved by head h, writes directly to every output token i (Elhage et al. 2021's direct path). Its
  copying score is sum Re(lambda) / sum |lambda| over its eigenvalues (1: the head copies, -1: it suppresses), and
  the mean rank of M_h[j, j] within column j says how high a token's own logit is among what it writes.

Eigenvalues come from the factors: the nonzero eigenvalues of L R (N, N) with L (N, D), R (D, N) are those of R L
(D, D), so no N x N matrix is ever decomposed. A model that normalises each head's queries and keys after W_Q and W_K
(Qwen 3, Gemma 3: weights.query_key_norm_problem) computes no A_h: its QK scores are None, with a note.
"""

from dataclasses import dataclass

import numpy as np
import torch

from hf_minattn.stats import bootstrap_interval, spearman_of_copies

from . import layouts
from .attention_norms import attention_modules
from .cooccurrence import ppmi_matrix
from .weights import UnsupportedArchitecture, head_weights, query_key_norm_problem
from .weights import initial_model as fresh_model

SPECIAL_ID_FIELDS = ("pad_token_id", "unk_token_id", "cls_token_id", "sep_token_id", "mask_token_id", "bos_token_id",
                     "eos_token_id")


@dataclass
class Circuits:
    """Layer 0's QK and OV circuits on the N most frequent tokens, per head (lists of num_heads entries)."""

    layer: int  # always 0: only there is the attention input a function of the token alone
    num_heads: int
    head_dim: int
    token_ids: list  # the N tokens, most frequent first; the rows and columns of every (N, N) form
    scaling: float  # 1/sqrt(head_dim), by which the model multiplies A_h before the softmax (ignored here)
    # the QK scores; None where the model normalises queries and keys per head (no A_h: the note says so)
    identity: list | None = None  # per head: Interval dict, Spearman of A_h with X_h X_h^T (ordered pairs i != j)
    qk_positive: list | None = None  # per head: sum Re(lambda) / sum |lambda| of A_h (1: positive semi-definite)
    qk_self_rank: list | None = None  # per head: mean rank of A_h[i, i] in row i (1: every token prefers itself)
    ov_copying: list | None = None  # per head: sum Re(lambda) / sum |lambda| of M_h (1: copies, -1: suppresses)
    ov_self_rank: list | None = None  # per head: mean rank of M_h[j, j] in column j (1: a token's own logit is its top)
    initial: list | None = None  # per head: Interval dict, Spearman of A_h with A_h at initialisation; None: not asked
    cooccurrence: list | None = None  # per head: Interval dict, Spearman of A_h (symmetric part) with PPMI
    pairs: dict | None = None  # how many token pairs each correlation was computed on (after subsampling)
    window: int | None = None  # co-occurrence window (tokens), when counted here
    note: str = ""


def _layer0(model):
    """Layer 0's {"W_Q", "W_K", "W_V": (H, D, C), "W_O": (H, C, D)} weights and {"b_Q", "b_K", "b_V": (H, D) or None}
    biases, float64 on the CPU; UnsupportedArchitecture where the layout table does not know the model."""
    weights = {name: w.detach().double().cpu() for name, w in head_weights(model)[0][0].items()}
    biases = {name: None if b is None else b.double().cpu() for name, b in layouts.layout_head_biases(model)[0].items()}
    return weights, biases


def _as_counts(counts, vocab_size):
    """(V,) float64 token counts from an array-like or a hf_minattn.unigram.UnigramFloor."""
    if hasattr(counts, "log_probs") and hasattr(counts, "num_tokens"):
        # UnigramFloor stores log((count + 1) / (N + V)): invert the add-one smoothing
        log_probs = np.asarray(counts.log_probs, dtype=np.float64)
        counts = np.rint(np.exp(log_probs) * (counts.num_tokens + len(log_probs)) - 1)
    counts = np.asarray(counts.detach().cpu() if isinstance(counts, torch.Tensor) else counts, dtype=np.float64)
    if counts.ndim != 1 or len(counts) != vocab_size:
        raise ValueError(f"counts must hold one count per token id, shape ({vocab_size},) for this model's vocab_size, "
                         f"got shape {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        bad = int(np.flatnonzero(~np.isfinite(counts) | (counts < 0))[0])
        raise ValueError(f"counts must be finite and non-negative, got {counts[bad]} for token id {bad}")
    return counts


def select_tokens(model, counts=None, n_tokens=1000, special_ids=()):
    """(ids (N,) LongTensor, how they were chosen): the `n_tokens` most frequent non-special ids by `counts` ((V,)
    counts or a UnigramFloor; ids never counted are left out), most frequent first, ties by id. Without counts: the
    first `n_tokens` non-special ids. Special: the config's pad/unk/cls/sep/mask/bos/eos ids and `special_ids` (a
    tokenizer's `all_special_ids`: a BERT config names only its pad id)."""
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 2:
        raise ValueError(f"n_tokens must be an integer >= 2 (pairs of tokens are compared), got {n_tokens!r}")
    if (isinstance(special_ids, (str, bytes)) or not hasattr(special_ids, "__iter__")
            or not all(isinstance(i, (int, np.integer)) for i in special_ids)):
        raise ValueError(f"special_ids must be token ids (integers, e.g. a tokenizer's all_special_ids), got "
                         f"{special_ids!r}")
    config = model.config
    special = ({getattr(config, name, None) for name in SPECIAL_ID_FIELDS} | set(special_ids)) - {None}
    if counts is None:
        ids = [i for i in range(config.vocab_size) if i not in special][:n_tokens]
        how = (f"No token counts were given: the tokens are the first {len(ids)} non-special ids, not the most "
               "frequent ones.")
    else:
        counts = _as_counts(counts, config.vocab_size)
        order = np.argsort(-counts, kind="stable")  # most frequent first, ties by id
        ids = [int(i) for i in order if counts[i] > 0 and int(i) not in special][:n_tokens]
        how = f"The tokens are the {len(ids)} most frequent non-special ids of the given counts."
    if len(ids) < 2:
        raise ValueError(f"need at least 2 tokens to compare, found {len(ids)} (non-special ids with a count > 0)")
    return torch.tensor(ids), how


POSITIONS = 16  # where the stream holds position vectors, X averages positions 1..16 (0 is [CLS]'s or a BOS's)


class _Captured(Exception):
    """Raised once layer 0's attention input is seen: nothing after it is needed."""


def position_inputs(model, ids, batch_size=256):
    """(N, P, C) float64 on the CPU: layer 0's attention input for each token of `ids` repeated along a sequence, at
    positions 1..P (P = POSITIONS, fewer where the model has fewer positions), as the model computes it: embeddings,
    any position and token-type vectors, and the norm before that attention. Layer 0's attention input depends only
    on the token and its position, so the other tokens of the sequence do not matter."""
    limit = getattr(model.config, "max_position_embeddings", None)
    length = POSITIONS + 1 if not limit else max(2, min(POSITIONS + 1, limit - 2))  # RoBERTa's positions start at 2
    modules = [entry["input"] for entry in attention_modules(model)]
    captured = []

    def hook(layer, args, kwargs):
        if layer == 0:
            captured.append(layouts.sublayer_input(args, kwargs).detach())
            raise _Captured

    device = next(model.parameters()).device
    handles = layouts.hook_layers(model, modules, hook)
    try:
        with torch.inference_mode():
            for chunk in ids.split(batch_size):
                batch = chunk.to(device)[:, None].expand(-1, length)  # (B, T): each token repeated
                try:
                    model(input_ids=batch, attention_mask=torch.ones_like(batch))
                except _Captured:
                    pass
    finally:
        for handle in handles:
            handle.remove()
    if not captured:
        raise UnsupportedArchitecture(f"{type(model).__name__} never ran layer 0's attention input module")
    x = torch.cat(captured)
    if x.dim() != 3 or x.shape[:2] != (len(ids), length):  # Longformer's attention reads (T, B, C), padded
        raise UnsupportedArchitecture(f"{type(model).__name__}'s layer-0 attention reads an input of shape "
                                      f"{tuple(x.shape)} for {len(ids)} sequences of {length} tokens, not (sequences, "
                                      "tokens, hidden)")
    return x[:, 1:].double().cpu()  # (N, P, C): positions 1..P


def position_spread(inputs):
    """How much layer 0's attention input of a token varies with its position: ||inputs - mean over positions|| /
    ||inputs|| over (N, P, C) `inputs`; 0 where the stream holds no position vectors (rotary, none)."""
    return float((inputs - inputs.mean(1, keepdim=True)).norm() / inputs.norm().clamp_min(1e-300))


def attention_inputs(model, ids):
    """X, (N, C) float64 on the CPU: layer 0's attention input of each token, averaged over positions 1..P
    (`position_inputs`); where the stream holds no position vectors every position gives the same, X = LN(E[t])."""
    return position_inputs(model, ids).mean(1)


def _projections(model, X):
    """Head-wise queries, keys and values of X (N, C) at layer 0: three (H, N, D) float64 tensors, biases included."""
    weights, biases = _layer0(model)
    projected = []
    for w, b in (("W_Q", "b_Q"), ("W_K", "b_K"), ("W_V", "b_V")):
        heads = torch.einsum("hdc,nc->hnd", weights[w], X)  # q_h = W_Q[h] @ x
        projected.append(heads if biases[b] is None else heads + biases[b][:, None, :])
    return projected


def qk_forms(model, ids):
    """A_h = Q_h K_h^T for every head of layer 0, (H, N, N) float64, unscaled: A_h[i, j] is query token i's logit
    for key token j (times 1/sqrt(head_dim) in the model), at equal positions under rotary embeddings.
    UnsupportedArchitecture where the model normalises queries and keys per head (its logits are not A_h)."""
    problem = query_key_norm_problem(model)
    if problem:
        raise UnsupportedArchitecture(problem)
    Q, K, _ = _projections(model, attention_inputs(model, ids))
    return Q @ K.transpose(1, 2)  # (H, N, N)


def identity_forms(model, ids):
    """X_h X_h^T for every head, (H, N, N): the QK form head h would have with W_Q = W_K = I (no biases)."""
    return _identity_forms(attention_inputs(model, ids), model.config.num_attention_heads)


def _identity_forms(X, H):
    # head h's 1/H of the channels, (N, C / H) each (sizes differing by one where H does not divide C)
    return torch.stack([X_h @ X_h.T for X_h in X.tensor_split(H, dim=1)])  # (H, N, N)


def unembedding(model):
    """(W_U (V, E) float64 or None, where it came from): the output layer of a language model's head, or for a bare
    encoder with tied embeddings the word embeddings themselves (which its head would share)."""
    decoder = model.get_output_embeddings()
    if decoder is not None:
        return decoder.weight.detach().double().cpu(), "the output layer of the language-model head"
    if getattr(model.config, "tie_word_embeddings", False):
        return model.get_input_embeddings().weight.detach().double().cpu(), "the tied word embeddings"
    return None, None


def _ov_factors(model, ids, X):
    """(L, R), (H, N, D) and (H, D, N), with M_h = L_h R_h = W_U[ids] W_O,h W_V,h X^T (X: the tokens' attention
    inputs, `attention_inputs`); None without a W_U of the hidden size."""
    W_U, _ = unembedding(model)
    if W_U is None or W_U.shape[1] != model.config.hidden_size:
        return None
    weights, _ = _layer0(model)
    left = torch.einsum("nc,hcd->hnd", W_U[ids], weights["W_O"])  # (H, N, D)
    right = torch.einsum("hdc,nc->hdn", weights["W_V"], X)  # (H, D, N)
    return left, right


def ov_forms(model, ids):
    """M_h = W_U W_O,h W_V,h X^T on the N tokens, (H, N, N): column j = the logits source token j writes through head
    h (biases, the head's dense/LN transform and later layers left out); None where the model has no W_U."""
    factors = _ov_factors(model, ids, attention_inputs(model, ids))
    return None if factors is None else factors[0] @ factors[1]


def positive_eigen_share(left, right):
    """sum Re(lambda) / sum |lambda| over the eigenvalues of left @ right (n, n), with left (n, k), right (k, n): its
    nonzero eigenvalues are those of right @ left (k, k). 1 for a positive semi-definite product, -1 for a negative
    one; None when every eigenvalue is 0."""
    eigenvalues = torch.linalg.eigvals(right @ left)  # (k,)
    total = float(eigenvalues.abs().sum())
    return None if total == 0 else float(eigenvalues.real.sum()) / total


def diagonal_rank(matrix, dim):
    """Mean rank (1 = largest) of each diagonal entry within its column (dim=0) or row (dim=1); ties share their
    mean rank. Chance: (n + 1) / 2."""
    diagonal = matrix.diagonal()
    diagonal = diagonal[None, :] if dim == 0 else diagonal[:, None]  # broadcast along the column / row
    above = (matrix > diagonal).sum(dim)
    tied = (matrix == diagonal).sum(dim) - 1  # the diagonal entry itself is not a tie
    return float((1 + above + tied / 2).double().mean())


def _sample_pairs(mask, max_pairs, rng):
    """(rows, cols) of the True entries of `mask`, at most `max_pairs` of them drawn without replacement."""
    rows, cols = np.nonzero(mask)
    if len(rows) > max_pairs:
        keep = np.sort(rng.choice(len(rows), max_pairs, replace=False))
        rows, cols = rows[keep], cols[keep]
    return rows, cols


def qk_pairs(n_tokens, max_pairs, rng):
    """(rows, cols): the ordered token pairs i != j the QK correlations use, at most `max_pairs` drawn with `rng`
    (a numpy Generator) without replacement. A_h is not symmetric (a query's logit for a key is not the key's for the
    query), so (i, j) and (j, i) are two pairs; the diagonal (a token's logit for itself) is qk_self_rank's."""
    return _sample_pairs(~np.eye(n_tokens, dtype=bool), max_pairs, rng)


def cooccurrence_pairs(ppmi, max_pairs, rng):
    """(rows, cols): the unordered token pairs i < j with a positive `ppmi` entry, at most `max_pairs` drawn with `rng`
    without replacement. PPMI is symmetric and zero for most pairs (tied ranks that would decide rho)."""
    return _sample_pairs(np.triu(np.asarray(ppmi) > 0, k=1), max_pairs, rng)


def token_bootstrap_spearman(form, hypothesis, rows, cols, n_resamples=200, seed=0):
    """Spearman of form[rows, cols] and hypothesis[rows, cols] (two (N, N) arrays, pairs of tokens), with a
    percentile bootstrap interval over TOKENS: a resample draws N tokens with replacement and keeps the pairs among
    them, so pair (i, j) counts (times i was drawn) x (times j was drawn); pairs share tokens and are not independent,
    which a bootstrap over pairs would ignore. Returns an Interval dict (n = N tokens)."""
    n_tokens = len(form)
    rho = spearman_of_copies(np.asarray(form)[rows, cols], np.asarray(hypothesis)[rows, cols])

    def statistic(tokens):
        drawn = np.bincount(np.asarray(tokens, dtype=np.int64), minlength=n_tokens)  # (N,): times each was drawn
        return rho(drawn[rows] * drawn[cols])  # (pairs,): copies of each pair in the resample

    return bootstrap_interval(statistic, np.arange(n_tokens), n_resamples=n_resamples, seed=seed).to_dict()


def _check_same_architecture(model, other):
    keys = ("vocab_size", "hidden_size", "num_attention_heads")
    if any(getattr(model.config, k) != getattr(other.config, k) for k in keys):
        raise ValueError("initial_model must have the same architecture: "
                         + ", ".join(f"{k} {getattr(model.config, k)} vs {getattr(other.config, k)}" for k in keys))


def _position_note(spread, positions, other_terms=""):
    """What X is with respect to positions, from `position_spread` over `positions` positions, in one sentence; with
    `other_terms`, what the attention adds to the logits besides A_h (DeBERTa's, MPNet's position terms)."""
    left_out = f"; {other_terms} to these logits, left out here" if other_terms else ""
    if spread < 1e-6 and other_terms:
        return f"Layer 0's attention input holds no position vector: X is each token's own{left_out}."
    if spread < 1e-6:
        return ("Layer 0's attention input holds no position vector (rotary or no positions): X is each token's own, "
                "and A_h is the logit between a query and a key at the same position (under rotary positions the "
                "rotations cancel there; at other distances they turn channel pairs).")
    return (f"Layer 0's attention input holds position vectors (they move it by {spread:.0%} of its norm): X averages "
            f"each token's input over positions 1-{positions}, so the position-token cross terms of the logits are "
            f"averaged over those positions{left_out}.")


def _check_arguments(n_resamples, max_pairs, window):
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, int) or max_pairs < 3:
        raise ValueError(f"max_pairs must be an integer >= 3, got {max_pairs!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer (tokens), got {window!r}")


def _qk_notes(model, inputs, how, max_pairs, n_resamples):
    """What the QK numbers are, for Circuits.note: the tokens, X, positions, projection, scale and correlations;
    `inputs` (N, P, C) from `position_inputs`."""
    config = model.config
    D = layouts.head_geometry(model)[1]
    inputs = inputs[:50]  # the 50 most frequent tokens: enough to see whether positions move X
    _, biases = _layer0(model)
    projection = ("W_Q = W_K = W_V = I (qkv_projection='identity'): Q_h = K_h = X_h, so A_h is the identity "
                  "hypothesis itself." if getattr(config, "qkv_projection", None) == "identity" else
                  "The Q/K biases are included." if biases["b_Q"] is not None or biases["b_K"] is not None else
                  "The projection has no biases.")
    positions = _position_note(position_spread(inputs), inputs.shape[1], layouts.find_layout(model)[0].other_terms)
    return [how, "X is what layer 0's attention reads for each token: its embedding through the norm before that "
            f"attention, as the model computes it. {positions} {projection}",
            f"The model scales A_h by 1/sqrt(head_dim) = {D**-0.5:.4g} before the softmax; no number here depends on "
            "that scale.",
            f"Identity and initial: Spearman's rho over ordered token pairs i != j (at most {max_pairs}, drawn once; "
            f"the diagonal is qk_self_rank), with a percentile bootstrap over tokens ({n_resamples} resamples; a pair "
            "counts as often as both its tokens are drawn)."]


def _no_qk_notes(inputs, how, problem):
    """Circuits.note's first sentences where the QK scores are refused (`problem`: query_key_norm_problem's)."""
    spread = position_spread(inputs[:50])
    averaged = f", averaged over positions 1-{inputs.shape[1]} (they move it by {spread:.0%})" if spread >= 1e-6 else ""
    return [how, f"X is what layer 0's attention reads for each token (its normed embedding){averaged}.",
            f"QK scores skipped: {problem}; the identity, co-occurrence and initial hypotheses are about that form."]


def _add_ov_scores(result, model, ids, X, notes):
    """result.ov_copying and .ov_self_rank from the factors of M_h, or a note where the model has no W_U."""
    W_U, source = unembedding(model)
    if W_U is None:
        notes.append("OV scores skipped: a bare encoder with untied embeddings has no unembedding W_U.")
        return
    if W_U.shape[1] != model.config.hidden_size:
        notes.append(f"OV scores skipped: the unembedding W_U reads {W_U.shape[1]} features, not the hidden size "
                     f"{model.config.hidden_size} (factorised embeddings, as ALBERT's).")
        return
    left, right = _ov_factors(model, ids, X)
    result.ov_copying = [positive_eigen_share(left[h], right[h]) for h in range(result.num_heads)]
    result.ov_self_rank = [diagonal_rank(left[h] @ right[h], dim=0) for h in range(result.num_heads)]
    notes.append(f"OV: W_U is {source}; the head's own transform (dense, activation, norm) where it has one, later "
                 "layers, the final norm and every bias (b_V, b_O, the output layer's) are left out: the direct path.")


def _add_cooccurrence(result, forms, cooccurrence, window, max_pairs, rng, bootstrap, notes):
    """result.cooccurrence: Spearman of each A_h's symmetric part with the PPMI of the tokens (`cooccurrence`: an
    (N, N) matrix, or token id sequences whose PPMI within `window` tokens is counted here)."""
    N = len(result.token_ids)
    if isinstance(cooccurrence, (np.ndarray, torch.Tensor)):
        ppmi = torch.as_tensor(cooccurrence).detach().cpu().double().numpy()
        if ppmi.shape != (N, N):
            raise ValueError(f"a cooccurrence matrix must be ({N}, {N}), over the tokens of select_tokens, got "
                             f"shape {ppmi.shape}")
        notes.append("Co-occurrence: the given (N, N) matrix.")
    else:
        _, ppmi = ppmi_matrix(cooccurrence, result.token_ids, window)  # ids are hashable like words
        result.window = window
        notes.append(f"Co-occurrence: PPMI within {window} tokens of the given id sequences.")
    # unordered pairs with PPMI > 0, against the symmetric part of A_h
    rows, cols = cooccurrence_pairs(ppmi, max_pairs, rng)
    result.pairs["cooccurrence"] = len(rows)
    if len(rows) < 3:
        notes.append(f"Co-occurrence skipped: only {len(rows)} token pairs have a positive PPMI.")
        return
    result.cooccurrence = [bootstrap((form + form.T) / 2, ppmi, rows, cols) for form in forms]
    notes.append(f"It is correlated with the symmetric part (A_h + A_h^T) / 2 over the {len(rows)} "
                 "unordered pairs with a positive entry (the rest are all tied at 0).")


def circuit_hypotheses(model, counts=None, n_tokens=1000, initial_model=None, cooccurrence=None, n_resamples=200,
                       seed=0, window=5, max_pairs=20_000, special_ids=()) -> Circuits:
    """Layer 0's QK form of each head against the identity, co-occurrence and initialisation hypotheses, and its OV
    copying score, on the `n_tokens` most frequent tokens (see `select_tokens` for `counts` and `special_ids`). The
    QK scores are None, with a note, where the model normalises queries and keys per head (query_key_norm_problem).

    `initial_model`: the same architecture at initialisation (True: re-created from the config with `seed`,
    `hf_minattn.initialization.initial_model`), or None.
    `cooccurrence`: an (N, N) association matrix (e.g. PPMI) over the tokens of `select_tokens(model, counts,
    n_tokens)`, in that order, or token id sequences (running text) whose PPMI within `window` tokens is counted
    here; None: not compared. Each correlation uses at most `max_pairs` token pairs, drawn once with `seed`; its
    interval is a bootstrap over tokens with `n_resamples` resamples.
    """
    _layer0(model)  # UnsupportedArchitecture first, for a layout the table does not know
    _check_arguments(n_resamples, max_pairs, window)
    H, D, _ = layouts.head_geometry(model)
    ids, how = select_tokens(model, counts, n_tokens, special_ids)
    rng = np.random.default_rng(seed)
    inputs = position_inputs(model, ids)  # (N, P, C), once: X and the note's position measure
    X = inputs.mean(1)  # as attention_inputs
    result = Circuits(layer=0, num_heads=H, head_dim=D, token_ids=ids.tolist(), scaling=D**-0.5, pairs={})
    problem = query_key_norm_problem(model)
    if problem:
        notes = _no_qk_notes(inputs, how, problem)
        _add_ov_scores(result, model, ids, X, notes)
    else:
        notes = _qk_notes(model, inputs, how, max_pairs, n_resamples)
        forms, bootstrap = _add_qk_scores(result, model, ids, X, rng, initial_model, max_pairs, n_resamples, seed)
        _add_ov_scores(result, model, ids, X, notes)
        if cooccurrence is not None:
            _add_cooccurrence(result, forms, cooccurrence, window, max_pairs, rng, bootstrap, notes)
    result.note = " ".join(notes)
    return result


def _add_qk_scores(result, model, ids, X, rng, initial_model, max_pairs, n_resamples, seed):
    """result.identity, .qk_positive, .qk_self_rank and .initial from layer 0's QK forms A_h; returns the forms
    ((H, N, N) array) and the bootstrap over tokens used, for the co-occurrence."""
    H = result.num_heads
    Q, K, _ = _projections(model, X)  # each (H, N, D)
    forms = (Q @ K.transpose(1, 2)).numpy()  # (H, N, N): A_h, as qk_forms
    identity = _identity_forms(X, H).numpy()  # (H, N, N), as identity_forms
    rows, cols = qk_pairs(len(ids), max_pairs, rng)

    def bootstrap(form, hypothesis, pair_rows=rows, pair_cols=cols):
        return token_bootstrap_spearman(form, hypothesis, pair_rows, pair_cols, n_resamples=n_resamples, seed=seed)

    result.identity = [bootstrap(forms[h], identity[h]) for h in range(H)]
    result.qk_positive = [positive_eigen_share(Q[h], K[h].T) for h in range(H)]  # A_h = Q_h K_h^T
    result.qk_self_rank = [diagonal_rank(torch.from_numpy(forms[h]), dim=1) for h in range(H)]
    result.pairs["identity"] = len(rows)
    if initial_model is not None and initial_model is not False:
        initial = fresh_model(model.config, seed, type(model)).eval() if initial_model is True else initial_model
        _check_same_architecture(model, initial)
        initial_forms = qk_forms(initial, ids).numpy()  # the initial model's own embeddings, same token ids
        result.initial = [bootstrap(forms[h], initial_forms[h]) for h in range(H)]
    return forms, bootstrap
