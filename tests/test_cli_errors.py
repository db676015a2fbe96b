"""Bad input on the command line: one line naming the value and what was expected, a non-zero exit, no traceback,
and an existing output folder left as it was. Each command runs in this process as its console script runs it
(`run_reporting_errors`); `test_traceback_on_request` runs the installed `hf-minattn` itself."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import tiny_config

REPO = Path(__file__).resolve().parents[1]
HF_MINATTN = Path(sys.executable).parent / "hf-minattn"  # the console script installed beside this Python


@pytest.fixture
def out(tmp_path):
    """An output folder that already holds something; no failing command may touch it."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep.txt").write_text("earlier results")
    return folder


def refused_cleanly(returncode, stderr, out, *expected):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert returncode == 2, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert ": error: " in lines[-1], lines[-1]
    for text in expected:
        assert text in lines[-1], lines[-1]
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "earlier results"


def fails_cleanly(capsys, argv, out, *expected):
    """`run_mlm.py ARGS` or `hf-minattn ARGS` (argv[0]), run as the console scripts run it, is refused cleanly. A
    traceback would fail the test as an exception."""
    from hf_minattn.cli import main, run_reporting_errors
    from hf_minattn.run_mlm import main as run_mlm

    program, *args = argv
    capsys.readouterr()  # what came before
    code = run_reporting_errors(run_mlm, args, prog="run_mlm.py") if program == "run_mlm.py" else main(args)
    refused_cleanly(code, capsys.readouterr().err, out, *expected)


def run_mlm(out, train_file):
    return ["run_mlm.py", "--output_dir", str(out), "--model_size", "tiny", "--train_file", str(train_file),
            "--max_steps", "2"]


def test_run_mlm_missing_train_file(tmp_path, out, capsys):
    missing = tmp_path / "nope.txt"
    fails_cleanly(capsys, run_mlm(out, missing), out, "run_mlm.py: error: --train_file", str(missing), "expected a UTF-8 text file")


def test_run_mlm_whitespace_only_corpus(tmp_path, out, capsys):
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n\t\n\n")
    fails_cleanly(capsys, run_mlm(out, blank), out, str(blank), "empty or only whitespace")


def test_run_mlm_and_probe_refuse_a_non_utf8_file(tmp_path, out, capsys):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Le café est très bon.\n".encode("latin-1"))
    fails_cleanly(capsys, run_mlm(out, latin1), out, str(latin1), "is not UTF-8 text (byte 0xe9 at offset 6)")
    model = tmp_path / "model"
    _save_tiny_model(model)
    fails_cleanly(capsys, ["hf-minattn", "probe", str(model), "--corpus", str(latin1), "--out", str(out)], out,
                  "hf-minattn probe: error: --corpus", "is not UTF-8 text")


def test_run_mlm_refuses_a_checkpoint_of_another_model(tmp_path, out, capsys):
    """run_mlm.py continues training MinAttn: a BERT checkpoint as --model_name_or_path is refused by its model type
    (transformers used to build a MinAttnConfig from its config.json with a warning, and a new MinAttn model was
    trained in place of the BERT named)."""
    from transformers import BertConfig

    bert = tmp_path / "bert"
    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(bert)
    text = tmp_path / "text.txt"
    text.write_text("the king and the queen.\n" * 20)
    argv = ["run_mlm.py", "--output_dir", str(out), "--model_name_or_path", str(bert), "--train_file", str(text),
            "--max_steps", "2"]
    fails_cleanly(capsys, argv, out, f"--model_name_or_path {str(bert)!r} is a 'bert' checkpoint",
                  "continues training a MinAttn model")


def test_probe_missing_model_folder(tmp_path, out, capsys):
    fails_cleanly(capsys, ["hf-minattn", "probe", str(tmp_path / "no_model"), "--out", str(out)], out,
                  "hf-minattn probe: error:", "no_model", "not a folder")


def test_probe_refuses_an_unknown_vectors_format_before_any_work(tmp_path, out, capsys):
    model = tmp_path / "model"
    _save_tiny_model(model)
    fails_cleanly(capsys, ["hf-minattn", "probe", str(model), "--vectors-format", "binary,npy", "--out", str(out)], out,
                  "hf-minattn probe: error: --vectors-format takes comma-separated formats of ['binary', 'text', "
                  "'kv'], got 'binary,npy'")


