"""The per-variant learning rate: chosen by the written rule from the exploration seeds alone, then what the preset
trains each variant at."""

import pytest
from conftest import benchmark_script

from hf_minattn.experiments.learning_rates import (EXPLORATION_SEEDS, choose_learning_rates, extension_rates,
                                                   study_rates, variant_learning_rate)
from hf_minattn.experiments.training import SETTINGS, VARIANTS, common_arguments, variant_arguments


def rows(losses: dict, seeds=EXPLORATION_SEEDS):
    """{(variant, rate): loss} -> one study row per seed, the loss shifted a little by seed."""
    return [{"variant": v, "learning_rate": rate, "seed": s, "eval_loss": loss + 0.01 * s}
            for (v, rate), loss in losses.items() for s in seeds]


def test_each_variant_gets_its_lowest_mean_loss():
    study = rows({("full", 1e-3): 6.0, ("full", 2e-3): 5.8, ("full", 4e-3): 5.9,
                  ("frozen_embeddings", 1e-3): 6.3, ("frozen_embeddings", 2e-3): 6.4, ("frozen_embeddings", 4e-3): 6.5})
    chosen = choose_learning_rates(study, base=2e-3)
    assert chosen["full"]["learning_rate"] == 2e-3 and chosen["frozen_embeddings"]["learning_rate"] == 1e-3
    assert chosen["full"]["mean_loss"]["0.004"] == pytest.approx(5.91)  # mean over seeds 0, 1, 2 of 5.9 + 0.01 s
    assert chosen["full"]["seeds"] == [0, 1, 2]
    # where the choice lies in the grid: inside it, or at an end (a rate beyond it might do better still)
    assert chosen["full"]["edge"] is None and chosen["frozen_embeddings"]["edge"] == "lowest"


def test_a_best_rate_at_an_end_of_the_grid_extends_it_by_a_factor_of_2_at_most_twice():
    grid = {("full", 1e-3): 5.7, ("full", 2e-3): 5.8, ("full", 4e-3): 6.7,  # best at the lowest: 5e-4 next
            ("attention_only", 1e-3): 6.3, ("attention_only", 2e-3): 6.2, ("attention_only", 4e-3): 6.1,  # highest
            ("identity_qkv", 1e-3): 6.4, ("identity_qkv", 2e-3): 6.3, ("identity_qkv", 4e-3): 6.5}  # inside: done
    rates = {v: study_rates(2e-3) for v in ("full", "attention_only", "identity_qkv")}
    assert extension_rates(choose_learning_rates(rows(grid), base=2e-3), rates) == {"full": 5e-4,
                                                                                  "attention_only": 8e-3}
    rates["full"].append(5e-4)
    worse = {**grid, ("full", 5e-4): 5.9}  # the lower rate is worse: 1e-3 is now inside the rates run
    assert "full" not in extension_rates(choose_learning_rates(rows(worse), base=2e-3), rates)
    better = {**grid, ("full", 5e-4): 5.6}
    assert extension_rates(choose_learning_rates(rows(better), base=2e-3), rates)["full"] == 2.5e-4
    rates["full"].append(2.5e-4)  # two rates beyond the grid: no third, even at the end again
    best_again = {**better, ("full", 2.5e-4): 5.5}
    assert "full" not in extension_rates(choose_learning_rates(rows(best_again), base=2e-3), rates)


def test_confirmation_seeds_never_take_part_in_the_choice():
    """Rows of seeds 3-7 that would flip the choice if read are ignored."""
    study = rows({("full", 1e-3): 6.0, ("full", 2e-3): 5.8}) + \
        rows({("full", 1e-3): 1.0, ("full", 2e-3): 9.0}, seeds=(3, 4, 5, 6, 7))
    assert choose_learning_rates(study, base=2e-3)["full"]["learning_rate"] == 2e-3
    with pytest.raises(ValueError, match="no run at the exploration seeds"):
        choose_learning_rates(rows({("full", 1e-3): 6.0}, seeds=(3, 4)), base=1e-3)


def test_a_rate_missing_a_seed_is_refused_and_a_tie_goes_to_the_recipes_rate():
    with pytest.raises(ValueError, match=r"ran at seeds \[0, 1\]"):
        choose_learning_rates(rows({("full", 1e-3): 6.0}) + rows({("full", 2e-3): 5.0}, seeds=(0, 1)), base=1e-3)
    tie = rows({("full", 1e-3): 6.0, ("full", 2e-3): 6.0, ("full", 4e-3): 6.0})
    assert choose_learning_rates(tie, base=2e-3)["full"]["learning_rate"] == 2e-3


