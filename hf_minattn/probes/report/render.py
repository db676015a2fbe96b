"""Writing the reports: report.html for one probe run (`write_report`), compare.html for several
(`write_compare_report`), and a run's whole folder (`write_outputs`: probes.json, figures, report.html, the attention
graphs' JSON). Every number on the pages comes from the results; no sentence is written by hand."""

import json
import os
import shutil
from contextlib import contextmanager

from ..plots import BENCHMARKS, all_plots, compare_benchmark_lines
from ..results import SavedProbeResults
from .benchmark import and_list, best_cell
from .circuits import head_counts
from .page import Probes, provenance_html, render, render_section, section_page
from .sections import SECTIONS


def write_report(r, plots, path, view=None, sections=SECTIONS):
    """report.html for one model; `r` is the probes.json dict (or SavedProbeResults), `plots` {figure name: PNG
    path}, `view` the interactive attention view's data (attention_view.py), shown first among the attention
    sections; `sections` the Section records to show, in order.

    The page opens with a summary: one row per section, its question, its headline and its figure small; each
    section then opens with the same headline, its figure and tables, the full paragraph collapsed below. A section
    is shown when the run has its numbers and, if it has a figure, when that figure was drawn."""
    probes = Probes(r, view)
    shown = [render_section(s, probes.of(s), plots.get(s.name)) for s in sections
             if probes.has(s) and (s.figure is None or s.name in plots)]
    return render(path, "report.html.j2", r=probes.probes, sections=shown, summary=True,
                  provenance=provenance_html(probes.probes.get("provenance")))


COMPARE_ALT = {"geometry": "Line chart: baseline-adjusted self-similarity by layer, one line per model",
               "benchmarks": "Charts by layer: WordSim-353, SimLex-999 and analogy scores, one line per model scored, "
                             "word2vec baselines dashed where trained"}
# `hf-minattn probe` arguments that say which model and where the files go, not how the numbers were made
NOT_SETTINGS = {"model", "revision", "trust_remote_code", "out", "name", "figure_format", "vectors_format",
                "no_save_vectors", "seed", "vector_corpus"}  # the last two: provenance's own, with more said


def _compare_row(name, res):
    """compare.html's row of one model (SavedProbeResults): its size, adjusted self-similarity by layer, best
    benchmark scores and what its layer-0 circuits follow."""
    return [name, res.model_class, res.num_layers, res.num_heads, res.hidden_size,
            " → ".join(f"{a:.2f}" for a in res.geometry.adjusted_self_similarity),
            *[best_cell(res, key) for key in ("wordsim353", "simlex999")], _circuits_cell(res.circuits)]


def _circuits_cell(circuits):
    """How many of layer 0's heads follow the embedding similarity (interval above 0), how many closely, and how
    many OV circuits copy, as `circuits_headline` counts them; "-" for a run without circuits."""
    if circuits is None:
        return "-"
    counts = head_counts(circuits)
    cell = (f"{counts['follow']} of {counts['heads']} ({counts['closely']} closely)" if counts["follow"] is not None
            else "no QK scores")
    return cell if counts["copies"] is None else f"{cell}; {counts['copies']} copy"


def _compare_answers(results, lines):
    """{figure name: the sentence above it} of compare.html; `results` {name: SavedProbeResults}, `lines` what the
    benchmark figure draws (plots.compare_benchmark_lines)."""
    trends = "; ".join(f"{n}: {r.geometry.adjusted_self_similarity[0]:.2f} -> "
                       f"{r.geometry.adjusted_self_similarity[-1]:.2f}" for n, r in results.items())
    return {"geometry": "Adjusted self-similarity by layer for each model: a falling line means upper layers are more "
                        f"context-specific; {trends}.",
            "benchmarks": _benchmarks_answer(lines)}


def _benchmarks_answer(lines):
    """The sentence above compare's benchmark figure, written from what it draws."""
    titles = {key: title.split(" (")[0] for key, title in BENCHMARKS}
    drawn = [row for rows in lines.values() for row in rows]
    kinds = and_list(dict.fromkeys(kind for _, kind, _, scores, _ in drawn if any(x is not None for x in scores)))
    text = f"Word-similarity and analogy scores by layer of each model's {kinds or 'encoder'} vectors"
    with_w2v = list(dict.fromkeys(name for name, *_, w2v in drawn if w2v is not None))
    text += (f", with the word2vec baseline trained on the probe's own corpus (dashed) of {and_list(with_w2v)}"
             if with_w2v else "; no probe trained a word2vec baseline")
    unscored = [titles[key] for key, rows in lines.items() if not rows]
    return text + (f"; not scored for any model: {and_list(unscored)}." if unscored else ".")


