"""`hf-minattn push DIR REPO_ID`: upload a saved model folder to the Hugging Face Hub.

`--dry-run` works offline: it lists the files that would be uploaded and checks the model card's metadata.
"""

import argparse
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.utils import filter_repo_objects

from hf_minattn.model_card import validate_model_card

# Same as what Trainer.push_to_hub leaves out: checkpoints and private files; plus our interrupted writes.
IGNORE_PATTERNS = ["_*", "checkpoint-*", "*.tmp", ".git/*", ".cache/*"]
REQUIRED_FILES = ("config.json", "README.md")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


def files_to_upload(folder) -> list[Path]:
    """The files of `folder` (relative paths) that `push` uploads."""
    folder = Path(folder)
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return [Path(p) for p in filter_repo_objects(paths, ignore_patterns=IGNORE_PATTERNS)]


def check_model_folder(folder) -> list[Path]:
    """Raise if `folder` is not a complete model folder with a valid card; return the files to upload."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"Model folder {folder} does not exist")
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        raise ValueError(f"{folder} is not a saved model folder: missing {', '.join(missing)}")
    validate_model_card(folder / "README.md")
    return files_to_upload(folder)


def push_folder(folder, repo_id: str, dry_run: bool = False, private: bool = False,
                commit_message: str = "Upload MinAttn model") -> list[Path]:
    """Upload `folder` to the model repository `repo_id` (created if needed); with `dry_run`, only check it.

    Returns the files uploaded (or that would be).
    """
    if repo_id.count("/") > 1 or not repo_id.strip("/"):
        raise ValueError(f"REPO_ID must look like 'name' or 'user/name', got {repo_id!r}")
    files = check_model_folder(folder)
    if not dry_run:
        api = HfApi()
        api.create_repo(repo_id, private=private, exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message,
                          ignore_patterns=IGNORE_PATTERNS)
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hf-minattn push", description=__doc__)
    parser.add_argument("folder", metavar="DIR", help="a folder written by training/run_mlm.py (or save_pretrained)")
    parser.add_argument("repo_id", metavar="REPO_ID", help="the Hub model repository, e.g. user/minattn-wiki")
    parser.add_argument("--dry-run", action="store_true", help="list what would be uploaded and check the card; upload nothing")
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--commit-message", default="Upload MinAttn model", help="message of the Hub commit")
    args = parser.parse_args(argv)
    try:
        files = push_folder(args.folder, args.repo_id, dry_run=args.dry_run, private=args.private,
                            commit_message=args.commit_message)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    total = sum((Path(args.folder) / f).stat().st_size for f in files)
    verb = "Would upload" if args.dry_run else "Uploaded"
    print(f"{verb} {len(files)} files ({total / 1e6:.1f} MB) to https://huggingface.co/{args.repo_id}:")
    for f in files:
        print(f"  {f}  ({(Path(args.folder) / f).stat().st_size:,} bytes)")
    print("Model card metadata: valid")
    return 0
