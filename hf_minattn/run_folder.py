"""What a checkpoint must hold to resume a run, and what run_mlm's --output_dir holds: a finished run, a checkpoint
to resume from, or a trained model that training afresh (or a run continued or evaluated there) must not overwrite.
"""

import logging
import os
import shutil

from transformers.trainer import OPTIMIZER_NAME, OPTIMIZER_NAME_BIN, SCHEDULER_NAME, TRAINER_STATE_NAME
from transformers.trainer_utils import sort_checkpoints
from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

from hf_minattn.checks import lies_within
from hf_minattn.drift import DRIFT_FILE
from hf_minattn.early_states import EARLY_STATES
from hf_minattn.loss_allocation import LOSS_ALLOCATION_FILE
from hf_minattn.model_card import IN_PROGRESS_CARD
from hf_minattn.record_files import read_json
from hf_minattn.time_budget import TIME_BUDGET_FILE, spent_budget

logger = logging.getLogger(__name__)


def read_trainer_state(path: str) -> dict | None:
    """The trainer state in file `path`, None without it; a ValueError naming the file when it is no JSON object (a
    write cut short)."""
    if not os.path.isfile(path):
        return None
    state = read_json(path)
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds no JSON object")
    return state


def checkpoint_problem(folder: str, world_size: int) -> str | None:
    """Why checkpoint `folder` cannot resume training as if the run had never stopped, or None: its trainer state,
    written last (missing or cut short: a save that was killed); the optimizer and scheduler states (absent from a
    model-only checkpoint, --save_only_model: the optimizer and the learning-rate schedule would start again); the
    random states of each of the `world_size` processes of the resuming run (rng_state.pth alone; one
    rng_state_<rank>.pth each with several processes)."""
    try:
        if read_trainer_state(os.path.join(folder, TRAINER_STATE_NAME)) is None:
            return f"has no {TRAINER_STATE_NAME}: its save was cut short"
    except ValueError as error:
        return f"was cut short while saving: {error}"
    has = set(os.listdir(folder))
    missing = ([] if has & {OPTIMIZER_NAME, OPTIMIZER_NAME_BIN} else [OPTIMIZER_NAME]) + \
        ([] if SCHEDULER_NAME in has else [SCHEDULER_NAME])
    if missing:
        return f"is model-only (no {', '.join(missing)})"
    rng = ["rng_state.pth"] if world_size <= 1 else [f"rng_state_{rank}.pth" for rank in range(world_size)]
    missing = [name for name in rng if name not in has]
    if not missing:
        return None
    others = sorted(name for name in has if name.startswith("rng_state") and name not in rng)
    if (others and world_size <= 1) or "rng_state.pth" in others:
        return (f"holds the random states of another number of processes ({', '.join(others)}; this run has "
                f"{world_size}, so resume it with as many)")
    # Each process writes its own random state, and nothing makes process 0 wait for the others before it writes
    # trainer_state.json: a kill in between leaves a checkpoint whose other files are whole.
    return f"was cut short while saving (no {', '.join(missing)}: a process's random state)"


def check_checkpoint_folder(args) -> None:
    """A one-line error naming --resume_from_checkpoint unless it is a folder the Trainer saved a checkpoint in (its
    config.json and trainer_state.json, the file the Trainer writes last) that can resume training as if the run had
    never stopped (`checkpoint_problem`: a model-only one would restart the optimizer and the schedule); or when
    --overwrite_output_dir would remove it with the rest of --output_dir. (One of another folder may continue over
    the model that --output_dir holds: `start_afresh`.)"""
    path = args.resume_from_checkpoint
    expected = "expected a checkpoint folder the Trainer wrote (output_dir/checkpoint-<step>)"
    if os.path.isfile(path):
        raise ValueError(f"--resume_from_checkpoint {path!r} is a file; {expected}")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"--resume_from_checkpoint {path!r} does not exist; {expected}")
    missing = [name for name in ("config.json", "trainer_state.json") if not os.path.isfile(os.path.join(path, name))]
    if missing:
        raise ValueError(f"--resume_from_checkpoint {path!r} is not a checkpoint: it has no {' nor '.join(missing)}; "
                         f"{expected}")
    problem = checkpoint_problem(path, args.world_size)
    if problem and problem.startswith("is model-only"):
        raise ValueError(f"--resume_from_checkpoint {path!r} {problem}: model-only checkpoints cannot resume training "
                         "(the optimizer and the learning-rate schedule would start again); give a complete checkpoint, "
                         "or this one as --model_name_or_path to train anew from its weights")
    if problem:
        raise ValueError(f"--resume_from_checkpoint {path!r} {problem}; expected a complete checkpoint")
    if args.overwrite_output_dir and lies_within(path, args.output_dir):
        raise ValueError(f"--resume_from_checkpoint {path} continues a run, --overwrite_output_dir true trains afresh "
                         "over --output_dir (removing its checkpoints); give one of them")


