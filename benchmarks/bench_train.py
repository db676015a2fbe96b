"""MinAttnForMaskedLM against transformers' BertForMaskedLM and ModernBertForMaskedLM at matched dimensions, side by
side in one process.

    python benchmarks/bench_train.py                      # full run: fp32 (+ bf16 where the CPU does bf16 natively)
    python benchmarks/bench_train.py --quick              # smoke run with tiny sizes (under a minute)
    python benchmarks/bench_train.py --levers             # also time each speed lever on/off (see NOTES.md)
    python benchmarks/bench_train.py --batch 128          # on a GPU (picked by itself where there is one): bigger batches

What is measured (for each precision):
- training tokens/s: both models train on the same packed Wikipedia batches in the same order, alternating step by
  step (the order flips every step, so drift in the machine's load hits both alike); median over the steps after
  the warm-up. The speed-up is the median of the per-step ratios (see `summarize_training`). These same steps
  give the quality comparison: eval loss on the validation split afterwards.
- inference tokens/s: forward only, no labels, eval mode, alternating.
- peak training memory: a fresh subprocess per model runs a few training steps; we report the growth of the peak
  resident set size (VmHWM in /proc/self/status) over the RSS just before the first step, i.e. activations,
  gradients, optimizer state and allocator slack, but not the Python/torch runtime or the weights. On a GPU: the
  growth of torch's peak allocated GPU memory over what was allocated before the first step.
- MFU: the matmul FLOPs each model actually performs per step (the formula is in `train_flops`) divided by the
  step time, against the matmul peak timed in this run: one 1024^3 product (8192^3 on a GPU) after every pair of
  training steps, so that it sees the same machine load as the steps (median over steps of the per-step MFU).

On a GPU every model runs its default attention kernel (sdpa: flash or memory-efficient attention), and every timing
waits for the GPU to finish (`loss.item()` in a training step, `synchronize` elsewhere).

Results go to `<out>/bench-<date>.json` and `<out>/latest.json` (`--quick`: `<out>/latest-quick.json` only; on a GPU
`bench-cuda-<date>.json` and `latest-cuda.json`), and a markdown table is printed.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (AttentionInterface, BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling,
                          ModernBertConfig, ModernBertForMaskedLM)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, train_tokenizer
from hf_minattn.machine import machine_info
from hf_minattn.masking import mask_tokens

SIZES = dict(vocab=8192, hidden=256, layers=4, heads=4, ffn=1024, seq=128, batch=32)
QUICK_SIZES = dict(vocab=512, hidden=64, layers=2, heads=4, ffn=128, seq=32, batch=8)
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4  # train_tokenizer's fixed special ids


# ----------------------------------------------------------------------------------------------------------------
# Machine


def synchronize(device: torch.device):
    """Wait for the GPU's queued work, so that a clock read afterwards times it (nothing to wait for on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    """GFLOP/s of one a @ b of square matrices."""
    synchronize(a.device)
    start = time.perf_counter()
    a @ b
    synchronize(a.device)
    return 2 * a.shape[0] ** 3 / (time.perf_counter() - start) / 1e9


def matmul_peak(dtype: torch.dtype, n: int, repeats: int = 5, device: torch.device = torch.device("cpu")) -> float:
    """GFLOP/s of an n x n x n product (median of `repeats`): the matrix-multiply peak MFU is measured against."""
    a, b = torch.randn(n, n, dtype=dtype, device=device), torch.randn(n, n, dtype=dtype, device=device)
    timed_matmul(a, b)
    return statistics.median(timed_matmul(a, b) for _ in range(repeats))


def bf16_is_native(fp32_peak: float, bf16_peak: float) -> bool:
    """bf16 pays only where the CPU multiplies bf16 in hardware (AVX512_BF16 / AMX); elsewhere it is emulated and
    many times slower than fp32. We trust the measurement over the flags: native bf16 must at least match fp32. (On a
    GPU, main asks torch instead: a small product there times the launch, not the arithmetic.)"""
    return bf16_peak >= fp32_peak


# ----------------------------------------------------------------------------------------------------------------
# Models


MODELS = {"minattn": "MinAttnForMaskedLM", "bert": "BertForMaskedLM", "modernbert": "ModernBertForMaskedLM"}


def glu_size(sizes: dict) -> int:
    """ModernBERT's GLU feed-forward width with the weights of a plain one of width F: 3 x C x F' = 2 x C x F."""
    return round(2 * sizes["ffn"] / 3)


