"""Typed access to a probe run's `probes.json`: `load_probe_results(folder) -> SavedProbeResults`.

Readers (report, compare, experiments) use these dataclasses instead of string keys. Older files (no intervals, no
coverage) load too, the new fields None or 0. (`probes.run.ProbeResults` is a run in memory; this, what it left.)"""

import json
import math
import os
from dataclasses import dataclass, field, fields

from hf_minattn.stats import Interval

BENCHMARKS = ("wordsim353", "simlex999", "wordsim353_similarity", "wordsim353_relatedness")  # word-pair benchmarks


def _interval(d):
    """None for no interval, including one the bootstrap could not give (bounds saved as null: NaN)."""
    return Interval(**d) if d and d.get("low") is not None and d.get("high") is not None else None


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


@dataclass
class SimilarityScore:
    """One vector set on one word-pair benchmark: Spearman on the common pairs, its interval, coverage."""

    spearman: float | None
    interval: Interval | None
    pairs: int  # pairs scored (0 in files that did not record it)
    total: int
    oov: float | None  # 1 - pairs / total
    abtt: float | None = None  # after All-but-the-Top
    abtt_interval: Interval | None = None
    # paired bootstrap of rho(this) - rho(other) on the same pairs: {other system ("word2vec", "random",
    # "untrained"): Interval}; abtt_versus the same after All-but-the-Top (word2vec only). Empty in older files.
    versus: dict = field(default_factory=dict)
    abtt_versus: dict = field(default_factory=dict)


@dataclass
class SystemScores:
    vectors: str  # "static", "layer_<k>", "decontext_<k>", "word2vec", "random"
    similarity: dict  # benchmark -> SimilarityScore
    analogy: float | None
    analogy_questions: int
    analogy_semantic: float | None = None
    analogy_syntactic: float | None = None

    @classmethod
    def from_dict(cls, s):
        versus = s.get("versus") or {}
        paired = lambda key: {o: iv for o, d in versus.items() if (iv := _interval(d.get(key)))}  # noqa: E731
        sim = {b: SimilarityScore(spearman=_num(s.get(b)), interval=_interval(s.get(f"{b}_interval")),
                                  pairs=s.get(f"{b}_pairs", 0), total=s.get(f"{b}_total", 0), oov=_num(s.get(f"{b}_oov")),
                                  abtt=_num(s.get(f"{b}_abtt")), abtt_interval=_interval(s.get(f"{b}_abtt_interval")),
                                  versus=paired(b), abtt_versus=paired(f"{b}_abtt"))
               for b in BENCHMARKS if b in s}
        return cls(vectors=s["vectors"], similarity=sim, analogy=_num(s.get("analogy")),
                   analogy_questions=s.get("analogy_questions", 0), analogy_semantic=_num(s.get("analogy_semantic")),
                   analogy_syntactic=_num(s.get("analogy_syntactic")))


@dataclass
class BenchmarkSummary:
    systems: dict  # vector set name -> SystemScores (the probed model, word2vec, random)
    untrained: dict = field(default_factory=dict)  # same, for the architecture at initialisation
    reference: dict = field(default_factory=dict)  # same, for a fully trained reference encoder
    reference_model: str | None = None
    pairs: dict = field(default_factory=dict)  # benchmark -> {"kept", "total", "coverage"}
    analogy_questions: dict = field(default_factory=dict)
    word2vec: dict | None = None  # the settings it was trained with
    word2vec_corpus: dict | None = None
    word2vec_selection: dict | None = None  # how its settings were chosen (benchmarks/word2vec_selection.py)

    @classmethod
    def from_dict(cls, b):
        table = lambda rows: {s["vectors"]: SystemScores.from_dict(s) for s in rows or []}  # noqa: E731
        return cls(systems=table(b.get("scores")), untrained=table(b.get("untrained")),
                   reference=table(b.get("reference")), reference_model=b.get("reference_model"),
                   pairs=b.get("pairs") or {}, analogy_questions=b.get("analogy_questions") or {},
                   word2vec=b.get("word2vec"), word2vec_corpus=b.get("word2vec_corpus"),
                   word2vec_selection=b.get("word2vec_selection"))

    def layers(self, prefix="layer_", table=None):
        """{layer: SystemScores} of the contextual ("layer_") or decontextualized ("decontext_") sets."""
        table = self.systems if table is None else table
        return {int(k[len(prefix):]): v for k, v in table.items() if k.startswith(prefix) and k[len(prefix):].isdigit()}

    def best(self, benchmark, table=None, prefixes=("static", "layer_", "decontext_")):
        """The encoder set (not word2vec/random) with the highest Spearman on `benchmark`, or None."""
        table = self.systems if table is None else table
        candidates = [s for name, s in table.items() if name.startswith(prefixes)
                      and benchmark in s.similarity and s.similarity[benchmark].spearman is not None]
        return max(candidates, key=lambda s: s.similarity[benchmark].spearman, default=None)