def last_complete_checkpoint(output_dir: str, world_size: int) -> str | None:
    """The newest checkpoint of `output_dir` that can resume training (`checkpoint_problem`), or None; each newer one
    skipped is named, with the reason."""
    for checkpoint in reversed(sort_checkpoints(output_dir)):
        problem = checkpoint_problem(checkpoint, world_size)
        if problem is None:
            return checkpoint
        logger.warning(f"Skipping {checkpoint}: it {problem}")
    return None


def end_of_training(state: dict, args) -> str | None:
    """Why the trainer state `state` is at the end of the training `args` describe, or None: at --stop_at_step, or
    --max_steps (or --num_train_epochs without them). A run that ended on --max_train_minutes did not reach them
    (`finished_run` reads its budget); a checkpoint of one resumes with the minutes it had left (`TimeBudget`)."""
    steps, epoch = state.get("global_step", 0), state.get("epoch") or 0.0
    if args.stop_at_step is not None and steps >= args.stop_at_step:
        return f"step {steps} of --stop_at_step {args.stop_at_step}"
    if args.max_steps > 0 and steps >= args.max_steps:
        return f"step {steps} of --max_steps {args.max_steps}"
    if args.max_steps <= 0 and epoch >= args.num_train_epochs - 1e-9:
        return f"epoch {epoch:g} of --num_train_epochs {args.num_train_epochs:g}"
    return None


def finished_run(args) -> str | None:
    """Why the run in --output_dir is finished, or None: its trainer_state.json, written last (after the model, the
    results and the card), is at the end of training (`end_of_training`) or of its time budget (`spent_budget`). One
    cut short is named, and read as not finished: the end is redone."""
    try:
        state = read_trainer_state(os.path.join(args.output_dir, TRAINER_STATE_NAME))
    except ValueError as error:
        logger.warning(f"{error}: the run's end is redone")
        return None
    if state is None:
        return None
    return end_of_training(state, args) or spent_budget(args.output_dir, state.get("global_step"), args.max_train_minutes)


def holds_model(folder: str) -> bool:
    """Whether `folder` holds saved model weights (safetensors, one file or sharded)."""
    return any(os.path.isfile(os.path.join(folder, name)) for name in (SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME))


def trained_model_in(folder: str) -> str | None:
    """What in `folder` is a trained model that training afresh there would replace, or None: the trainer_state.json
    of a training that ended, or weights, unless the card beside them says that training is in progress (an
    unfinished run's: the initial weights, or a checkpoint's pushed during training)."""
    if os.path.isfile(os.path.join(folder, TRAINER_STATE_NAME)):
        return TRAINER_STATE_NAME
    card = os.path.join(folder, "README.md")
    if not holds_model(folder):
        return None
    if os.path.isfile(card):
        with open(card, encoding="utf-8", errors="replace") as f:
            if IN_PROGRESS_CARD in f.read():
                return None
    return "model weights"


# The arguments of a run that trains, and of one that only evaluates (--do_train false): apart, so that evaluating a
# model in its own folder keeps the record of its training.
RUN_ARGS, EVAL_ARGS = "run_args.json", "eval_args.json"
# What an earlier run leaves that a later --resume, or a reader of the folder, would take for the new run's.
EARLIER_RUN_FILES = (TRAINER_STATE_NAME, "all_results.json", "train_results.json", "eval_results.json", RUN_ARGS,
                     EVAL_ARGS, DRIFT_FILE, LOSS_ALLOCATION_FILE, TIME_BUDGET_FILE)


def foreign_readme(folder: str) -> bool:
    """Whether `folder` holds a README.md that is no model card (a card opens with its YAML metadata, `---`, after
    any byte-order mark): the user's own (`--output_dir .` in a project), which the run's card would replace. An
    empty one holds nothing to lose."""
    path = os.path.join(folder, "README.md")
    if not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read().lstrip("\ufeff")
    return bool(text.strip()) and text.splitlines()[0].rstrip() != "---"


