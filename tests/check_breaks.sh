#!/usr/bin/env bash
# The hand-made breaks of docs/testing.md: each one is applied to a copy of the tree (under $TMPDIR), the tests
# named for it run there, and they must fail. Prints one line per break; exit 1 if a break went unnoticed or could
# not be applied (its target text is no longer in the code).
#   bash tests/check_breaks.sh                 # every break
#   bash tests/check_breaks.sh rope drift      # some
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$SRC/.venv/bin/python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
declare -A FILE OLD NEW TESTS
FILE[rope]=hf_minattn/modeling_minattn.py; OLD[rope]='angles = position[..., None] * self.frequencies()'; NEW[rope]='angles = position[..., None] ** 2 * self.frequencies()'
TESTS[rope]="tests/test_levers.py tests/test_modeling.py tests/test_fast_paths.py"
FILE[push]=hf_minattn/push.py; OLD[push]='api = HfApi(token=token)'; NEW[push]='api = HfApi(token=None); private, revision = False, None'
TESTS[push]="tests/test_push.py"
R=hf_minattn/probes/report
FILE[report]=$R/geometry.py; OLD[report]='"falls" if lower(adj[-1], adj[0]) else "rises" if lower(adj[0], adj[-1])'
NEW[report]='"rises" if lower(adj[-1], adj[0]) else "falls" if lower(adj[0], adj[-1])'
TESTS[report]="tests/report/test_report_verdicts.py tests/test_probes.py"
FILE[weights]=$R/weights.py; OLD[weights]='lower(t["both"], i["both"], 1)'; NEW[weights]='lower(i["both"], t["both"], 1)'
TESTS[weights]="tests/report/test_report_verdicts.py"
FILE[bands]=$R/bands.py; OLD[bands]='lowest = [b for b in bands if shown[b] == min(shown.values())]'
NEW[bands]='lowest = [b for b in bands if shown[b] == max(shown.values())]'
TESTS[bands]="tests/report/test_report_verdicts.py"
FILE[sense]=$R/sense.py; OLD[sense]='"apart" if lower(values[1], values[0]) else "closer" if lower(values[0], values[1])'
NEW[sense]='"closer" if lower(values[1], values[0]) else "apart" if lower(values[0], values[1])'
TESTS[sense]="tests/report/test_report_verdicts.py"
FILE[ablation]=hf_minattn/probes/head_ablation.py; OLD[ablation]='diff = (_token_losses(model, batches) - base).double()'; NEW[ablation]='diff = (base - _token_losses(model, batches)).double()'
TESTS[ablation]="tests/test_probes_heads.py"
FILE[share]=hf_minattn/experiments/statistics.py; OLD[share]='100 * (floor[s] - var[s]) / (floor[s] - ref[s])'; NEW[share]='100 * (floor[s] - ref[s]) / (floor[s] - var[s])'
TESTS[share]="tests/test_experiments_verdicts.py"
FILE[drift]=hf_minattn/drift.py; OLD[drift]='name: ((current[name].float() - w0.float()).norm() / w0.float().norm().clamp_min(1e-12)).item()'; NEW[drift]='name: 7 * ((current[name].float() - w0.float()).norm() / w0.float().norm().clamp_min(1e-12)).item()'
TESTS[drift]="tests/test_probes.py tests/test_training.py"
FILE[headmap]=$R/head_map.py; OLD[headmap]='return lower(within, across, 3) and p < 0.05'; NEW[headmap]='return lower(across, within, 3) and p < 0.05'
TESTS[headmap]="tests/test_probes_heads.py"
FILE[heads]=$R/heads.py; OLD[heads]='return ent, not ent.mean() > 0.8'; NEW[heads]='return ent, ent.mean() > 0.8'
TESTS[heads]="tests/test_probes_heads.py"
# The classes of break that once went unnoticed: a statistic's degrees of freedom, a sampler that draws what it should
# leave out, per-epoch draws that stop changing between epochs.
FILE[df]=hf_minattn/stats.py; OLD[df]='df = int(values.size) - 1'; NEW[df]='df = int(values.size)'
TESTS[df]="tests/test_stats.py"
FILE[pairs]=hf_minattn/probes/geometry.py; OLD[pairs]='different = sentence_ids[a] != sentence_ids[b]'; NEW[pairs]='different = a != b'
TESTS[pairs]="tests/test_probes_sampling.py"
FILE[epochs]=hf_minattn/masking.py; OLD[epochs]='self._mask(f, self.epoch, f[EXAMPLE_INDEX])'; NEW[epochs]='self._mask(f, 0, f[EXAMPLE_INDEX])'
TESTS[epochs]="tests/test_training.py::test_every_epoch_masks_each_example_anew tests/test_training.py::test_every_pass_over_a_stream_masks_each_example_anew"
unnoticed=0
for b in ${@:-${!FILE[@]}}; do
  W=$WORK/tree-$b; mkdir -p $W
  (cd $SRC && git ls-files -z | xargs -0 -I{} cp --parents {} $W/ 2>/dev/null; cp --parents $(git ls-files --others --exclude-standard) $W/ 2>/dev/null)
  $PY - "$W/${FILE[$b]}" "${OLD[$b]}" "${NEW[$b]}" <<'PYEOF'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
if s.count(old) != 1:
    sys.exit(f"{s.count(old)} occurrences of {old!r} in {p}, not 1")
open(p, "w").write(s.replace(old, new))
PYEOF
  if [[ $? != 0 ]]; then
    echo "$b: NOT APPLIED: its target text no longer matches ${FILE[$b]}; update the break in $0"; unnoticed=1; continue
  fi
  (cd $W && PYTHONPATH=$W $PY -m pytest -q -x -p no:cacheprovider ${TESTS[$b]} > $WORK/$b.log 2>&1); rc=$?
  if [[ $rc == 1 ]]; then
    echo "$b: caught by $(grep -m1 '^FAILED' $WORK/$b.log | cut -d' ' -f2)"
  else
    echo "$b: NOT CAUGHT (pytest exit $rc: $(tail -1 $WORK/$b.log))"; unnoticed=1
  fi
done
exit $unnoticed
