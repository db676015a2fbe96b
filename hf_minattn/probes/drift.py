"""How far did embeddings and W matrices move during training? Reads the training run's drift.json.

The file is written by hf_minattn.drift.DriftCallback:
  {"tracked": [...], "records": [{"step": 10, "epoch": 0.1, "loss": 5.2,
                                  "drift": {"word_embeddings": 0.01, "layers.0.W_Q": 0.1, ...},
                                  "grad_norm": {"word_embeddings": 2.0, ...}}, ...]}
with drift = ||W_t - W_0||_F / ||W_0||_F. The reader is tolerant of other layouts too:
  {"records": [{"step": 10, "param": "layers.0.W_Q", "rel_distance": 0.1, "grad_norm": 2.0}, ...]},
  a bare list of such records (the name key may be "param", "name" or "parameter"), or
  {"steps": [...], "<metric>": {"<param>": [value per step]}} / {"steps": [...], "params": {"<param>": {"<metric>": [...]}}}.
Every numeric field other than the step and epoch becomes a metric (a top-level number such as the loss
is a metric with one series of the same name); None values are skipped.
"""

import json
import os
from dataclasses import dataclass, field

_NAME_KEYS = ("param", "name", "parameter", "matrix")


@dataclass
class DriftResults:
    path: str
    metrics: dict = field(default_factory=dict)  # metric -> param -> {"steps": [...], "values": [...]}

    def final(self, metric):
        """Last value of `metric` per parameter."""
        return {p: s["values"][-1] for p, s in self.metrics.get(metric, {}).items() if s["values"]}


def _records(data):
    if isinstance(data, list):
        yield from data
        return
    if "records" in data:
        yield from data["records"]
        return
    steps = data.get("steps", [])
    for key, value in data.items():
        if key == "steps" or not isinstance(value, dict):
            continue
        for name, series in value.items():
            # {"params": {name: {metric: [...]}}} or {metric: {name: [...]}}
            per_metric = series if isinstance(series, dict) else {key: series}
            for metric, values in per_metric.items():
                if isinstance(values, list):
                    for step, v in zip(steps or range(len(values)), values):
                        yield {"step": step, "param": name, metric: v}


def read_drift(path):
    """Parse drift.json (a file, or a folder containing one); None when there is none."""
    if os.path.isdir(path):
        path = os.path.join(path, "drift.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    result = DriftResults(path=path)
    for record in _records(data):
        if "step" not in record:
            continue
        name = next((str(record[k]) for k in _NAME_KEYS if k in record), None)
        for metric, value in record.items():
            if metric in _NAME_KEYS or metric in ("step", "epoch"):
                continue
            per_param = value if isinstance(value, dict) else {name or metric: value}
            for param, v in per_param.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    series = result.metrics.setdefault(metric, {}).setdefault(param, {"steps": [], "values": []})
                    series["steps"].append(record["step"]), series["values"].append(float(v))
    return result