GRAPHS = {"raw": "attention_graph", "norm_weighted": "attention_graph_norm_weighted",
          "rollout": "attention_graph_rollout", "flow": "attention_graph_flow"}  # graph name -> probes.json key


class Part:
    """A part of probes.json typed by its field names: each field is read from the key of the same name, a key the file
    lacks leaves the field's default (None for the optional ones); `from_dict` gives None for a part it lacks."""

    @classmethod
    def from_dict(cls, d):
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d}) if d else None


@dataclass
class AttentionGraph(Part):
    """One sentence's attention as a graph (heads.attention_graph; attention_flow.rollout_graph / flow_graph): an edge
    source -> target at a layer: node `source` draws on node `target` (attends to it; rollout, flow: holds a share of
    input word `target`) with at least the cut (`threshold`) of its weight."""

    labels: list  # node id -> label
    edges: list  # {"source", "target", "layer", "head" (int or "mean"), "weight"}
    weighting: str = "attention"  # "attention" (raw), "norm" (Kobayashi et al.), "rollout", "flow" (Abnar & Zuidema)
    sentence: str = ""
    level: str = "token"  # or "word"
    threshold: float | None = None  # None where the file did not record it; in a causal graph the smallest cut
    relative_threshold: float | None = None  # the threshold as a multiple of uniform attention 1/n (None if absolute)
    layers: list | None = None  # rollout / flow: the layers the graph has (flow: the last only)
    self_share: list | None = None  # rollout / flow, per layer: a node's mean share of its own input word
    whole_layer: str | None = "head mean"  # "mean" edges: the head mean, or "layer" (norm: ||sum_h a f_h||); None: none
    causal: bool | None = None  # a causal model's graph (cuts per query: 2/n_i); None where the file did not record it
    residual: bool | float | list | None = None  # rollout / flow: the residual weight (True: 0.5), per layer or token

    @classmethod
    def from_dict(cls, g):
        """Part's, the labels read from the file's nodes."""
        if not g:
            return None
        return super().from_dict({**g, "labels": [n["label"] for n in sorted(g.get("nodes", []), key=lambda n: n["id"])]})

    def strongest(self, layer, k=5, self_edges=False):
        """[(source label, target label, weight)]: the k heaviest "mean" edges at `layer` (self edges with
        `self_edges`), heaviest first."""
        edges = sorted((e for e in self.edges if e["layer"] == layer and e["head"] == "mean"
                        and (self_edges or e["source"] != e["target"])), key=lambda e: -e["weight"])
        return [(self.labels[e["source"]], self.labels[e["target"]], e["weight"]) for e in edges[:k]]


@dataclass
class StaticGeometry(Part):
    """The word embeddings alone (no positions) measured as a layer; a column the probe did not fill is None."""

    self_similarity: float | None = None
    anisotropy: float | None = None
    adjusted_self_similarity: float | None = None
    intra_similarity: float | None = None
    adjusted_intra_similarity: float | None = None
    mev: float | None = None
    mev_baseline: float | None = None
    adjusted_mev: float | None = None


