"""The model with the tools people combine transformers with: torch.export, ONNX (run with onnxruntime),
transformers' attention-function registry, resize_token_embeddings."""

import pytest
import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from conftest import padded_batch, tiny_config
from hf_minattn import MinAttnForMaskedLM, MinAttnModel


@pytest.mark.parametrize("position_embedding_type", ["learned", "rope"])
def test_torch_export_is_correct_on_padded_batches(position_embedding_type):
    """Exported from an UNPADDED example, the graph must still apply the padding mask of a padded batch."""
    model = MinAttnModel(tiny_config(position_embedding_type=position_embedding_type, hidden_size=32)).eval()
    example = torch.randint(5, 99, (2, 9))
    exported = torch.export.export(model, (example, torch.ones_like(example)))
    input_ids, attention_mask = padded_batch()
    got = exported.module()(input_ids, attention_mask).last_hidden_state
    want = model(input_ids, attention_mask=attention_mask).last_hidden_state
    torch.testing.assert_close(got[1, :5], want[1, :5], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_traced_model_does_not_bake_in_no_padding():
    model = MinAttnModel(tiny_config(return_dict=False)).eval()
    example = torch.randint(5, 99, (2, 9))
    traced = torch.jit.trace(model, (example, torch.ones_like(example)))
    input_ids, attention_mask = padded_batch()
    torch.testing.assert_close(traced(input_ids, attention_mask)[0],
                               model(input_ids, attention_mask=attention_mask)[0], atol=1e-4, rtol=1e-4)


def test_eager_mode_keeps_the_clear_error_for_bad_ids():
    with pytest.raises(ValueError, match="outside \\[0, vocab_size=99\\)"):
        MinAttnModel(tiny_config())(torch.tensor([[5, 120]]))


@pytest.mark.slow
def test_onnx_export_runs_in_onnxruntime_on_a_padded_batch(tmp_path):
    import onnxruntime as ort  # the test extras install it, with onnx and onnxscript (the exporter)

    model = MinAttnForMaskedLM(tiny_config(position_embedding_type="rope", hidden_size=32)).eval()
    example = torch.randint(5, 99, (2, 9))
    path = tmp_path / "model.onnx"
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=24)
    torch.onnx.export(model, (example, torch.ones_like(example)), str(path), dynamo=True,
                      input_names=["input_ids", "attention_mask"], output_names=["logits"],
                      dynamic_shapes=({0: batch, 1: sequence}, {0: batch, 1: sequence}))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    input_ids, attention_mask = padded_batch()
    (logits,) = session.run(["logits"], {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})
    with torch.no_grad():
        want = model(input_ids, attention_mask=attention_mask).logits
    torch.testing.assert_close(torch.from_numpy(logits), want, atol=1e-4, rtol=1e-4)


def test_attention_kwargs_reach_a_registered_attention_function():
    """`_supports_attention_backend`: keyword arguments of forward reach the attention function of every layer."""
    seen = []

    def recording_attention(module, query, key, value, attention_mask, **kwargs):
        seen.append((module.layer_idx, kwargs.get("window")))
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register("recording_for_test", recording_attention)
    model = MinAttnForMaskedLM(tiny_config(num_hidden_layers=3)).eval()
    model.set_attn_implementation("recording_for_test")
    input_ids = torch.randint(5, 99, (2, 7))
    out = model(input_ids, window=4).logits
    assert seen == [(0, 4), (1, 4), (2, 4)]
    model.set_attn_implementation("sdpa")
    torch.testing.assert_close(out, model(input_ids).logits)

    positions = []  # position_ids reach it too, as a varlen kernel needs them to find packed sequences' bounds

    def recording_positions(module, query, key, value, attention_mask, **kwargs):
        positions.append(kwargs.get("position_ids"))
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register("recording_positions_for_test", recording_positions)
    model.set_attn_implementation("recording_positions_for_test")
    packed = torch.tensor([[0, 1, 2, 0, 1, 2, 3]])
    model(input_ids[:1], position_ids=packed)
    assert len(positions) == 3 and all(torch.equal(p, packed) for p in positions)
    positions.clear()
    model(input_ids[:1])
    assert positions == [None, None, None]


@pytest.mark.parametrize("new_size", [120, 80])
def test_resize_token_embeddings_keeps_the_masked_lm_working(new_size):
    model = MinAttnForMaskedLM(tiny_config()).eval()
    with torch.no_grad():
        model.lm_head.bias.copy_(torch.arange(99.0))
    model.resize_token_embeddings(new_size)
    assert model.lm_head.bias.shape == (new_size,) and model.config.vocab_size == new_size
    keep = min(99, new_size)
    assert torch.equal(model.lm_head.bias[:keep], torch.arange(float(keep)))
    assert torch.all(model.lm_head.bias[keep:] == 0)
    input_ids = torch.randint(5, min(99, new_size), (2, 7))
    labels = input_ids.clone()
    out = model(input_ids, labels=labels)
    assert out.logits.shape == (2, 7, new_size) and torch.isfinite(out.loss)
    assert model.lm_head.decoder.weight is model.get_input_embeddings().weight  # still tied


