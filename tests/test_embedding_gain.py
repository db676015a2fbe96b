"""One learned scale of the word vectors (MinAttnConfig.embedding_gain): off by default (checkpoints unchanged),
initialised at 1, trainable when the embeddings are frozen, and the frozen-embeddings control that uses it."""

import copy
from types import SimpleNamespace

import pytest
import torch
from conftest import tiny_config
from test_experiments_verdicts import synthetic

from hf_minattn import MinAttnForMaskedLM, MinAttnModel
from hf_minattn.experiments.answers import frozen_embeddings_answers
from hf_minattn.experiments.findings_answers import q2_answer
from hf_minattn.experiments.training import matched_intermediate_size, variant_named
from hf_minattn.run_mlm import build_model


def test_the_gain_is_off_by_default_and_scales_the_word_vectors(tmp_path):
    assert "embeddings.gain" not in dict(MinAttnModel(tiny_config()).named_parameters())
    model = MinAttnModel(tiny_config(embedding_gain=True)).eval()
    assert model.embeddings.gain.item() == 1.0
    ids = torch.randint(5, 99, (2, 7))
    base = model(ids).last_hidden_state
    with torch.no_grad():
        model.embeddings.gain.fill_(2.0)
        doubled = model(ids).last_hidden_state
        model.embeddings.gain.fill_(1.0)
        model.embeddings.word_embeddings.weight.mul_(2.0)
        by_hand = model(ids).last_hidden_state
    assert not torch.allclose(base, doubled) and torch.allclose(doubled, by_hand, atol=1e-5)
    model.save_pretrained(tmp_path)
    loaded = MinAttnModel.from_pretrained(tmp_path)
    assert loaded.embeddings.gain.item() == 1.0 and loaded.config.embedding_gain is True
    with pytest.raises(ValueError, match="embedding_gain must be True or False"):
        tiny_config(embedding_gain="yes")


def test_frozen_embeddings_keep_their_gain_trainable(tokenizer):
    config = tiny_config(vocab_size=len(tokenizer), embedding_gain=True, tie_word_embeddings=False)
    model = build_model(SimpleNamespace(freeze_embeddings=True), config, tokenizer, seed=0)
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert "minattn.embeddings.gain" in trainable
    assert "minattn.embeddings.word_embeddings.weight" not in trainable
    assert isinstance(model, MinAttnForMaskedLM)


def test_the_scaled_control_is_matched_in_trainable_parameters():
    from hf_minattn.experiments import SETTINGS

    variant = variant_named("frozen_embeddings_gain")
    assert variant.freeze_embeddings and "embedding_gain=true" in variant.config_overrides
    matched = matched_intermediate_size(SETTINGS["full"], variant, 8192)
    assert abs(matched["parameters"] - matched["full_parameters"]) <= matched["unit_parameters"] / 2


def test_the_q2_answer_says_what_the_learned_scale_changes():
    results = synthetic()
    results["answers"]["q2"] = frozen_embeddings_answers(results)
    assert "with one learned scale of the frozen rows they are still worse" in q2_answer(results)
    same = synthetic({"frozen_embeddings_gain": (0.001, -0.001, 0.0)})
    same["answers"]["q2"] = frozen_embeddings_answers(same)
    assert "with one learned scale of the frozen rows they are as good as trained ones" in q2_answer(same)
    older = copy.deepcopy(results)
    older["answers"]["q2"].pop("frozen_gain_minus_full")
    assert "learned scale" not in q2_answer(older)
