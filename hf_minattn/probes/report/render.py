"""Writing the reports: report.html for one probe run (`write_report`), compare.html for several
(`write_compare_report`), and a run's whole folder (`write_outputs`: probes.json, figures, report.html, the attention
graphs' JSON). Every number on the pages comes from the results; no sentence is written by hand."""

import json
import os

from ..plots import all_plots
from ..results import SavedProbeResults
from .benchmark import best_cell
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
               "benchmarks": "Charts by layer: WordSim-353, SimLex-999 and analogy scores, one line per model, each "
                             "model's word2vec baseline dashed"}


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
    cell = f"{counts['follow']} of {counts['heads']} ({counts['closely']} closely)"
    return cell if counts["copies"] is None else f"{cell}; {counts['copies']} copy"


def _compare_answers(results):
    """{figure name: the sentence above it} of compare.html; `results` {name: SavedProbeResults}."""
    trends = "; ".join(f"{n}: {r.geometry.adjusted_self_similarity[0]:.2f} -> "
                       f"{r.geometry.adjusted_self_similarity[-1]:.2f}" for n, r in results.items())
    return {"geometry": "Adjusted self-similarity by layer for each model: a falling line means upper layers are more "
                        f"context-specific; {trends}.",
            "benchmarks": "Word-similarity and analogy scores of each model's contextual vectors by layer, with each "
                          "model's word2vec baseline (dashed, same corpus) for reference."}


def write_compare_report(results, plots, path):
    """compare.html: several models' probes side by side; `results` {name: probes.json dict}, typed here once per
    model; `plots` {figure name: path} from plots.compare_plots."""
    results = {name: SavedProbeResults.from_dict(r) for name, r in results.items()}
    answers = _compare_answers(results)
    sections = [section_page(name, name, answers.get(name, ""), png,
                             COMPARE_ALT.get(name, f"{name}, one line per model")) for name, png in plots.items()]
    return render(path, "compare.html.j2", rows=[_compare_row(name, res) for name, res in results.items()],
                  sections=sections)


def write_outputs(results, out, figure_format="both"):
    """probes.json, the figures (PNG, SVG or both: `figure_format`), report.html, attention_graph.json and
    attention_view.json (docs/attention-graph.md) into `out`, from a run's ProbeResults (run.py)."""
    os.makedirs(out, exist_ok=True)
    results.save_json(os.path.join(out, "probes.json"))
    for name, graph in (("attention_graph", results.attention_graph), ("attention_view", results.attention_view)):
        if graph:
            with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as f:
                json.dump(graph, f)
    saved = SavedProbeResults.from_dict(results.to_dict())  # typed once, read by the figures and the page
    write_report(saved, all_plots(saved, out, figure_format), os.path.join(out, "report.html"),
                 view=results.attention_view)
