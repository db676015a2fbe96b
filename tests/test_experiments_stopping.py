"""The experiments' training queue stops at the first failed run or a Ctrl-C: the runs not started are not started,
the runs going on are ended, the error is one line naming the failed run's log, and the next call trains the runs
left unfinished again. Real threads and child processes, with `sleep` and `sh` standing in for training."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from helpers_training import complete_checkpoint

from hf_minattn.experiments import training


def test_the_first_failure_cancels_the_jobs_not_started_and_is_raised_at_once():
    """It used to wait for every queued job, each started after the failure, and only then raise."""
    started, lock, release = [], threading.Lock(), threading.Event()

    def train(job, threads=None):
        with lock:
            started.append(job)
        if job == 0:
            raise RuntimeError("run 0 failed")
        release.wait(5)  # held until the test releases it: a wall-clock bound would flake on loaded cores

    begin = time.monotonic()
    with pytest.raises(RuntimeError, match="run 0 failed"):
        training.run_side_by_side(train, list(range(6)), 2, also=lambda: [lambda: started.append("also")])
    assert time.monotonic() - begin < 4  # raised while job 1 (or any other) was still held
    release.set()
    time.sleep(0.5)  # job 1, where it was taken beside job 0, ends; nothing else may start meanwhile
    assert 0 in started and set(started) <= {0, 1}


def test_a_failed_run_ends_the_run_going_on_beside_it(tmp_path):
    from hf_minattn.cli import RunFailed
    from hf_minattn.experiments.side_by_side import run_logged

    ended = {}

    def train(job, threads=None):
        command = ["sh", "-c", "sleep 0.3; exit 3"] if job == 1 else ["sleep", "30"]
        try:
            run_logged(command, str(tmp_path / f"{job}.log"))
        finally:
            ended[job] = time.monotonic()

    begin = time.monotonic()
    with pytest.raises(RunFailed, match=r"^training failed \(exit 3\); see .*1\.log$"):
        training.run_side_by_side(train, list(range(4)), 2)
    deadline = time.monotonic() + 10
    while 0 not in ended and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended[0] - begin < 10  # its `sleep 30` was ended, not waited for
    assert sorted(ended) == [0, 1]  # jobs 2 and 3 never started
    assert (tmp_path / "0.log").read_text().splitlines()[0] == "sleep 30"


def session_processes(session: int) -> list[int]:
    """The processes of session `session` (children keep it after their parent has gone)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # not a process, or one that has just exited
        if entry.isdigit() and int(fields[3]) == session:
            found.append(int(entry))
    return found


