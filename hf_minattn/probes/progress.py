"""Progress for long passes: a tqdm bar (transformers already depends on tqdm), silenced with HF_MINATTN_QUIET=1."""

import os

from tqdm.auto import tqdm


def progress(iterable, desc):
    return tqdm(iterable, desc=desc, leave=False, disable=os.environ.get("HF_MINATTN_QUIET") == "1")
