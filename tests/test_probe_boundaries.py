"""The command-line boundary of `hf-minattn probe`, `compare`, `view` and `push`: every argument error in one line
naming the flag, the value and what was expected, raised before any work, with no output folder left behind; and
flags the user gave are used or refused, never silently ignored."""

import json
from threading import TIMEOUT_MAX

import pytest

from test_cli_errors import _save_tiny_model

from hf_minattn.cli import main

FAST = ["--max-sentences", "50", "--bootstrap", "10", "--no-word2vec", "--no-untrained",
        "--no-decontextualized", "--no-heads", "--no-weights", "--no-logit-lens", "--no-circuits", "--no-save-vectors",
        "--figure-format", "svg"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny MinAttn folder with its tokenizer, and a corpus of 40 sentences beside it."""
    from hf_minattn.probes.corpus import default_sentences

    folder = tmp_path_factory.mktemp("boundaries")
    (folder / "corpus.txt").write_text("\n".join(default_sentences(40)) + "\n")
    _save_tiny_model(folder / "model")
    return folder


def one_line_error(capsys, argv, progress=False) -> str:
    """`hf-minattn ARGV` as its console script runs it: exit 2 and exactly one line on stderr (with `progress`: the
    last of the lines, after the progress of the work done), which is returned."""
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and (progress or len(err) == 1), err
    assert "Traceback" not in "".join(err) and ": error: " in err[-1]
    return err[-1]


@pytest.mark.parametrize("argv, expected", [
    (["probe", "m", "--out", "o", "--bootstrap", "abc"], "hf-minattn probe: error: argument --bootstrap: invalid int"),
    (["probe", "m"], "hf-minattn probe: error: the following arguments are required: --out"),
    (["compare", "--figure-format", "jpg", "a"], "hf-minattn compare: error: argument --figure-format"),
    (["view", "p", "--port", "x"], "hf-minattn view: error: argument --port: invalid int value: 'x'"),
    (["push", "folder"], "hf-minattn push: error: the following arguments are required: REPO_ID"),
    (["experiments", "--out", "o", "--nope"], "hf-minattn experiments: error: unrecognized arguments: --nope"),
    (["findings", "r.json", "--nope"], "hf-minattn findings: error: unrecognized arguments: --nope"),
    (["probe", "m", "--out", "o", "--bootstrp=9"],
     "hf-minattn probe: error: unrecognized arguments: --bootstrp=9; did you mean --bootstrap for --bootstrp?"),
    (["experiments", "--out", "o", "--sedes", "3"],
     "hf-minattn experiments: error: unrecognized arguments: --sedes 3; did you mean --seeds for --sedes?"),
    (["nosuch"], "hf-minattn: error: argument command: invalid choice: 'nosuch'"),
])
def test_every_subcommand_reports_an_argument_error_in_one_line(capsys, argv, expected):
    """argparse printed the whole usage first (20 lines for probe) and buried the error under it."""
    line = one_line_error(capsys, argv)
    assert line.startswith(expected) and line.endswith("(--help lists every flag)"), line


def test_compare_reports_a_folder_without_probes_in_one_line(tmp_path, capsys):
    line = one_line_error(capsys, ["compare", str(tmp_path), "--out", str(tmp_path / "cmp")])
    assert line == (f"hf-minattn compare: error: {tmp_path} has no probes.json; run `hf-minattn probe MODEL --out "
                    f"{tmp_path}` first")
    assert not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("argv, expected", [
    (["probe", "no_model", "--mlm-probability", "nan"], "--mlm-probability must be a finite number in (0, 1), got nan"),
    (["probe", "no_model", "--mlm-probability", "inf"], "--mlm-probability must be a finite number in (0, 1), got inf"),
    (["view", "no_probe", "--serve-for", "nan"], f"--serve-for must be a finite number in (0, {TIMEOUT_MAX}), got nan"),
    (["view", "no_probe", "--serve-for", "inf"], f"--serve-for must be a finite number in (0, {TIMEOUT_MAX}), got inf"),
    (["view", "no_probe", "--serve-for", "-1"], f"--serve-for must be in (0, {TIMEOUT_MAX}), got -1.0"),
])
def test_float_flags_refuse_nan_and_inf_before_any_work(tmp_path, capsys, monkeypatch, argv, expected):
    """The probe ran every probe up to the head ablation before torch refused a NaN mask rate; view served for NaN
    seconds (stopping at once, rc 0). The model (or probe folder) does not exist: checked later, it would be named."""
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, [*argv, *(["--out", "out"] if argv[0] == "probe" else [])])
    assert line.endswith(expected), line
    assert not (tmp_path / "out").exists()


def test_probe_and_compare_refuse_an_out_under_a_file_before_any_work(model, tmp_path, capsys):
    """The probe found out only when it wrote its results, after every probe ran."""
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    for argv in (["probe", str(model / "model"), "--corpus", str(model / "corpus.txt"), *FAST],
                 ["compare", str(tmp_path), str(tmp_path)]):
        line = one_line_error(capsys, [*argv, "--out", str(afile / "sub")])
        assert f"error: --out '{afile / 'sub'}' lies under '{afile}', a file; expected a folder" in line, line
    assert afile.read_text() == "mine"


@pytest.mark.parametrize("corpus, flags, expected", [
    ("five", ["--vector-corpus", "probe"],
     "no word of the vector corpus, the 5 probe sentences of {five}, occurs in >= 5 distinct sentences (--min-count 5)"),
    ("corpus", ["--vector-corpus", "{three}"],
     "no word of the vector corpus, {three} (3 sentences), occurs in >= 5 distinct sentences (--min-count 5)"),
    ("five", ["--vector-corpus", "probe", "--min-count", "1"],
     "no word occurs >= 1 times in >= 5 distinct probe sentences; use more probe sentences (--corpus, --dataset, "
     "--max-sentences)"),
])
def test_a_corpus_too_small_for_min_count_is_named_in_one_line(model, tmp_path, capsys, corpus, flags, expected):
    """A vector corpus with no word in --min-count sentences crashed with an IndexError from the tokenizer; geometry's
    message named min_count/min_contexts, which are no flags."""
    files = {"five": tmp_path / "five.txt", "three": tmp_path / "three.txt", "corpus": model / "corpus.txt"}
    # five sentences, enough to pass the probe's first check, and no word in two of them
    files["five"].write_text("the river bank was muddy\nafter some rain that fell\nall night long in town\n"
                             "dogs barked very loudly\nbirds sang their songs\n")
    files["three"].write_text("a cat sat on a mat today\nthe dog ran far away home\nsome birds sang in trees\n")
    flags = [f.format(**files) for f in flags]
    line = one_line_error(capsys, ["probe", str(model / "model"), "--corpus", str(files[corpus]), *FAST, *flags,
                                   "--out", str(tmp_path / "out")], progress=True)
    assert expected.format(**files) in line, line
    assert "min_count" not in line and "min_contexts" not in line
    assert not (tmp_path / "out").exists()


def test_a_dataset_file_of_a_header_only_is_named(tmp_path, capsys):
    """datasets said 'Instruction "train" corresponds to no data!'. Read before the model is looked for."""
    (tmp_path / "x.csv").write_text("a,b\n")
    line = one_line_error(capsys, ["probe", str(tmp_path / "no_model"), "--dataset", str(tmp_path / "x.csv"),
                                   "--out", str(tmp_path / "out")], progress=True)  # datasets' progress bar
    assert line.endswith(f"--dataset '{tmp_path / 'x.csv'}' has no rows; expected csv data with at least one row of text")


@pytest.mark.parametrize("name, text, cause", [
    ("words.json", "some plain words\nof text, not JSON\n", "JSON parse error"),
    ("ragged.csv", "text,label\nthe cat sat on the mat,1\n1,2,3,4\n", "Expected 2 fields in line 3, saw 4"),
])
def test_a_dataset_file_datasets_cannot_parse_is_named(tmp_path, capsys, name, text, cause):
    """datasets' DatasetGenerationError came as a traceback from inside its builder. Read before the model is
    looked for."""
    (tmp_path / name).write_text(text)
    line = one_line_error(capsys, ["probe", str(tmp_path / "no_model"), "--dataset", str(tmp_path / name),
                                   "--vector-corpus", "probe", "--out", str(tmp_path / "out")], progress=True)
    builder = name.split(".")[1]
    assert f"--dataset '{tmp_path / name}': datasets could not read it as {builder} (" in line, line
    assert cause in line and line.endswith(f"; expected {builder} data file"), line
    assert not (tmp_path / "out").exists()


def test_the_probes_and_training_share_one_reading_of_an_empty_data_file(tmp_path, monkeypatch):
    """read_dataset matched datasets' 'corresponds to no data' text itself, beside checks.data_files_error: one
    helper (checks.empty_split) reads it now, so a change in datasets' message is fixed in one place."""
    import hf_minattn.checks as checks
    from hf_minattn.probes.corpus import read_dataset

    error = ValueError('Instruction "train" corresponds to no data!')
    assert checks.empty_split(error) == "train" and checks.empty_split(ValueError("other")) is None
    assert "--train_file 'x.csv' has no rows" in str(checks.data_files_error(error, {"train": "x.csv"}, "csv"))
    (tmp_path / "x.csv").write_text("a,b\n")
    monkeypatch.setattr(checks, "empty_split", lambda error: None)  # the probes' own reading follows the helper's
    with pytest.raises(ValueError, match="corresponds to no data"):
        read_dataset(str(tmp_path / "x.csv"))


@pytest.fixture(scope="module")
def saved_datasets(tmp_path_factory):
    import datasets

    folder = tmp_path_factory.mktemp("datasets")
    texts = {"text": ["The king and the queen ruled the land for many years."] * 3}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(texts)}).save_to_disk(folder / "dict")
    datasets.Dataset.from_dict(texts).save_to_disk(folder / "one")
    return folder


