"""What do the attention heads look at? Clark et al. (2019), per layer and head.

Statistics are averaged over every real (non-padding) query token: attention entropy (nats; uniform
attention over n tokens gives log n), attention to the token itself / the previous / the next token,
and the attention mass on [CLS], [SEP] and punctuation. Head similarity: Jensen-Shannon divergence
between two heads' attention distributions for the same query, averaged over queries, embedded in
2-D by classical multidimensional scaling of the JS distance (sqrt of the divergence).
"""

import unicodedata
from dataclasses import dataclass, field

import numpy as np
import torch

from .loading import eager_attention, max_length_for, model_inputs
from .progress import progress

STATISTICS = ("entropy", "self", "previous", "next", "cls", "sep", "punctuation")


@dataclass
class AttentionExample:
    sentence: str
    tokens: list
    word_ids: list  # word index per token (None for special tokens)
    attention: list  # (layers, heads, T, T): row = query (attending) token, column = key (attended) token


@dataclass
class HeadResults:
    num_layers: int
    num_heads: int
    sentences: int  # sentences the statistics average over (head similarity: the first js_sentences)
    tokens: int  # query tokens the statistics average over
    uniform_entropy: float  # mean log(n) over the same queries: entropy of uniform attention
    stats: dict = field(default_factory=dict)  # statistic -> (layers, heads) nested list
    js_divergence: list = field(default_factory=list)  # (layers*heads)^2, head k = layer * num_heads + head
    mds: list = field(default_factory=list)  # (layers*heads, 2) coordinates
    examples: list = field(default_factory=list)  # list[AttentionExample]


def is_punctuation(token):
    token = token.removeprefix("##").removeprefix("Ġ").removeprefix("▁")
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def punctuation_ids(tokenizer):
    tokens = tokenizer.convert_ids_to_tokens(range(len(tokenizer)))
    return torch.tensor([i for i, tok in enumerate(tokens) if is_punctuation(tok)] or [-1])


def token_kinds(tokenizer, input_ids, punct_ids):
    """Boolean (B, T) masks of [CLS], [SEP] and punctuation tokens."""
    return {"cls": input_ids == tokenizer.cls_token_id, "sep": input_ids == tokenizer.sep_token_id,
            "punctuation": torch.isin(input_ids, punct_ids)}


def _entropy(p):
    # p log p with 0 log 0 = 0 (clamping is several times faster than torch.special.xlogy here)
    return -(p * torch.log(p.clamp_min(1e-30))).sum(-1)


class HeadStatistics:
    """Accumulates per-head sums over batches; `means()` gives the averages."""

    def __init__(self):
        self.sums, self.counts = {}, {}
        self.log_n_sum, self.queries, self.sentences = 0.0, 0, 0

    def _add(self, name, values, mask):  # values (B, heads, Tq), mask (B, Tq)
        total = (values * mask[:, None, :]).sum(dim=(0, 2))
        self.sums.setdefault(name, []).append(total)
        self.counts.setdefault(name, []).append(mask.sum())

    def add(self, attentions, attention_mask, kinds):
        """attentions: per layer (B, heads, T, T); attention_mask (B, T); kinds: name -> (B, T) bool."""
        q = attention_mask.bool()
        n = q.sum(-1, keepdim=True).expand_as(q).float()
        self.log_n_sum += float(torch.log(n)[q].sum())
        self.queries += int(q.sum())
        self.sentences += q.shape[0]
        per_layer = []
        for a in attentions:
            a = a.float()
            stats = {"entropy": (_entropy(a), q), "self": (a.diagonal(dim1=-2, dim2=-1), q),
                     "previous": (a.diagonal(offset=-1, dim1=-2, dim2=-1), q[:, 1:]),
                     "next": (a.diagonal(offset=1, dim1=-2, dim2=-1), q[:, 1:] & q[:, :-1])}
            for kind, mask in kinds.items():
                stats[kind] = ((a * mask[:, None, None, :]).sum(-1), q)
            per_layer.append(stats)
        for name in per_layer[0]:
            for layer, stats in enumerate(per_layer):
                self._add((name, layer), *stats[name])

    def means(self):
        names = sorted({name for name, _ in self.sums}, key=STATISTICS.index)
        layers = 1 + max(layer for _, layer in self.sums)
        return {name: [(sum(self.sums[name, l]) / max(1, sum(self.counts[name, l]))).tolist()
                       for l in range(layers)] for name in names}


