"""The word2vec baselines of the experiments: the tuned one (the probes' settings) and one matched to the model's
own exposure to the corpus, at every seed; trained ahead of the probes, side by side, into the word2vec cache that
the probes read."""

import os

from .side_by_side import run_side_by_side
from .training import log


def corpus_token_count(tokenizer, corpus) -> int:
    return sum(len(ids) for ids in tokenizer(list(corpus), add_special_tokens=False)["input_ids"])


def training_tokens(settings: dict) -> int:
    """The tokens a preset's model trains on: steps x batch x sequence length."""
    return settings["max_steps"] * settings["batch_size"] * settings["max_seq_length"]


def matched_word2vec_settings(settings: dict, corpus_tokens: int, seed: int):
    """(Word2VecSettings, the model's passes over the corpus): the probes' word2vec settings with as many passes
    (`epochs`, fractional: `probes.word2vec.exposure_sentences`) as the model made: its training tokens over the
    corpus's tokens, to 2 decimals. Whole epochs (round(1.43) = 1) matched the model to the nearest pass only."""
    from dataclasses import replace

    from hf_minattn.probes.word2vec import WORD2VEC_SETTINGS

    passes = training_tokens(settings) / corpus_tokens
    return replace(WORD2VEC_SETTINGS, epochs=max(0.01, round(passes, 2)), seed=seed), passes


def matched_word2vec(settings: dict, tokenizer, corpus, corpus_words, vocab, seed: int,
                     corpus_tokens: int | None = None) -> tuple:
    """(rows aligned to `vocab`, what was matched) of a word2vec with the probes' settings but as many passes over
    the corpus as the model made (`matched_word2vec_settings`). The tuned word2vec (20 epochs) sees about 14 times
    the text the full preset's model sees (about 1.4 passes). `corpus_tokens`: the corpus's token count where already
    counted (it is the same at every seed)."""
    from hf_minattn.probes.benchmarks import WORD2VEC_SETTINGS, cached_word2vec, word2vec_rows

    corpus_tokens = corpus_tokens or corpus_token_count(tokenizer, corpus)
    w2v, passes = matched_word2vec_settings(settings, corpus_tokens, seed)
    kv, _, _ = cached_word2vec(corpus_words.words, w2v)
    matched = {"epochs": w2v.epochs, "model_passes": round(passes, 3), "training_tokens": training_tokens(settings),
               "corpus_tokens": corpus_tokens, "tuned_epochs": WORD2VEC_SETTINGS.epochs}
    return word2vec_rows(kv, vocab, seed), matched


def uncached_word2vecs(settings: dict, seeds, words, corpus_tokens: int) -> list:
    """The settings of the word2vecs the full model's probes at `seeds` will read (every seed's tuned one, then every
    seed's matched one) that the word2vec cache does not hold yet; [] without a cache (HF_MINATTN_WORD2VEC_CACHE="")."""
    from dataclasses import replace

    from hf_minattn.probes.word2vec import WORD2VEC_SETTINGS, is_cached, word2vec_cache_dir, word2vec_cache_path

    cache_dir = word2vec_cache_dir()
    words = [ws for ws in words if ws]
    tuned = [replace(WORD2VEC_SETTINGS, seed=seed) for seed in seeds]
    matched = [matched_word2vec_settings(settings, corpus_tokens, seed)[0] for seed in seeds]
    return [w2v for w2v in tuned + matched  # the tuned ones (20 epochs) first: the longest first, the tails even
            if (path := word2vec_cache_path(words, w2v, cache_dir)) is not None and not is_cached(path)]


def word2vecs_ahead(settings: dict, seeds, words, corpus_tokens: int) -> None:
    """Train the word2vecs the full model's probes at `seeds` will read into the word2vec cache,
    `settings["parallel"]` at a time, before the probes read them from it (where the training phase left any:
    `word2vec_tasks`). Each trains on one worker thread, so that its seed fixes it; one after another they left the
    second core idle for a minute a seed. gensim trains outside the GIL, so threads suffice (2 side by side: 1.8x as
    fast on 2 cores, the same vectors). The queue is `run_side_by_side`'s: the first failure, a Ctrl-C or a kill starts
    none of the word2vecs not started yet."""
    from hf_minattn.probes.word2vec import cached_word2vec

    jobs = uncached_word2vecs(settings, seeds, words, corpus_tokens)
    workers = min(settings.get("parallel", 1), os.cpu_count() or 1, len(jobs))
    if workers < 2:
        return
    log(f"training {len(jobs)} word2vecs for the probes, {workers} at a time")
    run_side_by_side(lambda w2v, threads=None: cached_word2vec(words, w2v), jobs, workers)


def probe_corpus_words(tokenizer, corpus, max_length: int):
    """The probes' corpus as words (`tokenize_words`): what their word2vecs train on."""
    from hf_minattn.probes.encode import tokenize_words

    from .probing import PROBE_MIN_CONTEXTS

    return tokenize_words(tokenizer, corpus, max_length, min_contexts=PROBE_MIN_CONTEXTS)


def word2vec_tasks(settings: dict, seeds, tokenizer_dir: str) -> list:
    """Callables that train the probes' word2vecs at `seeds` into the cache, longest first, for the training runs'
    workers to take up where one would otherwise wait for the other (at the end); [] without a cache or with one
    worker (the probes then train them as they need them). The corpus is the probes' (`probe_variants`), cut into
    windows as they will cut it: the vectors are the ones they would train."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from hf_minattn.probes.corpus import wikipedia_train_sentences
    from hf_minattn.probes.loading import max_length_for
    from hf_minattn.probes.word2vec import cached_word2vec, word2vec_cache_dir

    from .training import base_overrides, build_config

    if word2vec_cache_dir() is None or min(settings.get("parallel", 1), os.cpu_count() or 1) < 2:
        return []
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    corpus = wikipedia_train_sentences(settings["vector_sentences"])
    config = build_config(settings, base_overrides(settings), len(tokenizer))  # the full model's positions
    words = probe_corpus_words(tokenizer, corpus, max_length_for(SimpleNamespace(config=config), tokenizer)).words
    jobs = uncached_word2vecs(settings, seeds, words, corpus_token_count(tokenizer, corpus))
    if jobs:
        log(f"training the probes' {len(jobs)} word2vecs with the runs, one thread each")
    return [lambda w2v=w2v: cached_word2vec(words, w2v) for w2v in jobs]
