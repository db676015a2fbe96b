"""Loss Change Allocation (Lan, Liu, Zhou & Yosinski, NeurIPS 2019): which parameters made the loss go down?

Training moves the parameters from θ_t to θ_{t+k}; the loss on a fixed batch changes by L(θ_{t+k}) − L(θ_t). Along
the straight line θ(s) = θ_t + s Δ, Δ = θ_{t+k} − θ_t, that change is exactly the path integral

    L(θ_{t+k}) − L(θ_t) = ∫_0^1 ∇L(θ(s)) · Δ ds = Σ_i Δ_i ∫_0^1 ∂L/∂θ_i(θ(s)) ds,

so each parameter coordinate i gets its own share, its allocation. The integral is approximated with the paper's
fourth-order Runge-Kutta, which for a path known in advance is Simpson's rule: gradients at s = 0, 1/2, 1 with
weights 1/6, 4/6, 1/6. It is exact when the loss is a polynomial of degree up to 4 along the segment (the gradient a
cubic). The gradient at s = 0 of an interval is the one at s = 1 of the previous interval, so each interval costs two
forward and backward passes on the fixed batch.

With `every` = k > 1 this deviates from the paper: Lan et al. integrate along each optimizer step's own segment and
add the steps up; here the path is the straight line from θ_t to θ_{t+k}, across k steps at once. The totals are the
same (the loss change over the interval does not depend on the path), the split between parameters is not: it can
change sign for small groups (W_V and W_O did on a tiny run, 15 steps against step by step). Only k = 1 is the
paper's allocation.

A negative allocation means that the parameter's movement lowered the loss ("helped"); a positive one that it
raised it ("hurt"), which the paper finds for about half the parameters at every step.

`LossAllocationCallback` does this during training every `every` optimizer steps and writes `loss_allocation.json`
in the output folder:

    {"every": k, "batch": {"sequences": n, "masked_tokens": m, "source": "..."}, "tied_word_embeddings": bool,
     "groups": [group, ...], "layers": [layer, ...],
     "records": [{"step_start": t, "step_end": t + k, "loss_start": L(θ_t), "loss_end": L(θ_{t+k}),
                  "observed": loss_end − loss_start, "allocated": sum of the allocations,
                  "error": allocated − observed, "groups": {group: allocation}, "layers": {layer: allocation}}, ...],
     "totals": {"observed": ..., "allocated": ..., "abs_error": Σ|error|, "relative_error": Σ|error| / Σ|observed|,
                "groups": {group: allocation}, "layers": {layer: allocation}}}

and this module alone knows that layout: `read_loss_allocation` turns it into a `LossAllocationHistory` (cumulative
allocation per group against steps). Groups and layers are `parameter_group`'s table; groups the model lacks
(learned positions under rope, W_Q/W_K/W_V under `qkv_projection="identity"`, untied output weights) are absent.

What it measured on the tiny run of tests/test_loss_allocation.py (the "tiny" preset, 8 steps of AdamW at lr 1e-3,
the first 20 validation sequences of 64 tokens, every step): observed changes of 0.005 to 0.02 nats per interval,
the largest per-interval error |allocated − observed| 1.3e-5 nats, the total relative error Σ|error| / Σ|observed|
1.3e-4 (the test allows 1e-3 nats and 1e-2). The error is Simpson's: cutting a segment in two divides it by about 16 (a
test checks more than 8), down to the fp32 floor near 1e-6. Larger steps make it larger: two SGD steps at lr 0.01 on
the measured batch itself (0.2 nats) leave 2e-3 of relative error.

Per interval it costs two forward and backward passes on the fixed batch (in eval mode, fp32) plus copies of the
parameters: on the tiny run, with a fixed batch as large as the training batch, about 1.3 times a training step's
forward and backward. Between intervals the callback holds two fp32 copies of the parameters' size (the interval's
start and the gradient there); computing an interval briefly takes about six more.
"""

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch.func import functional_call
from transformers import TrainerCallback

