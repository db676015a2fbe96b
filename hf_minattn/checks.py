"""Checks of user-given numbers, input files and output folders shared by the training arguments, the probes and the
experiments: each fails at once with the flag's name, before any data is read or any model loaded."""

import codecs
import os


def check_bounds(arguments, bounds: dict, separator: str = "_") -> None:
    """Each `bounds` entry {field: (lowest, highest or None, lowest allowed?)}: a ValueError naming the flag when a
    value that is set lies outside. What torch or the Trainer would otherwise reject only when the optimizer or a
    DataLoader is built, after the tokenizer was trained, or never (a negative warm-up). `separator`: the flags'
    word separator (run_mlm's `--max_steps`, hf-minattn's `--max-sentences`)."""
    for name, (low, high, low_allowed) in bounds.items():
        value = getattr(arguments, name)
        if value is None:
            continue
        below = value < low if low_allowed else value <= low
        if below or (high is not None and value >= high):
            expected = (f"{'at least' if low_allowed else 'above'} {low}" if high is None
                        else f"in {'[' if low_allowed else '('}{low}, {high})")
            raise ValueError(f"--{name.replace('_', separator)} must be {expected}, got {value}")


def check_output_folder(path, flag: str) -> None:
    """A ValueError naming `flag` when `path` is an existing file: an output folder must be a folder (new, or one an
    earlier call wrote), and finding out only when the first file is written would lose the work before it."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{flag} {os.fspath(path)!r} is a file; expected a folder (a new one, or one an earlier call "
                         "wrote)")


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


DATA_FILE_BUILDERS = {"txt": "text", "json": "json", "jsonl": "json", "csv": "csv", "parquet": "parquet"}


def data_file_builder(path, what: str = "file") -> str:
    """The `datasets` builder that reads the data file `path`, by its extension; a ValueError naming `what` for an
    extension it does not read."""
    extension = os.fspath(path).rsplit(".", 1)[-1].lower()
    if extension not in DATA_FILE_BUILDERS:
        raise ValueError(f"{what} {os.fspath(path)!r}: expected a .txt, .json, .jsonl, .csv or .parquet file")
    return DATA_FILE_BUILDERS[extension]


def check_data_file(path, what: str = "file") -> str:
    """data_file_builder(path), once the file is checked: a readable Parquet file, or UTF-8 text for the others."""
    builder = data_file_builder(path, what)
    (check_parquet_file if builder == "parquet" else check_text_file)(path, what)
    return builder
