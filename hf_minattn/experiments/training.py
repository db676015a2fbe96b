"""The variants and how they are trained: the SETTINGS table, the variant table, matched parameter counts, and
`run_mlm` in one fresh subprocess per (variant, seed).

Pairing: runs with the same seed share the data order (the Trainer's sampler is seeded with `--seed`), the masks
(`MLMCollator` draws each example's masks from (seed, epoch, example index), independent of the model) and the
initialisation of every module they share by name and shape (`hf_minattn.initialization.initial_model` seeds
each module's draw by its name). `evaluation.initialisation_agreement` measures the last point.
"""

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass

from hf_minattn.record_files import read_json, write_json_atomically

from .side_by_side import run_logged, run_side_by_side

# ====================================================================================== SETTINGS (the recipe)
# ONE table of training settings per preset: the recipe of docs/recipe.md (the `small` preset already has rotary
# positions and no dropout; 30% masking, learning rate 1e-3, batch 16). Model sizes are run_mlm's presets edited by
# `config_overrides`. `bf16=None` trains in bf16 autocast where the hardware makes it fast, as run_mlm does by default
# (run_experiments resolves it, so that results.json says which). The `full` preset trains 1,200 steps in bf16 where
# the CPU has it: at 640 steps a seed's outcome depended on when it left the unigram plateau (a bf16 run of 640 steps
# stalled the full model at one seed, docs/recipe.md, "The experiments in bf16"), and 1,200 bf16 steps cost about the
# training minutes 640 fp32 steps did. `quick` trains in fp32: at its tiny widths bf16 is not faster.
RECIPE_OVERRIDES = "hidden_dropout_prob=0,attention_probs_dropout_prob=0,position_embedding_type=rope"  # for `tiny`
SETTINGS = {
    # A few minutes on 2 CPU cores: a check that everything runs, not evidence (2 seeds: no usable intervals). Its
    # curves skip sequences as the full preset's do (`curve_eval_from`), so that the tests run that path.
    "quick": dict(model_size="tiny", config_overrides=RECIPE_OVERRIDES, vocab_size=2000, max_seq_length=64,
                  batch_size=16, max_steps=20, learning_rate=1e-3, warmup_steps=2, weight_decay=0.0, mlm_probability=0.3,
                  eval_steps=5, curve_eval_samples=32, curve_eval_from=32, scored_from=0, seeds=(0, 1), mask_draws=3, probe_sentences=150, vector_sentences=1000,
                  dynamics_sentences=1000, head_sentences=30, probed=("full", "untrained"), parallel=2, bf16=False,
                  cooccurrence_sentences=1000, reference="minilm", n_resamples=200, loss_allocation_every=5,
                  mixing_sentences=30,
                  loss_allocation_samples=8, early_save_every=2, early_save_until=10),
    # The committed runs: docs/findings (seeds 13-17) in fp32 on 2 cores without native bf16; confirmation-v1 and
    # exploration (seeds 3-7, 0-2) on 2 CPU cores with AVX512-BF16: 8 training runs a seed (about 16 minutes a seed in
    # bf16; the default 3 seeds took 67 minutes in all, docs/experiments.md, "Cost") of 1,200 steps x 16 x 128
    # tokens (2.5M tokens, about 1.4 passes over the default corpus's training split) in bf16 autocast, two at a time
    # with one thread each (11% more runs per minute than one at a time with two threads, measured in fp32 on 150
    # steps: 34 s against 38 s a run), then re-scoring, the word-similarity dynamics (10 saved states a run), the
    # floors and the probes of the full and the untrained model at every seed; without native bf16, fp32 (two to four
    # times as long). The `small` shape narrowed to hidden 128 (feed-forward 512): with the untied output layer it
    # learns more in the same minutes than hidden 256 (docs/recipe.md, "The experiments' recipe").
    # Each variant trains at its own learning rate, the best of 2e-3 x 0.5, 1 and 2 on the exploration seeds (and of
    # 5e-4 too where 1e-3 was best: benchmarks/lr_study.py). The pretrained reference (all-MiniLM-L6-v2) is probed on
    # the same corpus, pairs, homonyms and sentences, and answers 5-7 set it beside ours; its probe (about 2
    # minutes on 2 CPU cores) is part of this preset's cost (`--reference none` leaves it out).
    "full": dict(model_size="small", config_overrides="hidden_size=128,intermediate_size=512", vocab_size=8192,
                 max_seq_length=128, batch_size=16, max_steps=1200, learning_rate=2e-3, warmup_steps=60,
                 weight_decay=0.0, mlm_probability=0.3,
                 eval_steps=120, curve_eval_samples=128, curve_eval_from=128, scored_from=128, seeds=(0, 1, 2), mask_draws=3, probe_sentences=1000, vector_sentences=0,
                 dynamics_sentences=4000, head_sentences=200, bf16=None, cooccurrence_sentences=20000, parallel=2,
                 reference="minilm", n_resamples=1000, probed=("full", "untrained"), loss_allocation_every=15,
                 loss_allocation_samples=16, early_save_every=20, early_save_until=400,
                 # per variant, chosen by benchmarks/lr_study.py on seeds 0-2 (docs/findings/PROTOCOL.md) from the
                 # loss on the first 128 validation sequences, which the final scores (`scored_from`) and, since
                 # PROTOCOL.md version 3, the curves during training (`curve_eval_from`) leave out
                 learning_rates={"full": 1e-3, "frozen_embeddings": 1e-3, "frozen_embeddings_matched": 1e-3,
                                 "frozen_embeddings_gain": 1e-3, "identity_qkv": 1e-3, "qkv_from_identity": 2e-3,
                                 "attention_only": 1e-3}),
    # Sized for one GPU (runs unchanged but slowly on CPU). On an H100 with 16 CPU cores (re-timed 2026-11-24,
    # benchmarks/NOTES.md): training 5.3 minutes for the 18 runs, then the probes, about 1.6 minutes a model. Probing
    # all five variants (15 models) made the call about 35 minutes, more than a 30-minute GPU loan; the questions'
    # answers read the probes of the full and the untrained model (only Q5's "last layer against frozen embeddings"
    # line read another), so `scale` probes those two, as `full` does: 6 models, about 10 minutes of the call:
    # the `small` shape (hidden 256) at batch 128 for 800 steps (13M tokens, ~27 passes over the training split, where
    # the GPU pilot's curves near their plateau), bf16 where the GPU has it. The runs after the first train side by
    # side, one process each: a model this small leaves the GPU mostly idle (14 runs side by side trained 3.7x as many
    # tokens/s as one alone). docs/recipe.md, "On a GPU"; the committed run is docs/findings-scale/.
    "scale": dict(model_size="small", config_overrides="", vocab_size=8192, max_seq_length=128,
                  batch_size=128, max_steps=800, learning_rate=2e-3, warmup_steps=80, weight_decay=0.0,
                  mlm_probability=0.3, eval_steps=80, curve_eval_samples=None, scored_from=0, seeds=(0, 1, 2), mask_draws=3,
                  vector_sentences=0, probe_sentences=2000, dynamics_sentences=4000, head_sentences=300, bf16=None,
                  parallel=16, cooccurrence_sentences=20000, reference="minilm", n_resamples=1000,
                  probed=("full", "untrained"),
                  loss_allocation_every=8, loss_allocation_samples=32, early_save_every=10, early_save_until=240),
}
# =============================================================================================================


