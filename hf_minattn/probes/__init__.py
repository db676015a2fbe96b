"""Probes of any Hugging Face encoder: static vs contextual word vectors, geometry, benchmarks, heads, weights.

Each module answers one question and returns dataclasses of numbers; plots.py and the report package (report/) turn
those numbers into figures and report.html; cli.py is `hf-minattn probe` / `hf-minattn compare`.
"""

from .loading import load_encoder
from .run import ProbeResults, run_all_probes
from .settings import ProbeSettings

__all__ = ["ProbeResults", "ProbeSettings", "load_encoder", "run_all_probes"]
