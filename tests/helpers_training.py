"""Helpers of the training tests: the command line of a tiny run of training/run_mlm.py, and a record of what its
Trainer fed the model (its fixtures are in conftest.py)."""

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
RUN_MLM = REPO / "training" / "run_mlm.py"
ACCELERATE_CPU_CONFIG = REPO / "training" / "accelerate" / "cpu_2proc.yaml"

# A few seconds of training: tiny model (hidden 32, FFN 37, 64 positions), a few steps, fp32 for exactness.
TINY_ARGS = {
    "model_size": "tiny",
    "max_steps": 8,
    "logging_steps": 2,
    "save_steps": 4,
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "max_train_samples": 200,
    "max_eval_samples": 20,
    "learning_rate": 1e-3,
    "bf16": "false",
    "seed": 0,
    "disable_tqdm": "true",
}


def tiny_argv(output_dir, tokenizer_dir=None, **overrides) -> list[str]:
    """Command-line arguments of a tiny run; `overrides` replace or add flags (value None drops one)."""
    args = {**TINY_ARGS, "output_dir": str(output_dir), **overrides}
    if tokenizer_dir is not None:
        args["tokenizer_name"] = str(tokenizer_dir)
    argv = []
    for key, value in args.items():
        if value is None:
            continue
        argv.append(f"--{key}")
        if value is not True:
            argv.append(str(value))
    return argv


def subprocess_env() -> dict:
    # Each process uses one thread: the tests run two processes on two cores, and stay fast on a shared machine.
    return {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def run_script(argv, launcher=(sys.executable,), **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*launcher, str(RUN_MLM), *argv], env=subprocess_env(), capture_output=True, text=True, **kwargs)


def complete_checkpoint(folder, *rng):
    """The files of a checkpoint the Trainer finished writing (empty: only their presence is checked)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "minattn"}))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": []}))
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", *(rng or ["rng_state.pth"])):
        (folder / name).write_bytes(b"")
    return folder


def read_json(path):
    with open(path) as f:
        return json.load(f)


@dataclass
class ForwardCall:
    """One call of the model's forward by the Trainer: the mode, the inputs as passed, what came out."""

    training: bool
    input_ids: torch.Tensor  # (B, T)
    attention_mask: torch.Tensor | None
    labels: torch.Tensor | None  # (B, T), -100 where nothing is predicted
    sparse_prediction: bool | None  # the forward argument, None when not passed
    logits_shape: tuple
    loss: float | None

    def batch(self) -> dict:
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask, "labels": self.labels}


@contextmanager
def recorded_forward_calls():
    """A list that receives a ForwardCall for every forward of the model `run_mlm.main` builds while the block runs
    (a forward hook on the model that `run_mlm.build_model` returns)."""
    from hf_minattn import run_mlm

    calls = []

    def record(module, args, kwargs, output):
        def copied(name):
            value = kwargs.get(name)
            return None if value is None else value.detach().cpu().clone()

        calls.append(ForwardCall(module.training, copied("input_ids"), copied("attention_mask"), copied("labels"),
                                 kwargs.get("sparse_prediction"), tuple(output.logits.shape),
                                 None if output.loss is None else output.loss.item()))

    build_model = run_mlm.build_model

    def build_and_record(*args, **kwargs):
        model = build_model(*args, **kwargs)
        model.register_forward_hook(record, with_kwargs=True)
        return model

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_mlm, "build_model", build_and_record)
        yield calls


class Killed(BaseException):
    """A process killed at that point (SIGKILL): a BaseException, so that no `except Exception` of the run cleans up
    after it."""


@contextmanager
def killed_at(owner, name: str, call: int = 1, after: bool = False, when=None):
    """While the block runs, the `call`-th call of `owner.name` (of those for which `when(*args, **kwargs)` is true)
    raises Killed, before the call or, with `after`, once it returned: in-process, the harness of
    /tmp/review_resume/harness.py (os._exit(137) at the N-th call of a function)."""
    original = getattr(owner, name)
    count = [0]

    def wrapper(*args, **kwargs):
        if when is None or when(*args, **kwargs):
            count[0] += 1
        if count[0] == call and not after:
            count[0] += 1  # once
            raise Killed(f"killed before call {call} of {name}")
        result = original(*args, **kwargs)
        if count[0] == call and after:
            count[0] += 1
            raise Killed(f"killed after call {call} of {name}")
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, name, wrapper)
        yield


def model_weights(folder) -> dict:
    from safetensors.torch import load_file

    return load_file(Path(folder) / "model.safetensors")


def max_weight_difference(a, b) -> float:
    wa, wb = model_weights(a), model_weights(b)
    assert wa.keys() == wb.keys()
    return max((wa[k] - wb[k]).abs().max().item() for k in wa)


def intervals(folder) -> list[tuple[int, int]]:
    return [(r["step_start"], r["step_end"]) for r in read_json(Path(folder) / "loss_allocation.json")["records"]]
