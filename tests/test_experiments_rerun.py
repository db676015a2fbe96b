"""A rerun of `hf-minattn experiments` on a folder an earlier call wrote: refused under other settings (it would keep
the first call's models under the second's name), a cache file cut short measured again, a half-saved untrained model
saved again, and arguments of the wrong kind named. None of these trains anything."""

import json

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
