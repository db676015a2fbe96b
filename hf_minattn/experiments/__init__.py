"""`hf-minattn experiments`: answer the classic self-attention training questions with measurements.

One module per job: `training` (the SETTINGS table, the variants, run_mlm in subprocesses), `evaluation`
(re-scoring on the validation set with several mask draws, the unigram floor, per-row drift),
`statistics` (paired intervals over seeds via hf_minattn.stats), `probing`, `answers` (numbers only), `figures`,
`findings` (FINDINGS.md) and `cli`.
"""

from .cli import main, run_experiments
from .training import SETTINGS, VARIANTS

__all__ = ["SETTINGS", "VARIANTS", "main", "run_experiments"]