from hf_minattn.record_files import KeptInCheckpoints, record_file, records_until, write_json_atomically

LOSS_ALLOCATION_FILE = "loss_allocation.json"
INTERVAL_START_FILE = "loss_allocation_start.safetensors"  # in each checkpoint: the weights of the open interval's start
FUSED_QKV = "W_QKV"  # the fused qkv_proj: `_split` shares it out to W_Q, W_K, W_V

# (parameter name prefix, group, layer) outside the blocks; the blocks' parameters are mapped in `parameter_group`.
_TABLE = [
    ("minattn.embeddings.word_embeddings", "word_embeddings", "embeddings"),
    ("minattn.embeddings.position_embeddings", "position_embeddings", "embeddings"),
    ("minattn.embeddings.norm", "layer_norms", "embeddings"),  # post-norm models only
    ("minattn.final_norm", "layer_norms", "final_norm"),  # pre-norm models only
    ("lm_head.dense", "head_transform", "head"),
    ("lm_head.norm", "head_transform", "head"),
    ("lm_head.decoder", "output_weights", "head"),  # absent from named_parameters when tied to the word embeddings
    ("lm_head.bias", "output_bias", "head"),  # token frequencies alone: the logits' offset whatever the context
]
_BLOCK_GROUPS = {"attention.qkv_proj": FUSED_QKV, "attention.o_proj": "W_O", "mlp": "feed_forward",
                 "attention_norm": "layer_norms", "mlp_norm": "layer_norms"}


def parameter_group(name: str) -> tuple[str, str]:
    """(group, layer) of a MinAttnForMaskedLM parameter: e.g. "minattn.layers.1.mlp.up_proj.weight" ->
    ("feed_forward", "1"), "lm_head.bias" -> ("output_bias", "head"). The fused qkv_proj maps to FUSED_QKV (shared out
    to W_Q, W_K, W_V by rows); a name outside the table maps to ("other", "other"), so that nothing is left out of
    the sum."""
    if name.startswith("minattn.layers."):
        _, _, layer, rest = name.split(".", 3)  # "minattn", "layers", "1", "mlp.up_proj.weight"
        for prefix, group in _BLOCK_GROUPS.items():
            if rest.startswith(prefix + "."):
                return group, layer
    for prefix, group, layer in _TABLE:
        if name == prefix or name.startswith(prefix + "."):
            return group, layer
    return "other", "other"


# ---------------------------------------------------------------- the integrator


@dataclass
class PathPoint:
    """The loss and its gradient (one tensor per parameter) at one point of parameter space."""

    loss: float
    grads: dict[str, torch.Tensor]


@dataclass
class Segment:
    """The loss change along one straight segment start -> end, shared out over the parameters' coordinates."""

    allocation: dict[str, torch.Tensor]  # per parameter, same shape: Δ ⊙ (g(0) + 4 g(1/2) + g(1)) / 6
    start: PathPoint
    end: PathPoint  # the start of the next segment

    @property
    def observed(self) -> float:
        return self.end.loss - self.start.loss

    @property
    def allocated(self) -> float:
        return sum(a.double().sum().item() for a in self.allocation.values())


def loss_and_gradients(loss_fn, params: dict[str, torch.Tensor]) -> PathPoint:
    """The loss and gradients of `loss_fn(params)` at `params`, computed with autograd.grad on detached leaves: no
    `.grad` buffer is written, and `params` themselves are left untouched."""
    leaves = {name: p.detach().requires_grad_(True) for name, p in params.items()}
    loss = loss_fn(leaves)
    grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
    # A parameter the loss does not use (allow_unused) has gradient 0 all along the path.
    grads = {name: torch.zeros_like(p) if g is None else g for (name, p), g in zip(leaves.items(), grads)}
    return PathPoint(loss.item(), grads)


