"""The HTML machinery of the reports: a `Section` record, figures embedded as data: URIs (with the summary's small
copies), the Jinja templates (report.html.j2, compare.html.j2, report_macros.html.j2 next to the probes' modules,
rendered with autoescaping, so every value from the data is escaped) and one section rendered as the templates take
it."""

import base64
import functools
import io
import os
from dataclasses import dataclass
from typing import Callable

import jinja2
from markupsafe import Markup

from ..results import SavedProbeResults


@dataclass(frozen=True)
class Section:
    """One section of report.html. Its functions take what `reads` names: "results" the typed SavedProbeResults
    (results.py, built once per page; every section of SECTIONS), "probes" the probes.json dict (a new part that
    results.py does not type yet), "view" the interactive view's data. The section is
    shown when that data has `needs` (for "view": when there is a view) and, if it has a figure, when the figure was
    drawn. headline: one sentence chosen by the numbers (the summary row and the section's first paragraph); text:
    the full paragraph, collapsed; tables: [{header, rows, "details": True to collapse it}]; figure(data, path,
    figure_format=None) -> path or None; alt: what the figure shows; html / details_html: one escaped piece (Markup)
    shown / collapsed."""

    name: str
    title: str
    question: str
    needs: str
    headline: Callable
    text: Callable | None = None
    tables: Callable | None = None
    figure: Callable | None = None
    alt: str = ""
    html: Callable | None = None
    details_html: Callable | None = None
    reads: str = "probes"


class Probes:
    """One run's numbers as the sections read them (Section.reads): the probes.json dict, the typed results made from
    it at most once, and the interactive view's data. `r`: the probes.json dict or a SavedProbeResults."""

    def __init__(self, r, view=None):
        self.probes = r.raw if isinstance(r, SavedProbeResults) else r
        if isinstance(r, SavedProbeResults):
            self.results = r  # else made on first use (functools.cached_property below)
        self.view = view

    @functools.cached_property
    def results(self):
        return SavedProbeResults.from_dict(self.probes)

    def has(self, section):
        return bool(self.view) if section.reads == "view" else bool(self.probes.get(section.needs))

    def of(self, section):
        """What `section`'s functions take."""
        return getattr(self, section.reads)


# The summary shows each figure at most 160 x 48 CSS pixels (report.html.j2); twice that, sharp on a 2x screen.
THUMBNAIL_PIXELS = (320, 96)


def _formats(path):
    """The files of the figure at `path`: its PNG and its SVG (the same name beside it), leaving out a file written
    before `path` (left by an earlier run in another format)."""
    path = os.fspath(path)
    stem, written = os.path.splitext(path)[0], os.stat(path).st_mtime_ns
    files = [f for f in (stem + ".png", stem + ".svg") if os.path.isfile(f) and os.stat(f).st_mtime_ns >= written]
    return files or [path]


def _data_uri(data: bytes, kind: str) -> str:
    return f"data:image/{kind};base64,{base64.b64encode(data).decode()}"


def figure_uri(path):
    """The figure at `path` as a data: URI for <img src>: its PNG or its SVG, whichever file is smaller."""
    smallest = min(_formats(path), key=os.path.getsize)
    with open(smallest, "rb") as f:
        return _data_uri(f.read(), "svg+xml" if smallest.lower().endswith(".svg") else "png")


def thumbnail_uri(path):
    """The summary's small copy of the figure at `path`: its PNG scaled down to THUMBNAIL_PIXELS, as a data: URI.
    The figure itself again would embed every figure twice (0.9 MB of a 2.4 MB report). A figure drawn only as SVG
    is reused as it is (an SVG has no pixels to drop)."""
    png = next((f for f in _formats(path) if f.lower().endswith(".png")), None)
    if png is None:
        return figure_uri(path)
    from PIL import Image  # matplotlib's own dependency

    with Image.open(png) as image:
        image = image.convert("RGBA")
        image.thumbnail(THUMBNAIL_PIXELS)  # keeps the aspect ratio; never enlarges
    # on white, in 64 colours: about 3 kB a figure, where the smoothed RGBA copy took 5-22 kB
    image = Image.alpha_composite(Image.new("RGBA", image.size, "white"), image).convert("RGB").quantize(64)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return _data_uri(buffer.getvalue(), "png")


@functools.lru_cache(maxsize=None)
def templates():
    """The Jinja environment of the templates beside the probes' modules (also `hf-minattn view`'s page)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def macros():
    """report_macros.html.j2's macros (table, neighbours, provenance, contents, summary, section)."""
    return templates().get_template("report_macros.html.j2").module


def render(path, template, **context):
    """Write `template` rendered with `context` to `path`; returns `path`."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(templates().get_template(template).render(**context))
    return path


DETAILS_ROWS = 20  # a table longer than this goes into the section's collapsed details


def section_page(name, title, answer=None, png=None, alt="", tables=(), html=(), details=None, details_html=(),
                 question=None):
    """One <section> of a report as the templates take it: its headline `answer`, the figure, `tables` [{header,
    rows}] and `html` pieces already escaped (Markup); then, collapsed, the full paragraph `details`, the tables
    marked "details" (or longer than DETAILS_ROWS) and `details_html`. `question`: the short question the summary
    row asks."""
    fold = [bool(t.get("details")) or len(t["rows"]) > DETAILS_ROWS for t in tables]
    folded = [t for t, f in zip(tables, fold) if f]
    return {"id": name, "title": title, "question": question or title, "answer": answer,
            "figure": figure_uri(png) if png else None, "thumbnail": thumbnail_uri(png) if png else None, "alt": alt,
            "tables": [t for t, f in zip(tables, fold) if not f],
            "html": list(html), "details": details, "details_tables": folded, "details_html": list(details_html)}


def render_section(section, data, png=None):
    """`section` (a Section) with `data`, what it reads, and its figure at `png`, as the templates take it."""
    return section_page(section.name, section.title, section.headline(data), png, section.alt or section.title,
                        section.tables(data) if section.tables else (),
                        html=[section.html(data)] if section.html else (),
                        details=section.text(data) if section.text else None,
                        details_html=[section.details_html(data)] if section.details_html else (),
                        question=section.question)


def provenance_html(provenance) -> str:
    """The run's record: date, seed, vector corpus, package versions and the command, as one paragraph."""
    if not provenance:
        return Markup("")
    versions = ", ".join(f"{name} {v}" for name, v in provenance.get("versions", {}).items() if v)
    return macros().provenance(provenance, versions)
