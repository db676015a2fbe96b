"""Items as samples: where the same homonyms are measured at every seed, the sense comparisons resample seeds and
homonyms together, and the answer follows that interval; a difference carried by a few homonyms is not called one."""

import copy

import numpy as np
from test_experiments_probe_answers import SEEDS, answers, probes, text

from hf_minattn.experiments.findings_answers import q6_answer
from hf_minattn.experiments.probe_answers import homonym_level_comparisons

WORDS = [f"word{i}" for i in range(26)]


def by_word(rows_by_seed, words=WORDS):
    """sense_accuracy rows of one model per seed, with per-homonym accuracies at layers (0, 1, 2)."""
    return [{"words": words, "layers": [0, 1, 2], "accuracy_by_word": {w: [0.5, a, a] for w, a in zip(words, row)}}
            for row in rows_by_seed]


def spread_gain():
    """Trained - untrained per homonym: +0.4 on 3 homonyms, -0.03 on the other 23 (mean 0.02), the same at every
    seed (up to 0.001): over seeds the gain is certain, over homonyms it is carried by 3 of 26."""
    gain = np.array([0.4] * 3 + [-0.03] * 23)
    untrained = [np.full(26, 0.55) for _ in SEEDS]
    trained = [0.55 + gain + 0.001 * i for i, _ in enumerate(SEEDS)]
    return by_word(trained), by_word(untrained)


def test_a_gain_carried_by_a_few_homonyms_is_not_called_a_gain():
    full, untrained = spread_gain()
    c = homonym_level_comparisons(full, untrained, last=2, chance=0.5, n_resamples=1000)
    assert c["vs_untrained"]["method"] == "crossed" and c["vs_untrained"]["family_size"] == 2
    assert abs(c["vs_untrained"]["estimate"] - (1.2 - 0.69) / 26 - 0.001) < 1e-9
    assert c["vs_untrained"]["low"] < 0 < c["vs_untrained"]["high"] and c["vs_untrained"]["verdict"] == "unresolved"
    assert c["vs_chance"]["verdict"] == "higher"  # 0.57 at every homonym but three, far above 0.5 at all


def test_the_sense_answer_reads_the_homonym_level_comparison():
    full, untrained = spread_gain()
    p = probes()
    for name, rows in (("full", full), ("untrained", untrained)):
        for seed, extra in zip(SEEDS, rows):
            p["by_seed"][name][seed]["sense_accuracy"].update({"accuracy_by_word": extra["accuracy_by_word"],
                                                               "words": WORDS})
    items = answers(p)["q6"]["senses"]
    assert items["comparisons"]["vs_untrained"]["verdict"] == "higher"  # over seeds alone
    assert items["comparisons_items"]["vs_untrained"]["verdict"] == "unresolved"
    with_items = {"answers": {"q6": {"senses": items}}}
    seeds_only = copy.deepcopy(with_items)
    seeds_only["answers"]["q6"]["senses"].pop("comparisons_items")
    assert q6_answer(with_items) != q6_answer(seeds_only)
    assert "but not above both the untrained model" in q6_answer(with_items)
    section = text("q6", p)
    assert "the same, seeds x homonyms" in section and "with the homonyms as a sample too (seeds alone: better)" in section


def test_the_position_control_is_compared_homonym_by_homonym_where_the_probes_kept_it():
    """A control that is strong on 3 homonyms and at chance on the rest: its mean (0.56) stays below the trained
    model's 0.6 at every homonym but three, yet on those three the control is better. The stronger control overall is
    the one compared, per homonym, in the same Holm family; without per-homonym controls the family stays at 2."""
    full, untrained = spread_gain()
    control = {w: (0.97 if i < 3 else 0.5) for i, w in enumerate(WORDS)}
    for row in full:
        row["control_accuracy_by_word"] = {"position": {w: 0.5 for w in WORDS}, "position and length": control}
    c = homonym_level_comparisons(full, untrained, last=2, chance=0.5, n_resamples=1000)
    assert c["vs_position"]["method"] == "crossed" and c["vs_position"]["family_size"] == 3
    expected = np.mean([np.mean([r["accuracy_by_word"][w][2] - control[w] for w in WORDS]) for r in full])
    assert abs(c["vs_position"]["estimate"] - expected) < 1e-9  # against "position and length", the stronger
    del full[0]["control_accuracy_by_word"]
    assert "vs_position" not in homonym_level_comparisons(full, untrained, last=2, chance=0.5, n_resamples=100)