def test_sentence_transformers_loads_a_saved_folder_with_mean_pooling(tmp_path, tokenizer):
    from sentence_transformers import SentenceTransformer

    from hf_minattn.sentence_embedding import write_sentence_transformers_files

    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    write_sentence_transformers_files(tmp_path, hidden_size=36, max_seq_length=24)
    encoder = SentenceTransformer(str(tmp_path), device="cpu")
    assert [type(m).__name__ for m in encoder] == ["Transformer", "Pooling"]
    sentences = ["the king ruled the kingdom", "a dog"]  # different lengths: the second is padded
    got = encoder.encode(sentences, convert_to_tensor=True)
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model.minattn(batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    torch.testing.assert_close(got, (hidden * mask).sum(1) / mask.sum(1), atol=1e-5, rtol=1e-4)


def test_sentence_transformers_files_are_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """A write killed before its rename leaves the previous modules.json, not a truncated one."""
    import json
    import os

    from hf_minattn.sentence_embedding import write_sentence_transformers_files

    paths = write_sentence_transformers_files(tmp_path, hidden_size=36, max_seq_length=24)
    before = {path: open(path).read() for path in paths}

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_sentence_transformers_files(tmp_path, hidden_size=48, max_seq_length=32)
    assert {path: open(path).read() for path in paths} == before
    monkeypatch.undo()
    write_sentence_transformers_files(tmp_path, hidden_size=48, max_seq_length=32)
    assert json.loads(open(paths[-1]).read())["word_embedding_dimension"] == 48
    assert not [name for _, _, names in os.walk(tmp_path) for name in names if name.endswith(".tmp")]


@pytest.mark.parametrize("hidden_size, max_seq_length, named", [
    (36, 0, "max_seq_length"), (-4, 24, "hidden_size"), ("16", 24, "hidden_size"), (36, 1.5, "max_seq_length"),
    (True, 24, "hidden_size"), (36, None, "max_seq_length"),
])
def test_sentence_transformers_files_take_positive_integer_sizes(tmp_path, hidden_size, max_seq_length, named):
    """Were written as given ("word_embedding_dimension": -4): sentence-transformers reads them back unchecked."""
    from hf_minattn.sentence_embedding import write_sentence_transformers_files

    with pytest.raises(ValueError, match=f"{named} must be a positive integer, got"):
        write_sentence_transformers_files(tmp_path, hidden_size=hidden_size, max_seq_length=max_seq_length)
    assert not list(tmp_path.iterdir())  # nothing written


def test_an_atomic_write_that_fails_leaves_the_previous_file_and_no_temporary_one(tmp_path):
    """A text that is not a str is refused before anything is created; a write that fails midway (a lone surrogate
    cannot be encoded in UTF-8) keeps the previous file. Both left `<path>.tmp` behind."""
    from hf_minattn.record_files import write_text_atomically

    path = tmp_path / "card.md"
    write_text_atomically(str(path), "before")
    with pytest.raises(TypeError, match="writes a str to .*card.md, got NoneType"):
        write_text_atomically(str(path), None)
    with pytest.raises(UnicodeEncodeError):
        write_text_atomically(str(path), "after \ud800")
    assert path.read_text() == "before" and sorted(p.name for p in tmp_path.iterdir()) == ["card.md"]


def test_two_atomic_writes_of_one_path_use_temporary_files_of_their_own(tmp_path, monkeypatch):
    """Two writers of one path shared `<path>.tmp`: one could rename the other's half-written file. Each temporary
    name still ends in ".tmp" (push.py leaves "*.tmp" out of uploads), and reaches the disk before the rename."""
    import fnmatch
    import json
    import os

    from hf_minattn.push import TOP_LEVEL_IGNORED
    from hf_minattn.record_files import write_json_atomically

    renamed, synced, replace, fsync = [], [], os.replace, os.fsync
    monkeypatch.setattr(os, "replace", lambda source, target: (renamed.append(source), replace(source, target)))
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), fsync(fd)))
    path = tmp_path / "drift.json"
    write_json_atomically(path, {"records": [1]})
    write_json_atomically(path, {"records": [2]})
    assert len(set(renamed)) == 2 and len(synced) == 2
    names = [os.path.basename(source) for source in renamed]
    assert all(name.startswith("drift.json.") and any(fnmatch.fnmatch(name, p) for p in TOP_LEVEL_IGNORED)
               for name in names)
    assert json.loads(path.read_text()) == {"records": [2]}
    assert (path.stat().st_mode & 0o777) == (0o666 & ~current_umask())  # as open() makes it, not mkstemp's 0600


def current_umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
