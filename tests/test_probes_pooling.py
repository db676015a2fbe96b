"""Which corpus occurrences the word vectors are pooled from: the scored words, at most K sentences each, and only the
sentences one of them still needs; or every word from every sentence (--full-pooling)."""

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import TEXTS, tiny_config

from hf_minattn import MinAttnModel
from hf_minattn.probes import ProbeSettings, run_all_probes
from hf_minattn.probes.cli import probe_parser, probe_settings
from hf_minattn.probes.corpus import split_sentences
from hf_minattn.probes.encode import pool_corpus, tokenize_words
from hf_minattn.probes.pooling import scored_words, select_contexts
from hf_minattn.probes.report.benchmark import benchmarks_text
from hf_minattn.probes.results import load_probe_results

SENTENCES = split_sentences(TEXTS, max_sentences=0)
QUIET = dict(min_count=2, word2vec=False, decontextualized=False, heads=False, weights=False, ablation=False,
             logit_lens=False, circuits=False, bootstrap=20)
SMALL = ["king queen", "king dog", "queen dog", "river dog", "king river"]


@pytest.mark.parametrize("k, kept, pooled", [
    # seed 0 visits the sentences in the order 2, 4, 3, 0, 1
    (1, [2, 4], {2: [False, True], 4: [True, False]}),  # "queen dog" gives dog its context, "king river" king's
    (2, [0, 2, 3, 4], {0: [True, False], 2: [False, True], 3: [False, True], 4: [True, False]}),  # "king dog" unneeded
])
def test_a_sentence_is_kept_while_one_of_its_scored_words_needs_contexts(tokenizer, k, kept, pooled):
    words = tokenize_words(tokenizer, SMALL, max_length=24, min_contexts=1)
    selection = select_contexts(words, {"king", "dog"}, k, seed=0, candidates=0)
    assert selection.sentences.tolist() == kept
    for s in range(len(SMALL)):
        assert selection.occurrence[s].tolist() == pooled.get(s, [False, False])
    assert sorted(words.vocab[i] for i in selection.rows) == ["dog", "king"]
    assert selection.contexts.tolist() == [k] * 2


@pytest.mark.parametrize("k", [1, 2, 5])
def test_every_scored_word_gets_min_k_of_its_sentences_and_their_mean(tokenizer, k):
    """Each scored word is pooled from min(K, its sentences) sentences, and its vector is the mean of its occurrences
    in exactly those sentences (full pooling of those sentences alone gives the same vector)."""
    words = tokenize_words(tokenizer, SENTENCES, max_length=24, min_contexts=2)
    targets = {"king", "the", "river", "dog", "queen", "not-a-corpus-word"}
    selection = select_contexts(words, targets, k, seed=3, candidates=2)
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    pooled = pool_corpus(model, tokenizer, words=words, selection=selection, batch_size=4)
    assert pooled.vocab == [w for w in words.vocab if w in targets or words.index[w] < 2]
    assert pooled.tokens == sum(len(words.windows[i]) for i in np.flatnonzero(
        np.isin(words.window_sentence, selection.sentences)))
    for row, word in enumerate(pooled.vocab):
        chosen = [s for s in range(len(SENTENCES)) if any(
            o and w == word for o, w in zip(selection.occurrence[s], words.words[s]))]
        assert len(chosen) == min(k, words.contexts[words.index[word]]) == selection.contexts[row]
        alone = pool_corpus(model, tokenizer, [SENTENCES[s] for s in chosen], min_contexts=1, max_length=24)
        np.testing.assert_allclose(pooled.contextual[:, row], alone.contextual[:, alone.vocab.index(word)], atol=1e-5)


def test_the_selection_is_drawn_from_the_seed(tokenizer):
    words = tokenize_words(tokenizer, SENTENCES, max_length=24, min_contexts=2)
    draws = [select_contexts(words, {"the", "king"}, 2, seed=s, candidates=0).sentences.tolist() for s in (0, 0, 1)]
    assert draws[0] == draws[1] != draws[2]


def test_scored_words_hold_every_benchmark_and_probe_word():
    words = scored_words(str.lower, ("Castle",))
    assert {"tiger", "cat", "old", "new", "athens", "greece", "bank", "plant", "woman", "castle"} <= words


def test_full_pooling_reproduces_every_occurrence_pooling(tokenizer):
    """--full-pooling gives the vectors of pool_corpus over every occurrence of every word (the design before K)."""
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    results = run_all_probes(model, tokenizer, SENTENCES[:6], ProbeSettings(**QUIET, full_pooling=True),
                             corpus=SENTENCES, log=lambda m: None)
    today = pool_corpus(model, tokenizer, SENTENCES, min_contexts=2, max_length=24)
    assert results.word_vectors.vocab == today.vocab
    for layer, vectors in enumerate(today.contextual):
        # two identical runs differ by ~1e-8 (the accumulation order of index_put_): the same vectors
        np.testing.assert_allclose(results.word_vectors.sets[f"layer_{layer}"], vectors, rtol=0, atol=1e-6)
    assert results.pooling == {"design": "every word, every sentence (full pooling)", "contexts_per_word": None,
                               "words": len(today.vocab), "sentences": len(SENTENCES),
                               "sentences_total": len(SENTENCES), "precision": "fp32"}