def test_an_explicit_split_must_exist(saved_datasets):
    """--split nope probed the first split silently: the fallback is the default's only."""
    from hf_minattn.probes.corpus import read_dataset

    with pytest.raises(ValueError, match=r"^--split 'nope' is not a split of --dataset '.*dict'; its splits: \['train'\]$"):
        read_dataset(str(saved_datasets / "dict"), "nope")
    with pytest.raises(ValueError, match=r"^--split 'train': --dataset '.*one' has no splits; drop --split$"):
        read_dataset(str(saved_datasets / "one"), "train")
    assert read_dataset(str(saved_datasets / "dict")) == read_dataset(str(saved_datasets / "dict"), "train")
    assert len(read_dataset(str(saved_datasets / "one"))) == 3


@pytest.mark.parametrize("flags, expected", [
    (["--sense-sentence", "the queen ruled", "--sense-sentence", "a dog barked"],
     "--sense-sentence 'the queen ruled' does not contain --sense-word 'bank' (the default); expected a sentence "
     "containing it as a whole word"),
    (["--sense-word", "king", "--sense-sentence", "the king ruled", "--sense-sentence", "kings ran"],
     "--sense-sentence 'kings ran' does not contain --sense-word 'king'"),
    (["--sense-word", "king"], "--sense-word 'king' needs --sense-sentence (repeat it: sentences containing 'king'); "
     "the default sentences follow 'bank'"),
    (["--sense-word", "river bank", "--sense-sentence", "the river bank"], "--sense-word 'river bank': expected one word"),
    (["--corpus", "{corpus}", "--split", "nope"],
     "--split 'nope' applies to --dataset only, but the probe sentences come from --corpus '{corpus}'; drop --split"),
    (["--corpus", "{corpus}", "--text-column", "nope"], "--text-column 'nope' applies to --dataset only"),
    (["--split", "train"], "--split 'train' applies to --dataset only, but the probe sentences come from the default "
     "corpus (no --corpus or --dataset)"),
    (["--reference-revision", "main"], "--reference-revision 'main' applies to --reference only, and no --reference "
     "is given"),
    (["--full-pooling", "--contexts-per-word", "50"], "--contexts-per-word 50 would be ignored: --full-pooling pools "
     "every sentence; drop --contexts-per-word"),
    (["--full-pooling", "--twin-contexts-per-word", "3"], "--twin-contexts-per-word 3 would be ignored: --full-pooling"),
    (["--no-untrained", "--twin-contexts-per-word", "3"], "--twin-contexts-per-word 3 would be ignored: --no-untrained "
     "leaves the untrained twin out"),
    (["--no-save-vectors", "--vectors-format", "text"], "--vectors-format 'text' would be ignored: --no-save-vectors"),
    (["--no-heads", "--head-sentences", "500"], "--head-sentences 500 would be ignored: --no-heads skips the attention "
     "statistics"),
    (["--no-heads", "--no-logit-lens", "--ablation-mask-draws", "4"], "--ablation-mask-draws 4 would be ignored"),
    (["--no-heads", "--no-logit-lens", "--mlm-probability", "0.3"], "--mlm-probability 0.3 would be ignored: "
     "--no-heads and --no-logit-lens skip the two masked losses it is for"),
])
def test_flags_that_would_be_ignored_are_refused_before_any_work(model, tmp_path, capsys, flags, expected):
    """Each was accepted and ignored: the sense probe left out ("sense": null), the first split probed, the flag
    unused. The model does not exist: checked later, it would be what the error names."""
    corpus = str(model / "corpus.txt")
    flags = [f.format(corpus=corpus) for f in flags]
    line = one_line_error(capsys, ["probe", str(tmp_path / "no_model"), *flags, "--out", str(tmp_path / "out")])
    assert expected.format(corpus=corpus) in line, line
    assert not (tmp_path / "out").exists()


