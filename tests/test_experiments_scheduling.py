"""How the experiments share out two cores: the order the training runs take, and word2vec trained ahead of the
probes, side by side, with the same vectors as one after another."""

from dataclasses import replace

import numpy as np
import pytest
from conftest import benchmark_script

from hf_minattn.experiments.word2vec import matched_word2vec_settings, word2vecs_ahead
from hf_minattn.experiments.training import (SETTINGS, VARIANTS, run_side_by_side, run_steps, side_by_side_order,
                                             training_minutes_left, variant_named)
from hf_minattn.probes.word2vec import WORD2VEC_CACHE_ENV, WORD2VEC_SETTINGS, cached_word2vec, train_word2vec


def test_the_runs_that_stop_early_train_last_and_the_rest_keep_their_order():
    jobs = [(seed, v) for seed in (3, 4) for v in VARIANTS if v.trained]
    ordered = side_by_side_order(jobs)
    assert sorted(ordered, key=jobs.index) == jobs  # the same jobs
    early = [job for job in jobs if job[1].max_steps is not None]
    assert early and ordered[-len(early):] == early
    assert ordered[: -len(early)] == [job for job in jobs if job not in early]


def test_the_training_time_left_is_the_steps_left_at_the_finished_runs_pace():
    full = SETTINGS["full"]
    assert run_steps(full, variant_named("full")) == full["max_steps"] == 1200
    assert run_steps(full, variant_named("shuffled_labels")) == full["early_save_until"] == 400
    # two runs of 1,200 steps took 240 s and 300 s: 0.225 s a step; 3,000 steps left, two at a time: 337.5 s
    assert training_minutes_left([(1200, 240.0), (1200, 300.0)], 3000, 2) == pytest.approx(5.625)
    assert training_minutes_left([(400, 90.0)], 0, 2) == 0


def test_later_work_runs_on_the_runs_workers_after_them_and_not_one_by_one():
    """Side by side, every run gets one thread and the later phase's callables run after the runs are taken up; one
    at a time, the runs keep their threads and the callables are left to their phase."""
    for parallel, expected_also in ((2, 1), (1, 0)):
        calls = []
        run_side_by_side(lambda job, threads=None: calls.append((job, threads)), [1, 2, 3], parallel,
                         also=lambda: [lambda: calls.append(("also", None))])
        runs = [call for call in calls if call[0] != "also"]
        assert sorted(runs) == [(job, 1 if parallel > 1 else None) for job in (1, 2, 3)]
        assert calls.count(("also", None)) == expected_also


def test_word2vecs_trained_ahead_side_by_side_are_those_the_probes_would_train(tmp_path, monkeypatch):
    """Both word2vecs of each seed (tuned and matched) land in the cache, two at a time on threads, and equal the
    vectors of the same settings trained alone: one worker thread each, so the seed still fixes them."""
    monkeypatch.setenv(WORD2VEC_CACHE_ENV, str(tmp_path))
    rng = np.random.default_rng(0)
    words = [[f"w{i}" for i in rng.integers(0, 40, 12)] for _ in range(300)]
    settings = dict(SETTINGS["quick"], parallel=2)
    corpus_tokens = 20 * 16 * 64 // 2  # two passes for the matched word2vec
    word2vecs_ahead(settings, (0, 1), words, corpus_tokens)
    assert len(list(tmp_path.glob("*.bin"))) == 4
    for seed in (0, 1):
        matched, passes = matched_word2vec_settings(settings, corpus_tokens, seed)
        assert passes == 2 and matched.epochs == 2
        for w2v in (replace(WORD2VEC_SETTINGS, seed=seed), matched):
            kv, _, cached = cached_word2vec(words, w2v)
            assert cached  # read back: trained ahead
            np.testing.assert_array_equal(kv.vectors, train_word2vec(words, w2v).vectors)


def test_without_a_cache_nothing_is_trained_ahead(tmp_path, monkeypatch):
    monkeypatch.setenv(WORD2VEC_CACHE_ENV, "")
    monkeypatch.chdir(tmp_path)
    word2vecs_ahead(dict(SETTINGS["quick"], parallel=2), (0,), [["a", "b"]] * 10, 1000)
    assert not list(tmp_path.rglob("*.bin"))


def test_the_schedule_replay_gives_known_makespans():
    """benchmarks/schedule_replay.py: whichever worker is free first takes the next task, and the saving it reports
    is its two schedules' difference."""
    replay = benchmark_script("schedule_replay")
    assert replay.makespan([3, 3, 2, 2, 2]) == 7  # 3 | 3, then 2 on each, then the last 2 on the first free
    assert replay.makespan([5, 1, 1, 1, 1, 1]) == 5
    assert replay.makespan([1], (4, 2)) == 3
    result = replay.main()
    before = result["before"]
    assert before["minutes"] == round(before["training_minutes"] + before["word2vec_minutes"], 1)
    assert abs(result["saved_minutes"] - (before["minutes"] - result["after_minutes"])) <= 0.1


def test_a_phase_kept_in_its_file_is_read_back_unless_it_was_measured_for_something_else(tmp_path):
    """cached_json: the first call measures and writes; a rerun reads the file back (as its read_back converts it);
    numbers read_back rejects (other seeds, other models) are measured again; a phase that measures nothing writes
    nothing."""
    from hf_minattn.experiments.caches import cached_json

    path, calls = str(tmp_path / "phase.json"), []

    def measure(value):
        calls.append(value)
        return {"seeds": {0: value}}

    def read_back(kept):  # JSON gives string keys back: the reader turns them into seeds
        return {"seeds": {int(s): v for s, v in kept["seeds"].items()}} if kept["seeds"] else None

    assert cached_json(path, read_back, lambda: measure(1.5)) == {"seeds": {0: 1.5}} and calls == [1.5]
    assert cached_json(path, read_back, lambda: measure(2.5)) == {"seeds": {0: 1.5}} and calls == [1.5]  # read back
    assert cached_json(path, lambda kept: None, lambda: measure(3.5)) == {"seeds": {0: 3.5}} and calls == [1.5, 3.5]
    empty = str(tmp_path / "none.json")
    assert cached_json(empty, read_back, lambda: None) is None and not (tmp_path / "none.json").exists()
