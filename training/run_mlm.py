#!/usr/bin/env python
"""Train a MinAttn masked language model: `python training/run_mlm.py --help`.

The program lives in the package (`hf_minattn.run_mlm`) so that it is installed and importable; this script
is the entry point `python` and `accelerate launch` run.
"""

import sys

from hf_minattn.cli import run_reporting_errors
from hf_minattn.run_mlm import main

if __name__ == "__main__":
    sys.exit(run_reporting_errors(main, prog="run_mlm.py"))
