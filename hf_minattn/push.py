"""`hf-minattn push DIR REPO_ID`: upload a saved model folder to the Hugging Face Hub, in one commit.

A folder written by `training/run_mlm.py` brings its model card; a bare `save_pretrained` folder gets a minimal
valid one, generated here. `--dry-run` works offline: it checks REPO_ID, lists the files that would be uploaded and
checks the card's metadata. The options `--revision`, `--create-pr`, `--private` and `--token` are huggingface_hub's.

Refused unless `--force`: an unfinished training run (its card says training is in progress, or it holds checkpoints
but no trainer_state.json or all_results.json of a run that ended). Always refused: a sharded model missing a shard.

Not uploaded: checkpoints (`checkpoint-*`, and `early_states/`, with their optimizer states), `training_args.bin`
(a pickle), the states a checkpoint resumes from (optimizer.pt, scheduler.pt, scaler.pt, rng_state*.pth: pickles too;
loss_allocation_start.safetensors: a copy of the weights), so a checkpoint folder pushed on its own uploads its model;
private (`_*`) and half-written (`*.tmp`) files, at any depth; and `probes/`, where `make demo` writes the probe
report: an analysis of the model (tens of MB of figures and JSON), which the model card does not use. The listing
names what is left out.
"""

import argparse
import json
from pathlib import Path
from typing import NamedTuple

from huggingface_hub import CommitOperationAdd, HfApi, ModelCard, ModelCardData
from huggingface_hub.utils import filter_repo_objects

from hf_minattn.checks import read_json_object
from hf_minattn.cli import OneLineArgumentParser
from hf_minattn.early_states import EARLY_STATES, RESUME_STATES
from hf_minattn.loss_allocation import INTERVAL_START_FILE
from hf_minattn.model_card import IN_PROGRESS_CARD, validate_model_card  # the one text trained_model_in also reads
from hf_minattn.model_source import TRANSPORT_FAILURES, hub_errors, require_hub_id

# Same as what Trainer.push_to_hub leaves out: checkpoints and private files; plus our interrupted writes, and
# training_args.bin and a checkpoint's resume states (pickles: loading one runs code, and they hold nothing the model
# needs; the Trainer's pushes of its checkpoints upload the model files only), the loss allocation's among them (an
# fp32 copy of the weights at its open interval's start). filter_repo_objects matches each pattern against the whole
# relative path, so each one is also given under any folder.
TOP_LEVEL_IGNORED = ["_*", "checkpoint-*", "*.tmp", ".git/*", ".cache/*", "training_args.bin", *RESUME_STATES,
                     INTERVAL_START_FILE]
IGNORE_PATTERNS = [*TOP_LEVEL_IGNORED, *(f"*/{p}" for p in TOP_LEVEL_IGNORED), f"{EARLY_STATES}/*", "probes/*"]
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
# What the end of a training leaves at the top of its folder (run_mlm.py writes trainer_state.json last, after the
# model and the card; Trainer.save_metrics writes all_results.json): checkpoints without either are a run cut short.
FINISHED_RUN_FILES = ("trainer_state.json", "all_results.json")


class Head(NamedTuple):
    """What the Hub shows for a class a MinAttn folder can hold (config.json "architectures") and how it loads."""

    pipeline_tag: str
    auto_class: str  # the transformers Auto class that loads it with its head


HEADS = {"MinAttnForMaskedLM": Head("fill-mask", "AutoModelForMaskedLM"),
         "MinAttnForSequenceClassification": Head("text-classification", "AutoModelForSequenceClassification"),
         "MinAttnForTokenClassification": Head("token-classification", "AutoModelForTokenClassification"),
         "MinAttnModel": Head("feature-extraction", "AutoModel")}


def files_to_upload(folder) -> list[Path]:
    """The files of `folder` (relative paths) that `push` uploads."""
    folder = Path(folder)
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return [Path(p) for p in filter_repo_objects(paths, ignore_patterns=IGNORE_PATTERNS)]


def left_out(folder, uploaded: list[Path]) -> list[str]:
    """What `push` leaves out of `folder`: each file not in `uploaded`, or its outermost folder ("checkpoint-4/")
    when nothing under that folder is uploaded."""
    folder, kept = Path(folder), {p.as_posix() for p in uploaded}
    kept_folders = {parent.as_posix() for p in uploaded for parent in p.parents}
    names = set()
    for path in (p.relative_to(folder) for p in folder.rglob("*") if p.is_file()):
        if path.as_posix() not in kept:
            outer = [parent for parent in reversed(path.parents[:-1]) if parent.as_posix() not in kept_folders]
            names.add(f"{outer[0].as_posix()}/" if outer else path.as_posix())
    return sorted(names)


def architecture_of(folder: Path) -> str:
    """The head class config.json names; a ValueError naming the file when it is no config of a MinAttn head that
    from_pretrained would build (what the upload would otherwise leave for its users to find)."""
    from hf_minattn import MinAttnConfig

    config = read_json_object(folder / "config.json", f"model folder {str(folder)!r}")
    architectures = config.get("architectures")
    if not (isinstance(architectures, list) and architectures and architectures[0] in HEADS):
        raise ValueError(f"{folder}: config.json has \"architectures\": {architectures!r}; expected a list naming one "
                         f"of {sorted(HEADS)}")
    try:
        MinAttnConfig.from_dict(config)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{folder / 'config.json'} does not load as a MinAttn config: {error}") from None
    return architectures[0]