@dataclass(frozen=True)
class Variant:
    name: str
    description: str  # plain words, used in FINDINGS.md
    config_overrides: str = ""
    freeze_embeddings: bool = False
    trained: bool = True
    save_states: bool = False  # save the weights at every evaluation, for the word-similarity dynamics
    match_parameters: bool = False  # widen intermediate_size until the TRAINABLE parameter count equals the full model's
    loss_allocation: bool = False  # record loss change allocation (run_mlm --loss_allocation) every k steps
    # States every settings["early_save_every"] steps up to settings["early_save_until"] (run_mlm --early_save_every),
    # for the heads' dynamics while the loss leaves its unigram plateau (head_dynamics.early_curves).
    early_states: bool = False
    shuffle_labels: bool = False  # masked targets permuted across each batch (run_mlm --shuffle_labels): no linguistic signal
    # The SETTINGS entry whose value ends this variant's training (run_mlm --stop_at_step); the learning-rate schedule
    # stays the preset's max_steps, so that each of its steps matches the full run's. None: the preset's max_steps.
    max_steps: str | None = None


VARIANTS = (
    Variant("full", "full model: trained embeddings, learned W_Q/W_K/W_V/W_O, feed-forward", save_states=True,
            loss_allocation=True, early_states=True),
    Variant("frozen_embeddings", "word (and any learned position) embeddings frozen at their random initial values",
            freeze_embeddings=True, save_states=True),
    # Freezing removes the embeddings from the trainable parameters: widening the feed-forward gives them back, so
    # that a gap to the full model is "embeddings not trained", not "less capacity" (the unmatched one stays beside).
    Variant("frozen_embeddings_matched", "embeddings frozen at their random initial values, feed-forward widened to "
            "the full model's trainable parameter count", freeze_embeddings=True, match_parameters=True),
    # Frozen random rows keep their initial norm (about 0.23 at the recipe's init); one learned scale lets the model
    # choose it, so a gap to the full model is not only "the embeddings' scale was never learned".
    Variant("frozen_embeddings_gain", "embeddings frozen at their random initial values with one learned scale, "
            "feed-forward widened to the full model's trainable parameter count", config_overrides="embedding_gain=true",
            freeze_embeddings=True, match_parameters=True),
    Variant("identity_qkv", "W_Q = W_K = W_V = I (W_O kept), feed-forward widened to the full model's parameter count",
            config_overrides="qkv_projection=identity", match_parameters=True),
    Variant("qkv_from_identity", "learned W_Q, W_K, W_V initialised at I", config_overrides="qkv_init=identity"),
    Variant("attention_only", "attention-only blocks: no feed-forward sublayer", config_overrides="intermediate_size=0"),
    # The heads' matched-step control (question 4): divergence between heads that any training brings, without signal.
    Variant("shuffled_labels", "the full model trained on masked targets permuted across each batch (token "
            "frequencies, no link to context), for the early steps only: a control for the heads over training",
            shuffle_labels=True, early_states=True, max_steps="early_save_until"),
    Variant("untrained", "the full model at initialisation, same seed, not trained (the untrained floor)",
            trained=False),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)


