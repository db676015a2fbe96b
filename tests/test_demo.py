"""training/demo.sh --quick, the main job's short version, end to end in a subprocess: it trains, saves a Hub
folder, probes it and prints numbers that are the ones it wrote."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_quick_demo_trains_saves_probes_and_reports_what_it_wrote(tmp_path):
    out = tmp_path / "demo"
    env = {**os.environ, "DEMO_OUT": str(out), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(["bash", str(REPO / "training" / "demo.sh"), "--quick"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("config.json", "model.safetensors", "tokenizer.json", "modeling_minattn.py", "README.md",
                 "drift.json", "probes/report.html", "probes/probes.json"):
        assert (out / name).is_file(), name
    evaluation = json.loads((out / "eval_results.json").read_text())
    printed = re.search(r"Validation: loss ([\d.]+), perplexity ([\d.]+)", result.stdout)
    assert printed and float(printed.group(1)) == pytest.approx(evaluation["eval_loss"], abs=1e-4)
    floor = re.search(r"the model is ([+-][\d.]+) nats below it", result.stdout)
    assert float(floor.group(1)) == pytest.approx(evaluation["eval_gain_over_unigram"], abs=1e-4)
    assert f"Probe report:         {out}/probes/" in result.stdout
