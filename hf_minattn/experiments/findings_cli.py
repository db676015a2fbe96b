"""`hf-minattn findings RESULTS_JSON [--out DIR] [--replicates FIRST_RESULTS_JSON]`: re-render FINDINGS.md and the
figures from a committed results.json, without training (after a change to how the findings are written, or to draw
them again); with --replicates, also REPLICATION.md: every verdict of this run beside the same comparison's verdict
in an earlier run of the same protocol on other seeds."""

import os

from hf_minattn.checks import check_output_folder
from hf_minattn.cli import OneLineArgumentParser

from .findings import load_results, rerender_findings
from .replication import replication_markdown


def main(argv=None) -> int:
    from hf_minattn.probes.plots import FIGURE_FORMATS

    parser = OneLineArgumentParser(prog="hf-minattn findings", description=__doc__)
    parser.add_argument("results", help="a results.json written by `hf-minattn experiments`, or its folder")
    parser.add_argument("--out", help="folder for FINDINGS.md and figures/ (default: the results.json's folder)")
    parser.add_argument("--figure-format", choices=FIGURE_FORMATS, default="both",
                        help="every figure as PNG, SVG or both (default: both; FINDINGS.md links the PNG when there is one)")
    parser.add_argument("--replicates", metavar="FIRST_RESULTS_JSON",
                        help="the results.json of an earlier run of the same protocol on other seeds: write "
                             "REPLICATION.md beside FINDINGS.md, each verdict of this run against that run's")
    parser.add_argument("--across-protocols", action="store_true",
                        help="with --replicates: the earlier run may have run under another version of PROTOCOL.md "
                             "(another commit); REPLICATION.md then says that a verdict that differs may come from "
                             "the protocol's change as much as from the seeds")
    args = parser.parse_args(argv)
    if args.out is not None:
        check_output_folder(args.out, "--out")
    if args.across_protocols and not args.replicates:
        raise ValueError("--across-protocols reads the run of --replicates: give --replicates FIRST_RESULTS_JSON")
    runs = load_replicated(args.replicates, args.results, args.across_protocols) if args.replicates else None
    written = rerender_findings(args.results, args.out, args.figure_format)
    print(f"findings: {written['findings']} ({len(written['figures'])} figures)")
    if runs is not None:
        path = os.path.join(os.path.dirname(written["findings"]), "REPLICATION.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(replication_markdown(*runs, same_protocol=not args.across_protocols))
        print(f"replication: {path}")
    return 0


def load_replicated(path: str, results_path: str, across_protocols: bool = False) -> tuple[dict, dict]:
    """(the earlier run's results, this run's), checked to be runs of the same preset and (unless
    `across_protocols`) protocol on other seeds."""
    try:
        first = load_results(path)
    except ValueError as error:
        raise ValueError(f"--replicates {error}") from None
    second = load_results(results_path)
    shared = sorted(set(first["seeds"]) & set(second["seeds"]))
    if shared:
        raise ValueError(f"--replicates {path}: it shares seeds {shared} with {results_path}; a replication runs "
                         "other seeds")
    if first.get("preset") != second.get("preset"):
        raise ValueError(f"--replicates {path}: its preset {first.get('preset')!r} is not {second.get('preset')!r}")
    commits = [(run.get("protocol") or {}).get("commit") for run in (first, second)]
    if commits[0] != commits[1] and not across_protocols:  # REPLICATION.md says "the same protocol"
        raise ValueError(f"--replicates {path}: it ran under the protocol of commit {commits[0]}, {results_path} under "
                         f"{commits[1]}; a replication runs the same protocol (--across-protocols reads them anyway)")
    if commits[0] == commits[1] and across_protocols:
        raise ValueError(f"--across-protocols: {path} and {results_path} ran under the same protocol (commit "
                         f"{commits[0]}); leave the flag out")
    return first, second