def build(name: str, sizes: dict, seed: int = 0, **overrides) -> nn.Module:
    """The models at matched dimensions, no dropout, GELU, tied decoder, each set up as its own training script runs
    it. MinAttn as run_mlm.py trains its `small` preset: pre-norm, rotary positions, the sparse head. BERT as
    transformers' run_mlm.py trains it: post-norm, learned positions, one token type, dense logits. ModernBERT as its own
    training runs it: its defaults (pre-norm, rotary positions, no biases, no dropout, every third layer global,
    the others a 128-token sliding window), its sparse prediction, and a GLU of the same weights (`glu_size`)."""
    torch.manual_seed(seed)
    if name == "modernbert":
        config = ModernBertConfig(vocab_size=sizes["vocab"], hidden_size=sizes["hidden"],
                                  num_hidden_layers=sizes["layers"], num_attention_heads=sizes["heads"],
                                  intermediate_size=glu_size(sizes), max_position_embeddings=sizes["seq"],
                                  pad_token_id=PAD, cls_token_id=CLS, sep_token_id=SEP, bos_token_id=CLS,
                                  eos_token_id=SEP, sparse_prediction=True, **overrides)
        return ModernBertForMaskedLM(config)
    dims = dict(vocab_size=sizes["vocab"], hidden_size=sizes["hidden"], num_hidden_layers=sizes["layers"],
                num_attention_heads=sizes["heads"], intermediate_size=sizes["ffn"],
                max_position_embeddings=sizes["seq"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                layer_norm_eps=1e-12, hidden_act="gelu", pad_token_id=PAD)
    if name == "bert":
        # type_vocab_size=1: one segment, the closest BERT gets to MinAttn's embeddings (word + position).
        return BertForMaskedLM(BertConfig(**{**dims, **overrides}, type_vocab_size=1))
    config = MinAttnConfig(**{**dims, "sparse_prediction": True, "position_embedding_type": "rope", **overrides})
    return MinAttnForMaskedLM(config)


def matmul_params(sizes: dict, name: str = "minattn") -> tuple[int, int]:
    """(weights in the encoder's matmuls, weights in the MLM head's matmuls): Q, K, V, O and the feed-forward (two
    matrices, or ModernBERT's GLU: three of width `glu_size`, the same count), the head's transform and decoder."""
    C, F_, L, V = sizes["hidden"], sizes["ffn"], sizes["layers"], sizes["vocab"]
    feed_forward = 3 * C * glu_size(sizes) if name == "modernbert" else 2 * C * F_
    encoder = L * (3 * C * C + C * C + feed_forward)
    head = C * C + C * V  # transform dense + decoder
    return encoder, head


def train_flops(name: str, sizes: dict, n_labelled: float, dense_head: bool = False) -> float:
    """Matmul FLOPs of one training step (forward + backward = 3x forward), counting what each model computes:
    6 * weights * tokens for every projection, 12 * L * T * C per token for the two attention products
    (Q K^T and A V; ModernBERT's sliding-window layers compute them over the whole sequence too under sdpa), and the
    MLM head on every token for BERT but only on the labelled ones for MinAttn and ModernBERT (sparse prediction)."""
    B, T, C, L = sizes["batch"], sizes["seq"], sizes["hidden"], sizes["layers"]
    encoder, head = matmul_params(sizes, name)
    tokens = B * T
    head_tokens = tokens if (name == "bert" or dense_head) else n_labelled
    return 6 * encoder * tokens + 12 * L * T * C * tokens + 6 * head * head_tokens


def infer_flops(sizes: dict, name: str = "minattn") -> float:
    B, T, C, L = sizes["batch"], sizes["seq"], sizes["hidden"], sizes["layers"]
    encoder, head = matmul_params(sizes, name)
    return B * T * (2 * (encoder + head) + 4 * L * T * C)


# ----------------------------------------------------------------------------------------------------------------
# Data: the embedded Wikipedia sample, tokenized, packed into full blocks (nothing padded), masked once with a seed


def load_blocks(sizes: dict, quick: bool):
    from hf_minattn.data import load_wikipedia_sample

    data = load_wikipedia_sample()
    train_texts, val_texts = list(data["train"]["text"]), list(data["validation"]["text"])
    if quick:
        train_texts, val_texts = train_texts[:300], val_texts[:100]
    tokenizer = train_tokenizer(train_texts, vocab_size=sizes["vocab"], model_max_length=sizes["seq"],
                                show_progress=False)
    assert tokenizer.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [PAD, UNK, CLS, SEP, MASK]

    tokenizer.model_max_length = 10**9  # packing cuts the stream into blocks itself

    def pack(texts):
        stream = [i for ids in tokenizer(texts, add_special_tokens=False)["input_ids"] for i in ids + [SEP]]
        body = sizes["seq"] - 2
        n = len(stream) // body
        blocks = torch.tensor(stream[: n * body]).view(n, body)
        return torch.cat([torch.full((n, 1), CLS), blocks, torch.full((n, 1), SEP)], dim=1)  # (n, T)

    return pack(train_texts), pack(val_texts), tokenizer


def mask_blocks(masker: DataCollatorForLanguageModeling, blocks: torch.Tensor, generator: torch.Generator):
    """(inputs, labels) of (B, T) blocks, masked as run_mlm.py masks (`hf_minattn.masking`): 15% of the non-special
    positions labelled, of those 80% [MASK], 10% a random token, 10% kept."""
    return mask_tokens(masker, blocks, generator, special_tokens_mask=(blocks <= MASK).long())


def make_batches(blocks: torch.Tensor, steps: int, batch: int, tokenizer, seed: int):
    """`steps` masked batches in a fixed order (cycling through shuffled blocks), identical for both models."""
    masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    generator = torch.Generator().manual_seed(seed)
    order = torch.cat([torch.randperm(len(blocks), generator=generator)
                       for _ in range(math.ceil(steps * batch / len(blocks)) + 1)])
    return [mask_blocks(masker, blocks[order[step * batch:(step + 1) * batch]], generator) for step in range(steps)]


# ----------------------------------------------------------------------------------------------------------------
# Steps


def mlm_loss(model, inputs, labels, dense_head=False):
    mask = torch.ones_like(inputs)  # what a collator gives for unpadded blocks; MinAttn turns it into no mask
    if dense_head:  # the lever off: full (B, T, V) logits as BERT computes them
        logits = model(input_ids=inputs, attention_mask=mask).logits
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)
    return model(input_ids=inputs, attention_mask=mask, labels=labels).loss


