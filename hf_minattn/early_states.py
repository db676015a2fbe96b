"""A finer grid of saved states early in training (run_mlm's --early_save_every N --early_save_until M): the Trainer
saves every `save_steps` only, and what happens while the loss leaves its unigram plateau needs more states than
that. The early states go to `output_dir/early_states/checkpoint-<step>`, so the Trainer's checkpoint rotation
(--save_total_limit, which counts the `checkpoint-*` folders of output_dir only) never deletes them, and a resumed run
never mistakes one for the last checkpoint.
"""

import fnmatch
import os
import shutil

import torch
from transformers import TrainerCallback
from transformers.trainer import TRAINING_ARGS_NAME

EARLY_STATES = "early_states"  # the folder, under a run's output_dir, that holds the early states
# What a checkpoint holds beyond the model to resume training: under --save_only_model, the newest checkpoint alone
# keeps them (MinAttnTrainer), and an early state copied from it leaves them out
RESUME_STATES = ("optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt", "rng_state*.pth")


def drop_resume_states(checkpoints: list[str], keep: str) -> None:
    """Remove the RESUME_STATES of every one of `checkpoints` but the one named `keep`, each folder's times kept: the
    Trainer's rotation orders the checkpoints by them."""
    for folder in checkpoints:
        if os.path.basename(os.path.normpath(folder)) != keep:
            times = os.stat(folder)
            for name in os.listdir(folder):
                if any(fnmatch.fnmatch(name, pattern) for pattern in RESUME_STATES):
                    os.remove(os.path.join(folder, name))
            os.utime(folder, ns=(times.st_atime_ns, times.st_mtime_ns))


def early_steps(every: int, until: int) -> list[int]:
    """The steps of the early grid: every multiple of `every` from `every` to `until` (none when either is 0)."""
    for name, value in (("every", every), ("until", until)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"the early grid's {name} must be an integer >= 0, got {value!r}")
    return list(range(every, until + 1, every)) if every and until else []


def early_states_folder(output_dir: str) -> str:
    return os.path.join(output_dir, EARLY_STATES)


