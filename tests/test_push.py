"""`hf-minattn push DIR REPO_ID --dry-run`: what would be uploaded, and offline checks of the model card."""

import pytest

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, MinAttnForSequenceClassification, train_tokenizer
from hf_minattn.cli import main as cli_main
from hf_minattn.model_card import CardFacts, validate_model_card, write_model_card
from hf_minattn.push import check_model_folder, push_folder


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


def test_repo_id_is_checked(model_dir):
    with pytest.raises(ValueError, match="'a/b/c'"):
        push_folder(model_dir, "a/b/c", dry_run=True)


@pytest.mark.parametrize("model_class, pipeline_tag", [(MinAttnForMaskedLM, "fill-mask"),
                                                        (MinAttnForSequenceClassification, "text-classification")])
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
    assert cli_main(["push", str(folder), "me/bare", "--dry-run"]) == 0
    assert "README.md  (generated model card)" in capsys.readouterr().out


def test_push_options_reach_the_plan(model_dir, capsys):
    argv = ["push", str(model_dir), "me/minattn-test", "--dry-run", "--revision", "v2", "--create-pr", "--private",
            "--token", "hf_secret"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "https://huggingface.co/me/minattn-test, revision v2, as a pull request, private:" in out
    assert "hf_secret" not in out