def log(message):
    print(f"[experiments] {message}", flush=True)


def base_overrides(settings: dict) -> str:
    """Every trained variant unties the output layer, so that 'are the input embeddings trained?' is not also
    'is the output layer trained?'."""
    return ",".join(x for x in ("tie_word_embeddings=false", settings["config_overrides"]) if x)


def build_config(settings: dict, overrides: str, vocab_size: int):
    from hf_minattn import MinAttnConfig
    from hf_minattn.arguments import MODEL_SIZES

    config = MinAttnConfig(**MODEL_SIZES[settings["model_size"]], vocab_size=vocab_size)
    if overrides:
        config.update_from_string(overrides)
    return config


def count_parameters(config, frozen_embeddings: bool = False) -> int:
    """Trainable parameters of `MinAttnForMaskedLM(config)`, built on the meta device (no memory, no random draws):
    all of them, or, with `frozen_embeddings`, all but the input embeddings (word and any learned positions: the
    nn.Embedding modules, which is what run_mlm's --freeze_embeddings freezes; the untied output layer is a Linear)."""
    import torch

    from hf_minattn import MinAttnForMaskedLM

    with torch.device("meta"):
        return MinAttnForMaskedLM(config).num_parameters(exclude_embeddings=frozen_embeddings)


def matched_intermediate_size(settings: dict, variant: Variant, vocab_size: int) -> dict:
    """The intermediate_size at which `variant` has as many trainable parameters as the full model, within half a
    feed-forward unit (a unit is one row of up_proj, its bias and one column of down_proj)."""
    full = build_config(settings, base_overrides(settings), vocab_size)
    target = count_parameters(full)
    overrides = ",".join(x for x in (base_overrides(settings), variant.config_overrides) if x)
    config = build_config(settings, overrides, vocab_size)
    size = config.intermediate_size
    if size == 0:
        raise ValueError(f"variant {variant.name!r} has no feed-forward sublayer to widen")
    start = count_parameters(config, variant.freeze_embeddings)
    config.intermediate_size = size + 1
    unit = count_parameters(config, variant.freeze_embeddings) - start
    widened = size + round((target - start) / unit)
    config.intermediate_size = widened
    return {"intermediate_size": widened, "parameters": count_parameters(config, variant.freeze_embeddings),
            "full_parameters": target, "unit_parameters": unit, "unmatched_intermediate_size": size,
            "unmatched_parameters": start, "trainable_only": variant.freeze_embeddings}


