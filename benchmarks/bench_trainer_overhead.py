"""How much of the machine `training/run_mlm.py` (the HF Trainer path) uses: its training tokens/s against a plain
step loop (forward, backward, clip, AdamW: `bench_common.StepLoop`) on the same model and batch, in one process.

    python benchmarks/bench_trainer_overhead.py            # small model, batch 16 x 128, fp32, 60 steps each
    python benchmarks/bench_trainer_overhead.py --quick    # tiny sizes, seconds

Both rates are tokens over the total time of the same steps (those between the Trainer's first log after the warm-up
and its last). The plain loop runs before and after the Trainer (the mean of the two is the reference), so a drift of
the machine's speed during the run shows as a difference between them, reported beside the ratio. Run it on an idle
machine.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import StepLoop, load_blocks, make_batches  # noqa: E402

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM  # noqa: E402
from hf_minattn.arguments import MODEL_SIZES  # noqa: E402
from hf_minattn.machine import machine_info  # noqa: E402
from hf_minattn.run_mlm import main as run_mlm  # noqa: E402


def plain_loop_step_times(config: MinAttnConfig, batches) -> list[float]:
    """The seconds of each step of a plain loop (`bench_common.StepLoop`) over `batches`."""
    torch.manual_seed(0)
    loop = StepLoop(MinAttnForMaskedLM(config), steps=len(batches), lr=1e-3, bf16=False)
    for inputs, labels in batches:
        loop.step(inputs, labels)
    return loop.times


def span_tokens_per_second(times: list[float], tokens_per_step: int, span: tuple[int, int]) -> float:
    """Tokens over total time of steps `span[0]` + 1 to `span[1]` (counted from 1): the Trainer's rate is taken the
    same way, over the same steps, so slow steps weigh the same in both (a median step would leave them out)."""
    first, last = span
    return tokens_per_step * (last - first) / sum(times[first:last])


def trainer_tokens_per_second(model_size: str, seq: int, batch: int, steps: int, warmup: int):
    """run_mlm's own training loop (collator, callbacks, logging every 10 steps): tokens/s over the steps after the
    warm-up, from the Trainer's log history, and the span of steps it covers (the first and last logged step)."""
    with tempfile.TemporaryDirectory() as out:
        run_mlm(["--output_dir", out, "--model_size", model_size, "--max_seq_length", str(seq),
                 "--per_device_train_batch_size", str(batch), "--max_steps", str(steps), "--logging_steps", "10",
                 "--do_eval", "false", "--save_strategy", "no", "--report_to", "none", "--bf16", "false",
                 "--disable_tqdm", "true", "--seed", "0"])
        with open(os.path.join(out, "trainer_state.json")) as f:
            history = [h for h in json.load(f)["log_history"] if "num_input_tokens_seen" in h and "train_runtime" in h]
    # Each log has the tokens seen and the time so far: the rate between the first log after the warm-up and the last.
    first = next(h for h in history if h["step"] >= warmup)
    last = history[-1]
    tokens = last["num_input_tokens_seen"] - first["num_input_tokens_seen"]
    return tokens / (last["train_runtime"] - first["train_runtime"]), (first["step"], last["step"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "trainer_overhead.json"))
    args = parser.parse_args(argv)
    model_size, seq, steps, warmup = ("tiny", 64, 12, 2) if args.quick else ("small", 128, args.steps, 10)
    sizes = dict(vocab=512 if args.quick else 8192, seq=seq)
    train_blocks, _, tokenizer = load_blocks(sizes, quick=args.quick)
    config = MinAttnConfig(**MODEL_SIZES[model_size], vocab_size=len(tokenizer), sparse_prediction=True)  # as run_mlm
    batches = make_batches(train_blocks, steps, args.batch, tokenizer, seed=0)
    print(f"machine: {machine_info()['cpu']}; {model_size} model, batch {args.batch} x {seq}, {steps} steps", flush=True)
    before_times = plain_loop_step_times(config, batches)
    start = time.perf_counter()
    trainer, span = trainer_tokens_per_second(model_size, seq, args.batch, steps, warmup)
    trainer_seconds = time.perf_counter() - start
    after_times = plain_loop_step_times(config, batches)
    before, after = (span_tokens_per_second(t, batches[0][0].numel(), span) for t in (before_times, after_times))
    reference = (before + after) / 2
    result = {"plain_loop_before": round(before), "plain_loop_after": round(after), "trainer": round(trainer),
              "ratio": round(trainer / reference, 3), "reference_drift": round(abs(before - after) / reference, 3),
              "trainer_wall_seconds": round(trainer_seconds, 1), "model_size": model_size, "batch": args.batch,
              "seq": seq, "steps": steps, "warmup_steps_left_out": warmup, "timed_steps": [span[0] + 1, span[1]]}
    print(f"plain loop {before:,.0f} / {after:,.0f} tokens/s (before / after), run_mlm {trainer:,.0f} tokens/s: "
          f"{100 * result['ratio']:.0f}% of the plain loop (the plain loop drifted {100 * result['reference_drift']:.0f}%)")
    result["machine"] = machine_info()
    if not args.quick:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print(f"saved {args.out}")
    return result


if __name__ == "__main__":
    main()
