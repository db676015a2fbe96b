"""The probes, run on the first seed's model of each probed variant over the same sentences and word-vector corpus
(hf_minattn.probes' public functions as they are), plus two measurements the probes do not make: related-pair
cosines and the co-occurrence alignment of word vectors."""

import os

import numpy as np

from .training import log

def probe_variants(out: str, folders: dict, settings: dict, seed: int) -> tuple[dict, dict]:
    """Run every probe on each variant in `folders` ({name: folder}) over the same sentences; returns
    ({name: probes dict}, {name: extras}), the extras being the measurements of question 5 the probes do not make."""
    from hf_minattn.probes.cli import write_outputs
    from hf_minattn.probes.corpus import default_sentences, wikipedia_train_sentences
    from hf_minattn.probes.loading import load_encoder, resolve_device
    from hf_minattn.probes.run import run_all_probes

    sentences = default_sentences(settings["probe_sentences"])
    # Word vectors from every occurrence in the training split (capped in the quick preset), as `hf-minattn probe`
    # pools them; word2vec is trained there once, with the first variant (it does not depend on the model).
    corpus = wikipedia_train_sentences(settings["vector_sentences"])
    corpus_name = f"the Wikipedia sample's training split ({len(corpus)} sentences)"
    probes, extras = {}, {}
    for i, (name, folder) in enumerate(folders.items()):
        log(f"[{i + 1}/{len(folders)}] probing {name} over {len(sentences)} sentences, word vectors from {corpus_name}")
        model, tokenizer = load_encoder(folder, device=resolve_device(None))  # the GPU when there is one
        results = run_all_probes(model, tokenizer, sentences, model_name=name, model_path=folder,
                                 head_sentences=settings["head_sentences"], seed=seed, log=lambda m: None,
                                 corpus=corpus, corpus_name=corpus_name, word2vec=i == 0)
        write_outputs(results, os.path.join(out, "probes", name))
        probes[name] = results.to_dict()
        extras[name] = {
            "related_words": related_word_similarities(results.word_vectors),
            "cooccurrence": cooccurrence_alignment(results.word_vectors, tokenizer, sentences),
            "encoder_parameters": model.num_parameters(),
        }
    return probes, extras


RELATED_PAIRS = (("king", "queen"), ("king", "dog"), ("man", "woman"), ("man", "river"))


def related_word_similarities(word_vectors) -> dict:
    """Cosine of a few related and unrelated word pairs under the static vectors and every layer's."""
    result = {}
    for name in ["static", *[s for s in word_vectors.sets if s.startswith("layer_")]]:
        kv = word_vectors.keyed_vectors(name)
        result[name] = {f"{a}/{b}": (round(float(kv.similarity(a, b)), 4) if a in kv and b in kv else None)
                        for a, b in RELATED_PAIRS}
    return result


def cooccurrence_alignment(word_vectors, tokenizer, sentences, top_words=300, window=5) -> dict:
    """Do words that occur together get similar vectors? Spearman correlation, over all pairs of the
    `top_words` most frequent words, between their positive pointwise mutual information (co-occurrence within
    `window` words in a sentence) and the cosine of their vectors, for the static vectors and every layer's."""
    from scipy.stats import spearmanr

    from hf_minattn.probes.encode import tokenize_corpus

    words = tokenize_corpus(tokenizer, sentences).words
    vocab = word_vectors.vocab[:top_words]  # most frequent first
    index = {w: i for i, w in enumerate(vocab)}
    counts = np.zeros((len(vocab), len(vocab)))
    for sentence in words:
        ids = [index.get(w, -1) for w in sentence]
        for position, i in enumerate(ids):
            if i < 0:
                continue
            for j in ids[position + 1 : position + 1 + window]:
                if j >= 0 and j != i:
                    counts[i, j] += 1
                    counts[j, i] += 1
    total = counts.sum()
    marginal = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(counts * total / np.outer(marginal, marginal))
    ppmi = np.where(np.isfinite(pmi) & (pmi > 0), pmi, 0.0)
    upper = np.triu_indices(len(vocab), k=1)
    result = {"top_words": len(vocab), "window": window, "pairs": int(len(upper[0])),
              "cooccurring_pairs": int((counts[upper] > 0).sum()), "spearman": {}}
    for name in ["static", *[s for s in word_vectors.sets if s.startswith("layer_")]]:
        vectors = word_vectors.sets[name][: len(vocab)]
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        cosine = unit @ unit.T
        result["spearman"][name] = round(float(spearmanr(ppmi[upper], cosine[upper]).statistic), 4)
    return result