def test_bf16_pooling_runs_the_model_under_autocast_and_keeps_fp32_sums(tokenizer):
    """--bf16: the passes run in bf16 (the vectors move by bf16 rounding, not more), the pooled means stay fp32, and
    probes.json says which precision ran."""
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    fp32 = pool_corpus(model, tokenizer, SENTENCES, min_contexts=2, max_length=24)
    bf16 = pool_corpus(model, tokenizer, SENTENCES, min_contexts=2, max_length=24, bf16=True)
    assert bf16.vocab == fp32.vocab and bf16.contextual.dtype == np.float32
    moved = np.abs(bf16.contextual - fp32.contextual).max()
    assert 0 < moved < 0.05 * np.abs(fp32.contextual).max()  # bf16 keeps 8 bits of mantissa: ~0.4% a product
    results = run_all_probes(model, tokenizer, SENTENCES[:6], ProbeSettings(**QUIET, full_pooling=True, bf16=True),
                             corpus=SENTENCES, log=lambda m: None)
    assert results.pooling["precision"] == "bf16 autocast"
    np.testing.assert_allclose(results.word_vectors.sets["layer_2"], bf16.contextual[2], rtol=0, atol=1e-6)


def test_probes_json_records_the_design(tokenizer, tmp_path):
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    settings = ProbeSettings(**QUIET, contexts_per_word=1)
    results = run_all_probes(model, tokenizer, SENTENCES[:6], settings,
                             corpus=SENTENCES, log=lambda m: None)
    results.save_json(tmp_path / "probes.json")
    pooling = json.loads((tmp_path / "probes.json").read_text())["pooling"]
    assert pooling["design"] == "scored words, at most 1 contexts each" and pooling["contexts_per_word"] == 1
    assert pooling["words"] == len(results.word_vectors.vocab)
    assert 0 < pooling["sentences"] < pooling["sentences_total"] == len(SENTENCES)
    assert results.vector_corpus.vocabulary == len(results.word_vectors.vocab)
    text = benchmarks_text(load_probe_results(tmp_path))
    assert "pooled from the occurrences in at most 1 sentences of each word a probe reads in " in text
    assert "untrained model's" not in text  # no twin ran


@pytest.mark.parametrize("twin_k", [1, 3])
def test_the_untrained_twin_pools_from_its_own_number_of_contexts(tokenizer, twin_k):
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    settings = ProbeSettings(**QUIET, untrained=True, contexts_per_word=3, twin_contexts_per_word=twin_k)
    results = run_all_probes(model, tokenizer, SENTENCES[:6], settings, corpus=SENTENCES, log=lambda m: None)
    pooling = results.pooling
    assert pooling["contexts_per_word"] == 3 and pooling["twin_contexts_per_word"] == twin_k
    # the report's sentence names both numbers (the probe without the twin names one: the test above)
    assert results.vector_corpus.occurrences == (f"the occurrences in at most 3 sentences of each word a probe reads "
                                                 f"(the untrained model's: at most {twin_k})")
    # fewer contexts a word, fewer sentences encoded; the same K, the same sentences as the model's pass
    assert (pooling["twin_sentences"] < pooling["sentences"]) if twin_k < 3 else (
        pooling["twin_sentences"] == pooling["sentences"])


@pytest.mark.parametrize("field, value, message", [
    ("twin_contexts_per_word", 0, "--twin-contexts-per-word must be at least 1, got 0"),
    ("contexts_per_word", 0, "--contexts-per-word must be at least 1, got 0"),
    ("contexts_per_word", 2.5, "--contexts-per-word must be an integer"),
    ("full_pooling", "yes", "--full-pooling must be True or False"),
    ("bf16", 1, "--bf16 must be True or False"),
])
def test_a_bad_pooling_setting_names_its_flag(field, value, message):
    with pytest.raises(ValueError, match=message):
        ProbeSettings(**{field: value})


def test_the_cli_flags_reach_the_settings():
    parse = probe_parser().parse_args
    assert probe_settings(parse(["m", "--out", "o", "--contexts-per-word", "7"])).contexts_per_word == 7
    assert probe_settings(parse(["m", "--out", "o", "--twin-contexts-per-word", "4"])).twin_contexts_per_word == 4
    assert probe_settings(parse(["m", "--out", "o", "--full-pooling"])) == replace(
        probe_settings(parse(["m", "--out", "o"])), full_pooling=True)
    assert probe_settings(parse(["m", "--out", "o", "--bf16"])) == replace(
        probe_settings(parse(["m", "--out", "o"])), bf16=True)
    with pytest.raises(ValueError, match="--contexts-per-word must be at least 1"):
        probe_settings(parse(["m", "--out", "o", "--contexts-per-word", "0"]))