def allocate_segment(loss_fn, start: dict[str, torch.Tensor], end: dict[str, torch.Tensor],
                     at_start: PathPoint | None = None) -> Segment:
    """Share out loss_fn(end) − loss_fn(start) over the coordinates of the parameters, by Simpson's rule (the paper's
    RK4) on the straight path: allocation_i = Δ_i (g_i(0) + 4 g_i(1/2) + g_i(1)) / 6.

    `loss_fn` takes a dict of parameters (name -> tensor) and returns a scalar tensor; `start` and `end` have the same
    names and shapes. `at_start`, the end point of the previous segment, saves one evaluation (two instead of three).
    """
    at_start = at_start or loss_and_gradients(loss_fn, start)
    delta = {name: end[name] - start[name] for name in start}
    middle = loss_and_gradients(loss_fn, {name: start[name] + 0.5 * delta[name] for name in start})
    at_end = loss_and_gradients(loss_fn, end)
    allocation = {name: delta[name] * (at_start.grads[name] + 4 * middle.grads[name] + at_end.grads[name]) / 6
                  for name in start}
    return Segment(allocation, at_start, at_end)


def _split(group: str, allocation: torch.Tensor) -> dict[str, float]:
    """A parameter's allocation summed by group; the fused qkv weight (3C, C) and bias (3C,) by thirds of rows."""
    if group != FUSED_QKV:
        return {group: allocation.double().sum().item()}
    thirds = allocation.double().reshape(3, -1).sum(dim=1)  # (3,): rows [0:C) W_Q, [C:2C) W_K, [2C:3C) W_V
    return dict(zip(("W_Q", "W_K", "W_V"), thirds.tolist()))


def group_sums(allocation: dict[str, torch.Tensor]) -> tuple[dict[str, float], dict[str, float]]:
    """(allocation per group, allocation per layer) of per-parameter allocations (name -> tensor)."""
    groups: dict[str, float] = {}
    layers: dict[str, float] = {}
    for name, tensor in allocation.items():
        group, layer = parameter_group(name)
        parts = _split(group, tensor)
        for key, value in parts.items():
            groups[key] = groups.get(key, 0.0) + value
        layers[layer] = layers.get(layer, 0.0) + sum(parts.values())
    return groups, layers


def group_names(parameter_names) -> tuple[list[str], list[str]]:
    """The groups and the layers that the parameters of these names fall in, in order of first appearance."""
    groups: dict[str, None] = {}
    layers: dict[str, None] = {}
    for name in parameter_names:
        group, layer = parameter_group(name)
        groups.update(dict.fromkeys(("W_Q", "W_K", "W_V") if group == FUSED_QKV else (group,)))
        layers[layer] = None
    return list(groups), list(layers)


