"""The data of the interactive attention view (report.html, `hf-minattn view`): for each of a few sentences, its
attention as graphs in the schema of `attention_graph.json` (docs/attention-graph.md, attention_graph.schema.json),
one graph per weighting:

- "attention": the raw attention weights, per layer and head, plus each layer's head mean (head "mean");
- "norm": Kobayashi et al.'s norm-weighted shares (attention_norms.py), where the architecture allows, per head plus
  the whole layer's ||sum_h a_ij^h f_h(x_j)|| as shares (head "mean"; the graph's "whole_layer" says "layer");
- "rollout": Abnar & Zuidema's rollout (attention_flow.py), head "mean" only: it averages the heads.

Graphs are at token level (the pieces the model sees, as bertviz shows them), edges kept from
GRAPH_RELATIVE_THRESHOLD = 2 times the uniform weight 1/n up, as in attention_graph.json: a line means "at least
twice uniform", and the data stays small (a few hundred kB a sentence at 4 layers x 4 heads). The page
(attention_view.js) draws them; nothing is computed in the browser but which edges to show. A sentence longer than
the model reads is encoded cut to that length, and listed as "<sentence> (cut to N tokens)".
"""

import json
from importlib import resources

from .attention_flow import rollout_graph
from .heads import attention_examples, attention_graph
from .loading import max_length_for

VIEW_SCHEMA = "hf_minattn/attention-view/1"
VIEW_LEVEL = "token"
VIEW_SENTENCES = 4  # the heads probe's examples first, then probe sentences, up to this many
VIEW_MAX_TOKENS = 32  # longer probe sentences make an unreadable view and large data (typed ones may be longer)
WEIGHTINGS = ("attention", "norm", "rollout")


def example_graphs(example) -> dict:
    """weighting -> graph for one AttentionExample (no "norm" where its norm-weighted shares are missing)."""
    graphs = {"attention": attention_graph(example, level=VIEW_LEVEL)}
    if example.norm_weighted is not None:
        graphs["norm"] = attention_graph(example, level=VIEW_LEVEL, weighting="norm")
    graphs["rollout"] = rollout_graph(example, level=VIEW_LEVEL)
    return graphs


def view_entry(example, sentence=None) -> dict:
    """One sentence of the view; `sentence`: how the view lists it (default: the example's own sentence)."""
    return {"sentence": example.sentence if sentence is None else sentence, "tokens": list(example.tokens),
            "graphs": example_graphs(example)}


def attention_shape(example) -> tuple:
    """(layers, heads) of an AttentionExample, as the weights have them (ConvBERT's attention has fewer heads than
    its config's num_attention_heads)."""
    return len(example.attention), len(example.attention[0])


def view_sentences(tokenizer, examples, sentences, n=VIEW_SENTENCES, max_tokens=VIEW_MAX_TOKENS) -> list:
    """The examples, then probe sentences of 5 to max_tokens tokens, without repeats, up to n in all."""
    chosen = list(dict.fromkeys(examples))[:n]
    for sentence in sentences:
        if len(chosen) >= n:
            break
        if sentence not in chosen and 5 <= len(tokenizer(sentence, verbose=False)["input_ids"]) <= max_tokens:
            chosen.append(sentence)
    return chosen


def attention_view(model, tokenizer, sentences, model_name=None) -> tuple:
    """The view's data for `sentences` (a dict in the schema VIEW_SCHEMA) and the notes of the norm weighting."""
    examples, notes = attention_examples(model, tokenizer, sentences)
    layers, heads = attention_shape(examples[0]) if examples else (
        model.config.num_hidden_layers, model.config.num_attention_heads)
    max_tokens = max_length_for(model, tokenizer)
    view = {"schema": VIEW_SCHEMA, "model": model_name or model.config.name_or_path or type(model).__name__,
            "num_layers": layers, "num_heads": heads, "level": VIEW_LEVEL, "max_tokens": max_tokens,
            "weightings": [w for w in WEIGHTINGS if w != "norm" or examples and examples[0].norm_weighted is not None],
            "sentences": [view_entry(e, listed_sentence(tokenizer, e.sentence, max_tokens)) for e in examples]}
    return view, notes


def listed_sentence(tokenizer, sentence, max_tokens) -> str:
    """The sentence as the view lists it: "<sentence> (cut to N tokens)" where it is longer than the model reads.
    A typed sentence that long is refused (check_sentence); an example sentence is kept, cut as the model reads it,
    and says so."""
    n = len(_encoded(tokenizer, sentence)["input_ids"])
    return f"{sentence} (cut to {max_tokens} tokens)" if n > max_tokens else sentence


def _encoded(tokenizer, sentence):
    """The tokenizer's encoding of `sentence` in full (no truncation, no warning that it is long)."""
    return tokenizer(sentence, verbose=False, return_special_tokens_mask=True)


def check_sentence(tokenizer, sentence, max_tokens) -> str:
    """A typed sentence, stripped; ValueError with a message for the page if it is empty, holds nothing the tokenizer
    reads (invisible characters only: just the special tokens are left), or is too long."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError("type a sentence: it is empty")
    encoded = _encoded(tokenizer, sentence.strip())
    if all(encoded["special_tokens_mask"]):
        raise ValueError(f"type a sentence: {sentence.strip()!r} gives the tokenizer no token but its special ones; "
                         "expected visible text")
    n = len(encoded["input_ids"])
    if n > max_tokens:
        raise ValueError(f"the sentence has {n} tokens; the view encodes at most {max_tokens} with this model")
    return sentence.strip()


def view_assets() -> dict:
    """The page's script and style, inlined into report.html (no CDN: the report opens offline from file://)."""
    folder = resources.files(__package__)
    return {"script": (folder / "attention_view.js").read_text(encoding="utf-8"),
            "style": (folder / "attention_view.css").read_text(encoding="utf-8")}


def view_json(view) -> str:
    """The view's data for a <script type="application/json"> block: every '<' escaped (\\u003c, still JSON), so no
    string in it closes the block."""
    return json.dumps(view, separators=(",", ":")).replace("<", "\\u003c")
