"""`hf-minattn push DIR REPO_ID --dry-run`: what would be uploaded, and offline checks of the model card."""

import pytest

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, train_tokenizer
from hf_minattn.cli import main as cli_main
from hf_minattn.model_card import CardFacts, validate_model_card, write_model_card
from hf_minattn.push import push_folder


@pytest.fixture
def model_dir(tmp_path):
    """A saved MinAttn folder as run_mlm.py writes it (weights, code, tokenizer, card), plus files not to upload."""
    out = tmp_path / "model"
    tokenizer = train_tokenizer(["a few words of text to learn a vocabulary from"] * 10, vocab_size=40, show_progress=False)
    config = MinAttnConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=37, max_position_embeddings=64)
    MinAttnForMaskedLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    facts = CardFacts(model_name="minattn-test", config=config, num_parameters=1234, dataset_id="wikipedia",
                      dataset_config=None, dataset_description="a test corpus",
                      eval_metrics={"eval_loss": 5.0, "eval_perplexity": 148.41, "eval_accuracy": 0.1})
    write_model_card(out, facts)
    (out / "drift.json").write_text("{}")
    (out / "checkpoint-4").mkdir()
    (out / "checkpoint-4" / "model.safetensors").write_text("old")
    (out / "_private.txt").write_text("not for upload")
    (out / "drift.json.tmp").write_text("half-written")
    return out


def test_dry_run_lists_the_files_and_validates_the_card(model_dir, capsys):
    assert cli_main(["push", str(model_dir), "me/minattn-test", "--dry-run"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert {"README.md", "config.json", "model.safetensors", "modeling_minattn.py", "configuration_minattn.py",
            "tokenizer.json", "tokenizer_config.json", "drift.json"} <= listed
    assert not any(name.startswith(("checkpoint-", "_")) or name.endswith(".tmp") for name in listed)
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
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["push", str(model_dir / "nope"), "me/minattn-test", "--dry-run"])
    assert exit_info.value.code == 2
    assert f"Model folder {model_dir / 'nope'} does not exist" in capsys.readouterr().err


def test_repo_id_is_checked(model_dir):
    with pytest.raises(ValueError, match="'a/b/c'"):
        push_folder(model_dir, "a/b/c", dry_run=True)
