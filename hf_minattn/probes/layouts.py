"""Where each encoder architecture keeps its attention projections: one table for every probe that reads them.

The weights probe (W_Q, W_K, W_V, W_O per head), norm-weighted attention (the attention sublayer's input x, W_O and
the value bias b_V) and head ablation (W_O, whose input holds the heads' outputs side by side) all find their
modules here. `LAYOUTS` is a tuple of `Layout`s, tried in order; each names, as attribute paths,

- `layers`: the list of layers, from `model.base_model` (the bare encoder inside any task model);
- from each layer, either separate projections `query`, `key`, `value` (each hidden -> heads * head_dim; keys and
  values hidden -> kv_heads * head_dim under grouped-query attention) or one fused `qkv` (hidden -> 3 * heads *
  head_dim, output rows [0, HD) = W_Q, [HD, 2HD) = W_K, [2HD, 3HD) = W_V; with `qkv_per_head`, rows 3hD:(3h+3)D =
  head h's q, k, v), and `output` (W_O, heads * head_dim -> hidden, its input the heads' outputs concatenated: head h
  at channels h*D:(h+1)*D);
- `input`: the module whose forward input is x, the input of the attention sublayer (after the LayerNorm in a
  pre-norm model, the layer input in a post-norm one); by default the value (or fused) projection itself;
- `conv1d`: the projections are transformers' `Conv1D` (GPT-2), whose weight is stored (in, out), the transpose of
  `nn.Linear`'s (out, in);
- `identity_if_absent`: the fused projection may be None, meaning W_Q = W_K = W_V = I (MinAttn's identity variant).

Inside every projection, head h owns output rows h*D:(h+1)*D of each of Q, K, V: this is how every architecture
here splits its projections into heads (`.view(..., heads, head_dim)`). D is `config.head_dim` where the config has
one (Llama, Mistral, Gemma, Qwen 3: Gemma-7B's and Mistral-Nemo's heads are not hidden / heads wide), else hidden /
heads (`head_geometry`). A layout matches when all its paths exist in the first layer and are modules of the right
kind; its weights must then have the shapes above (so heads of another size are refused rather than misread). The
head count and hidden size come from `config.num_attention_heads` and `config.hidden_size`, which transformers maps
to each config's own names (GPT-2: n_head, n_embd; DistilBERT: n_heads, dim), and the key/value heads from
`config.num_key_value_heads` where it has one.

| layout     | layers (base model) | Q, K, V (from each layer)                  | W_O                    | x enters        |
|------------|---------------------|--------------------------------------------|------------------------|-----------------|
| MinAttn    | layers              | attention.qkv_proj (fused; None: I)        | attention.o_proj       | attention       |
| BERT-style | encoder.layer       | attention.self.query / key / value         | attention.output.dense | value           |
| DistilBERT | transformer.layer   | attention.q_lin / k_lin / v_lin            | attention.out_lin      | v_lin           |
| DeBERTa-v2 | encoder.layer       | attention.self.query_proj / key_proj / ... | attention.output.dense | value_proj      |
| MPNet      | encoder.layer       | attention.attn.q / k / v                   | attention.attn.o       | v               |
| ALBERT     | albert_layer_groups | attention.query / key / value (shared)     | attention.dense        | value           |
| ModernBERT | layers              | attn.Wqkv (fused; input after attn_norm)   | attn.Wo                | Wqkv            |
| GPT-2      | h                   | attn.c_attn (fused Conv1D; after ln_1)     | attn.c_proj (Conv1D)   | c_attn          |
| Llama      | layers              | self_attn.q_proj / k_proj / v_proj         | self_attn.o_proj       | v_proj          |
| OPT        | decoder.layers      | self_attn.q_proj / k_proj / v_proj         | self_attn.out_proj     | v_proj          |
| Phi        | layers              | self_attn.q_proj / k_proj / v_proj         | self_attn.dense        | v_proj          |
| GPT-NeoX   | layers              | attention.query_key_value (fused, by head) | attention.dense        | query_key_value |

BERT-style covers BERT, RoBERTa, XLM-R, ELECTRA and MiniLM (a BertModel); DeBERTa-v2-style, DeBERTa v2 and v3, whose
scores add position terms (content-to-position, position-to-content) to the content term that W_Q^T W_K gives;
MPNet-style, MPNet (all-mpnet-base-v2), whose scores add a relative position bias; Llama-style, decoders with its
names (Llama, Gemma, Mistral, Qwen 2 and 3), grouped-query attention included: each query head gets the key and value
head it shares (a model that normalises each head's queries and keys, Qwen 3 and Gemma 3, has no W_Q^T W_K form:
weights.query_key_norm_problem); OPT-style, OPT; Phi-style, Phi 1 and 2; GPT-NeoX-style, Pythia. ALBERT's layers
share their modules (`layer_order`: layer i runs group int(i / (layers / groups))'s one layer), so hooks on them go
through `hook_layers`, which tells the layers apart by the order of the calls. Any other layout, or projections that
do not split into the configured heads, raises `LayoutMismatch` (an `UnsupportedArchitecture`) naming the
attention-like modules of the model's first layer or the shapes, so a new row is easy to add.
"""

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter

import torch
from torch import nn


class UnsupportedArchitecture(ValueError):
    """A probe cannot read this architecture (its per-head projections, its head, its attention)."""


class LayoutMismatch(UnsupportedArchitecture):
    """The layout table does not know where this architecture keeps its per-head projections, or they do not split
    into the configured heads."""


def unless_unsupported(notes: list, what: str, compute):
    """compute(), or None and the note "WHAT skipped: ..." where the probe cannot read the model (the probe run goes
    on without that probe). A reason already given in an earlier note (the message after its first ": ", the same
    for the bare and the masked-LM model) is not repeated: the note points to it."""
    try:
        return compute()
    except UnsupportedArchitecture as error:
        detail = str(error).split(": ", 1)[-1]
        earlier = next((note for note in notes if detail in note), None)
        if earlier is None:
            notes.append(f"{what} skipped: {error}")
        elif isinstance(error, LayoutMismatch):
            notes.append(f"{what} skipped: the attention layout does not fit, as said above")
        else:
            which = earlier.split(" skipped: ", 1)[0] if " skipped: " in earlier else "a note"
            notes.append(f"{what} skipped: for the reason given above (with {which})")
        return None


def _conv1d_class():
    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:  # pragma: no cover - every transformers version this package supports has it
        return None
    return Conv1D


@dataclass(frozen=True)
class Layout:
    name: str  # the weights probe's "source" and what error messages list
    layers: str  # from model.base_model
    output: str  # W_O, from each layer
    query: str | None = None  # separate projections, from each layer
    key: str | None = None
    value: str | None = None
    qkv: str | None = None  # or one fused projection (q, k, v stacked along the output)
    input: str | None = None  # the module whose forward input is x; default: `value` or `qkv`
    conv1d: bool = False  # weights stored (in, out) (transformers' Conv1D), not nn.Linear's (out, in)
    qkv_per_head: bool = False  # the fused rows are head by head, [q_h | k_h | v_h] (GPT-NeoX), not [q | k | v]
    identity_if_absent: bool = False  # `qkv` may be None: W_Q = W_K = W_V = I
    # the layers in the order they run, from model.base_model, where `layers` is not that list (ALBERT's layers share
    # their modules); None: `layers` itself
    layer_order: Callable | None = None
    # what the attention adds to the query-key logits (x W_Q^T + b_Q)(x W_K^T + b_K)^T, besides rotary turns; "": none
    other_terms: str = ""

    @property
    def projections(self):
        return ("qkv",) if self.qkv else ("query", "key", "value")

    @property
    def input_path(self):
        return self.input or self.qkv or self.value


def _albert_order(base_model):
    """ALBERT's layers as they run: layer i is the layer of group int(i / (layers / groups)), as AlbertTransformer
    picks it; None where a group holds several layers (no released ALBERT does)."""
    config = base_model.config
    if config.inner_group_num != 1:
        return None
    groups, n = base_model.encoder.albert_layer_groups, config.num_hidden_layers
    return [groups[int(i / (n / config.num_hidden_groups))].albert_layers[0] for i in range(n)]


