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
from itertools import chain
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


# ---------------------------------------------------------------------------------------------------------------
# The training text as run_mlm.py reads it: raw splits (a Hub dataset, local files or the sample above, streamed
# or not), then sequences of tokens.

# With --streaming, what is read from the start of the stream instead of the whole split.
STREAM_VALIDATION_TEXTS = 1000  # held out when there is no validation split
STREAM_EVAL_SEQUENCES = 1000  # the evaluation set, unless --max_eval_samples
STREAM_SAMPLE_TEXTS = 100_000  # to train a tokenizer
STREAM_UNIGRAM_SEQUENCES = 10_000  # to count the unigram floor

WIKIPEDIA_SAMPLE_DESCRIPTION = (
    "the English Wikipedia sample shipped with gensim (the first pages of a dump: about 100 articles, 390k words of "
    "prose after markup, redirects, lists and reference sections are removed), split by article into train "
    "and validation"
)




def load_raw_datasets(data_args, cache_dir: str | None) -> tuple[datasets.DatasetDict, str]:
    """The raw text as a DatasetDict with "train" and "validation" splits, and a sentence describing it."""
    pct = data_args.validation_split_percentage
    if data_args.dataset_name is not None:
        raw = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, cache_dir=cache_dir,
                                    streaming=data_args.streaming)
        description = f"`{data_args.dataset_name}`" + (f" (`{data_args.dataset_config_name}`)" if data_args.dataset_config_name else "")
    elif data_args.train_file is not None:
        data_files = {"train": data_args.train_file}
        if data_args.validation_file is not None:
            data_files["validation"] = data_args.validation_file
        extension = data_args.train_file.rsplit(".", 1)[-1]
        builder = {"txt": "text", "jsonl": "json"}.get(extension, extension)
        raw = datasets.load_dataset(builder, data_files=data_files, cache_dir=cache_dir, streaming=data_args.streaming)
        description = "local files: " + ", ".join(os.path.basename(f) for f in data_files.values())
    else:
        raw = load_wikipedia_sample(validation_percentage=pct)
        if data_args.streaming:
            raw = datasets.IterableDatasetDict({name: split.to_iterable_dataset() for name, split in raw.items()})
        return raw, WIKIPEDIA_SAMPLE_DESCRIPTION
    if "train" not in raw or is_empty(raw["train"]):
        raise ValueError(f"The training data ({description}) is empty")
    if "validation" not in raw and data_args.streaming:  # the length of a stream is unknown: hold out its start
        raw = datasets.IterableDatasetDict({"train": raw["train"].skip(STREAM_VALIDATION_TEXTS),
                                            "validation": raw["train"].take(STREAM_VALIDATION_TEXTS)})
        description += f", the first {STREAM_VALIDATION_TEXTS} texts held out for validation"
    elif "validation" not in raw:
        # Not shuffled, so that the held-out text is contiguous (the end of the file), not interleaved lines.
        split = raw["train"].train_test_split(test_size=pct / 100, shuffle=False)
        raw = datasets.DatasetDict({"train": split["train"], "validation": split["test"]})
        description += f", the last {pct}% held out for validation"
    return raw, description


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


def resolve_text_column(raw: datasets.DatasetDict, name: str | None, description: str = "the data") -> str:
    """The column holding the text (`name`, else "text", else the first), checked to hold text in both splits."""
    columns = column_names(raw["train"])
    if name is None:
        name = "text" if "text" in columns else columns[0]
    elif name not in columns:
        raise ValueError(f"--text_column_name {name!r} is not a column of the training data; available columns: {columns}")
    for split in ("train", "validation"):
        if not any(t and not t.isspace() for t in first_texts(raw[split], name, STREAM_VALIDATION_TEXTS)):
            raise ValueError(f"The {split} split of {description} has no text in column {name!r}")
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
            return tokenizer(lines, truncation=True, max_length=max_seq_length, **extra)
    else:
        # Each text gets [CLS] ... [SEP]; the concatenation is then cut into equal chunks. Texts longer than
        # the model are expected here, so the tokenizer's length warning is noise.
        def tokenize(examples):
            return tokenizer(examples[text_column], verbose=False, **extra)

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
    """(train, validation) sequences, cut to --max_train_samples / --max_eval_samples. With --streaming the
    training set stays a stream and the validation set is the start of its stream, fixed (it is masked once)."""
    grouped = tokenize_and_group(raw, tokenizer, text_column, data_args, max_seq_length, training_args)
    train, validation = grouped["train"], grouped["validation"]
    if data_args.streaming:
        validation = datasets.Dataset.from_list(list(validation.take(data_args.max_eval_samples or STREAM_EVAL_SEQUENCES)))
    for split, dataset in (("train", train), ("validation", validation)):
        if is_empty(dataset):
            raise ValueError(
                f"The {split} split of {description} gives no sequence of {max_seq_length} tokens; "
                "add text, lower --max_seq_length or use --line_by_line"
            )
    if data_args.max_train_samples is not None:
        train = (train.take(data_args.max_train_samples) if data_args.streaming else
                 train.select(range(min(len(train), data_args.max_train_samples))))
    if data_args.max_eval_samples is not None and not data_args.streaming:
        validation = validation.select(range(min(len(validation), data_args.max_eval_samples)))
    return train, validation

