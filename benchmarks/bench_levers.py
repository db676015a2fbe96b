"""The speed levers of `bench_train.py --levers` and its `--profile`: MinAttn as shipped against MinAttn with one
lever switched, each pair timed on/off, alternating, on the same batches (no quality measured), and where a MinAttn
training step spends its time. NOTES.md keeps the measured tables."""

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AttentionInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from bench_common import StepLoop, build, make_batches



class SeparateQKV(nn.Module):
    """The lever off: three projections with the fused weight's slices, concatenated into the fused layout."""

    def __init__(self, fused: nn.Linear):
        super().__init__()
        C = fused.in_features
        self.q, self.k, self.v = (nn.Linear(C, C, bias=fused.bias is not None) for _ in range(3))
        with torch.no_grad():
            for i, linear in enumerate((self.q, self.k, self.v)):
                linear.weight.copy_(fused.weight[i * C:(i + 1) * C])
                if fused.bias is not None:
                    linear.bias.copy_(fused.bias[i * C:(i + 1) * C])

    def forward(self, x):
        return torch.cat([self.q(x), self.k(x), self.v(x)], dim=-1)


def time_pair(trainers: dict, batches, warmup) -> dict:
    names = list(trainers)
    for i, (inputs, labels) in enumerate(batches):
        for name in names if i % 2 == 0 else names[::-1]:
            trainers[name].step(inputs, labels)
    return {name: statistics.median(t.times[warmup:]) for name, t in trainers.items()}


def without_linear_biases(model: nn.Module) -> nn.Module:
    """The bias-free lever: every nn.Linear of the model without its bias (ModernBERT has none)."""
    for module in model.modules():
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias = None
    return model


def compile_blocks(model: nn.Module) -> nn.Module:
    """The regional-compile lever: each block compiled on its own (inductor fuses its LayerNorms, GELU and residual
    adds); embeddings and the sparse head (data-dependent shapes) stay eager, so the graph does not break."""
    for layer in model.minattn.layers:
        layer.compile()
    return model


def rotary_in_compute_dtype(model: nn.Module) -> nn.Module:
    """The fewer-casts lever (bf16): rotary tables in bf16, so that the bf16 queries and keys of autocast are rotated
    in bf16 instead of being promoted to fp32 and cast back for the attention kernel."""
    rotary = model.minattn.rotary
    forward = rotary.forward
    rotary.forward = lambda seq_len, dtype: forward(seq_len, torch.get_autocast_dtype("cpu")
                                                    if torch.is_autocast_enabled("cpu") else dtype)
    return model


def lever_row(lever: str, precision: str, baseline: StepLoop, variant: StepLoop, batches, warmup) -> dict:
    """One lever's row: the variant's first step timed alone (it holds any compilation), then the two loops
    alternating over `batches`; variant / shipped < 1: the variant is faster."""
    start = time.perf_counter()
    variant.step(*batches[0])
    first_step = time.perf_counter() - start
    variant.times.clear()
    times = time_pair({"shipped": baseline, "variant": variant}, batches, warmup)
    print(f"  [{precision}] {lever}: variant/shipped step time = {times['variant'] / times['shipped']:.3f}", flush=True)
    return {"lever": lever, "precision": precision, "shipped_s": times["shipped"], "variant_s": times["variant"],
            "variant_over_shipped": times["variant"] / times["shipped"], "variant_first_step_s": first_step}


