"""The layer-0 note at a realistic width: what hidden_states[0] is made of, measured on the model
(geometry.embedding_output_layout), for untrained models too (the untrained twin is probed) and where the model takes
no inputs_embeds or has almost no ordinary tokens."""

import pytest
import torch
from conftest import tiny_config

from hf_minattn import MinAttnConfig, MinAttnModel
from hf_minattn.probes.geometry import embedding_output_layout, layer0_note


def _untrained(seed, norm, positions="rope", hidden=768):
    torch.manual_seed(seed)
    return MinAttnModel(MinAttnConfig(vocab_size=8192, hidden_size=hidden, num_hidden_layers=1, num_attention_heads=4,
                                      intermediate_size=8, position_embedding_type=positions,
                                      norm_placement=norm)).eval()


@pytest.mark.parametrize("seed", range(4))
def test_an_untrained_embedding_layernorm_is_not_read_as_a_scale_at_width_768(seed):
    """A fresh LayerNorm (gain 1, bias 0) over rows of nearly equal norms maps two tokens' difference to about
    (e_a - e_b) / s: two tokens fitted one scale, and the note said "the word embedding alone times 49" (seeds 1-3)."""
    note = layer0_note(_untrained(seed, "post"))
    assert "the word embedding alone, then normalised (e.g. an embedding LayerNorm), with no position term" in note
    assert "times" not in note, note


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("positions", ["rope", "learned"])
def test_an_untrained_plain_sum_stays_plain_at_width_768(seed, positions):
    layout = embedding_output_layout(_untrained(seed, "pre", positions))
    assert layout["plain"] is True and layout["scale"] == pytest.approx(1.0, abs=1e-6)
    assert layout["position"] is (positions == "learned")


class _IdsOnly(torch.nn.Module):
    """An encoder whose forward takes no inputs_embeds: the normalisation is then told only by one scale over tokens
    of different norms."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.config = inner, inner.config

    @property
    def device(self):
        return self.inner.device

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids=None, attention_mask=None, output_hidden_states=None):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states)


def _with_norms(model, spread):
    """Rows of one norm, or of norms from 0.5x to 2x as in a trained model."""
    with torch.no_grad():
        weight = model.get_input_embeddings().weight
        factors = torch.linspace(0.5, 2.0, len(weight))[torch.randperm(len(weight))] if spread else 1.0
        weight.mul_((factors / weight.norm(dim=-1))[:, None])
    return model


@pytest.mark.parametrize("norm, says, never", [
    ("post one", "the word embedding alone (whether it is then normalised is not measured), with no position term",
     ["times", "then normalised (e.g."]),
    ("post spread", "the word embedding alone, then normalised", ["times", "not measured"]),
    ("pre spread", "the word embedding alone, with no position term", ["normalised", "times"]),
])
def test_without_inputs_embeds_the_normalisation_is_told_by_tokens_of_different_norms_or_not_said(norm, says, never):
    placement, norms = norm.split()
    note = layer0_note(_IdsOnly(_with_norms(_untrained(0, placement), spread=norms == "spread")))
    assert says in note and not any(phrase in note for phrase in never), note


@pytest.mark.parametrize("vocab, says", [
    (6, "the word embedding alone, with no position term"),  # ids 1 and 5: "not enough values to unpack" before
    (5, "the embedding output (the word embedding, plus any position embedding); not measured: fewer than 2 "
        "ordinary (non-special) tokens."),  # ids 0, 2, 3, 4 are special
])
def test_a_small_vocabulary_says_less_instead_of_failing(vocab, says):
    note = layer0_note(MinAttnModel(tiny_config(vocab_size=vocab, position_embedding_type="none",
                                                norm_placement="pre")))
    assert says in note, note
