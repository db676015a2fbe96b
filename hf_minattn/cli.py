"""The `hf-minattn` command: one sub-command per job, each implemented in the module that owns it."""

import argparse
import difflib
import importlib
import os
import sys

from hf_minattn import __version__

# sub-command -> (module, function taking argv, one-line help); imported lazily so `--help` is fast.
COMMANDS = {
    "push": ("hf_minattn.push", "main", "upload a saved model folder to the Hub (or --dry-run)"),
    "probe": ("hf_minattn.probes.cli", "probe_main", "probe an encoder's static vs contextual embeddings, heads and weights"),
    "compare": ("hf_minattn.probes.cli", "compare_main", "put several probe results side by side"),
    "experiments": ("hf_minattn.experiments", "main", "train the variants and answer the classic questions"),
    "findings": ("hf_minattn.experiments.findings_cli", "main", "re-render FINDINGS.md and its figures from a results.json"),
    "view": ("hf_minattn.probes.serve", "view_main", "serve the interactive attention view, encoding typed sentences"),
}


class RunFailed(RuntimeError):
    """A child process a command started (a training run) exited with an error; the message names its log, which
    says why. Reported in one line: the traceback would show only where the parent waited for it."""


# Mistakes in what the user gave (a path, a file's contents, a value): reported in one line, without a traceback.
# UnicodeDecodeError and json.JSONDecodeError are ValueErrors; FileNotFoundError is an OSError. RunFailed, not every
# RuntimeError: a bug's RuntimeError keeps its traceback.
USER_ERRORS = (ValueError, TypeError, OSError, RunFailed)


class OneLineErrors:
    """An argparse parser mixin whose errors are one line: argparse prints the usage of every flag first (20 lines
    for `hf-minattn probe`, about 140 for run_mlm's), burying the error under it. Put it before the parser class:
    `class Parser(OneLineErrors, argparse.ArgumentParser)` (or HfArgumentParser)."""

    def error(self, message):
        message = " ".join(str(message).split())
        if message.startswith("unrecognized arguments:"):
            message += self.suggestions(message.split(":", 1)[1].split())
        self.exit(2, f"{self.prog}: error: {message} (--help lists every flag)\n")

    def suggestions(self, unknown: list[str]) -> str:
        """'; did you mean --max_steps?' for a mistyped flag: the closest flags this parser knows (argparse's own
        suggestions came in Python 3.14, for choices only)."""
        known = [flag for action in self._actions for flag in action.option_strings]
        guesses = []
        for arg in unknown:
            flag = arg.split("=", 1)[0]
            if flag.startswith("--"):
                guesses += [f"{close} for {flag}" for close in difflib.get_close_matches(flag, known, n=1, cutoff=0.8)]
        return f"; did you mean {', '.join(guesses)}?" if guesses else ""


class ShowDefaults:
    """A help-formatter mixin that ends an option's help with "(default: X)", as argparse.ArgumentDefaultsHelpFormatter
    does, but only where it says something: not where the help already names a default, nor for a default of None,
    False or an empty list (an option unset, a switch off)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or default is argparse.SUPPRESS or default is None or default is False
                or default == [] or not action.option_strings):
            return text
        return text + " (default: %(default)s)"


class OneLineArgumentParser(OneLineErrors, argparse.ArgumentParser):
    """argparse.ArgumentParser whose errors are one line (OneLineErrors) and whose --help states each option's default
    (ShowDefaults, mixed into whichever formatter_class is given): every `hf-minattn` sub-command's parser."""

    def __init__(self, *args, formatter_class=argparse.HelpFormatter, **kwargs):
        if not issubclass(formatter_class, ShowDefaults):
            formatter_class = type(f"ShowDefaults{formatter_class.__name__}", (ShowDefaults, formatter_class), {})
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


def run_reporting_errors(function, argv=None, prog="hf-minattn") -> int:
    """`function(argv)`'s exit code; a user error is printed as one line `PROG: error: MESSAGE` (exit 2), as
    argparse reports a bad option. HF_MINATTN_TRACEBACK=1 re-raises it instead, for debugging."""
    try:
        result = function(argv)
    except USER_ERRORS as error:
        if os.environ.get("HF_MINATTN_TRACEBACK"):
            raise
        print(f"{prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    finally:
        leave_process_group()
    return result if isinstance(result, int) else 0  # run_mlm's main returns its metrics


# Set by `hf-minattn experiments` (side_by_side.run_logged) in each run it starts: its own process id
PARENT_ENV = "HF_MINATTN_RUN_PARENT"


def end_with_parent() -> None:
    """In a run started by `hf-minattn experiments` (PARENT_ENV holds its process id), on Linux: have the kernel
    send this process SIGTERM when the thread that started it ends (prctl PR_SET_PDEATHSIG), so that a parent
    killed outright (SIGKILL, the out-of-memory killer), with no cleanup of its own, leaves no run training on into
    its --out. A parent already gone before the request is checked for. Elsewhere: nothing."""
    parent = os.environ.get(PARENT_ENV)
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    if str(os.getppid()) != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def leave_process_group():
    """Destroy the torch.distributed process group this process joined (under `accelerate launch` or torchrun).
    A process that exits still in a gloo group can abort (SIGABRT, "terminate called without an active
    exception") while the interpreter tears down gloo's threads: pytorch/pytorch#190489."""
    torch = sys.modules.get("torch")  # never imported: never joined a group
    if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = OneLineArgumentParser(prog="hf-minattn", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("command", choices=sorted(COMMANDS), help="; ".join(f"{k}: {v[2]}" for k, v in COMMANDS.items()))
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    args = parser.parse_args(argv[:1])
    module, function, _ = COMMANDS[args.command]
    return run_reporting_errors(getattr(importlib.import_module(module), function), argv[1:],
                                prog=f"hf-minattn {args.command}")


if __name__ == "__main__":
    sys.exit(main())