@dataclass
class Geometry(Part):
    """Ethayarajh's (2019) geometry (geometry.py), one value per entry of `layers` in each list."""

    adjusted_self_similarity: list
    layers: list | None = None
    self_similarity: list | None = None
    anisotropy: list | None = None
    intra_similarity: list | None = None
    adjusted_intra_similarity: list | None = None
    mev: list | None = None
    mev_baseline: list | None = None
    adjusted_mev: list | None = None
    words_scored: int | None = None
    occurrences_per_word: float | None = None
    min_contexts: int | None = None  # distinct sentences a word needs (None in older files)
    static: StaticGeometry | None = None
    layer0_note: str | None = None
    layer0_position: bool | None = None  # a position term measured in layer 0 (None: not measured, older files)
    adjusted_self_similarity_by_band: dict | None = None  # frequency band -> [value per layer]
    words_per_band: dict | None = None
    most_context_specific: list | None = None  # [(word, adjusted self-similarity at the last layer)]
    least_context_specific: list | None = None
    band_contrast: dict | None = None  # top 100 - 1000+, last layer, interval, `one_piece` (None in older files)
    layer_contrast: dict | None = None  # last layer - layer 0, per word, with its interval (None in older files)

    @classmethod
    def from_dict(cls, d):
        g = super().from_dict(d)
        if g is not None:
            g.static = StaticGeometry.from_dict(g.static)
        return g


@dataclass
class HeadExample(Part):
    """One example sentence's attention: (layers, heads, tokens, tokens), raw and norm-weighted."""

    sentence: str
    tokens: list
    attention: list
    norm_weighted: list | None = None
    labels: list | None = None  # the tokens as figures show them (heads.token_labels); None in older files
    norm_weighted_layer: list | None = None  # (layers, tokens, tokens): ||sum_h a_ij f_h(x_j)||; None in older files
    causal: bool | None = None  # heads.is_causal on the exact weights; None in older files


def shown_tokens(example) -> list:
    """The tokens of an example (a HeadExample, or heads.AttentionExample) as figures and graphs label them."""
    return getattr(example, "labels", None) or example.tokens


@dataclass
class Heads(Part):
    """What the heads attend to (heads.py): per-target statistics as (layers, heads) lists, roles, the heads' map."""

    num_layers: int | None = None
    num_heads: int | None = None
    stats: dict = field(default_factory=dict)  # target ("entropy", "self", "previous", ...) -> (layers, heads)
    uniform_entropy: float | None = None
    tokens: int | None = None
    sentences: int | None = None
    relative_to_uniform: dict | None = None  # same keys: mass over what uniform attention would give
    norm_weighted_stats: dict | None = None
    roles: list | None = None  # (layers, heads) role names; None in files from before roles were chosen by mass
    role_mass: list | None = None
    role_ratio: list | None = None
    role_min_mass: float | None = None
    js_divergence: list | None = None  # (heads, heads), heads as k = layer * num_heads + head
    mds: list | None = None
    within_layer_js: list | None = None
    examples: list = field(default_factory=list)  # HeadExample
    causal: bool | None = None  # a causal model's attention (heads.is_causal); None in older files

    @classmethod
    def from_dict(cls, d):
        h = super().from_dict(d)
        if h is not None:
            h.examples = [HeadExample.from_dict(e) for e in h.examples]
        return h


@dataclass
class HeadAblation(Part):
    """Masked-LM loss increase when one head is zeroed, (layers, heads) with 95% half-widths."""

    loss_increase: list  # (layers, heads)
    interval95: list
    num_heads: int
    base_loss: float
    num_layers: int | None = None
    masked_tokens: int | None = None
    sentences: int | None = None
    mlm_probability: float | None = None
    objective: str = "masked"  # or "next-token" (a decoder's head)

    @classmethod
    def from_dict(cls, d):
        a = super().from_dict(d)
        if a is not None and a.mlm_probability is None:
            a.mlm_probability = d.get("mask_probability")  # older files
        return a


