"""report.html and compare.html, self-contained (figures embedded as data: URIs), written from the numbers in
probes.json: no hand-written numbers.

One module per section (geometry.py, heads.py, ...) holds that section's question, headline, paragraph, tables,
figure and alt text, all reading the same typed results (results.SavedProbeResults, built once per page), so a
headline and its paragraph cannot disagree; sections.py lists them in page order; page.py is the HTML machinery;
render.py writes the pages and a run's output folder. docs/report-sections.md says how to add a section."""

from .render import write_compare_report, write_outputs, write_report

__all__ = ["write_compare_report", "write_outputs", "write_report"]
