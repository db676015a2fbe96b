"""What do the attention heads look at? Clark et al. (2019), per layer and head.

Statistics are averaged over every real (non-padding) query token: attention entropy (nats; uniform attention over
n keys gives log n), attention to the token itself / the previous / the next token, and the attention mass on [CLS],
[SEP] and punctuation. Head similarity: Jensen-Shannon divergence between two heads' attention distributions for the
same query, averaged over queries, embedded in 2-D by classical multidimensional scaling of the JS distance.

Roles, as Clark et al. report them: a head's role is the target it gives the most attention mass (mean over
queries of the attention on the previous token, the next token, itself, [CLS], [SEP] or punctuation), provided that
mass is >= ROLE_MIN_MASS (0.3); otherwise "none". Beside each mass, `relative_to_uniform`: observed mean / what
uniform attention over the n keys the same query sees gets (1/n for self, previous and next; the share of keys of
that kind for [CLS], [SEP], punctuation; log n for entropy). A query sees the sentence's n real tokens, or in a causal
model (a decoder's, `is_causal` on the exact attention) the i + 1 up to itself: its next token gets 0 and no ratio.
The ratio says how far above chance a head is, but ratios have different ceilings (a single-token target can reach
n x uniform, punctuation only 1 / its share of the keys), so it does not choose the role: a head giving 7% of its
attention to [CLS] can be 2x uniform and still attend mostly elsewhere. Conversely, in sentences of 3 tokens or
fewer uniform attention itself gives 1/n >= 0.3 to a single token: a ratio near 1 beside the mass shows that.

Also: norm-weighted statistics (attention_norms.py), the mean divergence between the heads of each layer, and one
sentence's attention as a graph. Elsewhere: head_ablation.py, and head_divergence.py between two models' heads.
"""

import unicodedata
from collections import namedtuple
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from .attention_norms import (attention_modules, capture_attention_inputs, norm_weighted, transformed_value_norms,
                              transformed_values, whole_layer_norm_weighting)
from .loading import eager_attention, max_length_for, run_model
from .progress import progress
from .results import shown_tokens
from .weights import UnsupportedArchitecture, head_weights

STATISTICS = ("entropy", "self", "previous", "next", "cls", "sep", "punctuation")
ROLES = ("self", "previous", "next", "cls", "sep", "punctuation")  # statistics that name a role
ROLE_MIN_MASS = 0.3  # a head gets a role only if it gives >= 30% of its attention (mean over queries) to that target


@dataclass
class AttentionExample:
    sentence: str
    tokens: list
    word_ids: list  # word index per token (None for special tokens)
    attention: list  # (layers, heads, T, T): row = query (attending) token, column = key (attended) token
    # Kobayashi et al.: per query, the shares a_ij ||f_h(x_j)|| / sum_j (...), (layers, heads, T, T); None if the
    # architecture is not supported. value_norms: ||f_h(x_j)|| (layers, heads, T).
    norm_weighted: list | None = None
    value_norms: list | None = None
    # Kobayashi et al.'s measure of a whole layer, per query ||sum_h a_ij^h f_h(x_j)|| as shares (layers, T, T): heads
    # that move long vectors weigh more, where a mean of the heads' shares would weigh them alike. None as above.
    norm_weighted_layer: list | None = None
    # What figures and graphs show: each token as its tokenizer decodes it alone ("Ġbank" -> "bank"; see
    # token_labels), and each word id's text in the sentence. None in examples made without a tokenizer.
    labels: list | None = None
    words: list | None = None
    causal: bool | None = None  # is_causal on the exact weights (before rounding); None where not measured


def token_labels(tokenizer, tokens) -> list:
    """Each token as text to show, as bertviz shows it: the tokenizer's own decoding of the token alone, so a
    byte-level "Ġbank" reads "bank" and SentencePiece's "▁bank" too, while WordPiece keeps "##ing". A token that alone
    decodes to nothing readable (a space, one byte of a character) is shown as it is."""
    labels = []
    for token in tokens:
        text = tokenizer.convert_tokens_to_string([token]).strip()
        labels.append(text if text and "\ufffd" not in text else token)
    return labels


def sentence_words(encoding, sentence) -> list:
    """The text of each word id of a one-sentence encoding, in the sentence ("" for an id without tokens)."""
    ids = [w for w in encoding.word_ids(0) if w is not None]
    spans = {w: encoding.word_to_chars(0, w) for w in set(ids)}
    # strip: a byte-level word's span includes the space before it
    return [sentence[spans[w][0]:spans[w][1]].strip() if w in spans else "" for w in range(max(ids, default=-1) + 1)]