def js_divergence_sums(attentions, attention_mask, max_elements=2**24):
    """Sum over query tokens of the pairwise JS divergence between all heads: (K, K), K = layers*heads."""
    stacked = torch.stack([a.float() for a in attentions], dim=1)  # (B, L, heads, T, T)
    B, L, H = stacked.shape[:3]
    K = L * H
    total = torch.zeros(K, K)
    for b in range(B):
        n = int(attention_mask[b].sum())
        p = stacked[b, :, :, :n, :n].reshape(K, n, n)
        hp = _entropy(p)  # (K, n)
        step = max(1, max_elements // (K * n * n))  # rows of the K x K table per block, to bound memory
        for i in range(0, K, step):
            hm = _entropy((p[i : i + step, None] + p[None]) / 2)  # (step, K, n); JS = H(M) - (H(P) + H(Q)) / 2
            total[i : i + step] += (hm - (hp[i : i + step, None] + hp[None]) / 2).sum(-1)
    return total


def classical_mds(distances, dims=2):
    """Torgerson MDS: coordinates whose Euclidean distances approximate `distances`."""
    d2 = np.asarray(distances) ** 2
    n = len(d2)
    centring = np.eye(n) - np.ones((n, n)) / n
    gram = -0.5 * centring @ d2 @ centring
    values, vectors = np.linalg.eigh(gram)
    top = np.argsort(values)[::-1][:dims]
    return vectors[:, top] * np.sqrt(np.maximum(values[top], 0))


def _batches(tokenizer, sentences, max_length, batch_size):
    sentences = sorted(sentences, key=len)
    for i in range(0, len(sentences), batch_size):
        yield sentences[i : i + batch_size], tokenizer(sentences[i : i + batch_size], padding=True, truncation=True,
                                                       max_length=max_length, return_tensors="pt")


def head_statistics(model, tokenizer, sentences, examples=(), max_sentences=200, js_sentences=64, batch_size=32):
    """Attention statistics over up to `max_sentences` sentences (head similarity over the first
    `js_sentences`, the shortest: its cost grows with heads^2 x length^2), plus full maps for `examples`."""
    max_length = max_length_for(model, tokenizer)
    totals, js_sum, punct_ids = HeadStatistics(), None, punctuation_ids(tokenizer)
    js_queries = 0
    model.eval()
    with eager_attention(model), torch.inference_mode():
        batches = list(_batches(tokenizer, list(sentences)[:max_sentences], max_length, batch_size))
        for _, enc in progress(batches, desc="attention heads"):
            att = model(**model_inputs(model, enc), output_attentions=True).attentions
            totals.add(att, enc["attention_mask"], token_kinds(tokenizer, enc["input_ids"], punct_ids))
            if js_queries == 0 or totals.sentences <= js_sentences:
                js = js_divergence_sums(att, enc["attention_mask"])
                js_sum, js_queries = (js if js_sum is None else js_sum + js), js_queries + int(enc["attention_mask"].sum())
        example_maps = []
        for sentence in examples:
            enc = tokenizer(sentence, truncation=True, max_length=max_length, return_tensors="pt")
            att = model(**model_inputs(model, enc), output_attentions=True).attentions
            example_maps.append(AttentionExample(
                sentence=sentence, tokens=tokenizer.convert_ids_to_tokens(enc["input_ids"][0]),
                word_ids=enc.word_ids(0), attention=torch.stack(att)[:, 0].round(decimals=4).tolist()))
    if totals.queries == 0:
        raise ValueError("no sentences to compute attention statistics on")
    js = (js_sum / js_queries).clamp(min=0).numpy()
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    return HeadResults(num_layers=L, num_heads=H, sentences=totals.sentences, tokens=totals.queries,
                       uniform_entropy=totals.log_n_sum / totals.queries, stats=totals.means(),
                       js_divergence=js.tolist(), mds=classical_mds(np.sqrt(js)).tolist(), examples=example_maps)


def word_level_attention(attention, word_ids):
    """Pieces -> words (Clark et al.): attention TO a word is summed over its pieces, FROM a word averaged.
    Special tokens stay their own nodes. attention (..., T, T) -> (..., W, W); returns (matrix, owner index)."""
    groups, owner = {}, []
    for t, w in enumerate(word_ids):
        key = ("word", w) if w is not None else ("special", t)
        owner.append(groups.setdefault(key, len(groups)))
    owner = torch.tensor(owner)
    to_words = torch.nn.functional.one_hot(owner).float()  # (T, W): sums columns
    from_words = (to_words / to_words.sum(0)).T  # (W, T): averages rows
    return from_words @ torch.as_tensor(attention).float() @ to_words, owner


def attention_graph(example, threshold=0.1, level="word"):
    """One sentence's attention as a weighted directed graph (JSON-ready): an edge source -> target
    means the source (query) attends to the target (key); per layer and head plus each layer's head mean."""
    attention = torch.as_tensor(example.attention)  # (L, H, T, T)
    tokens = example.tokens
    if level == "word":
        attention, owner = word_level_attention(attention, example.word_ids)
        labels = {}
        for t, o in enumerate(owner.tolist()):
            piece = tokens[t].removeprefix("##")
            labels[o] = labels.get(o, "") + piece
        tokens = [labels[i] for i in range(len(labels))]
    nodes = [{"id": i, "label": tok} for i, tok in enumerate(tokens)]
    edges = []
    for layer, per_head in enumerate(attention):
        for head, matrix in [*enumerate(per_head), ("mean", per_head.mean(0))]:
            for source, target in (matrix >= threshold).nonzero().tolist():
                edges.append({"source": source, "target": target, "layer": layer, "head": head,
                              "weight": round(float(matrix[source, target]), 4)})
    return {"directed": True, "sentence": example.sentence, "level": level, "threshold": threshold,
            "nodes": nodes, "edges": edges}