LAYOUTS = (
    Layout("MinAttn (layers[i].attention.qkv_proj, attention.o_proj)", layers="layers",
           qkv="attention.qkv_proj", output="attention.o_proj", input="attention", identity_if_absent=True),
    Layout("BERT-style (attention.self.query/key/value, attention.output.dense)", layers="encoder.layer",
           query="attention.self.query", key="attention.self.key", value="attention.self.value",
           output="attention.output.dense"),
    Layout("DistilBERT-style (attention.q_lin/k_lin/v_lin/out_lin)", layers="transformer.layer",
           query="attention.q_lin", key="attention.k_lin", value="attention.v_lin", output="attention.out_lin"),
    Layout("DeBERTa-v2-style (attention.self.query_proj/key_proj/value_proj, attention.output.dense; W_Q^T W_K is its "
           "content-to-content term)", layers="encoder.layer", query="attention.self.query_proj",
           key="attention.self.key_proj", value="attention.self.value_proj", output="attention.output.dense",
           other_terms="DeBERTa adds content-to-position and position-to-content terms (where its config has them)"),
    Layout("MPNet-style (attention.attn.q/k/v/o)", layers="encoder.layer", query="attention.attn.q",
           key="attention.attn.k", value="attention.attn.v", output="attention.attn.o",
           other_terms="MPNet adds a relative position bias"),
    Layout("ALBERT-style (albert_layer_groups[g].albert_layers[0].attention.query/key/value/dense, shared by the "
           "layers of group g)", layers="encoder.albert_layer_groups", layer_order=_albert_order,
           query="attention.query", key="attention.key", value="attention.value", output="attention.dense"),
    Layout("ModernBERT-style (layers[i].attn.Wqkv fused, attn.Wo)", layers="layers", qkv="attn.Wqkv",
           output="attn.Wo"),
    Layout("GPT-2-style (h[i].attn.c_attn fused Conv1D, attn.c_proj)", layers="h", qkv="attn.c_attn",
           output="attn.c_proj", conv1d=True),
    Layout("Llama-style (layers[i].self_attn.q_proj/k_proj/v_proj, self_attn.o_proj)", layers="layers",
           query="self_attn.q_proj", key="self_attn.k_proj", value="self_attn.v_proj", output="self_attn.o_proj"),
    Layout("OPT-style (decoder.layers[i].self_attn.q_proj/k_proj/v_proj/out_proj)", layers="decoder.layers",
           query="self_attn.q_proj", key="self_attn.k_proj", value="self_attn.v_proj", output="self_attn.out_proj"),
    Layout("Phi-style (layers[i].self_attn.q_proj/k_proj/v_proj/dense)", layers="layers", query="self_attn.q_proj",
           key="self_attn.k_proj", value="self_attn.v_proj", output="self_attn.dense"),
    Layout("GPT-NeoX-style (layers[i].attention.query_key_value fused head by head, attention.dense)",
           layers="layers", qkv="attention.query_key_value", output="attention.dense", qkv_per_head=True),
)


def _is_projection(module, layout):
    kind = _conv1d_class() if layout.conv1d else nn.Linear
    return kind is not None and isinstance(module, kind)


def _resolve(layer, layout):
    """{"query", "key", "value" | "qkv", "output", "input"} modules of one layer, or None if the layout does not fit."""
    try:
        found = {role: attrgetter(getattr(layout, role))(layer) for role in (*layout.projections, "output")}
        found["input"] = attrgetter(layout.input_path)(layer)
    except AttributeError:
        return None
    for role, module in found.items():
        if role == "input":
            if module is None:  # a fused projection that may be absent is no input
                return None
        elif role == "qkv" and module is None and layout.identity_if_absent:
            continue
        elif not _is_projection(module, layout):
            return None
    return found


def _layer_list(model, layout):
    try:
        layers = attrgetter(layout.layers)(model.base_model)
        if layout.layer_order is not None:  # the layers as they run (a module may come more than once)
            layers = layout.layer_order(model.base_model)
    except AttributeError:
        return None
    return layers if isinstance(layers, (nn.ModuleList, list, tuple)) and len(layers) > 0 else None


def _describe(model, table):
    """The attention-like modules of the model's first layer (the first non-empty nn.ModuleList), for the error."""
    first = next(((name, modules[0]) for name, modules in model.base_model.named_modules()
                  if isinstance(modules, nn.ModuleList) and len(modules) > 0), None)
    if first is None:
        found = "no list of layers (nn.ModuleList)"
    else:
        path, layer = first
        named = [(name, module) for name, module in layer.named_modules() if name]
        attention = [(name, m) for name, m in named if "attn" in name.lower() or "attention" in name.lower()]
        linear = [(name, m) for name, m in named if isinstance(m, nn.Linear) or type(m).__name__ == "Conv1D"]
        shown = attention or linear
        kind = "attention-like modules" if attention else "no module named *attn*/*attention*; its linear layers"
        listed = ", ".join(f"{name} ({type(m).__name__})" for name, m in shown[:10]) or "none"
        more = f" and {len(shown) - 10} more" if len(shown) > 10 else ""
        found = f"its first layer ({path or 'base model'}[0], {type(layer).__name__}) has {kind}: {listed}{more}"
    known = "; ".join(layout.name for layout in table) or "none"
    return (f"don't know where {type(model).__name__} keeps its attention projections W_Q/W_K/W_V/W_O: {found}. "
            f"Known: a get_head_weights() method, or the layouts {known} (add a Layout to probes/layouts.py)")


