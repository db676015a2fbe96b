"""Checks of user-given numbers, input files, arguments files and output folders shared by the training arguments,
the probes and the experiments: each fails at once with the flag's name, before any data is read or any model
loaded."""

import codecs
import dataclasses
import enum
import json
import math
import numbers
import os
import re
import tempfile
import types
import typing


def check_bounds(arguments, bounds: dict, separator: str = "_") -> None:
    """Each `bounds` entry {field: (lowest, highest or None, lowest allowed?)}: a ValueError naming the flag when a
    value that is set lies outside, or is not a finite number (NaN compares False with every bound, and inf passes a
    bound without upper limit). What torch or the Trainer would otherwise reject only when the optimizer or a
    DataLoader is built, after the tokenizer was trained, or never (a negative warm-up, a NaN learning rate).
    `separator`: the flags' word separator (run_mlm's `--max_steps`, hf-minattn's `--max-sentences`)."""
    for name, (low, high, low_allowed) in bounds.items():
        value = getattr(arguments, name)
        if value is None:
            continue
        expected = (f"{'at least' if low_allowed else 'above'} {low}" if high is None
                    else f"in {'[' if low_allowed else '('}{low}, {high})")
        flag = f"--{name.replace('_', separator)}"
        if isinstance(value, numbers.Real) and not math.isfinite(value):
            raise ValueError(f"{flag} must be a finite number {expected}, got {value}")
        below = value < low if low_allowed else value <= low
        if below or (high is not None and value >= high):
            raise ValueError(f"{flag} must be {expected}, got {value}")


def check_idle(arguments, names, why: str, defaults: dict | None = None, separator: str = "_") -> None:
    """A ValueError naming the first of `names` that `arguments` (a dataclass, an argparse Namespace) sets to other
    than its default (`defaults`, else the dataclass's): `why` says what leaves it unused. Such a flag would be
    ignored without a word (--vocab_size beside a tokenizer that is not trained, say)."""
    if defaults is None:
        defaults = {f.name: f.default for f in dataclasses.fields(arguments)}
    for name in names:
        if getattr(arguments, name) != defaults[name]:
            flag = f"--{name.replace('_', separator)}"
            raise ValueError(f"{flag} {getattr(arguments, name)!r} would be ignored: {why}; drop {flag}")


def check_finite_floats(arguments, separator: str = "_") -> None:
    """A ValueError naming the flag of every float attribute of `arguments` (a dataclass, an argparse Namespace) that
    is NaN or infinite: no flag of this project means anything by them, and each would fail late (torch's optimizer)
    or train a NaN model silently."""
    for name, value in vars(arguments).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"--{name.replace('_', separator)} must be a finite number, got {value}")


