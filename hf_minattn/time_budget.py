"""`--max_train_minutes`: a run bounded by time. `TimeBudget` ends training when the minutes are spent and tells the
learning-rate schedule how much of them is; `TimeBudgetProgressCallback` shows the seconds left. The minutes count the
whole run: the seconds spent are kept in every checkpoint, and a resumed run goes on with those its checkpoint left
(its learning rate decays on from where it stopped, not from the top)."""

import contextlib
import logging
import os
import time

import torch
from tqdm.auto import tqdm
from transformers import ProgressCallback, TrainerCallback

from hf_minattn.record_files import KeptInCheckpoints, read_json, write_json_atomically

logger = logging.getLogger(__name__)

TIME_BUDGET_FILE = "time_budget.json"  # in each checkpoint and, at the end, the output folder: {"step", "spent_seconds"}


class TimeBudget(KeptInCheckpoints, TrainerCallback):
    """Ends training after `minutes`, and tells the learning-rate schedule how much of the budget is spent.

    In distributed runs the processes agree on the time spent (the maximum over processes), so they stop at
    the same step and use the same learning rate.
    """

    def __init__(self, minutes: float):
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not minutes > 0:
            raise ValueError(f"the time budget must be a positive number of minutes, got {minutes!r}")
        self.seconds = minutes * 60
        self.start = None
        self.spent = 0.0  # seconds, as of the last finished step, earlier sessions of a resumed run included
        self.fraction = 0.0  # of the budget spent, as of the last finished step

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:  # an earlier session's end: this one is not finished
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(args.output_dir, TIME_BUDGET_FILE))
        self.spent = self.spent_at(state.global_step)
        self.start = time.monotonic() - self.spent
        self.fraction = min(1.0, self.spent / self.seconds)

    def spent_at(self, step: int) -> float:
        """The seconds the checkpoint resumed from had spent at `step`; 0 for a new run, or a checkpoint without the
        record (written before checkpoints kept it, or by a run without a budget)."""
        path = os.path.join(self.resumed_from, TIME_BUDGET_FILE) if self.resumed_from else None
        if step <= 0 or path is None or not os.path.isfile(path):
            return 0.0
        record = read_json(path)
        if record.get("step") != step:
            logger.warning(f"{path} records the time spent at step {record.get('step')}, not at step {step} where "
                           "training resumes: the time budget starts again")
            return 0.0
        return float(record["spent_seconds"])

    def on_step_end(self, args, state, control, **kwargs):
        elapsed = torch.tensor([time.monotonic() - self.start], dtype=torch.float64)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(elapsed, op=torch.distributed.ReduceOp.MAX)
        self.spent = elapsed.item()
        self.fraction = min(1.0, self.spent / self.seconds)
        if self.fraction >= 1.0:
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        # Before run_mlm writes trainer_state.json, the mark of a finished run: `spent_budget` reads it back
        if state.is_world_process_zero:
            write_json_atomically(os.path.join(args.output_dir, TIME_BUDGET_FILE),
                                  {"step": state.global_step, "spent_seconds": round(self.spent, 3)})

    def save_into_checkpoint(self, folder: str, state) -> None:
        # The clock now, not at the step's end: the step's evaluation and this save have taken time too.
        spent = max(self.spent, time.monotonic() - self.start) if self.start is not None else self.spent
        write_json_atomically(os.path.join(folder, TIME_BUDGET_FILE),
                              {"step": state.global_step, "spent_seconds": round(spent, 3)})

    @property
    def minutes_left(self) -> float:
        return (1.0 - self.fraction) * self.seconds / 60


def spent_budget(folder: str, step: int, minutes: float | None) -> str | None:
    """Why the run that ended in `folder` at `step` ended on its time budget, or None: its record says that `minutes`
    (this run's --max_train_minutes) were spent by then. Short of its steps, it is finished all the same: resumed, it
    would go back to its last checkpoint and train over its model. More minutes continue it."""
    path = os.path.join(folder, TIME_BUDGET_FILE)
    if minutes is None or not os.path.isfile(path):
        return None
    record = read_json(path)
    if record.get("step") != step or not float(record.get("spent_seconds", 0)) >= minutes * 60:
        return None
    return f"--max_train_minutes {minutes:g} spent at step {step}"


class TimeBudgetProgressCallback(ProgressCallback):
    """The training bar of a time-budgeted run counts seconds of the budget, so its "remaining" is the real end
    (a bar over the steps of 100 epochs would say hours); evaluation bars and log lines are ProgressCallback's."""

    def __init__(self, budget: TimeBudget):
        super().__init__()
        self.budget = budget

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.training_bar = tqdm(total=round(self.budget.seconds), unit="s", dynamic_ncols=True,
                                     desc="training (time budget)",
                                     bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total} s [{elapsed}<{remaining}{postfix}]")
        self.current_step = 0

    def on_step_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            spent = min(self.budget.seconds, time.monotonic() - self.budget.start)
            self.training_bar.update(spent - self.training_bar.n)
            self.training_bar.set_postfix_str(f"step {state.global_step}", refresh=False)
            self.current_step = state.global_step