@dataclass
class HeadResults:
    num_layers: int
    num_heads: int
    sentences: int  # sentences the statistics average over (head similarity: the first js_sentences)
    tokens: int  # query tokens the statistics average over
    uniform_entropy: float  # mean log(n) over the same queries, n the keys each sees: entropy of uniform attention
    stats: dict = field(default_factory=dict)  # statistic -> (layers, heads) nested list
    js_divergence: list = field(default_factory=list)  # (layers*heads)^2, head k = layer * num_heads + head
    mds: list = field(default_factory=list)  # (layers*heads, 2) coordinates
    examples: list = field(default_factory=list)  # list[AttentionExample]
    # statistic -> mean over the same queries of what uniform attention gets (1/n, share of keys of a kind, log n)
    uniform_expectation: dict = field(default_factory=dict)
    relative_to_uniform: dict = field(default_factory=dict)  # statistic -> (layers, heads): observed / expected
    # Roles (head_roles): the role statistic with the largest mass if >= role_min_mass, else "none"; its mass (mean
    # attention on the target) and its ratio to uniform (None for "none"), three parallel (layers, heads) arrays.
    roles: list = field(default_factory=list)
    role_mass: list = field(default_factory=list)
    role_ratio: list = field(default_factory=list)
    role_min_mass: float = ROLE_MIN_MASS
    within_layer_js: list = field(default_factory=list)  # per layer: mean JS divergence between its heads
    # The same statistics on norm-weighted attention shares (attention_norms.py); empty if unsupported.
    norm_weighted_stats: dict = field(default_factory=dict)
    norm_weighted_relative_to_uniform: dict = field(default_factory=dict)
    value_norm_mean: list = field(default_factory=list)  # (layers, heads): mean ||f_h(x_j)|| over real tokens
    causal: bool = False  # a causal model's attention (is_causal, on the exact weights of the first batch that tells)
    notes: list = field(default_factory=list)


def is_punctuation(token):
    token = token.removeprefix("##").removeprefix("Ġ").removeprefix("▁")
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def punctuation_ids(tokenizer):
    tokens = tokenizer.convert_ids_to_tokens(range(len(tokenizer)))
    return torch.tensor([i for i, tok in enumerate(tokens) if is_punctuation(tok)] or [-1])


def token_kinds(tokenizer, input_ids, punct_ids):
    """Boolean (B, T) masks of [CLS], [SEP] and punctuation tokens; all False for a token the tokenizer lacks (GPT-2
    has neither [CLS] nor [SEP])."""
    def equal(token_id):
        return input_ids == token_id if token_id is not None else torch.zeros_like(input_ids, dtype=torch.bool)

    return {"cls": equal(tokenizer.cls_token_id), "sep": equal(tokenizer.sep_token_id),
            "punctuation": torch.isin(input_ids, punct_ids)}


def attention_entropy(p):
    """Entropy (nats) of distributions along the last axis."""
    # p log p with 0 log 0 = 0 (clamping is several times faster than torch.special.xlogy here)
    return -(p * torch.log(p.clamp_min(1e-30))).sum(-1)


def _statistics(a, q, kinds):  # a (B, heads, T, T), q (B, T) real tokens -> name: (values (B, heads, Tq'), mask)
    stats = {"entropy": (attention_entropy(a), q), "self": (a.diagonal(dim1=-2, dim2=-1), q),
             "previous": (a.diagonal(offset=-1, dim1=-2, dim2=-1), q[:, 1:]),
             "next": (a.diagonal(offset=1, dim1=-2, dim2=-1), q[:, 1:] & q[:, :-1])}
    for kind, mask in kinds.items():
        stats[kind] = ((a * mask[:, None, None, :]).sum(-1), q)
    return stats


def is_causal(attentions, attention_mask=None):
    """Whether attention is a causal model's (a decoder's): every key after its query, both real, gets exactly 0 in
    every layer and head (a softmax never gives a key it sees exactly 0); None if no query has a key after it. Per
    layer (B, heads, T, T) with attention_mask (B, T), or (heads, T, T) without. Measure it on the exact weights."""
    layers = [torch.as_tensor(a) for a in attentions]
    T, device = layers[0].shape[-1], layers[0].device
    later = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)  # keys after their query
    if attention_mask is not None:
        q = attention_mask.bool().to(device)
        later = (later & q[:, :, None] & q[:, None, :])[:, None]  # (B, 1, T, T): both real
    return None if not later.any() else not any(a.masked_select(later).any() for a in layers)