def test_sense_sentences_are_matched_as_the_tokenizer_reads_words():
    """Case and accents do not matter to an uncased tokenizer, nor punctuation around the word."""
    from hf_minattn.probes.cli import check_sense_flags

    check_sense_flags("bank", None)  # the default word on its default sentences
    check_sense_flags("Café", ["We met at the CAFE, then left.", "the café's door", "café"])
    with pytest.raises(ValueError, match="'the cafeteria' does not contain --sense-word 'café'"):
        check_sense_flags("café", ["the cafe", "the cafeteria"])


def test_sense_words_in_scripts_without_spaces_and_the_default_word_in_another_case():
    """A whole-word regex never matched inside Chinese or Japanese text (ideographs are \\w), though BERT-style
    tokenizers read each ideograph as a word; and --sense-word Bank, the default word, was refused without sentences."""
    from hf_minattn.probes.cli import check_sense_flags, probe_parser, probe_settings

    check_sense_flags("行", ["我去银行存钱。", "我在行走。"])
    check_sense_flags("ねこ", ["わたしはねこがすき", "ねこ"])
    check_sense_flags("ไป", ["ฉันไปโรงเรียน"])
    check_sense_flags("cat", ["the 猫cat"])  # a Latin word next to an ideograph: no space between them either
    with pytest.raises(ValueError, match="'the row' does not contain --sense-word '行'"):
        check_sense_flags("行", ["the row"])
    with pytest.raises(ValueError, match="'the 猫cats' does not contain --sense-word 'cat'"):
        check_sense_flags("cat", ["the 猫cats"])  # still whole where the word meets a spaced script
    for word in ("Bank", "BÄNK"):
        check_sense_flags(word, None)
        assert probe_settings(probe_parser().parse_args(["m", "--sense-word", word, "--out", "o"])).sense_sentences


