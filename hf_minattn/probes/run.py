"""All probes on one encoder: `run_all_probes(model, tokenizer, sentences, ProbeSettings(...)) -> ProbeResults`
(numbers only), in phases that each fill part of the results: the word vectors, the word-level probes, the attention
probes, the masked-LM probes and the weight probes."""

import math
import time
from dataclasses import asdict, dataclass, field, fields

from hf_minattn.drift import read_drift
from hf_minattn.unigram import UnigramFloor

from .attention_flow import FLOW_MAX_TOKENS, flow_graph, rollout_graph
from .benchmarks import run_benchmarks
from .circuits import circuit_hypotheses
from .drift import drift_results
from .encode import (CorpusWords, check_corpus_words, encode_corpus, pool_corpus, tokenize_corpus, tokenize_words,
                     word_normaliser)
from .geometry import geometry
from .head_ablation import head_ablation, language_model_for
from .attention_view import attention_view, view_sentences
from .heads import attention_graph, head_statistics
from .loading import UnsupportedAttention, max_length_for
from .logit_lens import logit_lens as measure_logit_lens
from .neighbours import nearest_neighbours, sense_accuracy, word_in_contexts
from .pooling import selection_for
# DEFAULT_EXAMPLES: serve.py imports it from here
from .settings import DEFAULT_EXAMPLES, ProbeSettings, check_probe_arguments  # noqa: F401
from .vectors import static_word_vectors, word_vectors
from .layouts import unless_unsupported
from .weights import initial_model, weight_spectra


@dataclass
class CorpusStats:
    sentences: int
    words: int  # running words
    vocabulary: int  # distinct words (after the tokenizer's normalisation)
    tokens: int  # subword tokens, special tokens included
    max_length: int


@dataclass
class VectorCorpusStats:
    """The corpus the word vectors are pooled from (ProbeResults.pooling: which occurrences) and word2vec is trained
    on (every sentence)."""

    source: str
    sentences: int
    windows: int  # encoder inputs: a sentence longer than max_length is split into windows, not truncated
    words: int  # running words
    tokens: int  # subword tokens, special tokens included
    vocabulary: int  # the words that get vectors: seen in >= min_contexts distinct sentences (and pooled)
    vocabulary_total: int  # distinct words
    min_contexts: int
    pooling: str = "mean over a word's pieces, then mean over its pooled occurrences (Bommasani et al. 2020)"
    occurrences: str = "every occurrence"  # which occurrences are pooled, in words (the report's sentence)
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
    # which occurrences the vectors are pooled from (pooling.py): {design, contexts_per_word, words, sentences, ...}
    pooling: dict | None = None
    provenance: dict = field(default_factory=dict)  # versions, date, seed, corpus, arguments: see run_provenance
    timings: dict = field(default_factory=dict)  # seconds per probe
    notes: list = field(default_factory=list)
    word_vectors: object = field(default=None, repr=False, metadata={"json": False})  # written as KeyedVectors files

    def to_dict(self):
        return {f.name: _jsonable(asdict(v) if hasattr(v, "__dataclass_fields__") else v)
                for f in fields(self) if f.metadata.get("json", True) for v in [getattr(self, f.name)]}

    def save_json(self, path):
        """Written whole or not at all: a probe killed while writing leaves the earlier probes.json, not half of one."""
        from hf_minattn.record_files import write_json_atomically

        write_json_atomically(path, self.to_dict(), indent=1, allow_nan=False)


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


def _recorded_path(path) -> str:
    """`path` absolute if it exists here, else as given (e.g. a Hub id)."""
    import os

    return os.path.abspath(path) if os.path.exists(path) else str(path)


def run_provenance(seed, model_path, corpus_name, probe_sentences, extra=None) -> dict:
    """What a reader needs to rerun a probe: the package versions, the date, the seed, the model and corpora.
    `model_path` is recorded absolute when it names a local folder, so `hf-minattn view` finds the model from any
    folder (every caller: `hf-minattn probe`, the experiments); anything else (a Hub id) as given."""
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
            "model_path": None if model_path is None else _recorded_path(model_path), "vector_corpus": corpus_name,
            "probe_sentences": probe_sentences, "versions": versions, **(extra or {})}