@pytest.mark.slow  # two runs of the installed console script, each importing torch
def test_traceback_on_request(tmp_path, out):
    """The installed `hf-minattn`: HF_MINATTN_TRACEBACK=1 makes the same bad input raise with its traceback (for
    debugging); without it, one line."""
    import os

    command = [str(HF_MINATTN), "probe", str(tmp_path / "no_model"), "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HF_MINATTN_TRACEBACK": "1"})
    assert result.returncode == 1 and "Traceback (most recent call last)" in result.stderr
    assert "no_model" in result.stderr.splitlines()[-1] and ": error: " not in result.stderr
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    refused_cleanly(result.returncode, result.stderr, out, "hf-minattn probe: error:", "no_model")


def test_probe_corrupt_config(tmp_path, out, capsys):
    model = tmp_path / "model"
    _save_tiny_model(model)
    (model / "config.json").write_text('{"model_type": "minattn", ')
    fails_cleanly(capsys, ["hf-minattn", "probe", str(model), "--out", str(out)], out,
                  "hf-minattn probe: error:", str(model / "config.json"), "not a valid JSON file")


def _save_tiny_model(folder):
    from hf_minattn import MinAttnForMaskedLM, train_tokenizer
    from hf_minattn.probes.corpus import default_sentences

    tokenizer = train_tokenizer(default_sentences(50), vocab_size=200, model_max_length=24, show_progress=False)
    MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def test_an_output_path_that_is_a_file_is_refused_before_any_work(tmp_path, capsys):
    """--out / --output_dir naming an existing file: one line naming the flag and the path, before a model is loaded
    or trained (the probe found out only when it wrote its vectors, after all its work), and the file untouched."""
    from hf_minattn.arguments import MinAttnTrainingArguments
    from hf_minattn.cli import main

    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    model = tmp_path / "model"
    _save_tiny_model(model)
    for argv, flag in ((["probe", str(model), "--out", str(afile)], "--out"),
                       (["compare", str(tmp_path), "--out", str(afile)], "--out"),
                       (["experiments", "--quick", "--out", str(afile)], "--out"),
                       (["findings", str(REPO / "docs" / "findings" / "results.json"), "--out", str(afile)], "--out")):
        assert main(argv) == 2
        assert f": error: {flag} '{afile}' is a file; expected a folder" in capsys.readouterr().err, argv
    with pytest.raises(ValueError, match=r"--output_dir '.*notes\.txt' is a file; expected a folder"):
        MinAttnTrainingArguments(output_dir=str(afile))
    assert afile.read_text() == "mine"


def test_experiments_refuse_a_users_files_in_a_probe_folder_before_any_training(tmp_path, capsys):
    """A report.html of the user's own where the call's probe of the full model at seed 1 writes: refused in one
    line before the training (it used to stop the call at its probe phase, after all of it), nothing written; a
    folder an earlier probe wrote (its probes.json) is not refused (test_experiments_rerun reruns into one)."""
    out = tmp_path / "out"
    mine = out / "probes" / "full" / "seed1"
    mine.mkdir(parents=True)
    (mine / "report.html").write_text("my own page")
    (out / "keep.txt").write_text("earlier results")
    from hf_minattn.cli import main
    from hf_minattn.experiments.cli import checked_arguments

    capsys.readouterr()
    assert main(["experiments", "--quick", "--reference", "none", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == (f"hf-minattn experiments: error: the probe folder {str(mine)!r} holds "
                                        "report.html, names a probe writes, but no probes.json (the file a finished "
                                        "probe leaves), so the probe would replace them; use another --out, or move "
                                        "or remove them")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt", "probes"]  # no settings.json, no model
    assert (mine / "report.html").read_text() == "my own page" and list(mine.iterdir()) == [mine / "report.html"]

    (mine / "probes.json").write_text("{}")  # an earlier probe's folder
    assert checked_arguments(str(out), "quick", None, "both", "none", None)[1] == (0, 1)
    reference = out / "probes" / "minilm"  # the reference encoder's folder is checked as well, where it is probed
    reference.mkdir()
    (reference / "report.html").write_text("my own page")
    assert checked_arguments(str(out), "quick", None, "both", "none", None)[1] == (0, 1)
    with pytest.raises(ValueError, match=f"the probe folder {re.escape(repr(str(reference)))} holds report.html"):
        checked_arguments(str(out), "quick", None, "both", "minilm", None)
