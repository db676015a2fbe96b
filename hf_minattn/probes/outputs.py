"""Write one probe run to a folder: probes.json, the figures, report.html and the attention view's JSON."""

import json
import os

from .plots import all_plots
from .report import write_report


def write_outputs(results, out, figure_format="both"):
    """probes.json, the figures (PNG, SVG or both: `figure_format`), report.html, attention_graph.json and
    attention_view.json (docs/attention-graph.md) into `out`."""
    os.makedirs(out, exist_ok=True)
    results.save_json(os.path.join(out, "probes.json"))
    for name, graph in (("attention_graph", results.attention_graph), ("attention_view", results.attention_view)):
        if graph:
            with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as f:
                json.dump(graph, f)
    r = results.to_dict()
    write_report(r, all_plots(r, out, figure_format), os.path.join(out, "report.html"), view=results.attention_view)
