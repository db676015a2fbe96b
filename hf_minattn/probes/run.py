"""All probes on one encoder: `run_all_probes(model, tokenizer, sentences) -> ProbeResults` (numbers only)."""

import json
import math
import time
from dataclasses import asdict, dataclass, field, fields

from hf_minattn.drift import read_drift
from hf_minattn.unigram import UnigramFloor

from .attention_flow import FLOW_MAX_TOKENS, flow_graph, rollout_graph
from .benchmarks import run_benchmarks
from .circuits import circuit_hypotheses
from .drift import drift_results
from .encode import CorpusWords, encode_corpus, pool_corpus, tokenize_corpus, word_normaliser
from .geometry import geometry, static_word_vectors
from .head_ablation import check_masking, head_ablation, is_masked_lm
from .attention_view import attention_view, view_sentences
from .heads import attention_graph, head_statistics
from .loading import max_length_for
from .logit_lens import logit_lens as measure_logit_lens
from .neighbours import (DEFAULT_SENSE_SENTENCES, DEFAULT_SENSE_WORD, DEFAULT_WORDS, nearest_neighbours, sense_accuracy,
                         word_in_contexts)
from .vectors import word_vectors
from .weights import UnsupportedArchitecture, initial_model, weight_spectra

DEFAULT_EXAMPLES = ("The king and the queen walked their dog to the old castle.",
                    "The quick brown fox jumps over the lazy dog, and the dog sleeps.")


@dataclass
class CorpusStats:
    sentences: int
    words: int  # running words
    vocabulary: int  # distinct words (after the tokenizer's normalisation)
    tokens: int  # subword tokens, special tokens included
    max_length: int


@dataclass
class VectorCorpusStats:
    """The corpus the word vectors are pooled from (every occurrence) and word2vec is trained on."""

    source: str
    sentences: int
    windows: int  # encoder inputs: a sentence longer than max_length is split into windows, not truncated
    words: int  # running words
    tokens: int  # subword tokens, special tokens included
    vocabulary: int  # words seen in >= min_contexts distinct sentences: the words that get vectors
    vocabulary_total: int  # distinct words
    min_contexts: int
    pooling: str = "mean over a word's pieces, then mean over all its occurrences (Bommasani et al. 2020)"
    seconds: dict = field(default_factory=dict)  # encoder pass per system: "model", "untrained", "reference"
    tokens_per_second: dict = field(default_factory=dict)


@dataclass
class ProbeResults:
    model: str
    model_class: str
    num_layers: int
    num_heads: int
    hidden_size: int
    corpus: CorpusStats  # the probe sentences (geometry, heads)
    geometry: object
    neighbours: object
    benchmarks: object = None
    sense: object = None
    heads: object = None
    attention_graph: dict = None
    weights: object = None
    drift: object = None
    sense_accuracy: object = None  # neighbours.SenseAccuracy: homonym senses per layer, leave-one-out
    head_ablation: object = None  # head_ablation.HeadAblation: masked-LM loss increase per zeroed head
    logit_lens: object = None  # logit_lens.LogitLens: masked-LM loss and accuracy of every layer, decoded by the head
    circuits: object = None  # circuits.Circuits: layer 0's QK/OV circuits per head against named hypotheses
    attention_graph_norm_weighted: dict = None  # attention_graph(..., weighting='norm') of the first example
    # the same sentence's attention rollout (every layer) and attention flow (last layer): attention_flow.py
    attention_graph_rollout: dict = None
    attention_graph_flow: dict = None
    # the interactive view's data (attention_view.py): a few sentences' attention graphs, raw, norm-weighted, rollout;
    # written to attention_view.json and into report.html, not into probes.json (a few hundred kB a sentence)
    attention_view: dict = field(default=None, repr=False, metadata={"json": False})
    vector_corpus: VectorCorpusStats | None = None
    provenance: dict = field(default_factory=dict)  # versions, date, seed, corpus, arguments: see run_provenance
    timings: dict = field(default_factory=dict)  # seconds per probe
    notes: list = field(default_factory=list)
    # The vector sets themselves are exported as KeyedVectors files, not into probes.json.
    word_vectors: object = field(default=None, repr=False, metadata={"json": False})

    def to_dict(self):
        return {f.name: _jsonable(asdict(v) if hasattr(v, "__dataclass_fields__") else v)
                for f in fields(self) if f.metadata.get("json", True) for v in [getattr(self, f.name)]}

    def save_json(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=1, allow_nan=False)


