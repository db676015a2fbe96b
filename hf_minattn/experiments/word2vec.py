"""The word2vec baselines of the experiments: the tuned one (the probes' settings) and one matched to the model's
own exposure to the corpus, at every seed; trained ahead of the probes, side by side, into the word2vec cache that
the probes read."""

import os

from .training import log


def corpus_token_count(tokenizer, corpus) -> int:
    return sum(len(ids) for ids in tokenizer(list(corpus), add_special_tokens=False)["input_ids"])


def training_tokens(settings: dict) -> int:
    """The tokens a preset's model trains on: steps x batch x sequence length."""
    return settings["max_steps"] * settings["batch_size"] * settings["max_seq_length"]


def matched_word2vec_settings(settings: dict, corpus_tokens: int, seed: int):
    """(Word2VecSettings, the model's passes over the corpus): the probes' word2vec settings with as many epochs as
    the model made passes: its training tokens over the corpus's tokens, rounded, at least one."""
    from dataclasses import replace

    from hf_minattn.probes.word2vec import WORD2VEC_SETTINGS

    passes = training_tokens(settings) / corpus_tokens
    return replace(WORD2VEC_SETTINGS, epochs=max(1, round(passes)), seed=seed), passes


def matched_word2vec(settings: dict, tokenizer, corpus, corpus_words, vocab, seed: int,
                     corpus_tokens: int | None = None) -> tuple:
    """(rows aligned to `vocab`, what was matched) of a word2vec with the probes' settings but as many passes over
    the corpus as the model made (`matched_word2vec_settings`). The tuned word2vec (20 epochs) sees about ten times
    the text a preset's model sees. `corpus_tokens`: the corpus's token count where already counted (it is the same
    at every seed)."""
    from hf_minattn.probes.benchmarks import WORD2VEC_SETTINGS, cached_word2vec, word2vec_rows

    corpus_tokens = corpus_tokens or corpus_token_count(tokenizer, corpus)
    w2v, passes = matched_word2vec_settings(settings, corpus_tokens, seed)
    kv, _, _ = cached_word2vec(corpus_words.words, w2v)
    matched = {"epochs": w2v.epochs, "model_passes": round(passes, 3), "training_tokens": training_tokens(settings),
               "corpus_tokens": corpus_tokens, "tuned_epochs": WORD2VEC_SETTINGS.epochs}
    return word2vec_rows(kv, vocab, seed), matched


def word2vecs_ahead(settings: dict, seeds, words, corpus_tokens: int) -> None:
    """Train the word2vecs the full model's probes at `seeds` will read (the tuned one and the matched one of each
    seed) into the word2vec cache, `settings["parallel"]` at a time, before the probes read them from it. Each
    trains on one worker thread, so that its seed fixes it; one after another they left the second core idle for a
    minute a seed. gensim trains outside the GIL, so threads suffice (2 side by side: 1.8x as fast on 2 cores, the
    same vectors). Without a cache (HF_MINATTN_WORD2VEC_CACHE="") nothing is done here."""
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    from hf_minattn.probes.word2vec import WORD2VEC_SETTINGS, cached_word2vec, word2vec_cache_dir

    jobs = [w2v for seed in seeds for w2v in (replace(WORD2VEC_SETTINGS, seed=seed),
                                              matched_word2vec_settings(settings, corpus_tokens, seed)[0])]
    workers = min(settings.get("parallel", 1), os.cpu_count() or 1, len(jobs))
    if word2vec_cache_dir() is None or workers < 2:
        return
    log(f"training {len(jobs)} word2vecs for the probes, {workers} at a time")
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda w2v: cached_word2vec(words, w2v), jobs))  # list(): re-raise a failed run's error