def _token_ids(tokenizer, sentences, cache, limit=None):
    """Token ids (no special tokens) of the first `limit` sentences (None: all), each sentence tokenized at most once
    per run: `cache` (a list) holds the ids of the longest prefix tokenized so far."""
    sentences = list(sentences)[:limit]
    if len(sentences) > len(cache):
        # counts over whole sentences: the tokenizer's warning about lengths past the model's is noise here
        cache.extend(tokenizer(sentences[len(cache):], add_special_tokens=False, verbose=False)["input_ids"])
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


@dataclass
class _VectorCorpus:
    """The corpus the word vectors are pooled from and word2vec is trained on (default: the probe sentences), whose
    tokens the logit lens's floor and the circuits count."""

    sentences: list
    name: str
    words: CorpusWords | None = None  # as tokenized for this model: given by the caller or made when pooling
    token_ids: list = field(default_factory=list)  # _token_ids' cache: each sentence tokenized at most once


@dataclass
class _OtherVectors:
    """What the vectors phase hands to the word-level probes besides results.word_vectors."""

    encoded: object  # encode.EncodedCorpus of the probe sentences (geometry)
    untrained: object = None  # vectors.WordVectors of the untrained model
    reference: object = None  # vectors.WordVectors of the reference encoder
    reference_name: str | None = None


def run_all_probes(model, tokenizer, sentences, settings=ProbeSettings(), *, model_path=None, corpus=None,
                   corpus_name=None, corpus_words=None, reference=None, mlm_model=None, unigram=None, provenance=None,
                   log=print):
    """Every probe that `settings` (a ProbeSettings) asks for on `model` (any AutoModel encoder) and its fast tokenizer.

    `sentences` are the probe sentences (geometry, heads, neighbours). The word vectors are pooled from `corpus`
    (default: `sentences`; the CLI passes the default corpus's training split; `settings.contexts_per_word` and
    `settings.full_pooling` say which of its occurrences, pooling.py), named
    `corpus_name` in the results, where word2vec is also trained. `corpus_words`: `encode.tokenize_words` of that
    corpus with this tokenizer, this model's maximum length and `settings.min_count`, when the caller probes several
    models that share a tokenizer (it is then tokenized once). `model_path`: the model's folder, for its drift record
    and, when `model` has no masked-LM head, the masked LM (or, for a decoder, the next-token LM) of the head
    ablation, the logit lens and the circuits (`mlm_model`: that language model itself). `reference`: (model, fast tokenizer, name) of a fully trained encoder
    (`loading.load_reference`) probed with the same protocol on the same corpus. `unigram`: a
    `hf_minattn.unigram.UnigramFloor` of the training tokens for the lens's floor and gain (default: counted from the
    vector corpus). `provenance`: what the caller adds to the run's record (e.g. the command line; see
    `run_provenance`). `log`: where progress lines go.
    """
    check_probe_arguments(model, tokenizer, sentences, settings, reference)
    model.eval()
    vector_corpus = _VectorCorpus(sentences if corpus is None else corpus, corpus_name or (
        "the probe sentences" if corpus is None else "the given corpus"), corpus_words)
    if corpus_words is not None:
        check_corpus_words(corpus_words, vector_corpus.sentences, settings.min_count, max_length_for(model, tokenizer))
    config = model.config
    results = ProbeResults(
        model=settings.model_name or getattr(config, "_name_or_path", "") or type(model).__name__,
        model_class=type(model).__name__, num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size, corpus=None, geometry=None, neighbours=None,
        provenance=run_provenance(settings.seed, model_path, vector_corpus.name, len(sentences), provenance))
    others = _probe_vectors(results, model, tokenizer, sentences, vector_corpus, settings, reference, log)
    _probe_words(results, model, tokenizer, vector_corpus, others, settings, log)
    if settings.heads:
        try:
            _probe_attention(results, model, tokenizer, sentences, settings, log)
        except UnsupportedAttention as error:
            results.heads = results.attention_view = None
            results.notes.append(f"attention probes skipped: {error}")
    mlm, reason = None, None
    if (settings.heads and settings.ablation) or settings.logit_lens or settings.circuits:
        with _Timer(results.timings, "load masked LM", log):  # once: for the ablation, the lens and the circuits
            mlm, reason = language_model_for(model, model_path, mlm_model, settings.trust_remote_code)
    _probe_masked_lm(results, mlm, reason, tokenizer, sentences, vector_corpus, settings, unigram, log)
    _probe_weights(results, model, mlm, tokenizer, vector_corpus, settings, log)
    if model_path is not None:
        results.drift = drift_results(read_drift(model_path))
    results.timings["total"] = round(sum(results.timings.values()), 2)
    return results


