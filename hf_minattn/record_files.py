"""Files written whole or not at all (`write_text_atomically`: model cards, JSON), and the JSON files in which
training callbacks keep their records in a run's folder (`drift.json`, `loss_allocation.json`): found from the file
or the folder holding it, and cut back to the checkpoint's step when a run resumes."""

import json
import os


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` (UTF-8, newlines as given) to `path` through a temporary file in the same folder renamed over it:
    a process killed mid-write leaves the previous file, never a truncated one."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
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


def records_until(path: str, step: int, step_key: str) -> list[dict]:
    """A resumed run's records so far: those of the file at `path` whose `step_key` is at most `step`, the step of
    the checkpoint it resumes from (later ones belong to steps about to be trained again). [] at step 0 (a new run)
    or without the file."""
    if step <= 0 or not os.path.exists(path):
        return []
    with open(path) as f:
        return [record for record in json.load(f)["records"] if record[step_key] <= step]