@pytest.mark.parametrize("argv", [["probe", "{file}", "--out", "{out}"], ["view", "{file}"]])
def test_a_file_given_as_the_model_is_named_a_file(tmp_path, capsys, monkeypatch, argv):
    """It was looked for on the Hub ('corpus.txt' reads as a Hub id): 'not a local folder nor in the local cache'."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text("some text\n")
    line = one_line_error(capsys, [a.format(file="corpus.txt", out="out") for a in argv])
    assert line.endswith("model path 'corpus.txt' is a file; expected a model folder written by save_pretrained() "
                         "(config.json, weights and tokenizer files) or a Hub id"), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, expected", [
    (["probe", "{model}", "--reference", "{corpus}", "--out", "{out}"], "--reference '{corpus}' is a file; expected"),
    (["view", "{model}", "--model", "{corpus}"], "--model '{corpus}' is a file; expected"),
    (["view", "{model}", "--revision", "main"], "--revision 'main' names a version of a Hub repository, but '{model}' "
                                               "is a local folder; drop --revision or pass a Hub id"),
])
def test_the_errors_about_another_model_or_a_revision_name_its_flag(model, tmp_path, capsys, argv, expected):
    """They said "model path '...' is a file" for --reference or --model, and "drop the revision" for view's
    --revision: the user had to guess which of the flags was meant."""
    paths = {"model": model / "model", "corpus": model / "corpus.txt", "out": tmp_path / "out"}
    line = one_line_error(capsys, [a.format(**paths) for a in argv])
    assert line.split(": error: ", 1)[1].startswith(expected.format(**paths)), line
    assert not (tmp_path / "out").exists()


def test_a_tokenizer_file_cut_short_is_named_before_the_model_loads(model, tmp_path, capsys):
    """json's own message came alone ("Expecting value: line 225 column 14 (char 4000)"), naming no file, after the
    model had loaded."""
    import shutil

    cut = tmp_path / "cut"
    shutil.copytree(model / "model", cut)
    tokenizer = cut / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:4000])  # a copy stopped part-way
    line = one_line_error(capsys, ["probe", str(cut), "--corpus", str(model / "corpus.txt"), *FAST, "--vector-corpus",
                                   "probe", "--out", str(tmp_path / "out")])  # one line: no weights' progress bar
    assert line.startswith(f"hf-minattn probe: error: the tokenizer of {str(cut)!r}: {str(tokenizer)!r} is not valid "
                           "JSON (Expecting") and line.endswith("; expected a JSON object"), line
    assert not (tmp_path / "out").exists()


def test_push_names_a_file_given_as_the_folder(tmp_path, capsys):
    (tmp_path / "corpus.txt").write_text("some text\n")
    line = one_line_error(capsys, ["push", str(tmp_path / "corpus.txt"), "me/x", "--dry-run"])
    assert line.endswith(f"Model folder {tmp_path / 'corpus.txt'} is a file; expected a folder written by "
                         "training/run_mlm.py or save_pretrained")


def test_view_finds_the_probed_model_from_any_folder(model, tmp_path, capsys, monkeypatch):
    """probes.json recorded the model path as typed, relative to where the probe ran: `view` from another folder
    lost the model (or could pick up another folder of that name). It records the absolute path now; a missing
    folder, and an older relative path, are said in a note."""
    from hf_minattn.probes.serve import prepare

    monkeypatch.chdir(model)
    assert main(["probe", "model", "--corpus", "corpus.txt", "--vector-corpus", "probe", "--min-count", "2", *FAST,
                 "--out", str(tmp_path / "probe")]) == 0
    probes = tmp_path / "probe" / "probes.json"
    assert json.loads(probes.read_text())["provenance"]["model_path"] == str(model / "model")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert prepare(str(tmp_path / "probe"))[1].name == "model"
    assert "note" not in capsys.readouterr().out
    record = json.loads(probes.read_text())
    for path, note in ((str(tmp_path / "gone"), f"the probed model '{tmp_path / 'gone'}' (probes.json's "
                        "provenance.model_path) is missing or holds no config.json; typed sentences are not encoded"),
                       ("model", "the probed model 'model' (probes.json's provenance.model_path, relative to the "
                        "folder an older `hf-minattn probe` ran in) is missing")):
        record["provenance"]["model_path"] = path
        probes.write_text(json.dumps(record))
        assert prepare(str(tmp_path / "probe"))[1] is None
        assert note in capsys.readouterr().out
        with pytest.raises(ValueError, match="^--revision v2: .* names no model that can be found"):
            prepare(str(tmp_path / "probe"), revision="v2")  # was dropped without a word
    monkeypatch.chdir(model)  # an older probes.json, read from the folder it ran in: still works, with the note
    assert prepare(str(tmp_path / "probe"))[1].name == "model" and "relative path" in capsys.readouterr().out


def test_provenance_records_a_relative_model_folder_absolute(tmp_path, monkeypatch):
    """Only `hf-minattn probe` made the path absolute: the experiments' probe folders (run_all_probes with the
    model folder as given) recorded it relative, and view then showed the note meant for older files. One place
    (run_provenance) makes it absolute now; a path that names no folder here (a Hub id) is kept as given."""
    from hf_minattn.probes.run import run_provenance

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "full").mkdir(parents=True)
    assert run_provenance(0, "runs/full", "probe", 1)["model_path"] == str(tmp_path / "runs" / "full")
    assert run_provenance(0, "org/model", "probe", 1)["model_path"] == "org/model"
    assert run_provenance(0, None, "probe", 1)["model_path"] is None


@pytest.mark.parametrize("name", ["data/my_texts.txt", "./my_texts", "/no/such/folder"])
def test_a_dataset_path_that_does_not_exist_is_named_not_looked_for_on_the_hub(tmp_path, capsys, name):
    """datasets took it for a Hub name: "Couldn't reach 'data/my_texts.txt' on the Hub" (or the Hub offline) for a
    typo in a local path."""
    line = one_line_error(capsys, ["probe", str(tmp_path / "no_model"), "--dataset", name, "--out",
                                   str(tmp_path / "out")])
    assert line == (f"hf-minattn probe: error: --dataset {name!r}: no such file or folder; expected a folder saved by "
                    "save_to_disk, a data file (.txt, .json, .jsonl, .csv, .parquet) or a dataset name on the Hub"), line
    assert not (tmp_path / "out").exists()
