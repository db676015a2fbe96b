"""Record during training how far the embeddings and attention weights move from their initial values.

`DriftCallback` answers "are the input embeddings updated, and how much compared with W_Q, W_K, W_V, W_O?"
It writes `drift.json` in the output folder:
  {"tracked": [matrix, ...], "grad_norm_before_clipping": true,
   "records": [{"step": 10, "epoch": 0.1, "loss": 5.2, "drift": {matrix: value}, "grad_norm": {matrix: value or null}},
               ...]}
(a checkpoint's copy also holds "pending": the gradient norms summed since the last record, and their count),
and this module alone knows that layout: `read_drift` turns it into a `DriftHistory` (one series per matrix),
which the probes and the experiments read.
"""

import json
import os
from dataclasses import dataclass

import torch
from transformers import TrainerCallback

from hf_minattn.record_files import KeptInCheckpoints, read_json, record_file, records_until, write_json_atomically

DRIFT_FILE = "drift.json"


def _named_weights(model, grad: bool = False) -> dict[str, torch.Tensor | None]:
    """The tracked matrices by name: "word_embeddings", "position_embeddings", "layers.{i}.W_Q" ... "W_O".

    With `grad=True`, their gradients instead (None where there is none, e.g. frozen or identity weights).
    """
    embeddings = model.get_input_embeddings()
    base = getattr(model, model.base_model_prefix, model)
    positions = getattr(getattr(base, "embeddings", None), "position_embeddings", None)
    weights = {"word_embeddings": embeddings.weight.grad if grad else embeddings.weight.detach()}
    if positions is not None:  # None with sinusoidal or no position embeddings: nothing trained to track
        weights["position_embeddings"] = positions.weight.grad if grad else positions.weight.detach()
    for i, layer in enumerate(model.get_head_weights(grad=grad)):
        for name, tensor in layer.items():
            weights[f"layers.{i}.{name}"] = tensor
    return weights


