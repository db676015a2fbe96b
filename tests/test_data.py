"""hf_minattn.data: the Wikipedia sample inside gensim, parsed to prose, split by article, cached."""

import pytest

from hf_minattn import data
from hf_minattn.data import is_validation_title, load_wikipedia_sample, wiki_to_paragraphs

WIKITEXT = """{{Infobox person|name=Ada}}
'''Ada Lovelace''' was an English [[mathematician]] and writer, chiefly known for her work on the Analytical Engine.<ref>Toole 1998</ref>

== Early life ==
She was the only legitimate child of the poet Lord Byron and his wife, the reformer Anne Isabella Milbanke.
* A list item that is long enough to be a paragraph if lists were kept as prose.
Too short to keep.

== References ==
Everything in the back matter is dropped, even if it reads like a sentence of prose here.
"""


def test_wiki_markup_becomes_paragraphs_of_prose():
    assert wiki_to_paragraphs(WIKITEXT) == [
        "Ada Lovelace was an English mathematician and writer, chiefly known for her work on the Analytical Engine.",
        "She was the only legitimate child of the poet Lord Byron and his wife, the reformer Anne Isabella Milbanke.",
    ]


# The articles of the bundled sample that the 5% split holds out, on every machine (md5 of the title, not the
# salted built-in hash): a known answer, so that a change of the split rule cannot pass unnoticed.
VALIDATION_TITLES = ["Agricultural science", "Algeria", "Alkali metal", "Angola", "Answer", "Anthropology", "Apollo",
                     "Appellate court", "Assistive technology", "Transport in Angola"]


def test_split_is_by_article_and_pinned():
    assert [t for t in VALIDATION_TITLES if is_validation_title(t, 5)] == VALIDATION_TITLES
    assert not any(is_validation_title(t, 5) for t in ("A", "A Modest Proposal", "ASCII", "Aa River", "Aardvark"))
    titles = [f"Article {i}" for i in range(2000)]
    validation = {t for t in titles if is_validation_title(t, 5)}
    assert 60 < len(validation) < 140  # ~5%
    assert validation <= {t for t in titles if is_validation_title(t, 10)}  # nested as the percentage grows


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return load_wikipedia_sample(cache_dir=cache), cache


def test_wikipedia_sample(sample):
    dataset, _ = sample
    assert set(dataset) == {"train", "validation"}
    assert sorted(set(dataset["validation"]["title"])) == VALIDATION_TITLES
    assert not set(dataset["train"]["title"]) & set(VALIDATION_TITLES)
    for split in dataset.values():
        assert split.column_names == ["title", "text"]
    train_titles, validation_titles = set(dataset["train"]["title"]), set(dataset["validation"]["title"])
    assert not train_titles & validation_titles
    assert len(train_titles) > 80 and 3 <= len(validation_titles) <= 20  # ~100 articles with prose, ~5% held out
    assert "Anarchism" in train_titles | validation_titles
    texts = list(dataset["train"]["text"]) + list(dataset["validation"]["text"])
    assert sum(len(t.split()) for t in texts) > 300_000
    for t in texts:
        assert len(t.split()) >= 10 and "\n" not in t
        for markup in ("'''", "''", "[[", "]]", "{{", "}}", "<ref", "=="):
            assert markup not in t, (markup, t)
    # Redirect pages have no prose: none of them became a row.
    assert not any(t.lower().startswith("#redirect") for t in texts)


def test_second_call_reads_the_cache(sample, monkeypatch):
    dataset, cache = sample

    def no_parsing(*args, **kwargs):
        raise AssertionError("the dump was parsed again")

    monkeypatch.setattr(data, "_parse_wikipedia_sample", no_parsing)
    again = load_wikipedia_sample(cache_dir=cache)
    assert list(again["validation"]["text"]) == list(dataset["validation"]["text"])
    assert again["train"].num_rows == dataset["train"].num_rows


def test_validation_percentage_is_checked(tmp_path):
    with pytest.raises(ValueError, match="between 1 and 99, got 0"):
        load_wikipedia_sample(validation_percentage=0, cache_dir=tmp_path)