def _untrained_vectors(results, model, tokenizer, words, full, max_length, settings):
    """The untrained twin's word vectors, pooled over `words` in full or from settings.twin_contexts_per_word
    sentences a word: a floor needs fewer contexts than the model (pooling.DEFAULT_TWIN_CONTEXTS_PER_WORD)."""
    fresh, selection = initial_model(model.config, settings.seed, type(model)).eval().to(model.device), None
    if not full:
        selection = selection_for(words, word_normaliser(tokenizer), settings, settings.twin_contexts_per_word)[0]
        results.pooling.update(twin_contexts_per_word=selection.contexts_per_word, twin_sentences=len(selection.sentences))
    pooled = pool_corpus(fresh, tokenizer, words=words, batch_size=settings.batch_size, max_length=max_length,
                         desc="pooling corpus (untrained)", selection=selection, bf16=settings.bf16)
    results.vector_corpus.seconds["untrained"] = round(pooled.seconds, 2)
    return word_vectors(fresh, tokenizer, pooled, decontextualized=settings.decontextualized)


def _probe_vectors(results, model, tokenizer, sentences, vector_corpus, settings, reference, log) -> _OtherVectors:
    """results.corpus, .vector_corpus, .pooling and .word_vectors: the probe sentences encoded (for geometry), and
    the words of the vector corpus pooled from their occurrences (Bommasani et al. 2020; settings.full_pooling: every
    word from every occurrence, else the words the probes read from at most settings.contexts_per_word sentences
    each), with the untrained model's and the reference's vectors beside them."""
    timings, max_length, min_count = results.timings, max_length_for(model, tokenizer), settings.min_count
    with _Timer(timings, "encode corpus", log):
        tokenized = tokenize_corpus(tokenizer, sentences, max_length)
        encoded = encode_corpus(model, tokenizer, sentences, batch_size=settings.batch_size, min_count=min_count,
                                seed=settings.seed, tokenized=tokenized, bf16=settings.bf16)
    results.corpus = CorpusStats(sentences=len(sentences), words=int(tokenized.counts.sum()),
                                 vocabulary=len(tokenized.vocab), tokens=sum(map(len, tokenized.encodings)),
                                 max_length=max_length)
    with _Timer(timings, "pool corpus", log):
        if vector_corpus.words is None:
            vector_corpus.words = tokenize_words(tokenizer, vector_corpus.sentences, max_length=max_length,
                                                 min_contexts=min_count)
        cw = vector_corpus.words
        if not cw.vocab:
            raise ValueError(f"no word of the vector corpus, {vector_corpus.name}, occurs in >= {min_count} distinct "
                             f"sentences (--min-count {min_count}); use a larger corpus (--vector-corpus, or --corpus "
                             "with --vector-corpus probe) or a lower --min-count")
        selection, results.pooling = selection_for(cw, word_normaliser(tokenizer), settings)
        pooled = pool_corpus(model, tokenizer, batch_size=settings.batch_size, max_length=max_length, words=cw,
                             desc="pooling corpus (model)", selection=selection, bf16=settings.bf16)
    stats = results.vector_corpus = VectorCorpusStats(
        source=vector_corpus.name, sentences=len(cw.words), windows=len(cw.windows), words=cw.running_words,
        tokens=cw.tokens, vocabulary=len(pooled.vocab), vocabulary_total=cw.vocabulary_total, min_contexts=min_count)
    stats.seconds["model"] = round(pooled.seconds, 2)
    if selection is not None:
        stats.occurrences = selection.described(settings.twin_contexts_per_word if settings.untrained else None)
    with _Timer(timings, "word vectors", log):
        results.word_vectors = word_vectors(model, tokenizer, pooled, decontextualized=settings.decontextualized)
    others = _OtherVectors(encoded=encoded)
    if settings.untrained:
        with _Timer(timings, "untrained model", log):
            others.untrained = _untrained_vectors(results, model, tokenizer, cw, selection is None, max_length, settings)
    if reference is not None:
        ref_model, ref_tokenizer, others.reference_name = reference
        with _Timer(timings, "reference model", log):
            ref_words = tokenize_words(ref_tokenizer, vector_corpus.sentences, min_contexts=min_count,
                                       max_length=max_length_for(ref_model, ref_tokenizer))
            pooled_r = pool_corpus(ref_model.eval(), ref_tokenizer, words=ref_words, batch_size=settings.batch_size,
                                   desc="pooling corpus (reference)", bf16=settings.bf16,
                                   selection=selection_for(ref_words, word_normaliser(ref_tokenizer), settings)[0])
            stats.seconds["reference"] = round(pooled_r.seconds, 2)
            stats.tokens_per_second["reference"] = round(pooled_r.tokens / max(pooled_r.seconds, 1e-9))
            others.reference = word_vectors(ref_model, ref_tokenizer, pooled_r,
                                            decontextualized=settings.decontextualized)
    for system, seconds in stats.seconds.items():
        stats.tokens_per_second.setdefault(system, round(pooled.tokens / max(seconds, 1e-9)))
    return others


