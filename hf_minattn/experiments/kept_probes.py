"""The probe runs the experiments keep (`kept.json`, `kept.npz` in each run's folder under out/probes/), so that a
rerun reads their numbers back instead of probing again, as training keeps its models. A variant's run is kept under
the digest of the model it probed (`caches.model_digest`), and probed again once that model is trained again."""

import json
import os

import numpy as np

from hf_minattn.record_files import write_json_atomically

from .caches import model_digest
from .training import log


def probe_folder(out: str, name: str, seed: int) -> str:
    return os.path.join(out, "probes", name, f"seed{seed}")


def kept_file(out: str, name: str, seed: int) -> str:
    """The file save_kept writes last: a probe run that finished (its numbers are read back, not probed again)."""
    return os.path.join(probe_folder(out, name, seed), "kept.json")


def write_kept(folder: str, record: dict, arrays: dict) -> None:
    """`arrays` into folder/kept.npz, then `record` into folder/kept.json, written last (whole, or not at all): what a
    rerun of the experiments reads back instead of probing again (as training keeps its models)."""
    np.savez(os.path.join(folder, "kept.npz"), **arrays)
    write_json_atomically(os.path.join(folder, "kept.json"), record, indent=None,
                          default=lambda x: x.item() if hasattr(x, "item") else x.tolist())


def read_kept(folder: str) -> tuple[dict, tuple] | None:
    """(record, (vocab, vector sets)) that write_kept wrote in `folder` with `vector_arrays`; None where no earlier
    call finished it."""
    if not os.path.isfile(os.path.join(folder, "kept.json")):
        return None
    with open(os.path.join(folder, "kept.json")) as f:
        record = json.load(f)
    with np.load(os.path.join(folder, "kept.npz"), allow_pickle=False) as data:
        sets = {key[len("set_"):]: data[key] for key in data.files if key.startswith("set_")}
        return record, (data["vocab"].tolist(), sets)


def vector_arrays(vocab, sets: dict) -> dict:
    return {"vocab": np.array(vocab), **{f"set_{k}": v for k, v in sets.items()}}


def save_kept(folder: str, runs: dict, name: str, seed: int, model: str) -> None:
    """What keep_run kept of one probe run, into `folder` (write_kept: its vector sets, and the rest), under the
    digest of the model it probed (`model`: its folder)."""
    full = name == "full"  # the rollout edges and the matched word2vec come with the full model's run
    kept = {"summary": runs["by_seed"][name][seed], "extras": runs["extras"][name][seed], "layers": runs["layers"],
            "rollout": runs["rollout"].get(seed) if full else None,
            "word2vec_matched": runs.get("word2vec_matched") if full else None, "model": model_digest(model)}
    write_kept(folder, kept, vector_arrays(*runs["vectors"][name, seed]))


def load_kept(folder: str, runs: dict, name: str, seed: int, model: str) -> bool:
    """Put what save_kept wrote in `folder` back into `runs`; False where no earlier call finished this run, or where
    it probed another model than the one in `model` now (trained again: its numbers would be the old model's). A run
    kept before the digest was is read back as it is."""
    found = read_kept(folder)
    if found is None:
        return False
    if found[0].get("model", model_digest(model)) != model_digest(model):
        log(f"{folder}: probed another model than {model} holds now: probing it again")
        return False
    kept, runs["vectors"][name, seed] = found
    runs["by_seed"][name][seed], runs["extras"][name][seed] = kept["summary"], kept["extras"]
    runs["layers"] = kept["layers"]
    if kept["rollout"] is not None:
        runs["rollout"][seed] = kept["rollout"]
    if kept["word2vec_matched"] is not None:
        runs["word2vec_matched"] = kept["word2vec_matched"]
    return True