def test_the_preset_trains_each_variant_at_its_chosen_rate():
    settings = {**SETTINGS["quick"], "learning_rates": {"frozen_embeddings": 5e-4}}
    assert variant_learning_rate(settings, "frozen_embeddings") == 5e-4
    assert variant_learning_rate(settings, "full") == SETTINGS["quick"]["learning_rate"]
    # the shuffled-label control matches the full run step for step, learning rate included
    assert variant_learning_rate({**settings, "learning_rates": {"full": 7e-4}}, "shuffled_labels") == 7e-4
    args = common_arguments(settings, seed=0, variant="frozen_embeddings")
    assert args[args.index("--learning_rate") + 1] == "0.0005"
    frozen = next(v for v in VARIANTS if v.name == "frozen_embeddings")
    study_args = variant_arguments(settings, frozen, 0, "/tmp/x", measurements=False)
    assert "--freeze_embeddings" in study_args and "--save_only_model" not in study_args  # no saved states
    assert "--save_only_model" in variant_arguments(settings, frozen, 0, "/tmp/x")  # the experiments' run keeps them
    assert study_rates(2e-3) == [1e-3, 2e-3, 4e-3]
    with pytest.raises(ValueError, match="positive"):
        study_rates(0)


@pytest.mark.slow
def test_the_study_resumes_from_its_committed_record(tmp_path):
    """benchmarks/lr_study.py writes its results file after every run and, started again from a fresh clone (no
    work folder), trains only the runs that file lacks: the record is what carries a study across days."""
    import json
    import os
    import shutil

    lr_study = benchmark_script("lr_study")
    out, work = str(tmp_path / "lr.json"), tmp_path / "work"
    argv = ["--quick", "--variants", "attention_only", "--parallel", "2", "--out", out, "--work", str(work)]
    assert lr_study.main(argv) == 0
    study = json.load(open(out))
    rates = {r["learning_rate"] for r in study["rows"]}
    assert {1e-3, 2e-3, 5e-4} <= rates and len(rates) <= 5  # the quick preset's grid, and at most 2 rates beyond
    assert len(study["rows"]) == 2 * len(rates)  # the quick preset's 2 exploration seeds
    # one variant chosen: the study is not complete, and says which it lacks
    studied = {v.name for v in lr_study.VARIANTS if v.trained and v.name not in lr_study.FOLLOWS_FULL}
    assert not study["complete"] and set(study["missing"]) == studied - {"attention_only"}
    assert study["chosen"]["attention_only"]["learning_rate"] in rates
    runs = len(study["rows"])
    dropped = study["rows"].pop(4)
    json.dump({**study, "complete": False, "chosen": None}, open(out, "w"))
    shutil.rmtree(work)  # a fresh clone: only the committed record is left
    assert lr_study.main(argv) == 0
    trained = [root for root, _, files in os.walk(work) if "eval_results.json" in files]
    assert trained == [str(work / "quick" / "attention_only" / f"lr{dropped['learning_rate']:g}" /
                           f"seed{dropped['seed']}")]
    again = json.load(open(out))
    assert not again["complete"] and again["chosen"]["attention_only"] and len(again["rows"]) == runs
    json.dump({**again, "precision": "another"}, open(out, "w"))  # a record of another precision is not reused
    assert lr_study.recorded_rows(out, "quick", again["precision"]) == []
    assert len(lr_study.recorded_rows(out, "quick", "another")) == runs


def test_the_preset_the_protocol_and_the_committed_study_agree():
    """The full preset's per-variant rates, PROTOCOL.md's table and benchmarks/results/lr_study.json say the same:
    while the study is under way no rate is set and the table says "pending"; once it is complete, each variant's
    rate is the study's choice, in the preset and in the table."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    study = json.loads((root / "benchmarks" / "results" / "lr_study.json").read_text())
    table = dict(re.findall(r"^\| (\w+) \|[^|\n]*\| ([^|\n]+) \|$", (root / "docs" / "findings" / "PROTOCOL.md")
                            .read_text(), flags=re.M))
    rates = SETTINGS["full"].get("learning_rates") or {}
    studied = [v.name for v in VARIANTS if v.trained and v.name != "shuffled_labels"]
    assert study["preset"] == "full" and set(studied) <= set(table)
    if not rates:
        assert all(table[name].startswith("pending") for name in studied)
        return
    assert study["complete"]
    chosen = choose_learning_rates(study["rows"], study["base_learning_rate"], study["seeds"])
    assert rates == {name: c["learning_rate"] for name, c in chosen.items()}
    for name in studied:
        assert table[name].split()[0] == f"{rates[name]:g}", name
