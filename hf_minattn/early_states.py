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
    multiple of --save_steps) is copied there instead, so that the early grid is complete in one folder."""

    def __init__(self, every: int, until: int):
        self.steps = set(early_steps(every, until))

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in self.steps:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        if state.global_step not in self.steps or not state.is_world_process_zero:
            return control
        name = f"checkpoint-{state.global_step}"
        source, target = os.path.join(args.output_dir, name), os.path.join(early_states_folder(args.output_dir), name)
        if not os.path.isdir(source):  # saved under a hyperparameter search's run folder: nothing of ours to move
            return control
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(target):  # a rerun of the same step (resumed run)
            shutil.rmtree(target)
        if regular_save(args, state):
            shutil.copytree(source, target)
        else:
            shutil.move(source, target)
        return control


def regular_save(args, state) -> bool:
    """Whether the Trainer saves at this step anyway: with save_strategy "steps", at a multiple of save_steps (made
    absolute in `state.save_steps`) and at the last step."""
    if getattr(args.save_strategy, "value", args.save_strategy) != "steps":
        return False
    step = state.global_step
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
