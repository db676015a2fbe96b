"""What run_mlm.py does with an --output_dir that holds something (a trained model, checkpoints, an unfinished run),
and the checkpoints it refuses to resume from, named in one line before any work."""

import re

import pytest

from hf_minattn.run_mlm import main, parse_args

from helpers_training import Killed, complete_checkpoint, killed_at, max_weight_difference, read_json, tiny_argv


def test_what_a_checkpoint_needs_to_resume(tmp_path):
    """One process writes rng_state.pth, each of several rng_state_<rank>.pth (Trainer._save_rng_state)."""
    from hf_minattn.run_folder import checkpoint_problem

    single = complete_checkpoint(tmp_path / "single")
    assert checkpoint_problem(single, 1) is None
    assert checkpoint_problem(complete_checkpoint(tmp_path / "two", "rng_state_0.pth", "rng_state_1.pth"), 2) is None
    assert checkpoint_problem(single, 2) == ("holds the random states of another number of processes (rng_state.pth; "
                                             "this run has 2, so resume it with as many)")
    # process 1 had not written its state when process 0 wrote trainer_state.json: cut short, not model-only
    half = complete_checkpoint(tmp_path / "half", "rng_state_0.pth")
    assert checkpoint_problem(half, 2) == "was cut short while saving (no rng_state_1.pth: a process's random state)"
    (single / "optimizer.pt").unlink()
    (single / "scheduler.pt").unlink()
    assert checkpoint_problem(single, 1) == "is model-only (no optimizer.pt, scheduler.pt)"
    (single / "trainer_state.json").unlink()
    assert checkpoint_problem(single, 1) == "has no trainer_state.json: its save was cut short"


def test_a_model_only_or_cut_short_checkpoint_is_refused_when_parsed(tmp_path):
    """--resume_from_checkpoint of a --save_only_model checkpoint resumed with a fresh optimizer and a restarted
    learning-rate schedule, silently; one whose trainer_state.json was cut short failed later naming no file."""
    folder = complete_checkpoint(tmp_path / "checkpoint-4")
    (folder / "optimizer.pt").unlink()
    with pytest.raises(ValueError, match=re.escape(
            f"--resume_from_checkpoint '{folder}' is model-only (no optimizer.pt): model-only checkpoints cannot resume "
            "training (the optimizer and the learning-rate schedule would start again); give a complete checkpoint, or "
            "this one as --model_name_or_path to train anew from its weights")):
        parse_args(tiny_argv(tmp_path / "out", resume_from_checkpoint=folder))
    (folder / "optimizer.pt").write_bytes(b"")
    (folder / "trainer_state.json").write_text('{"global_step": 4, "log_hist')
    cut_short = f"'{folder}' was cut short while saving: {folder / 'trainer_state.json'} is not valid JSON"
    with pytest.raises(ValueError, match=re.escape(cut_short)):
        parse_args(tiny_argv(tmp_path / "out", resume_from_checkpoint=folder))


def test_resume_and_overwrite_together_are_refused_and_overwrite_is_in_the_help(tmp_path, capsys):
    with pytest.raises(ValueError, match="--resume continues a run, --overwrite_output_dir true trains afresh over "
                                         "--output_dir; give one of them"):
        parse_args(tiny_argv(tmp_path / "out", resume=True, overwrite_output_dir="true"))
    checkpoint = complete_checkpoint(tmp_path / "out" / "checkpoint-4")  # overwriting would remove it
    with pytest.raises(ValueError, match=f"--resume_from_checkpoint {re.escape(str(checkpoint))} continues a run"):
        parse_args(tiny_argv(tmp_path / "out", resume_from_checkpoint=checkpoint, overwrite_output_dir="true"))
    # one of another folder may continue over what --output_dir holds (test_a_checkpoint_of_another_run_...)
    parse_args(tiny_argv(tmp_path / "other", resume_from_checkpoint=checkpoint, overwrite_output_dir="true"))
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--overwrite_output_dir" in capsys.readouterr().out