@dataclass
class SavedLogitLens(Part):
    """The logit lens as saved (logit_lens.LogitLens's fields the report reads), one entry per layer."""

    sentences: int
    masked_tokens: int
    loss: list
    accuracy: list
    interval95: list | None = None
    floor: float | None = None
    gain: list | None = None
    gain_interval95: list | None = None
    sentence_gain: list | None = None  # (layers + 1, sentences): each sentence's mean gain; None in older files
    sentence_tokens: list | None = None  # each sentence's scored tokens
    mlm_probability: float | None = None
    objective: str = "masked"  # or "next-token" (a decoder's head)


@dataclass
class SenseExample(Part):
    """One word in a few sentences: the cosine between its occurrences and their nearest words, per layer."""

    word: str
    sentences: list
    layers: list
    similarity: list  # per layer: (sentences, sentences)
    nearest: list | None = None  # per layer, per sentence: [(word, cosine)]
    senses: list | None = None  # each sentence's sense, where known (the default sentences)


@dataclass
class SenseAccuracy(Part):
    """Homonym senses by layer (senses.py): leave-one-out accuracy, its intervals (None in older files), controls."""

    words: list
    occurrences: int
    layers: list
    accuracy: list
    chance: float
    position_accuracy: float
    accuracy_interval: list | None = None
    raw_accuracy: list | None = None
    length_accuracy: float | None = None
    static_accuracy: float | None = None
    accuracy_by_word: dict | None = None
    senses: dict | None = None  # homonym -> its sense labels


@dataclass
class Neighbours(Part):
    """The probe words' nearest words: {vector set: {word: [(word, cosine)]}}."""

    words: list
    oov: list
    neighbours: dict


@dataclass
class CircuitSpectra(Part):
    """Per layer, per head: the QK and OV circuits' effective ranks and singular values."""

    qk_effective_rank: list
    ov_effective_rank: list
    qk_singular_values: list | None = None
    ov_singular_values: list | None = None


@dataclass
class Weights(Part):
    """QK and OV circuits of the trained model and (where measured) the same model at initialisation."""

    source: str
    head_dim: int
    trained: CircuitSpectra
    initial: CircuitSpectra | None = None
    notes: list[str] | None = None  # how the initial copy was made (a pretrained model's: re-created from its config)

    @classmethod
    def from_dict(cls, d):
        w = super().from_dict(d)
        if w is not None:
            w.trained, w.initial = CircuitSpectra.from_dict(w.trained), CircuitSpectra.from_dict(w.initial)
        return w


@dataclass
class SavedCircuits(Part):
    """Layer 0's circuits as saved (circuits.Circuits's fields the report reads): per head, Interval dicts."""

    num_heads: int
    token_ids: list
    identity: list | None  # None: no QK scores (queries and keys normalised per head), the OV scores alone
    cooccurrence: list | None = None
    initial: list | None = None
    qk_positive: list | None = None
    qk_self_rank: list | None = None
    ov_copying: list | None = None
    ov_self_rank: list | None = None
    note: str = ""


@dataclass
class Drift(Part):
    """Training drift read from a drift.json: {metric: {parameter: {"steps", "values"}}}."""

    path: str
    metrics: dict


PARTS = {"geometry": Geometry, "heads": Heads, "head_ablation": HeadAblation, "logit_lens": SavedLogitLens,
         "sense": SenseExample, "sense_accuracy": SenseAccuracy, "neighbours": Neighbours, "weights": Weights,
         "circuits": SavedCircuits, "drift": Drift}  # probes.json key -> its record (a SavedProbeResults field)