def variant_named(name: str) -> Variant:
    for variant in VARIANTS:
        if variant.name == name:
            return variant
    raise ValueError(f"no variant {name!r}; have {list(VARIANT_NAMES)}")


def variant_overrides(settings: dict, variant: Variant, vocab_size: int) -> str:
    parts = [base_overrides(settings), variant.config_overrides]
    if variant.match_parameters:
        parts.append(f"intermediate_size={matched_intermediate_size(settings, variant, vocab_size)['intermediate_size']}")
    return ",".join(x for x in parts if x)


def run_training(args: list[str], log_path: str, threads: int | None = None) -> None:
    """`python -m hf_minattn.run_mlm ARGS` in a fresh process (runs share no state), logged to a file; its loss
    lines are echoed as progress. `threads` caps the process's torch threads (for runs side by side). A RunFailed
    names the log of a run that failed; the process is ended if the call is interrupted (`side_by_side.run_logged`)."""
    command = [sys.executable, "-m", "hf_minattn.run_mlm", *args]
    # Unbuffered: a run's lines reach its log file as they are printed, so a long run shows its progress.
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"OMP_NUM_THREADS": str(threads)} if threads else {})}

    def echo(line):
        if "'eval_loss'" in line:
            log("  " + line.strip()[:160])

    run_logged(command, log_path, env, echo)


def common_arguments(settings: dict, seed: int, variant: str = "full", trains_tokenizer: bool = True) -> list[str]:
    from .learning_rates import variant_learning_rate

    args = [  # --vocab_size only where run_mlm trains the tokenizer: beside --tokenizer_name it is refused as unused
        "--model_size", settings["model_size"], *(["--vocab_size", str(settings["vocab_size"])] * trains_tokenizer),
        "--max_seq_length", str(settings["max_seq_length"]),
        "--per_device_train_batch_size", str(settings["batch_size"]),
        "--per_device_eval_batch_size", str(settings["batch_size"]),
        "--learning_rate", str(variant_learning_rate(settings, variant)),
        "--warmup_steps", str(settings["warmup_steps"]),
        "--weight_decay", str(settings["weight_decay"]), "--mlm_probability", str(settings["mlm_probability"]),
        "--seed", str(seed), "--report_to", "none",
        "--logging_steps", str(settings["eval_steps"]), "--eval_strategy", "steps",
        "--eval_steps", str(settings["eval_steps"]), "--save_strategy", "no", "--disable_tqdm", "true",
        "--max_steps", str(settings["max_steps"]),
    ]
    if settings["bf16"] is not None:  # None: run_mlm's default, bf16 where the hardware makes it fast
        args += ["--bf16", str(settings["bf16"]).lower()]
    if settings["curve_eval_samples"]:  # the curve during training; the final numbers re-score from `scored_from`
        args += ["--max_eval_samples", str(settings["curve_eval_samples"])]
    if settings.get("curve_eval_from"):  # and the loss allocation's batch, which run_mlm takes from the same set
        args += ["--skip_eval_samples", str(settings["curve_eval_from"])]
    return args