@contextmanager
def _eval_mode(model):
    """The model in eval mode (no dropout) inside the block, in its previous mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


# ---------------------------------------------------------------- the callback


def totals(records: list[dict]) -> dict:
    """The sums over the intervals of `records`, and the total relative error Σ|error| / Σ|observed|."""
    groups: dict[str, float] = {}
    layers: dict[str, float] = {}
    for record in records:
        for key, value in record["groups"].items():
            groups[key] = groups.get(key, 0.0) + value
        for key, value in record["layers"].items():
            layers[key] = layers.get(key, 0.0) + value
    abs_error = sum(abs(r["error"]) for r in records)
    abs_observed = sum(abs(r["observed"]) for r in records)
    return {"observed": sum(r["observed"] for r in records), "allocated": sum(r["allocated"] for r in records),
            "abs_error": abs_error, "relative_error": abs_error / abs_observed if abs_observed > 0 else 0.0,
            "groups": groups, "layers": layers}


class LossAllocationCallback(KeptInCheckpoints, TrainerCallback):
    """Every `every` optimizer steps, shares out the change of the loss on a fixed batch over the parameters (Loss
    Change Allocation, see the module docstring) and records it by group and by layer in `loss_allocation.json`.

    `batch` is a fixed, already masked batch (input_ids, attention_mask, labels): run_mlm.py takes the first
    `--loss_allocation_samples` sequences of the validation set, which `mask_once` masked once with a fixed seed, so
    every interval is measured on the same tokens and the same masks. The gradients are computed in eval mode (no
    dropout), in fp32 (autocast off), with `torch.func.functional_call` on copies of the parameters: the model's
    weights, its `.grad` buffers and the optimizer are not touched, and training goes on exactly as without the
    callback (the loss draws no random numbers in eval mode).

    The last interval may be shorter: training's end closes it. The file is written at each checkpoint and at the end
    of training. Every checkpoint also keeps a copy of the records so far and the weights where the open interval
    started (`loss_allocation_start.safetensors`, an fp32 copy of the parameters; `KeptInCheckpoints`), written before
    the checkpoint is complete: a run resumed from any checkpoint, in its own folder or another, continues that
    interval and ends with the records of the run that was never stopped. (A checkpoint without them, written before
    they were kept: the run folder's records up to the checkpoint, and the next interval starts at its step.)

    In distributed runs every process computes the same numbers on the same batch (the parameters are the same on
    every process, and the batch is not split); only the main process writes the file. Under DDP the unwrapped
    model is called, so no gradient synchronisation happens.

    With tied word embeddings (config.tie_word_embeddings), the "word_embeddings" group is also the output layer of
    the masked-LM head, and the file says so ("tied_word_embeddings": true); untied, the output layer is its own
    "output_weights" group.
    """

    def __init__(self, model, batch: dict[str, torch.Tensor], every: int = 1, source: str = "a fixed batch"):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"loss allocation every k optimizer steps needs an integer k >= 1, got {every!r}")
        self.model = model
        self.batch = batch
        self.every = every
        self.source = source
        self.records: list[dict] = []
        # (step t, θ_t, loss and gradients at θ_t): where the current interval starts
        self._start: tuple[int, dict[str, torch.Tensor], PathPoint] | None = None

    def _parameters(self) -> dict[str, torch.Tensor]:
        """An fp32 copy of every parameter (named_parameters lists a tied weight once, under its first name)."""
        return {name: p.detach().to(torch.float32, copy=True) for name, p in self.model.named_parameters()}

    def _loss(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        device = next(self.model.parameters()).device
        batch = {key: value.to(device) for key, value in self.batch.items()}
        with torch.autocast(device.type, enabled=False):  # fp32, whatever --bf16 says
            # Tied weights follow the one name given (tie_weights=True); buffers stay the model's own.
            # Sparse prediction, as the Trainer computes the training loss.
            return functional_call(self.model, params, args=(), kwargs={**batch, "sparse_prediction": True}).loss

    def on_train_begin(self, args, state, control, **kwargs):
        # resuming: the history up to the checkpoint, and the open interval from where it started
        step, start = state.global_step, self._parameters()  # the checkpoint's weights: the Trainer loaded them
        path = self.history_file(LOSS_ALLOCATION_FILE, args.output_dir) if step > 0 else None
        self.records = records_until(path, step, "step_end")
        kept = os.path.join(self.resumed_from, INTERVAL_START_FILE) if step > 0 and self.resumed_from else None
        if kept and os.path.isfile(kept):
            with safe_open(kept, framework="pt") as f:
                step = int(f.metadata()["step"])
                start = {name: f.get_tensor(name).to(start[name].device) for name in start}
        with _eval_mode(self.model):
            self._start = (step, start, loss_and_gradients(self._loss, start))

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step - self._start[0] >= self.every:
            self._close_interval(state.global_step)

    def save_into_checkpoint(self, folder, state):
        step, start, _ = self._start
        self.save(os.path.join(folder, LOSS_ALLOCATION_FILE))
        save_file({name: t.cpu().contiguous() for name, t in start.items()}, os.path.join(folder, INTERVAL_START_FILE),
                  metadata={"step": str(step)})

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:  # also catches checkpoints decided at an epoch's end
            self.save(os.path.join(args.output_dir, LOSS_ALLOCATION_FILE))

    def on_train_end(self, args, state, control, **kwargs):
        if state.global_step > self._start[0]:  # a shorter last interval
            self._close_interval(state.global_step)
        if state.is_world_process_zero:
            self.save(os.path.join(args.output_dir, LOSS_ALLOCATION_FILE))

    def _close_interval(self, step: int) -> None:
        step_start, start, at_start = self._start
        end = self._parameters()
        with _eval_mode(self.model):
            segment = allocate_segment(self._loss, start, end, at_start)
        groups, layers = group_sums(segment.allocation)
        allocated = sum(groups.values())
        self.records.append({"step_start": step_start, "step_end": step, "loss_start": segment.start.loss,
                             "loss_end": segment.end.loss, "observed": segment.observed, "allocated": allocated,
                             "error": allocated - segment.observed, "groups": groups, "layers": layers})
        self._start = (step, end, segment.end)

    def _tied(self) -> bool:
        output = self.model.get_output_embeddings()
        return output is not None and output.weight is self.model.get_input_embeddings().weight

    def save(self, path):
        labels = self.batch["labels"]
        groups, layers = group_names(name for name, _ in self.model.named_parameters())
        data = {"every": self.every,
                "batch": {"sequences": labels.shape[0], "masked_tokens": int((labels != -100).sum()),
                          "source": self.source},
                "tied_word_embeddings": self._tied(), "groups": groups, "layers": layers,
                "records": self.records, "totals": totals(self.records)}
        write_json_atomically(path, data)


# ---------------------------------------------------------------- the reader


@dataclass
class LossAllocationHistory:
    """A `loss_allocation.json` as curves: `steps[0]` is the first interval's start, `steps[i]` the end of the i-th
    interval, and every curve holds the cumulative value at those steps (0 at `steps[0]`)."""

    path: str
    every: int
    tied_word_embeddings: bool  # the word-embedding group is then also the output layer
    steps: list[int]
    observed: list[float]  # cumulative observed change of the loss on the fixed batch
    groups: dict[str, list[float]]  # group -> cumulative allocation (negative: its movement lowered the loss)
    layers: dict[str, list[float]]  # "embeddings", "0", "1", ..., "final_norm", "head" -> cumulative allocation
    errors: list[float]  # per interval: allocated − observed
    totals: dict[str, float]  # group -> total allocation
    layer_totals: dict[str, float]
    loss_change: float  # total observed change
    abs_error: float  # Σ|allocated − observed| over the intervals
    relative_error: float  # abs_error / Σ|observed|


def _cumulative(values) -> list[float]:
    out = [0.0]
    for value in values:
        out.append(out[-1] + value)
    return out


def read_loss_allocation(path) -> LossAllocationHistory | None:
    """Read the `loss_allocation.json` that `LossAllocationCallback` wrote (a file, or the model folder holding it);
    None without one."""
    path = record_file(path, LOSS_ALLOCATION_FILE)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        data = json.load(f)
    records = data["records"]
    total = totals(records)
    return LossAllocationHistory(
        path=path, every=data["every"], tied_word_embeddings=data["tied_word_embeddings"],
        steps=[r["step_start"] for r in records[:1]] + [r["step_end"] for r in records],
        observed=_cumulative(r["observed"] for r in records),
        groups={g: _cumulative(r["groups"].get(g, 0.0) for r in records) for g in data["groups"]},
        layers={layer: _cumulative(r["layers"].get(layer, 0.0) for r in records) for layer in data["layers"]},
        errors=[r["error"] for r in records],
        totals={g: total["groups"].get(g, 0.0) for g in data["groups"]},
        layer_totals={layer: total["layers"].get(layer, 0.0) for layer in data["layers"]},
        loss_change=total["observed"], abs_error=total["abs_error"], relative_error=total["relative_error"])