def find_layout(model, table=None):
    """(layout, per layer resolved modules) for the first layout of `table` (default: LAYOUTS, read at call time)
    that fits, else UnsupportedArchitecture."""
    table = LAYOUTS if table is None else table
    for layout in table:
        layers = _layer_list(model, layout)
        if layers is None or _resolve(layers[0], layout) is None:
            continue
        resolved = [_resolve(layer, layout) for layer in layers]
        if any(r is None for r in resolved):
            raise LayoutMismatch(f"{type(model).__name__} matches {layout.name} in its first layer but not "
                                          f"in every layer")
        return layout, resolved
    raise LayoutMismatch(_describe(model, table))


def head_geometry(model):
    """(heads H, head_dim D, hidden C): D is config.head_dim where the config sets one (Gemma-7B's 256 under a
    hidden size of 3072 and 16 heads), else C / H; the heads' queries, keys and values are H * D wide, which need
    not be C."""
    H, C = model.config.num_attention_heads, model.config.hidden_size
    D = getattr(model.config, "head_dim", None)
    if isinstance(D, int) and D > 0:
        return H, D, C
    if C % H:
        raise LayoutMismatch(f"{type(model).__name__}: hidden size {C} is not a multiple of {H} heads, and its "
                             "config gives no head_dim")
    return H, C // H, C


def _weight(module, layout, shape, model, role, layer):
    """The weight as nn.Linear stores it, (out, in) = `shape`; a view, never a copy."""
    weight = module.weight.detach()
    weight = weight.T if layout.conv1d else weight  # Conv1D stores (in, out)
    if tuple(weight.shape) != tuple(shape):
        H, D, C = head_geometry(model)
        raise LayoutMismatch(
            f"{type(model).__name__} matches {layout.name}, but layer {layer}'s {role} maps {weight.shape[1]} -> "
            f"{weight.shape[0]} features where {H} heads of {D} dimensions (hidden size {C}) need {shape[1]} -> "
            f"{shape[0]} (heads of another size are not supported)")
    return weight


def _key_value_heads(model, H):
    """The heads that keys and values have: fewer than the queries' under grouped-query attention (Llama 3, Mistral,
    Qwen 2: config.num_key_value_heads), each shared by H / that many query heads in turn."""
    kv = getattr(model.config, "num_key_value_heads", None) or H
    if H % kv:
        raise LayoutMismatch(f"{type(model).__name__}: {H} query heads do not share {kv} key/value heads evenly")
    return kv


