"""What `hf-minattn experiments` keeps in its output folder so that a rerun does not measure again: the scoring
(`scoring.json` and `rows.npz`, tied to the models and settings they were computed from) and the two dynamics phases
(`similarity_dynamics.json`, `head_dynamics.json`), kept per seed. A rerun on fewer seeds reads theirs; one that
adds seeds measures the new seeds alone (their saved states are still there) and adds them to the file, since the
states of the seeds measured before are deleted once their numbers are kept."""

import hashlib
import json
import os
import zipfile

import numpy as np

from hf_minattn.record_files import read_json, write_json_atomically

from .dynamics import DYNAMICS_VARIANTS, saved_states, similarity_curves
from .evaluation import evaluate
from .findings import int_seed_keys
from .head_dynamics import head_curves
from .training import log

SCORING_SETTINGS = ("max_seq_length", "mlm_probability", "mask_draws", "max_steps", "batch_size", "curve_eval_samples",
                    "curve_eval_from", "scored_from")


def scoring_key(folders: dict, settings: dict, seeds) -> dict:
    """What `evaluate`'s numbers are computed from: the seeds, the settings it reads, and the size and modification
    time of every model it scores (a model trained again is a new file)."""
    def stamp(folder):  # every weights file (one, or the shards of a large model): [name, size, time]
        names = sorted(n for n in os.listdir(folder) if n.startswith("model") and n.endswith(".safetensors"))
        stats = [os.stat(os.path.join(folder, n)) for n in names]
        return [[n, info.st_size, info.st_mtime_ns] for n, info in zip(names, stats)]

    return {"seeds": list(seeds), "settings": {k: settings.get(k) for k in SCORING_SETTINGS},
            "models": {name: {str(seed): stamp(folders[name][seed]) for seed in seeds} for name in sorted(folders)}}


def model_digest(folder: str) -> list:
    """[name, size, SHA-256] of every weights file in `folder` ([] without one): the key under which the probes and
    the dynamics keep a model's numbers. The content, not the time: a model trained again is measured again, and an
    output folder copied without its files' times is still read back (its saved states, deleted once measured, could
    not be measured again)."""
    names = sorted(n for n in os.listdir(folder) if n.startswith("model") and n.endswith(".safetensors")) \
        if os.path.isdir(folder) else []
    digests = []
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            digests.append([name, os.fstat(f.fileno()).st_size, hashlib.file_digest(f, "sha256").hexdigest()])
    return digests


def read_kept_json(path: str):
    """The JSON in `path`; None where there is no file, or one cut short (written before writes were atomic)."""
    if not os.path.isfile(path):
        return None
    try:
        return read_json(path)
    except ValueError as error:  # record_files.read_json names the file
        log(f"{error}: a call stopped while writing it; measuring again")
        return None


def cached_json(path: str, read_back, compute, **dump_options):
    """A phase's numbers kept in `path` so that a rerun reads them instead of measuring again: read_back(the file's
    JSON) where the file exists, unless it returns None (measured for other seeds or models); else compute(), written
    to `path` (nothing written when it returns None)."""
    kept = read_kept_json(path)
    if kept is not None:
        kept = read_back(kept)
        if kept is not None:
            return kept
    value = compute()
    if value is not None:
        write_json_atomically(path, value, **dump_options)
    return value


def rows_key(path: str) -> dict | None:
    """The scoring key rows.npz was written under (None: no file, or one written before it kept its key)."""
    if not os.path.isfile(path):
        return None
    try:
        with np.load(path) as rows:
            return json.loads(str(rows["key"])) if "key" in rows.files else None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # a file cut short: scored again
        return None


def scoring(out: str, folders: dict, settings: dict, seeds) -> dict:
    """`evaluate`'s numbers, kept in `out/scoring.json` beside what they were computed from (`scoring_key`), and its
    per-row arrays in `out/rows.npz` under the same key: a rerun (after a kill in a later phase, say) reads them back
    instead of scoring every model again, and a rows.npz of other models is never read as theirs."""
    key = scoring_key(folders, settings, seeds)
    rows_path = os.path.join(out, "rows.npz")
    key_text = json.dumps(key, sort_keys=True, default=str)

    def read_back(kept):
        if kept["key"] != key or rows_key(rows_path) != json.loads(key_text):
            return None
        log("scoring: read back from scoring.json (every model as an earlier call scored it)")
        return {"key": key, "scored": int_seed_keys(kept["scored"])}

    def compute():
        scored, arrays = evaluate(folders, settings, seeds)
        with open(rows_path + ".tmp", "wb") as f:  # whole or not at all, as write_json_atomically writes
            np.savez_compressed(f, key=np.array(key_text), **arrays)
        os.replace(rows_path + ".tmp", rows_path)
        return {"key": key, "scored": scored}

    return cached_json(os.path.join(out, "scoring.json"), read_back, compute,
                       default=str)["scored"]  # default=str as collect_results


def seed_tables(value) -> list[dict]:
    """Every {seed: ...} table in a dynamics file (under a "seeds" key, at any depth)."""
    if not isinstance(value, dict):
        return []
    found = [value["seeds"]] if isinstance(value.get("seeds"), dict) else []
    for key, inner in value.items():
        if key != "seeds":
            found += seed_tables(inner)
    return found


