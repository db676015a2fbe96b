"""The `hf-minattn` command: one sub-command per job, each implemented in the module that owns it."""

import argparse
import importlib
import sys

# sub-command -> (module, function taking argv, one-line help); imported lazily so `--help` is fast.
COMMANDS = {
    "push": ("hf_minattn.push", "main", "upload a saved model folder to the Hub (or --dry-run)"),
    "probe": ("hf_minattn.probes.cli", "probe_main", "probe an encoder's static vs contextual embeddings, heads and weights"),
    "compare": ("hf_minattn.probes.cli", "compare_main", "put several probe results side by side"),
    "experiments": ("hf_minattn.experiments", "main", "train the variants and answer the classic questions"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="hf-minattn", description=__doc__)
    parser.add_argument("command", choices=sorted(COMMANDS), help="; ".join(f"{k}: {v[2]}" for k, v in COMMANDS.items()))
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    args = parser.parse_args(argv[:1])
    module, function, _ = COMMANDS[args.command]
    return getattr(importlib.import_module(module), function)(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
