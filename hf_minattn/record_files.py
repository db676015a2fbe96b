"""Files written whole or not at all (`write_text_atomically`: model cards, JSON), and the JSON files in which
training callbacks keep their records in a run's folder (`drift.json`, `loss_allocation.json`): found from the file
or the folder holding it, kept in every checkpoint too (`KeptInCheckpoints`), and cut back to the checkpoint's step
when a run resumes."""

import json
import os


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` (UTF-8, newlines as given) to `path` through a temporary file in the same folder renamed over it:
    a process killed mid-write leaves the previous file, never a truncated one."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    path = os.fspath(path)
    tmp = path + ".tmp"  # same folder, so os.replace is a rename within one file system
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json_atomically(path: str, data, **dump_options) -> None:
    """Write `data` as JSON to `path`, whole or not at all (`write_text_atomically`). `dump_options` go to
    `json.dumps` (default: indent=1)."""
    write_text_atomically(path, json.dumps(data, **{"indent": 1, **dump_options}))


def record_file(path, name: str) -> str:
    """`path` itself, or the file `name` inside it when `path` is a folder (a model folder holding the record)."""
    return os.path.join(path, name) if os.path.isdir(path) else str(path)


def read_json(path: str):
    """The JSON in file `path`; a ValueError naming the file when it is not valid JSON (a write cut short)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{path} is not valid JSON ({error})") from None


def records_until(path: str, step: int, step_key: str) -> list[dict]:
    """A resumed run's records so far: those of the file at `path` whose `step_key` is at most `step`, the step of
    the checkpoint it resumes from (later ones belong to steps about to be trained again). [] at step 0 (a new run)
    or without the file."""
    if step <= 0 or not path or not os.path.exists(path):
        return []
    return [record for record in read_json(path)["records"] if record[step_key] <= step]


class KeptInCheckpoints:
    """A training callback whose records a resumed run continues exactly, wherever its checkpoint lies (in another
    run's folder, or copied alone). `MinAttnTrainer` calls `save_into_checkpoint(folder, state)` on the saving process
    while it writes a checkpoint, after the model and before its trainer_state.json (the file written last, whose
    presence makes a checkpoint complete): a complete checkpoint always holds them. It sets `resumed_from`, the
    checkpoint a run resumes from (None: a new run), before training starts."""

    resumed_from: str | None = None

    def save_into_checkpoint(self, folder: str, state) -> None:
        raise NotImplementedError

    def history_file(self, name: str, output_dir: str) -> str | None:
        """Where a resumed run finds its record file `name`: the copy in its checkpoint, else (a checkpoint written
        before checkpoints kept one) the file of the checkpoint's run folder, else that of `output_dir`."""
        folders = [self.resumed_from, os.path.dirname(os.path.normpath(self.resumed_from))] if self.resumed_from else []
        for folder in [*folders, output_dir]:
            if os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
        return None
