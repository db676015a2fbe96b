"""Loss Change Allocation (hf_minattn/loss_allocation.py): the integrator against closed forms, the callback on a
hand-made training loop, and tiny run_mlm.py runs (the JSON, frozen embeddings, no effect on training, resume; marked
slow: five training runs)."""

import json
import shutil
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file
from torch import nn
from torch.func import functional_call

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.loss_allocation import (LOSS_ALLOCATION_FILE, LossAllocationCallback, allocate_segment, group_sums,
                                        parameter_group, read_loss_allocation)
from hf_minattn.run_mlm import main, parse_args

from conftest import tiny_config
from helpers_training import read_json, tiny_argv

# ---------------------------------------------------------------- the integrator: known answers


class Quadratic(nn.Module):
    """L(θ) = ½ θᵀAθ + bᵀθ, θ the concatenation of a (2, 3) "weight" and a (4,) "bias"; A symmetric."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2, 3, dtype=torch.float64))
        self.bias = nn.Parameter(torch.randn(4, dtype=torch.float64))
        M = torch.randn(10, 10, dtype=torch.float64)
        self.register_buffer("A", M + M.T)  # indefinite: the path is no descent, the answer must hold anyway
        self.register_buffer("b", torch.randn(10, dtype=torch.float64))

    def forward(self):
        theta = torch.cat([self.weight.flatten(), self.bias])  # (10,)
        return 0.5 * theta @ self.A @ theta + self.b @ theta


def flat(params) -> torch.Tensor:
    return torch.cat([params["weight"].flatten(), params["bias"]])  # (10,), the order of Quadratic.forward


def test_simpson_is_exact_on_a_quadratic_loss():
    model = Quadratic()
    loss_fn = lambda params: functional_call(model, params, ())  # noqa: E731
    start = {name: p.detach().clone() for name, p in model.named_parameters()}
    end = {name: p + torch.randn_like(p) for name, p in start.items()}
    segment = allocate_segment(loss_fn, start, end)

    theta0, delta = flat(start), flat(end) - flat(start)
    # ∫_0^1 Δ_i (A(θ0 + sΔ) + b)_i ds = Δ_i (Aθ0 + b)_i + ½ Δ_i (AΔ)_i
    expected = delta * (model.A @ theta0 + model.b) + 0.5 * delta * (model.A @ delta)
    assert torch.allclose(flat(segment.allocation), expected, rtol=0, atol=1e-12)
    assert segment.allocation["weight"].shape == (2, 3)
    assert segment.start.loss == pytest.approx(loss_fn(start).item(), abs=1e-12)
    assert segment.allocated == pytest.approx(loss_fn(end).item() - loss_fn(start).item(), abs=1e-12)
    assert segment.allocated == pytest.approx(segment.observed, abs=1e-12)


def test_simpson_is_exact_on_a_quartic_loss_where_the_trapezoid_is_not():
    """L(θ) = Σ θ_i⁴ / 4: the gradient θ³ is cubic along the path, which Simpson's rule (RK4) integrates exactly:
    coordinate i gets (θ1_i⁴ − θ0_i⁴) / 4. The trapezoid rule (gradients at the ends only) would not."""
    loss_fn = lambda params: (params["x"] ** 4).sum() / 4  # noqa: E731
    start = {"x": torch.randn(7, dtype=torch.float64)}
    end = {"x": start["x"] + torch.randn(7, dtype=torch.float64)}
    allocation = allocate_segment(loss_fn, start, end).allocation["x"]
    expected = (end["x"] ** 4 - start["x"] ** 4) / 4
    assert torch.allclose(allocation, expected, rtol=0, atol=1e-12)
    trapezoid = (end["x"] - start["x"]) * (start["x"] ** 3 + end["x"] ** 3) / 2
    assert not torch.allclose(trapezoid, expected, atol=1e-3)


def test_the_start_point_of_a_segment_is_reused():
    calls = []

    def loss_fn(params):
        calls.append(1)
        return (params["x"] ** 2).sum()

    first = allocate_segment(loss_fn, {"x": torch.zeros(3)}, {"x": torch.ones(3)})
    assert len(calls) == 3
    allocate_segment(loss_fn, {"x": torch.ones(3)}, {"x": torch.full((3,), 2.0)}, at_start=first.end)
    assert len(calls) == 5  # two gradient evaluations per interval


# ---------------------------------------------------------------- groups


def test_every_parameter_has_its_group_and_layer():
    names = dict(MinAttnForMaskedLM(tiny_config(tie_word_embeddings=False)).named_parameters())
    table = {name: parameter_group(name) for name in names}
    assert table["minattn.embeddings.word_embeddings.weight"] == ("word_embeddings", "embeddings")
    assert table["minattn.embeddings.position_embeddings.weight"] == ("position_embeddings", "embeddings")
    assert table["minattn.layers.1.attention.o_proj.bias"] == ("W_O", "1")
    assert table["minattn.layers.0.mlp.down_proj.weight"] == ("feed_forward", "0")
    assert table["minattn.layers.0.mlp_norm.weight"] == ("layer_norms", "0")
    assert table["minattn.final_norm.bias"] == ("layer_norms", "final_norm")
    assert table["lm_head.dense.weight"] == table["lm_head.norm.bias"] == ("head_transform", "head")
    assert table["lm_head.decoder.weight"] == ("output_weights", "head")
    assert table["lm_head.bias"] == ("output_bias", "head")
    assert ("other", "other") not in table.values()
    assert parameter_group("classifier.weight") == ("other", "other")  # kept in the sum, never dropped


def test_the_fused_qkv_is_shared_out_by_thirds_of_rows():
    C = 36
    weight = torch.cat([torch.full((C, C), 1.0), torch.full((C, C), 2.0), torch.full((C, C), 3.0)])  # (3C, C)
    bias = torch.cat([torch.full((C,), 10.0), torch.full((C,), 20.0), torch.full((C,), 30.0)])  # (3C,)
    groups, layers = group_sums({"minattn.layers.0.attention.qkv_proj.weight": weight,
                                 "minattn.layers.0.attention.qkv_proj.bias": bias})
    assert groups == {"W_Q": C * C + 10 * C, "W_K": 2 * C * C + 20 * C, "W_V": 3 * C * C + 30 * C}
    assert layers == {"0": weight.sum().item() + bias.sum().item()}


# ---------------------------------------------------------------- the callback on a hand-made loop


def fixed_batch():
    input_ids = torch.randint(5, 99, (4, 12))  # (B, T)
    labels = torch.full_like(input_ids, -100)
    labels[:, ::3] = input_ids[:, ::3]
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels}


def test_callback_leaves_weights_grads_and_mode_alone(tmp_path):
    """Dropout on, a training loop of SGD steps: the callback's intervals add up to the observed change (eval mode:
    no dropout in its losses), and the weights, the .grad buffers and train mode come back exactly as they were."""
    model = MinAttnForMaskedLM(tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)).train()
    batch = fixed_batch()
    callback = LossAllocationCallback(model, batch, every=2)
    args, state = SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(global_step=0, is_world_process_zero=True)
    control = SimpleNamespace(should_save=False)
    callback.on_train_begin(args, state, control)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(5):
        model(**batch).loss.backward()
        optimizer.step()
        state.global_step += 1
        before = {name: p.detach().clone() for name, p in model.named_parameters()}
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}  # left in place on purpose
        callback.on_step_end(args, state, control)
        assert model.training
        for name, p in model.named_parameters():
            assert torch.equal(p, before[name]) and torch.equal(p.grad, grads[name]), name
        optimizer.zero_grad()
    callback.on_train_end(args, state, control)

    assert [(r["step_start"], r["step_end"]) for r in callback.records] == [(0, 2), (2, 4), (4, 5)]
    for record in callback.records:
        assert record["observed"] < 0  # plain gradient steps on this very batch
        assert abs(record["error"]) < 1e-2 * abs(record["observed"])  # seen: 2e-3
    with torch.no_grad():
        model.eval()
        final_loss = model(**batch).loss.item()
    assert callback.records[-1]["loss_end"] == pytest.approx(final_loss, abs=1e-6)
    assert (tmp_path / LOSS_ALLOCATION_FILE).is_file()


def test_the_error_on_a_real_model_is_the_quadrature_error():
    """On a tiny MinAttn, two SGD steps: the error |allocated − observed| falls by more than 8 when the segment is
    cut in two halves (seen: 3.4e-4 -> 1.6e-5, about the 16 of a fourth-order rule), so it is Simpson's error, not
    a bookkeeping one."""
    model = MinAttnForMaskedLM(tiny_config()).eval()
    batch = fixed_batch()
    loss_fn = lambda params: functional_call(model, params, (), batch).loss  # noqa: E731
    start = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(2):
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    end = {name: p.detach().clone() for name, p in model.named_parameters()}
    middle = {name: (start[name] + end[name]) / 2 for name in start}
    whole = allocate_segment(loss_fn, start, end)
    first = allocate_segment(loss_fn, start, middle)
    second = allocate_segment(loss_fn, middle, end, at_start=first.end)
    halves_error = first.allocated + second.allocated - whole.observed
    assert abs(whole.allocated - whole.observed) > 8 * abs(halves_error)


def test_every_must_be_at_least_one():
    with pytest.raises(ValueError, match="got 0"):
        LossAllocationCallback(MinAttnForMaskedLM(tiny_config()), fixed_batch(), every=0)


# ---------------------------------------------------------------- run_mlm.py


def test_every_zero_is_refused_by_the_script(tmp_path):
    with pytest.raises(ValueError, match="--loss_allocation_every must be at least 1, got 0"):
        parse_args(tiny_argv(tmp_path, loss_allocation=True, loss_allocation_every=0))
    with pytest.raises(ValueError, match="--loss_allocation_samples must be at least 1, got -2"):
        parse_args(tiny_argv(tmp_path, loss_allocation=True, loss_allocation_samples=-2))


def run_args(out, tokenizer_dir, text_files, **overrides):
    return tiny_argv(out, tokenizer_dir, train_file=text_files / "train.txt",
                     validation_file=text_files / "validation.txt", report_to="none", save_steps=4, logging_steps=4,
                     **overrides)


@pytest.fixture(scope="module")
def allocated(tokenizer_dir, text_files, tmp_path_factory):
    """8 steps with --loss_allocation (every step, at most 32 validation sequences: the tiny run keeps 20;
    checkpoints at 4 and 8)."""
    out = tmp_path_factory.mktemp("lca") / "model"
    main(run_args(out, tokenizer_dir, text_files, loss_allocation=True, loss_allocation_samples=32))
    return out


# What the tiny run measured (fp32, AdamW at lr 1e-3, observed changes 0.005 to 0.02 nats per interval): per interval
# |error| at most 1.3e-5 nats, total relative error 1.3e-4. The test allows about 100 times that.
INTERVAL_TOLERANCE = 1e-3  # nats
RELATIVE_TOLERANCE = 1e-2


@pytest.mark.slow
def test_the_allocations_add_up_to_the_observed_change(allocated):
    data = read_json(allocated / LOSS_ALLOCATION_FILE)
    records = data["records"]
    assert [(r["step_start"], r["step_end"]) for r in records] == [(i, i + 1) for i in range(8)]
    assert data["every"] == 1 and data["tied_word_embeddings"] is True
    assert data["batch"]["sequences"] == 20  # max_eval_samples: fewer than asked for
    assert data["groups"] == ["word_embeddings", "position_embeddings", "W_Q", "W_K", "W_V", "W_O", "layer_norms",
                              "feed_forward", "output_bias", "head_transform"]
    assert data["layers"] == ["embeddings", "0", "1", "final_norm", "head"]
    for record, following in zip(records, records[1:]):
        assert following["loss_start"] == record["loss_end"]  # one path, end to end
    for record in records:
        assert record["allocated"] == pytest.approx(sum(record["groups"].values()), abs=1e-12)
        assert record["allocated"] == pytest.approx(sum(record["layers"].values()), abs=1e-12)
        assert abs(record["error"]) < INTERVAL_TOLERANCE
        assert record["groups"]["word_embeddings"] != 0
    history = read_loss_allocation(allocated)
    print(f"per-interval |error| max {max(map(abs, history.errors)):.2e}, observed {history.loss_change:.4f}, "
          f"total relative error {history.relative_error:.2e}")
    assert history.relative_error < RELATIVE_TOLERANCE
    assert history.loss_change < 0  # training lowered the loss on the held-out batch
    assert history.steps == list(range(9))
    assert history.observed[-1] == pytest.approx(records[-1]["loss_end"] - records[0]["loss_start"], abs=1e-6)
    assert all(curve[0] == 0 and curve[-1] == pytest.approx(history.totals[group], abs=1e-12)
               for group, curve in history.groups.items())
    assert abs(sum(history.totals.values()) - history.loss_change) < RELATIVE_TOLERANCE * abs(history.loss_change)
    assert history.totals == pytest.approx(data["totals"]["groups"])


@pytest.mark.slow
def test_the_callback_does_not_change_training(allocated, tokenizer_dir, text_files, tmp_path):
    # The tiny preset trains with dropout 0.1: a callback that drew from the global RNG would show here too.
    plain = tmp_path / "plain"
    main(run_args(plain, tokenizer_dir, text_files))
    assert not (plain / LOSS_ALLOCATION_FILE).exists()
    with_callback, without = load_file(allocated / "model.safetensors"), load_file(plain / "model.safetensors")
    assert with_callback.keys() == without.keys()
    assert all(torch.equal(with_callback[name], without[name]) for name in without)


@pytest.mark.slow
def test_frozen_embeddings_get_exactly_nothing(tokenizer_dir, text_files, tmp_path):
    """--freeze_embeddings, untied output weights, no W_Q/W_K/W_V (identity), every 2 steps over 3: a last, shorter
    interval."""
    out = tmp_path / "frozen"
    main(run_args(out, tokenizer_dir, text_files, max_steps=3, loss_allocation=True, loss_allocation_every=2,
                  freeze_embeddings=True, config_overrides="qkv_projection=identity,tie_word_embeddings=false"))
    data = read_json(out / LOSS_ALLOCATION_FILE)
    assert data["tied_word_embeddings"] is False
    assert "W_Q" not in data["groups"] and "output_weights" in data["groups"]
    assert [(r["step_start"], r["step_end"]) for r in data["records"]] == [(0, 2), (2, 3)]
    for record in data["records"]:
        assert record["groups"]["word_embeddings"] == 0 and record["groups"]["position_embeddings"] == 0
        assert record["groups"]["output_weights"] != 0 and record["groups"]["W_O"] != 0
        # Its first interval spans two of Adam's first steps (a 0.05-nat drop on the default corpus, larger than the
        # every-step run's): the straight-line allocation is then held to the observed change, within 5%.
        assert abs(record["error"]) < max(INTERVAL_TOLERANCE, 0.05 * abs(record["observed"]))


@pytest.mark.slow
def test_resume_keeps_the_records_up_to_the_checkpoint(allocated, tokenizer_dir, text_files, tmp_path):
    """A copy of the finished run with its last checkpoint and its final trainer state removed (a run killed after
    step 4) resumes from step 4: the records of steps 0-4 are kept as they were, 4-8 computed again, as in the
    uninterrupted run."""
    out = tmp_path / "resumed"
    shutil.copytree(allocated, out)
    shutil.rmtree(out / "checkpoint-8")
    (out / "trainer_state.json").unlink()  # written last: with it the folder holds a finished run
    stale = read_json(out / LOSS_ALLOCATION_FILE)
    for record in stale["records"][4:]:  # what the resumed run must replace
        record["observed"] = 123.0
    (out / LOSS_ALLOCATION_FILE).write_text(json.dumps(stale))
    main(run_args(out, tokenizer_dir, text_files, loss_allocation=True, resume=True))
    reference = read_json(allocated / LOSS_ALLOCATION_FILE)["records"]
    records = read_json(out / LOSS_ALLOCATION_FILE)["records"]
    assert [(r["step_start"], r["step_end"]) for r in records] == [(r["step_start"], r["step_end"]) for r in reference]
    assert records[:4] == stale["records"][:4]
    for record, expected in zip(records[4:], reference[4:]):
        assert record["observed"] == pytest.approx(expected["observed"], abs=1e-5)
        assert record["groups"]["word_embeddings"] == pytest.approx(expected["groups"]["word_embeddings"], abs=1e-5)


def test_the_experiments_summary_reads_totals_and_half_steps(tmp_path):
    """By hand: three intervals of 4 steps; the output bias lowers the loss by 0.6, 0.2, 0.2 (half of its 1.0 by step
    4), W_Q by 0.1, 0.1, 0.3 and W_O by 0.0, 0.1, 0.2 (attention: 0.1, 0.3, 0.8 of 0.8: half by step 12)."""
    from hf_minattn.experiments.evaluation import half_step, loss_allocation_summary

    parts = [{"output_bias": -0.6, "W_Q": -0.1, "W_O": 0.0}, {"output_bias": -0.2, "W_Q": -0.1, "W_O": -0.1},
             {"output_bias": -0.2, "W_Q": -0.3, "W_O": -0.2}]
    records = [{"step_start": 4 * i, "step_end": 4 * i + 4, "observed": sum(p.values()) + 0.01,
                "allocated": sum(p.values()), "error": -0.01, "groups": p, "layers": {"0": sum(p.values())}}
               for i, p in enumerate(parts)]
    (tmp_path / LOSS_ALLOCATION_FILE).write_text(json.dumps(
        {"every": 4, "batch": {"sequences": 2, "masked_tokens": 9, "source": "test"}, "tied_word_embeddings": False,
         "groups": ["output_bias", "W_Q", "W_O"], "layers": ["0"], "records": records}))
    summary = loss_allocation_summary(str(tmp_path))
    assert summary["loss_change"] == pytest.approx(-1.77) and summary["intervals"] == 3 and summary["every"] == 4
    assert summary["groups"]["output_bias"] == pytest.approx(-1.0) and summary["groups"]["attention"] == pytest.approx(-0.8)
    assert summary["half_step"] == {"output_bias": 4, "W_Q": 12, "W_O": 12, "attention": 12}
    assert summary["relative_error"] == pytest.approx(0.03 / 1.77)
    assert summary["curve"]["steps"] == [0, 4, 8, 12]
    assert summary["curve"]["groups"]["output_bias"] == pytest.approx([0, -0.6, -0.8, -1.0])
    assert half_step([0, 1, 2], [0, 0, 0]) is None and loss_allocation_summary(str(tmp_path / "none")) is None
