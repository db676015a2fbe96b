"""Every fast path of the model gives the same outputs and gradients as the plain computation it replaces.

No test here asserts a time: the speed of each path is measured by benchmarks/bench_train.py.
"""

import copy
import importlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import benchmark_script, tiny_config
from hf_minattn import MinAttnForMaskedLM, MinAttnModel


def grads_of(model):
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def assert_same_grads(a, b, atol=1e-5):
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=atol, rtol=1e-4, msg=lambda m: f"{name}: {m}")


def batch(B=3, T=11, vocab=99):
    input_ids = torch.randint(5, vocab, (B, T))
    labels = torch.full_like(input_ids, -100)
    chosen = torch.rand(B, T) < 0.3
    chosen[0, 0] = True  # at least one labelled token
    labels[chosen] = input_ids[chosen]
    return input_ids, labels


# ---------------------------------------------------------------- sparse vs dense MLM head


@pytest.mark.parametrize("norm_placement", ["pre", "post"])
def test_sparse_head_matches_dense_head_with_gradients(norm_placement):
    """`sparse_prediction`: the vocabulary projection at labelled positions only == the full (B, T, V) logits
    then a masked loss. Off (the default), logits keep BERT's (B, T, V) shape with labels too."""
    sparse_model = MinAttnForMaskedLM(tiny_config(norm_placement=norm_placement, sparse_prediction=True))
    dense_model = copy.deepcopy(sparse_model)
    dense_model.config.sparse_prediction = False
    input_ids, labels = batch()

    sparse = sparse_model(input_ids, labels=labels)
    sparse.loss.backward()
    dense = dense_model(input_ids, labels=labels)
    assert dense.logits.shape == (*input_ids.shape, 99)  # the MaskedLMOutput contract of BertForMaskedLM
    dense_loss = F.cross_entropy(dense.logits.view(-1, 99), labels.view(-1), ignore_index=-100)
    torch.testing.assert_close(dense.loss, dense_loss)
    dense.loss.backward()

    assert sparse.logits.shape == (int((labels != -100).sum()), 99)
    torch.testing.assert_close(sparse.logits, dense.logits[labels != -100])
    torch.testing.assert_close(sparse.loss, dense.loss)
    assert_same_grads(grads_of(sparse_model), grads_of(dense_model))


# ---------------------------------------------------------------- fused vs separate Q/K/V projections


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_fused_qkv_matches_three_separate_projections(implementation, bench):
    """The benchmark's lever "fused QKV" against its own SeparateQKV: same outputs and gradients."""
    fused_model = MinAttnForMaskedLM(tiny_config())
    fused_model.set_attn_implementation(implementation)
    separate_model = copy.deepcopy(fused_model)
    levers = importlib.import_module("bench_levers")  # the levers' module, on the path once bench_train is loaded
    for layer in separate_model.minattn.layers:
        layer.attention.qkv_proj = levers.SeparateQKV(layer.attention.qkv_proj)
    input_ids, labels = batch()

    fused = fused_model(input_ids, labels=labels)
    separate = separate_model(input_ids, labels=labels)
    fused.loss.backward()
    separate.loss.backward()

    torch.testing.assert_close(fused.logits, separate.logits)
    for fused_layer, separate_layer in zip(fused_model.minattn.layers, separate_model.minattn.layers):
        fused_proj, parts = fused_layer.attention.qkv_proj, separate_layer.attention.qkv_proj
        torch.testing.assert_close(fused_proj.weight.grad, torch.cat([parts.q.weight.grad, parts.k.weight.grad,
                                                                      parts.v.weight.grad]))
        torch.testing.assert_close(fused_proj.bias.grad, torch.cat([parts.q.bias.grad, parts.k.bias.grad,
                                                                    parts.v.bias.grad]))
    # and the accessor the probes use slices the fused weight the same way
    heads = fused_model.get_head_weights()[0]
    q = separate_model.minattn.layers[0].attention.qkv_proj.q.weight
    torch.testing.assert_close(heads["W_Q"].reshape(q.shape), q)


