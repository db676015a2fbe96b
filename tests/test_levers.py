"""The training-recipe levers: rotary positions, the W_Q/W_K initialisation, learned QKV started at the identity,
the word-level tokenizer and the unigram floor."""

import math

import numpy as np
import pytest
import torch

from conftest import TEXTS, tiny_config
from hf_minattn import MinAttnConfig, MinAttnForMaskedLM, MinAttnModel, train_tokenizer
from hf_minattn.modeling_minattn import apply_rotary, rope_inverse_frequencies
from hf_minattn.unigram import UnigramFloor


def reference_rope(x: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """RoFormer's formula written with complex numbers: channel pair (i, i + D/2) of the vector at position m is
    the complex number x_i + j x_{i+D/2}, multiplied by exp(j m theta^(-2i/D))."""
    T, D = x.shape[-2], x.shape[-1]
    pairs = torch.complex(x[..., : D // 2].double(), x[..., D // 2 :].double())
    angles = torch.arange(T, dtype=torch.float64)[:, None] * theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    rotated = pairs * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([rotated.real, rotated.imag], dim=-1).float()


def rope_tables(T, D, theta=10000.0):
    """The model's own cos/sin tables (its `MinAttnRotaryEmbedding`, as the forward pass builds them) for head dim D."""
    model = MinAttnModel(tiny_config(position_embedding_type="rope", hidden_size=4 * D, rope_theta=theta))
    return model.rotary(T, torch.float32)


def test_rope_matches_the_complex_rotation_formula():
    x = torch.randn(2, 3, 11, 8)  # (B, H, T, D)
    assert torch.allclose(apply_rotary(x, *rope_tables(11, 8)), reference_rope(x), atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rope_in_place_halves_give_the_concatenated_form_to_the_last_bit(dtype):
    # x cos + rotate_half(x) sin with rotate_half = (-x2, x1) built as a new tensor, the sum fused into the product
    # (addcmul) as the model computed it before: trained checkpoints give the same outputs as then.
    def concatenated(x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.addcmul(x * cos, torch.cat((-x2, x1), dim=-1), sin)

    qkv = torch.randn(3, 11, 3, 2, 8, dtype=dtype)  # (B, T, 3, H, D) as the attention's fused projection gives it
    cos, sin = (table.to(dtype)[:, None, None] for table in rope_tables(11, 8))  # (T, 1, 1, D)
    ours, textbook = (qkv[:, :, :2].clone().requires_grad_(True) for _ in range(2))  # queries and keys
    grad = torch.randn(3, 11, 2, 2, 8, dtype=dtype)
    rotated, expected = apply_rotary(ours, cos, sin), concatenated(textbook, cos, sin)
    rotated.backward(grad), expected.backward(grad)
    assert torch.equal(rotated, expected) and torch.equal(ours.grad, textbook.grad)
    assert not torch.equal(rotated, ours.detach())  # it did turn them


def test_rope_turns_in_bf16_at_inference_under_autocast_and_in_fp32_in_training(monkeypatch):
    """At inference (eval mode) under bf16 autocast, queries and keys are turned in bf16, the dtype the attention's
    products read, not promoted to fp32 by fp32 tables; training keeps fp32 tables, and fp32 stays fp32."""
    from hf_minattn import modeling_minattn

    turned = []
    original = modeling_minattn.apply_rotary

    def recording(x, cos, sin):
        turned.append((x.dtype, cos.dtype))
        return original(x, cos, sin)

    monkeypatch.setattr(modeling_minattn, "apply_rotary", recording)
    model = MinAttnForMaskedLM(tiny_config(position_embedding_type="rope", hidden_size=32))  # no dropout
    ids = torch.randint(5, model.config.vocab_size, (2, 9))

    def turn_dtypes(training, bf16):
        turned.clear()
        model.train(training)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=ids).logits
        assert len(turned) == model.config.num_hidden_layers
        return set(turned), logits.float()

    bf16 = torch.bfloat16
    assert turn_dtypes(training=False, bf16=True)[0] == {(bf16, bf16)}
    assert turn_dtypes(training=True, bf16=True)[0] == {(bf16, torch.float32)}  # promoted: one rounding
    (fp32_eval, reference), (fp32_train, same) = turn_dtypes(False, False), turn_dtypes(True, False)
    assert fp32_eval == fp32_train == {(torch.float32, torch.float32)} and torch.equal(reference, same)
    fast = turn_dtypes(training=False, bf16=True)[1]
    assert torch.allclose(fast, reference, atol=0.05 * reference.abs().max().item())  # bf16 noise, not another model


def test_rope_dot_products_depend_only_on_relative_position():
    D, T = 16, 40
    q, k = torch.randn(D), torch.randn(D)
    cos, sin = rope_tables(T, D)
    rotated_q = apply_rotary(q.expand(T, D), cos, sin)  # q placed at every position
    rotated_k = apply_rotary(k.expand(T, D), cos, sin)
    logits = rotated_q @ rotated_k.T  # (T, T): query at m, key at n
    for offset in (-7, 0, 3, 12):
        diagonal = torch.diagonal(logits, offset=offset)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-4), offset
    assert not torch.allclose(torch.diagonal(logits, 1)[0], torch.diagonal(logits, 5)[0], atol=1e-3)


def test_rope_tables_are_the_rotation_angles_m_theta_to_the_minus_2i_over_d():
    T, D, theta = 7, 8, 500.0
    cos, sin = rope_tables(T, D, theta)
    m, i = torch.arange(T, dtype=torch.float64)[:, None], torch.arange(D // 2, dtype=torch.float64)
    angles = m * theta ** (-2 * i / D)  # (T, D/2), written out independently of the model
    expected = torch.cat([angles, angles], dim=-1)  # channel pair (i, i + D/2) shares an angle
    assert torch.allclose(cos.double(), expected.cos(), atol=1e-6) and torch.allclose(sin.double(), expected.sin(), atol=1e-6)


def test_rope_attention_of_a_repeated_token_depends_only_on_relative_position():
    """With one token repeated, every position has the same vector, so under rope the score of query i on key j is
    g(j - i): log p(i, j) - log p(i, i) = g(j - i) - g(0) is the same along every diagonal, and not constant."""
    torch.manual_seed(0)
    model = MinAttnModel(tiny_config(position_embedding_type="rope", hidden_size=32, num_hidden_layers=1,
                                     qkv_projection="identity")).eval()
    with torch.no_grad():
        attention = model(torch.full((1, 20), 7), output_attentions=True).attentions[0][0]  # (H, T, T)
    log_p = attention.double().log()
    relative = log_p - torch.diagonal(log_p, dim1=-2, dim2=-1)[..., :, None]  # (H, T, T): g(j - i) - g(0)
    assert torch.allclose(relative[:, 1:, 1:], relative[:, :-1, :-1], atol=1e-4)  # shifting i and j together
    assert relative[:, 0, 1:].std() > 0.01  # positions do change the scores


def test_rope_model_sees_order_without_a_position_signal_in_its_vectors():
    model = MinAttnModel(tiny_config(position_embedding_type="rope", num_attention_heads=6, hidden_size=36)).eval()
    assert model.embeddings.position_embeddings is None  # nothing position-dependent is added to the tokens
    ids = torch.tensor([[5, 17, 23, 42, 8]])
    with torch.no_grad():
        forward, shuffled = model(ids).last_hidden_state, model(ids[:, [4, 2, 0, 3, 1]]).last_hidden_state
        bag = MinAttnModel(tiny_config(position_embedding_type="none", num_attention_heads=6, hidden_size=36)).eval()
        bag.load_state_dict(model.state_dict())
        bag_out, bag_shuffled = bag(ids).last_hidden_state, bag(ids[:, [4, 2, 0, 3, 1]]).last_hidden_state
    assert torch.allclose(bag_out[0, 0], bag_shuffled[0, 2], atol=1e-5)  # no positions: order-blind
    assert not torch.allclose(forward[0, 0], shuffled[0, 2], atol=1e-3)  # rope: order matters
    # Longer inputs than max_position_embeddings are fine: nothing is looked up by position.
    assert model(torch.randint(5, 99, (1, 40))).last_hidden_state.shape == (1, 40, 36)


def test_rope_survives_save_and_load_and_needs_an_even_head_dim(tmp_path):
    model = MinAttnForMaskedLM(tiny_config(position_embedding_type="rope", hidden_size=32, rope_theta=500.0)).eval()
    model.save_pretrained(tmp_path)
    loaded = MinAttnForMaskedLM.from_pretrained(tmp_path).eval()
    ids = torch.randint(5, 99, (2, 12))
    assert torch.equal(model(ids).logits, loaded(ids).logits)  # the inv_freq buffer is rebuilt, not garbage
    assert torch.allclose(loaded.minattn.rotary.inv_freq, rope_inverse_frequencies(8, 500.0))
    with pytest.raises(ValueError, match="head dimension .* must be even"):
        tiny_config(position_embedding_type="rope")  # 36 / 4 = 9


def test_rope_angles_come_from_fp32_frequencies_in_a_bf16_model(tmp_path):
    """Loaded in bf16 (built under that default dtype) or cast with `.to(torch.bfloat16)`, the model turns queries and
    keys by the same angles as in fp32: bf16 frequencies would put them ~0.2 rad off by position 127."""
    model = MinAttnForMaskedLM(tiny_config(position_embedding_type="rope", hidden_size=32,
                                           max_position_embeddings=128)).eval()
    model.save_pretrained(tmp_path)
    reference = model.minattn.rotary
    assert torch.equal(reference.inv_freq, rope_inverse_frequencies(8, 10000.0))  # fp32: as before, bit for bit
    tables = {dtype: reference(128, dtype) for dtype in (torch.float32, torch.bfloat16)}
    loaded = MinAttnForMaskedLM.from_pretrained(tmp_path, dtype=torch.bfloat16)
    cast = MinAttnForMaskedLM.from_pretrained(tmp_path).to(torch.bfloat16)
    for bf16_model in (loaded, cast):
        assert bf16_model.minattn.embeddings.word_embeddings.weight.dtype == torch.bfloat16
        for dtype, (cos, sin) in tables.items():
            got_cos, got_sin = bf16_model.minattn.rotary(128, dtype)
            assert torch.equal(got_cos, cos) and torch.equal(got_sin, sin)


@pytest.mark.parametrize("logit_std", [1.0, 0.05])
def test_qk_init_sets_the_scale_of_the_initial_attention_logits(logit_std):
    C = 256
    config = MinAttnConfig(hidden_size=C, num_hidden_layers=2, num_attention_heads=4, qk_logit_init_std=logit_std)
    attention = MinAttnModel(config).layers[0].attention
    weight = attention.qkv_proj.weight
    assert weight[: 2 * C].std().item() == pytest.approx(math.sqrt(logit_std / C), rel=0.05)
    assert weight[2 * C :].std().item() == pytest.approx(config.initializer_range, rel=0.05)  # W_V unchanged
    x = torch.nn.functional.layer_norm(torch.randn(8, 64, C), (C,))
    with torch.no_grad():
        q, k, _ = torch.nn.functional.linear(x, weight).view(8, 64, 3, 4, C // 4).permute(2, 0, 3, 1, 4)
        logits = q @ k.transpose(-1, -2) * attention.scaling
    assert logits.std().item() == pytest.approx(logit_std, rel=0.15)


def test_qk_init_does_not_touch_loaded_weights(tmp_path):
    model = MinAttnForMaskedLM(tiny_config(hidden_size=32))
    model.save_pretrained(tmp_path)
    loaded = MinAttnForMaskedLM.from_pretrained(tmp_path)
    assert torch.equal(loaded.minattn.layers[0].attention.qkv_proj.weight, model.minattn.layers[0].attention.qkv_proj.weight)


def test_learned_qkv_can_start_at_the_identity():
    config = tiny_config(qkv_init="identity")
    identity = MinAttnModel(tiny_config(qkv_projection="identity")).eval()
    learned = MinAttnModel(config).eval()
    weight = learned.layers[1].attention.qkv_proj.weight
    assert torch.equal(weight, torch.eye(36).repeat(3, 1)) and weight.requires_grad
    # At initialisation it is the identity model (same other weights): same outputs.
    state = {k: v for k, v in learned.state_dict().items() if "qkv_proj" not in k}
    identity.load_state_dict(state)
    ids = torch.randint(5, 99, (2, 7))
    with torch.no_grad():
        assert torch.allclose(learned(ids).last_hidden_state, identity(ids).last_hidden_state, atol=1e-5)
    with pytest.raises(ValueError, match="qkv_init='identity' initialises learned projections"):
        tiny_config(qkv_init="identity", qkv_projection="identity")


def test_word_level_tokenizer_keeps_whole_words_above_min_count():
    texts = ["the cat sat on the mat .", "the dog sat on the log .", "a zebra ."]
    tokenizer = train_tokenizer(texts, vocab_size=100, min_frequency=2, model="word", show_progress=False)
    vocab = set(tokenizer.get_vocab())
    assert {"the", "sat", "on", "."} <= vocab
    assert not vocab & {"cat", "zebra", "mat"}  # seen once
    assert not any(t.startswith("##") for t in vocab)
    assert tokenizer.tokenize("The cat sat.") == ["the", "[UNK]", "sat", "."]
    ids = tokenizer("the dog sat")["input_ids"]
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert tokenizer.decode(ids) == "[CLS] the [UNK] sat [SEP]"  # "dog" seen once: min count 2
    # The vocabulary cap keeps the most frequent words.
    capped = train_tokenizer(TEXTS, vocab_size=5 + 3, min_frequency=1, model="word", show_progress=False)
    assert set(capped.get_vocab()) - {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} == {"the", ".", "a"}
    with pytest.raises(ValueError, match="model must be one of"):
        train_tokenizer(texts, model="bpe")


def test_unigram_floor_is_the_smoothed_frequency_cross_entropy():
    floor = UnigramFloor.from_token_ids([[1, 1, 2], np.array([2, 1, 3])], vocab_size=5)
    counts = np.array([0, 3, 2, 1, 0])
    expected = np.log((counts + 1) / (6 + 5))
    assert floor.num_tokens == 6 and np.allclose(floor.log_probs, expected)
    assert floor.cross_entropy([1, 3]) == pytest.approx(-(expected[1] + expected[3]) / 2)
    assert floor.entropy() == pytest.approx(-(np.exp(expected) * expected).sum())
    # A distribution that matches the targets exactly beats a uniform guess.
    assert floor.cross_entropy([1, 1, 1, 2, 2, 3]) < math.log(5)
    with pytest.raises(ValueError, match="outside"):
        UnigramFloor.from_token_ids([[7]], vocab_size=5)
    with pytest.raises(ValueError, match="outside"):
        UnigramFloor.from_token_ids([[5]], vocab_size=5)
    with pytest.raises(ValueError, match="outside"):
        UnigramFloor.from_token_ids([[-1]], vocab_size=5)
    assert UnigramFloor.from_token_ids([[0, 4]], vocab_size=5).num_tokens == 2  # both ends of the range are ids
    with pytest.raises(ValueError, match="at least one"):
        floor.cross_entropy([])
    for label in (-100, 5):  # an unfiltered "no label", an id beyond the vocabulary: read silently before
        with pytest.raises(ValueError, match=rf"token id {label} is outside \[0, vocab_size=5\)"):
            floor.cross_entropy([1, label])


def test_unigram_floor_from_a_dataset_skips_special_tokens():
    import datasets

    data = datasets.Dataset.from_dict({"input_ids": [[2, 7, 7, 3], [2, 8, 3]],
                                       "special_tokens_mask": [[1, 0, 0, 1], [1, 0, 1]]})
    floor = UnigramFloor.from_dataset(data, vocab_size=10)
    assert floor.num_tokens == 3
    assert floor.log_probs[7] == pytest.approx(math.log(3 / 13)) and floor.log_probs[2] == pytest.approx(math.log(1 / 13))


def test_unigram_floor_without_a_special_tokens_column_counts_every_token_and_of_a_stream_the_first_sequences():
    import datasets

    plain = datasets.Dataset.from_dict({"input_ids": [[2, 7, 7, 3], [2, 8, 3]]})
    assert UnigramFloor.from_dataset(plain, vocab_size=10).num_tokens == 7
    stream = datasets.Dataset.from_dict({"input_ids": [[1, 2]] * 10}).to_iterable_dataset()
    assert UnigramFloor.from_dataset(stream, vocab_size=10, stream_sequences=4).num_tokens == 8
    long_stream = datasets.Dataset.from_dict({"input_ids": [[1]] * 10_050}).to_iterable_dataset()
    assert UnigramFloor.from_dataset(long_stream, vocab_size=10).num_tokens == 10_000  # the documented default


def test_rope_tables_come_in_the_dtype_asked_and_are_not_saved(tmp_path):
    """Under bf16 autocast the tables are cast to the activations' dtype (computed in fp32 first); `inv_freq` is
    recomputed at load, not stored in the checkpoint."""
    config = tiny_config(position_embedding_type="rope", hidden_size=32)
    model = MinAttnForMaskedLM(config)
    cos, sin = model.minattn.rotary(5, torch.bfloat16)
    assert cos.dtype == sin.dtype == torch.bfloat16
    assert torch.equal(sin, model.minattn.rotary(5, torch.float32)[1].to(torch.bfloat16))
    assert "inv_freq" not in "".join(model.state_dict())