def curve_sequences(settings: dict, total: int) -> range:
    """The validation sequences (of `total`) run_mlm evaluates during training: the curves, the loss allocation's
    batch and the heads' plateau exit. From `curve_eval_from` (0 in presets and results.json files before it), at
    most `curve_eval_samples` of them (None: all)."""
    start = min(settings.get("curve_eval_from", 0), total)
    count = settings["curve_eval_samples"] or total
    return range(start, min(start + count, total))


def variant_arguments(settings: dict, variant: Variant, seed: int, folder: str, tokenizer_dir: str | None = None,
                      measurements: bool = True) -> list[str]:
    """run_mlm's arguments for one (variant, seed) run into `folder`, reading `tokenizer_dir`'s vocabulary where
    given; with `measurements`, the variant's saved states and loss allocation too (what the phases after training
    read; training itself is unchanged by them)."""
    vocab = settings["vocab_size"]
    if tokenizer_dir is not None:
        from transformers import AutoTokenizer

        vocab = len(AutoTokenizer.from_pretrained(tokenizer_dir))
    rate_of = "full" if variant.shuffle_labels else variant.name  # the control matches the full run step for step
    args = ["--output_dir", folder, *common_arguments(settings, seed, rate_of, trains_tokenizer=tokenizer_dir is None),
            "--config_overrides", variant_overrides(settings, variant, vocab)]
    if tokenizer_dir is not None:  # every run reads the same vocabulary
        args += ["--tokenizer_name", tokenizer_dir]
    if variant.freeze_embeddings:
        args += ["--freeze_embeddings", "true"]
    if variant.shuffle_labels:
        args += ["--shuffle_labels", "true"]
    if variant.max_steps is not None:
        args += ["--stop_at_step", str(run_steps(settings, variant))]
    if measurements and variant.loss_allocation:  # Lan et al.'s LCA on a fixed batch of validation sequences
        args += ["--loss_allocation", "true", "--loss_allocation_every", str(settings["loss_allocation_every"]),
                 "--loss_allocation_samples", str(settings["loss_allocation_samples"])]
    return args + (saved_state_arguments(settings, variant) if measurements else [])


