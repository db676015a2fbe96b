"""The masked-LM head: the output bias inside the vocabulary product, the dtypes under bf16 autocast, and the
checkpoint layout it reads and writes (`lm_head.bias`)."""

import pytest
import torch
from safetensors.torch import save_file
from torch.profiler import profile

from conftest import tiny_config
from hf_minattn import MinAttnForMaskedLM


def model_with_bias(**overrides) -> MinAttnForMaskedLM:
    """A tiny masked LM whose output bias is not 0 (a trained one is not), so that a lost bias shows."""
    model = MinAttnForMaskedLM(tiny_config(**overrides)).eval()
    with torch.no_grad():
        model.lm_head.bias.normal_()
    return model


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, labels) of shape (3, 7): a few positions labelled, -100 elsewhere."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, 99, (3, 7), generator=generator)
    labels = torch.full_like(input_ids, -100)
    labels[:, 2] = input_ids[:, 2]
    labels[0, 5] = input_ids[0, 5]
    return input_ids, labels


@pytest.mark.parametrize("sparse_prediction", [False, True])
def test_logits_stay_bf16_under_autocast_and_the_loss_is_fp32(sparse_prediction):
    """Under CPU bf16 autocast the logits come out in bf16 (not promoted to fp32 by the fp32 bias), with and without
    labels, dense or sparse; the cross-entropy is computed in fp32 and is finite."""
    model = model_with_bias()
    input_ids, labels = batch()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        unlabelled = model(input_ids)
        labelled = model(input_ids, labels=labels, sparse_prediction=sparse_prediction)
    assert unlabelled.logits.dtype == labelled.logits.dtype == torch.bfloat16
    assert unlabelled.logits.shape == (3, 7, 99)
    assert labelled.logits.shape == ((4, 99) if sparse_prediction else (3, 7, 99))
    assert labelled.loss.dtype == torch.float32 and torch.isfinite(labelled.loss)


@pytest.mark.parametrize("bf16", [False, True])
def test_nothing_reads_the_logits_after_the_vocabulary_product(bf16):
    """The bias is added inside the decoder's product: no operator outside that product (no add, no cast to fp32)
    touches a tensor the size of the (B, T, V) logits, in fp32 or under bf16 autocast."""
    model = model_with_bias()
    input_ids, _ = batch()
    n_logits = input_ids.numel() * model.config.vocab_size
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16), profile(record_shapes=True) as p:
        model(input_ids)

    def outermost(event):
        while event.cpu_parent is not None:
            event = event.cpu_parent
        return event.name

    readers = {outermost(e) for e in p.events() if any(s and torch.Size(s).numel() == n_logits for s in e.input_shapes)}
    assert readers <= {"aten::linear"}, readers


def test_logits_are_the_decoder_product_plus_the_bias():
    """In fp32 the logits equal decoder(h) + bias, h the head's transform of the last hidden state, to fp32 rounding;
    the sparse logits are the dense ones at the labelled positions; the decoder weight is still the embedding."""
    model = model_with_bias()
    input_ids, labels = batch()
    with torch.no_grad():
        out = model(input_ids, output_hidden_states=True)
        head = model.lm_head
        h = head.norm(head.act(head.dense(out.hidden_states[-1])))  # (B, T, C)
        expected = h @ model.get_input_embeddings().weight.T + head.bias
        sparse = model(input_ids, labels=labels, sparse_prediction=True).logits
    assert head.decoder.weight is model.get_input_embeddings().weight
    torch.testing.assert_close(out.logits, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sparse, out.logits[labels != -100], atol=1e-5, rtol=1e-5)


def test_a_checkpoint_with_the_lm_head_bias_key_loads(tmp_path):
    """A checkpoint in the layout every saved MinAttn masked LM has (the output bias under `lm_head.bias`, the tied
    decoder weight not stored) loads with nothing missing or unexpected, and gives the same logits."""
    model = model_with_bias()
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.decoder.weight"}
    assert "lm_head.bias" in state and not any(k.startswith("lm_head.decoder") for k in state)
    save_file(state, tmp_path / "model.safetensors", metadata={"format": "pt"})
    model.config.save_pretrained(tmp_path)

    loaded, info = MinAttnForMaskedLM.from_pretrained(tmp_path, output_loading_info=True)
    assert info["missing_keys"] in ([], set()) and info["unexpected_keys"] in ([], set())
    assert torch.equal(loaded.lm_head.bias, model.lm_head.bias)
    assert loaded.lm_head.decoder.weight is loaded.get_input_embeddings().weight
    input_ids, _ = batch()
    with torch.no_grad():
        assert torch.equal(loaded.eval()(input_ids).logits, model(input_ids).logits)
