"""benchmarks/bench_probe.py times the passes `hf-minattn probe` runs: by default the model's over at most K sentences
a word and the untrained twin's over at most the twin's K (the CLI's defaults); with --full-pooling every sentence in
both. A tiny model over the shared texts: only what is encoded and counted is checked, no time."""

import json

import numpy as np
import pytest
from conftest import TEXTS, benchmark_script, tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.probes.corpus import split_sentences
from hf_minattn.probes.encode import word_normaliser
from hf_minattn.probes.pooling import (DEFAULT_CONTEXTS_PER_WORD, DEFAULT_TWIN_CONTEXTS_PER_WORD, scored_words,
                                       select_contexts)
from hf_minattn.probes.settings import ProbeSettings

SENTENCES = split_sentences(TEXTS, max_sentences=0)


@pytest.mark.parametrize("full_pooling", [False, True])
def test_the_passes_are_the_probes_and_their_flops_count_what_they_encode(tokenizer, full_pooling):
    bench = benchmark_script("bench_probe")
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    m = bench.measure(model, tokenizer, SENTENCES, full_pooling=full_pooling)
    words, passes = m["words"], m["passes"]
    settings = ProbeSettings()
    targets = scored_words(word_normaliser(tokenizer), (*settings.words, settings.sense_word))
    for system, k in (("model", DEFAULT_CONTEXTS_PER_WORD), ("twin", DEFAULT_TWIN_CONTEXTS_PER_WORD)):
        kept = select_contexts(words, targets, k, settings.seed).sentences
        windows = np.arange(len(words.windows)) if full_pooling else np.flatnonzero(
            np.isin(words.window_sentence, kept))
        lengths = [len(words.windows[w]) for w in windows]
        p = passes[system]
        assert p["sentences"] == (len(SENTENCES) if full_pooling else len(kept))
        assert p["fp32"].tokens == p["bf16"].tokens == sum(lengths)
        assert p["flops"] == bench.pass_flops(model.config, lengths)
    if not full_pooling:  # the twin's K is the smaller: fewer sentences than the model's
        assert passes["twin"]["sentences"] < passes["model"]["sentences"] < len(SENTENCES)
    assert m["least"] == pytest.approx((passes["model"]["flops"] + passes["twin"]["flops"]) / (m["peak"] * 1e9))
    result = json.loads(json.dumps(bench.record(m, "tiny", len(SENTENCES), quick=True)))
    assert result["pooling"]["contexts_per_word"] == (None if full_pooling else DEFAULT_CONTEXTS_PER_WORD)
    assert set(result["passes"]) == {"model", "twin"}
