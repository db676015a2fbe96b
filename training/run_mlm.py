#!/usr/bin/env python
"""Train a MinAttn masked language model: `python training/run_mlm.py --help`.

The program lives in the package (`hf_minattn.run_mlm`) so that it is installed and importable; this script
is the entry point `python` and `accelerate launch` run.
"""

from hf_minattn.run_mlm import main

if __name__ == "__main__":
    main()
