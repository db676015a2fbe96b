"""The head ablation and the logit lens on a decoder: every next token of a sentence is scored (no masking), the
model is checked to predict from the tokens before a position only, each layer is decoded through the model's final
norm and output layer, and the last layer's loss is the model's own next-token loss, computed here by hand."""

import pytest
import torch
from conftest import TEXTS

from hf_minattn.probes.head_ablation import head_ablation, language_model_for, next_token_batches
from hf_minattn.probes.logit_lens import logit_lens

SENTENCES = sorted(set(TEXTS))[:6]


def _gpt2(tokenizer):
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def _llama(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, intermediate_size=40,
                                        max_position_embeddings=64, tie_word_embeddings=False))


def _own_next_token_losses(model, tokenizer, sentences, layer=None):
    """Each sentence alone, unpadded (cut at the probes' length), cross-entropy of the model's logits at t against
    token t + 1, for every next token that is not a special token; with `layer`, of that layer's hidden state put
    through the model's final norm and output layer by hand."""
    from hf_minattn.probes.loading import max_length_for

    norm = getattr(model.base_model, "ln_f", None) or getattr(model.base_model, "norm", None)  # GPT-2, Llama
    losses = []
    for sentence in sentences:
        enc = tokenizer(sentence, return_tensors="pt", truncation=True, max_length=max_length_for(model, tokenizer))
        with torch.no_grad():
            output = model(input_ids=enc["input_ids"], output_hidden_states=True)
            logits = output.logits[0] if layer is None else model.lm_head(norm(output.hidden_states[layer][0]))
        ids = enc["input_ids"][0]
        special = set(tokenizer.all_special_ids)
        keep = [t for t in range(len(ids) - 1) if int(ids[t + 1]) not in special]
        losses.append(torch.nn.functional.cross_entropy(logits[keep], ids[[t + 1 for t in keep]], reduction="none"))
    return torch.cat(losses)


@pytest.mark.parametrize("side", ["right", "left"])
def test_every_real_position_is_labelled_with_the_next_real_token(tokenizer, side):
    tokenizer.padding_side = side
    try:
        (enc, chosen, labels), = next_token_batches(tokenizer, SENTENCES[:2], 24, 2)
    finally:
        tokenizer.padding_side = "right"
    special = set(tokenizer.all_special_ids)
    for row in range(2):
        ids = enc["input_ids"][row][enc["attention_mask"][row].bool()].tolist()  # the real tokens, in order
        real = enc["attention_mask"][row].nonzero()[:, 0].tolist()
        expected = [real[i] for i in range(len(ids) - 1) if ids[i + 1] not in special]
        assert chosen[row].nonzero()[:, 0].tolist() == expected
        assert labels[row, expected].tolist() == [int(enc["input_ids"][row, t + 1]) for t in expected]


@pytest.mark.parametrize("make", [_gpt2, _llama])
def test_lens_and_ablation_score_the_decoders_own_next_token_loss(tokenizer, make):
    """GPT-2 (final norm ln_f, tied output layer) and Llama (norm, its own output layer): the lens's last layer and
    the ablation's base loss are the model's next-token loss over the same tokens; nothing is masked."""
    torch.manual_seed(0)
    model = make(tokenizer).eval()
    own = _own_next_token_losses(model, tokenizer, SENTENCES)
    lens = logit_lens(model, tokenizer, SENTENCES, batch_size=4)
    assert lens.objective == "next-token" and lens.mlm_probability is None and lens.masked_tokens == len(own)
    assert lens.loss[-1] == pytest.approx(float(own.mean()), rel=1e-4)
    assert lens.loss[1] == pytest.approx(float(_own_next_token_losses(model, tokenizer, SENTENCES, 1).mean()), rel=1e-4)
    assert len(lens.loss) == 3 and lens.loss[0] != pytest.approx(lens.loss[-1])
    ablation = head_ablation(model, tokenizer, SENTENCES, batch_size=4)
    assert ablation.objective == "next-token" and ablation.masked_tokens == len(own)
    assert ablation.base_loss == pytest.approx(float(own.mean()), rel=1e-4)
    assert any(abs(x) > 1e-6 for row in ablation.loss_increase for x in row)


def test_a_decoder_checkpoint_probed_as_a_bare_model_gets_its_lens_and_ablation(tokenizer, tmp_path):
    """`hf-minattn probe` loads a bare model (GPT2Model); the checkpoint's next-token LM is found for the ablation
    and the lens, which run with their next-token wording; a checkpoint with no language-model head at all says so."""
    from transformers import AutoModel, CanineConfig, CanineModel

    from hf_minattn.probes import ProbeSettings, run_all_probes

    _gpt2(tokenizer).save_pretrained(tmp_path / "gpt2")
    model = AutoModel.from_pretrained(tmp_path / "gpt2").eval()
    results = run_all_probes(model, tokenizer, SENTENCES * 4, ProbeSettings(min_count=2, word2vec=False,
                                                                            untrained=False),
                             model_path=str(tmp_path / "gpt2"), log=lambda message: None)
    assert results.head_ablation.objective == "next-token" and results.logit_lens.objective == "next-token"
    assert not [note for note in results.notes if "ablation" in note or "logit lens skipped" in note]
    CanineModel(CanineConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=40)).save_pretrained(tmp_path / "canine")
    lm, reason = language_model_for(model=CanineModel(CanineConfig(hidden_size=32, num_hidden_layers=1,
                                                                   num_attention_heads=2, intermediate_size=40)),
                                    model_path=str(tmp_path / "canine"))
    assert lm is None and "does not load as a masked LM (" in reason and reason.endswith(", nor as a next-token LM")
