"""Where does bf16 autocast lose precision in MinAttn's training? Gradients under each precision setting against
fp32's, parameter group by parameter group, at several points of an fp32 training run.

    python benchmarks/bf16_precision.py                 # the experiments' recipe (hidden 128), ~2 minutes
    python benchmarks/bf16_precision.py --quick         # tiny sizes, a smoke run

At each checkpoint of one fp32 run (AdamW, the recipe's learning rate and warm-up), the gradient of the same
`--grad-batches` batches is computed in fp32 and under each setting in `SETTINGS`; for every parameter group
(embeddings, W_Q, W_K, W_V, W_O, feed-forward, norms, head) we report the relative error ||g - g_fp32|| / ||g_fp32||.
For scale, `minibatch noise` is the relative difference between the fp32 gradients of two disjoint halves of the
batches: an error well below it is lost in the noise of SGD itself; one near it is not.

Results go to `results/bf16_precision.json` and a table is printed.
"""

import argparse
import contextlib
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AttentionInterface, DataCollatorForLanguageModeling
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM

from bench_common import linear_schedule, load_blocks, mask_blocks

RECIPE = dict(vocab=8192, hidden=128, layers=4, heads=4, ffn=512, seq=128, batch=16, lr=2e-3, warmup=60, steps=640,
              mlm=0.3)
QUICK = dict(vocab=512, hidden=64, layers=2, heads=4, ffn=128, seq=32, batch=8, lr=2e-3, warmup=5, steps=40, mlm=0.3)


