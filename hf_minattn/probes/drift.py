"""How far did embeddings and W matrices move during training, as probes.json reports it.

drift.json belongs to hf_minattn.drift (`DriftCallback` writes it, `read_drift` reads it into a `DriftHistory`);
this module only lays that history out for probes.json, the report and the plots:
  {"path": ..., "metrics": {"drift": {matrix: {"steps": [...], "values": [...]}}, "grad_norm": {...},
                            "loss": {"loss": {...}}}}
with drift = ||W_t - W_0||_F / ||W_0||_F. Steps whose value is None (no gradient, no loss at step 0) are left out.
"""

from dataclasses import dataclass, field


@dataclass
class DriftResults:
    path: str
    metrics: dict = field(default_factory=dict)  # metric -> matrix -> {"steps": [...], "values": [...]}


def drift_results(history):
    """probes.json's view of a `hf_minattn.drift.DriftHistory`; None for None (no drift.json)."""
    if history is None:
        return None
    result = DriftResults(path=history.path)
    for metric, per_matrix in (("drift", history.drift), ("grad_norm", history.grad_norm),
                               ("loss", {"loss": history.loss})):
        for name, values in per_matrix.items():
            kept = [(step, float(v)) for step, v in zip(history.steps, values) if v is not None]
            if kept:
                steps, kept_values = zip(*kept)
                result.metrics.setdefault(metric, {})[name] = {"steps": list(steps), "values": list(kept_values)}
    return result
