"""The documentation works as written: README.md and docs/*.md link only to files (and headings) that exist, their
Python snippets run on a tiny model, and the commands of their bash blocks parse with the real argument parsers.

A Python snippet refers to a model folder as `outputs/minattn-wiki` (what `make demo` writes); the tests save a tiny
model there instead. A snippet with a comment saying `not run` (a fragment, a module of the package) is skipped."""

import argparse
import importlib
import inspect
import re
import shlex
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from conftest import tiny_config
from hf_minattn import MinAttnForMaskedLM
from hf_minattn.cli import COMMANDS
from hf_minattn.run_mlm import parse_args
from hf_minattn.sentence_embedding import write_sentence_transformers_files

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MODEL_PLACEHOLDER = "outputs/minattn-wiki"
README_MAX_LINES = 150

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
NOT_RUN = re.compile(r"#.*\bnot run\b")


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """(line number, code) of every fenced block of `language` in `page`."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == language]


def prose(page: Path) -> str:
    """The page without its fenced blocks and inline code, where a `[x](y)` is code, not a link."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text(encoding="utf-8")))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*?)\s*$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def relative_links() -> list[tuple[Path, str]]:
    return [(page, target) for page in PAGES for target in LINK.findall(prose(page))
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page, target", relative_links(), ids=lambda x: x.name if isinstance(x, Path) else x)
def test_every_relative_link_resolves_to_a_file_and_heading(page, target):
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    assert resolved.exists(), f"{page.name} links to {target}: no such file"
    if anchor:
        assert resolved.suffix == ".md" and anchor in anchors(resolved), \
            f"{page.name} links to {target}: {resolved.name} has no heading with that anchor"


def test_the_link_check_finds_links_and_headings():
    """The extraction itself: links in code are not links, and a heading's anchor is GitHub's."""
    assert len(relative_links()) > 20
    assert "the-demos-width" in anchors(ROOT / "docs" / "recipe.md")
    assert "on-a-gpu-the---scale-preset" in anchors(ROOT / "docs" / "recipe.md")


def test_readme_is_short_and_undated():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert not ISO_DATE.findall(text), "dates belong in the dated notebooks (docs/recipe.md, benchmarks/NOTES.md)"
    for command in ("make demo", "make test"):  # what CI (.ci/run) and the demo's users type
        assert f"\n{command} " in text


# Snippets that take more than a few seconds (the dynamo ONNX exporter: most of a minute on 2 CPU cores).
SLOW_SNIPPETS = ("torch.onnx.export",)


def python_snippets():
    return [pytest.param(code, id=f"{page.name}:{line}",
                         marks=[pytest.mark.slow] if any(call in code for call in SLOW_SNIPPETS) else [])
            for page in PAGES for line, code in blocks(page, "python") if not NOT_RUN.search(code)]


@pytest.fixture
def model_folder(tmp_path, tokenizer):
    """A tiny MinAttn folder as run_mlm.py writes one: weights, modeling code, tokenizer, sentence-transformers files."""
    folder = tmp_path / "model"
    config = tiny_config(hidden_size=32, vocab_size=128, max_position_embeddings=128, position_embedding_type="rope")
    MinAttnForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    write_sentence_transformers_files(folder, config.hidden_size, tokenizer.model_max_length)
    return folder


@pytest.mark.parametrize("code", python_snippets())
def test_python_snippet_runs(code, model_folder, tmp_path):
    """In a fresh interpreter, as a user pastes it: a snippet that loads a MinAttn folder without `import hf_minattn`
    or trust_remote_code=True fails here as it would for them (this test process has hf_minattn imported)."""
    work = tmp_path / "work"
    work.mkdir()  # snippets write files (a model folder, an ONNX file, HTML pages) where they run
    run = subprocess.run([sys.executable, "-c", code.replace(MODEL_PLACEHOLDER, str(model_folder))], cwd=work,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]


def test_the_snippets_found_include_the_quick_start():
    assert any("train_tokenizer" in p.values[0] for p in python_snippets())
    assert len(python_snippets()) >= 5


def commands() -> list:
    """Every `hf-minattn ...` and `... training/run_mlm.py ...` command of the bash blocks, continuation lines joined."""
    found = []
    for page in PAGES:
        for line, code in blocks(page, "bash"):
            for command in code.replace("\\\n", " ").splitlines():
                words = shlex.split(command, comments=True)
                if words[:1] == ["hf-minattn"] or "training/run_mlm.py" in words:
                    found.append(pytest.param(words, id=f"{page.name}:{line}:{' '.join(words)[:60]}"))
    return found


class Parsed(Exception):
    """Raised in place of running the job, once the command line has parsed."""


def parse_only(monkeypatch):
    """Make every argparse parser stop after parsing (unknown arguments are still errors)."""
    original = argparse.ArgumentParser.parse_known_args

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = original(self, args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        raise Parsed(namespace)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse_known_args)


@pytest.mark.parametrize("words", commands())
def test_bash_command_parses(words, tmp_path, monkeypatch, capsys):
    if words[0] == "hf-minattn":
        assert words[1] in COMMANDS, f"hf-minattn has no sub-command {words[1]!r}"
        module, function, _ = COMMANDS[words[1]]
        main = getattr(importlib.import_module(module), function)
        parse_only(monkeypatch)
        with pytest.raises((Parsed, SystemExit)) as outcome:
            main(words[2:])
        if outcome.type is SystemExit:  # --help, or an argparse error
            assert outcome.value.code == 0, capsys.readouterr().err
        return
    argv = words[words.index("training/run_mlm.py") + 1:]
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)  # --push_to_hub parses on offline machines
    monkeypatch.chdir(tmp_path)  # the text files a command names (checked when parsed) are written here
    for flag, name in zip(argv, argv[1:]):
        if flag in ("--train_file", "--validation_file"):
            Path(name).write_text("The king and the queen ruled the kingdom.\n", encoding="utf-8")
    if "--help" in argv:
        with pytest.raises(SystemExit) as outcome:
            parse_args(argv)
        assert outcome.value.code == 0
    else:  # run_mlm.py's own HfArgumentParser, with the checks its dataclasses make when parsed
        parse_args(argv)