class StepLoop:
    """A plain training loop for one model (not transformers' Trainer): its AdamW and its schedule (linear warm-up
    over 10% of the steps, then linear decay), and the time and loss of every step. The AdamW is the fused one, the
    Trainer's default (`optim="adamw_torch_fused"`), unless `fused=False` (torch's default on CPU: a loop over the
    parameters; it measured within 3% of the fused one, a lever below)."""

    def __init__(self, model, steps, lr, bf16, dense_head=False, compile_model=False, fused=True):
        self.model, self.bf16, self.dense_head = model, bf16, dense_head
        self.forward_model = torch.compile(model) if compile_model else model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, fused=fused)
        warmup = max(1, steps // 10)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
        self.times, self.losses = [], []

    def step(self, inputs, labels):
        self.model.train()
        start = time.perf_counter()
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            loss = mlm_loss(self.forward_model, inputs, labels, self.dense_head)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.losses.append(loss.item())  # on a GPU this waits for the whole step's kernels, so the time is the step's
        self.times.append(time.perf_counter() - start)


@torch.no_grad()
def eval_loss(model, batches, bf16):
    """Mean cross-entropy over all masked positions of the validation batches (eval mode, no dropout)."""
    model.eval()
    total, count = 0.0, 0
    for inputs, labels in batches:
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=inputs, attention_mask=torch.ones_like(inputs)).logits
        total += F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1), reduction="sum").item()
        count += int((labels != -100).sum())
    return total / count


@torch.no_grad()
def inference_times(models: dict, inputs, bf16, repeats):
    for model in models.values():
        model.eval()
    times = {name: [] for name in models}
    names = list(models)
    for r in range(repeats + 1):
        for name in names if r % 2 == 0 else names[::-1]:
            synchronize(inputs.device)
            start = time.perf_counter()
            with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=bf16):
                models[name](input_ids=inputs, attention_mask=torch.ones_like(inputs))
            synchronize(inputs.device)
            if r > 0:  # the first round is warm-up
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


# ----------------------------------------------------------------------------------------------------------------
# Peak memory, in a fresh process per model so that one model's peak cannot hide the other's


