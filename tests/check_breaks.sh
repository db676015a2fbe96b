#!/usr/bin/env bash
# The hand-made breaks of docs/testing.md: each one is applied to a copy of the tree (under $TMPDIR), the tests
# named for it run there, and they must fail. Prints one line per break; exit 1 if a break went unnoticed.
#   bash tests/check_breaks.sh                 # every break
#   bash tests/check_breaks.sh rope drift      # some
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$SRC/.venv/bin/python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
declare -A FILE OLD NEW TESTS
FILE[rope]=hf_minattn/modeling_minattn.py; OLD[rope]='torch.outer(position, self.inv_freq)'; NEW[rope]='torch.outer(position ** 2, self.inv_freq)'
TESTS[rope]="tests/test_levers.py tests/test_modeling.py tests/test_fast_paths.py"
FILE[push]=hf_minattn/push.py; OLD[push]='api = HfApi(token=token)'; NEW[push]='api = HfApi(token=None); private, revision = False, None'
TESTS[push]="tests/test_push.py"
FILE[report]=hf_minattn/probes/report.py; OLD[report]='trend = "falls" if adj[-1] < adj[0] else "does not fall"'; NEW[report]='trend = "falls" if adj[-1] >= adj[0] else "does not fall"'
TESTS[report]="tests/test_report_verdicts.py tests/test_probes.py"
FILE[weights]=hf_minattn/probes/report.py; OLD[weights]='verdict = "lower" if t["qk"] + t["ov"] < i["qk"] + i["ov"] else "not lower"'; NEW[weights]='verdict = "lower" if t["qk"] + t["ov"] > i["qk"] + i["ov"] else "not lower"'
TESTS[weights]="tests/test_report_verdicts.py"
FILE[bands]=hf_minattn/probes/report.py; OLD[bands]='lowest = min(bands, key=bands.get)'; NEW[bands]='lowest = max(bands, key=bands.get)'
TESTS[bands]="tests/test_report_verdicts.py"
FILE[sense]=hf_minattn/probes/report.py; OLD[sense]="if last[off].mean() < first[off].mean() else"; NEW[sense]="if last[off].mean() > first[off].mean() else"
TESTS[sense]="tests/test_report_verdicts.py"
FILE[ablation]=hf_minattn/probes/head_ablation.py; OLD[ablation]='diff = (_token_losses(model, batches) - base).double()'; NEW[ablation]='diff = (base - _token_losses(model, batches)).double()'
TESTS[ablation]="tests/test_probes_heads.py"
FILE[share]=hf_minattn/experiments/statistics.py; OLD[share]='100 * (floor[s] - var[s]) / (floor[s] - ref[s])'; NEW[share]='100 * (floor[s] - ref[s]) / (floor[s] - var[s])'
TESTS[share]="tests/test_experiments_verdicts.py"
FILE[drift]=hf_minattn/drift.py; OLD[drift]='name: ((current[name].float() - w0.float()).norm() / w0.float().norm().clamp_min(1e-12)).item()'; NEW[drift]='name: 7 * ((current[name].float() - w0.float()).norm() / w0.float().norm().clamp_min(1e-12)).item()'
TESTS[drift]="tests/test_probes.py tests/test_training.py"
FILE[headmap]=hf_minattn/probes/report.py; OLD[headmap]="f\"{'closer' if a < b else 'not closer'}"; NEW[headmap]="f\"{'closer' if a > b else 'not closer'}"
TESTS[headmap]="tests/test_probes_heads.py"
FILE[heads]=hf_minattn/probes/report.py; OLD[heads]="f\"({'broad' if ent.mean() > 0.8"; NEW[heads]="f\"({'broad' if ent.mean() < 0.8"
TESTS[heads]="tests/test_probes_heads.py"
unnoticed=0
for b in ${@:-${!FILE[@]}}; do
  W=$WORK/tree-$b; mkdir -p $W
  (cd $SRC && git ls-files -z | xargs -0 -I{} cp --parents {} $W/ 2>/dev/null; cp --parents $(git ls-files --others --exclude-standard) $W/ 2>/dev/null)
  $PY - "$W/${FILE[$b]}" "${OLD[$b]}" "${NEW[$b]}" <<'PYEOF'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
assert s.count(old) == 1, (p, old, s.count(old))
open(p, "w").write(s.replace(old, new))
PYEOF
  (cd $W && PYTHONPATH=$W $PY -m pytest -q -x -p no:cacheprovider ${TESTS[$b]} > $WORK/$b.log 2>&1); rc=$?
  if [[ $rc == 1 ]]; then
    echo "$b: caught by $(grep -m1 '^FAILED' $WORK/$b.log | cut -d' ' -f2)"
  else
    echo "$b: NOT CAUGHT (pytest exit $rc: $(tail -1 $WORK/$b.log))"; unnoticed=1
  fi
done
exit $unnoticed