def _jsonable(value):
    """NaN (e.g. a benchmark with every pair OOV) becomes null, tuples lists, numpy scalars floats."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


PACKAGES = ("hf_minattn", "torch", "transformers", "tokenizers", "datasets", "gensim", "numpy", "scipy")


def run_provenance(seed, model_path, corpus_name, probe_sentences, extra=None) -> dict:
    """What a reader needs to rerun a probe: the package versions, the date, the seed, the model and corpora."""
    import datetime
    import platform
    import sys
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:  # e.g. a source checkout on PYTHONPATH: the module's own version, if it has one
            versions[package] = getattr(sys.modules.get(package), "__version__", None)
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "seed": seed,
            "model_path": None if model_path is None else str(model_path), "vector_corpus": corpus_name,
            "probe_sentences": probe_sentences, "versions": versions, **(extra or {})}


def _masked_lm_for(model, model_path=None, mlm_model=None, trust_remote_code=False):
    """(masked-LM model, None) for head ablation and the logit lens, or (None, why not): `mlm_model` if given, `model`
    if it is one, else the checkpoint at `model_path` loaded with AutoModelForMaskedLM if it has trained masked-LM
    head weights."""
    if mlm_model is not None:
        return (mlm_model.eval(), None) if is_masked_lm(mlm_model) else (None, f"{type(mlm_model).__name__} is not a masked LM")
    if is_masked_lm(model):
        return model, None
    if model_path is None:
        return None, f"{type(model).__name__} has no masked-LM head and no checkpoint path was given to load one"
    from transformers import AutoModelForMaskedLM

    try:
        mlm, info = AutoModelForMaskedLM.from_pretrained(model_path, trust_remote_code=trust_remote_code,
                                                         output_loading_info=True)
    except (ValueError, OSError, KeyError) as error:
        return None, f"{model_path} does not load as a masked LM ({error})"
    if info.get("missing_keys"):
        missing = sorted(info["missing_keys"])
        return None, (f"{model_path} has no trained masked-LM head (missing {len(missing)} weights, e.g. {missing[0]}); "
                      "a randomly initialised head would make the loss meaningless")
    return mlm.to(model.device).eval(), None


def _token_ids(tokenizer, sentences, cache, limit=None):
    """Token ids (no special tokens) of the first `limit` sentences (None: all), each sentence tokenized at most once
    per run: `cache` (a list) holds the ids of the longest prefix tokenized so far."""
    sentences = list(sentences)[:limit]
    if len(sentences) > len(cache):
        cache.extend(tokenizer(sentences[len(cache):], add_special_tokens=False)["input_ids"])
    return cache[:len(sentences)]


CIRCUIT_SENTENCES = 20_000  # the vector corpus's first sentences, whose tokens the circuits probe counts


class _Timer:
    def __init__(self, timings, name, log):
        self.timings, self.name, self.log = timings, name, log

    def __enter__(self):
        self.start = time.perf_counter()
        self.log(f"[probe] {self.name} ...")

    def __exit__(self, *exc):
        self.timings[self.name] = round(time.perf_counter() - self.start, 2)
        if exc[0] is None:
            self.log(f"[probe] {self.name} done in {self.timings[self.name]:.1f}s")


def check_corpus_words(corpus_words, sentences, min_count, max_length):
    """`corpus_words` (a CorpusWords) must be a tokenization of `sentences` with `min_count` in windows of at most
    `max_length` tokens."""
    if not isinstance(corpus_words, CorpusWords):
        raise TypeError(f"corpus_words must be a CorpusWords (encode.tokenize_words), got {type(corpus_words).__name__}")
    if len(corpus_words.words) != len(sentences):
        raise ValueError(f"corpus_words holds {len(corpus_words.words)} sentences, the vector corpus "
                         f"{len(sentences)}: tokenize the same corpus")
    if corpus_words.min_contexts != min_count:
        raise ValueError(f"corpus_words was tokenized with min_contexts={corpus_words.min_contexts}, the probes use "
                         f"min_count={min_count}")
    longest = max(map(len, corpus_words.windows))
    if longest > max_length:
        raise ValueError(f"corpus_words has windows of {longest} tokens, over the model's {max_length}: tokenize "
                         f"with max_length={max_length}")


def run_all_probes(model, tokenizer, sentences, words=DEFAULT_WORDS, sense_word=DEFAULT_SENSE_WORD,
                   sense_sentences=DEFAULT_SENSE_SENTENCES, examples=DEFAULT_EXAMPLES, model_name=None,
                   model_path=None, word2vec=True, decontextualized=True, heads=True, weights=True,
                   head_sentences=200, min_count=5, batch_size=64, seed=0, log=print, corpus=None,
                   corpus_name=None, untrained=None, reference=None, reference_name=None, n_resamples=1000,
                   ablation=True, mlm_model=None, ablation_sentences=64, trust_remote_code=False, provenance=None,
                   mlm_probability=0.15, ablation_mask_draws=1, logit_lens=True, unigram=None, circuits=True,
                   view=True, corpus_words=None):
    """Every probe of the issue on `model` (any AutoModel encoder) and its fast tokenizer.

    `sentences` are the probe sentences (geometry, heads, neighbours). The word vectors are pooled from EVERY
    occurrence in `corpus` (default: `sentences`; the CLI passes the default corpus's training split), where
    word2vec is also trained. `untrained`: True (the same architecture re-initialised with `seed`) or a model,
    scored beside every benchmark number; `reference`: (model, fast tokenizer) of a fully trained encoder probed
    with the same protocol on the same corpus. Words need >= `min_count` distinct sentences to get vectors.
    `provenance`: what the caller adds to the run's record (e.g. the command line); see `run_provenance`.
    `mlm_probability` / `ablation_mask_draws`: the masking of the head-ablation loss (use the rate the model was
    trained at: the experiments train and ablate at 0.3). `logit_lens`: every layer decoded through the MLM head, on
    the same masked tokens (masked LMs only, like the ablation); `unigram`: a `hf_minattn.unigram.UnigramFloor` of
    the training tokens, for the lens's floor and gain (default: counted from the vector corpus). `circuits`: layer 0's
    QK and OV circuits against the identity, co-occurrence and initialisation hypotheses (MinAttn models only), on the
    most frequent tokens of the vector corpus's first CIRCUIT_SENTENCES sentences. `view`: the interactive attention
    view's data (the examples, then short probe sentences: attention_view.view_sentences), with the heads probe.
    `corpus_words`: `encode.tokenize_words` of the vector corpus with this tokenizer, this model's maximum length
    and `min_count`, when the caller probes several models that share a tokenizer (it is then tokenized once).
    """
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count must be a positive integer, got {min_count!r}")
    if reference is not None and not (isinstance(reference, tuple) and len(reference) == 2):
        raise TypeError(f"reference must be a (model, tokenizer) tuple, got {type(reference).__name__}")
    check_masking(mlm_probability, ablation_mask_draws, "ablation_mask_draws")  # here, not when the ablation runs
    model.eval()
    timings, notes = {}, []
    vector_sentences = sentences if corpus is None else corpus
    corpus_name = corpus_name or ("the probe sentences" if corpus is None else "the given corpus")
    normalise = word_normaliser(tokenizer)
    max_length = max_length_for(model, tokenizer)
    if corpus_words is not None:
        check_corpus_words(corpus_words, vector_sentences, min_count, max_length)
    with _Timer(timings, "encode corpus", log):
        tokenized = tokenize_corpus(tokenizer, sentences, max_length)
        encoded = encode_corpus(model, tokenizer, sentences, batch_size=batch_size, min_count=min_count,
                                seed=seed, tokenized=tokenized)
    corpus = CorpusStats(sentences=len(sentences), words=int(tokenized.counts.sum()),
                         vocabulary=len(tokenized.vocab), tokens=sum(map(len, tokenized.encodings)),
                         max_length=max_length)
    with _Timer(timings, "pool corpus", log):
        pooled = pool_corpus(model, tokenizer, vector_sentences, batch_size=batch_size, max_length=max_length,
                             min_contexts=min_count, words=corpus_words, desc="pooling corpus (model)")
    cw = pooled.words
    vector_corpus = VectorCorpusStats(source=corpus_name,
                                      sentences=len(cw.words), windows=len(cw.windows), words=cw.running_words,
                                      tokens=cw.tokens, vocabulary=len(cw.vocab), vocabulary_total=cw.vocabulary_total,
                                      min_contexts=min_count)
    vector_corpus.seconds["model"] = round(pooled.seconds, 2)
    with _Timer(timings, "word vectors", log):
        vectors = word_vectors(model, tokenizer, pooled, decontextualized=decontextualized)
    untrained_vectors = reference_vectors = None
    if untrained is not None and untrained is not False:
        with _Timer(timings, "untrained model", log):
            fresh = initial_model(model.config, seed, type(model)).eval().to(model.device) if untrained is True else untrained.eval()
            pooled_u = pool_corpus(fresh, tokenizer, words=cw, batch_size=batch_size, max_length=max_length,
                                   desc="pooling corpus (untrained)")
            vector_corpus.seconds["untrained"] = round(pooled_u.seconds, 2)
            untrained_vectors = word_vectors(fresh, tokenizer, pooled_u, decontextualized=decontextualized)
    if reference is not None:
        ref_model, ref_tokenizer = reference
        with _Timer(timings, "reference model", log):
            pooled_r = pool_corpus(ref_model.eval(), ref_tokenizer, vector_sentences, batch_size=batch_size,
                                   min_contexts=min_count, desc="pooling corpus (reference)")
            vector_corpus.seconds["reference"] = round(pooled_r.seconds, 2)
            vector_corpus.tokens_per_second["reference"] = round(pooled_r.words.tokens / max(pooled_r.seconds, 1e-9))
            reference_vectors = word_vectors(ref_model, ref_tokenizer, pooled_r, decontextualized=decontextualized)
    for system, seconds in vector_corpus.seconds.items():
        vector_corpus.tokens_per_second.setdefault(system, round(cw.tokens / max(seconds, 1e-9)))
    with _Timer(timings, "geometry", log):
        geo = geometry(encoded, min_count=min_count, seed=seed, static=static_word_vectors(model, tokenized), model=model)
    with _Timer(timings, "benchmarks", log):
        bench = run_benchmarks(vectors, cw.words, normalise, word2vec=word2vec, untrained=untrained_vectors,
                               reference=reference_vectors, reference_model=reference_name, min_contexts=min_count,
                               n_resamples=n_resamples, seed=seed)
    with _Timer(timings, "neighbours", log):
        neighbours = nearest_neighbours(vectors, words, normalise)
        sense = None
        if sense_word and sense_sentences:
            try:
                sense = word_in_contexts(model, tokenizer, sense_word, sense_sentences, vectors)
            except ValueError as error:
                notes.append(f"sense probe skipped: {error}")
    with _Timer(timings, "sense accuracy", log):
        try:
            senses = sense_accuracy(model, tokenizer)
        except ValueError as error:
            senses = None
            notes.append(f"sense accuracy skipped: {error}")
    results = ProbeResults(model=model_name or getattr(model.config, "_name_or_path", "") or type(model).__name__,
                           model_class=type(model).__name__, num_layers=model.config.num_hidden_layers,
                           num_heads=model.config.num_attention_heads, hidden_size=model.config.hidden_size,
                           corpus=corpus, geometry=geo, neighbours=neighbours, benchmarks=bench, sense=sense,
                           vector_corpus=vector_corpus, timings=timings, notes=notes, word_vectors=vectors,
                           sense_accuracy=senses,
                           provenance=run_provenance(seed, model_path, corpus_name, len(sentences), provenance))
    if neighbours.oov:
        notes.append(f"probe words missing from the corpus vocabulary: {', '.join(neighbours.oov)}")
    if heads:
        with _Timer(timings, "attention heads", log):
            results.heads = head_statistics(model, tokenizer, sentences, examples, max_sentences=head_sentences)
            notes.extend(results.heads.notes)
            if results.heads.examples:
                results.attention_graph = attention_graph(results.heads.examples[0])
                if results.heads.examples[0].norm_weighted is not None:
                    results.attention_graph_norm_weighted = attention_graph(results.heads.examples[0], weighting="norm")
        if view:
            with _Timer(timings, "attention view", log):
                results.attention_view, _ = attention_view(model, tokenizer,
                                                           view_sentences(tokenizer, examples, sentences), results.model)
        if results.heads.examples:
            with _Timer(timings, "attention rollout and flow", log):
                example = results.heads.examples[0]
                results.attention_graph_rollout = rollout_graph(example)
                if len(example.tokens) <= FLOW_MAX_TOKENS:  # n^2 max-flow runs
                    results.attention_graph_flow = flow_graph(example)
                else:
                    notes.append(f"attention flow skipped: the first example has {len(example.tokens)} tokens, "
                                 f"above FLOW_MAX_TOKENS = {FLOW_MAX_TOKENS}")
    mlm = None
    if (heads and ablation) or logit_lens or circuits:
        with _Timer(timings, "load masked LM", log):  # once, for the head ablation, the logit lens and the circuits
            mlm, reason = _masked_lm_for(model, model_path, mlm_model, trust_remote_code)
    corpus_ids = []  # the vector corpus's token ids, tokenized once for the lens's floor and the circuits' counts
    if heads and ablation:
        with _Timer(timings, "head ablation", log):
            if mlm is None:
                notes.append(f"head ablation skipped: {reason}")
            else:
                results.head_ablation = head_ablation(mlm, tokenizer, sentences, max_sentences=ablation_sentences, seed=seed,
                                                      mlm_probability=mlm_probability, mask_draws=ablation_mask_draws)
    if logit_lens:
        with _Timer(timings, "logit lens", log):
            if mlm is None:
                notes.append(f"logit lens skipped: {reason}")
            else:  # the ablation's sentences, seed and masking: the same masked tokens
                if unigram is None:  # token frequencies of the vector corpus (the CLI's: the training split)
                    unigram = UnigramFloor.from_token_ids(_token_ids(tokenizer, vector_sentences, corpus_ids),
                                                          len(tokenizer))
                    notes.append(f"logit lens: the unigram floor counts the tokens of {corpus_name}")
                try:
                    results.logit_lens = measure_logit_lens(mlm, tokenizer, sentences, max_sentences=ablation_sentences,
                                                            seed=seed, mlm_probability=mlm_probability,
                                                            mask_draws=ablation_mask_draws, unigram=unigram)
                except UnsupportedArchitecture as error:
                    notes.append(f"logit lens skipped: {error}")
    if weights:
        with _Timer(timings, "weights", log):
            try:
                results.weights = weight_spectra(model, seed=seed)
            except UnsupportedArchitecture as error:
                notes.append(f"weights probe skipped: {error}")
    if circuits:
        with _Timer(timings, "circuits", log):
            # the masked LM where there is one: with untied embeddings only its decoder holds the W_U the OV circuit
            # needs; a bare encoder with tied embeddings uses its word embeddings
            target = model if mlm is None else mlm
            seqs = _token_ids(tokenizer, vector_sentences, corpus_ids, CIRCUIT_SENTENCES)
            try:  # counts over the model's embedding rows (config.vocab_size), where the lens uses len(tokenizer)
                counts = UnigramFloor.from_token_ids(seqs, target.config.vocab_size)
                results.circuits = circuit_hypotheses(target, counts=counts, initial_model=True, cooccurrence=seqs,
                                                      n_resamples=min(n_resamples, 200), seed=seed)
                notes.append(f"circuits: token counts and co-occurrences (within {results.circuits.window} tokens) "
                             f"from {len(seqs)} sentences of {corpus_name} (the first {CIRCUIT_SENTENCES:,} at "
                             f"most); initial = {type(target).__name__} re-created from its config, each module "
                             f"drawn from seed {seed} and its name")
            except UnsupportedArchitecture as error:
                notes.append(f"circuits skipped: {error}")
    if model_path is not None:
        results.drift = drift_results(read_drift(model_path))
    timings["total"] = round(sum(timings.values()), 2)
    return results
