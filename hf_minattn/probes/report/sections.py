"""The sections of report.html, in the order the page shows them: one line per section. A section is one module of
this package holding its question, headline, paragraph, tables, figure and alt text in a `Section` record (page.py);
docs/report-sections.md says how to add one."""

from . import (attention_graphs, bands, benchmark, circuits, drift, example, geometry, head_ablation, head_map,
               head_roles, heads, logit_lens, neighbours, norm_weighting, sense, sense_accuracy, view, weights)

SECTIONS = (
    geometry.SECTION,
    bands.SECTION,
    benchmark.SECTION,
    neighbours.SECTION,
    sense.SECTION,
    sense_accuracy.SECTION,
    view.SECTION,
    heads.SECTION,
    head_roles.SECTION,
    head_map.SECTION,
    head_ablation.SECTION,
    logit_lens.SECTION,
    example.FIRST,
    example.SECOND,
    norm_weighting.SECTION,
    norm_weighting.EXAMPLE,
    attention_graphs.SECTION,
    weights.SECTION,
    circuits.SECTION,
    drift.SECTION,
)
