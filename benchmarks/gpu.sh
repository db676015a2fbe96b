#!/usr/bin/env bash
# The GPU's benchmark set (benchmarks/NOTES.md, "On one GPU"): MinAttn against BERT and ModernBERT in fp32 and bf16
# at batch 32 (launch-bound; with the GPU levers: CUDA graphs and torch.compile, each on and off) and at batch 128,
# then the GPU-only tests of the benchmark. Results go to $1 (default benchmarks/results); a stage that fails or
# runs out of time does not stop the next.
#     bash benchmarks/gpu.sh [OUT]        (make bench-gpu)
set -u
out=${1:-benchmarks/results}
python=${PYTHON:-python3}
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || exit 1
"$python" -c "import torch, transformers, tokenizers, datasets; print('torch', torch.__version__, '| transformers',
transformers.__version__, '| tokenizers', tokenizers.__version__, '| datasets', datasets.__version__)" || exit 1
status=0
timeout 360 "$python" benchmarks/bench_train.py --device cuda --batch 32 --levers --lever-steps 30 --out "$out" || status=1
timeout 200 "$python" benchmarks/bench_train.py --device cuda --batch 128 --out "$out" || status=1
timeout 120 "$python" -m pytest -q -p no:cacheprovider tests/test_fast_paths.py -k gpu || status=1
exit $status
