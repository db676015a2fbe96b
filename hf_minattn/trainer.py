"""The Trainer that run_mlm.py uses: `transformers.Trainer` plus a time budget (the stopping point, the learning-rate
schedule and the progress bar follow the minutes left), no weight decay on embeddings, and extra logged metrics
(gain over the unigram floor, perplexity, drift from initialisation) so that TensorBoard and W&B get them too.
"""

import inspect
import math
import time

import torch
from tqdm.auto import tqdm
from transformers import ProgressCallback, Trainer, TrainerCallback

from hf_minattn.drift import DriftCallback
from hf_minattn.model_card import CardFacts, write_model_card
from hf_minattn.unigram import UnigramFloor


class TimeBudget(TrainerCallback):
    """Ends training after `minutes`, and tells the learning-rate schedule how much of the budget is spent.

    In distributed runs the processes agree on the time spent (the maximum over processes), so they stop at
    the same step and use the same learning rate.
    """

    def __init__(self, minutes: float):
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not minutes > 0:
            raise ValueError(f"the time budget must be a positive number of minutes, got {minutes!r}")
        self.seconds = minutes * 60
        self.start = None
        self.fraction = 0.0  # of the budget spent, as of the last finished step

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        elapsed = torch.tensor([time.monotonic() - self.start], dtype=torch.float64)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(elapsed, op=torch.distributed.ReduceOp.MAX)
        self.fraction = min(1.0, elapsed.item() / self.seconds)
        if self.fraction >= 1.0:
            control.should_training_stop = True

    @property
    def minutes_left(self) -> float:
        return (1.0 - self.fraction) * self.seconds / 60


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


class MinAttnTrainer(Trainer):
    """`Trainer` with an optional time budget (`time_budget_minutes`), the embedding drift of `drift` (a
    DriftCallback) in every training log, and this project's model card (`card_facts`, set once the evaluation
    is known) for `create_model_card` and `push_to_hub`.

    With `sparse_prediction` (the default) and a model whose `forward` takes that argument (MinAttnForMaskedLM),
    every loss it computes, in training and in evaluation, projects to the vocabulary at the masked positions
    only: the switch is passed per call, so the model's config, and every checkpoint saved from it, keeps the
    value the user chose."""

    def __init__(self, *args, time_budget_minutes: float | None = None, drift: DriftCallback | None = None,
                 card_facts: CardFacts | None = None, sparse_prediction: bool = True, **kwargs):
        callbacks = list(kwargs.pop("callbacks", None) or [])
        self.time_budget = TimeBudget(time_budget_minutes) if time_budget_minutes is not None else None
        self.drift = drift
        self.card_facts = card_facts
        super().__init__(*args, callbacks=[*callbacks, *([drift] if drift else [])], **kwargs)
        self.sparse_prediction = sparse_prediction and "sparse_prediction" in inspect.signature(self.model.forward).parameters
        if self.time_budget is not None:
            self.add_callback(self.time_budget)
            if self.pop_callback(ProgressCallback) is not None:  # absent with --disable_tqdm
                self.add_callback(TimeBudgetProgressCallback(self.time_budget))

    def create_scheduler(self, num_training_steps, optimizer=None):
        if self.time_budget is None or self.lr_scheduler is not None:
            return super().create_scheduler(num_training_steps, optimizer)
        warmup = self.args.get_warmup_steps(num_training_steps)
        budget = self.time_budget

        def lr_factor(step):
            # Linear warmup, then linear decay to 0 at the end of the time budget or of the steps, whichever
            # comes first.
            progress = max(budget.fraction, step / max(1, num_training_steps))
            return min(1.0, (step + 1) / (warmup + 1)) * max(0.0, 1.0 - progress)

        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer or self.optimizer, lr_factor)
        return self.lr_scheduler

    def compute_loss(self, model, inputs, *args, **kwargs):
        if self.sparse_prediction and "labels" in inputs:
            inputs = {**inputs, "sparse_prediction": True}
        return super().compute_loss(model, inputs, *args, **kwargs)

    def get_decay_parameter_names(self, model):
        # No weight decay on embedding rows: with it, the row of a token that never occurs (no gradient) would still
        # shrink at every step, and "which embedding rows did training move?" would have a false answer.
        embeddings = {name for name, _ in model.named_parameters() if "embeddings" in name}
        return [name for name in super().get_decay_parameter_names(model) if name not in embeddings]

    def log(self, logs, *args, **kwargs):
        # Added here, before the callbacks' on_log, so that every reporter (console, TensorBoard, W&B) gets them.
        losses = {key[: -len("loss")] for key in logs if key.endswith("loss") and not key.endswith("unigram_loss")}
        for prefix in losses:
            if prefix + "unigram_loss" in logs:  # the gain over the unigram floor, in nats
                logs[prefix + "gain_over_unigram"] = logs[prefix + "unigram_loss"] - logs[prefix + "loss"]
            if prefix.startswith("eval"):
                loss = logs[prefix + "loss"]
                logs[prefix + "perplexity"] = math.exp(loss) if loss < 700 else float("inf")
        if "loss" in logs:  # a training log
            if self.drift is not None:
                logs.update(self.drift.scalars(self.state.global_step))
            if self.time_budget is not None:
                logs["time_budget_minutes_left"] = round(self.time_budget.minutes_left, 2)
        super().log(logs, *args, **kwargs)

    def create_model_card(self, *args, **kwargs):
        if self.is_world_process_zero() and self.card_facts is not None:
            write_model_card(self.args.output_dir, self.card_facts)


def preprocess_logits_for_metrics(logits, labels):
    """Keep only the predicted token ids, laid out like `labels` (-100 where nothing was predicted).

    With sparse prediction (MinAttnTrainer's default), MinAttnForMaskedLM returns logits only at the labelled
    positions, (n_labelled, vocab) in row-major order of `labels != -100`; otherwise (batch, seq, vocab).
    Either way the predictions go back in the (batch, seq) layout, so that the Trainer pads and gathers them
    across processes exactly as it does the labels.
    """
    if isinstance(logits, tuple):
        logits = logits[0]
    labelled = labels != -100
    predictions = torch.full_like(labels, -100)
    predictions[labelled] = logits.argmax(dim=-1) if logits.dim() == 2 else logits.argmax(dim=-1)[labelled]
    return predictions


def metrics_computer(unigram: UnigramFloor | None = None):
    """`compute_metrics` for the Trainer: masked-token accuracy and count and, given the training split's unigram
    floor, its cross-entropy on the same masked tokens (`unigram_loss`)."""

    def compute_metrics(eval_prediction):
        predictions, labels = eval_prediction.predictions, eval_prediction.label_ids
        masked = labels != -100
        metrics = {"accuracy": float((predictions[masked] == labels[masked]).mean()), "masked_tokens": int(masked.sum())}
        if unigram is not None:
            metrics["unigram_loss"] = unigram.cross_entropy(labels[masked])
        return metrics

    return compute_metrics