def _shared(weight, kv, H):
    """(kv * D, ...) key or value rows -> (H * D, ...): query head h reads key/value head h // (H / kv), as
    transformers' repeat_kv gives it (a copy where kv < H, else the weight itself)."""
    if kv == H:
        return weight
    return weight.view(kv, -1, *weight.shape[1:]).repeat_interleave(H // kv, dim=0).flatten(0, 1)


def hook_layers(model, modules, hook):
    """Forward pre-hooks (with kwargs) calling hook(layer, args, kwargs) when `modules[layer]` runs, for every layer;
    its return value replaces the module's (args, kwargs) as a pre-hook's does. A module that several layers share
    (ALBERT) is hooked once: its k-th call in a forward of `model` is the k-th layer that uses it. Returns the handles
    to remove."""
    users = {}  # id(module) -> (module, the layers that run it, in order)
    for layer, module in enumerate(modules):
        users.setdefault(id(module), (module, []))[1].append(layer)
    calls = dict.fromkeys(users, 0)
    handles = [model.register_forward_pre_hook(lambda *_: calls.update(dict.fromkeys(calls, 0)))]
    for key, (module, layers) in users.items():
        def dispatch(_, args, kwargs, key=key, layers=layers):
            layer = layers[calls[key] % len(layers)]
            calls[key] += 1
            return hook(layer, args, kwargs)
        handles.append(module.register_forward_pre_hook(dispatch, with_kwargs=True))
    return handles


def sublayer_input(args, kwargs):
    """x, (B, T, C), from a forward pre-hook's arguments of a layout's `input` module (positional, or `hidden_states`
    as transformers' attention modules take it)."""
    return args[0] if args else kwargs["hidden_states"]


def layout_head_weights(model, table=None):
    """Per layer {"W_Q", "W_K", "W_V": (heads, head_dim, hidden), "W_O": (heads, hidden, head_dim)} (views of the
    model's weights where it has them; copies of key/value heads that query heads share), and the layout's name."""
    layout, resolved = find_layout(model, table)
    return _head_weights(model, layout, resolved), layout.name


def _head_weights(model, layout, resolved) -> list:
    """layout_head_weights' per-layer weights from a layout already found; UnsupportedArchitecture where a weight's
    shape does not split into the configured heads."""
    H, D, C = head_geometry(model)
    heads = []
    for i, modules in enumerate(resolved):
        if layout.qkv:
            if modules["qkv"] is None:  # identity variant (H * D = C): head h reads channels h*D:(h+1)*D
                identity = torch.eye(C, device=modules["output"].weight.device).view(H, D, C)
                W_Q = W_K = W_V = identity
            else:
                qkv = _weight(modules["qkv"], layout, (3 * H * D, C), model, "fused Q/K/V projection", i)
                if layout.qkv_per_head:
                    W_Q, W_K, W_V = qkv.view(H, 3, D, C).unbind(1)  # rows [q_h | k_h | v_h] head by head
                else:
                    W_Q, W_K, W_V = qkv.view(3, H, D, C).unbind(0)  # rows [q | k | v], each head-major
        else:
            kv = _key_value_heads(model, H)
            W_Q = _weight(modules["query"], layout, (H * D, C), model, "query", i)
            W_K, W_V = (_shared(_weight(modules[role], layout, (kv * D, C), model, role, i), kv, H)
                        for role in ("key", "value"))
            W_Q, W_K, W_V = (w.view(H, D, C) for w in (W_Q, W_K, W_V))  # (H * D, C) -> (H, D, C)
        W_O = _weight(modules["output"], layout, (C, H * D), model, "output projection", i)  # (C out, heads x D in)
        heads.append({"W_Q": W_Q, "W_K": W_K, "W_V": W_V,
                      "W_O": W_O.view(C, H, D).permute(1, 0, 2)})  # (C, H, D) -> (H, C, D): columns of head h
    return heads


def _head_biases(model, layout, modules):
    """{"b_Q", "b_K", "b_V": (H * D,) or None} of one layer, ordered like the heads' rows (head h at h*D:(h+1)*D; key
    and value biases copied for the query heads that share them)."""
    H, D, _ = head_geometry(model)
    if layout.qkv:
        fused = modules["qkv"]
        if fused is None or fused.bias is None:
            return dict.fromkeys(("b_Q", "b_K", "b_V"))
        bias = fused.bias.detach()  # ordered like the weight's rows
        parts = bias.view(H, 3, D).unbind(1) if layout.qkv_per_head else bias.view(3, H * D).unbind(0)
        return {name: part.reshape(H * D) for name, part in zip(("b_Q", "b_K", "b_V"), parts)}
    kv = _key_value_heads(model, H)
    biases = {}
    for name, role in (("b_Q", "query"), ("b_K", "key"), ("b_V", "value")):
        bias = modules[role].bias
        biases[name] = None if bias is None else bias.detach() if role == "query" else _shared(bias.detach(), kv, H)
    return biases


def layout_head_biases(model, table=None):
    """Per layer {"b_Q", "b_K", "b_V": (heads, head_dim) or None where the projection has no bias}."""
    layout, resolved = find_layout(model, table)
    _head_weights(model, layout, resolved)  # the heads' shapes checked as for the weights probe
    H, D, _ = head_geometry(model)
    return [{name: None if bias is None else bias.view(H, D) for name, bias in _head_biases(model, layout, m).items()}
            for m in resolved]


def layout_attention_modules(model, table=None):
    """Per layer {"input": module whose forward input is x, "output": W_O module, "value_bias": b_V (head_dim x heads,
    head-major) or None}."""
    layout, resolved = find_layout(model, table)
    _head_weights(model, layout, resolved)  # the heads' shapes checked as for the weights probe (ConvBERT's do not fit)
    return [{"input": modules["input"], "output": modules["output"],
             "value_bias": _head_biases(model, layout, modules)["b_V"]} for modules in resolved]