def check_weight_files(folder: Path, files: list[Path]) -> None:
    """A ValueError naming the first weight file among `files` (those to upload, relative to `folder`) whose
    safetensors header cannot be read (empty, truncated, not safetensors): from_pretrained would fail on it after the
    upload."""
    from safetensors import safe_open

    for path in sorted(folder / f for f in files if f.parent == Path(".") and f.suffix == ".safetensors"):
        try:
            with safe_open(path, framework="pt") as weights:
                weights.keys()
        except Exception as error:  # safetensors raises its own SafetensorError, or OSError
            raise ValueError(f"{path} is not a readable safetensors file ({error}); save the model again with "
                             "save_pretrained") from None


def training_record(folder: Path) -> str:
    """What a generated card can say of how the weights were trained: the step of a checkpoint's (or a run's)
    trainer_state.json, which is uploaded beside them, or that nothing says."""
    try:
        state = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
        step, last = int(state["global_step"]), int(state["max_steps"])
    except (OSError, ValueError, KeyError, TypeError):  # none, or not the Trainer's
        return "saved with `save_pretrained`. No training record came with it: how it was trained is not stated here."
    return (f"saved by a training run at step {step} of {last}. Its `trainer_state.json`, uploaded beside it, holds "
            "what the run logged until then; how the run was set up is not stated here.")


def minimal_model_card(folder: Path, repo_id: str, architecture: str) -> ModelCard:
    """A valid card for a folder saved with `save_pretrained` (no training record): metadata and how to load it, with
    the Auto class of its head (AutoModel would load the encoder and drop the head) and its tokenizer if it has one."""
    head = HEADS[architecture]
    data = ModelCardData(license="apache-2.0", library_name="transformers", pipeline_tag=head.pipeline_tag,
                         tags=["minattn", "hf_minattn", "custom_code"])
    name = repo_id.split("/")[-1]
    tokenizer = (folder / "tokenizer_config.json").is_file()
    imports = f"{head.auto_class}, AutoTokenizer" if tokenizer else head.auto_class
    # The tokenizer wants the flag too: config.json has auto_map, and without it transformers asks on the terminal.
    load_tokenizer = (f"tokenizer = AutoTokenizer.from_pretrained(\"{repo_id}\", trust_remote_code=True)\n"
                      if tokenizer else "")
    text = (f"---\n{data.to_yaml()}\n---\n\n# {name}\n\nA MinAttn model (`{architecture}`) from the `hf_minattn` package, "
            + training_record(folder) + ("" if tokenizer else " No tokenizer was saved with it.") + "\n\n"
            "## How to use\n\nThe modeling code is saved next to the weights (it needs transformers >= 5):\n\n"
            f"```python\nfrom transformers import {imports}\n\n{load_tokenizer}model = {head.auto_class}.from_pretrained("
            f"\"{repo_id}\", trust_remote_code=True)\n```\n")
    return ModelCard(text)


def missing_shards(folder: Path) -> list[str]:
    """The weight files that the folder's model.safetensors.index.json names and the folder lacks (none without an
    index): from_pretrained fails on the first one, after the upload."""
    index = folder / WEIGHT_FILES[1]
    if not index.is_file():
        return []
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{index}: expected a save_pretrained index with a \"weight_map\" of tensor names to "
                         f"files ({type(error).__name__}: {error})") from None
    return [name for name in shards if not (folder / str(name)).is_file()]


def unfinished_run(folder: Path) -> str | None:
    """Why `folder` holds a training run that has not ended, or None (a plain save_pretrained folder holds no
    checkpoints and no card, or its own card). Its weights are the initial ones or a checkpoint's, not the final."""
    card = folder / "README.md"
    if card.is_file() and IN_PROGRESS_CARD in card.read_text(encoding="utf-8", errors="replace"):
        return "its model card says that training is in progress (the weights are not the final ones)"
    checkpoints = sorted(p.name for p in folder.glob("checkpoint-*") if p.is_dir())
    if (folder / EARLY_STATES).is_dir():
        checkpoints.append(f"{EARLY_STATES}/")
    if checkpoints and not any((folder / name).is_file() for name in FINISHED_RUN_FILES):
        return (f"it holds {', '.join(checkpoints)} but no {' or '.join(FINISHED_RUN_FILES)} of a training that "
                "ended (a run cut short)")
    return None