def uniform_attention(attentions, attention_mask, causal=None):
    """(B, T, T): attention spread evenly over the keys each query sees, the baseline of `relative_to_uniform`: the
    real tokens, or in a causal model (`causal`; if None, is_causal of `attentions`) the real tokens up to itself."""
    q = attention_mask.bool()
    visible = q[:, :, None] & q[:, None, :]  # (B, Tq, Tk): both real
    causal = is_causal(attentions, attention_mask) if causal is None else causal
    visible = visible.tril() if causal else visible
    return visible / visible.sum(-1, keepdim=True).clamp_min(1)


class HeadStatistics:
    """Accumulates per-head sums over batches; `means()` gives the averages."""

    def __init__(self):
        self.sums, self.counts, self.queries, self.sentences = {}, {}, 0, 0
        self.expected_sums, self.expected_counts = {}, {}  # uniform attention on the same queries

    def _add(self, name, values, mask):  # values (B, heads, Tq), mask (B, Tq)
        total = (values * mask[:, None, :]).sum(dim=(0, 2))
        self.sums.setdefault(name, []).append(total)
        self.counts.setdefault(name, []).append(mask.sum())

    def add(self, attentions, attention_mask, kinds, causal=None):
        """attentions: per layer (B, heads, T, T); attention_mask (B, T); kinds: name -> (B, T) bool; causal: as
        uniform_attention's. Uniform attention's entropy, log n over the n keys a query sees, is expected "entropy"."""
        q = attention_mask.bool()
        uniform = uniform_attention(attentions, attention_mask, causal)  # (B, T, T)
        for name, (values, mask) in _statistics(uniform[:, None], q, kinds).items():  # one "head": uniform attention
            self.expected_sums[name] = self.expected_sums.get(name, 0.0) + float((values[:, 0] * mask).sum())
            self.expected_counts[name] = self.expected_counts.get(name, 0) + int(mask.sum())
        self.queries += int(q.sum())
        self.sentences += q.shape[0]
        per_layer = [_statistics(a.float(), q, kinds) for a in attentions]
        for name in per_layer[0]:
            for layer, stats in enumerate(per_layer):
                self._add((name, layer), *stats[name])

    def means(self):
        names = sorted({name for name, _ in self.sums}, key=STATISTICS.index)
        layers = 1 + max(layer for _, layer in self.sums)
        return {name: [(sum(self.sums[name, l]) / max(1, sum(self.counts[name, l]))).tolist()
                       for l in range(layers)] for name in names}

    def uniform_expectation(self):
        """statistic -> mean over the same queries of the value uniform attention gets."""
        return {name: self.expected_sums[name] / max(1, self.expected_counts[name])
                for name in sorted(self.expected_sums, key=STATISTICS.index)}

    def relative_to_uniform(self):
        """statistic -> (layers, heads) observed mean / uniform expectation (None where the expectation is 0,
        e.g. no punctuation among the keys)."""
        expected = self.uniform_expectation()
        return {name: [[v / expected[name] if expected.get(name) else None for v in layer] for layer in values]
                for name, values in self.means().items()}


# (layers, heads) arrays: `roles` (from ROLES or "none"), `mass` (mean attention on the role's target), `ratio` (over
# uniform attention's); None for "none".
HeadRoles = namedtuple("HeadRoles", "roles mass ratio")


def head_roles(stats, relative, min_mass=ROLE_MIN_MASS):
    """Clark et al.'s roles from per-head means: per head, among the role statistics whose mass (`stats`: statistic
    -> (layers, heads) mean attention) is >= `min_mass`, the one with the largest mass; "none" if none reaches it.
    `relative` (statistic -> (layers, heads) ratio to uniform, None where undefined) only supplies the ratio shown
    beside the mass."""
    if not (isinstance(min_mass, (int, float)) and 0 < min_mass <= 1):
        raise ValueError(f"min_mass must be a fraction of attention in (0, 1], got {min_mass!r}")
    names = [r for r in ROLES if r in stats]
    if not names:
        return HeadRoles([], [], [])
    mass = np.array([stats[r] for r in names], dtype=float)  # (roles, layers, heads)
    best = mass.argmax(axis=0)  # (layers, heads): the role statistic with the largest mass
    roles, masses, ratios = [], [], []
    for layer, row in enumerate(best):
        roles.append([]), masses.append([]), ratios.append([])
        for head, b in enumerate(row):
            m = float(mass[b, layer, head])
            ratio = relative[names[b]][layer][head] if names[b] in relative else None
            roles[-1].append(names[b] if m >= min_mass else "none")
            masses[-1].append(m if m >= min_mass else None)
            ratios[-1].append(float(ratio) if m >= min_mass and ratio is not None else None)
    return HeadRoles(roles, masses, ratios)


