"""The Trainer that run_mlm.py uses: `transformers.Trainer` plus a time budget (the stopping point, the learning-rate
schedule and the progress bar follow the minutes left), no weight decay on embeddings, extra logged metrics
(gain over the unigram floor, perplexity, drift from initialisation) so that TensorBoard and W&B get them too, the
records of its callbacks kept in every checkpoint, and the end of a run killed after its last checkpoint. What a
checkpoint must hold to resume a run, and what run_mlm's --output_dir holds, are `hf_minattn.run_folder`'s.
"""

import contextlib
import dataclasses
import inspect
import math
import os
import shutil

import torch
from transformers import ProgressCallback, Trainer, TrainerState
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, sort_checkpoints

from hf_minattn.drift import DriftCallback
from hf_minattn.early_states import EarlyStates, drop_resume_states
from hf_minattn.model_card import CardFacts, write_model_card
from hf_minattn.record_files import KeptInCheckpoints, read_json, write_json_atomically
from hf_minattn.time_budget import TimeBudget, TimeBudgetProgressCallback
from hf_minattn.unigram import UnigramFloor


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

    def _clip_grad_norm(self, model):
        # Trainer calls this only with max_grad_norm > 0, before on_pre_optimizer_step: the drift's gradient norms
        # are read here, before clipping (with fp16, the gradients are still multiplied by the loss scale).
        if self.drift is not None:
            scaler = getattr(self.accelerator, "scaler", None)
            scaled = scaler is not None and scaler.is_enabled()
            self.drift.measure_gradients(scale=float(scaler.get_scale()) if scaled else 1.0)
        return super()._clip_grad_norm(model)

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
        losses = {key[: -len("loss")] for key in logs
                  if key.endswith("loss") and not key.endswith(("unigram_loss", "token_loss"))}
        for prefix in losses:
            if prefix + "unigram_loss" in logs:  # the gain over the unigram floor, in nats, both means over tokens
                logs[prefix + "gain_over_unigram"] = logs[prefix + "unigram_loss"] - logs.get(prefix + "token_loss",
                                                                                              logs[prefix + "loss"])
            if prefix.startswith("eval"):
                loss = logs[prefix + "loss"]
                logs[prefix + "perplexity"] = math.exp(loss) if loss < 700 else float("inf")
        if "loss" in logs:  # a training log
            if self.drift is not None:
                logs.update(self.drift.scalars(self.state.global_step))
            if self.time_budget is not None:
                logs["time_budget_minutes_left"] = round(self.time_budget.minutes_left, 2)
        super().log(logs, *args, **kwargs)

    def save_metrics(self, split, metrics, combined=True):
        """As `Trainer.save_metrics` (`<split>_results.json`, merged into all_results.json), each file written whole
        (`write_json_atomically`): a kill during the Trainer's plain write left a truncated all_results.json that
        every --resume failed to read. One unreadable all the same is rebuilt from the split files beside it."""
        if not self.is_world_process_zero():
            return
        folder = self.args.output_dir
        write_json_atomically(os.path.join(folder, f"{split}_results.json"), metrics, indent=4, sort_keys=True)
        if combined:
            write_json_atomically(os.path.join(folder, "all_results.json"), {**saved_results(folder), **metrics},
                                  indent=4, sort_keys=True)

    def create_model_card(self, *args, **kwargs):
        if self.is_world_process_zero() and self.card_facts is not None:
            write_model_card(self.args.output_dir, self.card_facts)

    def _kept_in_checkpoints(self) -> list[KeptInCheckpoints]:
        return [callback for callback in self.callback_handler.callbacks if isinstance(callback, KeptInCheckpoints)]

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        # The callbacks read their records back from the checkpoint resumed from (`True`, "the last one", is not
        # resolved here: they then read the run folder's files).
        resumed = os.fspath(resume_from_checkpoint) if isinstance(resume_from_checkpoint, (str, os.PathLike)) else None
        for callback in self._kept_in_checkpoints():
            callback.resumed_from = resumed
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def push_to_hub(self, *args, saved: bool = False, **kwargs):
        """As `Trainer.push_to_hub`; with `saved`, the model in output_dir is the one to upload (run_mlm saved it at
        the end of training) and is uploaded as it is: the Trainer's save before the upload would write it again in
        place, where a kill would leave a finished run with its weights cut short."""
        self.uploading_saved = saved
        try:
            return super().push_to_hub(*args, **kwargs)
        finally:
            self.uploading_saved = False

    def save_model(self, output_dir=None, _internal_call=False):
        if _internal_call and output_dir is None and getattr(self, "uploading_saved", False):
            return  # push_to_hub(saved=True): the folder holds the model already
        folder = os.path.basename(os.path.normpath(output_dir or ""))
        checkpoint = _internal_call and folder.startswith(f"{PREFIX_CHECKPOINT_DIR}-") and self.args.should_save
        if checkpoint:
            # A run resumed from an older checkpoint into the same folder writes the later ones again in place: the
            # old trainer_state.json, the mark of a whole checkpoint, goes first, so that a kill mid-save leaves the
            # checkpoint incomplete (skipped on --resume) rather than old and new files under that mark.
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(output_dir, TRAINER_STATE_NAME))
        super().save_model(output_dir, _internal_call)
        # Inside Trainer._save_checkpoint, after the weights and before the optimizer, RNG and trainer states: a
        # checkpoint with its trainer_state.json (written last) holds the callbacks' records too.
        if checkpoint:
            for callback in self._kept_in_checkpoints():
                callback.save_into_checkpoint(output_dir, self.state)

    def _save_checkpoint(self, model, trial):
        """Under --save_only_model, the newest checkpoint (not an early-only state) is saved whole, in the Trainer's own
        order (its states before trainer_state.json, then the rotation), so that a killed run resumes; the older ones
        then lose those states once every process has written its own (its training_args.bin says save_only_model
        False)."""
        early = [callback for callback in self.callback_handler.callbacks if isinstance(callback, EarlyStates)]
        if not self.args.save_only_model or any(c.early_only == self.state.global_step for c in early):
            return super()._save_checkpoint(model, trial)
        self.args.save_only_model = False
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self.args.save_only_model = True
        self.accelerator.wait_for_everyone()
        if self.args.should_save:
            run_dir = self._get_output_dir(trial=trial)
            drop_resume_states(sort_checkpoints(output_dir=run_dir), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")

    def finish_from_checkpoint(self, checkpoint: str) -> dict:
        """End the training whose last step `checkpoint` holds but whose end never ran (the run was killed after
        saving it): its weights and trainer state loaded, the callbacks' train begin and end called (records closed
        and written), no step trained. Trainer.train(resume_from_checkpoint=checkpoint) would train one step past
        the end: it checks for the end only after a step. Returns `trained_metrics(state)`."""
        for callback in self._kept_in_checkpoints():
            callback.resumed_from = checkpoint
        # from_pretrained reads any layout the Trainer saves (one file, shards); load_state_dict keeps the tied weights
        self.model.load_state_dict(type(self.model).from_pretrained(checkpoint).state_dict())
        self.state = TrainerState.load_from_json(os.path.join(checkpoint, TRAINER_STATE_NAME))
        # As Trainer.train sets them: the saved ones are those of the process that saved
        self.state.is_local_process_zero = self.is_local_process_zero()
        self.state.is_world_process_zero = self.is_world_process_zero()
        self.control = self.callback_handler.on_train_begin(self.args, self.state, self.control)
        metrics = trained_metrics(self.state)
        self.log(dict(metrics))  # the summary the Trainer logs at the end of training
        best = self.state.best_model_checkpoint
        if self.args.load_best_model_at_end and best is not None:
            self._load_best_model()  # as Trainer.train ends: the model saved and evaluated is then the best one
        if self.args.should_save and best is not None and os.path.isdir(best) and self.args.save_total_limit == 1:
            for folder in sort_checkpoints(output_dir=self.args.output_dir, best_model_checkpoint=best):
                if not os.path.samefile(folder, best):  # and, as it, keeps the best checkpoint alone
                    shutil.rmtree(folder, ignore_errors=True)
        self.control = self.callback_handler.on_train_end(self.args, self.state, self.control)
        return metrics


def saved_results(folder: str) -> dict:
    """The results saved in `folder`: its all_results.json, or where that is missing or unreadable (cut short by a
    kill while the Trainer wrote it), its train and eval results merged; {} when it has none."""
    with contextlib.suppress(OSError, ValueError):
        if isinstance(results := read_json(os.path.join(folder, "all_results.json")), dict):
            return results
    merged = {}
    for name in ("train_results.json", "eval_results.json"):
        with contextlib.suppress(OSError, ValueError, TypeError):  # TypeError: no JSON object
            merged.update(read_json(os.path.join(folder, name)))
    return merged


def trained_metrics(state: TrainerState) -> dict:
    """The train metrics of a training that ended at `state`, as far as the state keeps them (Trainer.train's were
    lost with the run that ended there): epoch, tokens, the mean training loss of the logged steps (each log's loss
    averages the steps since the one before: the Trainer's train_loss when the last step was logged) and the clock
    of the training call at its last log."""
    metrics = {"epoch": state.epoch, "num_input_tokens_seen": state.num_input_tokens_seen}
    logged = [(log["step"], log["loss"]) for log in state.log_history if "loss" in log]
    if logged and logged[-1][0] > 0:
        since = [0] + [step for step, _ in logged[:-1]]
        metrics["train_loss"] = sum(loss * (step - before) for (step, loss), before in zip(logged, since)) / logged[-1][0]
    clock = [log["train_runtime"] for log in state.log_history if "train_runtime" in log]
    if clock:
        metrics["train_runtime"] = clock[-1]
    return metrics


def write_trainer_state(state: TrainerState, folder: str) -> None:
    """`state` as folder/trainer_state.json (TrainerState.save_to_json's layout), whole or not at all: --resume takes a
    folder whose trainer_state.json is at the last step for a finished run."""
    write_json_atomically(os.path.join(folder, TRAINER_STATE_NAME), dataclasses.asdict(state), indent=2, sort_keys=True)


def preprocess_logits_for_metrics(logits, labels):
    """(predicted token ids, each labelled token's cross-entropy in nats), both laid out like `labels` (-100 and 0
    where nothing was predicted).

    With sparse prediction (MinAttnTrainer's default), MinAttnForMaskedLM returns logits only at the labelled
    positions, (n_labelled, vocab) in row-major order of `labels != -100`; otherwise (batch, seq, vocab).
    Either way the outputs go back in the (batch, seq) layout, so that the Trainer pads and gathers them across
    processes exactly as it does the labels. The per-token losses give the metrics a mean over tokens: the Trainer's
    eval_loss is a mean of per-batch means, which weighs a token by its batch's size, where the unigram floor is a
    mean over tokens.
    """
    if isinstance(logits, tuple):
        logits = logits[0]
    labelled = labels != -100
    logits = logits if logits.dim() == 2 else logits[labelled]  # (n_labelled, vocab)
    predictions = torch.full_like(labels, -100)
    predictions[labelled] = logits.argmax(dim=-1)
    token_losses = torch.zeros(labels.shape, dtype=torch.float32, device=labels.device)
    token_losses[labelled] = torch.nn.functional.cross_entropy(logits.float(), labels[labelled], reduction="none")
    return predictions, token_losses


def metrics_computer(unigram: UnigramFloor | None = None):
    """`compute_metrics` for the Trainer: masked-token accuracy and count, their mean cross-entropy over tokens
    (`token_loss`), and, given the training split's unigram floor, its cross-entropy on the same masked tokens
    (`unigram_loss`). MinAttnTrainer.log takes the gain over the floor from these two, both means over tokens."""

    def compute_metrics(eval_prediction):
        (predictions, token_losses), labels = eval_prediction.predictions, eval_prediction.label_ids
        masked = labels != -100
        metrics = {"accuracy": float((predictions[masked] == labels[masked]).mean()), "masked_tokens": int(masked.sum()),
                   "token_loss": float(token_losses[masked].mean(dtype="float64"))}
        if unigram is not None:
            metrics["unigram_loss"] = unigram.cross_entropy(labels[masked])
        return metrics

    return compute_metrics
