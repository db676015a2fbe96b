"""A rerun of `hf-minattn experiments` on a folder an earlier call wrote: refused under other settings (it would keep
the first call's models under the second's name), a cache file cut short measured again, a half-saved untrained model
saved again, and arguments of the wrong kind named. None of these trains anything."""

import json

import pytest

from hf_minattn.experiments.cli import cached_json, preset_settings, run_experiments
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


def test_a_call_on_fewer_seeds_reads_theirs_and_one_on_new_seeds_whose_states_are_gone_is_refused(tmp_path):
    """similarity_dynamics.json of seeds 0-2: a call on seeds 0 and 1 measured again (from step 0 alone, the saved
    states being deleted) and overwrote it; one adding seed 3 to seeds whose states are gone stopped in the middle
    with a message about steps. head_dynamics.json is read the same way."""
    from hf_minattn.experiments.cli import head_dynamics, similarity_dynamics

    curve = {"steps": [0, 10], "spearman": [0.1, 0.2]}
    kept = {"sentences": 30, "variants": {v: {"seeds": {str(s): {**curve, "seed": s} for s in (0, 1, 2)}}
                                          for v in ("full", "frozen_embeddings")}}
    (tmp_path / "similarity_dynamics.json").write_text(json.dumps(kept))
    folders = {"full": {s: str(tmp_path / "models" / "full" / f"seed{s}") for s in range(4)}}
    fewer = similarity_dynamics(str(tmp_path), folders, {}, [0, 1])
    assert {v: sorted(x["seeds"]) for v, x in fewer["variants"].items()} == {"full": [0, 1], "frozen_embeddings": [0, 1]}
    assert fewer["variants"]["full"]["seeds"][1]["seed"] == 1
    assert json.loads((tmp_path / "similarity_dynamics.json").read_text()) == kept  # not overwritten
    with pytest.raises(ValueError, match=r"the saved states of seeds \[0, 1, 3\] .* another --out"):
        similarity_dynamics(str(tmp_path), folders, {}, [0, 1, 3])
    heads = {"sentences": 32, "seeds": {str(s): {"seed": s} for s in (0, 1, 2)},
             "early": {"steps": [0], "seeds": {str(s): {"seed": s} for s in (0, 1, 2)}}}
    (tmp_path / "head_dynamics.json").write_text(json.dumps(heads))
    read = head_dynamics(str(tmp_path), folders, {}, [2, 0])
    assert sorted(read["seeds"]) == [0, 2] and sorted(read["early"]["seeds"]) == [0, 2]
