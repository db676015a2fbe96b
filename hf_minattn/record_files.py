"""Files written whole or not at all (`write_text_atomically`: model cards, JSON), and the JSON files in which
training callbacks keep their records in a run's folder (`drift.json`, `loss_allocation.json`): found from the file
or the folder holding it, kept in every checkpoint too (`KeptInCheckpoints`), and cut back to the checkpoint's step
when a run resumes."""

import contextlib
import json
import os
import secrets


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` (UTF-8, newlines as given) to `path` through a temporary file in the same folder renamed over it:
    a process killed mid-write leaves the previous file, never a truncated one. The temporary file has a name of its
    own ("<name>.<random>.tmp", so that two writers of one path never share one; push.py skips "*.tmp") and is
    removed if the write fails; one left by a killed process is such a "*.tmp"."""
    if not isinstance(text, str):  # before anything is created: nothing to clean up
        raise TypeError(f"write_text_atomically writes a str to {path}, got {type(text).__name__}")
    path = os.fspath(path)
    folder, name = os.path.split(path)
    os.makedirs(folder or ".", exist_ok=True)
    # Same folder, so os.replace is a rename within one file system. Not tempfile.mkstemp: its files are private
    # (0600) and would stay so after the rename; os.open with 0o666 gives the permissions open() gives, under the
    # umask. O_EXCL: never a file another writer holds.
    tmp = os.path.join(folder, f"{name}.{secrets.token_hex(8)}.tmp")
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(handle, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename: a crash after it must not leave an empty file there
        os.replace(tmp, path)
    except BaseException:  # KeyboardInterrupt too: no temporary file left behind
        with contextlib.suppress(OSError):  # the error that matters is the one being raised
            os.unlink(tmp)
        raise


def write_json_atomically(path: str, data, **dump_options) -> None:
    """Write `data` as JSON to `path`, whole or not at all (`write_text_atomically`). `dump_options` go to
    `json.dumps` (default: indent=1). NaN and infinities are written as json.dumps writes them by default, bare NaN
    and Infinity, which `read_json` (and TrainerState, for trainer_state.json) read back but strict JSON parsers
    refuse: a diverged run's NaN loss is still recorded. Pass allow_nan=False where the file must be strict JSON
    (probes/run.py does)."""
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