@pytest.mark.slow
def test_a_trained_model_is_not_trained_over_without_overwrite_output_dir(tokenizer_dir, tmp_path):
    """--save_strategy no: no checkpoint, and a rerun with another seed replaced the finished model (first by the
    initial one). Refused, naming the folder and both ways out; --overwrite_output_dir true trains afresh, and removes
    the earlier run's checkpoints, which a later --resume would take for the new run's."""
    out = tmp_path / "model"
    main(tiny_argv(out, tokenizer_dir, report_to="none", save_strategy="no"))
    written = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    message = (f"--output_dir {out} holds a trained model (trainer_state.json) and no checkpoint to resume from: pass "
               "--overwrite_output_dir true to train afresh over it, or choose another --output_dir")
    with pytest.raises(ValueError, match=re.escape(message)):
        main(tiny_argv(out, tokenizer_dir, report_to="none", save_strategy="no", seed=1))
    (out / "trainer_state.json").unlink()  # weights alone are a trained model too (the card says training ended)
    with pytest.raises(ValueError, match=re.escape(message.replace("trainer_state.json", "model weights"))):
        main(tiny_argv(out, tokenizer_dir, report_to="none", save_strategy="no", seed=1))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == {
        p: content for p, content in written.items() if p.name != "trainer_state.json"}

    with_checkpoints = tmp_path / "with-checkpoints"
    main(tiny_argv(with_checkpoints, tokenizer_dir, report_to="none", max_steps=4, save_steps=2))
    with pytest.raises(ValueError, match="--overwrite_output_dir true to train afresh"):
        main(tiny_argv(with_checkpoints, tokenizer_dir, report_to="none", max_steps=4, save_steps=2, seed=1))
    main(tiny_argv(with_checkpoints, tokenizer_dir, report_to="none", max_steps=4, save_strategy="no", seed=1,
                   overwrite_output_dir="true"))
    assert not list(with_checkpoints.glob("checkpoint-*"))
    assert read_json(with_checkpoints / "run_args.json")["training_args"]["seed"] == 1
    assert read_json(with_checkpoints / "trainer_state.json")["global_step"] == 4


@pytest.mark.slow
def test_a_checkpoint_of_another_run_is_not_continued_over_a_trained_model(tokenizer_dir, tmp_path):
    """--resume_from_checkpoint a/checkpoint-2 --output_dir b, where b holds another finished run: b's model, card and
    results were replaced, and the rotation could delete b's checkpoints. Refused, naming both; with
    --overwrite_output_dir true, b's checkpoints and records go first and a's run continues there."""
    a, b = tmp_path / "a", tmp_path / "b"
    main(tiny_argv(a, tokenizer_dir, report_to="none", max_steps=4, save_steps=2))
    main(tiny_argv(b, tokenizer_dir, report_to="none", max_steps=4, save_steps=2, seed=1))
    written = {p: p.read_bytes() for p in b.rglob("*") if p.is_file()}
    argv = tiny_argv(b, tokenizer_dir, report_to="none", max_steps=4, save_steps=2,
                     resume_from_checkpoint=a / "checkpoint-2")
    with pytest.raises(ValueError, match=re.escape(
            f"--output_dir {b} holds a trained model (trainer_state.json) and --resume_from_checkpoint "
            f"{a / 'checkpoint-2'} lies outside it (continuing that run there would replace the model): pass "
            "--overwrite_output_dir true to continue over it, or choose another --output_dir")):
        main(argv)
    assert {p: p.read_bytes() for p in b.rglob("*") if p.is_file()} == written
    main([*argv, "--overwrite_output_dir", "true"])
    assert read_json(b / "run_args.json")["training_args"]["resume_from_checkpoint"] == str(a / "checkpoint-2")
    assert read_json(b / "trainer_state.json")["global_step"] == 4
    assert sorted(p.name for p in b.glob("checkpoint-*")) == ["checkpoint-4"]  # b's own checkpoint-2 removed
    assert max_weight_difference(a, b) == 0  # a's run, continued as if it had never stopped


