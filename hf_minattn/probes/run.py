"""All probes on one encoder: `run_all_probes(model, tokenizer, sentences) -> ProbeResults` (numbers only)."""

import json
import math
import time
from dataclasses import asdict, dataclass, field, fields

from .benchmarks import run_benchmarks
from .drift import read_drift
from .encode import encode_corpus, tokenize_corpus, word_normaliser
from .geometry import geometry
from .heads import attention_graph, head_statistics
from .loading import max_length_for
from .neighbours import DEFAULT_SENSE_SENTENCES, DEFAULT_SENSE_WORD, DEFAULT_WORDS, nearest_neighbours, word_in_contexts
from .vectors import word_vectors
from .weights import UnsupportedArchitecture, weight_spectra

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
class ProbeResults:
    model: str
    model_class: str
    num_layers: int
    num_heads: int
    hidden_size: int
    corpus: CorpusStats
    geometry: object
    neighbours: object
    benchmarks: object = None
    sense: object = None
    heads: object = None
    attention_graph: dict = None
    weights: object = None
    drift: object = None
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


def run_all_probes(model, tokenizer, sentences, words=DEFAULT_WORDS, sense_word=DEFAULT_SENSE_WORD,
                   sense_sentences=DEFAULT_SENSE_SENTENCES, examples=DEFAULT_EXAMPLES, model_name=None,
                   model_path=None, word2vec=True, decontextualized=True, heads=True, weights=True,
                   head_sentences=200, min_count=5, batch_size=64, seed=0, log=print):
    """Every probe of the issue on `model` (any AutoModel encoder) and its fast tokenizer over `sentences`."""
    model.eval()
    timings, notes = {}, []
    normalise = word_normaliser(tokenizer)
    max_length = max_length_for(model, tokenizer)
    with _Timer(timings, "encode corpus", log):
        tokenized = tokenize_corpus(tokenizer, sentences, max_length)
        encoded = encode_corpus(model, tokenizer, sentences, batch_size=batch_size, min_count=min_count,
                                seed=seed, tokenized=tokenized)
    corpus = CorpusStats(sentences=len(sentences), words=int(tokenized.counts.sum()),
                         vocabulary=len(tokenized.vocab), tokens=sum(map(len, tokenized.encodings)),
                         max_length=max_length)
    with _Timer(timings, "word vectors", log):
        vectors = word_vectors(model, tokenizer, encoded, decontextualized=decontextualized)
    with _Timer(timings, "geometry", log):
        geo = geometry(encoded, min_count=min_count, seed=seed)
    with _Timer(timings, "benchmarks", log):
        bench = run_benchmarks(vectors, tokenized.words, normalise, word2vec=word2vec)
    with _Timer(timings, "neighbours", log):
        neighbours = nearest_neighbours(vectors, words, normalise)
        sense = None
        if sense_word and sense_sentences:
            try:
                sense = word_in_contexts(model, tokenizer, sense_word, sense_sentences, vectors)
            except ValueError as error:
                notes.append(f"sense probe skipped: {error}")
    results = ProbeResults(model=model_name or getattr(model.config, "_name_or_path", "") or type(model).__name__,
                           model_class=type(model).__name__, num_layers=model.config.num_hidden_layers,
                           num_heads=model.config.num_attention_heads, hidden_size=model.config.hidden_size,
                           corpus=corpus, geometry=geo, neighbours=neighbours, benchmarks=bench, sense=sense,
                           timings=timings, notes=notes, word_vectors=vectors)
    if neighbours.oov:
        notes.append(f"probe words missing from the corpus vocabulary: {', '.join(neighbours.oov)}")
    if heads:
        with _Timer(timings, "attention heads", log):
            results.heads = head_statistics(model, tokenizer, sentences, examples, max_sentences=head_sentences)
            if results.heads.examples:
                results.attention_graph = attention_graph(results.heads.examples[0])
    if weights:
        with _Timer(timings, "weights", log):
            try:
                results.weights = weight_spectra(model, seed=seed)
            except UnsupportedArchitecture as error:
                notes.append(f"weights probe skipped: {error}")
    if model_path is not None:
        results.drift = read_drift(model_path)
    timings["total"] = round(sum(timings.values()), 2)
    return results