def memory_worker(name: str, precision: str, sizes: dict, device: str, steps: int = 3):
    bf16, device = precision == "bf16", torch.device(device)
    model = build(name, sizes).to(device)
    generator = torch.Generator().manual_seed(0)
    blocks = torch.randint(MASK + 1, sizes["vocab"], (sizes["batch"], sizes["seq"]), generator=generator)
    tokenizer = train_tokenizer(["a few words to mask"] * 5, vocab_size=50, show_progress=False)  # [MASK] and friends
    inputs, labels = (t.to(device) for t in mask_blocks(DataCollatorForLanguageModeling(tokenizer), blocks, generator))
    trainer = StepLoop(model, steps=10, lr=1e-4, bf16=bf16)
    if device.type == "cuda":
        before = torch.cuda.memory_allocated(device) / 2**20
        torch.cuda.reset_peak_memory_stats(device)
    else:
        before = proc_status_mb("VmRSS")
    for _ in range(steps):
        trainer.step(inputs, labels)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        print(json.dumps({"peak_gpu_mb": peak, "gpu_before_mb": before, "train_peak_mb": peak - before}))
    else:
        peak = proc_status_mb("VmHWM")
        print(json.dumps({"peak_rss_mb": peak, "rss_before_mb": before, "train_peak_mb": peak - before}))