def start_session(script: str, tmp_path, argument) -> tuple:
    """(process, its output file): `script` run by Python with `argument`, in a session of its own (its runs stay in
    it, so that `session_processes` finds them after it has gone)."""
    output = tmp_path / "output.txt"
    with open(output, "w") as f:
        process = subprocess.Popen([sys.executable, "-c", script, str(argument)], stdout=f, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return process, output


def wait_for_runs(process, output, count: int) -> None:
    """Until `count` runs have printed "start" (inside the signal handlers) and the session of `process` holds it and
    them (the imports take a while on shared cores). The process count alone was not enough: the imports start
    `uname -p` (platform.processor), and a kill sent then found the default handler (exit -15, not 143)."""
    deadline = time.monotonic() + 60
    while (output.read_text().count("start") < count or len(session_processes(process.pid)) < count + 1) \
            and time.monotonic() < deadline:
        assert process.poll() is None, output.read_text()
        time.sleep(0.1)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the processes from /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_a_ctrl_c_or_a_kill_stops_the_queue_and_ends_the_runs_going_on(tmp_path, signum, group):
    """SIGINT to the experiments' process alone: it used to kill nothing (the workers went on with every queued run
    while the main thread waited for them); now it ends the two runs going on and starts none of the others. SIGTERM
    (`kill`, `timeout`, a job scheduler) used to end the process alone, its two runs training on; now it does what a
    Ctrl-C does, and exits with the status a shell gives a process that SIGTERM ended (143). Sent to the whole
    process group (a terminal's Ctrl-C, `timeout`, a scheduler), it ends the runs too: that is no failed run."""
    script = textwrap.dedent("""
        import sys
        from hf_minattn.experiments.side_by_side import run_logged, run_side_by_side

        def train(job, threads=None):
            print("start", job, flush=True)
            run_logged(["sleep", "37"], f"{sys.argv[1]}/{job}.log")

        run_side_by_side(train, list(range(6)), 2)
    """)
    process, output = start_session(script, tmp_path, tmp_path)
    try:
        wait_for_runs(process, output, 2)
        (os.killpg if group else os.kill)(process.pid, signum)  # the session's group is the process's own pid
        process.wait(timeout=20)
        text = output.read_text()
        assert "training failed" not in text, text
        if signum == signal.SIGINT:
            assert "KeyboardInterrupt" in text and process.returncode != 0, text
        else:
            assert process.returncode == 143, text
        assert text.count("start") == 2, text
        assert session_processes(process.pid) == []  # no run left training
    finally:
        if session_processes(process.pid):
            os.killpg(process.pid, signal.SIGKILL)  # the group this test started


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the processes from /proc")
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_a_kill_of_the_experiments_command_ends_the_run_it_trains_alone(tmp_path, group):
    """One run at a time (`--parallel 1`) trains in the main thread, where no event stands in for SIGTERM: the
    command's own handler raises, and the run is ended on the way out, where it used to outlive the command."""
    script = textwrap.dedent("""
        import sys
        from hf_minattn.experiments import cli
        from hf_minattn.experiments.side_by_side import run_logged

        def one_run(out, **settings):  # the training of the whole call, one run at a time: a run that sleeps
            print("start", flush=True)
            run_logged(["sleep", "37"], f"{out}/run.log")

        cli.run_experiments = one_run
        sys.exit(cli.main(["--parallel", "1", "--out", sys.argv[1]]))
    """)
    process, output = start_session(script, tmp_path, tmp_path / "out")
    try:
        wait_for_runs(process, output, 1)
        (os.killpg if group else os.kill)(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
        assert process.returncode == 143 and "training failed" not in output.read_text(), output.read_text()
        assert session_processes(process.pid) == []
    finally:
        if session_processes(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_runs_end_with_an_experiments_command_killed_outright(tmp_path):
    """SIGKILL (the out-of-memory killer) leaves the command no cleanup: its runs trained on into --out, where a rerun
    removing their folders raced with them. Each run now asks the kernel to end it with the thread that started it."""
    script = textwrap.dedent("""
        import sys
        from hf_minattn.experiments.side_by_side import run_logged, run_side_by_side

        child = ("from hf_minattn.cli import end_with_parent; end_with_parent(); import time; "
                 "print('asked', flush=True); time.sleep(37)")

        def train(job, threads=None):
            run_logged([sys.executable, "-c", child], f"{sys.argv[1]}/{job}.log")

        run_side_by_side(train, list(range(4)), 2)
    """)
    process, output = start_session(script, tmp_path, tmp_path)
    try:
        deadline = time.monotonic() + 120  # the runs past their imports (seconds on loaded cores), prctl asked
        while sum("asked" in p.read_text().splitlines()[1:] for p in tmp_path.glob("*.log")) < 2 \
                and time.monotonic() < deadline:  # the line it prints, not the command on the log's first line
            assert process.poll() is None, output.read_text()
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
        deadline = time.monotonic() + 15
        while session_processes(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert session_processes(process.pid) == []  # ended within seconds, not after their 37
    finally:
        if session_processes(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_run_whose_experiments_command_is_already_gone_ends_at_once():
    """run_mlm as the command starts it (python -m hf_minattn.run_mlm): a parent that died before the run asked for
    the signal is seen (its process id is not the parent's), and the run ends before any work."""
    from hf_minattn.cli import PARENT_ENV

    env = {**os.environ, PARENT_ENV: "1" if os.getpid() != 1 else "2"}
    result = subprocess.run([sys.executable, "-m", "hf_minattn.run_mlm", "--help"], env=env, capture_output=True,
                            timeout=120)
    assert result.returncode == -signal.SIGTERM and b"usage" not in result.stdout
    assert subprocess.run([sys.executable, "-m", "hf_minattn.run_mlm", "--help"], capture_output=True,
                          timeout=120).returncode == 0  # where no command started it: nothing


def test_a_failed_run_is_one_line_naming_its_log(tmp_path, monkeypatch, capsys):
    """run_mlm exiting with an error was a RuntimeError: a 30-line traceback from `hf-minattn experiments`."""
    from hf_minattn.cli import main
    from hf_minattn.experiments import cli

    def phases(out, *args):
        training.run_training(["--no_such_flag"], os.path.join(out, "logs", "full-seed0.log"))

    monkeypatch.setattr(cli, "run_phases", phases)  # nothing trains: run_mlm refuses the flag
    assert main(["experiments", "--quick", "--reference", "none", "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("hf-minattn experiments: error: training failed (exit 2); see ")
    assert lines[-1].endswith("full-seed0.log") and not any("Traceback" in line for line in lines)


def test_runs_stopped_by_a_failure_are_trained_again_by_the_next_call(tmp_path, monkeypatch, capsys):
    """The run ended beside the failed one leaves its folder unfinished: the next call trains both from the start,
    and the runs the failure kept from starting."""
    from hf_minattn.cli import RunFailed

    monkeypatch.setattr(training.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(training, "shared_tokenizer", lambda out, settings, seed: str(tmp_path / "tokenizer"))
    monkeypatch.setattr(training, "variant_arguments", lambda settings, variant, seed, folder, tokenizer_dir: [folder])
    monkeypatch.setattr(training, "initialise_untrained", lambda folder, full, seed: None)
    settings = dict(training.SETTINGS["quick"], parallel=2)
    models = tmp_path / "models"

    def failing(args, log_path, threads=None):  # the first run trains on, the second fails once the first has begun
        sibling = 'for i in $(seq 500); do [ -e "$1/../../full/seed0/stale" ] && break; sleep 0.01; done; exit 3'
        script = 'mkdir -p "$1" && touch "$1/stale" && ' + ("exec sleep 30" if "/full/" in args[0] else sibling)
        training.run_logged(["sh", "-c", script, "sh", args[0]], log_path)

    monkeypatch.setattr(training, "run_training", failing)
    begin = time.monotonic()
    with pytest.raises(RunFailed, match=r"see .*frozen_embeddings-seed0\.log"):
        training.train_variants(str(tmp_path), settings, (0, 1))
    assert time.monotonic() - begin < 10
    time.sleep(0.3)  # the ended run's worker returns
    assert sorted(p.relative_to(models).as_posix() for p in models.glob("*/*")) == ["frozen_embeddings/seed0",
                                                                                    "full/seed0"]
    trained = []

    def finishing(args, log_path, threads=None):
        trained.append(args[0])
        script = 'mkdir -p "$1" && touch "$1/eval_results.json" "$1/trainer_state.json"'
        training.run_logged(["sh", "-c", script, "sh", args[0]], log_path)

    monkeypatch.setattr(training, "run_training", finishing)
    training.train_variants(str(tmp_path), settings, (0, 1))
    assert len(trained) == 2 * sum(v.trained for v in training.VARIANTS)
    assert not list(models.glob("*/*/stale"))  # removed, then trained from the start
    assert capsys.readouterr().out.count("holds an unfinished run: training it again") == 2


def test_a_killed_run_with_a_checkpoint_to_resume_from_is_resumed_not_trained_again(tmp_path, monkeypatch, capsys):
    """Its saved states are model-only, but the newest checkpoint keeps what resuming needs (MinAttnTrainer): the
    next call passes --resume and keeps the folder, and the killed session's log beside the new one; a folder whose
    checkpoint cannot resume is trained again."""
    monkeypatch.setattr(training, "shared_tokenizer", lambda out, settings, seed: str(tmp_path / "tokenizer"))
    monkeypatch.setattr(training, "variant_arguments", lambda settings, variant, seed, folder, tokenizer_dir: [folder])
    monkeypatch.setattr(training, "initialise_untrained", lambda folder, full, seed: None)
    models = tmp_path / "models"
    checkpoint = complete_checkpoint(models / "full" / "seed0" / "checkpoint-4")
    cut_short = models / "frozen_embeddings" / "seed0" / "checkpoint-4"  # its trainer state never written
    shutil.copytree(checkpoint, cut_short)
    (cut_short / "trainer_state.json").unlink()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "full-seed0.log").write_text("the killed session\n")
    trained = {}

    def finishing(args, log_path, threads=None):
        trained[os.path.relpath(args[0], models)] = args[1:]
        os.makedirs(args[0], exist_ok=True)
        for name in ("eval_results.json", "trainer_state.json"):
            open(os.path.join(args[0], name), "w").close()

    monkeypatch.setattr(training, "run_training", finishing)
    training.train_variants(str(tmp_path), dict(training.SETTINGS["quick"], parallel=1), (0,))
    assert trained["full/seed0"] == ["--resume", "true"] and checkpoint.is_dir()
    assert trained["frozen_embeddings/seed0"] == [] and not cut_short.exists()
    assert (tmp_path / "logs" / "full-seed0.killed.log").read_text() == "the killed session\n"
    printed = capsys.readouterr().out
    assert f"{checkpoint.parent} holds an unfinished run: resuming it from checkpoint-4" in printed
    assert f"{cut_short.parent} holds an unfinished run: training it again from the start" in printed
    done = [line for line in printed.splitlines() if "runs done" in line]
    assert "training left" not in done[-1] and all("training left" in line for line in done[:-1])  # its 4 steps counted


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_a_stop_signal_while_the_runs_are_waited_on_becomes_an_event_raised_at_a_point_of_our_own(signum):
    """Raised inside concurrent.futures' wait or submit, a KeyboardInterrupt can leave a lock held, and the call, and
    the exit that joins its workers, wait forever (seen once, under load: the Ctrl-C test above timed out)."""
    from hf_minattn.experiments.side_by_side import stop_exception, stop_signals_as_event

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with stop_signals_as_event() as interrupted:
        os.kill(os.getpid(), signum)  # no KeyboardInterrupt here, and this process goes on
        deadline = time.monotonic() + 5
        while not interrupted.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert interrupted.is_set() and interrupted.signum == signum
    assert {s: signal.getsignal(s) for s in before} == before
    raised = stop_exception(interrupted.signum)
    assert isinstance(raised, KeyboardInterrupt) if signum == signal.SIGINT else raised.code == 143
    seen = []

    def off_the_main_thread():  # no handler can be set there: the signals are left alone
        with stop_signals_as_event() as event:
            seen.append((event.is_set(), signal.getsignal(signal.SIGINT) is before[signal.SIGINT]))

    thread = threading.Thread(target=off_the_main_thread)
    thread.start(), thread.join()
    assert seen == [(False, True)]


def test_a_stop_during_the_probes_word2vecs_starts_none_of_those_queued(monkeypatch):
    """A Ctrl-C or a kill while the probe phase trains its word2vecs (a rerun whose training phase had none to fill
    its end) used to wait for every word2vec in the queue, minutes, before the call ended."""
    from hf_minattn.experiments import word2vec
    from hf_minattn.probes import word2vec as probe_word2vec

    started, lock, release = [], threading.Lock(), threading.Event()

    def train(words, settings):
        with lock:
            started.append(settings)
        if settings == 0:
            raise KeyboardInterrupt  # as the main thread's handler raises it; here from the first job
        release.wait(5)  # held until the test releases it

    monkeypatch.setattr(word2vec, "uncached_word2vecs", lambda settings, seeds, words, tokens: list(range(6)))
    monkeypatch.setattr(probe_word2vec, "cached_word2vec", train)
    begin = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        word2vec.word2vecs_ahead({"parallel": 2}, (0, 1, 2), [["a"]], 1)
    assert time.monotonic() - begin < 4  # raised while the other worker's job was still held
    release.set()
    time.sleep(0.5)
    assert 0 in started and set(started) <= {0, 1}  # job 1 if the other worker took it first; nothing queued after
