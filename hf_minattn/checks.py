"""Checks of user-given numbers and output folders shared by the training arguments, the probes and the experiments:
each fails at once with the flag's name, before any data is read or any model loaded."""

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