def with_seeds(value, seeds=None, added=None, where: str = "the kept numbers"):
    """A copy of a dynamics file's numbers with every seed table keyed by int and cut to `seeds` (None: all), or
    joined with the tables of `added` (the same numbers measured for other seeds). Everything else must then match:
    steps, sentences and pairs measured otherwise cannot be put side by side."""
    if not isinstance(value, dict) or (added is not None and not isinstance(added, dict)):
        if added is not None and added != value:
            raise ValueError(f"{where}: {_shown(value)} for the seeds measured before, {_shown(added)} for the new "
                             "ones; the new seeds cannot be added to them: run all the seeds into another --out")
        return value
    if added is not None and set(added) != set(value):
        raise ValueError(f"{where} hold {sorted(value)}, the new seeds' {sorted(added)}: run all the seeds into "
                         "another --out")
    copy = {}
    for key, inner in value.items():
        if key == "seeds" and isinstance(inner, dict):
            table = {int(seed): x for seed, x in inner.items()}
            table.update({int(seed): x for seed, x in (added or {}).get("seeds", {}).items()})
            copy[key] = {seed: table[seed] for seed in (sorted(table) if seeds is None else seeds) if seed in table}
        else:
            copy[key] = with_seeds(inner, seeds, None if added is None else added[key], f"{where}' {key}")
    return copy


def _shown(value) -> str:
    """`value` in a message: itself when short, else its kind (a table of numbers is no help in one line)."""
    text = repr(value)
    if len(text) <= 40:
        return text
    return f"a {type(value).__name__} of {len(value)}" if hasattr(value, "__len__") else text[:40] + "..."


MODEL_DIGESTS = "model_digests"  # {seed: {variant: model_digest}} in a dynamics file: the models its seeds measured


def per_seed_cache(path: str, seeds, measure, digests_of=lambda seed: {}):
    """A dynamics phase's numbers kept per seed in `path`: the seeds the file holds are read back, the others
    measured (measure(those seeds); None: nothing to measure) and added to it. Returns the numbers of `seeds`. A seed
    kept under other models (`digests_of(seed)`: {variant: model_digest} of the models it reads) is measured again; one
    kept before the file held digests is read back as it is."""
    kept = read_kept_json(path)
    digests = (kept.pop(MODEL_DIGESTS, None) if isinstance(kept, dict) else None) or {}
    now = {seed: digests_of(seed) for seed in seeds}
    tables = seed_tables(kept)
    held = set.intersection(*({int(seed) for seed in table} for table in tables)) if tables else set()
    changed = [seed for seed in seeds if seed in held and digests.get(str(seed), now[seed]) != now[seed]]
    missing = [seed for seed in seeds if seed not in held or seed in changed]
    if not missing:
        return with_seeds(kept, list(seeds))
    if changed:
        log(f"{os.path.basename(path)}: seeds {changed} have other models than when measured: measured again")
    if held:
        log(f"{os.path.basename(path)}: seeds {sorted(held & set(seeds) - set(changed))} read back, seeds {missing} "
            "measured")
    value = measure(missing)
    if value is None:
        return None
    if held:
        value = with_seeds(kept, added=value)  # the seeds measured again replace their kept numbers
    digests.update({str(seed): now[seed] for seed in missing})
    write_json_atomically(path, {**value, MODEL_DIGESTS: digests}, indent=1)
    return with_seeds(value, list(seeds))


def stamped(folders: dict, variants):
    """digests_of for per_seed_cache: {variant: model_digest} of those of `variants` that `folders` has."""
    return lambda seed: {name: model_digest(folders[name][seed]) for name in variants if seed in folders.get(name, {})}


def similarity_dynamics(out: str, folders: dict, settings: dict, seeds, remove_states: bool = True) -> dict:
    """Word similarity at every saved state (dynamics.similarity_curves), kept per seed in
    `out/similarity_dynamics.json`: the saved states are deleted once scored (unless `remove_states` is False:
    another phase still reads them), so a rerun reads the numbers back."""
    def measure(new_seeds):
        gone = [seed for seed in new_seeds if not all(saved_states(folders[name][seed]) for name in DYNAMICS_VARIANTS
                                                      if name in folders)]
        if gone:  # measuring them would score step 0 alone
            raise ValueError(f"seeds {gone} in {out} have no saved states of {list(DYNAMICS_VARIANTS)} and "
                             "similarity_dynamics.json does not hold their word similarity during training (for "
                             "these models): train them again (delete those models' folders) or use another --out")
        return similarity_curves(folders, settings, new_seeds, remove_states=remove_states)

    return per_seed_cache(os.path.join(out, "similarity_dynamics.json"), seeds, measure,
                          stamped(folders, (*DYNAMICS_VARIANTS, "untrained")))


def head_dynamics(out: str, folders: dict, settings: dict, seeds) -> dict | None:
    """The heads at every saved state of the full run (head_dynamics.head_curves on the first SENTENCES probe
    sentences), kept per seed in `out/head_dynamics.json` as similarity_dynamics keeps its numbers. None (and a log
    line) when the full run's states are already gone: an output folder whose similarity dynamics ran before this
    phase existed."""
    from hf_minattn.probes.corpus import default_sentences

    from .head_dynamics import SENTENCES

    def measure(new_seeds):
        if not all(saved_states(folders["full"][seed]) for seed in new_seeds):
            log("heads during training: the full run's saved states were already deleted; no head dynamics")
            return None
        return head_curves(folders, settings, new_seeds, default_sentences(SENTENCES))

    return per_seed_cache(os.path.join(out, "head_dynamics.json"), seeds, measure, stamped(folders, ("full", "untrained")))