def test_the_commands_found_include_every_entry_point():
    found = {" ".join(p.values[0][:2]) for p in commands()}
    assert {"hf-minattn probe", "hf-minattn experiments", "hf-minattn push", "hf-minattn view"} <= found
    assert any("training/run_mlm.py" in p.values[0] for p in commands())


def help_entries(argv, capsys) -> dict[str, str]:
    """`--help` of `hf-minattn ARGV` (or of run_mlm.py where argv[0] is "run_mlm"): each option's entry, one line,
    keyed by its first flag."""
    with pytest.raises(SystemExit) as outcome:
        if argv[0] == "run_mlm":
            parse_args([*argv[1:], "--help"])
        else:
            module, function, _ = COMMANDS[argv[0]]
            getattr(importlib.import_module(module), function)([*argv[1:], "--help"])
    assert outcome.value.code == 0
    entries, flag = {}, None
    for line in capsys.readouterr().out.split("options:", 1)[1].splitlines():
        if re.match(r"  -", line):
            flag = line.split()[0].rstrip(",")
            entries[flag] = line
        elif flag is not None and line.startswith("   "):
            entries[flag] += line
    return {flag: " ".join(text.split()) for flag, text in entries.items()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_states_each_default_at_most_once(command, capsys):
    doubled = [text for text in help_entries([command], capsys).values() if len(re.findall("default:", text, re.I)) > 1]
    assert not doubled, doubled


def test_help_states_the_defaults_of_numeric_options(capsys):
    probe = help_entries(["probe"], capsys)
    for flag, default in {"--head-sentences": 200, "--min-count": 5, "--bootstrap": 1000, "--mlm-probability": 0.15,
                          "--ablation-mask-draws": 1, "--batch-size": 64, "--seed": 0}.items():
        assert f"(default: {default}" in probe[flag], probe[flag]
    assert "(default: 8000)" in help_entries(["view"], capsys)["--port"]


def test_run_mlm_help_does_not_contradict_its_defaults(capsys):
    """HfArgumentParser appends "(default: None)" to a field whose None is resolved later: its help says "Unset: ...",
    never a default of its own beside it."""
    from hf_minattn.arguments import DataTrainingArguments, MinAttnTrainingArguments, ModelArguments

    ours = [f.name for cls in (ModelArguments, DataTrainingArguments) for f in fields(cls)]
    ours += list(inspect.get_annotations(MinAttnTrainingArguments))
    entries = help_entries(["run_mlm"], capsys)
    doubled = [entries[f"--{name}"] for name in ours if len(re.findall("default:", entries[f"--{name}"], re.I)) > 1]
    assert not doubled, doubled
    assert "Unset: small" in entries["--model_size"] and "Unset: on where it is fast" in entries["--bf16"]


def test_every_hand_made_break_of_check_breaks_still_applies():
    """docs/testing.md's breaks are applied by tests/check_breaks.sh, text for text: a target rewritten since (two
    were) makes its break unapplied and its claim unchecked, found only by running the script. Each OLD text must
    occur exactly once in its FILE, and each NEW text must differ from it."""
    script = (ROOT / "tests" / "check_breaks.sh").read_text()
    variables = dict(re.findall(r"^(\w+)=(\S+)$", script, re.M))  # R=hf_minattn/probes/report
    files = {name: re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], path)
             for name, path in re.findall(r"FILE\[(\w+)\]=([^;\s]+)", script)}
    olds = dict(re.findall(r"OLD\[(\w+)\]='([^']*)'", script))
    news = dict(re.findall(r"NEW\[(\w+)\]='([^']*)'", script))
    assert len(files) >= 10 and files.keys() == olds.keys() == news.keys()
    for name, path in files.items():
        text = (ROOT / path).read_text()
        assert text.count(olds[name]) == 1, f"break {name}: {olds[name]!r} occurs {text.count(olds[name])} times in {path}"
        assert news[name] != olds[name], name