def _settings(r):
    """{setting: value} of one probes.json dict, from its provenance: seed, corpora, package versions and the
    `hf-minattn probe` arguments that shape the numbers."""
    p = r.get("provenance") if isinstance(r.get("provenance"), dict) else {}
    found = {key: p[key] for key in ("seed", "vector_corpus", "probe_sentences") if key in p}
    found.update({f"{name} version": v for name, v in (p.get("versions") or {}).items()})
    arguments = p.get("arguments") or {}
    found.update({f"--{k.replace('_', '-')}": v for k, v in arguments.items() if k not in NOT_SETTINGS})
    return found


# The kinds of setting `_settings` reads, by their keys: the sentence that finds no difference names those recorded.
SETTING_KINDS = (("seed", lambda key: key == "seed"), ("corpora", lambda key: key in ("vector_corpus", "probe_sentences")),
                 ("arguments", lambda key: key.startswith("--")), ("package versions", lambda key: key.endswith(" version")))


def settings_section(results):
    """compare.html's section on comparability: the settings that differ between the probes (`results` {name:
    probes.json dict}), one row each, "not recorded" where a file lacks one."""
    found = {name: _settings(r) for name, r in results.items()}
    keys = dict.fromkeys(key for settings in found.values() for key in settings)
    shown = lambda settings, key: json.dumps(settings[key]) if key in settings else "not recorded"  # noqa: E731
    rows = [[key, *(shown(settings, key) for settings in found.values())] for key in keys
            if len({shown(settings, key) for settings in found.values()}) > 1]
    if not keys:
        answer = "No probes.json records how it was run (an older file): the probes cannot be checked as comparable."
    elif rows:
        answer = (f"The probes differ in {len(rows)} recorded setting{'s' * (len(rows) > 1)}: a difference below may "
                  "come from these rather than from the models.")
    else:
        kinds = [kind for kind, is_kind in SETTING_KINDS if any(map(is_kind, keys))]  # only what the files record
        answer = f"The probes were run with the same recorded settings ({', '.join(kinds)})."
    table = {"header": ["setting", *found], "rows": rows}
    return section_page("settings", "Settings that differ between the probes", answer, tables=[table] if rows else ())


def check_compared(r):
    """One probes.json dict as compare reads it, typed (SavedProbeResults); a ValueError saying what is missing or
    damaged otherwise, before anything is drawn or written."""
    geometry = r.get("geometry") if isinstance(r, dict) else None
    values = geometry.get("adjusted_self_similarity") if isinstance(geometry, dict) else None
    if not values:
        raise ValueError("it has no geometry results")
    if not isinstance(values, list) or not all(_is_number(v) for v in values):
        raise ValueError(f"geometry.adjusted_self_similarity is {values!r:.80}; expected a number per layer")
    layers = geometry.get("layers")
    if layers is not None and (not isinstance(layers, list) or len(layers) != len(values)):
        raise ValueError(f"geometry.layers is {layers!r:.80}, for {len(values)} adjusted_self_similarity values; "
                         "expected a list of as many layers")
    if missing := [key for key in ("model", "num_layers") if key not in r]:
        raise ValueError(f"it has no {and_list(missing)}")
    for key in ("num_layers", "num_heads", "hidden_size"):
        if key in r and not (isinstance(r[key], int) and not isinstance(r[key], bool) and r[key] >= 0):
            raise ValueError(f"{key} is {r[key]!r}; expected a whole number")
    try:  # what the figures draw, then every cell of its row and its settings, read once here
        drawn = [x for rows in compare_benchmark_lines({"": r}).values() for *_, scores, w2v in rows
                 for x in (*scores, w2v) if x is not None]
        typed = SavedProbeResults.from_dict(r) if all(_is_number(x) for x in drawn) else None
        if typed is not None:
            _compare_row("", typed)
            _settings(r)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise ValueError(f"it cannot be read ({type(error).__name__}: {error})") from None
    if typed is None:
        raise ValueError("its benchmark scores are not all numbers")
    return typed


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def write_compare_report(results, plots, path):
    """compare.html: several models' probes side by side; `results` {name: probes.json dict}, typed here once per
    model (check_compared has read each); `plots` {figure name: path} from plots.compare_plots."""
    typed = {name: SavedProbeResults.from_dict(r) for name, r in results.items()}
    answers = _compare_answers(typed, compare_benchmark_lines(results))
    sections = [settings_section(results)] + [
        section_page(name, name, answers.get(name, ""), png, COMPARE_ALT.get(name, f"{name}, one line per model"))
        for name, png in plots.items()]
    return render(path, "compare.html.j2", rows=[_compare_row(name, res) for name, res in typed.items()],
                  sections=sections)