def measure_levers(sizes, batches, warmup, lr, bf16=False, with_compile=True) -> list[dict]:
    """Each row: MinAttn as shipped vs MinAttn with one lever switched: "off" for the ones in the model (is each
    worth keeping?), "on" for the candidates (does it pay?). variant / shipped < 1: the variant is faster."""
    rows = []
    precision = "bf16" if bf16 else "fp32"

    def pair(lever, variant_model, variant_kwargs=None, baseline_kwargs=None, model_kwargs=None, variant_bf16=bf16):
        baseline = StepLoop(build("minattn", sizes, **(model_kwargs or {})), len(batches), lr, bf16,
                            **(baseline_kwargs or {}))
        variant = StepLoop(variant_model, len(batches), lr, variant_bf16, **(variant_kwargs or {}))
        rows.append(lever_row(lever, precision, baseline, variant, batches, warmup))

    if not bf16:  # the levers already in the model, switched off (fp32, as measured before)
        pair("sparse MLM head -> dense (B,T,V) logits", build("minattn", sizes), {"dense_head": True})
        separate = build("minattn", sizes)
        for layer in separate.minattn.layers:
            layer.attention.qkv_proj = SeparateQKV(layer.attention.qkv_proj)
        pair("fused QKV -> three projections", separate)
        pair("sdpa -> eager attention", build("minattn", sizes, attn_implementation="eager"))
        pair("gelu -> gelu tanh approximation", build("minattn", sizes, hidden_act="gelu_pytorch_tanh"))
        pair("pre-norm -> post-norm (BERT's placement)", build("minattn", sizes, norm_placement="post"))
    pair("fused AdamW (the Trainer's) -> a loop over the parameters", build("minattn", sizes), {"fused": False})
    # The candidate levers (benchmarks/NOTES.md), on:
    pair("bias-free projections (every nn.Linear)", without_linear_biases(build("minattn", sizes)))
    if bf16:
        # The model computes bf16 attention on a CPU by the eager path; this variant forces torch's bf16 kernel.
        AttentionInterface.register("sdpa_kernel", ALL_ATTENTION_FUNCTIONS["sdpa"])
        forced = build("minattn", sizes)
        forced.set_attn_implementation("sdpa_kernel")
        pair("bf16 attention: eager (matmul, softmax, matmul) -> torch's bf16 sdpa kernel", forced)
        pair("rotary tables in bf16 (fewer casts)", rotary_in_compute_dtype(build("minattn", sizes)))
        # Weights stored in bf16 and no autocast: no cast at all. An upper bound for "bf16 weights for the forward
        # with fp32 master copies", which would add a copy of the weights after every optimizer step.
        pair("bf16 weights, no autocast (upper bound of bf16 forward weights)",
             build("minattn", sizes).to(torch.bfloat16), variant_bf16=False)
    if with_compile:  # compiling takes minutes here: not in --quick
        pair("regional torch.compile (each block; head eager)", compile_blocks(build("minattn", sizes)))
        if not bf16:
            pair("eager -> torch.compile (whole model)", build("minattn", sizes), {"compile_model": True})
    return rows


def measure_gpu_levers(sizes, batches, warmup, lr, bf16, device) -> list[dict]:
    """On a GPU a small model's step is mostly kernel launches and host waits. Each row: MinAttn as shipped (eager,
    the all-ones attention_mask passed as a collator gives it) against
    - the same model called without the mask (no host sync to test that it is all ones; the blocks are unpadded);
    - its encoder compiled by inductor (fused kernels), and compiled with CUDA graphs (mode "reduce-overhead": the
      encoder's forward and backward replayed as recorded graphs), both called without the mask (under compilation
      the model keeps any mask it is given). The MLM head stays eager: sparse prediction has data-dependent shapes."""
    precision = "bf16" if bf16 else "fp32"

    def loop(model=None, **kwargs):
        return StepLoop((model or build("minattn", sizes)).to(device), len(batches), lr, bf16, **kwargs)

    def compiled(mode):
        model = build("minattn", sizes)
        model.minattn.compile(mode=mode)
        return model

    variants = {"eager, no attention_mask passed (no host sync for the mask)": loop(attention_mask=False),
                "torch.compile of the encoder (default mode), no mask": loop(compiled("default"), attention_mask=False),
                "CUDA graphs: torch.compile of the encoder, mode reduce-overhead, no mask":
                    loop(compiled("reduce-overhead"), attention_mask=False)}
    return [lever_row(lever, precision, loop(), variant, batches, warmup) for lever, variant in variants.items()]


