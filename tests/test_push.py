"""`hf-minattn push DIR REPO_ID`: what would be uploaded, offline checks of the model card, and what reaches the
Hub's HTTP API (a local stand-in server that answers as the Hub does; huggingface_hub itself is real)."""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import transformers
from huggingface_hub import constants
from hub_standin import hub, serve  # noqa: F401 (the Hub stand-in fixture, shared with test_hub_ids.py)

from hf_minattn import (
    MinAttnConfig,
    MinAttnForMaskedLM,
    MinAttnForSequenceClassification,
    MinAttnForTokenClassification,
    train_tokenizer,
)
from hf_minattn.cli import main as cli_main
from hf_minattn.model_card import CardFacts, validate_model_card, write_model_card
from hf_minattn.model_source import TransportError, hub_errors
from hf_minattn.push import check_model_folder, files_to_upload, push_folder


@pytest.fixture
def model_dir(tmp_path):
    """A saved MinAttn folder as run_mlm.py writes it (weights, code, tokenizer, card), plus files not to upload."""
    out = tmp_path / "model"
    tokenizer = train_tokenizer(["a few words of text to learn a vocabulary from"] * 10, vocab_size=40, show_progress=False)
    config = MinAttnConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=37, max_position_embeddings=64)
    MinAttnForMaskedLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    facts = CardFacts(model_name="minattn-test", config=config, num_parameters=1234, dataset_id=None,
                      dataset_config=None, dataset_description="a test corpus",
                      eval_metrics={"eval_loss": 5.0, "eval_perplexity": 148.41, "eval_accuracy": 0.1})
    write_model_card(out, facts)
    (out / "drift.json").write_text("{}")
    # A run that ended: what run_mlm.py writes at the end beside its checkpoints (trainer_state.json last).
    (out / "all_results.json").write_text('{"eval_loss": 5.0}')
    (out / "trainer_state.json").write_text('{"global_step": 4}')
    (out / "checkpoint-4").mkdir()
    (out / "checkpoint-4" / "model.safetensors").write_text("old")
    (out / "_private.txt").write_text("not for upload")
    (out / "drift.json.tmp").write_text("half-written")
    (out / "training_args.bin").write_bytes(b"a pickle")  # what Trainer.save_model writes
    return out


