"""What do W_Q, W_K, W_V, W_O learn? Per head, the QK circuit W_Q^T W_K (who attends to whom) and the
OV circuit W_O W_V (what is moved) of Elhage et al. (2021), both hidden x hidden of rank <= head_dim.

Their singular values come from the factors (QR of each factor, then the SVD of a head_dim x head_dim
product), never from the hidden x hidden matrix. Effective rank is the entropy-based one of Roy &
Vetterli (2007): exp(H(p)) with p = sigma / sum(sigma). Biases and LayerNorm are ignored, so for models
with MLPs and norms these circuits describe the weights, not exactly the computation.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from hf_minattn.initialization import initial_model  # the probes import it from here too

from . import layouts
from .layouts import UnsupportedArchitecture  # noqa: F401  (re-exported: the probes import it from here)


@dataclass
class CircuitSpectra:
    qk_singular_values: list  # (layers, heads, head_dim)
    ov_singular_values: list
    qk_effective_rank: list  # (layers, heads)
    ov_effective_rank: list
    qk_norm: list  # Frobenius norm, (layers, heads)
    ov_norm: list


@dataclass
class WeightResults:
    source: str  # how the per-head matrices were read
    head_dim: int
    trained: CircuitSpectra
    initial: CircuitSpectra | None = None  # the same architecture re-initialised from its config
    notes: list = field(default_factory=list)


def head_weights(model):
    """Per layer {"W_Q", "W_K", "W_V": (heads, head_dim, hidden), "W_O": (heads, hidden, head_dim)} on the model's
    device, and the source: the model's own get_head_weights() where it has one (MinAttn), else the layout table of
    layouts.py. UnsupportedArchitecture for a layout the table does not know."""
    if hasattr(model, "get_head_weights"):
        return model.get_head_weights(), "model.get_head_weights()"
    return layouts.layout_head_weights(model)


def factored_singular_values(left, right):
    """Singular values of left @ right, left (n, k), right (k, n), k << n: with left = Q1 R1 and
    right^T = Q2 R2, left @ right = Q1 (R1 R2^T) Q2^T, whose singular values are those of the k x k R1 R2^T."""
    r_left = torch.linalg.qr(left.double().contiguous(), mode="r").R
    r_right = torch.linalg.qr(right.double().T.contiguous(), mode="r").R
    return torch.linalg.svdvals(r_left @ r_right.T)


def effective_rank(singular_values):
    p = singular_values / singular_values.sum()
    return float(torch.exp(-torch.special.xlogy(p, p).sum()))


@contextmanager
def _one_thread():
    """Small LAPACK calls run slower with threads, and pathologically so on a busy machine (measured here:
    a 256 x 64 QR took 0.4 s with 2 threads against 3.5 ms with one)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def circuit_spectra(heads):
    with _one_thread():
        return _circuit_spectra(heads)


def _circuit_spectra(heads):
    values = {k: [] for k in ("qk", "ov")}
    for layer in heads:
        values["qk"].append([factored_singular_values(q.T, k) for q, k in zip(layer["W_Q"], layer["W_K"])])
        values["ov"].append([factored_singular_values(o, v) for o, v in zip(layer["W_O"], layer["W_V"])])
    out = {}
    for name, per_layer in values.items():
        out[f"{name}_singular_values"] = [[s.tolist() for s in layer] for layer in per_layer]
        out[f"{name}_effective_rank"] = [[effective_rank(s) for s in layer] for layer in per_layer]
        out[f"{name}_norm"] = [[float(s.norm()) for s in layer] for layer in per_layer]  # ||A||_F = ||sigma||_2
    return CircuitSpectra(**out)


# Modules that normalise each head's queries and keys after W_Q and W_K (Qwen 3, Gemma 3, OLMo 2, Cohere, Phi's option)
QUERY_KEY_NORMS = ("q_norm", "k_norm", "q_layernorm", "k_layernorm")


def query_key_norm_problem(model) -> str | None:
    """Why W_Q,h^T W_K,h is not the form the model's attention computes, where it normalises each head's queries and
    keys after W_Q and W_K (a module named as in QUERY_KEY_NORMS); None where it does not. The QK circuits of the
    weights probe and of the circuits probe (circuits.py) are refused on it; W_V and W_O hold."""
    normed = [name for name, _ in model.named_modules() if name.rsplit(".", 1)[-1] in QUERY_KEY_NORMS]
    if not normed:
        return None
    return (f"{type(model).__name__} normalises each head's queries and keys after W_Q and W_K ({normed[0]} and "
            f"{len(normed) - 1} more), so W_Q,h^T W_K,h is not the form its attention computes")


def weight_spectra(model, compare_with_init=True, seed=0):
    problem = query_key_norm_problem(model)
    if problem:  # the OV circuits would be right, the QK ones not: the probe reports both, so it does not run
        raise UnsupportedArchitecture(problem)
    heads, source = head_weights(model)
    heads = [{k: None if w is None else w.cpu() for k, w in layer.items()} for layer in heads]
    result = WeightResults(source=source, head_dim=heads[0]["W_Q"].shape[1], trained=circuit_spectra(heads))
    if compare_with_init:
        result.initial = circuit_spectra(head_weights(initial_model(model.config, seed, type(model)))[0])
        result.notes.append(f"initial = {type(model).__name__} re-created from its config, each module drawn from "
                            f"seed {seed} and its name")
    return result
