"""One Wikipedia article's wiki markup to its paragraphs of prose, for the sample of `hf_minattn.data`.

gensim's `filter_wiki` does most of the work; what it leaves behind is cleaned here. A pass before it removes
what it mishandles, each seen in the gensim sample:

- image links `[[File:...]]`, whose captions hold links of their own: gensim's pattern stops at the first `]]`
  and leaves the rest of the caption (and its size and alt text) glued to the prose that follows;
- galleries, whose `File:...|caption` lines gensim keeps as text;
- references holding a `<br />`: gensim's pattern ends a reference at the first `/>`, leaving the citation's
  remainder in the sentence;
- `<br>` line breaks, whose removal glues the lines on either side without a space.

After it, brackets that held only a removed template (a pronunciation, another language's name) are dropped or
stripped of the separators left inside them: "Albedo () or" and "Achilles (;, Akhilleus,) was".
"""

import re

# Paragraphs shorter than this are captions, table cells or list debris left after filter_wiki.
MIN_WORDS = 10
SPACE_BEFORE_PUNCT = re.compile(r" ([,.;:)])")  # left where a template or reference was removed

# Sections whose content is lists of references and links, not prose.
_BACK_MATTER = {"references", "see also", "external links", "further reading", "bibliography", "notes",
                "sources", "citations", "footnotes"}

_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1$")
_EMPHASIS = re.compile(r"'{2,}")  # ''italic'' and '''bold''' survive filter_wiki
_SPACE = re.compile(r"[ \t\u00a0]+")

_FILE_LINK = re.compile(r"\[\[\s*(?:file|image)\s*:", re.IGNORECASE)
_LINK_BRACKETS = re.compile(r"\[\[|\]\]|\n\s*\n")  # a blank line ends the search: captions hold no paragraphs
_GALLERY = re.compile(r"<gallery\b.*?</gallery\s*>", re.DOTALL | re.IGNORECASE)
# A self-closing <ref name=... /> first, so that it does not open a reference that runs to a later </ref>.
_REF = re.compile(r"<ref\b[^>]*/>|<ref\b[^>]*>.*?</ref\s*>", re.DOTALL | re.IGNORECASE)
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# Lines left of an image the passes above missed: a gallery line, or an image's size, alt text or frame.
_IMAGE_LINE = re.compile(r"^(?:file|image)\s*:|\|\s*(?:\d+(?:x\d+)?px|alt\s*=|thumb|upright)", re.IGNORECASE)
_BRACKET_OPENING = re.compile(r"\(\s*(?:[,;]\s*)+")  # "(; Dzayer)", where a pronunciation template was
_BRACKET_CLOSING = re.compile(r"(?:\s*[,;])+\s*\)")  # "(Akhilleus,)"
_EMPTY_BRACKET = re.compile(r" ?\(\s*\)")


def _link_end(text: str, start: int) -> int | None:
    """Where the link opened just before `start` closes, counting the links nested in it; None if it does not
    close before a blank line."""
    depth = 1
    for bracket in _LINK_BRACKETS.finditer(text, start):
        if bracket.group() not in ("[[", "]]"):
            return None
        depth += 1 if bracket.group() == "[[" else -1
        if depth == 0:
            return bracket.end()
    return None


def remove_file_links(wikitext: str) -> str:
    """`wikitext` without its image links, captions included. A link inside a paragraph is replaced by a space,
    so that the prose on either side reads on; one that does not close is left to filter_wiki."""
    parts, position = [], 0
    for link in _FILE_LINK.finditer(wikitext):
        if link.start() < position:  # inside a link already removed
            continue
        end = _link_end(wikitext, link.end())
        if end is not None:
            parts += [wikitext[position:link.start()], " "]
            position = end
    return "".join(parts) + wikitext[position:]


def clean_line(line: str) -> str:
    """One line of filter_wiki's output as prose: emphasis and extra spaces removed, brackets emptied by removed
    templates dropped."""
    line = _SPACE.sub(" ", _EMPHASIS.sub("", line))
    line = _BRACKET_CLOSING.sub(")", _BRACKET_OPENING.sub("(", line))
    return SPACE_BEFORE_PUNCT.sub(r"\1", _EMPTY_BRACKET.sub("", line)).strip()


def wiki_to_paragraphs(wikitext: str) -> list[str]:
    """Turn one article's wiki markup into its paragraphs of prose.

    gensim's `filter_wiki` removes templates, links, references, tables and HTML; what remains are
    headings, list items and bold/italic quotes, which we drop or strip here.
    """
    from gensim.corpora.wikicorpus import filter_wiki

    wikitext = _LINE_BREAK.sub(" ", _REF.sub("", _GALLERY.sub("", remove_file_links(wikitext))))
    paragraphs = []
    for line in filter_wiki(wikitext).split("\n"):
        line = line.strip()
        heading = _HEADING.match(line)
        if heading:
            if heading.group(2).lower() in _BACK_MATTER:
                break
            continue
        if not line or line[0] in "*#:;|!{}" or _IMAGE_LINE.search(line):  # lists, indents, table and image debris
            continue
        line = clean_line(line)
        if len(line.split()) >= MIN_WORDS and line[-1] in '.!?")':
            paragraphs.append(line)
    return paragraphs