def saved_state_arguments(settings: dict, variant: Variant) -> list[str]:
    """The flags of the variant's saved states: model only (no optimizer state), every one kept. The early states
    leave the Trainer's rotation (early_states/) and do not count against --save_total_limit: their share of the
    limit below is a margin, not needed."""
    from hf_minattn.early_states import early_steps

    early = early_steps(settings.get("early_save_every", 0), settings.get("early_save_until", 0)) if variant.early_states else []
    states = len(early) + (-(-settings["max_steps"] // settings["eval_steps"]) if variant.save_states else 0)
    args = ["--save_only_model", "true", "--save_total_limit", str(states)] if states else []
    if variant.save_states:  # at every evaluation: for the dynamics
        args += ["--save_strategy", "steps", "--save_steps", str(settings["eval_steps"])]
    if early:
        args += ["--early_save_every", str(settings["early_save_every"]), "--early_save_until",
                 str(settings["early_save_until"])]
    return args


def model_folder(out: str, variant: str, seed: int) -> str:
    return os.path.join(out, "models", variant, f"seed{seed}")


def run_steps(settings: dict, variant: Variant) -> int:
    """The steps `variant` trains for: the preset's, or the SETTINGS entry that stops it early."""
    return settings[variant.max_steps] if variant.max_steps is not None else settings["max_steps"]


def training_minutes_left(finished: list, steps_left: int, parallel: int) -> float:
    """Minutes of training left: `steps_left` (those of the runs not finished, whole: an upper bound) at the seconds
    per step of the `finished` runs ([(steps, seconds)]), `parallel` runs at a time."""
    steps, seconds = map(sum, zip(*finished))
    return seconds / steps * steps_left / parallel / 60


def side_by_side_order(jobs: list) -> list:
    """The (seed, Variant) jobs in the order the workers take them: the runs that stop early (the shuffled-label
    control, a third of the steps) last, so that the workers finish together instead of one training a whole run
    alone at the end; otherwise seed by seed, as listed."""
    return sorted(jobs, key=lambda job: job[1].max_steps is not None)  # sorted() is stable


def train_variants(out: str, settings: dict, seeds, also=None) -> dict[str, dict[int, str]]:
    """Train every variant at every seed and save the untrained model of each seed; returns {variant: {seed:
    folder}}. Folders already finished are kept. Every run reads one tokenizer, trained first (`shared_tokenizer`);
    with `settings["parallel"]` > 1 the runs then go that many at a time, one thread each (small models gain
    little from a second thread, and the runs' start-up, mostly imports, overlaps), and `also(tokenizer folder)`'s
    callables after them on the same workers (`run_side_by_side`)."""
    folders = {v.name: {seed: model_folder(out, v.name, seed) for seed in seeds} for v in VARIANTS}
    jobs = [(seed, v) for seed in seeds for v in VARIANTS if v.trained]
    done = [job for job in jobs if finished_folder(folders[job[1].name][job[0]])]
    todo = [job for job in jobs if job not in done]
    tokenizer_dir = folders[done[0][1].name][done[0][0]] if done else None
    parallel = min(settings.get("parallel", 1), os.cpu_count() or 1)  # each run side by side has one CPU thread

    finished = []  # (steps, seconds) of the runs this call finished, for the time left
    resumed = {job: resume_step(folders[job[1].name][job[0]]) for job in todo}  # killed runs: their steps trained

    def train(job, threads=None):
        seed, variant = job
        folder = folders[variant.name][seed]
        unfinished_run(folder, resumed[job])
        log(f"[{jobs.index(job) + 1}/{len(jobs)}] seed {seed}, {variant.name}: {variant.description}")
        start = time.perf_counter()
        args = variant_arguments(settings, variant, seed, folder, tokenizer_dir) + (["--resume", "true"] if resumed[job] else [])
        log_path = os.path.join(out, "logs", f"{variant.name}-seed{seed}.log")
        if resumed[job] and os.path.isfile(log_path):  # the killed session's lines, kept beside the resumed run's log
            os.replace(log_path, log_path.removesuffix(".log") + ".killed.log")
        run_training(args, log_path, threads)
        seconds = time.perf_counter() - start
        finished.append((run_steps(settings, variant) - resumed[job], seconds))
        left = sum(run_steps(settings, v) - resumed[(s, v)] for s, v in todo) - sum(steps for steps, _ in finished)
        remaining = f", about {training_minutes_left(finished, left, parallel):.0f} min of training left" if left else ""
        log(f"  seed {seed}, {variant.name}: done in {seconds:.0f}s; {len(finished)} of {len(todo)} runs done{remaining}")

    if todo and tokenizer_dir is None:
        tokenizer_dir = shared_tokenizer(out, settings, todo[0][0])
    extra = (lambda: also(tokenizer_dir)) if also is not None and todo else None
    run_side_by_side(train, side_by_side_order(todo), parallel, extra)
    for seed in seeds:
        if not holds_saved_model(folders["untrained"][seed]):
            initialise_untrained(folders["untrained"][seed], folders["full"][seed], seed)
    return folders


# What a call may change on a folder an earlier call wrote: how many runs go side by side, and the pretrained reference
# (probed on its own, beside the models). Every other setting shaped the models and numbers already there.
FREE_SETTINGS = ("parallel", "reference", "seeds")


def check_same_settings(out: str, settings: dict) -> None:
    """Keep `out/settings.json`, the settings that trained the models in `out`: written by the first call, compared
    by every later one. A ValueError names each setting that differs (a rerun would keep the first call's models and
    numbers, say --quick's 20 steps under the full preset's name), a damaged file, or results without the file (it is
    written before them: another run's, a copy of committed findings, replaced hours later). An older folder is kept."""
    path = os.path.join(out, "settings.json")
    now = json.loads(json.dumps({k: v for k, v in settings.items() if k not in FREE_SETTINGS}, default=str))  # as kept
    held = [name for name in ("results.json", "FINDINGS.md") if os.path.lexists(os.path.join(out, name))]
    if held and not os.path.lexists(path):
        raise ValueError(f"--out {out} holds another run's {', '.join(held)} but no settings.json (which every call "
                         "writes first): this call would replace them; use another --out, or move or remove them")
    if not os.path.isfile(path):
        os.makedirs(out, exist_ok=True)
        write_json_atomically(path, now, indent=1)
        return
    damaged = "; remove it (the next call writes it anew) or use another --out"
    try:
        before = read_json(path)  # names the file
    except ValueError as error:
        raise ValueError(f"{error}{damaged}") from None
    if not isinstance(before, dict):
        raise ValueError(f"{path} holds a {type(before).__name__}, not the settings a call writes there{damaged}")
    differ = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    if differ:
        shown = "; ".join(f"{k}: {before.get(k)!r} there, {now.get(k)!r} now" for k in differ)
        raise ValueError(f"--out {out} holds models trained with other settings ({shown}); use another --out, or the "
                         "preset and --precision that folder was trained with")


def resume_step(folder: str) -> int:
    """The step a run killed in `folder` resumes from (run_mlm's --resume: its newest complete checkpoint, which keeps
    the optimizer state, model-only saved states or not); 0 where there is none."""
    from hf_minattn.run_folder import last_complete_checkpoint

    checkpoint = last_complete_checkpoint(folder, 1) if os.path.isdir(folder) else None
    return int(os.path.basename(checkpoint).rsplit("-", 1)[1]) if checkpoint else 0


def unfinished_run(folder: str, step: int) -> None:
    """Says what becomes of a run killed in `folder` (if any): resumed from its checkpoint of `step`, or, at 0,
    removed, to be trained again from the start."""
    if step:
        log(f"  {folder} holds an unfinished run: resuming it from checkpoint-{step}")
    elif os.path.isdir(folder):
        log(f"  {folder} holds an unfinished run: training it again from the start")
        shutil.rmtree(folder)


def finished_folder(folder: str) -> bool:
    """Whether run_mlm finished the run in `folder`: its evaluation and trainer_state.json, which it writes last (a
    run killed between them has its curve and steps missing from trainer_metrics)."""
    return all(os.path.isfile(os.path.join(folder, name)) for name in ("eval_results.json", "trainer_state.json"))


def holds_saved_model(folder: str) -> bool:
    """Whether `folder` holds a whole saved model, weights and tokenizer: config.json alone does not say so, as
    save_pretrained writes it first and a kill may come before the rest."""
    return all(os.path.isfile(os.path.join(folder, name)) for name in ("config.json", "model.safetensors",
                                                                          "tokenizer.json"))


def shared_tokenizer(out: str, settings: dict, seed: int) -> str:
    """The tokenizer every run reads, trained on the training split as the full run of `seed` would train it, into
    out/tokenizer, with the sequences it cuts cached; then no run waits for another's tokenizer."""
    from hf_minattn import run_mlm

    folder = os.path.join(out, "tokenizer")
    log(f"training the tokenizer every run reads: {folder}")
    full = next(v for v in VARIANTS if v.name == "full")
    return run_mlm.shared_tokenizer(variant_arguments(settings, full, seed, folder, measurements=False))


def initialise_untrained(folder: str, full_folder: str, seed: int) -> None:
    """The full variant's architecture and tokenizer initialised as run_mlm does (`initial_model`): the state the
    full (and frozen) run of this seed started from. Saved into a hidden folder renamed when whole: a kill part-way
    through save_pretrained would leave files that `holds_saved_model` takes for a saved model."""
    from transformers import AutoTokenizer

    from hf_minattn import MinAttnConfig
    from hf_minattn.initialization import initial_model

    model = initial_model(MinAttnConfig.from_pretrained(full_folder), seed)
    partial = os.path.join(os.path.dirname(folder), f".partial-{os.path.basename(folder)}")
    shutil.rmtree(partial, ignore_errors=True)  # left by a save killed half-way
    model.save_pretrained(partial)
    AutoTokenizer.from_pretrained(full_folder).save_pretrained(partial)
    shutil.rmtree(folder, ignore_errors=True)
    os.rename(partial, folder)