# What a probe writes into its folder, besides <section>.png / .svg for every section with a figure: a rerun into a
# folder an earlier probe wrote replaces these and leaves any other file there alone.
PROBE_FILES = ("probes.json", "report.html", "attention_graph.json", "attention_view.json", "vectors")
STAGING = ".hf-minattn-probe.partial"  # where write_outputs writes before moving the files in


def probe_outputs(folder) -> list:
    """The entries of `folder` that an earlier probe wrote there (PROBE_FILES and the sections' figures)."""
    figures = {f"{s.name}{suffix}" for s in SECTIONS if s.figure is not None for suffix in (".png", ".svg")}
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return [name for name in names if name in PROBE_FILES or name in figures]


def is_probe_folder(folder) -> bool:
    """Whether an earlier probe wrote `folder`: it holds probes.json, or STAGING (a probe killed while moving its
    files in, after it removed the earlier probes.json)."""
    return os.path.isfile(os.path.join(folder, "probes.json")) or os.path.isdir(os.path.join(folder, STAGING))


def check_probe_folder(folder, flag="--out", instead: str | None = None) -> None:
    """A ValueError naming `flag` when `folder` is no folder an earlier probe wrote but holds entries a probe writes
    (a user's own vectors/ or report.html): the probe would replace them. Checked before any work. `instead`: what to
    do other than moving them (default: pass another `flag`)."""
    taken = [] if is_probe_folder(folder) else sorted(probe_outputs(folder))
    if taken:
        raise ValueError(f"{flag} {os.fspath(folder)!r} holds {', '.join(taken)}, names a probe writes, but no "
                         f"probes.json (the file a finished probe leaves), so the probe would replace them; "
                         f"{instead or f'pass another {flag}'}, or move or remove them")


def _remove(path) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def _first_missing(folder):
    """The outermost of `folder` and its parents that does not exist yet (None: `folder` exists)."""
    path, missing = os.path.abspath(folder), None
    while not os.path.lexists(path):
        path, missing = os.path.dirname(path), path
    return missing


@contextmanager
def removed_on_failure(folder):
    """Make `folder` (and its missing parents); if the body fails, remove what this call made, so that a failure
    leaves no empty or half-written folder behind. A folder that existed is left to the caller."""
    made = _first_missing(folder)
    os.makedirs(folder, exist_ok=True)
    try:
        yield folder
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise


def write_outputs(results, out, figure_format="both", vector_formats=None):
    """probes.json, the figures (PNG, SVG or both: `figure_format`), report.html, attention_graph.json,
    attention_view.json (docs/attention-graph.md) and, with `vector_formats`, the word vectors (vectors/) into `out`,
    from a run's ProbeResults (run.py).

    Written into a hidden folder inside `out` first (STAGING: every move stays on one file system, and no folder
    beside `out` is touched) and moved in once whole, probes.json last: a probe that fails or is killed
    leaves the earlier probe's folder as it was (and no folder where there was none), and one that finishes leaves
    none of its files behind (a figure it no longer draws, vectors it no longer saves), so a folder never holds one
    probe's numbers beside another's report. Files of other kinds in `out` are left alone, and a folder no probe
    wrote that holds a probe's names is refused before anything is written (`check_probe_folder`)."""
    check_probe_folder(out, "out")
    with removed_on_failure(out):
        staging = os.path.join(out, STAGING)
        if os.path.exists(staging):  # left by a probe killed while writing
            shutil.rmtree(staging)
        os.makedirs(staging)
        try:
            _write_staged(results, staging, figure_format, vector_formats)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        for name in probe_outputs(out):  # an earlier probe's: check_probe_folder refused a folder no probe wrote
            _remove(os.path.join(out, name))
        for name in sorted(os.listdir(staging), key=lambda n: n == "probes.json"):  # probes.json last: it is whole
            os.replace(os.path.join(staging, name), os.path.join(out, name))
        os.rmdir(staging)


def _write_staged(results, staging, figure_format, vector_formats):
    """Every file of write_outputs, into `staging`."""
    if vector_formats:
        results.word_vectors.save(os.path.join(staging, "vectors"), vector_formats)
    for name, graph in (("attention_graph", results.attention_graph), ("attention_view", results.attention_view)):
        if graph:
            with open(os.path.join(staging, f"{name}.json"), "w", encoding="utf-8") as f:
                json.dump(graph, f)
    saved = SavedProbeResults.from_dict(results.to_dict())  # typed once, read by the figures and the page
    write_report(saved, all_plots(saved, staging, figure_format), os.path.join(staging, "report.html"),
                 view=results.attention_view)
    results.save_json(os.path.join(staging, "probes.json"))