def js_divergence_sums(attentions, attention_mask, max_elements=2**24):
    """Sum over query tokens of the pairwise JS divergence between all heads: (K, K), K = layers*heads."""
    stacked = torch.stack([a.float() for a in attentions], dim=1)  # (B, L, heads, T, T)
    B, K = stacked.shape[0], stacked.shape[1] * stacked.shape[2]
    total = torch.zeros(K, K)
    for b in range(B):
        real = attention_mask[b].bool()  # the real tokens, wherever the padding side puts the pads
        n = int(real.sum())
        p = stacked[b][..., real, :][..., real].reshape(K, n, n)  # (L, H, n, n) -> (K, n, n)
        hp = attention_entropy(p)  # (K, n)
        step = max(1, max_elements // (K * n * n))  # rows of the K x K table per block, to bound memory
        for i in range(0, K, step):
            hm = attention_entropy((p[i : i + step, None] + p[None]) / 2)  # (step, K, n); JS = H(M) - (H(P) + H(Q)) / 2
            total[i : i + step] += (hm - (hp[i : i + step, None] + hp[None]) / 2).sum(-1)
    return total


def within_layer_divergence(js, num_layers, num_heads):
    """Per layer, the mean JS divergence between its distinct heads, from a (L*H, L*H) JS matrix
    (head k = layer * num_heads + head); None for a layer with one head."""
    js = np.asarray(js, dtype=float)
    if js.shape != (num_layers * num_heads,) * 2:
        raise ValueError(f"js must be ({num_layers * num_heads}, {num_layers * num_heads}) for {num_layers} layers x "
                         f"{num_heads} heads, got {js.shape}")
    off = ~np.eye(num_heads, dtype=bool)
    return [float(js[l * num_heads:(l + 1) * num_heads, l * num_heads:(l + 1) * num_heads][off].mean())
            if num_heads > 1 else None for l in range(num_layers)]


def classical_mds(distances, dims=2):
    """Torgerson MDS: coordinates whose Euclidean distances approximate `distances`."""
    d2 = np.asarray(distances) ** 2
    n = len(d2)
    centring = np.eye(n) - np.ones((n, n)) / n
    gram = -0.5 * centring @ d2 @ centring
    values, vectors = np.linalg.eigh(gram)
    top = np.argsort(values)[::-1][:dims]
    return vectors[:, top] * np.sqrt(np.maximum(values[top], 0))


def sentence_batches(tokenizer, sentences, max_length, batch_size):
    """(sentences, padded encoding) per batch, shortest sentences first (less padding)."""
    sentences = sorted(sentences, key=len)
    for i in range(0, len(sentences), batch_size):
        yield sentences[i : i + batch_size], tokenizer(sentences[i : i + batch_size], padding=True, truncation=True,
                                                       max_length=max_length, return_tensors="pt")


@contextmanager
def _maybe_capture(model, enabled, notes):
    """capture_attention_inputs if the architecture is supported, else None (and a note saying why)."""
    if enabled:
        try:
            attention_modules(model), head_weights(model)
        except UnsupportedArchitecture as error:
            notes.append(f"norm-weighted attention skipped: {error}")
            enabled = False
    with capture_attention_inputs(model) if enabled else nullcontext() as inputs:  # None when not enabled
        yield inputs


def attention_example(model, tokenizer, sentence, max_length, inputs=None):
    """One sentence's full attention maps (an AttentionExample), and its norm-weighted shares when `inputs` are the
    attention inputs captured by capture_attention_inputs. Call within eager_attention and inference_mode."""
    enc = tokenizer(sentence, truncation=True, max_length=max_length, return_tensors="pt")
    att = torch.stack(run_model(model, enc, output_attentions=True).attentions)[:, 0]  # (L, H, T, T)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    example = AttentionExample(sentence=sentence, tokens=tokens, word_ids=enc.word_ids(0),
                               attention=att.round(decimals=4).tolist(), labels=token_labels(tokenizer, tokens),
                               words=sentence_words(enc, sentence), causal=is_causal(att))
    if inputs is not None:
        values = torch.stack([f[0].cpu() for f in transformed_values(model, inputs)])  # (L, H, T, C): f_h(x_j)
        norms = values.norm(dim=-1)  # (L, H, T)
        example.norm_weighted = norm_weighted(att, norms).round(decimals=4).tolist()
        example.norm_weighted_layer = whole_layer_norm_weighting(att, values).round(decimals=4).tolist()  # (L, T, T)
        example.value_norms = norms.round(decimals=4).tolist()
    return example