def proc_status_mb(field: str) -> float:
    """VmRSS (resident now) or VmHWM (peak resident) of this process in MiB. Not getrusage's ru_maxrss: Linux
    carries that over exec from the forking parent, so a worker started by a big benchmark would report the
    parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory(name: str, precision: str, sizes: dict, device: torch.device) -> dict:
    command = [sys.executable, __file__, "--_memory-worker", name, precision, json.dumps(sizes), device.type]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------------------------
# Levers: each timed on/off, alternating, on the same batches (no quality measured)


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


def measure_levers(sizes, batches, warmup, lr, bf16=False, with_compile=True) -> list[dict]:
    """Each row: MinAttn as shipped vs MinAttn with one lever switched: "off" for the ones in the model (is each
    worth keeping?), "on" for the candidates (does it pay?). variant / shipped < 1: the variant is faster."""
    rows = []
    precision = "bf16" if bf16 else "fp32"

    def pair(lever, variant_model, variant_kwargs=None, baseline_kwargs=None, model_kwargs=None, variant_bf16=bf16):
        baseline = StepLoop(build("minattn", sizes, **(model_kwargs or {})), len(batches), lr, bf16,
                            **(baseline_kwargs or {}))
        variant = StepLoop(variant_model, len(batches), lr, variant_bf16, **(variant_kwargs or {}))
        start = time.perf_counter()
        variant.step(*batches[0])
        first_step = time.perf_counter() - start
        variant.times.clear()
        times = time_pair({"shipped": baseline, "variant": variant}, batches, warmup)
        rows.append({"lever": lever, "precision": precision, "shipped_s": times["shipped"],
                     "variant_s": times["variant"], "variant_over_shipped": times["variant"] / times["shipped"],
                     "variant_first_step_s": first_step})
        print(f"  [{precision}] {lever}: variant/shipped step time = {times['variant'] / times['shipped']:.3f}",
              flush=True)

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
    # The candidates (issue 20), on:
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


# ----------------------------------------------------------------------------------------------------------------
# Main


def run_precision(precision, sizes, train_batches, val_batches, args) -> dict:
    bf16, device = precision == "bf16", args.device
    tokens = sizes["batch"] * sizes["seq"]
    trainers = {name: StepLoop(build(name, sizes).to(device), args.steps, args.lr, bf16) for name in args.models}
    names = list(trainers)
    # The machine is shared: sample the matmul peak between the steps, under the same load as the steps.
    dtype = torch.bfloat16 if bf16 else torch.float32
    a, b = (torch.randn(args.peak_size, args.peak_size, dtype=dtype, device=device) for _ in range(2))
    peak_samples = []
    start = time.perf_counter()
    for i, (inputs, labels) in enumerate(train_batches):
        for name in names if i % 2 == 0 else names[::-1]:
            trainers[name].step(inputs, labels)
        peak_samples.append(timed_matmul(a, b))
        if (i + 1) % max(1, args.steps // 10) == 0:
            print(f"  [{precision}] step {i + 1}/{args.steps}: " + ", ".join(
                f"{n} loss {t.losses[-1]:.3f} {t.times[-1]:.2f}s" for n, t in trainers.items()), flush=True)
    train_seconds = time.perf_counter() - start  # includes the peak samples (a few percent)
    n_labelled = statistics.mean(int((labels != -100).sum()) for _, labels in train_batches)
    peak = statistics.median(peak_samples[args.warmup:] or peak_samples)
    infer = inference_times({n: t.model for n, t in trainers.items()}, train_batches[0][0], bf16, args.infer_repeats)
    result = {"train_wall_s": train_seconds, "matmul_peak_gflops_during_training": peak,
              "matmul_peak_samples": peak_samples, "n_labelled_mean": n_labelled, "models": {}}
    for name, trainer in trainers.items():
        result["models"][name] = {
            "train_step_s_all": trainer.times,
            "infer_tokens_per_s": tokens / infer[name],
            "infer_mfu": infer_flops(sizes, name) / infer[name] / (peak * 1e9),
            "train_loss_last10": statistics.mean(trainer.losses[-10:]),
            "eval_loss": eval_loss(trainer.model, val_batches, bf16),
            "memory": peak_memory(name, precision, sizes, device),
        }
    summarize_training(result, sizes, args.warmup)
    return result


def summarize_training(result: dict, sizes: dict, warmup: int):
    """Speed numbers from the raw step times and the matmul peak sampled after each pair of steps.

    Other people's jobs come and go on this machine and change step times several-fold, so the speed-up is the
    median over steps of BERT's step time / MinAttn's step time *at the same step* (the two ran back to back,
    under the same load), and MFU is taken step by step against the peak sampled right after that step.
    `train_speedup_quiet` keeps only the steps where the sampled peak was >= 75% of the best sample (the machine
    was nearly idle).
    """
    tokens = sizes["batch"] * sizes["seq"]
    peaks = result["matmul_peak_samples"][warmup:]
    quiet = [p >= 0.75 * max(peaks) for p in peaks]
    for name, model in result["models"].items():
        times = model["train_step_s_all"][warmup:]
        flops = train_flops(name, sizes, result["n_labelled_mean"])
        model["train_step_s"] = statistics.median(times)
        model["train_tokens_per_s"] = tokens / model["train_step_s"]
        model["train_flops_per_step"] = flops
        model["mfu"] = statistics.median(flops / t / (p * 1e9) for t, p in zip(times, peaks))
    mine = result["models"]["minattn"]
    result["ratios"] = {"quiet_steps": sum(quiet)}  # MinAttn against each peer: "train_speedup" is against BERT
    for peer in result["models"]:
        if peer == "minattn":
            continue
        other = result["models"][peer]
        paired = [o / m for m, o in zip(mine["train_step_s_all"][warmup:], other["train_step_s_all"][warmup:])]
        suffix = "" if peer == "bert" else f"_vs_{peer}"
        result["ratios"].update({
            f"train_speedup{suffix}": statistics.median(paired),
            f"train_speedup_of_medians{suffix}": mine["train_tokens_per_s"] / other["train_tokens_per_s"],
            f"train_speedup_quiet{suffix}": statistics.median([r for r, q in zip(paired, quiet) if q]),
            f"infer_speedup{suffix}": mine["infer_tokens_per_s"] / other["infer_tokens_per_s"],
            f"eval_loss_ratio{suffix}": mine["eval_loss"] / other["eval_loss"],
            f"train_memory_ratio{suffix}": mine["memory"]["train_peak_mb"] / other["memory"]["train_peak_mb"],
        })
    return result


def markdown_table(report) -> str:
    """"MinAttn vs" for training is the median per-step ratio of the peer's step time to MinAttn's; "quiet" keeps the
    steps taken on a nearly idle machine."""
    lines = ["| precision | model | train tok/s | MinAttn vs it | MinAttn vs it, quiet steps | infer tok/s | "
             "MinAttn vs it | train MFU | peak train mem (MB) | eval loss |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for precision, result in report["results"].items():
        if "skipped" in result:
            lines.append(f"| {precision} | (skipped: {result['skipped']}) | | | | | | | | |")
            continue
        r = result["ratios"]
        for name, m in result["models"].items():
            suffix = "" if name == "bert" else f"_vs_{name}"
            if name == "minattn":
                vs_train = vs_quiet = vs_infer = ""
            else:
                vs_train = f"{r['train_speedup' + suffix]:.2f}x"
                vs_quiet = f"{r['train_speedup_quiet' + suffix]:.2f}x ({r['quiet_steps']} steps)"
                vs_infer = f"{r['infer_speedup' + suffix]:.2f}x"
            lines.append(f"| {precision} | {MODELS[name]} | {m['train_tokens_per_s']:.0f} | {vs_train} | {vs_quiet} | "
                         f"{m['infer_tokens_per_s']:.0f} | {vs_infer} | {100 * m['mfu']:.0f}% | "
                         f"{m['memory']['train_peak_mb']:.0f} | {m['eval_loss']:.3f} |")
    return "\n".join(lines)


def lever_table(levers: list[dict]) -> str:
    lines = ["| lever | precision | shipped step (s) | variant step (s) | variant / shipped | variant's first step (s) |",
             "|---|---|---:|---:|---:|---:|"]
    for row in levers:
        first = f"{row['variant_first_step_s']:.1f}" if "variant_first_step_s" in row else ""
        lines.append(f"| {row['lever']} | {row.get('precision', 'fp32')} | {row['shipped_s']:.3f} | {row['variant_s']:.3f} | "
                     f"{row['variant_over_shipped']:.3f} | {first} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few steps: a smoke run in seconds")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where the models train (default: a CUDA GPU where there is one, else the CPU)")
    parser.add_argument("--batch", type=int, default=None,
                        help=f"sequences per batch (default {SIZES['batch']}, quick {QUICK_SIZES['batch']})")
    parser.add_argument("--steps", type=int, default=None, help="training steps per model (default 60, quick 6)")
    parser.add_argument("--warmup", type=int, default=None, help="first steps left out of the timing (default 5)")
    parser.add_argument("--precision", default="fp32,bf16",
                        help="comma-separated, of fp32,bf16; bf16 runs only where the CPU multiplies bf16 natively")
    parser.add_argument("--force-bf16", action="store_true", help="run bf16 even where it is emulated (slow)")
    parser.add_argument("--models", default="minattn,bert,modernbert",
                        help=f"comma-separated, minattn first, of {','.join(MODELS)}")
    parser.add_argument("--levers", action="store_true", help="also time each speed lever on/off (in each --precision)")
    parser.add_argument("--only-levers", action="store_true",
                        help="time the levers alone (no model comparison); writes levers-<date>.json, levers-latest.json")
    parser.add_argument("--lever-steps", type=int, default=12, help="steps per lever comparison")
    parser.add_argument("--profile", action="store_true",
                        help="with --levers: also profile MinAttn's training step in each precision (top operators)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-blocks", type=int, default=128, help="validation blocks for the eval loss")
    parser.add_argument("--infer-repeats", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--_memory-worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._memory_worker:
        name, precision, sizes, device = args._memory_worker
        return memory_worker(name, precision, json.loads(sizes), device)

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    elif args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA GPU here")
    args.device = torch.device(args.device)
    if args.device.type == "cuda" and (args.levers or args.only_levers):
        parser.error("the levers are measured on the CPU: add --device cpu")
    if args.batch is not None and args.batch < 1:
        parser.error(f"--batch must be at least 1, got {args.batch}")
    sizes = dict(QUICK_SIZES if args.quick else SIZES)
    sizes["batch"] = args.batch or sizes["batch"]
    args.steps = args.steps or (6 if args.quick else 60)
    args.warmup = min(args.warmup if args.warmup is not None else (1 if args.quick else 5), args.steps - 1)
    if args.quick:
        args.eval_blocks, args.infer_repeats, args.lever_steps = min(args.eval_blocks, 16), 2, 4
    precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
    if not set(precisions) <= {"fp32", "bf16"}:
        parser.error(f"--precision takes fp32 and/or bf16, got {args.precision!r}")
    args.levers = args.levers or args.only_levers
    if args.profile and not args.levers:
        parser.error("--profile profiles the lever batches: add --levers or --only-levers")
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.models[:1] != ["minattn"] or not set(args.models) <= set(MODELS) or len(args.models) < 2:
        parser.error(f"--models takes minattn first, then one or more of bert,modernbert; got {args.models}")

    machine = machine_info()
    print(f"machine: {machine['cpu']}, {machine['cores']} cores ({machine['cpu_capability']}), "
          f"torch {machine['torch']}, transformers {machine['transformers']}, load {machine['load_average']}")
    print(f"device: {args.device.type}" + (f" ({machine['gpu']})" if args.device.type == "cuda" else ""))
    n = args.peak_size = 256 if args.quick else 8192 if args.device.type == "cuda" else 1024
    peaks = {"fp32": matmul_peak(torch.float32, n, device=args.device)}
    # A bf16 product on a CPU without bf16 hardware is ~50x slower: probe smaller first (512^3, not 256^3: a 256^3
    # product takes ~0.1 ms on native bf16, too short to time reliably, and once measured 112 against 156 fp32). On a
    # GPU a 512^3 product is all launch overhead (10 TFLOP/s bf16 on an H100, against 50 fp32 at 8192^3): time it at
    # full size where torch says the GPU has bf16.
    on_gpu_with_bf16 = args.device.type == "cuda" and torch.cuda.is_bf16_supported()
    peaks["bf16"] = matmul_peak(torch.bfloat16, n if on_gpu_with_bf16 else min(n, 512), device=args.device)
    bf16_native = on_gpu_with_bf16 or bf16_is_native(peaks["fp32"], peaks["bf16"])
    if bf16_native and not on_gpu_with_bf16:
        peaks["bf16"] = matmul_peak(torch.bfloat16, n, device=args.device)
    print(f"matmul peak ({n}^3): fp32 {peaks['fp32']:.0f} GFLOP/s, bf16 {peaks['bf16']:.1f} GFLOP/s", flush=True)

    train_blocks, val_blocks, tokenizer = load_blocks(sizes, args.quick)
    sizes["vocab"] = max(sizes["vocab"], len(tokenizer))
    train_batches = make_batches(train_blocks, args.steps, sizes["batch"], tokenizer, seed=1)
    val_blocks = val_blocks[: args.eval_blocks]
    masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    val_batches = [mask_blocks(masker, chunk, torch.Generator().manual_seed(2 + i))
                   for i, chunk in enumerate(val_blocks.split(sizes["batch"]))]
    train_batches, val_batches = ([tuple(t.to(args.device) for t in batch) for batch in batches]
                                  for batches in (train_batches, val_batches))
    print(f"data: {len(train_blocks)} train / {len(val_blocks)} validation blocks of {sizes['seq']} tokens", flush=True)

    report = {"machine": machine, "device": args.device.type, "sizes": sizes, "matmul_peak_gflops": peaks,
              "matmul_peak_size": n, "results": {},
              "args": {k: str(v) if k == "device" else v for k, v in vars(args).items() if not k.startswith("_")}}
    for precision in precisions:
        if precision == "bf16" and not (bf16_native or args.force_bf16):
            report["results"]["bf16"] = {"skipped": f"bf16 is emulated here ({machine['cpu_capability']}): "
                                                    f"{peaks['bf16']:.1f} vs {peaks['fp32']:.0f} GFLOP/s fp32"}
            print(f"bf16 skipped: {report['results']['bf16']['skipped']}", flush=True)
            continue
        if args.only_levers:
            report["results"][precision] = {"levers only": True}
            continue
        print(f"training the models, {precision}, {args.steps} steps each", flush=True)
        report["results"][precision] = run_precision(precision, sizes, train_batches, val_batches, args)
    if args.levers:
        print("levers (MinAttn shipped vs variant):", flush=True)
        lever_batches = make_batches(train_blocks, args.lever_steps, sizes["batch"], tokenizer, seed=3)
        measured = [p for p in precisions if "skipped" not in report["results"].get(p, {})]
        report["levers"] = []
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
    report["machine"]["load_average_end"] = os.getloadavg()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = json.dumps(report, indent=1)
    # A full run is kept under its date; a --quick run only replaces latest-quick.json (its numbers mean nothing).
    # A GPU run has its own names, so that it never replaces the CPU figures NOTES.md quotes.
    prefix = "levers" if args.only_levers else "bench-cuda" if args.device.type == "cuda" else "bench"
    latest = "levers-latest" if args.only_levers else "latest-cuda" if args.device.type == "cuda" else "latest"
    name = f"{prefix}-latest-quick.json" if args.quick and args.only_levers else f"{latest}-quick.json" \
        if args.quick else f"{prefix}-{stamp}.json"
    (out / name).write_text(text)
    if not args.quick:
        (out / f"{latest}.json").write_text(text)
    table = lever_table(report["levers"]) if args.only_levers else markdown_table(report)
    print(table)
    print(f"wrote {out / name}")
    return report


if __name__ == "__main__":
    main()
