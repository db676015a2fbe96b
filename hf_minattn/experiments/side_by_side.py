"""Training runs in child processes, several side by side on threads, stopped together: the first failure, a Ctrl-C
or a kill (SIGTERM) cancels the runs not started yet and ends the ones running before it is raised. An ended run
leaves its folder unfinished (`training.finished_folder`), so the next call resumes it from its newest checkpoint, or
trains it again from the start where it has none (`training.unfinished_run`)."""

import itertools
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager

from hf_minattn.cli import PARENT_ENV, RunFailed

STOP_GRACE_SECONDS = 10  # SIGTERM, then SIGKILL: a run that ignores SIGTERM must not outlive the call


class LiveProcesses:
    """The child processes running now, so that a failure on another thread or a Ctrl-C can end them. The workers
    of a stopped call start none: one that took its job just before the stop would otherwise start it after the
    others ended."""

    def __init__(self):
        self.lock, self.running, self.stopped = threading.Lock(), set(), set()

    def start(self, command: list[str], **options) -> subprocess.Popen:
        with self.lock:  # held across Popen: a stop either sees the process or keeps it from starting
            if threading.current_thread().name.startswith(tuple(self.stopped)):
                raise RunFailed(f"not started, the runs being stopped: {' '.join(command)}")
            process = subprocess.Popen(command, **options)
            self.running.add(process)
            return process

    def done(self, process: subprocess.Popen) -> None:
        with self.lock:
            self.running.discard(process)

    def stop(self, workers: str) -> None:
        """End every running process, and let the threads whose names start with `workers` start none."""
        with self.lock:
            self.stopped.add(workers)
            running = list(self.running)
        end(running)


LIVE = LiveProcesses()
CALLS = itertools.count()  # run_side_by_side's calls, which name their workers


def end(processes: list) -> None:
    """SIGTERM to each of `processes` still running, then SIGKILL to those left after STOP_GRACE_SECONDS."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_logged(command: list[str], log_path: str, env: dict | None = None, echo=None) -> None:
    """`command` in a child process (LIVE tracks it), its output into `log_path` (the command on its first line) and
    each line to `echo(line)` where given; a RunFailed naming the log when it exits with an error. Left early (an
    exception, a Ctrl-C), it ends the process first: a run left behind would go on training, unseen."""
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    with open(log_path, "w", buffering=1) as logfile:  # line-buffered
        logfile.write(" ".join(command) + "\n")
        env = {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}  # cli.end_with_parent
        process = LIVE.start(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            for line in process.stdout:
                logfile.write(line)
                if echo is not None:
                    echo(line)
            process.wait()
        finally:
            LIVE.done(process)
            end([process])  # nothing to do where it exited on its own
            process.stdout.close()
    if process.returncode != 0:
        raise RunFailed(f"training failed (exit {process.returncode}); see {log_path}")


def run_side_by_side(train, jobs, parallel: int, also=None) -> None:
    """`train(job, threads=1)` for every job, `parallel` at a time (small models gain little from a second thread,
    and the runs' start-up, mostly imports, overlaps), then the callables that `also()` returns, on the same workers
    (work of a later phase that fills the end, where one worker would wait for the other; `also()` itself runs once
    the first runs have started). One at a time (`parallel` 1): `train(job)`, and `also` is left to its phase.
    The first failure, a Ctrl-C or a kill (SIGTERM) cancels the jobs not started and ends the runs going on (`LIVE`),
    then is raised: waiting for the queue would train every other run first (an hour on the full preset)."""
    if parallel <= 1:
        for job in jobs:
            train(job)
        return
    stopping = threading.Event()

    def guarded(work, *args, **kwargs):
        if stopping.is_set():  # a failure or a Ctrl-C came first: not started
            return None
        try:
            return work(*args, **kwargs)
        except BaseException:
            stopping.set()  # now, before this worker takes the next job (the main thread cancels them after)
            raise

    workers = f"hf-minattn-runs-{next(CALLS)}"  # LIVE stops this call's workers, not a later call's
    pool = ThreadPoolExecutor(parallel, thread_name_prefix=workers)
    # The signals stay events until the runs are ended: a second one, raised during the cleanup, would skip it
    with stop_signals_as_event() as interrupted:
        try:
            futures = [pool.submit(guarded, train, job, threads=1) for job in jobs]
            futures += [pool.submit(guarded, task) for task in (also() if also is not None else [])]
            while not interrupted.is_set():
                # In steps of a second, to see a Ctrl-C: the main thread would otherwise sleep until a run ends
                done, running = wait(futures, timeout=1, return_when=FIRST_EXCEPTION)
                if interrupted.is_set():  # a signal to the whole group ends the runs too: theirs is no failure
                    break
                failed = [future for future in done if future.exception() is not None]
                if failed:
                    raise failed[0].exception()
                if not running:
                    break
            if interrupted.is_set():
                raise stop_exception(interrupted.signum)
        except BaseException:  # KeyboardInterrupt included
            stopping.set()
            pool.shutdown(wait=False, cancel_futures=True)
            LIVE.stop(workers + "_")  # the pool names its threads PREFIX_0, PREFIX_1...
            raise
    pool.shutdown()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # a Ctrl-C; a kill: `kill`, `timeout`, a job scheduler's stop


@contextmanager
def stop_signals_as_event():
    """A Ctrl-C (SIGINT) or a kill (SIGTERM) sets the event yielded, its `signum` the signal, instead of acting
    wherever the main thread is: a KeyboardInterrupt raised inside `wait` or `submit` could leave a future's or the
    pool's lock held, and the workers, and the exit that joins them, would wait forever; SIGTERM's default would end
    this process alone, its runs training on unseen. The caller raises `stop_exception` at a point of its own. Off
    the main thread (no handler can be set there), the signals are left as they are."""
    interrupted = threading.Event()
    interrupted.signum = None
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def caught(signum, frame):
        interrupted.signum = signum
        interrupted.set()

    previous = {}
    try:
        for signum in STOP_SIGNALS:  # inside the try: a signal between the two leaves neither handler behind
            previous[signum] = signal.signal(signum, caught)
        yield interrupted
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def stop_exception(signum) -> BaseException:
    """What a stop signal raises once the runs are ended: KeyboardInterrupt for a Ctrl-C; for SIGTERM, SystemExit with
    the status a shell gives a process that signal ended (143), so `finally` blocks run on the way out."""
    return KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)


@contextmanager
def terminate_as_exit():
    """SIGTERM raises `stop_exception` in the main thread for the body, where its default would end this process at
    once and leave a training run it started going on (`run_logged` ends its run on any exception)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raised(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second kill must not cut short the cleanup of the first
        raise stop_exception(signum)

    previous = signal.signal(signal.SIGTERM, raised)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