def check_output_folder(path, flag: str) -> None:
    """A ValueError naming `flag` unless `path` is a folder this process can write, or one it can create: finding
    out only when the first file is written would lose the work before it. The path must not be a file nor lie
    under one, and its nearest existing folder must take new entries. Write permission bits cannot tell (root
    passes them on /sys, /proc or a read-only mount): an empty folder is made there and removed at once, so
    nothing is left behind."""
    path = os.fspath(path)
    if not path:  # abspath("") is the working folder: every output would land beside the user's own files
        raise ValueError(f"{flag} is empty; expected a folder path")
    existing = os.path.abspath(path)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "is a file" if existing == os.path.abspath(path) else f"lies under {existing!r}, a file"
        raise ValueError(f"{flag} {path!r} {where}; expected a folder (a new one, or one an earlier call wrote)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=existing))
    except OSError as error:
        where = "" if existing == os.path.abspath(path) else f"its nearest existing folder {existing!r} "
        raise ValueError(f"{flag} {path!r} cannot be written: {where}takes no new files ({error.strerror}); expected "
                         "a folder this user can create and write") from None


def lies_within(path, folder) -> bool:
    """Whether `path` is `folder` or lies under it, links and relative paths resolved."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def check_holdout(rows: int, percentage: int, what: str) -> None:
    """A ValueError naming `what` (the data) and --validation_split_percentage unless holding `percentage`% of its
    `rows` rows out for validation (rounded up, as datasets' train_test_split does) leaves some to train on."""
    held_out = math.ceil(percentage / 100 * rows)
    if rows - held_out < 1:
        raise ValueError(f"{what} has {rows} row{'s' if rows != 1 else ''}: holding out --validation_split_percentage "
                         f"{percentage}% of them for validation ({held_out}) leaves none to train on; add rows, lower "
                         "--validation_split_percentage or give a --validation_file")


def check_stream_holdout(train_is_empty: bool, held_out: int, what: str) -> None:
    """A ValueError naming `what` (the data) when holding its first `held_out` texts out for validation, as
    --streaming does without a validation split, leaves no text to train on: the data had no more than that."""
    if train_is_empty:
        raise ValueError(f"{what} has no more than {held_out:,} texts, all held out for validation under --streaming "
                         f"(which holds out the first {held_out:,} where there is no validation split); give a "
                         "--validation_file, or drop --streaming to hold out --validation_split_percentage of them")


def check_train_split(splits, what: str) -> None:
    """A ValueError naming `what` (the data) and listing its splits when none of `splits` is "train"."""
    if "train" not in splits:
        raise ValueError(f"{what} has no 'train' split (its splits: {', '.join(map(repr, splits)) or 'none'}); "
                         "expected a dataset with a 'train' split to train on")


def read_json_object(path, what: str) -> dict:
    """The JSON object in file `path`; a ValueError naming the file and `what` (e.g. "--model_name_or_path 'x'")
    when it is not valid UTF-8 JSON (truncated, say) or holds something other than an object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{what}: {os.fspath(path)!r} is not valid JSON ({error}); expected a JSON object") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what}: {os.fspath(path)!r} holds a JSON {type(data).__name__}; expected a JSON object")
    return data


def _require_file(path, what: str, expected: str) -> None:
    if not os.path.isfile(path):
        kind = "a folder" if os.path.isdir(path) else "no such file"
        raise FileNotFoundError(f"{what} {path!r}: {kind}; expected {expected}")


def check_text_file(path, what: str = "file") -> str:
    """Raise a one-line error naming `path` unless it is an existing file of UTF-8 text with something other
    than whitespace in it (`what` names the option, e.g. "--train_file"); returns the path."""
    _require_file(path, what, "a UTF-8 text file")
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


def check_parquet_file(path, what: str = "file") -> str:
    """Raise a one-line error naming `path` unless it is an existing Parquet file (its schema is read, not its rows);
    returns the path."""
    import pyarrow.parquet

    _require_file(path, what, "a Parquet file")
    try:
        pyarrow.parquet.read_schema(path)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{what} {path!r} is not a Parquet file ({error})") from None
    return path


# The largest seed: numpy's and gensim's seeding take no more (run_mlm, word2vec), and a larger one failed only after
# the work before it (the tokenizer, every encoding pass)
MAX_SEED = 2**32 - 1

DATA_FILE_BUILDERS = {"txt": "text", "json": "json", "jsonl": "json", "csv": "csv", "parquet": "parquet"}


def data_file_builder(path, what: str = "file") -> str:
    """The `datasets` builder that reads the data file `path`, by its extension; a ValueError naming `what` for an
    extension it does not read."""
    extension = os.fspath(path).rsplit(".", 1)[-1].lower()
    if extension not in DATA_FILE_BUILDERS:
        raise ValueError(f"{what} {os.fspath(path)!r}: expected a .txt, .json, .jsonl, .csv or .parquet file")
    return DATA_FILE_BUILDERS[extension]


def check_dataset_source(name: str, flag: str, expected: str) -> None:
    """A ValueError naming `flag` where `name`, neither a file nor a folder here, reads as a path: a data
    file's extension, or a form no Hub name has (absolute, ./ or ~, more than one '/'). datasets would look for it
    on the Hub and answer "Couldn't reach ... on the Hub", or name the Hub offline, for a typo in a local path."""
    if os.path.exists(name):
        return
    base = os.path.basename(name)
    extension = base.rsplit(".", 1)[-1].lower() if "." in base else ""
    if extension in DATA_FILE_BUILDERS or os.path.isabs(name) or name.startswith((".", "~")) or name.count("/") > 1:
        raise ValueError(f"{flag} {name!r}: no such file or folder; expected {expected}")


def check_data_file(path, what: str = "file") -> str:
    """data_file_builder(path), once the file is checked: a readable Parquet file, or UTF-8 text for the others."""
    builder = data_file_builder(path, what)
    (check_parquet_file if builder == "parquet" else check_text_file)(path, what)
    return builder


def empty_split(error: Exception):
    """The split datasets.load_dataset found no rows for (its 'Instruction "train" corresponds to no data!', e.g. a
    CSV file of a header only), else None."""
    empty = re.search(r'Instruction "(\w+)" corresponds to no data', str(error))
    return empty[1] if empty else None


def data_files_error(error: Exception, data_files: dict, builder: str | None, flags: dict | None = None) -> Exception:
    """The error to raise for `error`, which datasets.load_dataset raised reading `data_files` ({split: path}) with
    its `builder` (None: the one datasets chose for a dataset's folder or Hub name): one line naming the files (a
    file it cannot parse, a CSV file of a header only), else `error`. `flags` ({split: flag}) names the flag that
    gave each path: --train_file and --validation_file unless given (the probes' --dataset, --dataset_name)."""
    flags = flags or {split: f"--{split}_file" for split in data_files}
    kind = f"{builder} data" if builder else "data"
    empty = empty_split(error)
    if empty in data_files:
        return ValueError(f"{flags[empty]} {data_files[empty]!r} has no rows; expected {kind} with at least one row "
                          "of text")
    columns = re.search(r"there are (.*?columns.*?)\.?$", str(error), re.MULTILINE)
    if type(error).__name__ == "DatasetGenerationCastError" and columns and len(data_files) > 1:
        return ValueError(f"--train_file {data_files['train']!r} and --validation_file {data_files['validation']!r} have "
                          f"different columns (the validation file has {columns[1]}); expected the same columns in both")
    if type(error).__name__ == "DatasetGenerationError":  # e.g. a .json file that is not JSON, a ragged CSV file
        cause = str(error.__cause__ or error).strip().splitlines()[0]
        named, many = ", ".join(f"{flags[split]} {path!r}" for split, path in data_files.items()), len(data_files) > 1
        expected = (f"{builder} data file{'s' if many else ''}" if builder else
                    "data files datasets reads (.txt, .json, .jsonl, .csv, .parquet)")
        return ValueError(f"{named}: datasets could not read {'them' if many else 'it'}"
                          f"{f' as {builder}' if builder else ''} ({cause}); expected {expected}")
    return error


def load_data(path, sources: dict, builder: str | None, flags: dict | None = None, **kwargs):
    """datasets.load_dataset(path, **kwargs), which reads `sources` ({split: file, or a dataset's folder or Hub
    name}): an error of theirs in one line naming them (data_files_error), not datasets' traceback from inside its
    builder."""
    import datasets

    try:
        return datasets.load_dataset(path, **kwargs)
    except (datasets.exceptions.DatasetGenerationError, ValueError) as error:
        named = data_files_error(error, sources, builder, flags)
        raise named from (error.__cause__ if named is error else None)  # one it does not name keeps its cause


# What each JSON value is called in messages: the type json.load gives it.
_JSON_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", type(None): "null",
               list: "a list", dict: "an object"}
_EXPECTED = {bool: "true or false", int: "an integer", float: "a number", str: "a string", type(None): "null",
             list: "a list", dict: "an object"}


def _same(value, allowed) -> bool:
    return type(value) is type(allowed) and value == allowed  # 1 == True and 0 == False, but not here


def json_value_fits(value, annotation) -> bool:
    """Whether `value`, as json.load gives it, has the type `annotation` (a dataclass field's resolved type hint): a
    bool only for bool, an integer (not a bool) for int, an integer or a float for float, null for None; unions,
    Literal, enums (their values), list[X] and dict[K, V] as declared. A class no JSON value can be is not judged."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(json_value_fits(value, arg) for arg in args)
    if origin is typing.Literal:
        return any(_same(value, arg) for arg in args)
    if list in (origin, annotation):
        return isinstance(value, list) and (not args or all(json_value_fits(v, args[0]) for v in value))
    if dict in (origin, annotation):
        return isinstance(value, dict) and (len(args) < 2 or all(json_value_fits(v, args[1]) for v in value.values()))
    if _is_enum(annotation):
        return any(_same(value, member.value) for member in annotation)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation in _EXPECTED:
        return type(value) is annotation
    return True  # typing.Any, or a class (accelerate's ParallelismConfig) that its dataclass checks itself


def describe_json_type(annotation) -> str:
    """`annotation` in the words of a JSON file: "an integer or null", "null, a string or a list of strings"."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):  # an enum beside str (IntervalStrategy | str) adds nothing
        parts = list(dict.fromkeys(describe_json_type(arg) for arg in args if not (str in args and _is_enum(arg))))
        return " or ".join(parts) if len(parts) < 3 else f"{', '.join(parts[:-1])} or {parts[-1]}"
    if origin is typing.Literal:
        return " or ".join(json.dumps(arg) for arg in args)
    if origin is list and args in ((str,), (int,), (float,)):
        return f"a list of {_EXPECTED[args[0]].split(' ', 1)[1]}s"
    if _is_enum(annotation):
        return "one of " + ", ".join(json.dumps(member.value) for member in annotation)
    return _EXPECTED.get(origin or annotation, getattr(annotation, "__name__", str(annotation)))


def _is_enum(annotation) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


def check_json_arguments(values: dict, dataclass_types, what: str) -> None:
    """A ValueError naming the key, its value and the type expected for the first entry of `values` (an arguments
    file read by json.load) that does not fit the type hint (`json_value_fits`) or the "choices" of its field in
    `dataclass_types`: HfArgumentParser.parse_dict converts nothing, so "max_steps": "abc" failed in a comparison
    deep inside the checks, and "line_by_line": "false" was true. Keys of no field are left to parse_dict."""
    for dataclass_type in dataclass_types:
        hints = typing.get_type_hints(dataclass_type)
        for field in dataclasses.fields(dataclass_type):
            if not field.init or field.name not in values:
                continue
            value, choices = values[field.name], field.metadata.get("choices")
            if not json_value_fits(value, hints[field.name]):
                expected = describe_json_type(hints[field.name])
            elif choices is not None and value is not None and not any(_same(value, c) for c in choices):
                expected = "one of " + ", ".join(json.dumps(choice) for choice in choices)
            else:
                continue
            kind = _JSON_KINDS.get(type(value), type(value).__name__)
            raise ValueError(f"{what}: {json.dumps(field.name)} is {json.dumps(value)} ({kind}); expected {expected}")
