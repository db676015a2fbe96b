"""The report's sections are one ordered tuple of Section records: every record is complete, each name appears once,
each reads the typed results, and a new section is one module plus one entry in the tuple
(docs/report-sections.md)."""

import gzip
import html
import importlib.util
import json
import re
from pathlib import Path

from hf_minattn.probes.report import write_report
from hf_minattn.probes.report.page import Section
from hf_minattn.probes.report.sections import SECTIONS
from hf_minattn.probes.results import PARTS, SavedProbeResults

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo_probes_2026-11-23.json.gz"

RUN = {"model": "tiny", "model_class": "MinAttnForMaskedLM", "num_layers": 2, "num_heads": 3, "hidden_size": 9,
       "corpus": {"sentences": 4, "words": 40, "vocabulary": 20, "tokens": 50, "max_length": 16},
       "timings": {"total": 1.0}, "token_lengths": {"mean": 3.5, "longest": 9}}

# What a new section's module holds, as docs/report-sections.md shows it.
MODULE = '''
from hf_minattn.probes.report.page import Section


def token_lengths_headline(r):
    t = r["token_lengths"]
    return f"A sentence has {t['mean']:.1f} tokens on average, {t['longest']} at most."


def token_lengths_text(r):
    return f"Mean {r['token_lengths']['mean']:.2f} tokens per sentence over {r['corpus']['sentences']} sentences."


def token_lengths_tables(r):
    return [{"header": ["mean", "longest"], "rows": [[r["token_lengths"]["mean"], r["token_lengths"]["longest"]]]}]


SECTION = Section(name="token_lengths", title="Sentence lengths in tokens", needs="token_lengths",
                  question="How long are the probe sentences?", headline=token_lengths_headline,
                  text=token_lengths_text, tables=token_lengths_tables)
'''


def test_every_section_is_complete_and_named_once():
    names = [s.name for s in SECTIONS]
    assert len(names) == len(set(names))
    for s in SECTIONS:
        assert isinstance(s, Section) and re.fullmatch(r"[a-z0-9_]+", s.name), s
        assert s.title and s.question.endswith("?") and s.needs and callable(s.headline), s.name
        assert s.reads in ("results", "view"), s.name  # typed results: no section of the page reads raw keys
        assert s.figure is None or (callable(s.figure) and s.alt), s.name  # a figure says what it shows
        assert s.text or s.tables or s.html or s.details_html, s.name  # something beyond the headline


def test_a_run_without_a_part_types_it_as_none_and_shows_no_section_of_it(tmp_path):
    demo = json.loads(gzip.decompress(DEMO.read_bytes()))
    saved = SavedProbeResults.from_dict(demo)
    assert saved.geometry.adjusted_self_similarity == demo["geometry"]["adjusted_self_similarity"]
    assert saved.heads.examples[0].tokens == demo["heads"]["examples"][0]["tokens"]
    assert saved.weights.trained.qk_effective_rank == demo["weights"]["trained"]["qk_effective_rank"]
    bare = SavedProbeResults.from_dict({"model": "old", "num_layers": 2})
    assert all(getattr(bare, part) is None for part in PARTS)
    without = {k: v for k, v in demo.items() if k not in ("weights", "drift")}
    page = write_report(without, {}, tmp_path / "report.html").read_text()
    assert 'id="weights"' not in page and 'id="drift"' not in page and '<section id="neighbours">' in page


def test_a_new_section_is_one_module_and_one_line_of_the_tuple(tmp_path):
    path = tmp_path / "token_lengths.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("token_lengths", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sections = (*SECTIONS, module.SECTION)
    page = html.unescape(write_report(RUN, {}, tmp_path / "report.html", sections=sections).read_text())
    # the summary row: its question and headline, linked to the section
    assert re.search(r'<a href="#token_lengths">How long are the probe sentences\?</a></td><td>A sentence has 3.5 '
                     r"tokens on average, 9 at most.</td>", page)
    body = re.search(r'<section id="token_lengths">(.*?)</section>', page, re.S).group(1)
    assert "<h2>Sentence lengths in tokens</h2>" in body and "<th>longest</th>" in body
    assert "Mean 3.50 tokens per sentence over 4 sentences." in body
    assert '<a href="#token_lengths">Sentence lengths in tokens</a>' in page  # in the contents
    # the run's other sections need numbers this run does not have: only the new one is shown
    assert re.findall(r'<section id="([^"]+)"', page) == ["summary", "token_lengths"]
    # and a run without its numbers leaves it out
    without = {k: v for k, v in RUN.items() if k != "token_lengths"}
    assert 'id="token_lengths"' not in write_report(without, {}, tmp_path / "r.html", sections=sections).read_text()


def test_the_docs_table_lists_every_section_in_the_pages_order_with_its_question():
    """docs/report-sections.md's table is where a user looks up a section: a section added, renamed, moved or
    re-asked without the table following fails here."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "report-sections.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \| (.*?) \|$", doc, re.M)
    assert rows == [(s.name, s.title, s.question) for s in SECTIONS]