def attention_examples(model, tokenizer, sentences, norm_weighting=True):
    """attention_example for each sentence, on the eager path, with norm-weighted shares where the architecture
    allows; returns (examples, notes)."""
    notes, max_length = [], max_length_for(model, tokenizer)
    model.eval()
    with eager_attention(model), torch.inference_mode(), _maybe_capture(model, norm_weighting, notes) as inputs:
        return [attention_example(model, tokenizer, s, max_length, inputs) for s in sentences], notes


def head_statistics(model, tokenizer, sentences, examples=(), max_sentences=200, js_sentences=64, batch_size=32,
                    norm_weighting=True):
    """Attention statistics over up to `max_sentences` sentences (head similarity over the first
    `js_sentences`, the shortest: its cost grows with heads^2 x length^2), plus full maps for `examples`.
    With `norm_weighting`, the same statistics on Kobayashi et al.'s norm-weighted shares (attention_norms.py)."""
    max_length = max_length_for(model, tokenizer)
    totals, norm_totals, js_sum, punct_ids = HeadStatistics(), HeadStatistics(), None, punctuation_ids(tokenizer)
    js_queries, notes, value_norm_sum, causal = 0, [], None, None
    model.eval()
    with eager_attention(model), torch.inference_mode(), _maybe_capture(model, norm_weighting, notes) as inputs:
        batches = list(sentence_batches(tokenizer, list(sentences)[:max_sentences], max_length, batch_size))
        for _, enc in progress(batches, desc="attention heads"):
            att = run_model(model, enc, output_attentions=True).attentions
            kinds = token_kinds(tokenizer, enc["input_ids"], punct_ids)
            causal = is_causal(att, enc["attention_mask"]) if causal is None else causal  # measured once
            totals.add(att, enc["attention_mask"], kinds, causal)
            if inputs is not None:
                norms = transformed_value_norms(model, inputs)  # per layer (B, H, T)
                norm_totals.add([norm_weighted(a, v) for a, v in zip(att, norms)], enc["attention_mask"], kinds, causal)
                mask = enc["attention_mask"][:, None, :].float()
                batch_sum = torch.stack([(v * mask).sum(dim=(0, 2)) for v in norms])  # (L, H)
                value_norm_sum = batch_sum if value_norm_sum is None else value_norm_sum + batch_sum
            if js_queries == 0 or totals.sentences <= js_sentences:
                js = js_divergence_sums(att, enc["attention_mask"])
                js_sum, js_queries = (js if js_sum is None else js_sum + js), js_queries + int(enc["attention_mask"].sum())
        example_maps = [attention_example(model, tokenizer, sentence, max_length, inputs) for sentence in examples]
    if totals.queries == 0:
        raise ValueError("no sentences to compute attention statistics on")
    js = (js_sum / js_queries).clamp(min=0).numpy()
    L, H = len(att), att[0].shape[1]  # from the weights: ConvBERT's attention has fewer heads than its config's
    stats, relative, expected = totals.means(), totals.relative_to_uniform(), totals.uniform_expectation()
    roles = head_roles(stats, relative)
    result = HeadResults(num_layers=L, num_heads=H, sentences=totals.sentences, tokens=totals.queries,
                         uniform_entropy=expected["entropy"], stats=stats, js_divergence=js.tolist(),
                         mds=classical_mds(np.sqrt(js)).tolist(), examples=example_maps, uniform_expectation=expected,
                         relative_to_uniform=relative, roles=roles.roles, role_mass=roles.mass, role_ratio=roles.ratio,
                         within_layer_js=within_layer_divergence(js, L, H), causal=bool(causal), notes=notes)
    if value_norm_sum is not None:
        result.norm_weighted_stats = norm_totals.means()
        result.norm_weighted_relative_to_uniform = norm_totals.relative_to_uniform()
        result.value_norm_mean = (value_norm_sum / totals.queries).tolist()
    return result


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