def start_afresh(args, checkpoint: str | None = None) -> None:
    """Before training from step 0 into --output_dir, or from `checkpoint` of another folder (whose model, card,
    results and checkpoints would replace its own): refused where it holds a trained model (`trained_model_in`),
    unless --overwrite_output_dir, which first removes the earlier run's checkpoints, early states, trainer state,
    results and records (the saving process only)."""
    output_dir = args.output_dir
    if not os.path.isdir(output_dir):
        return
    if not args.overwrite_output_dir:
        found = trained_model_in(output_dir)
        if found:
            why = (f"--resume_from_checkpoint {checkpoint} lies outside it (continuing that run there would replace "
                   "the model)" if checkpoint else "no checkpoint to resume from")
            raise ValueError(f"--output_dir {output_dir} holds a trained model ({found}) and {why}: pass "
                             f"--overwrite_output_dir true to {'continue' if checkpoint else 'train afresh'} over it, "
                             "or choose another --output_dir")
        if foreign_readme(output_dir):
            raise ValueError(f"--output_dir {output_dir} holds a README.md that is no model card: the run's model card "
                             "would replace it; move it, choose another --output_dir, or pass --overwrite_output_dir "
                             "true to replace it")
        return
    if args.should_save:
        for folder in [*sort_checkpoints(output_dir), os.path.join(output_dir, EARLY_STATES)]:
            shutil.rmtree(folder, ignore_errors=True)
        for name in EARLIER_RUN_FILES:
            if os.path.isfile(os.path.join(output_dir, name)):
                os.remove(os.path.join(output_dir, name))
        logger.warning(f"--overwrite_output_dir: {f'continuing {checkpoint}' if checkpoint else 'training afresh'} into "
                       f"{output_dir}, the earlier run's checkpoints, early states, trainer state, results and records "
                       "removed")


def check_evaluation_folder(model: str, args) -> None:
    """Before evaluating `model` (--model_name_or_path) without training into --output_dir, which gets its results
    (eval_results.json, the eval_* keys of all_results.json) and EVAL_ARGS: refused where the folder holds another
    run (a trained model, its RUN_ARGS, checkpoints), whose records would then describe `model`, unless it is
    `model`'s own folder or --overwrite_output_dir is given."""
    output_dir = args.output_dir
    if args.do_train or args.overwrite_output_dir or not os.path.isdir(output_dir):
        return
    if os.path.isdir(model) and os.path.samefile(model, output_dir):
        return
    found = (trained_model_in(output_dir) or (RUN_ARGS if os.path.isfile(os.path.join(output_dir, RUN_ARGS)) else None)
             or ("checkpoints" if sort_checkpoints(output_dir) else None))
    if found:
        raise ValueError(f"--output_dir {output_dir} holds another run ({found}), whose results would then describe "
                         f"--model_name_or_path {model}, evaluated there by --do_train false: evaluate into the model's "
                         "own folder or another --output_dir, or pass --overwrite_output_dir true to write it there")


def checkpoint_to_resume(args) -> tuple[str | None, bool]:
    """(the checkpoint to continue from, whether it is at the end of training): --resume_from_checkpoint, or with
    --resume the last complete one of --output_dir. At the end, the run was killed after its last checkpoint and
    before its end (model, results, card) was written: run_mlm redoes the end from it, training nothing. Without
    one, `start_afresh` decides whether --output_dir may be trained into."""
    checkpoint, output_dir = args.resume_from_checkpoint, args.output_dir
    if (checkpoint is None and args.do_train and not args.overwrite_output_dir and os.path.isdir(output_dir)
            and sort_checkpoints(output_dir)):
        if not args.resume:
            raise ValueError(
                f"--output_dir {output_dir} already holds checkpoints ({os.path.basename(sort_checkpoints(output_dir)[-1])}): "
                "pass --resume to continue from the last one, --overwrite_output_dir true to train afresh (removing "
                "them), or choose another --output_dir")
        checkpoint = last_complete_checkpoint(output_dir, args.world_size)
        model_only = [] if checkpoint else [os.path.basename(c) for c in sort_checkpoints(output_dir)
                                            if checkpoint_problem(c, args.world_size).startswith("is model-only")]
        if model_only:  # training afresh would leave them beside the new run's, and they may be wanted
            raise ValueError(f"--output_dir {output_dir} holds only checkpoints that cannot resume training "
                             f"(model-only: {', '.join(model_only)}): pass --overwrite_output_dir true to train afresh "
                             "(removing them), or choose another --output_dir")
        logger.warning(f"Resuming from {checkpoint}" if checkpoint else "No complete checkpoint to resume from")
    if checkpoint is None:
        if args.do_train:
            start_afresh(args)
        return None, False
    if not lies_within(checkpoint, output_dir):  # another run's: --output_dir's model and records are not its own
        start_afresh(args, checkpoint)
    state = read_trainer_state(os.path.join(checkpoint, TRAINER_STATE_NAME))
    step, last = state.get("global_step", 0), args.stop_at_step or (args.max_steps if args.max_steps > 0 else None)
    if last is not None and step > last:  # the Trainer would train on past it
        flag = "--stop_at_step" if args.stop_at_step else "--max_steps"
        raise ValueError(f"{checkpoint} is at step {step}, past {flag} {last} of this run: expected {flag} {step} or "
                         "more, or another --output_dir")
    return checkpoint, end_of_training(state, args) is not None
