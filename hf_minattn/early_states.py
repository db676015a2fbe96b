"""A finer grid of saved states early in training (run_mlm's --early_save_every N --early_save_until M): the Trainer
saves every `save_steps` only, and what happens while the loss leaves its unigram plateau needs more states than
that. The early states go to `output_dir/early_states/checkpoint-<step>`, so the Trainer's checkpoint rotation
(--save_total_limit, which counts the `checkpoint-*` folders of output_dir only) never deletes them, and a resumed run
never mistakes one for the last checkpoint.
"""

import os
import shutil

from transformers import TrainerCallback

EARLY_STATES = "early_states"  # the folder, under a run's output_dir, that holds the early states


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
    with --save_only_model), then moves it to `early_states/`; a state the Trainer saved at that step anyway (a
    multiple of --save_steps) is copied there instead, so that the early grid is complete in one folder. A run killed
    after the Trainer saved an early state and before it was moved left it among the Trainer's checkpoints, where
    rotation would delete it and the resumed run, past that step, would never save it again: at train begin, every
    grid step up to the step resumed from that is still there and missing from `early_states/` is moved (copied where
    the Trainer keeps it, and for the checkpoint resumed from, whose random states the Trainer reads later)."""

    def __init__(self, every: int, until: int):
        self.steps = set(early_steps(every, until))

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            for step in sorted(step for step in self.steps if step <= state.global_step):
                if not os.path.isdir(os.path.join(early_states_folder(args.output_dir), f"checkpoint-{step}")):
                    self._keep(args, step, copy=regular_save(args, state, step) or step == state.global_step)
        return control

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in self.steps:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        if state.global_step in self.steps and state.is_world_process_zero:
            self._keep(args, state.global_step, copy=regular_save(args, state, state.global_step))
        return control

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
            shutil.copytree(source, partial)
            os.rename(partial, target)
        else:
            shutil.move(source, target)


def regular_save(args, state, step: int) -> bool:
    """Whether the Trainer saves at `step` anyway: with save_strategy "steps", at a multiple of save_steps (made
    absolute in `state.save_steps`) and at the last step."""
    if getattr(args.save_strategy, "value", args.save_strategy) != "steps":
        return False
    return step == state.max_steps or bool(state.save_steps and step % state.save_steps == 0)


class StopAtStep(TrainerCallback):
    """Ends training after optimizer step `step` (None: never), leaving the learning-rate schedule that of
    --max_steps: a control run then matches a longer run's first `step` steps, learning rate included (a shorter
    --max_steps would decay the rate to 0 by its last step)."""

    def __init__(self, step: int | None):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if self.step is not None and state.global_step >= self.step:
            control.should_training_stop = True
        return control
