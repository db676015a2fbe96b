"""What the benchmark scripts share: the matched sizes, the models built as their own training scripts run them,
the packed and masked Wikipedia batches, a plain training step loop, and the matrix-multiply peak that MFU is
measured against. `bench_train.py` compares the models with these; `bench_levers.py`, `bench_probe.py`,
`bench_trainer_overhead.py`, `bench_rotary_inference.py` and `bf16_precision.py` import them from here rather than
from one another."""

import itertools
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling, ModernBertConfig,
                          ModernBertForMaskedLM)

from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, train_tokenizer
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


def median_interval(values, confidence: float = 0.95) -> list[float] | None:
    """The distribution-free interval of the median of `values`: the order statistics x_(j+1) and x_(n-j), j the
    largest count with P(Binomial(n, 1/2) <= j) <= (1 - confidence) / 2, so that the interval holds the median with
    at least `confidence` whatever the distribution (for 24 paired ratios: the 7th and 18th, 97.7%). None below 6
    values, too few for 95%. A speed ratio is told from 1.0 only where this interval excludes it."""
    ordered, n = sorted(values), len(values)
    cdf = list(itertools.accumulate(math.comb(n, k) / 2 ** n for k in range(n)))  # P(Binomial(n, 1/2) <= j)
    below = [j for j in range(n) if cdf[j] <= (1 - confidence) / 2]
    return [ordered[below[-1]], ordered[n - 1 - below[-1]]] if below else None


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


def mlm_loss(model, inputs, labels, dense_head=False, attention_mask=True):
    # The all-ones mask is what a collator gives for unpadded blocks; MinAttn turns it into no mask.
    mask = torch.ones_like(inputs) if attention_mask else None
    if dense_head:  # the lever off: full (B, T, V) logits as BERT computes them
        logits = model(input_ids=inputs, attention_mask=mask).logits
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)
    return model(input_ids=inputs, attention_mask=mask, labels=labels).loss


def linear_schedule(optimizer, steps: int, warmup: int):
    """The learning rate rising linearly over `warmup` steps, then falling linearly to 0 at `steps`."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))


class StepLoop:
    """A plain training loop for one model (not transformers' Trainer): its AdamW and its schedule (linear warm-up
    over 10% of the steps, then linear decay), and the time and loss of every step. The AdamW is the fused one, the
    Trainer's default (`optim="adamw_torch_fused"`), unless `fused=False` (torch's default on CPU: a loop over the
    parameters; it measured within 3% of the fused one, a lever below)."""

    def __init__(self, model, steps, lr, bf16, dense_head=False, compile_model=False, fused=True, attention_mask=True):
        self.model, self.bf16, self.dense_head, self.attention_mask = model, bf16, dense_head, attention_mask
        self.forward_model = torch.compile(model) if compile_model else model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, fused=fused)
        self.schedule = linear_schedule(self.optimizer, steps, warmup=max(1, steps // 10))
        self.times, self.losses = [], []

    def step(self, inputs, labels):
        self.model.train()
        start = time.perf_counter()
        if inputs.is_cuda:  # a new step for CUDA graphs (mode "reduce-overhead"): last step's outputs may be reused
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            loss = mlm_loss(self.forward_model, inputs, labels, self.dense_head, self.attention_mask)
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


def balanced_orders(names, rounds: int) -> list[tuple]:
    """The order of the models in each of `rounds` rounds: every permutation in turn, so that over each n! rounds
    every model runs in every position equally often. Timing one model three times in three positions gave
    positions up to 3-4% apart in no fixed direction (benchmarks/NOTES.md); with orders that only flip, the middle
    model of three would never run first or last."""
    orders = list(itertools.permutations(names))
    return [orders[r % len(orders)] for r in range(rounds)]


def training_orders(names, steps: int, warmup: int) -> list[tuple]:
    """The order of the models at each of `steps` training steps: the first `warmup` (untimed) steps, then a fresh
    `balanced_orders` cycle for the timed steps alone, so that these are balanced whenever their number is a multiple
    of the number of orders (n!), whatever the warm-up."""
    return balanced_orders(names, warmup) + balanced_orders(names, steps - warmup)


def round_robin_times(runs: dict, rounds: int) -> dict[str, list[float]]:
    """{name: the seconds `runs[name]()` returned in each of `rounds` rounds}, the models taking turns within a round
    in `balanced_orders`, after one warm-up round: a change in the machine's load hits all of them alike, and round
    r's times can be compared model against model."""
    for run in runs.values():
        run()
    times = {name: [] for name in runs}
    for order in balanced_orders(list(runs), rounds):
        for name in order:
            times[name].append(runs[name]())
    return times


@torch.no_grad()
def inference_times(models: dict, inputs, bf16, repeats) -> dict[str, list[float]]:
    """{name: seconds of one forward in each of `repeats` rounds} (eval mode, no labels), by `round_robin_times`."""
    def forward_seconds(model):
        synchronize(inputs.device)
        start = time.perf_counter()
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=bf16):
            model(input_ids=inputs, attention_mask=torch.ones_like(inputs))
        synchronize(inputs.device)
        return time.perf_counter() - start

    for model in models.values():
        model.eval()
    return round_robin_times({name: lambda model=model: forward_seconds(model) for name, model in models.items()},
                             repeats)