GRAPH_RELATIVE_THRESHOLD = 2.0  # an edge needs >= 2x the uniform weight 1/n


def _node_labels(example, owner, tokens):
    """Each word-level node's label: the word as the sentence writes it, or for a special token (or an example
    without its words) its pieces joined."""
    labels = {}
    for t, (o, w) in enumerate(zip(owner.tolist(), example.word_ids)):
        known = w is not None and example.words
        labels[o] = example.words[w] if known else labels.get(o, "") + tokens[t].removeprefix("##")
    return [labels[i] for i in range(len(labels))]


def uniform_weights(owner, causal=False):
    """(nodes, 1): per query node, the weight uniform attention gives each node it sees: 1/n of the n nodes, or in a
    causal model (is_causal) 1/n_i, n_i the nodes with a token at or before the query node's last one. owner (T,):
    each token's node, numbered in order."""
    n = int(owner.max()) + 1
    if not causal:
        return torch.full((n, 1), 1 / n)
    last = torch.zeros(n, dtype=torch.long).scatter_reduce(0, owner, torch.arange(len(owner)), "amax")
    return 1 / (owner.cummax(0).values[last] + 1).float()[:, None]  # nodes up to each node's last token


def attention_graph(example, threshold=None, level="word", relative_threshold=GRAPH_RELATIVE_THRESHOLD,
                    weighting="attention"):
    """One sentence's attention as a directed graph (JSON-ready; docs/attention-graph.md): an edge source -> target,
    per layer and head plus each layer's "mean", means the query attends to the key with a weight >= relative_threshold
    x what uniform attention gives its query (uniform_weights; in a causal model, example.causal or else is_causal on
    the stored weights, "threshold" is the smallest cut), or >= an absolute `threshold`. `weighting`: "attention"
    (raw; "mean" the head mean) or "norm" (Kobayashi et al.'s shares; "mean" the layer's ||sum_h a_ij^h f_h(x_j)||,
    example.norm_weighted_layer, none without it): "whole_layer" says which ("head mean", "layer", None)."""
    if weighting not in ("attention", "norm"):
        raise ValueError(f"weighting must be 'attention' or 'norm', got {weighting!r}")
    if level not in ("word", "token"):
        raise ValueError(f"level must be 'word' or 'token', got {level!r}")
    if threshold is None and not (isinstance(relative_threshold, (int, float)) and relative_threshold >= 0):
        raise ValueError(f"relative_threshold must be a number >= 0 (a multiple of 1/n), got {relative_threshold!r}")
    weights = example.attention if weighting == "attention" else example.norm_weighted
    if weights is None:
        raise ValueError("this example has no norm-weighted attention (architecture not supported); use weighting='attention'")
    attention, whole = torch.as_tensor(weights), example.norm_weighted_layer  # (L, H, T, T), (L, T, T) or None
    means = attention.mean(1) if weighting == "attention" else None if whole is None else torch.as_tensor(whole)
    tokens, owner = shown_tokens(example), torch.arange(attention.shape[-1])
    if level == "word":
        pooled, owner = word_level_attention(attention, example.word_ids)
        means = None if means is None else word_level_attention(means, example.word_ids)[0]  # (L, W, W)
        attention, tokens = pooled, _node_labels(example, owner, tokens)
    causal = getattr(example, "causal", None)
    causal, absolute = bool(is_causal(example.attention) if causal is None else causal), threshold is not None
    cut = torch.tensor(float(threshold)) if absolute else relative_threshold * uniform_weights(owner, causal)
    edges = []
    for layer, per_head in enumerate(attention):
        for head, matrix in [*enumerate(per_head), *([("mean", means[layer])] if means is not None else [])]:
            for source, target in (matrix >= cut).nonzero().tolist():
                edges.append({"source": source, "target": target, "layer": layer, "head": head,
                              "weight": round(float(matrix[source, target]), 4)})
    whole_layer = "head mean" if weighting == "attention" else None if means is None else "layer"
    return {"directed": True, "sentence": example.sentence, "level": level, "weighting": weighting,
            "threshold": float(cut.min()), "relative_threshold": None if threshold is not None else relative_threshold,
            "uniform_weight": 1 / len(tokens), "causal": causal, "whole_layer": whole_layer,
            "nodes": [{"id": i, "label": tok} for i, tok in enumerate(tokens)], "edges": edges}