def _probe_words(results, model, tokenizer, vector_corpus, others, settings, log):
    """results.geometry, .benchmarks, .neighbours, .sense and .sense_accuracy: how contextual each layer is, how well
    each vector set scores word pairs and analogies, the probe words' neighbours, and whether homonyms' senses
    separate."""
    timings, vectors, normalise = results.timings, results.word_vectors, word_normaliser(tokenizer)
    with _Timer(timings, "geometry", log):
        results.geometry = geometry(others.encoded, min_count=settings.min_count, seed=settings.seed, model=model,
                                    static=static_word_vectors(model, others.encoded.tokenized))
    with _Timer(timings, "benchmarks", log):
        results.benchmarks = run_benchmarks(
            vectors, vector_corpus.words.words, normalise, word2vec=settings.word2vec, untrained=others.untrained,
            reference=others.reference, reference_model=others.reference_name, min_contexts=settings.min_count,
            n_resamples=settings.bootstrap, seed=settings.seed)
    with _Timer(timings, "neighbours", log):
        results.neighbours = nearest_neighbours(vectors, settings.words, normalise)
        if settings.sense_word and settings.sense_sentences:
            try:
                results.sense = word_in_contexts(model, tokenizer, settings.sense_word, settings.sense_sentences,
                                                 vectors)
            except ValueError as error:
                results.notes.append(f"sense probe skipped: {error}")
    with _Timer(timings, "sense accuracy", log):
        try:
            results.sense_accuracy = sense_accuracy(model, tokenizer)
        except ValueError as error:
            results.notes.append(f"sense accuracy skipped: {error}")
    if results.neighbours.oov:
        results.notes.append(f"probe words missing from the corpus vocabulary: {', '.join(results.neighbours.oov)}")


def _probe_attention(results, model, tokenizer, sentences, settings, log):
    """results.heads, .attention_graph*, .attention_view: attention statistics over the probe sentences, the first
    example's graphs (raw, norm-weighted, rollout and flow) and the interactive view's data."""
    timings, notes = results.timings, results.notes
    with _Timer(timings, "attention heads", log):
        results.heads = head_statistics(model, tokenizer, sentences, settings.examples,
                                        max_sentences=settings.head_sentences)
        notes.extend(results.heads.notes)
        if results.heads.examples:
            results.attention_graph = attention_graph(results.heads.examples[0])
            if results.heads.examples[0].norm_weighted is not None:
                results.attention_graph_norm_weighted = attention_graph(results.heads.examples[0], weighting="norm")
    if settings.view:
        with _Timer(timings, "attention view", log):
            results.attention_view, _ = attention_view(
                model, tokenizer, view_sentences(tokenizer, settings.examples, sentences), results.model)
    if results.heads.examples:
        with _Timer(timings, "attention rollout and flow", log):
            example = results.heads.examples[0]
            results.attention_graph_rollout = rollout_graph(example)
            if len(example.tokens) <= FLOW_MAX_TOKENS:  # n^2 max-flow runs
                results.attention_graph_flow = flow_graph(example)
            else:
                notes.append(f"attention flow skipped: the first example has {len(example.tokens)} tokens, "
                             f"above FLOW_MAX_TOKENS = {FLOW_MAX_TOKENS}")


