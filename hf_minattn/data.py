"""The project's default corpus: the English Wikipedia sample that ships inside the gensim wheel.

It is the only real prose available on a machine with no network, so training, probes and tests all
read it through `load_wikipedia_sample()`, which parses the dump once and caches the result.
"""

import bz2
import codecs
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import datasets

WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

# Bump when the parsing or the split changes, so stale caches are not reused.
CACHE_VERSION = "1"

# Sections whose content is lists of references and links, not prose.
_BACK_MATTER = {"references", "see also", "external links", "further reading", "bibliography", "notes",
                "sources", "citations", "footnotes"}
# Paragraphs shorter than this are captions, table cells or list debris left after filter_wiki.
_MIN_WORDS = 10

_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1$")
_EMPHASIS = re.compile(r"'{2,}")  # ''italic'' and '''bold''' survive filter_wiki
_SPACE = re.compile(r"[ \t\u00a0]+")
_SPACE_BEFORE_PUNCT = re.compile(r" ([,.;:)])")  # left where a template or reference was removed


def wikipedia_dump_path() -> str:
    """Path of the MediaWiki XML dump inside the installed gensim package."""
    from gensim.test.utils import datapath

    return datapath(WIKI_DUMP)


def wiki_to_paragraphs(wikitext: str) -> list[str]:
    """Turn one article's wiki markup into its paragraphs of prose.

    gensim's `filter_wiki` removes templates, links, references, tables and HTML; what remains are
    headings, list items and bold/italic quotes, which we drop or strip here.
    """
    from gensim.corpora.wikicorpus import filter_wiki

    paragraphs = []
    for line in filter_wiki(wikitext).split("\n"):
        line = line.strip()
        heading = _HEADING.match(line)
        if heading:
            if heading.group(2).lower() in _BACK_MATTER:
                break
            continue
        if not line or line[0] in "*#:;|!{}":  # lists, indents, table debris
            continue
        line = _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACE.sub(" ", _EMPHASIS.sub("", line))).strip()
        if len(line.split()) >= _MIN_WORDS and line[-1] in '.!?")':
            paragraphs.append(line)
    return paragraphs


def is_validation_title(title: str, validation_percentage: int) -> bool:
    """Deterministic article-level split: the same article always lands in the same split, on every
    machine and Python version (unlike the salted built-in `hash`)."""
    return int(hashlib.md5(title.encode("utf-8")).hexdigest(), 16) % 100 < validation_percentage


def _parse_wikipedia_sample(validation_percentage: int) -> datasets.DatasetDict:
    from gensim.corpora.wikicorpus import extract_pages

    rows = {"train": {"title": [], "text": []}, "validation": {"title": [], "text": []}}
    with bz2.open(wikipedia_dump_path()) as dump:
        # Namespace "0" holds the articles (no talk, user, category or template pages).
        for title, wikitext, _ in extract_pages(dump, filter_namespaces=("0",)):
            if wikitext.lstrip().lower().startswith("#redirect"):
                continue
            split = "validation" if is_validation_title(title, validation_percentage) else "train"
            for paragraph in wiki_to_paragraphs(wikitext):
                rows[split]["title"].append(title)
                rows[split]["text"].append(paragraph)
    return datasets.DatasetDict({split: datasets.Dataset.from_dict(columns) for split, columns in rows.items()})


def default_cache_dir() -> Path:
    # datasets.config.HF_DATASETS_CACHE honours the HF_DATASETS_CACHE and HF_HOME variables.
    return Path(datasets.config.HF_DATASETS_CACHE) / "hf_minattn"


def load_wikipedia_sample(validation_percentage: int = 5, cache_dir: str | os.PathLike | None = None) -> datasets.DatasetDict:
    """The Wikipedia sample inside gensim as a `DatasetDict` with "train" and "validation" splits.

    Each row is one paragraph of prose, with columns "title" and "text". Redirects, non-article pages,
    headings, lists and reference sections are dropped. Articles (not paragraphs) are assigned to the
    validation split by a hash of their title, so no article is split across the two.

    The first call parses the dump (a few seconds) and saves the result under `cache_dir` (default:
    `$HF_DATASETS_CACHE/hf_minattn`); later calls load it from there.
    """
    if not 0 < validation_percentage < 100:
        raise ValueError(f"validation_percentage must be between 1 and 99, got {validation_percentage}")
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = cache_dir / f"wikipedia_sample-v{CACHE_VERSION}-val{validation_percentage}"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Save to a temporary folder and rename it, so that concurrent callers (e.g. the processes of
        # a distributed run) never read a half-written cache.
        tmp = tempfile.mkdtemp(dir=cache_dir, prefix=path.name + ".tmp")
        _parse_wikipedia_sample(validation_percentage).save_to_disk(tmp)
        try:
            os.rename(tmp, path)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    return datasets.load_from_disk(str(path))


def check_text_file(path, what: str = "file") -> str:
    """Raise a one-line error naming `path` unless it is an existing file of UTF-8 text with something other
    than whitespace in it (`what` names the option, e.g. "--train_file"); returns the path."""
    if not os.path.isfile(path):
        kind = "a folder" if os.path.isdir(path) else "no such file"
        raise FileNotFoundError(f"{what} {path!r}: {kind}; expected a UTF-8 text file")
    decoder, has_text, offset = codecs.getincrementaldecoder("utf-8")(), False, 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError as error:
                raise ValueError(f"{what} {path!r} is not UTF-8 text (byte 0x{chunk[error.start]:02x} at offset "
                                 f"{offset + error.start}); expected a UTF-8 text file") from None
            has_text = has_text or bool(text.strip())
            offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise ValueError(f"{what} {path!r} ends in the middle of a UTF-8 character; expected a UTF-8 text file") from None
    if not has_text:
        raise ValueError(f"{what} {path!r} is empty or only whitespace; expected text to train on or probe")
    return path