def check_model_folder(folder, repo_id: str = "model", force: bool = False) -> tuple[list[Path], ModelCard | None]:
    """Raise if `folder` is not a saved model folder, holds an unfinished run (unless `force`), or its card is
    invalid; return the files to upload and the card to add (None when the folder has its own README.md)."""
    folder = Path(folder)
    if folder.is_file():
        raise ValueError(f"Model folder {folder} is a file; expected a folder written by training/run_mlm.py or "
                         "save_pretrained")
    if not folder.is_dir():
        raise FileNotFoundError(f"Model folder {folder} does not exist")
    missing = [] if (folder / "config.json").is_file() else ["config.json"]
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    missing += [f"{name} (named in {WEIGHT_FILES[1]})" for name in missing_shards(folder)]
    if missing:
        raise ValueError(f"{folder} is not a saved model folder: missing {', '.join(missing)}")
    architecture = architecture_of(folder)
    files = files_to_upload(folder)
    check_weight_files(folder, files)
    unfinished = None if force else unfinished_run(folder)
    if unfinished:
        raise ValueError(f"{folder} holds an unfinished training run: {unfinished}; push the folder of the finished "
                         "run, or pass --force (force=True) to push this one anyway")
    generated = None
    if (folder / "README.md").is_file():
        validate_model_card(folder / "README.md", pipeline_tag=HEADS[architecture].pipeline_tag)
    else:
        generated = minimal_model_card(folder, repo_id, architecture)
    return files, generated


def push_folder(folder, repo_id: str, dry_run: bool = False, private: bool | None = None, revision: str | None = None,
                create_pr: bool = False, token: str | None = None, commit_message: str = "Upload MinAttn model",
                force: bool = False) -> list[Path]:
    """Upload `folder` to the model repository `repo_id` (created if needed) in one commit, on `revision` (a branch,
    created from the default branch if it does not exist) or as a pull request (against `revision` when given); with
    `dry_run`, only check; `force` pushes an unfinished training run too (see `unfinished_run`). Returns the files
    uploaded (or that would be), README.md included when it is generated."""
    require_hub_id(repo_id, "REPO_ID")
    folder = Path(folder)
    files, generated = check_model_folder(folder, repo_id, force=force)
    if not dry_run:
        operations = [CommitOperationAdd(path_in_repo=f.as_posix(), path_or_fileobj=str(folder / f)) for f in files]
        if generated is not None:
            operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=str(generated).encode()))
        with hub_errors(repo_id, revision, failures=TRANSPORT_FAILURES):
            api = HfApi(token=token)
            api.create_repo(repo_id, private=private, exist_ok=True)
            _create_branch(api, repo_id, revision, create_pr)
            api.create_commit(repo_id, operations, commit_message=commit_message, revision=revision,
                              create_pr=create_pr)
    return files + ([Path("README.md")] if generated is not None else [])


def _create_branch(api: HfApi, repo_id: str, revision: str | None, create_pr: bool) -> None:
    """Make branch `revision` exist. A pull request needs its target branch too, but whoever opens one may have no
    write access: there the branch is only created when it is missing (and creating it then needs write access)."""
    if revision is None or (create_pr and api.revision_exists(repo_id, revision)):
        return
    api.create_branch(repo_id, branch=revision, exist_ok=True)


def main(argv=None) -> int:
    parser = OneLineArgumentParser(prog="hf-minattn push", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", metavar="DIR", help="a folder written by training/run_mlm.py or save_pretrained")
    parser.add_argument("repo_id", metavar="REPO_ID", help="the Hub model repository, e.g. user/minattn-wiki")
    parser.add_argument("--dry-run", action="store_true", help="list what would be uploaded and check the card; upload nothing")
    parser.add_argument("--revision", help="the branch to commit to, or to open the pull request against "
                        "(created if needed; default: the repository's default branch)")
    parser.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing directly")
    parser.add_argument("--private", action="store_true", default=None, help="create the repository as private")
    parser.add_argument("--token", help="a Hub token (default: HF_TOKEN or the one saved by `hf auth login`)")
    parser.add_argument("--commit-message", default="Upload MinAttn model", help="message of the Hub commit")
    parser.add_argument("--force", action="store_true", help="push an unfinished training run anyway (its card says "
                        "training is in progress, or it holds checkpoints but no trainer_state.json or all_results.json)")
    args = parser.parse_args(argv)
    files = push_folder(args.folder, args.repo_id, dry_run=args.dry_run, private=args.private, revision=args.revision,
                        create_pr=args.create_pr, token=args.token, commit_message=args.commit_message,
                        force=args.force)
    where = [f"revision {args.revision}" if args.revision else "", "as a pull request" if args.create_pr else "",
             "private" if args.private else ""]
    verb = "Would upload" if args.dry_run else "Uploaded"
    sizes = {f: (Path(args.folder) / f).stat().st_size if (Path(args.folder) / f).is_file() else None for f in files}
    total = sum(s for s in sizes.values() if s)
    print(f"{verb} {len(files)} files ({total / 1e6:.1f} MB) to https://huggingface.co/{args.repo_id}"
          + "".join(f", {w}" for w in where if w) + ":")
    for f, size in sizes.items():
        print(f"  {f}  ({'generated model card' if size is None else f'{size:,} bytes'})")
    skipped = left_out(args.folder, files)
    if skipped:  # the user sees that the checkpoints, pickles and resume states stay behind, not only what goes
        print(f"Left out: {', '.join(skipped)}")
    print("Model card metadata: valid")
    return 0