# ---------------------------------------------------------------- masked vs unmasked attention


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_all_ones_attention_mask_equals_no_mask_with_gradients(implementation):
    """An all-ones attention_mask takes the no-mask path; it must give what no mask gives, gradients included."""
    model = MinAttnForMaskedLM(tiny_config())
    model.set_attn_implementation(implementation)
    other = copy.deepcopy(model)
    input_ids, labels = batch()

    with_mask = model(input_ids, attention_mask=torch.ones_like(input_ids), labels=labels)
    without = other(input_ids, labels=labels)
    with_mask.loss.backward()
    without.loss.backward()

    torch.testing.assert_close(with_mask.logits, without.logits)
    assert_same_grads(grads_of(model), grads_of(other))


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_materialized_zero_mask_equals_no_mask(implementation):
    """The attention function itself: an additive all-zero mask (what an unpadded batch would become without the
    no-mask fast path) gives the same output and gradients as no mask."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    from hf_minattn.modeling_minattn import eager_attention_forward

    module = MinAttnModel(tiny_config()).layers[0].attention.eval()
    attention = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
    B, H, T, D = 2, 4, 7, 9
    inputs = [torch.randn(B, H, T, D, requires_grad=True) for _ in range(3)]
    outputs, grads = [], []
    for mask in (None, torch.zeros(B, 1, 1, T)):
        output, _ = attention(module, *inputs, mask, scaling=D**-0.5, dropout=0.0)
        outputs.append(output)
        grads.append(torch.autograd.grad(output.square().sum(), inputs))
    torch.testing.assert_close(outputs[0], outputs[1])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


# ---------------------------------------------------------------- sdpa vs the plain (eager) path: the one place


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("variant", [{}, {"qkv_projection": "identity"}, {"norm_placement": "post"},
                                     {"position_embedding_type": "none"}, {"position_embedding_type": "rope"}],
                         ids=["default", "identity_qkv", "post_norm", "no_positions", "rope"])
def test_sdpa_matches_eager_outputs_and_gradients(padded, variant):
    eager_model = MinAttnForMaskedLM(tiny_config(hidden_size=32, **variant))
    eager_model.set_attn_implementation("eager")
    sdpa_model = copy.deepcopy(eager_model)
    sdpa_model.set_attn_implementation("sdpa")
    input_ids, labels = batch()
    attention_mask = torch.ones_like(input_ids)
    if padded:
        attention_mask[1, 6:] = 0
        labels[1, 6:] = -100

    eager = eager_model(input_ids, attention_mask=attention_mask, labels=labels)
    sdpa = sdpa_model(input_ids, attention_mask=attention_mask, labels=labels)
    eager.loss.backward()
    sdpa.loss.backward()

    torch.testing.assert_close(eager.logits, sdpa.logits, atol=1e-5, rtol=1e-4)
    assert_same_grads(grads_of(eager_model), grads_of(sdpa_model))



def test_bf16_on_cpu_takes_the_eager_attention_path():
    """On a CPU, torch's bf16 flash-attention kernel is slower than matmul-softmax-matmul, so an sdpa model computes
    bf16 attention (autocast, or bf16 weights) by the eager path: bit for bit what the eager model gives. In fp32 it
    stays on sdpa (different rounding from eager)."""
    eager_model = MinAttnForMaskedLM(tiny_config(hidden_size=32, position_embedding_type="rope"))
    eager_model.set_attn_implementation("eager")
    sdpa_model = copy.deepcopy(eager_model)
    sdpa_model.set_attn_implementation("sdpa")
    input_ids = torch.randint(5, 99, (4, 24))

    def hidden(model, **autocast):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, **autocast):
            return model(input_ids, output_hidden_states=True).hidden_states[1]  # the first block's output

    assert torch.equal(hidden(sdpa_model), hidden(eager_model))
    for model in (sdpa_model, eager_model):
        model.to(torch.bfloat16)
    assert torch.equal(hidden(sdpa_model, enabled=False), hidden(eager_model, enabled=False))
    for model in (sdpa_model, eager_model):
        model.float()
    fp32_sdpa, fp32_eager = hidden(sdpa_model, enabled=False), hidden(eager_model, enabled=False)
    assert not torch.equal(fp32_sdpa, fp32_eager)
    torch.testing.assert_close(fp32_sdpa, fp32_eager, atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- the benchmark's bookkeeping (not its timings)


@pytest.fixture(scope="module")
def bench():
    return benchmark_script("bench_train")


def test_bench_masks_as_training_does_seeded(bench, tokenizer):
    """The benchmark masks with hf_minattn.masking (transformers' collator, our generator), as run_mlm.py does."""
    from transformers import DataCollatorForLanguageModeling

    masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    blocks = torch.randint(5, len(tokenizer), (64, 128))
    blocks[:, 0], blocks[:, -1] = 2, 3
    a = bench.mask_blocks(masker, blocks, torch.Generator().manual_seed(0))
    b = bench.mask_blocks(masker, blocks, torch.Generator().manual_seed(0))
    c = bench.mask_blocks(masker, blocks, torch.Generator().manual_seed(1))
    assert not torch.equal(a[1], c[1])
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    inputs, labels = a
    labelled = labels != -100
    assert 0.13 < labelled.float().mean() < 0.17
    assert not labelled[:, 0].any() and not labelled[:, -1].any()  # [CLS] and [SEP] are never predicted
    assert torch.equal(labels[labelled], blocks[labelled])
    assert 0.75 < (inputs[labelled] == 4).float().mean() < 0.85  # 80% [MASK]


def test_bench_table_and_skipped_precision(bench):
    """One row per model; each peer's row holds MinAttn's speed-up against it, read from its own ratios (not the ratio
    of the tok/s columns), and inference tok/s carries its interquartile range."""
    model = {"train_tokens_per_s": 1000.0, "infer_tokens_per_s": 3000.0, "infer_tokens_per_s_iqr": [2900.0, 3100.0],
             "mfu": 0.2,
             "memory": {"train_peak_mb": 500.0}, "eval_loss": 7.0}
    report = {"results": {
        "fp32": {"models": {"minattn": model, "bert": model, "modernbert": model},
                 "ratios": {"train_speedup": 1.5, "train_speedup_quiet": 1.6, "quiet_steps": 3, "infer_speedup": 1.0,
                            "train_speedup_vs_modernbert": 1.2, "train_speedup_quiet_vs_modernbert": 1.3,
                            "infer_speedup_vs_modernbert": 0.9}},
        "bf16": {"skipped": "bf16 is emulated on this CPU"},
    }}
    table = bench.markdown_table(report)
    assert "| fp32 | MinAttnForMaskedLM | 1000 |  |  | 3000 (2900-3100) |  | 20% |" in table
    assert "| fp32 | BertForMaskedLM | 1000 | 1.50x | 1.60x (3 steps) | 3000 (2900-3100) | 1.00x |" in table
    report["results"]["fp32"]["ratios"]["infer_speedup_interval"] = [0.98, 1.03]  # a report since the intervals
    assert "| 1.60x (3 steps) | 3000 (2900-3100) | 1.00x [0.98, 1.03] |" in bench.markdown_table(report)
    assert "| fp32 | ModernBertForMaskedLM | 1000 | 1.20x | 1.30x (3 steps) | 3000 (2900-3100) | 0.90x |" in table
    assert "skipped: bf16 is emulated" in table


def test_the_median_interval_is_the_binomial_order_statistics(bench):
    """Distribution-free: for n values the ranks come from Binomial(n, 1/2) alone (24 ratios: the 7th and the 18th,
    coverage 1 - 2 P(B <= 6) = 97.7%), whatever the values; too few values for 95% give none."""
    from scipy.stats import binom

    assert bench.median_interval(list(range(1, 25))) == [7, 18]
    assert 1 - 2 * binom.cdf(6, 24, 0.5) >= 0.95 > 1 - 2 * binom.cdf(7, 24, 0.5)
    assert bench.median_interval([5.0, 1.0, 3.0, 2.0, 4.0, 6.0]) == [1.0, 6.0]  # 6 values: the extremes, 96.9%
    assert bench.median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # 5: the extremes cover only 93.8%
    ratios = [0.97, 0.99, 1.01, 1.02, 1.03, 1.04] * 4  # 24 rounds whose median is above 1, not told from it
    low, high = bench.median_interval(ratios)
    assert low < 1.0 < high and bench.median_interval([r + 0.05 for r in ratios])[0] > 1.0


def test_bench_modernbert_has_the_weights_of_the_others(bench):
    """ModernBERT's GLU of `glu_size` holds as many feed-forward weights as the plain feed-forward of the others (683
    for 1024 at hidden 256, the benchmark's full setting), and the FLOP count uses the widths the built models have."""
    sizes = dict(bench.QUICK_SIZES, ffn=1024, hidden=256)
    assert bench.glu_size(sizes) == 683
    modern = bench.build("modernbert", sizes)
    minattn = bench.build("minattn", sizes)
    assert modern.config.intermediate_size == 683 and modern.config.sparse_prediction
    encoder = lambda m: sum(p.numel() for n, p in m.named_parameters()  # noqa: E731
                            if p.dim() == 2 and "layers" in n and "embeddings" not in n)
    assert encoder(modern) == bench.matmul_params(sizes, "modernbert")[0]
    assert encoder(minattn) == bench.matmul_params(sizes, "minattn")[0]
    assert abs(encoder(modern) - encoder(minattn)) <= sizes["layers"] * sizes["hidden"]  # within one GLU unit a layer



def test_bench_levers_change_what_they_name(bench):
    """The candidate levers of `--levers` do what their rows say: the bias-free model has no nn.Linear bias left
    and computes something else; the rotary lever rotates in bf16 under autocast and leaves fp32 alone."""
    sizes = bench.QUICK_SIZES
    inputs = torch.randint(5, sizes["vocab"], (2, sizes["seq"]))
    shipped = bench.build("minattn", sizes)
    biased = [m for m in shipped.modules() if isinstance(m, torch.nn.Linear) and m.bias is not None]
    assert len(biased) >= 4 * sizes["layers"]
    bias_free = bench.without_linear_biases(bench.build("minattn", sizes))
    assert all(m.bias is None for m in bias_free.modules() if isinstance(m, torch.nn.Linear))
    with torch.no_grad():
        for m in (m for m in shipped.modules() if isinstance(m, torch.nn.Linear) and m.bias is not None):
            m.bias.normal_()  # trained biases are not 0: the variant must differ
        assert not torch.allclose(shipped(input_ids=inputs).logits, bias_free(input_ids=inputs).logits)

    rotary = bench.rotary_in_compute_dtype(bench.build("minattn", sizes)).minattn.rotary
    assert rotary(8, torch.float32)[0].dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cos, sin = rotary(8, torch.float32)
    assert cos.dtype == sin.dtype == torch.bfloat16


def test_bench_rounds_put_every_model_in_every_position_equally_often(bench):
    """The inference rounds take the models in every order in turn: over the 6 orders of three models each runs
    twice first, twice second and twice last (orders that only flip would keep the middle one in the middle); the
    times come back per model in round order."""
    common = importlib.import_module("bench_common")  # on the path once bench_train is loaded
    orders = common.balanced_orders(["a", "b", "c"], 6)
    assert len(set(orders)) == 6
    for position in range(3):
        assert sorted(order[position] for order in orders) == ["a", "a", "b", "b", "c", "c"]
    assert common.balanced_orders(["a", "b"], 3) == [("a", "b"), ("b", "a"), ("a", "b")]
    calls = []
    runs = {name: (lambda name=name: calls.append(name) or len(calls)) for name in "abc"}
    times = common.round_robin_times(runs, 6)
    assert calls[:3] == ["a", "b", "c"] and len(calls) == 3 + 18  # one warm-up round, not timed
    assert times["a"] == [calls.index("a", 3 + 3 * r) + 1 for r in range(6)]


def test_bench_default_schedule_puts_every_model_in_every_position_equally_often_in_the_timed_steps(bench):
    """With the default flags the timed training steps (those after the warm-up) and the inference rounds take each
    order of the models equally often, for three models and for two; the warm-up steps come first and the timed ones
    start a cycle of their own. (The old schedule ran one cycle over all 60 steps and left out the first 5: 9 or 10
    of each order in the 55 timed steps, so each model 18, 18 and 19 times in the three positions.)"""
    import itertools
    from collections import Counter

    common = importlib.import_module("bench_common")
    for models in ("minattn,bert,modernbert", "minattn,bert"):
        parser = bench.make_parser()
        args = parser.parse_args(["--device", "cpu", "--models", models])
        bench.check_args(parser, args)
        orders = common.training_orders(args.models, args.steps, args.warmup)
        assert len(orders) == args.steps and args.steps - args.warmup >= 50
        assert orders[:args.warmup] == common.balanced_orders(args.models, args.warmup)
        for schedule in (orders[args.warmup:], common.balanced_orders(args.models, args.infer_repeats)):
            assert set(schedule) == set(itertools.permutations(args.models))
            assert len(set(Counter(schedule).values())) == 1  # each order equally often
            for position in range(len(args.models)):
                assert len(set(Counter(order[position] for order in schedule).values())) == 1
    timed = common.training_orders(["a", "b", "c"], 65, 5)[5:]  # the warm-up does not shift the timed cycle
    assert timed == common.balanced_orders(["a", "b", "c"], 60)


def test_bench_rotary_inference_times_the_two_table_dtypes_it_names(bench, tmp_path, monkeypatch):
    """bench_rotary_inference.py's "before" path turns queries and keys with fp32 tables under bf16 autocast, its
    "now" path (the model in eval mode) with bf16 ones, and in fp32 both use fp32 tables; its record holds the
    three models' medians and the paired ratios."""
    import json

    from hf_minattn import modeling_minattn

    rotary = importlib.import_module("bench_rotary_inference")  # benchmarks/ is on the path once bench_train is loaded
    tables = []
    original = modeling_minattn.apply_rotary
    monkeypatch.setattr(modeling_minattn, "apply_rotary",
                        lambda x, cos, sin: tables.append(cos.dtype) or original(x, cos, sin))  # records the tables
    model, inputs = bench.build("minattn", bench.QUICK_SIZES), torch.randint(5, 500, (2, 16))
    for fp32_tables, bf16, expected in ((True, True, torch.float32), (False, True, torch.bfloat16),
                                        (True, False, torch.float32), (False, False, torch.float32)):
        tables.clear()
        rotary.forward_seconds(model, inputs, bf16=bf16, fp32_tables=fp32_tables)
        assert tables == [expected] * bench.QUICK_SIZES["layers"], (fp32_tables, bf16)
    monkeypatch.undo()
    report = rotary.main(["--quick", "--rounds", "2", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "rotary-inference-quick.json").read_text())
    assert saved["precisions"].keys() == {"fp32", "bf16"} and saved["rounds"] == 2
    for result in report["precisions"].values():
        assert set(result["median_ms"]) == {rotary.NOW, rotary.BEFORE, "BERT"}
        assert all(ms > 0 for ms in result["median_ms"].values()) and result["now_over_before_speed"] > 0


def test_recipe_sweep_pairs_settings_by_seed(tmp_path):
    """Differences are taken seed by seed: a setting 0.1 nat better on every seed differs from the reference even
    though the seeds scatter by more than that; one no better on average does not."""
    import json

    sweep = benchmark_script("recipe_sweep")
    path = tmp_path / "runs.jsonl"
    base = {43: 0.8, 44: 1.0, 45: 0.9}
    runs = [("ref", base), ("better", {s: g + 0.1 + 0.01 * (s - 44) for s, g in base.items()}),
            ("same", {s: g + (0.05 if s == 43 else -0.05 if s == 44 else 0.0) for s, g in base.items()})]
    with open(path, "w") as f:
        for name, gains in runs:
            for seed, gain in gains.items():
                f.write(json.dumps({"name": f"{name}_seed{seed}", "eval_gain_over_unigram": gain,
                                    "eval_loss": 7.0 - gain, "train_tokens_per_second": 1000}) + "\n")
        f.write(json.dumps({"name": "pilot", "eval_gain_over_unigram": 5.0, "train_tokens_per_second": 1}) + "\n")
    rows = {line.split(" | ")[0].strip("| "): line for line in sweep.paired_table(str(path), "ref").splitlines()[2:]}
    assert set(rows) == {"ref", "better", "same"}  # the unseeded pilot is not a setting
    low, high = (float(x) for x in rows["better"].split(" | ")[3].split("[")[1].rstrip("]").split(", "))
    assert 0 < low < 0.1 < high
    low, high = (float(x) for x in rows["same"].split(" | ")[3].split("[")[1].rstrip("]").split(", "))
    assert low < 0 < high
    assert "+0.900" in rows["ref"].split(" | ")[2]
    # eval loss against the reference's at each seed, in percent: "better" is 0.1 nat lower on a loss near 6.1
    expected = 100 * np.mean([(7.0 - g - 0.1 - 0.01 * (s - 44)) / (7.0 - g) - 1 for s, g in base.items()])
    assert float(rows["better"].split(" | ")[4].split(" [")[0]) == pytest.approx(expected, abs=1e-3)
    assert rows["ref"].split(" | ")[4] == "-"
    with pytest.raises(ValueError, match="no runs named base_seedN"):
        sweep.paired_table(str(path), "base")


def test_bf16_precision_groups_the_fused_qkv_gradient_by_head_matrices():
    """benchmarks/bf16_precision.py reports errors per parameter group: the fused QKV gradient's rows split into
    W_Q, W_K, W_V as the model lays them out (`get_head_weights`), and a relative error of 0 only for equal gradients."""
    precision = benchmark_script("bf16_precision")
    model = MinAttnForMaskedLM(tiny_config(hidden_size=32))
    input_ids, labels = batch()
    model(input_ids, labels=labels).loss.backward()
    fp32 = precision.grouped({n: p.grad for n, p in model.named_parameters() if p.grad is not None}, 32)
    assert set(fp32) == {"embeddings", "W_Q", "W_K", "W_V", "W_O", "feed-forward", "norms", "head"}
    qkv = model.minattn.layers[0].attention.qkv_proj.weight.grad  # (3C, C): rows [0:C) W_Q, [C:2C) W_K, [2C:3C) W_V
    for i, which in enumerate(("W_Q", "W_K", "W_V")):
        assert torch.equal(fp32[which][: 32 * 32], qkv[i * 32:(i + 1) * 32].flatten())  # layer 0's weight comes first
    layers = len(model.minattn.layers)
    assert fp32["W_Q"].numel() == layers * (32 * 32 + 32)  # weight and bias rows of W_Q, every layer
    assert precision.relative_error(fp32, fp32) == {k: 0.0 for k in fp32}
    shifted = {k: v * 1.01 for k, v in fp32.items()}
    assert all(abs(e - 0.01) < 1e-6 for e in precision.relative_error(shifted, fp32).values())


@pytest.mark.parametrize("script, argv, message", [
    ("bench_train.py", ["--quick", "--profile"], "--profile profiles the lever batches"),
    ("bench_train.py", ["--quick", "--batch", "0"], "--batch must be at least 1, got 0"),
    ("recipe_sweep.py", ["--paired", "fp32", "--verdict", "bf16", "--tolerance", "0"], "--tolerance must be a positive"),
    ("bf16_precision.py", ["--grad-batches", "1"], "--grad-batches must be at least 2"),
    ("bench_rotary_inference.py", ["--rounds", "0"], "--rounds must be at least 1, got 0"),
    ("bf16_precision.py", ["--checkpoints", "60,0"], "--checkpoints must be steps >= 0 in increasing order"),
])
def test_benchmark_scripts_reject_bad_flags_by_name(script, argv, message, capsys):
    """Before any data is loaded or model trained, the bad flag is named (argparse's exit 2)."""
    with pytest.raises(SystemExit) as exit:
        benchmark_script(script.removesuffix(".py")).main(argv)
    error = capsys.readouterr().err
    assert exit.value.code == 2 and message in error, error[-500:]


def test_equal_step_verdict_is_chosen_by_the_numbers(tmp_path):
    """The bf16 equal-step sentence follows the losses: within the tolerance passes, a steady offset fails as worse,
    and a seed that differs by more than every seed of the control is named."""
    import json

    sweep = benchmark_script("recipe_sweep")
    reference = {0: 6.0, 1: 6.1, 2: 6.2}

    def verdict(candidate: dict, control: dict | None = None) -> str:
        path = tmp_path / "runs.jsonl"
        with open(path, "w") as f:
            for name, losses in (("fp32", reference), ("bf16", candidate), ("noise", control or {})):
                for seed, loss in losses.items():
                    f.write(json.dumps({"name": f"{name}_seed{seed}", "eval_loss": loss, "eval_gain_over_unigram": 7 - loss,
                                        "train_tokens_per_second": 1}) + "\n")
        return sweep.equal_step_verdict(str(path), "fp32", "bf16", "noise" if control else None)

    assert verdict({s: l * 1.002 for s, l in reference.items()}).startswith("Passes")
    worse = verdict({s: l * (1.03 + 0.001 * s) for s, l in reference.items()})
    assert worse.startswith("Fails") and "bf16 is worse" in worse and "+3.1%" in worse
    mixed = verdict({0: 6.0 * 1.016, 1: 6.1 * 0.996, 2: 6.2 * 1.087}, control={0: 6.0 * 1.017, 1: 6.1 * 0.996, 2: 6.2})
    assert mixed.startswith("Fails") and "wider than +-1%" in mixed
    assert "up to 1.7% on one seed; bf16 differs by up to 8.7%" in mixed and "seed(s) 2 (+8.7%)" in mixed
    calm = verdict({0: 6.0 * 1.016, 1: 6.1 * 0.996, 2: 6.2 * 1.01}, control={0: 6.0 * 1.017, 1: 6.1 * 0.996, 2: 6.2})
    assert "No seed of bf16 differs by more than the control's largest difference" in calm


@pytest.mark.slow
def test_bench_quick_run_end_to_end(bench, tmp_path, capsys):
    """`bench_train.py --quick` trains the three models on the same batches, times them side by side and writes its
    record: each speed-up is the median of the peer's over MinAttn's step time at the same step (inference: in the
    same round), recomputed here."""
    import json
    import statistics

    report = bench.main(["--quick", "--precision", "fp32", "--batch", "6", "--device", "cpu", "--out", str(tmp_path)])
    assert report["device"] == "cpu" and report["sizes"]["batch"] == 6
    result = report["results"]["fp32"]
    mine, bert, modern = result["models"]["minattn"], result["models"]["bert"], result["models"]["modernbert"]
    warmup = report["args"]["warmup"]
    paired = [o / m for m, o in zip(mine["train_step_s_all"][warmup:], modern["train_step_s_all"][warmup:])]
    assert result["ratios"]["train_speedup_vs_modernbert"] == pytest.approx(statistics.median(paired))
    assert len(mine["train_step_s_all"]) == len(bert["train_step_s_all"]) == report["args"]["steps"]
    paired = [b / m for m, b in zip(mine["train_step_s_all"][warmup:], bert["train_step_s_all"][warmup:])]
    assert result["ratios"]["train_speedup"] == pytest.approx(statistics.median(paired))
    assert len(mine["infer_s_all"]) == len(bert["infer_s_all"]) == report["args"]["infer_repeats"]
    paired = [b / m for m, b in zip(mine["infer_s_all"], bert["infer_s_all"])]
    assert result["ratios"]["infer_speedup"] == pytest.approx(statistics.median(paired))
    low, high = mine["infer_tokens_per_s_iqr"]
    assert low <= mine["infer_tokens_per_s"] <= high
    tokens = report["sizes"]["batch"] * report["sizes"]["seq"]
    assert mine["train_tokens_per_s"] == pytest.approx(tokens / statistics.median(mine["train_step_s_all"][warmup:]))
    for model in (mine, bert, modern):
        assert model["mfu"] > 0 and 0 < model["eval_loss"] < 20 and model["memory"]["train_peak_mb"] > 0
    assert json.loads((tmp_path / "latest-quick.json").read_text())["results"]["fp32"]["ratios"] == result["ratios"]
    assert not (tmp_path / "latest.json").exists()  # a smoke run never replaces the committed figures
    table = capsys.readouterr().out
    assert f"| fp32 | BertForMaskedLM | {bert['train_tokens_per_s']:.0f} | {result['ratios']['train_speedup']:.2f}x" in table
    assert (f"| fp32 | ModernBertForMaskedLM | {modern['train_tokens_per_s']:.0f} | "
            f"{result['ratios']['train_speedup_vs_modernbert']:.2f}x") in table


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_bench_quick_run_on_a_gpu(bench, tmp_path):
    """On a GPU the models, the batches and the matmul peak are on the GPU, memory is the GPU's, and the record goes
    to latest-cuda-quick.json, never over the CPU's figures."""
    import json

    torch.cuda.reset_peak_memory_stats()
    report = bench.main(["--quick", "--out", str(tmp_path)])
    assert report["device"] == "cuda" and torch.cuda.max_memory_allocated() > 0
    for precision in ("fp32", "bf16"):
        for model in report["results"][precision]["models"].values():
            assert model["mfu"] > 0 and model["memory"]["train_peak_mb"] > 0 and "peak_gpu_mb" in model["memory"]
    assert json.loads((tmp_path / "latest-cuda-quick.json").read_text())["device"] == "cuda"
    assert not (tmp_path / "latest-quick.json").exists()
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--levers", "--profile", "--out", str(tmp_path)])  # the profile is the CPU's step