class DriftCallback(KeptInCheckpoints, TrainerCallback):
    """At every logging step, records for each tracked matrix W (word and position embeddings, each layer's W_Q,
    W_K, W_V, W_O as returned by `get_head_weights`):

    - `drift`: ||W - W_init||_F / ||W_init||_F, the relative distance from the initial value;
    - `grad_norm`: ||dL/dW||_F, averaged over the optimizer steps since the previous record (None if W gets no
      gradient: frozen, or fixed to the identity).

    The gradient norms are those before the Trainer clips the gradients to `max_grad_norm`: `MinAttnTrainer` calls
    `measure_gradients` just before it clips. Under a plain `Trainer` the callback can only read them in
    `on_pre_optimizer_step`, after clipping; `drift.json` then says so (`"grad_norm_before_clipping": false`), and a
    file without that field (written before it existed) holds norms after clipping to `max_grad_norm`.

    The initial values are copied when the callback is created, so create it right after initialising the
    model and before any training. A resumed run re-creates the same initial weights from the same seed, and
    continues the records up to the checkpoint's step, and the gradient norms summed since the last record, from the
    copy of `drift.json` that each checkpoint holds (`KeptInCheckpoints`; a checkpoint without one: the run folder's
    file, and the sums since the last record are lost).

    With tied word embeddings, the word-embedding matrix is also the output layer of the masked-LM head: its
    drift and gradient include both roles.
    """

    def __init__(self, model):
        self.model = model
        self.initial = {name: w.detach().clone() for name, w in _named_weights(model).items()}
        self.records: list[dict] = []
        self._grad_sums: dict[str, float] = {}
        self._grad_steps = 0
        self._measured: tuple[int, dict[str, float]] | None = None  # (step, drift): measured once per step
        self._gradients_measured = False  # this optimizer step's gradient norms are summed already (before clipping)
        self.before_clipping = True  # False once a step's norms were read after the Trainer clipped them

    def on_train_begin(self, args, state, control, **kwargs):
        # resuming: keep the history up to the checkpoint
        path = self.history_file(DRIFT_FILE, args.output_dir) if state.global_step > 0 else None
        self.records = records_until(path, state.global_step, "step")
        saved = read_json(path) if path else {}
        pending = saved.get("pending", {})  # only a checkpoint's copy has it
        # the records kept are after clipping if the file says so or predates the field
        self.before_clipping = saved.get("grad_norm_before_clipping", not path) is True and self.before_clipping
        self._grad_sums, self._grad_steps = dict(pending.get("grad_sums", {})), pending.get("grad_steps", 0)
        if state.global_step == 0:  # step 0: the initial state, drift 0 by definition
            self.records = [self._record(state, with_grads=False)]

    def save_into_checkpoint(self, folder, state):
        # The sums since the last record too: the next record, after a resume, then averages the same steps.
        pending = {"grad_sums": self._grad_sums, "grad_steps": self._grad_steps}
        self.save(os.path.join(folder, DRIFT_FILE), pending=pending)

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:  # a run whose end is redone from its last checkpoint logs nothing
            self.save(os.path.join(args.output_dir, DRIFT_FILE))

    def measure_gradients(self, scale: float = 1.0) -> None:
        """Add the current gradients' norms, divided by `scale` (a loss scaler's factor, fp16), to the sums of this
        record. Called by MinAttnTrainer right before the Trainer clips the gradients: the norms are ||dL/dW||."""
        # Gradients exist only between backward and the optimizer step (the Trainer zeroes them before on_log).
        # Under DDP they are already averaged across processes here.
        for name, g in _named_weights(self.model, grad=True).items():
            if g is not None:
                self._grad_sums[name] = self._grad_sums.get(name, 0.0) + g.float().norm().item() / scale
        self._grad_steps += 1
        self._gradients_measured = True

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        # Measured already before clipping (MinAttnTrainer), or not clipped at all (max_grad_norm 0): the same norms
        if not self._gradients_measured:
            if (getattr(args, "max_grad_norm", None) or 0) > 0:
                self.before_clipping = False  # a plain Trainer: the gradients were clipped before this call
            self.measure_gradients()
        self._gradients_measured = False

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and "loss" not in logs:  # evaluation and end-of-training logs: no new step
            return
        self.records.append(self._record(state, loss=(logs or {}).get("loss")))
        self._grad_sums, self._grad_steps = {}, 0
        if state.is_world_process_zero:
            self.save(os.path.join(args.output_dir, DRIFT_FILE))

    def _drift(self, step: int) -> dict[str, float]:
        """||W - W_init|| / ||W_init|| of every tracked matrix at optimizer step `step` (the Trainer's log and this
        callback's record of the same step share one measurement)."""
        if self._measured is None or self._measured[0] != step:
            current = _named_weights(self.model)
            # The Trainer moves the model to its device (a GPU) after this callback copied the initial weights.
            self.initial = {name: w0.to(current[name].device) for name, w0 in self.initial.items()}
            self._measured = step, {
                name: ((current[name].float() - w0.float()).norm() / w0.float().norm().clamp_min(1e-12)).item()
                for name, w0 in self.initial.items()}
        return self._measured[1]

    def scalars(self, step: int) -> dict[str, float]:
        """The drift at `step` by kind of matrix, for the training logs (TensorBoard, W&B): "drift/word_embeddings",
        "drift/position_embeddings", and "drift/W_Q" ... "drift/W_O" averaged over the layers."""
        kinds: dict[str, list[float]] = {}
        for name, value in self._drift(step).items():
            kinds.setdefault(matrix_kind(name), []).append(value)
        return {f"drift/{kind}": sum(values) / len(values) for kind, values in kinds.items()}

    def _record(self, state, loss=None, with_grads=True) -> dict:
        record = {"step": state.global_step, "epoch": state.epoch, "loss": loss, "drift": dict(self._drift(state.global_step)),
                  "grad_norm": {}}
        for name in self.initial:
            mean_grad = self._grad_sums[name] / self._grad_steps if with_grads and name in self._grad_sums else None
            record["grad_norm"][name] = mean_grad
        return record

    def save(self, path, **extra):
        write_json_atomically(path, {"tracked": list(self.initial), "grad_norm_before_clipping": self.before_clipping,
                                     "records": self.records, **extra})


def matrix_kind(name: str) -> str:
    """"layers.3.W_Q" -> "W_Q"; "word_embeddings" and "position_embeddings" are their own kind."""
    return name.rsplit(".", 1)[-1]


@dataclass
class DriftHistory:
    """A `drift.json` as series over its records: `steps[i]` is the training step of the i-th value of every list."""

    path: str
    steps: list[int]
    epochs: list[float | None]
    loss: list[float | None]  # training loss logged at that step (None for the initial state, step 0)
    drift: dict[str, list[float]]  # matrix -> ||W - W_init||_F / ||W_init||_F
    grad_norm: dict[str, list[float | None]]  # matrix -> mean ||dL/dW||_F since the previous record (None: no gradient)
    # True: the norms are ||dL/dW||, before clipping; False: after clipping to max_grad_norm (a file written before
    # the field existed, or by a plain Trainer with clipping on)
    grad_norm_before_clipping: bool = False


def read_drift(path) -> DriftHistory | None:
    """Read the `drift.json` that `DriftCallback` wrote (a file, or the model folder holding it); None without one."""
    path = record_file(path, DRIFT_FILE)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        data = json.load(f)
    records = data["records"]
    return DriftHistory(path=path, steps=[r["step"] for r in records], epochs=[r["epoch"] for r in records],
                        loss=[r["loss"] for r in records],
                        drift={name: [r["drift"][name] for r in records] for name in data["tracked"]},
                        grad_norm={name: [r["grad_norm"][name] for r in records] for name in data["tracked"]},
                        grad_norm_before_clipping=bool(data.get("grad_norm_before_clipping", False)))