def _probe_masked_lm(results, mlm, reason, tokenizer, sentences, vector_corpus, settings, unigram, log):
    """results.head_ablation and .logit_lens on `mlm` (None: skipped for `reason`), on the same masked tokens: the
    masked-LM (or next-token) loss per zeroed head, and every layer decoded by the model's head."""
    timings, notes = results.timings, results.notes
    masking = dict(seed=settings.seed, mlm_probability=settings.mlm_probability,
                   mask_draws=settings.ablation_mask_draws, max_sentences=settings.ablation_sentences)
    if settings.heads and settings.ablation:
        with _Timer(timings, "head ablation", log):
            if mlm is None:
                notes.append(f"head ablation skipped: {reason}")
            else:  # zeroing one head needs to know where its output enters W_O
                results.head_ablation = unless_unsupported(notes, "head ablation", lambda: head_ablation(
                    mlm, tokenizer, sentences, **masking))
    if settings.logit_lens:
        with _Timer(timings, "logit lens", log):
            if mlm is None:
                notes.append(f"logit lens skipped: {reason}")
                return
            if unigram is None:
                unigram = _lens_floor(tokenizer, sentences, vector_corpus, notes)
            # the ablation's sentences, seed and masking: the same masked tokens
            results.logit_lens = unless_unsupported(notes, "logit lens", lambda: measure_logit_lens(
                mlm, tokenizer, sentences, unigram=unigram, **masking))


def _lens_floor(tokenizer, sentences, vector_corpus, notes):
    """The logit lens's unigram floor: token frequencies of the vector corpus (the CLI's: the training split), or,
    where the vector corpus is (a copy of) the probe sentences the lens scores, of the default corpus's training
    split's first CIRCUIT_SENTENCES sentences: counted on the scored tokens, the floor would be in-sample, too low."""
    if vector_corpus.sentences is sentences or list(vector_corpus.sentences) == list(sentences):
        from .corpus import wikipedia_train_sentences

        ids = _token_ids(tokenizer, wikipedia_train_sentences(CIRCUIT_SENTENCES), [])
        notes.append(f"logit lens: the unigram floor counts the tokens of the first {len(ids):,} sentences of the "
                     f"default Wikipedia corpus's training split, not of {vector_corpus.name}, which the lens scores")
    else:
        ids = _token_ids(tokenizer, vector_corpus.sentences, vector_corpus.token_ids)
        notes.append(f"logit lens: the unigram floor counts the tokens of {vector_corpus.name}")
    return UnigramFloor.from_token_ids(ids, len(tokenizer))


def _probe_weights(results, model, mlm, tokenizer, vector_corpus, settings, log):
    """results.weights and .circuits: the attention weights' spectra against initialisation, and layer 0's QK/OV
    circuits on the most frequent tokens of the vector corpus's first CIRCUIT_SENTENCES sentences."""
    timings, notes, seed = results.timings, results.notes, settings.seed
    if settings.weights:
        with _Timer(timings, "weights", log):
            results.weights = unless_unsupported(notes, "weights probe", lambda: weight_spectra(model, seed=seed))
    if not settings.circuits:
        return
    with _Timer(timings, "circuits", log):
        # the masked LM where there is one: with untied embeddings only its decoder holds the W_U the OV circuit
        # needs; a bare encoder with tied embeddings uses its word embeddings
        target = model if mlm is None else mlm
        seqs = _token_ids(tokenizer, vector_corpus.sentences, vector_corpus.token_ids, CIRCUIT_SENTENCES)
        # counts over the model's embedding rows (config.vocab_size), where the lens uses len(tokenizer)
        counts = UnigramFloor.from_token_ids(seqs, target.config.vocab_size)
        results.circuits = unless_unsupported(notes, "circuits", lambda: circuit_hypotheses(
            target, counts=counts, initial_model=True, cooccurrence=seqs, n_resamples=min(settings.bootstrap, 200),
            seed=seed, special_ids=tokenizer.all_special_ids))
        if results.circuits is not None and results.circuits.identity is None:  # OV scores alone (no QK form)
            notes.append(f"circuits: token counts from {len(seqs)} sentences of {vector_corpus.name} (the first "
                         f"{CIRCUIT_SENTENCES:,} at most)")
        elif results.circuits is not None:
            notes.append(f"circuits: token counts and co-occurrences (within {results.circuits.window} tokens) "
                         f"from {len(seqs)} sentences of {vector_corpus.name} (the first {CIRCUIT_SENTENCES:,} at "
                         f"most); initial = {type(target).__name__} re-created from its config, each module "
                         f"drawn from seed {seed} and its name")
