"""`hf-minattn findings RESULTS_JSON [--out DIR]`: re-render FINDINGS.md and the figures from a committed
results.json, without training (after a change to how the findings are written, or to draw them again)."""

import argparse

from hf_minattn.checks import check_output_folder

from .findings import rerender_findings


def main(argv=None) -> int:
    from hf_minattn.probes.plots import FIGURE_FORMATS

    parser = argparse.ArgumentParser(prog="hf-minattn findings", description=__doc__)
    parser.add_argument("results", help="a results.json written by `hf-minattn experiments`")
    parser.add_argument("--out", help="folder for FINDINGS.md and figures/ (default: the results.json's folder)")
    parser.add_argument("--figure-format", choices=FIGURE_FORMATS, default="both",
                        help="every figure as PNG, SVG or both (default: both; FINDINGS.md links the PNG when there is one)")
    args = parser.parse_args(argv)
    if args.out is not None:
        check_output_folder(args.out, "--out")
    written = rerender_findings(args.results, args.out, args.figure_format)
    print(f"findings: {written['findings']} ({len(written['figures'])} figures)")
    return 0
