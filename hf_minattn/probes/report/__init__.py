"""report.html and compare.html, self-contained (figures embedded as data: URIs), written from the numbers in
probes.json: no hand-written numbers.

One module per section (geometry.py, heads.py, ...) holds that section's question, headline, paragraph, tables,
figure and alt text, all reading the same numbers, so a headline and its paragraph cannot disagree; sections.py lists
them in page order; page.py is the HTML machinery; render.py writes the pages and a run's output folder.
docs/report-sections.md says how to add a section."""

from .render import write_compare_report, write_outputs, write_report

# The section texts other modules and tests call by the names report.py gave them.
from .attention_graphs import attention_graphs_text  # noqa: E402
from .geometry import geometry_text, layer0_text  # noqa: E402
from .head_ablation import head_ablation_text  # noqa: E402
from .head_map import head_map_text  # noqa: E402
from .head_roles import head_roles_text  # noqa: E402
from .heads import heads_text  # noqa: E402
from .logit_lens import logit_lens_text  # noqa: E402
from .norm_weighting import attention_norm_example_text, norm_weighting_text  # noqa: E402
from .sense_accuracy import sense_accuracy_text  # noqa: E402

__all__ = ["attention_graphs_text", "attention_norm_example_text", "geometry_text", "head_ablation_text",
           "head_map_text", "head_roles_text", "heads_text", "layer0_text", "logit_lens_text", "norm_weighting_text",
           "sense_accuracy_text", "write_compare_report", "write_outputs", "write_report"]