def test_dry_run_lists_the_files_and_validates_the_card(model_dir, capsys):
    assert cli_main(["push", str(model_dir), "me/minattn-test", "--dry-run"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert {"README.md", "config.json", "model.safetensors", "modeling_minattn.py", "configuration_minattn.py",
            "tokenizer.json", "tokenizer_config.json", "drift.json"} <= listed
    assert not any(name.startswith(("checkpoint-", "_")) or name.endswith(".tmp") for name in listed)
    assert "training_args.bin" not in listed  # a pickle: never uploaded
    assert "Would upload" in out and "https://huggingface.co/me/minattn-test" in out
    assert "Model card metadata: valid" in out


def test_card_metadata_is_checked(model_dir):
    card = validate_model_card(model_dir / "README.md")
    assert card.data.eval_results[0].metric_type == "perplexity"
    text = (model_dir / "README.md").read_text()
    (model_dir / "README.md").write_text(text.replace("pipeline_tag: fill-mask", "pipeline_tag: text-generation"))
    with pytest.raises(ValueError, match="pipeline_tag must be 'fill-mask', got 'text-generation'"):
        push_folder(model_dir, "me/minattn-test", dry_run=True)
    (model_dir / "README.md").write_text(text.replace("library_name: transformers\n", ""))
    with pytest.raises(ValueError, match="library_name must be 'transformers', got None"):
        push_folder(model_dir, "me/minattn-test", dry_run=True)
    (model_dir / "README.md").write_text(text.replace("value: 148.41", "value: [unclosed"))
    with pytest.raises(ValueError, match="invalid model card metadata"):
        push_folder(model_dir, "me/minattn-test", dry_run=True)


def test_incomplete_folder_is_refused(model_dir, capsys):
    (model_dir / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="missing model.safetensors"):
        push_folder(model_dir, "me/minattn-test", dry_run=True)
    assert cli_main(["push", str(model_dir / "nope"), "me/minattn-test", "--dry-run"]) == 2
    assert f"Model folder {model_dir / 'nope'} does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("repo_id", ["a/b/c", "user/", "/name", "a b", "user/na me", "user/name@main", "a" * 200])
def test_repo_id_is_checked_as_the_hub_does(model_dir, repo_id):
    with pytest.raises(ValueError, match=f"REPO_ID {repo_id!r} is not a valid Hub repository id"):
        push_folder(model_dir, repo_id, dry_run=True)


def test_no_checkpoint_pickle_or_probe_report_is_uploaded_at_any_depth(model_dir):
    """EarlyStates' checkpoints (optimizer states, training_args.bin) sit in early_states/; `make demo` writes the
    probe report into probes/."""
    for name in ("early_states/checkpoint-10/optimizer.pt", "early_states/checkpoint-10/training_args.bin",
                 "early_states/checkpoint-10/model.safetensors", "probes/report.html", "logs/checkpoint-2/x.bin",
                 "extra/training_args.bin", "extra/_private.txt", "extra/notes.md.tmp", "runs/events.out"):
        (model_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (model_dir / name).write_bytes(b"x")
    files = {f.as_posix() for f in files_to_upload(model_dir)}
    assert {"README.md", "model.safetensors", "tokenizer.json", "runs/events.out"} <= files
    assert not any(f.startswith(("early_states/", "probes/", "logs/checkpoint-")) for f in files)
    assert not any(f.endswith(("training_args.bin", "_private.txt", ".tmp")) for f in files)


def test_a_checkpoint_pushed_on_its_own_uploads_its_model_and_no_resume_state(model_dir, capsys):
    """The optimizer, scheduler, scaler and RNG states are pickles a resume reads, not part of the model, nor is the
    loss allocation's copy of the weights: they were uploaded beside it (under a card saying nothing of the run); the
    listing names what stays behind."""
    checkpoint = model_dir / "checkpoint-8"
    shutil.copytree(model_dir, checkpoint, ignore=shutil.ignore_patterns("checkpoint-*", "README.md", "*.json.tmp"))
    states = ("optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state.pth", "rng_state_1.pth",
              "loss_allocation_start.safetensors")  # the last: the weights at the loss allocation's interval start
    for name in states:
        (checkpoint / name).write_bytes(b"a resume state")
    assert cli_main(["push", str(checkpoint), "me/minattn-step-8", "--dry-run"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert {"model.safetensors", "config.json", "trainer_state.json", "README.md"} <= listed
    assert not listed & set(states)
    assert ("Left out: _private.txt, loss_allocation_start.safetensors, optimizer.pt, rng_state.pth, rng_state_1.pth, "
            "scaler.pt, scheduler.pt, training_args.bin\n") in out
    capsys.readouterr()
    assert cli_main(["push", str(model_dir), "me/minattn-test", "--dry-run"]) == 0
    assert "Left out: _private.txt, checkpoint-4/, checkpoint-8/, drift.json.tmp, training_args.bin" in capsys.readouterr().out


def test_a_checkpoints_generated_card_says_its_step_from_its_trainer_state(model_dir):
    """A checkpoint has no card of its own but its trainer_state.json (uploaded too): the card says the step it was
    saved at, read from that file, and no step where the file does not say one."""
    checkpoint = model_dir / "checkpoint-8"
    shutil.copytree(model_dir, checkpoint, ignore=shutil.ignore_patterns("checkpoint-*", "README.md"))
    for step, last in ((8, 20), (12, 30)):
        (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": last}))
        card = str(check_model_folder(checkpoint, "me/minattn-step")[1])
        assert f"saved by a training run at step {step} of {last}." in card and "No training record" not in card
    (checkpoint / "trainer_state.json").write_text('{"global_step": 4}')  # not the Trainer's whole state
    card = str(check_model_folder(checkpoint, "me/minattn-step")[1])
    assert "No training record came with it" in card and "at step" not in card


def test_an_unreachable_hub_is_one_line_naming_it(model_dir, monkeypatch, capsys):
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    assert cli_main(["push", str(model_dir), "me/minattn-test", "--token", "hf_fake"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "the Hub (http://127.0.0.1:9) cannot be reached for 'me/minattn-test'" in err and "hf_fake" not in err


def test_transport_errors_become_a_connection_error_for_every_hub_caller():
    """The mapping push uses is hub_errors' own: find_model and the model loaders get the same line."""
    with pytest.raises(ConnectionError, match=r"the Hub \(.*\) cannot be reached for 'me/x' at revision 'v2' \(boom\)"):
        with hub_errors("me/x", "v2"):
            raise TransportError("boom")


@pytest.mark.parametrize("model_class, pipeline_tag", [(MinAttnForMaskedLM, "fill-mask"),
                                                        (MinAttnForSequenceClassification, "text-classification"),
                                                        (MinAttnForTokenClassification, "token-classification")])
def test_bare_save_pretrained_folder_gets_a_minimal_valid_card(tmp_path, capsys, model_class, pipeline_tag):
    folder = tmp_path / "bare"
    model_class(MinAttnConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                              intermediate_size=0, num_labels=3)).save_pretrained(folder)
    assert not (folder / "README.md").exists()
    files = push_folder(folder, "me/bare", dry_run=True)
    assert "README.md" in {f.as_posix() for f in files} and not (folder / "README.md").exists()  # nothing written
    _, card = check_model_folder(folder, "me/bare")
    (tmp_path / "card.md").write_text(str(card))
    assert validate_model_card(tmp_path / "card.md", pipeline_tag=pipeline_tag).data.pipeline_tag == pipeline_tag
    # The Auto class the card names loads the head too (AutoModel would drop it); no tokenizer was saved.
    auto_class = re.search(r"model = (\w+)\.from_pretrained", str(card)).group(1)
    assert isinstance(getattr(transformers, auto_class).from_pretrained(folder), model_class)
    assert "No tokenizer was saved" in str(card) and "AutoTokenizer" not in str(card)
    assert "No training record came with it" in str(card)  # no trainer_state.json: nothing says how it was trained
    assert cli_main(["push", str(folder), "me/bare", "--dry-run"]) == 0
    assert "README.md  (generated model card)" in capsys.readouterr().out


def test_push_options_reach_the_plan(model_dir, capsys):
    argv = ["push", str(model_dir), "me/minattn-test", "--dry-run", "--revision", "v2", "--create-pr", "--private",
            "--token", "hf_secret"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "https://huggingface.co/me/minattn-test, revision v2, as a pull request, private:" in out
    assert "hf_secret" not in out



def push(hub, *args):
    """Run `hf-minattn push` in a fresh process against the stand-in (HF_ENDPOINT), and return what it sent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{hub.server_port}", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HOME=str(Path(args[0]).parent / "hf_home"))
    hub.seen.clear()
    result = subprocess.run([str(Path(sys.executable).parent / "hf-minattn"), "push", *args], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return {r["path"]: r for r in hub.seen}


def committed_files(request):
    lines = [json.loads(line) for line in request["body"].splitlines()]
    return {line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines if line["key"] == "file"}


@pytest.mark.slow
def test_push_options_reach_the_hub(model_dir, hub):
    seen = push(hub, str(model_dir), "me/minattn-test", "--revision", "v2", "--create-pr", "--private",
                "--token", "hf_secret")
    create = seen["/api/repos/create"]
    assert json.loads(create["body"]) == {"name": "minattn-test", "organization": "me", "visibility": "private"}
    assert all(r["auth"] == "Bearer hf_secret" for r in seen.values())  # the token, on every request
    # a pull request against v2, which does not exist yet: it is created first, and the commit says create_pr
    assert "/api/models/me/minattn-test/branch/v2" in seen
    commit = seen["/api/models/me/minattn-test/commit/v2"]
    assert commit["query"] == {"create_pr": ["1"]}
    assert seen["/api/models/me/minattn-test/preupload/v2"]["query"] == {"create_pr": ["1"]}
    files = committed_files(commit)
    planned = {f.as_posix() for f in check_model_folder(model_dir, "me/minattn-test")[0]}
    assert set(files) == planned and "drift.json.tmp" not in files and "training_args.bin" not in files
    assert files["model.safetensors"] == (model_dir / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_push_to_a_branch_creates_it_and_a_public_repo_stays_public(model_dir, hub):
    seen = push(hub, str(model_dir), "me/minattn-test", "--revision", "v2", "--token", "hf_other")
    assert "visibility" not in json.loads(seen["/api/repos/create"]["body"])  # the Hub's default, not "public"
    assert "/api/models/me/minattn-test/branch/v2" in seen and seen["/api/models/me/minattn-test/commit/v2"]["query"] == {}
    assert all(r["auth"] == "Bearer hf_other" for r in seen.values())
    seen = push(hub, str(model_dir), "me/minattn-test", "--token", "hf_other")
    assert "/api/models/me/minattn-test/commit/main" in seen and not any("/branch/" in p for p in seen)


@pytest.mark.slow
def test_a_pull_request_against_an_existing_branch_creates_none(model_dir, hub):
    """Whoever opens a pull request may have no write access: an existing branch is not created again."""
    serve(hub, "me/minattn-test", "v2", model_dir)
    seen = push(hub, str(model_dir), "me/minattn-test", "--revision", "v2", "--create-pr", "--token", "hf_secret")
    assert not any("/branch/" in path for path in seen)
    assert seen["/api/models/me/minattn-test/commit/v2"]["query"] == {"create_pr": ["1"]}


def test_a_minimal_card_names_the_tokenizer_when_there_is_one(model_dir):
    """config.json has auto_map: without trust_remote_code, AutoTokenizer asks on the terminal where hf_minattn is
    not installed, so every load the card shows passes it."""
    (model_dir / "README.md").unlink()
    _, card = check_model_folder(model_dir, "me/minattn-test")
    assert 'tokenizer = AutoTokenizer.from_pretrained("me/minattn-test", trust_remote_code=True)' in str(card)
    assert 'model = AutoModelForMaskedLM.from_pretrained("me/minattn-test", trust_remote_code=True)' in str(card)
    loads = re.findall(r"from_pretrained\(([^)]*)\)", str(card))
    assert len(loads) == 2 and all(args.endswith(", trust_remote_code=True") for args in loads)


def in_progress_card(folder):
    """The card run_mlm.py writes before training starts (and pushes with each checkpoint during training)."""
    config = MinAttnConfig.from_pretrained(folder)
    write_model_card(folder, CardFacts(model_name="minattn-test", config=config, num_parameters=1234, dataset_id=None,
                                       dataset_config=None, dataset_description="a test corpus", in_progress=True))


def test_a_run_whose_card_says_training_is_in_progress_is_refused_unless_forced(model_dir, capsys):
    """A killed run leaves the initial weights (or a checkpoint's) beside a card saying so: not a model to publish."""
    in_progress_card(model_dir)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(model_dir))} holds an unfinished training run: its model "
                                         r"card says that training is in progress .*--force"):
        push_folder(model_dir, "me/minattn-test", dry_run=True)
    assert cli_main(["push", str(model_dir), "me/minattn-test", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "training is in progress" in err and "--force" in err
    assert "model.safetensors" in {f.as_posix() for f in push_folder(model_dir, "me/x", dry_run=True, force=True)}
    assert cli_main(["push", str(model_dir), "me/minattn-test", "--dry-run", "--force"]) == 0
    assert "Would upload" in capsys.readouterr().out


@pytest.mark.parametrize("saved", ["checkpoint-4", "early_states/checkpoint-2"])
def test_checkpoints_without_the_end_of_the_run_are_refused_unless_forced(model_dir, saved):
    """Checkpoints beside no trainer_state.json and no all_results.json: a run cut short, whatever its card says."""
    shutil.rmtree(model_dir / "checkpoint-4")  # the fixture's
    (model_dir / saved).mkdir(parents=True)
    for name in ("trainer_state.json", "all_results.json"):
        (model_dir / name).unlink()
    with pytest.raises(ValueError, match=rf"holds an unfinished training run: it holds {saved.split('/')[0]}.* but no "
                                         r"trainer_state.json or all_results.json .*--force"):
        push_folder(model_dir, "me/minattn-test", dry_run=True)
    push_folder(model_dir, "me/minattn-test", dry_run=True, force=True)
    for name in ("trainer_state.json", "all_results.json"):  # either one says the run ended
        (model_dir / name).write_text("{}")
        push_folder(model_dir, "me/minattn-test", dry_run=True)
        (model_dir / name).unlink()


def test_a_plain_save_pretrained_folder_with_its_tokenizer_still_pushes(tmp_path, capsys):
    """No run files at all (no trainer_state.json, no card, no checkpoints): a model saved by hand, not a run."""
    folder = tmp_path / "saved"
    MinAttnForMaskedLM(MinAttnConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=0)).save_pretrained(folder)
    train_tokenizer(["a few words of text"] * 10, vocab_size=40, show_progress=False).save_pretrained(folder)
    assert cli_main(["push", str(folder), "me/saved", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "tokenizer.json" in out and "README.md  (generated model card)" in out


@pytest.mark.parametrize("file, content, message", [
    ("config.json", "[1, 2]", r"config\.json' holds a JSON list; expected a JSON object"),  # was an AttributeError
    ("config.json", '{"architectures": "MinAttnForMaskedLM"}',  # was read as the architecture 'M'
     r'config.json has "architectures": \'MinAttnForMaskedLM\'; expected a list naming one of'),
    ("config.json", '{"architectures": ["MinAttnForMaskedLM"], "hidden_size": 30, "num_attention_heads": 4}',
     r"config\.json does not load as a MinAttn config: .*hidden_size.*30"),
    ("model.safetensors", "", r"model\.safetensors is not a readable safetensors file"),  # --dry-run said "valid"
])
def test_a_folder_that_would_not_load_is_refused_before_the_upload(model_dir, file, content, message):
    (model_dir / file).write_text(content)
    with pytest.raises(ValueError, match=message):
        push_folder(model_dir, "me/minattn-test", dry_run=True)


def test_a_sharded_model_missing_a_shard_is_refused(tmp_path):
    folder = tmp_path / "sharded"
    MinAttnForMaskedLM(MinAttnConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=0)).save_pretrained(folder, max_shard_size="100KB")
    shards = sorted(p.name for p in folder.glob("model-*.safetensors"))
    assert len(shards) >= 2 and not (folder / "model.safetensors").exists()
    push_folder(folder, "me/sharded", dry_run=True)  # whole: pushes
    (folder / shards[-1]).unlink()
    with pytest.raises(ValueError, match=rf"{re.escape(str(folder))} is not a saved model folder: missing "
                                         rf"{re.escape(shards[-1])} \(named in model.safetensors.index.json\)"):
        push_folder(folder, "me/sharded", dry_run=True)
    (folder / "model.safetensors.index.json").write_text('{"weight_map": ["not", "a", "map"]}')
    with pytest.raises(ValueError, match=r"model.safetensors.index.json: expected a save_pretrained index"):
        push_folder(folder, "me/sharded", dry_run=True)


@pytest.mark.slow
def test_an_unfinished_run_reaches_no_hub_unless_forced(model_dir, hub):
    """Refused before any request (the repository is not even created); --force uploads it as it is."""
    in_progress_card(model_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{hub.server_port}", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HOME=str(model_dir.parent / "hf_home"))
    hub.seen.clear()
    result = subprocess.run([str(Path(sys.executable).parent / "hf-minattn"), "push", str(model_dir), "me/minattn-test",
                             "--token", "hf_secret"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "holds an unfinished training run" in result.stderr
    assert hub.seen == []
    files = committed_files(push(hub, str(model_dir), "me/minattn-test", "--force", "--token", "hf_secret")[
        "/api/models/me/minattn-test/commit/main"])
    assert b"Training is in progress" in files["README.md"]