def sdpa_in_fp32(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """The attention core (Q K^T, softmax, A V) in fp32 whatever autocast says."""
    with torch.autocast("cpu", enabled=False):
        output = F.scaled_dot_product_attention(query.float(), key.float(), value.float(),
                                                attn_mask=None if attention_mask is None else attention_mask.float(),
                                                dropout_p=dropout, scale=scaling, is_causal=False)
    return output.transpose(1, 2).contiguous(), None  # (B, T, H, D)


AttentionInterface.register("sdpa_fp32", sdpa_in_fp32)
# The model computes bf16 attention on a CPU by its eager path whatever the config says; under another name torch's
# sdpa kernel runs in bf16 (as in bench_levers.py), so that "bf16" and "bf16_eager" below compare the two.
AttentionInterface.register("sdpa_kernel", ALL_ATTENTION_FUNCTIONS["sdpa"])


@contextlib.contextmanager
def setting(model, name):
    """Run the forward under the named precision setting: every bf16 setting computes attention with torch's sdpa
    kernel in bf16 ("sdpa_kernel"), unless its name asks for the eager path or for attention in fp32."""
    bf16 = name != "fp32"
    saved_attention = model.config._attn_implementation
    saved_head = model.lm_head.forward
    if bf16:
        model.config._attn_implementation = "sdpa_kernel"
    if "attn32" in name:
        model.config._attn_implementation = "sdpa_fp32"
    if "eager" in name:
        model.config._attn_implementation = "eager"
    if "head32" in name:
        def head_fp32(hidden_states, _forward=saved_head):
            with torch.autocast("cpu", enabled=False):
                return _forward(hidden_states.float())
        model.lm_head.forward = head_fp32
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            yield
    finally:
        model.config._attn_implementation = saved_attention
        model.lm_head.forward = saved_head


SETTINGS = ["bf16", "bf16_eager", "bf16_attn32", "bf16_head32", "bf16_attn32_head32"]


def group_of(name: str) -> str:
    if "embeddings" in name:
        return "embeddings"
    if "qkv_proj" in name:
        return "qkv"  # split into W_Q, W_K, W_V below
    if "o_proj" in name:
        return "W_O"
    if "mlp" in name and "norm" not in name:
        return "feed-forward"
    if "norm" in name and "lm_head" not in name:
        return "norms"
    return "head"


def grouped(gradients: dict, hidden: int) -> dict:
    """{group: flat gradient}; the fused QKV weight and bias split into W_Q, W_K, W_V by rows."""
    parts = {}
    for name, g in gradients.items():
        group = group_of(name)
        if group == "qkv":
            for i, which in enumerate(("W_Q", "W_K", "W_V")):
                parts.setdefault(which, []).append(g[i * hidden:(i + 1) * hidden].flatten())
        else:
            parts.setdefault(group, []).append(g.flatten())
    return {group: torch.cat(p) for group, p in parts.items()}


def gradients(model, batches, name) -> dict:
    model.zero_grad(set_to_none=True)
    for inputs, labels in batches:
        with setting(model, name):
            loss = model(input_ids=inputs, labels=labels).loss / len(batches)
        loss.backward()
    return grouped({n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None},
                   model.config.hidden_size)


def relative_error(g: dict, reference: dict) -> dict:
    return {k: float((g[k] - reference[k]).norm() / reference[k].norm().clamp_min(1e-30)) for k in reference}


def parse_args(argv=None):
    """(args, sizes, checkpoints), the flags checked by name before anything is loaded."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--checkpoints", default="0,60,150,300", help="fp32 training steps at which to compare")
    parser.add_argument("--grad-batches", type=int, default=8)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "bf16_precision.json"))
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else RECIPE
    try:
        checkpoints = [int(c) for c in args.checkpoints.split(",")]
    except ValueError:
        parser.error(f"--checkpoints takes comma-separated step numbers, got {args.checkpoints!r}")
    if checkpoints != sorted(checkpoints) or checkpoints[0] < 0:
        parser.error(f"--checkpoints must be steps >= 0 in increasing order, got {args.checkpoints!r}")
    if args.grad_batches < 2:
        parser.error(f"--grad-batches must be at least 2 (the minibatch noise compares two halves), got {args.grad_batches}")
    if args.quick:
        checkpoints = [0, 20]
    return args, sizes, checkpoints


def recipe_model(sizes: dict) -> MinAttnForMaskedLM:
    """The experiments' model at `sizes`: rotary positions, sparse head, untied decoder, no dropout."""
    config = MinAttnConfig(vocab_size=sizes["vocab"], hidden_size=sizes["hidden"], num_hidden_layers=sizes["layers"],
                           num_attention_heads=sizes["heads"], intermediate_size=sizes["ffn"],
                           max_position_embeddings=sizes["seq"], hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, position_embedding_type="rope", sparse_prediction=True,
                           tie_word_embeddings=False)
    return MinAttnForMaskedLM(config)


def train_step(model, optimizer, schedule, inputs, labels):
    """One fp32 step of the recipe: AdamW, gradients clipped to norm 1."""
    model.train()
    loss = model(input_ids=inputs, labels=labels).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad(set_to_none=True)


def compare(model, probe_batches, step: int) -> dict:
    """One table row: the loss, the minibatch noise and each setting's relative gradient error at this step."""
    model.train()
    start = time.perf_counter()
    reference = gradients(model, probe_batches, "fp32")
    half = len(probe_batches) // 2
    a, b = gradients(model, probe_batches[:half], "fp32"), gradients(model, probe_batches[half:], "fp32")
    with torch.no_grad():
        loss = sum(model(input_ids=i, labels=l).loss.item() for i, l in probe_batches) / len(probe_batches)
    row = {"step": step, "loss": loss, "minibatch noise": relative_error(a, b)}
    for name in SETTINGS:
        row[name] = relative_error(gradients(model, probe_batches, name), reference)
    print(f"step {step}: loss {loss:.3f} ({time.perf_counter() - start:.0f} s)", flush=True)
    return row


def print_tables(rows: list[dict]):
    groups = list(rows[0]["minibatch noise"])
    for row in rows:
        print(f"\n### step {row['step']} (loss {row['loss']:.3f}): relative gradient error vs fp32\n")
        print("| setting | " + " | ".join(groups) + " |")
        print("|---|" + "---:|" * len(groups))
        for name in ["minibatch noise"] + SETTINGS:
            print(f"| {name} | " + " | ".join(f"{row[name][g]:.4f}" for g in groups) + " |")


def main(argv=None):
    args, sizes, checkpoints = parse_args(argv)
    train_blocks, _, tokenizer = load_blocks(sizes, args.quick)
    masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=sizes["mlm"])
    generator = torch.Generator().manual_seed(args.seed)

    def batch():
        rows = torch.randint(len(train_blocks), (sizes["batch"],), generator=generator)
        return mask_blocks(masker, train_blocks[rows], generator)

    probe_batches = [batch() for _ in range(args.grad_batches)]
    torch.manual_seed(args.seed)
    model = recipe_model(sizes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=sizes["lr"], weight_decay=0.0)
    schedule = linear_schedule(optimizer, sizes["steps"], sizes["warmup"])
    rows, step = [], 0
    for checkpoint in checkpoints:
        while step < checkpoint:
            train_step(model, optimizer, schedule, *batch())
            step += 1
        rows.append(compare(model, probe_batches, step))
    print_tables(rows)
    if not args.quick:
        Path(args.out).write_text(json.dumps({"sizes": sizes, "seed": args.seed, "rows": rows}, indent=1))
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
