"""--max_train_minutes (hf_minattn/time_budget.py): the minutes count the whole run, as --max_steps counts its steps.
Every checkpoint keeps the seconds spent, and a resumed run goes on with those its checkpoint left, its learning rate
decaying on from there instead of starting again near its peak; the flags the budget would ignore are refused."""

import re
import tempfile
import time
from types import SimpleNamespace

import pytest
from helpers_training import read_json, tiny_argv

from hf_minattn.run_mlm import main, parse_args
from hf_minattn.time_budget import TIME_BUDGET_FILE, TimeBudget


def begun(minutes: float, resumed_from, step: int) -> TimeBudget:
    budget = TimeBudget(minutes)
    budget.resumed_from = resumed_from
    budget.on_train_begin(SimpleNamespace(output_dir=tempfile.mkdtemp()),
                          SimpleNamespace(global_step=step, is_world_process_zero=True), None)
    return budget


def test_a_resumed_budget_goes_on_with_the_minutes_its_checkpoint_left(tmp_path, caplog):
    saved = TimeBudget(1)  # 60 s
    saved.spent = 30.0
    saved.save_into_checkpoint(str(tmp_path), SimpleNamespace(global_step=5))
    assert read_json(tmp_path / TIME_BUDGET_FILE) == {"step": 5, "spent_seconds": 30.0}
    saved.start = time.monotonic() - 31  # the step ended at 30 s; its evaluation and the save took another second
    saved.save_into_checkpoint(str(tmp_path), SimpleNamespace(global_step=5))
    assert 31 <= read_json(tmp_path / TIME_BUDGET_FILE)["spent_seconds"] < 35
    saved.spent, saved.start = 30.0, None
    saved.save_into_checkpoint(str(tmp_path), SimpleNamespace(global_step=5))
    resumed = begun(1, str(tmp_path), 5)
    assert resumed.fraction == 0.5 and resumed.minutes_left == 0.5 and time.monotonic() - resumed.start >= 30
    assert begun(2, str(tmp_path), 5).fraction == 0.25  # more minutes: the same seconds spent, more left
    # a new run, a checkpoint whose record is of another step, or one without a record: the whole budget
    for folder, step in ((None, 5), (str(tmp_path), 6), (str(tmp_path / "elsewhere"), 5), (str(tmp_path), 0)):
        with caplog.at_level("WARNING", logger="hf_minattn.time_budget"):
            caplog.clear()
            fresh = begun(1, folder, step)
        assert fresh.fraction == 0 and fresh.minutes_left == 1 and time.monotonic() - fresh.start < 5
        # said where a record was there but of another step
        assert ("records the time spent at step 5, not at step 6" in caplog.text) == (step == 6)


def test_a_session_that_trains_removes_the_record_of_an_earlier_sessions_end(tmp_path):
    """The output folder's time_budget.json says a run ended on its budget (`spent_budget`): a resumed session that
    trains is not finished until it writes its own at its end."""
    from hf_minattn.time_budget import spent_budget

    budget, args = TimeBudget(1), SimpleNamespace(output_dir=str(tmp_path))
    budget.on_train_end(args, SimpleNamespace(global_step=7, is_world_process_zero=True), None)
    budget.spent = 60.0
    assert spent_budget(str(tmp_path), 7, 1) is None  # 0 s spent, by a budget that never began
    budget.on_train_end(args, SimpleNamespace(global_step=7, is_world_process_zero=True), None)
    assert spent_budget(str(tmp_path), 7, 1) == "--max_train_minutes 1 spent at step 7"
    assert spent_budget(str(tmp_path), 8, 1) is None and spent_budget(str(tmp_path), 7, 2) is None
    budget.on_train_begin(args, SimpleNamespace(global_step=7, is_world_process_zero=True), None)
    assert not (tmp_path / TIME_BUDGET_FILE).exists()


@pytest.mark.slow
def test_a_killed_budgeted_run_resumes_with_its_learning_rate_where_it_was(tokenizer_dir, tmp_path, caplog):
    """And a run that ended on its budget is finished: --resume with the same minutes trains nothing (it went back to
    its last checkpoint and trained over the model); with more minutes, it goes on."""
    out = tmp_path / "out"
    budgeted = dict(max_steps=None, num_train_epochs=100, save_steps=1, logging_steps=1, report_to="none")
    begin = time.monotonic()
    main(tiny_argv(out, tokenizer_dir, max_train_minutes=0.1, **budgeted))  # 6 s: a checkpoint a step, 2 or more on loaded cores too
    wall = time.monotonic() - begin
    checkpoints = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    records = [read_json(c / TIME_BUDGET_FILE) for c in checkpoints]
    assert len(records) >= 2 and [r["step"] for r in records] == [int(c.name.split("-")[1]) for c in checkpoints]
    # the last checkpoint may be saved at the step that crosses 6 s: its record is within the call's own time
    assert 0 < records[0]["spent_seconds"] < records[-1]["spent_seconds"] <= wall
    model, state = (out / "model.safetensors").read_bytes(), read_json(out / "trainer_state.json")
    main(tiny_argv(out, tokenizer_dir, max_train_minutes=0.1, resume=True, **budgeted))
    assert (out / "model.safetensors").read_bytes() == model and read_json(out / "trainer_state.json") == state
    assert f"holds a complete run (--max_train_minutes 0.1 spent at step {state['global_step']})" \
        in caplog.text
    # as if killed at its last checkpoint: the resumed run, given 12 s in all, has 12 - spent left
    last, spent = records[-1]["step"], records[-1]["spent_seconds"]
    main(tiny_argv(out, tokenizer_dir, max_train_minutes=0.2, resume=True, **budgeted))
    history = read_json(out / "trainer_state.json")["log_history"]
    after = [log for log in history if log["step"] > last and "learning_rate" in log]
    assert after, history[-3:]
    # linear decay over the minutes: at the first step resumed, at most (1 - spent / 12) of the peak (it was ~1 when
    # a resumed run started a new budget)
    assert after[0]["learning_rate"] <= 1e-3 * (1 - spent / 12) + 1e-9
    assert after[0]["time_budget_minutes_left"] <= (12 - spent) / 60 + 0.01


@pytest.mark.parametrize("overrides, message", [
    ({"lr_scheduler_type": "cosine"}, "--max_train_minutes decays the learning rate linearly over the minutes, so "
                                      "--lr_scheduler_type cosine would not be used"),
    ({"warmup_steps": "0.1"}, "--warmup_steps 0.1 is a share of the run's steps, which --max_train_minutes leaves open"),
])
def test_flags_the_budget_would_ignore_are_refused(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_args(tiny_argv(tmp_path / "out", max_train_minutes=1, **overrides))
    parse_args(tiny_argv(tmp_path / "out", **overrides))  # by steps, both are the Trainer's to use
