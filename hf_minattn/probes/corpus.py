"""Where the probe sentences come from: a text file, a saved dataset, or the default Wikipedia corpus
(`hf_minattn.data.load_wikipedia_corpus`, the corpus run_mlm trains on when no data is named)."""

import re

# A sentence ends at . ! or ? before a space and a capital, a digit, a quote or a bracket; not after an initial
# ("George W. Bush") or a title ("Dr. Smith"), whose full stop is not an end. Still crude ("Vitamin C. It" stays one
# sentence), but the probes only need sentence-sized contexts, not linguistically exact boundaries.
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Mt", "Jr", "Sr", "Prof", "Gen", "Col", "Lt", "Sgt", "Rev", "No", "vs",
                  "Fr", "Ft")
_NOT_AN_END = "".join(rf"(?<!\b{a}\.)" for a in _ABBREVIATIONS) + r"(?<!\b[A-Z]\.)"
_SENTENCE_END = re.compile(r"(?<=[.!?])" + _NOT_AN_END + r"\s+(?=[\"'(\[A-Z0-9])")
# Wiki markup left by gensim's filter_wiki (''italic'', '''bold''') would otherwise become tokens.
_WIKI_QUOTES = re.compile(r"'{2,}")


def split_sentences(texts, max_sentences=2000, min_words=4):
    """Split paragraphs into sentences, keeping those with at least `min_words` words, up to `max_sentences`."""
    sentences = []
    for text in texts:
        for sentence in _SENTENCE_END.split(_WIKI_QUOTES.sub("", text)):
            sentence = " ".join(sentence.split())
            if len(sentence.split()) >= min_words:
                sentences.append(sentence)
                if max_sentences and len(sentences) >= max_sentences:
                    return sentences
    return sentences


def _require(sentences, source):
    if not sentences:
        raise ValueError(f"the corpus from {source} has no usable sentences (need at least 4 words each)")
    return sentences


def read_corpus_file(path, max_sentences=2000, what="corpus file"):
    """A UTF-8 text file, one paragraph (or sentence) per line."""
    from hf_minattn.checks import check_text_file

    check_text_file(path, what)
    with open(path, encoding="utf-8") as f:
        return _require(split_sentences((line for line in f if line.strip()), max_sentences), path)


def read_dataset(name_or_path, split=None, column=None, max_sentences=2000):
    """A `datasets` dataset saved with save_to_disk, a data file (.txt, .csv, .json, .jsonl, .parquet) or any name
    `load_dataset` resolves; `split` where it has splits (None: "validation", else its first split; a split it
    does not have is an error, as is a split of a dataset that has none); `column` its text (None: "text", else its
    first column of strings)."""
    import os

    import datasets

    from hf_minattn.checks import check_data_file, check_dataset_source, load_data
    from hf_minattn.data import check_text_column, default_text_column

    if os.path.isdir(name_or_path):
        data = datasets.load_from_disk(name_or_path)
    elif os.path.isfile(name_or_path):
        builder = check_data_file(name_or_path, "--dataset")
        data = load_data(builder, {"train": name_or_path}, builder, {"train": "--dataset"}, data_files=name_or_path)
    else:
        check_dataset_source(name_or_path, "--dataset", "a folder saved by save_to_disk, a data file (.txt, .json, "
                             ".jsonl, .csv, .parquet) or a dataset name on the Hub")
        data = datasets.load_dataset(name_or_path)
    data = _split_of(data, split, name_or_path)
    texts = check_text_column(data, column or default_text_column(data), "--text-column", name_or_path)
    return _require(split_sentences((t for t in texts if t), max_sentences), name_or_path)


def _split_of(data, split, name):
    """The split `split` of `data` (a DatasetDict; None: "validation", else its first split); `data` itself when it
    has no splits and none was asked for."""
    import datasets

    if not isinstance(data, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        if split is not None:
            raise ValueError(f"--split {split!r}: --dataset {name!r} has no splits; drop --split")
        return data
    if split is None:
        return data["validation"] if "validation" in data else next(iter(data.values()))
    if split not in data:
        raise ValueError(f"--split {split!r} is not a split of --dataset {name!r}; its splits: {list(data)}")
    return data[split]


def default_sentences(max_sentences=2000):
    """Sentences from the default Wikipedia corpus: validation first (held-out text, the same as in the gensim
    sample alone), then train."""
    from hf_minattn.data import load_wikipedia_corpus

    data = load_wikipedia_corpus()
    texts = list(data["validation"]["text"]) + list(data["train"]["text"])
    return _require(split_sentences(texts, max_sentences), "the default Wikipedia corpus")


def wikipedia_train_sentences(max_sentences=0):
    """Every sentence (any length) of the training split of the default Wikipedia corpus (the gensim sample's
    training articles, then the wiki summaries): the corpus the model was trained on, where word vectors are pooled
    and word2vec is trained. `max_sentences` 0 = all; a cap takes the sample's sentences first."""
    from hf_minattn.data import load_wikipedia_corpus

    if isinstance(max_sentences, bool) or not isinstance(max_sentences, int) or max_sentences < 0:
        raise ValueError(f"max_sentences must be a non-negative integer (0 = all), got {max_sentences!r}")
    texts = load_wikipedia_corpus()["train"]["text"]
    return _require(split_sentences(texts, max_sentences, min_words=1), "the default Wikipedia corpus's training split")