class EarlyStates(TrainerCallback):
    """Saves a state at every step of `early_steps(every, until)`, as the Trainer saves its checkpoints (model only
    with --save_only_model), then moves it to `early_states/`; a state the Trainer saved at that step anyway (with
    --save_strategy steps, a multiple of --save_steps or the last step; with epoch, an epoch's last step or the step
    training stopped at) is copied there instead, so that the early grid is complete in one folder and the Trainer
    keeps its checkpoint to resume from. An early-only save skips the Trainer's rotation (--save_total_limit): it runs
    inside the save, before on_save moves the state out, and would count the early state and delete one of the user's
    checkpoints (the last regular save rotated already).
    A run killed after the Trainer saved an early state and before it was moved left it among the Trainer's
    checkpoints, where rotation would delete it and the resumed run, past that step, would never save it again: at
    train begin, every grid step up to the step resumed from that is still there and missing from `early_states/` is
    moved (copied where the Trainer keeps it, and for the checkpoint resumed from, whose random states the Trainer
    reads later). --save_strategy best is refused: the Trainer drops a save asked for at an evaluation step whose
    metric is no new best."""

    def __init__(self, every: int, until: int):
        self.steps = set(early_steps(every, until))
        self.early_only = None  # the step whose save this callback asked for, one the Trainer would not have made
        self.limit = None  # (--save_total_limit,) while an early-only save runs with the limit unset

    def on_train_begin(self, args, state, control, **kwargs):
        self._restore_limit(args)  # left unset by an early-only save that raised
        if self.steps and save_strategy(args) == "best":
            raise ValueError("early states (--early_save_every) need --save_strategy steps, epoch or no, not best")
        if state.is_world_process_zero:
            for step in sorted(step for step in self.steps if step <= state.global_step):
                if not os.path.isdir(os.path.join(early_states_folder(args.output_dir), f"checkpoint-{step}")):
                    self._keep(args, step, copy=regular_save(args, state, step) or step == state.global_step)
        return control

    def on_step_begin(self, args, state, control, **kwargs):
        self._restore_limit(args)  # in case the save asked for at the last step's end did not happen
        return control

    def on_step_end(self, args, state, control, **kwargs):
        # DefaultFlowCallback, the first callback, has asked for the Trainer's own save here (steps strategy); with the
        # epoch strategy, an epoch's last step is saved at the epoch's end, after this.
        epoch_end = save_strategy(args) == "epoch" and float(state.epoch or 0).is_integer()
        if state.global_step in self.steps and not control.should_save and not epoch_end:
            control.should_save = True
            self.early_only, self.limit = state.global_step, (args.save_total_limit,)
            args.save_total_limit = None  # no rotation in this save: see the class's docstring
        return control

    def on_save(self, args, state, control, **kwargs):
        # Under the epoch strategy, a run that stops at an early step saves it twice: early-only at the step's end,
        # then the Trainer's own at the epoch's end, copied
        early_only = self.early_only == state.global_step
        self._restore_limit(args)
        if state.global_step in self.steps:
            if early_only:
                self._leaving(args, state)
            if state.is_world_process_zero:
                self._keep(args, state.global_step, copy=not early_only)
        return control

    def _restore_limit(self, args) -> None:
        if self.limit is not None:
            args.save_total_limit, self.limit = self.limit[0], None
        self.early_only = None

    @staticmethod
    def _leaving(args, state) -> None:
        """Before an early-only state leaves output_dir: its training_args.bin, written with the limit unset, is
        rewritten, and the best model (--load_best_model_at_end), when it is this state, is followed to
        early_states/ (the Trainer would load it from a folder no longer there, and fail to compare that folder with
        its checkpoints at the end with --save_total_limit 1)."""
        name = f"checkpoint-{state.global_step}"
        source = os.path.join(args.output_dir, name)
        if state.is_world_process_zero and os.path.isfile(os.path.join(source, TRAINING_ARGS_NAME)):
            torch.save(args, os.path.join(source, TRAINING_ARGS_NAME))
        best = state.best_model_checkpoint
        if best is not None and os.path.abspath(best) == os.path.abspath(source):
            state.best_model_checkpoint = os.path.join(early_states_folder(args.output_dir), name)

    @staticmethod
    def _keep(args, step: int, copy: bool) -> None:
        """Move (or copy) output_dir/checkpoint-<step> to early_states/: whole or not at all, as a copy goes to a
        hidden folder first, then is renamed (a rename is atomic, a copy is not)."""
        name = f"checkpoint-{step}"
        source, target = os.path.join(args.output_dir, name), os.path.join(early_states_folder(args.output_dir), name)
        if not os.path.isdir(source):  # saved under a hyperparameter search's run folder: nothing of ours to move
            return
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(target):  # a rerun of the same step (resumed run)
            shutil.rmtree(target)
        if copy:
            partial = os.path.join(os.path.dirname(target), f".partial-{name}")
            shutil.rmtree(partial, ignore_errors=True)  # left by a copy killed half-way
            shutil.copytree(source, partial, ignore=shutil.ignore_patterns(*RESUME_STATES) if args.save_only_model else None)
            os.rename(partial, target)
        else:
            shutil.move(source, target)


def save_strategy(args) -> str:
    return getattr(args.save_strategy, "value", args.save_strategy)


def regular_save(args, state, step: int) -> bool:
    """Whether the Trainer saved at `step` anyway, as far as `state` tells after the fact: with save_strategy "steps",
    at a multiple of save_steps (made absolute in `state.save_steps`) and at the last step."""
    if save_strategy(args) != "steps":
        return False
    return step == state.max_steps or bool(state.save_steps and step % state.save_steps == 0)


class StopAtStep(TrainerCallback):
    """Ends training after optimizer step `step` (None: never), leaving the learning-rate schedule that of
    --max_steps: a control run then matches a longer run's first `step` steps, learning rate included (a shorter
    --max_steps would decay the rate to 0 by its last step)."""

    def __init__(self, step: int | None):
        # Checked here: a wrong type would otherwise fail only at the first step's comparison, deep in training
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 1):
            raise ValueError(f"the step to stop at must be an integer >= 1 or None, got {step!r}")
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if self.step is not None and state.global_step >= self.step:
            control.should_training_stop = True
        return control
