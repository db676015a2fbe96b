#!/usr/bin/env bash
# The project's main job: train a MinAttn model (the small preset narrowed to hidden 128) on the embedded corpus
# installed with the package (hf_minattn.data.load_wikipedia_corpus: gensim's Wikipedia sample, 10k Wikipedia
# article summaries and 293 news articles), save it in Hub format under outputs/, probe it, and say where everything
# is. No network needed.
#
#   bash training/demo.sh            # 9 minutes of training, then the probes (docs/demo/ holds a run's timings)
#   bash training/demo.sh --quick    # (or DEMO=quick) a smaller model trained for 24 s: a check that it all runs
#   DEMO_OUT=/tmp/demo bash training/demo.sh --quick   # another output folder (replaced: it is deleted first)
#
# `make demo` runs it inside the project's virtual environment. Training is bounded by time
# (--max_train_minutes), not steps, so that the demo fits its budget on slow and fast machines alike; the
# number of steps it reached is in outputs/<model>/train_results.json and in the model card.
set -euo pipefail
cd "$(dirname "$0")/.."

DEMO="${DEMO:-full}"
MLM_PROBABILITY=0.3  # both demos: 30% of tokens masked (docs/recipe.md)
[[ "${1:-}" == "--quick" ]] && DEMO=quick

if [[ "$DEMO" == quick ]]; then
    OUT="${DEMO_OUT:-outputs/minattn-wiki-quick}"
    MODEL=(--model_size small --config_overrides "hidden_size=128,num_hidden_layers=2,intermediate_size=512"
           --vocab_size 4096)
    SCHEDULE=(--max_train_minutes 0.4 --warmup_steps 5 --logging_steps 2 --max_eval_samples 64 --per_device_train_batch_size 16
              --learning_rate 1e-3)
    PROBE=(--max-sentences 300 --head-sentences 50 --no-word2vec --vector-max-sentences 1500)
else
    OUT="${DEMO_OUT:-outputs/minattn-wiki}"
    # The recipe of docs/recipe.md: the small preset (rotary positions, no dropout) narrowed to hidden 128 (feed-forward
    # 512) at learning rate 2e-3, batch 16, 30% of tokens masked: in a fixed time it trains more tokens than hidden 256
    # and ends further below the unigram floor (docs/recipe.md, "The demo's width", has the paired runs).
    MODEL=(--model_size small --config_overrides "hidden_size=128,intermediate_size=512" --vocab_size 8192)
    SCHEDULE=(--max_train_minutes 9 --warmup_steps 50 --logging_steps 20 --per_device_train_batch_size 16
              --learning_rate 2e-3)
    PROBE=()
fi

# Precision: run_mlm's default, bf16 autocast where it is fast (a GPU with bf16, a CPU with AVX512-BF16/AMX), else
# fp32. At equal steps bf16's eval loss stays within 1% of fp32's (docs/recipe.md, "bf16 at equal steps past the
# plateau", has the paired seeds and the speed-up). A fresh run each time: an old folder would hold checkpoints of a
# different run.
rm -rf "$OUT"
start=$SECONDS
echo "== Training MinAttn ($DEMO) into $OUT"
python training/run_mlm.py \
    --output_dir "$OUT" "${MODEL[@]}" "${SCHEDULE[@]}" \
    --num_train_epochs 100 --weight_decay 0.01 --mlm_probability "$MLM_PROBABILITY" \
    --per_device_eval_batch_size 64 \
    --save_steps 200 --save_total_limit 1 --seed 42
train_seconds=$((SECONDS - start))

if python -c "import hf_minattn.probes.cli" 2>/dev/null; then
    echo "== Probing $OUT"
    # the head ablation and the logit lens mask tokens at the rate the model was trained at
    hf-minattn probe "$OUT" --out "$OUT/probes" --mlm-probability "$MLM_PROBABILITY" "${PROBE[@]}"
    probed=yes
else
    probed=no
fi

python - "$OUT" "$train_seconds" "$((SECONDS - start))" "$probed" <<'EOF'
import json, os, sys

out, train_seconds, total_seconds, probed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "yes"
train = json.load(open(os.path.join(out, "train_results.json")))
evaluation = json.load(open(os.path.join(out, "eval_results.json")))
state = json.load(open(os.path.join(out, "trainer_state.json")))
print(f"""
== Done in {total_seconds // 60} min {total_seconds % 60} s (training and evaluation: {train_seconds} s)
Validation: loss {evaluation['eval_loss']:.4f}, perplexity {evaluation['eval_perplexity']:.1f}, masked-token accuracy {evaluation['eval_accuracy']:.3f} ({evaluation['eval_masked_tokens']} masked tokens)
Unigram floor: {evaluation['eval_unigram_loss']:.4f} nats on the same masked tokens; the model is {evaluation['eval_gain_over_unigram']:+.4f} nats below it
Training:   {state['global_step']} steps, {train['epoch']:.2f} epochs, {train.get('train_tokens_per_second', 0):,.0f} tokens/s, final train loss {train['train_loss']:.4f}

Model (Hub format):   {out}/  (config.json, model.safetensors, tokenizer, modeling code)
Model card:           {out}/README.md
Metrics:              {out}/all_results.json, {out}/trainer_state.json
Embedding drift:      {out}/drift.json
TensorBoard logs:     tensorboard --logdir {out}/runs""")
if probed:
    print(f"Probe report:         {out}/probes/")
print(f"""Load it:              python -c "import hf_minattn; from transformers import pipeline; print(pipeline('fill-mask', model='{out}')('the capital of france is [MASK].'))"
Upload it:            hf-minattn push {out} <user>/<name> --dry-run""")
EOF