@pytest.mark.slow
def test_an_unfinished_run_with_no_checkpoint_starts_afresh(tokenizer_dir, tmp_path):
    """Killed before its first checkpoint: the folder holds the initial weights under a card saying training is in
    progress, which a rerun (with --resume too) trains over: they are no trained model."""
    from hf_minattn.trainer import MinAttnTrainer

    out = tmp_path / "model"
    with killed_at(MinAttnTrainer, "training_step", call=2), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, report_to="none"))
    assert (out / "model.safetensors").is_file() and not list(out.glob("checkpoint-*"))
    main(tiny_argv(out, tokenizer_dir, report_to="none", resume=True))
    assert read_json(out / "trainer_state.json")["global_step"] == 8


def test_a_run_killed_while_saving_its_initial_model_starts_afresh(tokenizer_dir, tmp_path):
    """Killed after the initial weights and before the card saying training is in progress: the rerun refused the
    folder, calling the initial weights "a trained model". The card is now written first."""
    from transformers import PreTrainedTokenizerBase

    out = tmp_path / "model"
    with killed_at(PreTrainedTokenizerBase, "save_pretrained", call=1), pytest.raises(Killed):
        main(tiny_argv(out, tokenizer_dir, report_to="none"))
    assert (out / "model.safetensors").is_file() and (out / "README.md").is_file()
    main(tiny_argv(out, tokenizer_dir, report_to="none"))
    assert read_json(out / "trainer_state.json")["global_step"] == 8


def test_resume_on_model_only_checkpoints_alone_is_refused_naming_them(tmp_path):
    """--resume where every checkpoint is model-only (--save_only_model) trained afresh beside them, leaving the old
    run's states among the new run's."""
    from types import SimpleNamespace

    from hf_minattn.run_folder import checkpoint_to_resume

    out = tmp_path / "out"
    (complete_checkpoint(out / "checkpoint-4") / "optimizer.pt").unlink()
    args = SimpleNamespace(resume_from_checkpoint=None, output_dir=str(out), do_train=True, overwrite_output_dir=False,
                           resume=True, world_size=1, stop_at_step=None, max_steps=8, num_train_epochs=3)
    with pytest.raises(ValueError, match=r"holds only checkpoints that cannot resume training \(model-only: "
                                         r"checkpoint-4\): pass --overwrite_output_dir true"):
        checkpoint_to_resume(args)
    (out / "checkpoint-4" / "trainer_state.json").unlink()  # cut short while saving, not model-only: starts afresh
    assert checkpoint_to_resume(args) == (None, False)


def test_a_readme_that_is_no_model_card_is_not_replaced_by_the_runs_card(tmp_path, tokenizer_dir, text_files):
    """`--output_dir .` in a project folder: the run's model card replaced the project's README.md."""
    from hf_minattn.run_folder import foreign_readme

    out = tmp_path / "project"
    out.mkdir()
    (out / "README.md").write_text("# My project\n\nNotes that are mine.\n")
    with pytest.raises(ValueError, match=re.escape(f"--output_dir {out} holds a README.md that is no model card: the "
                                                   "run's model card would replace it")):
        main(tiny_argv(out, tokenizer_dir, train_file=text_files / "train.txt"))
    assert sorted(p.name for p in out.iterdir()) == ["README.md"]
    assert (out / "README.md").read_text() == "# My project\n\nNotes that are mine.\n"
    (out / "README.md").write_text("---\nlibrary_name: transformers\n---\n\n# a card\n")  # a model card's opening
    assert not foreign_readme(out)
    (out / "README.md").write_text("\ufeff---\r\nlicense: mit\r\n---\r\n")  # saved with a byte-order mark, CRLF
    assert not foreign_readme(out)
    (out / "README.md").write_text("")  # `touch README.md`: nothing to lose
    assert not foreign_readme(out)