@dataclass
class SavedProbeResults:
    model: str
    model_class: str
    num_layers: int
    num_heads: int
    hidden_size: int
    benchmarks: BenchmarkSummary | None
    vector_corpus: dict | None  # source, sentences, words, vocabulary, seconds... (None in older files)
    attention_graphs: dict = field(default_factory=dict)  # the first example's graphs by GRAPHS name; None: absent
    provenance: dict | None = None  # date, seed, versions, arguments, command
    geometry: Geometry | None = None  # from here on the probes' parts (PARTS); None where the file does not have one
    heads: Heads | None = None
    head_ablation: HeadAblation | None = None
    logit_lens: SavedLogitLens | None = None
    sense: SenseExample | None = None
    sense_accuracy: SenseAccuracy | None = None
    neighbours: Neighbours | None = None
    weights: Weights | None = None
    circuits: SavedCircuits | None = None
    drift: Drift | None = None
    raw: dict = field(repr=False, default_factory=dict)  # the whole probes.json, for sections not typed here

    @classmethod
    def from_dict(cls, r):
        if missing := [k for k in ("model", "num_layers") if k not in r]:
            raise ValueError(f"not a probes.json dict: missing {missing}")
        saved = cls(model=r["model"], model_class=r.get("model_class", ""), num_layers=r["num_layers"],
                    num_heads=r.get("num_heads", 0), hidden_size=r.get("hidden_size", 0),
                    benchmarks=BenchmarkSummary.from_dict(r["benchmarks"]) if r.get("benchmarks") else None,
                    vector_corpus=r.get("vector_corpus"), provenance=r.get("provenance"), raw=r,
                    attention_graphs={name: AttentionGraph.from_dict(r.get(key)) for name, key in GRAPHS.items()},
                    **{key: part.from_dict(r.get(key)) for key, part in PARTS.items()})
        norm, examples = saved.attention_graphs["norm_weighted"], saved.heads.examples if saved.heads else []
        if norm and "whole_layer" not in r[GRAPHS["norm_weighted"]] and examples and examples[0].norm_weighted_layer:
            norm.whole_layer = "layer"  # a file from before the field whose code already drew the layer measure
        return saved


def load_probe_results(folder):
    """Read `folder`/probes.json (or a path to the file itself) written by `hf-minattn probe`."""
    path = os.path.join(folder, "probes.json") if os.path.isdir(folder) else str(folder)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{folder!r} has no probes.json; run `hf-minattn probe MODEL --out {folder}` first")
    with open(path, encoding="utf-8") as f:
        return SavedProbeResults.from_dict(json.load(f))


DECISION_RULE = ("Two systems are compared on the same pairs by the difference of their Spearman correlations, "
                 "rho(A) - rho(B), with a 95% paired bootstrap interval (each resample draws the pairs once for "
                 "both): A scores higher than B only when that interval lies wholly above 0, lower only when wholly "
                 "below 0; otherwise the two are not told apart.")
LEGACY_DECISION_RULE = ("A scores higher than B only when A's 95% bootstrap interval lies wholly above B's estimate "
                        "and B's interval (if any) wholly below A's estimate; otherwise the two are not told apart.")


def paired_verdict(score, other, abtt=False):
    """+1 / -1 / 0 by DECISION_RULE from SimilarityScore `score`'s paired interval against system `other`; None
    when no paired interval was saved (probes.json files from before the paired comparison)."""
    interval = (score.abtt_versus if abtt else score.versus).get(other) if score is not None else None
    return None if interval is None else interval.sign()


def verdict(a, b):
    """+1 if SimilarityScore `a` is higher than `b` by LEGACY_DECISION_RULE (for files without paired intervals),
    -1 if lower, 0 if not told apart (or missing)."""
    if a is None or b is None or a.spearman is None or b.spearman is None:
        return 0
    def above(x, y):  # x higher than y
        return (x.interval is not None and x.interval.low > y.spearman
                and (y.interval is None or y.interval.high < x.spearman))
    return 1 if above(a, b) else (-1 if above(b, a) else 0)
