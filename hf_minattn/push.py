"""`hf-minattn push DIR REPO_ID`: upload a saved model folder to the Hugging Face Hub, in one commit.

A folder written by `training/run_mlm.py` brings its model card; a bare `save_pretrained` folder gets a minimal
valid one, generated here. `--dry-run` works offline: it lists the files that would be uploaded and checks the
card's metadata. The options `--revision`, `--create-pr`, `--private` and `--token` are huggingface_hub's.
"""

import argparse
import json
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, ModelCard, ModelCardData
from huggingface_hub.utils import filter_repo_objects

from hf_minattn.model_card import validate_model_card

# Same as what Trainer.push_to_hub leaves out: checkpoints and private files; plus our interrupted writes, and
# training_args.bin (a pickle: loading it runs code, and it holds nothing the model needs).
IGNORE_PATTERNS = ["_*", "checkpoint-*", "*.tmp", ".git/*", ".cache/*", "training_args.bin"]
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
# The Hub's pipeline for each class a MinAttn folder can hold (config.json "architectures").
PIPELINE_TAGS = {"MinAttnForMaskedLM": "fill-mask", "MinAttnForSequenceClassification": "text-classification",
                 "MinAttnForTokenClassification": "token-classification",
                 "MinAttnModel": "feature-extraction"}


def files_to_upload(folder) -> list[Path]:
    """The files of `folder` (relative paths) that `push` uploads."""
    folder = Path(folder)
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return [Path(p) for p in filter_repo_objects(paths, ignore_patterns=IGNORE_PATTERNS)]


def architecture_of(folder: Path) -> str:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{folder / 'config.json'}: expected a config.json written by save_pretrained ({error})") from None
    architecture = (config.get("architectures") or [None])[0]
    if architecture not in PIPELINE_TAGS:
        raise ValueError(f"{folder}: config.json names architecture {architecture!r}; expected one of "
                         f"{sorted(PIPELINE_TAGS)}")
    return architecture


def minimal_model_card(folder: Path, repo_id: str, architecture: str) -> ModelCard:
    """A valid card for a folder saved with `save_pretrained` (no training record): metadata and how to load it."""
    data = ModelCardData(license="apache-2.0", library_name="transformers", pipeline_tag=PIPELINE_TAGS[architecture],
                         tags=["minattn", "hf_minattn", "custom_code"])
    name = repo_id.split("/")[-1]
    text = (f"---\n{data.to_yaml()}\n---\n\n# {name}\n\nA MinAttn model (`{architecture}`) from the `hf_minattn` package, "
            "saved with `save_pretrained`. No training record came with it: how it was trained is not stated here.\n\n"
            "## How to use\n\nThe modeling code is saved next to the weights (it needs transformers >= 5):\n\n"
            f"```python\nfrom transformers import AutoModel\n\nmodel = AutoModel.from_pretrained(\"{repo_id}\", "
            "trust_remote_code=True)\n```\n")
    return ModelCard(text)


def check_model_folder(folder, repo_id: str = "model") -> tuple[list[Path], ModelCard | None]:
    """Raise if `folder` is not a saved model folder, or its card is invalid; return the files to upload and the
    card to add (None when the folder has its own README.md)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"Model folder {folder} does not exist")
    missing = [] if (folder / "config.json").is_file() else ["config.json"]
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        raise ValueError(f"{folder} is not a saved model folder: missing {', '.join(missing)}")
    architecture = architecture_of(folder)
    generated = None
    if (folder / "README.md").is_file():
        validate_model_card(folder / "README.md", pipeline_tag=PIPELINE_TAGS[architecture])
    else:
        generated = minimal_model_card(folder, repo_id, architecture)
    return files_to_upload(folder), generated


def push_folder(folder, repo_id: str, dry_run: bool = False, private: bool | None = None, revision: str | None = None,
                create_pr: bool = False, token: str | None = None,
                commit_message: str = "Upload MinAttn model") -> list[Path]:
    """Upload `folder` to the model repository `repo_id` (created if needed) in one commit, on `revision` (a branch,
    created if needed) or as a pull request; with `dry_run`, only check. Returns the files uploaded (or that
    would be), README.md included when it is generated."""
    if repo_id.count("/") > 1 or not repo_id.strip("/"):
        raise ValueError(f"REPO_ID must look like 'name' or 'user/name', got {repo_id!r}")
    folder = Path(folder)
    files, generated = check_model_folder(folder, repo_id)
    if not dry_run:
        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        if revision is not None and not create_pr:
            api.create_branch(repo_id, branch=revision, exist_ok=True)
        operations = [CommitOperationAdd(path_in_repo=f.as_posix(), path_or_fileobj=str(folder / f)) for f in files]
        if generated is not None:
            operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=str(generated).encode()))
        api.create_commit(repo_id, operations, commit_message=commit_message, revision=revision, create_pr=create_pr)
    return files + ([Path("README.md")] if generated is not None else [])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hf-minattn push", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", metavar="DIR", help="a folder written by training/run_mlm.py or save_pretrained")
    parser.add_argument("repo_id", metavar="REPO_ID", help="the Hub model repository, e.g. user/minattn-wiki")
    parser.add_argument("--dry-run", action="store_true", help="list what would be uploaded and check the card; upload nothing")
    parser.add_argument("--revision", help="the branch to commit to (created if needed; default: main)")
    parser.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing directly")
    parser.add_argument("--private", action="store_true", default=None, help="create the repository as private")
    parser.add_argument("--token", help="a Hub token (default: HF_TOKEN or the one saved by `hf auth login`)")
    parser.add_argument("--commit-message", default="Upload MinAttn model", help="message of the Hub commit")
    args = parser.parse_args(argv)
    files = push_folder(args.folder, args.repo_id, dry_run=args.dry_run, private=args.private, revision=args.revision,
                        create_pr=args.create_pr, token=args.token, commit_message=args.commit_message)
    where = [f"revision {args.revision}" if args.revision else "", "as a pull request" if args.create_pr else "",
             "private" if args.private else ""]
    verb = "Would upload" if args.dry_run else "Uploaded"
    sizes = {f: (Path(args.folder) / f).stat().st_size if (Path(args.folder) / f).is_file() else None for f in files}
    total = sum(s for s in sizes.values() if s)
    print(f"{verb} {len(files)} files ({total / 1e6:.1f} MB) to https://huggingface.co/{args.repo_id}"
          + "".join(f", {w}" for w in where if w) + ":")
    for f, size in sizes.items():
        print(f"  {f}  ({'generated model card' if size is None else f'{size:,} bytes'})")
    print("Model card metadata: valid")
    return 0