def profile_steps(sizes, batches, lr, bf16: bool, top: int = 12) -> list[dict]:
    """Where a MinAttn training step spends its time: torch.profiler over the steps after the first two, the `top`
    operators by self CPU time with their share of the total."""
    from torch.profiler import ProfilerActivity, profile

    loop = StepLoop(build("minattn", sizes), len(batches), lr, bf16)
    for inputs, labels in batches[:2]:
        loop.step(inputs, labels)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for inputs, labels in batches[2:]:
            loop.step(inputs, labels)
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    return [{"op": e.key, "share": e.self_cpu_time_total / total, "calls_per_step": e.count / (len(batches) - 2),
             "ms_per_step": e.self_cpu_time_total / 1e3 / (len(batches) - 2)} for e in events[:top]]


def mask_vs_none(sizes, repeats=5) -> dict:
    """sdpa forward + backward with no mask vs an all-zero additive mask (what an all-ones attention_mask would
    become if the model did not drop it), training-mode dropout 0.1."""
    B, T, H, D = sizes["batch"], sizes["seq"], sizes["heads"], sizes["hidden"] // sizes["heads"]
    q, k, v = (torch.randn(B, H, T, D, requires_grad=True) for _ in range(3))
    zero_mask = torch.zeros(B, 1, 1, T)
    times = {"none": [], "mask": []}
    for r in range(repeats + 1):
        for name, mask in (("none", None), ("mask", zero_mask)):
            start = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1).sum().backward()
            if r:
                times[name].append(time.perf_counter() - start)
    none, mask = statistics.median(times["none"]), statistics.median(times["mask"])
    return {"lever": "no mask -> materialized all-zero mask (sdpa, per layer)", "shipped_s": none,
            "variant_s": mask, "variant_over_shipped": mask / none}


def lever_table(levers: list[dict]) -> str:
    lines = ["| lever | precision | shipped step (s) | variant step (s) | variant / shipped | variant's first step (s) |",
             "|---|---|---:|---:|---:|---:|"]
    for row in levers:
        first = f"{row['variant_first_step_s']:.1f}" if "variant_first_step_s" in row else ""
        lines.append(f"| {row['lever']} | {row.get('precision', 'fp32')} | {row['shipped_s']:.3f} | {row['variant_s']:.3f} | "
                     f"{row['variant_over_shipped']:.3f} | {first} |")
    return "\n".join(lines)




def add_levers(report: dict, sizes: dict, train_blocks, tokenizer, precisions: list[str], args) -> dict:
    """`report["levers"]` (each lever in each measured precision, then the mask row) and, with `--profile`,
    `report["profile"]` {precision: top operators}, printed as they come; `args` as `bench_train.py` parses them."""
    print("levers (MinAttn shipped vs variant):", flush=True)
    lever_batches = make_batches(train_blocks, args.lever_steps, sizes["batch"], tokenizer, seed=3)
    measured = [p for p in precisions if "skipped" not in report["results"].get(p, {})]
    report["levers"] = []
    if args.device.type == "cuda":  # the launch-bound levers; the CPU's levers were measured on the CPU
        lever_batches = [tuple(t.to(args.device) for t in batch) for batch in lever_batches]
        for precision in measured:
            report["levers"] += measure_gpu_levers(sizes, lever_batches, min(5, args.lever_steps - 1), args.lr,
                                                   precision == "bf16", args.device)
        return report
    for precision in measured:
        report["levers"] += measure_levers(sizes, lever_batches, min(2, args.lever_steps - 1), args.lr,
                                           bf16=precision == "bf16", with_compile=not args.quick)
    report["levers"].append(mask_vs_none(sizes))
    if args.profile:
        report["profile"] = {}
        for precision in measured:
            report["profile"][precision] = rows = profile_steps(sizes, lever_batches, args.lr, precision == "bf16")
            print(f"profile, MinAttn training step, {precision}:")
            for row in rows:
                print(f"  {100 * row['share']:5.1f}%  {row['ms_per_step']:8.1f} ms  x{row['calls_per_step']:.0f}  {row['op']}")
    return report
