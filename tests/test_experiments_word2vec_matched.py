"""word2vec at the model's own exposure (experiments/word2vec.py `matched_word2vec`): as many passes over the corpus
as the model made, and the Q5 answer saying how the model compares with it beside the tuned one."""

import copy
from dataclasses import replace

import numpy as np
import pytest
from conftest import TEXTS
from test_findings import full_results

from hf_minattn.experiments.findings_answers import ANSWERS
from hf_minattn.experiments.word2vec import matched_word2vec
from hf_minattn.probes.benchmarks import WORD2VEC_SETTINGS
from hf_minattn.probes.encode import tokenize_words
from hf_minattn.probes.word2vec import train_word2vec


@pytest.mark.parametrize("steps, epochs", [(1, 1), (10, 3), (40, 13)])
def test_word2vec_makes_as_many_passes_as_the_model(tokenizer, steps, epochs):
    corpus = list(dict.fromkeys(TEXTS))
    tokens = sum(len(ids) for ids in tokenizer(corpus, add_special_tokens=False)["input_ids"])
    settings = {"max_steps": steps, "batch_size": 4, "max_seq_length": tokens // 12}  # 12 steps = 4 passes
    words = tokenize_words(tokenizer, corpus, min_contexts=1)
    # a word2vec trained here at the expected epoch count (one worker: the same seed gives the same vectors)
    alone = train_word2vec(words.words, replace(WORD2VEC_SETTINGS, epochs=epochs, seed=0))
    vocab = alone.index_to_key[:2] + ["unseen-word"]  # two words above word2vec's min_count, one it never saw
    rows, info = matched_word2vec(settings, tokenizer, corpus, words, vocab, seed=0)
    passes = steps * 4 * (tokens // 12) / tokens
    assert info["epochs"] == max(1, round(passes)) == epochs and info["model_passes"] == pytest.approx(passes, abs=1e-3)
    assert info["corpus_tokens"] == tokens and info["tuned_epochs"] == WORD2VEC_SETTINGS.epochs
    assert rows.shape == (3, WORD2VEC_SETTINGS.vector_size)
    np.testing.assert_array_equal(rows[:2], alone[vocab[:2]])


def test_the_q5_answer_names_the_matched_word2vec_by_its_verdict():
    results = full_results()
    assert "a word2vec trained " not in ANSWERS[4][2](results)  # older results: the tuned one alone
    for verdict, word in (("higher", "above"), ("lower", "below"), ("unresolved", "not told apart from")):
        r = copy.deepcopy(results)
        r["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"] = {
            "estimate": 0.1, "low": 0.05, "high": 0.15, "n": 3, "margin": 0.05, "verdict": verdict}
        r["answers"]["q5"]["word2vec_matched"] = {"epochs": 1, "model_passes": 1.431}
        assert (f"(tuned; {word} a word2vec trained for 1 epoch where the model made 1.43 passes over the text)"
                in ANSWERS[4][2](r))
