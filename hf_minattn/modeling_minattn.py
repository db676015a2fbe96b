"""MinAttn: token (and position) embeddings followed by a stack of multi-head self-attention blocks.

Read top to bottom: embeddings, attention, feed-forward, block, the encoder, then the task heads. Shapes use
B = batch, T = sequence length, C = hidden size, H = heads, D = head dim (C = H * D), V = vocabulary size.

This file imports only torch, transformers and its sibling config (relatively), so that a saved checkpoint that
carries it loads with `trust_remote_code=True` where hf_minattn is not installed.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    MaskedLMOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from .configuration_minattn import PROBLEM_TYPES, MinAttnConfig


def is_traced() -> bool:
    """Whether this forward is being traced (torch.jit.trace) or compiled/exported (torch.compile, torch.export,
    ONNX): value-dependent Python branches would then be frozen into the graph."""
    return torch.jit.is_tracing() or torch.compiler.is_compiling()


def is_cpu_bf16(tensor: torch.Tensor) -> bool:
    """Whether `tensor`'s matrix products run in bf16 on a CPU: bf16 itself, or fp32 under CPU autocast to bf16."""
    if tensor.device.type != "cpu":
        return False
    return tensor.dtype == torch.bfloat16 or (
        torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    )


LABELS_AS_TENSOR = "make one with torch.tensor(labels)"


def check_tensor(name: str, value, how: str = "call the tokenizer with return_tensors='pt'") -> None:
    """A TypeError naming `name` unless `value` is a torch tensor or None: a list or a numpy array failed deep inside
    (an AttributeError on `.shape` or `.dtype`). `how` says how to make one."""
    if value is not None and not torch.is_tensor(value):
        raise TypeError(f"{name} must be a torch tensor, got a {type(value).__name__}; {how}")


def check_label_ids(labels: torch.Tensor, size: int, what: str, size_name: str, unlabelled: str) -> torch.Tensor:
    """Labels lie in [0, size), or are -100 (no label); else a ValueError naming one that does not, rather than
    torch's error from inside the loss (an IndexError on a CPU, a device-side assert on a GPU). Reading the values
    syncs a GPU with the host, as the heads' boolean indexing of the labels does anyway. Skipped while traced or
    compiled, as the check of input_ids is (a check on values cannot be a graph op).

    Returns the labels as int64, which cross-entropy demands: an int32 column (numpy, `datasets` with_format("torch"))
    is as good as the int32 input_ids the encoder takes. Floating (or boolean) labels are a TypeError naming the
    dtype, rather than torch's "expected scalar type Long" from inside the loss."""
    check_tensor("labels", labels, LABELS_AS_TENSOR)
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"labels has dtype {labels.dtype}, expected integers: a {what} in [0, {size_name}={size}) "
                        f"or -100 per label (-100 marks {unlabelled} without a label)")
    if not is_traced():
        outside = labels[(labels != -100) & ((labels < 0) | (labels >= size))]
        if outside.numel():
            raise ValueError(f"labels holds {what} {int(outside[0])}, outside [0, {size_name}={size}) "
                             f"(-100 marks {unlabelled} without a label)")
    return labels.long()


def sinusoidal_table(num_positions: int, dim: int) -> torch.Tensor:
    """The fixed position encoding of "Attention Is All You Need": sin on even, cos on odd channels."""
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]  # (P, 1)
    frequency = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))  # (ceil(C/2),)
    table = torch.zeros(num_positions, dim)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: dim // 2])
    return table


def rope_inverse_frequencies(head_dim: int, theta: float, device: torch.device | None = None) -> torch.Tensor:
    """The rotary angle per position of each channel pair: theta^(-2i / head_dim), i = 0 .. head_dim/2 - 1 (fp32)."""
    return 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)  # (D/2,)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each channel pair of x (..., D) by its position's angle; cos, sin: (T, D), shaped to broadcast to x.

    For a query at position m and a key at position n, the rotated dot product depends on m - n only, which is
    why rotary attention sees relative positions without any position signal in the token vectors.

    Channel i is paired with i + D/2: x cos + (-x2, x1) sin, with x = (x1, x2) its two halves. The second term is added
    in place, half by half: two passes over x instead of four (no negated copy, no concatenation), and the same
    result to the last bit as the concatenated form (tests/test_levers.py)."""
    half = x.shape[-1] // 2
    rotated = x * cos
    rotated[..., :half].addcmul_(x[..., half:], sin[..., :half], value=-1)  # - x2 sin
    rotated[..., half:].addcmul_(x[..., :half], sin[..., half:])  # + x1 sin
    return rotated


class MinAttnRotaryEmbedding(nn.Module):
    """The cos/sin tables of rotary position embeddings (RoFormer; the layout of ModernBERT and Llama)."""

    def __init__(self, config: MinAttnConfig):
        super().__init__()
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.theta = config.rope_theta
        # Not saved: recomputed in `_init_weights` (non-persistent buffers come back uninitialised from `from_pretrained`).
        # fp32 whatever torch's default dtype: `from_pretrained(..., dtype=torch.bfloat16)` builds the model under
        # that default, and bf16 frequencies put the angles ~0.2 rad off by position 127 (as Llama, in fp32).
        self.register_buffer("inv_freq", torch.empty(self.head_dim // 2, dtype=torch.float32), persistent=False)

    def frequencies(self) -> torch.Tensor:
        """`inv_freq` in fp32. `model.to(torch.bfloat16)` (or `.half()`) casts floating buffers too, and `_apply` puts
        the exact fp32 values back; a buffer cast by other means (one replaced in `_buffers`, as accelerate's loaders
        can) is not upcast (its values are rounded) but recomputed, on its device."""
        if self.inv_freq.dtype == torch.float32:
            return self.inv_freq
        return rope_inverse_frequencies(self.head_dim, self.theta, device=self.inv_freq.device)

    def _apply(self, fn, recurse=True):
        """After every move or cast (`.to(...)`, `.bfloat16()`, `.float()`, `.cuda()`): `inv_freq` exactly as
        `_init_weights` computes it, in fp32 (on the CPU, then moved, as at load). A cast rounds the buffer, and a cast
        back to fp32 keeps the rounded values under an fp32 dtype, which `frequencies` cannot tell from exact ones:
        `model.bfloat16().float()` would turn queries and keys by bf16-rounded angles (see `__init__`)."""
        super()._apply(fn, recurse)
        if not self.inv_freq.is_meta:  # a model built on the meta device has no values yet
            exact = rope_inverse_frequencies(self.head_dim, self.theta).to(self.inv_freq.device)
            if self.inv_freq.dtype != torch.float32 or not torch.equal(self.inv_freq, exact):
                self.inv_freq = exact
        return self

    def forward(self, seq_len: int, dtype: torch.dtype, position_ids: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of each position's angles: (T, D) for positions 0 .. seq_len - 1, or, given `position_ids`
        (B or 1, T), one row per id, (B or 1, T, D)."""
        if position_ids is None:
            position = torch.arange(seq_len, device=self.inv_freq.device, dtype=torch.float32)  # (T,)
        else:
            position = position_ids.to(torch.float32)  # (B, T); exact up to 2^24
        angles = position[..., None] * self.frequencies()  # (..., T, D/2); as torch.outer for (T,), bit for bit
        angles = torch.cat((angles, angles), dim=-1)  # (..., T, D): pair (i, i + D/2) shares an angle
        return angles.cos().to(dtype), angles.sin().to(dtype)


class MinAttnEmbeddings(nn.Module):
    """Static token vectors plus position information. `word_embeddings.weight` is the static embedding matrix."""

    def __init__(self, config: MinAttnConfig):
        super().__init__()
        self.position_embedding_type = config.position_embedding_type
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = None
        if config.position_embedding_type == "learned":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        elif config.position_embedding_type == "sinusoidal":
            # Not saved: recomputed in `_init_weights`, since non-persistent buffers come back uninitialised
            # from `from_pretrained`.
            self.register_buffer(
                "sinusoids", torch.empty(config.max_position_embeddings, config.hidden_size), persistent=False
            )
        # Post-norm models normalise the embeddings (BERT); pre-norm ones normalise inside each block instead.
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.norm_placement == "post" else None
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        # One learned scale of the word vectors: frozen random embeddings keep their initial norm without it.
        self.gain = nn.Parameter(torch.ones(())) if config.embedding_gain else None

    def forward(self, input_ids=None, inputs_embeds=None, position_ids=None):
        """position_ids (B or 1, T): the row of the position table each token gets; None: rows 0 .. T - 1."""
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)  # (B, T, C)
        if self.gain is not None:
            inputs_embeds = inputs_embeds * self.gain
        seq_len = inputs_embeds.shape[1]
        if self.position_embeddings is not None:
            if position_ids is None:
                inputs_embeds = inputs_embeds + self.position_embeddings.weight[:seq_len]  # (T, C), broadcast over B
            else:
                inputs_embeds = inputs_embeds + self.position_embeddings(position_ids)  # (B or 1, T, C)
        elif self.position_embedding_type == "sinusoidal":
            # rows 0 .. T - 1, (T, C), or the rows of the ids given, (B or 1, T, C)
            table = self.sinusoids[:seq_len] if position_ids is None else self.sinusoids[position_ids]
            inputs_embeds = inputs_embeds + table.to(inputs_embeds.dtype)
        if self.norm is not None:
            inputs_embeds = self.norm(inputs_embeds)
        return self.dropout(inputs_embeds)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """softmax(Q K^T / sqrt(D) + mask) V, written out so that the per-head weights can be returned."""
    # query, key, value: (B, H, T, D); attention_mask: additive, broadcastable to (B, H, T, T), or None
    # Scaling the queries rather than the scores touches B*H*T*D numbers instead of B*H*T*T (half as many at
    # T=128, D=64) and saves one (B, H, T, T) temporary in the forward and the backward pass.
    scores = torch.matmul(query * scaling, key.transpose(2, 3))  # (B, H, T, T)
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = F.dropout(weights, p=dropout, training=module.training)
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()  # (B, T, H, D)
    return output, weights


class MinAttnAttention(nn.Module):
    """Multi-head self-attention with one fused Q/K/V projection (or none: W_Q = W_K = W_V = I)."""

    def __init__(self, config: MinAttnConfig, layer_idx: int):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_dim**-0.5
        self.is_causal = False  # an encoder: every token sees every other (sdpa would default to causal)
        # Rows [0:C) of the fused weight are W_Q, [C:2C) W_K, [2C:3C) W_V; inside each, head h owns rows h*D:(h+1)*D.
        self.qkv_proj = None
        if config.qkv_projection == "learned":
            self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=config.qkv_bias)
            self.qkv_proj.is_qkv = True  # W_Q, W_K get their own init std, see `_init_weights`
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.o_proj.is_residual_output = True  # gets the scaled init, see `_init_weights`
        self.attention_dropout = config.attention_probs_dropout_prob

    def forward(self, hidden_states, attention_mask=None, output_attentions=False, position_embeddings=None,
                **kwargs):
        B, T, C = hidden_states.shape
        if self.qkv_proj is None:  # Q = K = V = X, split into heads
            qkv = hidden_states.view(B, T, 1, self.num_heads, self.head_dim).expand(B, T, 3, -1, -1)  # (B, T, 3, H, D)
        else:
            qkv = self.qkv_proj(hidden_states).view(B, T, 3, self.num_heads, self.head_dim)  # (B, T, 3, H, D)
        query_key = qkv[:, :, :2]  # (B, T, 2, H, D)
        if position_embeddings is not None:  # rotary: turn queries and keys (never values) by their position
            cos, sin = position_embeddings  # (T, D) each, or (B or 1, T, D) from position_ids
            if not self.training:
                # At inference the turn runs in the dtype of the products that read it (bf16 under autocast): fp32
                # tables would promote queries and keys to fp32, and autocast would cast them back (about 8% of a
                # bf16 forward's wall time, benchmarks/NOTES.md). Training keeps the tables in the residual stream's
                # dtype: one rounding instead of three, and the arithmetic the committed runs were trained with.
                cos, sin = cos.to(query_key.dtype), sin.to(query_key.dtype)
            # Both in one pass: half the elementwise kernels of rotating them one by one (launches count on a GPU).
            # tables (T, 1, 1, D) or (B, T, 1, 1, D): broadcast over the Q/K pair and the heads
            query_key = apply_rotary(query_key, cos[..., None, None, :], sin[..., None, None, :])
        query, key = query_key.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, H, T, D)
        value = qkv[:, :, 2].transpose(1, 2)  # (B, H, T, D)

        implementation = self.config._attn_implementation
        if output_attentions:  # only the eager path can return the weights
            implementation = "eager"
        elif implementation == "sdpa" and is_cpu_bf16(query):
            # torch's bf16 flash-attention kernel for CPU is slower than matmul-softmax-matmul in bf16: 1.8x (fwd+bwd,
            # head dim 64) to 3.9x (head dim 32), and slower than its own fp32 kernel (benchmarks/NOTES.md).
            implementation = "eager"
        attention_interface: Callable = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        output, weights = attention_interface(
            self,
            query,
            key,
            value,
            attention_mask,
            scaling=self.scaling,
            dropout=self.attention_dropout if self.training else 0.0,
            **kwargs,  # for the attention function (e.g. a kernel registered with transformers.AttentionInterface)
        )
        output = self.o_proj(output.reshape(B, T, C))  # (B, T, H, D) -> (B, T, C): heads concatenated, then W_O
        return output, weights


class MinAttnMLP(nn.Module):
    def __init__(self, config: MinAttnConfig):
        super().__init__()
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size)
        self.down_proj.is_residual_output = True  # gets the scaled init, see `_init_weights`

    def forward(self, hidden_states):
        return self.down_proj(self.act(self.up_proj(hidden_states)))


class MinAttnBlock(GradientCheckpointingLayer):
    """Self-attention and (unless `intermediate_size == 0`) a feed-forward sublayer, each in a residual branch."""

    def __init__(self, config: MinAttnConfig, layer_idx: int):
        super().__init__()
        self.pre_norm = config.norm_placement == "pre"
        self.attention = MinAttnAttention(config, layer_idx)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = self.mlp_norm = None
        if config.intermediate_size > 0:
            self.mlp = MinAttnMLP(config)
            self.mlp_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False, position_embeddings=None,
                **kwargs):
        if self.pre_norm:
            attended, weights = self.attention(
                self.attention_norm(hidden_states), attention_mask, output_attentions, position_embeddings, **kwargs
            )
            hidden_states = hidden_states + self.dropout(attended)
            if self.mlp is not None:
                hidden_states = hidden_states + self.dropout(self.mlp(self.mlp_norm(hidden_states)))
        else:
            attended, weights = self.attention(hidden_states, attention_mask, output_attentions, position_embeddings,
                                               **kwargs)
            hidden_states = self.attention_norm(hidden_states + self.dropout(attended))
            if self.mlp is not None:
                hidden_states = self.mlp_norm(hidden_states + self.dropout(self.mlp(hidden_states)))
        return hidden_states, weights


class MinAttnPreTrainedModel(PreTrainedModel):
    config_class = MinAttnConfig
    base_model_prefix = "minattn"
    supports_gradient_checkpointing = True
    _no_split_modules = ["MinAttnBlock"]
    _supports_sdpa = True
    _supports_attention_backend = True

    def __init__(self, config, *inputs, **kwargs):
        # The config validates itself when built or updated, but not when a field is assigned (config.x = y):
        # check again here, so a bad edit fails with the field's name instead of a shape error in a forward pass.
        if isinstance(config, MinAttnConfig):
            config.validate_minattn()
        super().__init__(config, *inputs, **kwargs)

    @torch.no_grad()
    def _init_weights(self, module):
        """normal(0, initializer_range) for every matrix; residual output projections scaled down by
        sqrt(2 * num_layers) so that the residual stream's variance does not grow with depth (GPT-2); W_Q and W_K
        normal(0, sqrt(qk_logit_init_std / hidden_size)), so that the initial attention logits have standard deviation
        qk_logit_init_std, whatever the width."""
        config = self.config
        std = config.initializer_range
        residual_std = std / math.sqrt(2 * config.num_hidden_layers)
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=residual_std if getattr(module, "is_residual_output", False) else std)
            if getattr(module, "is_qkv", False) and config.qkv_init == "identity":
                init.copy_(module.weight, torch.eye(config.hidden_size).repeat(3, 1))  # (3C, C): [I; I; I]
            elif getattr(module, "is_qkv", False) and not getattr(module.weight, "_is_hf_initialized", False):
                # Rows [0:2C) of the fused weight are W_Q and W_K: rescale them from std to qk_std.
                qk_std = math.sqrt(config.qk_logit_init_std / config.hidden_size)
                module.weight[: 2 * config.hidden_size].mul_(qk_std / std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, MinAttnEmbeddings):
            if module.position_embedding_type == "sinusoidal":
                init.copy_(module.sinusoids, sinusoidal_table(*module.sinusoids.shape))
            if module.gain is not None:
                init.ones_(module.gain)
        elif isinstance(module, MinAttnRotaryEmbedding):
            init.copy_(module.inv_freq, rope_inverse_frequencies(module.head_dim, module.theta))
        elif isinstance(module, MinAttnLMHead):
            init.zeros_(module.bias)

    def get_head_weights(self, grad: bool = False) -> list[dict[str, torch.Tensor | None]]:
        """Each layer's per-head projection matrices, for the probes.

        Returns one dict per layer with `W_Q`, `W_K`, `W_V` shaped (H, D, C) and `W_O` shaped (H, C, D), such that
        head h computes q_h = W_Q[h] @ x and the layer adds sum_h W_O[h] @ z_h to the residual stream. So the QK
        circuit of head h is W_Q[h].T @ W_K[h] and its OV circuit W_O[h] @ W_V[h]. In the identity variant W_Q[h],
        W_K[h] and W_V[h] are the rows of the identity that select head h's channels. With `grad=True` the same
        slices of the gradients are returned (None where there is no gradient, e.g. the identity projections).
        """
        if not isinstance(grad, bool):  # "no" would return the gradients
            raise TypeError(f"grad must be True or False, got {grad!r}")
        config = self.config
        H, D, C = config.num_attention_heads, config.hidden_size // config.num_attention_heads, config.hidden_size
        heads = []
        for layer in self.base_model.layers:
            attention = layer.attention
            o_weight = attention.o_proj.weight.grad if grad else attention.o_proj.weight
            entry = {"W_O": None if o_weight is None else o_weight.detach().view(C, H, D).permute(1, 0, 2)}  # (H, C, D)
            if attention.qkv_proj is None:
                identity = None if grad else torch.eye(C, device=attention.o_proj.weight.device).view(H, D, C)
                entry.update(W_Q=identity, W_K=identity, W_V=identity)
            else:
                qkv_weight = attention.qkv_proj.weight.grad if grad else attention.qkv_proj.weight
                if qkv_weight is None:
                    entry.update(W_Q=None, W_K=None, W_V=None)
                else:
                    W_Q, W_K, W_V = qkv_weight.detach().view(3, H, D, C).unbind(0)  # each (H, D, C)
                    entry.update(W_Q=W_Q, W_K=W_K, W_V=W_V)
            heads.append(entry)
        return heads

    def resize_token_embeddings(self, new_num_tokens=None, pad_to_multiple_of=None, mean_resizing=True) -> nn.Embedding:
        """As `PreTrainedModel.resize_token_embeddings` (grow, shrink, `pad_to_multiple_of`), but a size that would
        leave one of the config's special token ids (`pad_token_id`, `cls_token_id`, `sep_token_id`,
        `mask_token_id`) outside the vocabulary raises a `ValueError` naming them, and the model is left unchanged:
        the model would lose that token (its [MASK], say), and the config could no longer be saved and loaded again.
        transformers' common test (`test_resize_tokens_embeddings`: 10 more, then 15 fewer than a vocabulary of 99)
        stays above every id; a size below a special id is refused by design. To drop a special token, set its id
        in the config to None (or to an id inside the new size) first."""
        for name, value in (("new_num_tokens", new_num_tokens), ("pad_to_multiple_of", pad_to_multiple_of)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{name} must be a whole number of tokens or None, got {value!r}")  # not torch's
        size = new_num_tokens
        if isinstance(pad_to_multiple_of, int) and pad_to_multiple_of > 0:  # what the base class will round up to
            size = size if size is not None else self.get_input_embeddings().num_embeddings
            size = -(-size // pad_to_multiple_of) * pad_to_multiple_of
        special_ids = self.config.special_token_ids() if isinstance(size, int) else {}
        outside = {name: i for name, i in special_ids.items() if i >= size}
        if outside:
            raise ValueError(
                f"resize_token_embeddings to {size} tokens would leave "
                + ", ".join(f"{name}={i}" for name, i in outside.items())
                + f" outside the vocabulary: expected at least {max(outside.values()) + 1} tokens (or set those ids in "
                "the config to None or to ids below the new size first)"
            )
        return super().resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)

    def save_pretrained(self, save_directory, *args, **kwargs):
        # Every checkpoint maps every Auto class, so that e.g. a masked-LM checkpoint also loads with AutoModel
        # through remote code; save_pretrained only writes the entry of the class being saved.
        if self._auto_class is not None:
            self.config.auto_map = {
                "AutoConfig": "configuration_minattn.MinAttnConfig",
                "AutoModel": "modeling_minattn.MinAttnModel",
                "AutoModelForMaskedLM": "modeling_minattn.MinAttnForMaskedLM",
                "AutoModelForSequenceClassification": "modeling_minattn.MinAttnForSequenceClassification",
                "AutoModelForTokenClassification": "modeling_minattn.MinAttnForTokenClassification",
            }
        return super().save_pretrained(save_directory, *args, **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        try:
            return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as error:
            # safetensors reports a truncated or corrupt file without saying which file it was.
            if "SafetensorError" in type(error).__name__ or "deserializ" in str(error).lower():
                raise OSError(
                    f"Could not read the weights of {pretrained_model_name_or_path!s} (model.safetensors): "
                    f"the file is truncated or corrupt ({error})"
                ) from error
            raise


def refuse_unused_bert_inputs(kwargs: dict) -> None:
    """Take BERT's `token_type_ids` and `head_mask` out of a forward's `kwargs`, and refuse those that would change a
    BERT's output: this model has no segment embeddings and no per-head mask, and dropping them silently would give
    other numbers than the caller asked for. Token type ids of all 0 are what BERT assumes without any (one segment),
    so they pass: a BERT tokenizer's single-sentence output works unchanged (in a pipeline, say). Traced or exported,
    the values cannot be read: any token type ids are refused there."""
    head_mask = kwargs.pop("head_mask", None)
    if head_mask is not None:
        raise ValueError(f"head_mask (shape {tuple(getattr(head_mask, 'shape', ()))}) is not supported: MinAttn has "
                         "no per-head mask; expected None (to silence a head, zero its columns of o_proj instead)")
    token_type_ids = kwargs.pop("token_type_ids", None)
    if token_type_ids is None:
        return
    if is_traced() or not torch.is_tensor(token_type_ids):
        raise ValueError("token_type_ids is not supported: MinAttn has no segment embeddings; expected None")
    if token_type_ids.any():
        segment = int(token_type_ids[token_type_ids != 0][0])
        raise ValueError(f"token_type_ids holds segment id {segment}: MinAttn has no segment embeddings and cannot "
                         "tell sentences apart by them; expected None or all 0 (one segment)")


def additive_padding_mask(attention_mask, hidden_states: torch.Tensor) -> torch.Tensor | None:
    """The padding mask as the attention functions add it to the scores, (B, 1, 1, T) in the dtype and on the device of
    `hidden_states`: 0 at real tokens, the dtype's lowest number at padding. None when nothing is padded, so that sdpa
    can take its fast path; but a traced or exported graph keeps the mask whatever the example batch held: it must
    serve padded batches."""
    if attention_mask is None or (not is_traced() and bool(attention_mask.all())):
        return None
    mask = torch.zeros(attention_mask.shape, dtype=hidden_states.dtype, device=hidden_states.device)
    lowest = torch.finfo(hidden_states.dtype).min
    return mask.masked_fill(attention_mask == 0, lowest)[:, None, None, :]  # (B, T) -> (B, 1, 1, T)


class MinAttnModel(MinAttnPreTrainedModel):
    """The bare encoder: embeddings -> `num_hidden_layers` blocks (-> final LayerNorm if pre-norm)."""

    # Loading a masked-LM checkpoint into the bare encoder leaves the head's weights unused, as intended.
    _keys_to_ignore_on_load_unexpected = [r"^lm_head\.", r"^classifier\."]

    def __init__(self, config: MinAttnConfig):
        super().__init__(config)  # sets self.config
        self.embeddings = MinAttnEmbeddings(config)
        self.rotary = MinAttnRotaryEmbedding(config) if config.position_embedding_type == "rope" else None
        self.layers = nn.ModuleList([MinAttnBlock(config, i) for i in range(config.num_hidden_layers)])
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.norm_placement == "pre" else None
        # Not set by transformers: `gradient_checkpointing_enable` flips it here (as on BertModel); the blocks, which
        # are GradientCheckpointingLayers, do the checkpointing.
        self.gradient_checkpointing = False
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def _check_inputs(self, input_ids, attention_mask, inputs_embeds, position_ids=None):
        """Turn the mistakes that torch would report deep inside (IndexError, shape mismatch) into clear errors."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids or inputs_embeds (got "
                             f"{'both' if input_ids is not None else 'neither'})")
        for name, value in (("input_ids", input_ids), ("attention_mask", attention_mask),
                            ("inputs_embeds", inputs_embeds)):
            check_tensor(name, value)
        if input_ids is not None:
            if input_ids.dim() != 2:
                raise ValueError(f"input_ids must have shape (batch, sequence), got {tuple(input_ids.shape)}")
            if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
                raise TypeError(f"input_ids must be integer token ids, got a tensor of {input_ids.dtype}")
            # A check on the values, not the shapes: skipped while traced or exported (it cannot be a graph op).
            if not is_traced() and input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= self.config.vocab_size):
                bad = input_ids[(input_ids < 0) | (input_ids >= self.config.vocab_size)][0].item()
                raise ValueError(f"input_ids contains id {bad}, outside [0, vocab_size={self.config.vocab_size})")
            shape = tuple(input_ids.shape)
        else:
            if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != self.config.hidden_size:
                raise ValueError(f"inputs_embeds must have shape (batch, sequence, {self.config.hidden_size}), "
                                 f"got {tuple(inputs_embeds.shape)}")
            # Another dtype (float64 from torch.from_numpy) failed in a matmul or LayerNorm; under autocast, the
            # autocast dtype is the one each op casts to.
            if inputs_embeds.dtype != self.dtype and not torch.is_autocast_enabled(inputs_embeds.device.type):
                raise TypeError(f"inputs_embeds must be a floating tensor of the model's dtype {self.dtype}, got "
                                f"{inputs_embeds.dtype}; convert it with .to(model.dtype)")
            shape = tuple(inputs_embeds.shape[:2])
        if not is_traced() and 0 in shape:
            raise ValueError(f"the input is empty (batch, sequence) = {shape}: expected at least one token")
        limit = self.config.sequence_length_limit()  # None: rotary or no positions take any length
        if limit is not None and shape[1] > limit:
            raise ValueError(f"Sequence length {shape[1]} is longer than max_position_embeddings={limit}; truncate "
                             "the input")
        if attention_mask is not None and tuple(attention_mask.shape) != shape:
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)} but the input has shape {shape}")
        self._check_position_ids(position_ids, shape)

    def _check_position_ids(self, position_ids, shape: tuple) -> None:
        """position_ids: integer tensors shaped (batch, sequence) or (1, sequence), each id at least 0 and, where
        positions are rows of a table ("learned", "sinusoidal"), below max_position_embeddings; else an error naming
        the shape or the first id that is not, rather than torch's IndexError (a device-side assert on a GPU) or, for
        rope, angles of a negative position. The values are not read while traced or exported."""
        if position_ids is None:
            return
        if not torch.is_tensor(position_ids) or position_ids.is_floating_point() or position_ids.is_complex() \
                or position_ids.dtype == torch.bool:
            raise TypeError(f"position_ids must be a tensor of integer positions, got "
                            f"{position_ids.dtype if torch.is_tensor(position_ids) else type(position_ids).__name__}")
        if tuple(position_ids.shape) not in (shape, (1, shape[1])):
            raise ValueError(f"position_ids has shape {tuple(position_ids.shape)}, expected the input's {shape} "
                             f"(batch, sequence) or (1, {shape[1]})")
        if is_traced():
            return
        limit = self.config.sequence_length_limit()  # None: rotary takes any position, "none" reads none
        bad = (position_ids < 0) | (position_ids >= limit) if limit else position_ids < 0
        outside = position_ids[bad]
        if outside.numel():
            expected = f"[0, max_position_embeddings={limit})" if limit else "at least 0"
            raise ValueError(f"position_ids contains {int(outside[0])}, expected positions {expected}")

    def _rotary_tables(self, hidden_states, position_ids):
        """Rope's cos and sin, (T, D) each, or (B or 1, T, D) from position_ids; None without rope. position_ids is
        passed only when given, so that a `rotary.forward(seq_len, dtype)` wrapped as benchmarks/bench_levers.py wraps
        it keeps working."""
        if self.rotary is None:
            return None
        if position_ids is None:
            return self.rotary(hidden_states.shape[1], hidden_states.dtype)
        return self.rotary(hidden_states.shape[1], hidden_states.dtype, position_ids)

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        inputs_embeds=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        position_ids=None,
        **kwargs,
    ) -> BaseModelOutput:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`): token ids.
        attention_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*): 1 for real tokens,
            0 for padding (which no token attends to).
        inputs_embeds (`torch.FloatTensor` of shape `(batch_size, sequence_length, hidden_size)`, *optional*):
            static token vectors to use instead of looking up `input_ids`, in the model's dtype (`model.dtype`).
        position_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)` or `(1, sequence_length)`,
            *optional*): each token's position, as in BERT: the row of the learned or sinusoidal table it gets, or
            the angle rope turns it by ("none" reads no positions). Default: 0 .. sequence_length - 1 in every row.
            A left-padded batch gives each row's tokens the positions they have alone by counting from its first
            real token, e.g. `(attention_mask.cumsum(-1) - 1).clamp(min=0)`.
        output_attentions (`bool`, *optional*): also return each layer's attention weights, (B, H, T, T); uses the
            eager attention path for this call.
        output_hidden_states (`bool`, *optional*): also return the hidden states (num_hidden_layers + 1 tensors):
            the embedding output, then each block's output; with pre-norm (`norm_placement="pre"`) the last entry is
            the last block's output after the final LayerNorm (`last_hidden_state`), not its raw output.
        kwargs: passed down to the attention function of every layer (`_supports_attention_backend`), with
            `position_ids` where given, but BERT's `token_type_ids` and `head_mask`, which this model cannot use:
            refused unless None (or all-0 type ids).
        """
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        refuse_unused_bert_inputs(kwargs)
        self._check_inputs(input_ids, attention_mask, inputs_embeds, position_ids)
        if position_ids is not None:  # as Llama's do: a varlen or flex kernel finds packed sequences' bounds by them
            kwargs["position_ids"] = position_ids

        hidden_states = self.embeddings(input_ids, inputs_embeds, position_ids)  # (B, T, C)
        rotary = self._rotary_tables(hidden_states, position_ids)  # 2 x (T, D), 2 x (B or 1, T, D), or None
        mask = additive_padding_mask(attention_mask, hidden_states)  # (B, 1, 1, T) or None

        all_hidden_states = () if output_hidden_states else None
        all_attentions = () if output_attentions else None
        for layer in self.layers:
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            hidden_states, weights = layer(hidden_states, mask, output_attentions, rotary, **kwargs)
            if output_attentions:
                all_attentions += (weights,)
        if self.final_norm is not None:
            hidden_states = self.final_norm(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)

        output = BaseModelOutput(
            last_hidden_state=hidden_states, hidden_states=all_hidden_states, attentions=all_attentions
        )
        return output if return_dict else output.to_tuple()


class MinAttnLMHead(nn.Module):
    """Dense + activation + LayerNorm, then the decoder to vocabulary logits (its weight tied to the embeddings) plus
    the output bias `lm_head.bias`."""

    def __init__(self, config: MinAttnConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden_states):
        hidden_states = self.norm(self.act(self.dense(hidden_states)))
        # The bias goes inside the decoder's product (one addmm, as BERT's), not in a second pass over the (B, T, V)
        # logits; under autocast the bias is cast with the weight, so the logits stay in the compute dtype (bf16)
        # instead of being promoted to fp32 by an fp32 bias. A decoder given a bias of its own keeps it.
        bias = self.bias if self.decoder.bias is None else self.bias + self.decoder.bias
        return F.linear(hidden_states, self.decoder.weight, bias)


class MinAttnForMaskedLM(MinAttnPreTrainedModel):
    _tied_weights_keys = {"lm_head.decoder.weight": "minattn.embeddings.word_embeddings.weight"}

    def __init__(self, config: MinAttnConfig):
        super().__init__(config)
        self.minattn = MinAttnModel(config)
        self.lm_head = MinAttnLMHead(config)
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head.decoder

    def set_output_embeddings(self, new_embeddings):
        self.lm_head.decoder = new_embeddings

    def _sparse(self, sparse_prediction) -> bool:
        """forward's `sparse_prediction`, None meaning the config's; a TypeError for another value ("no" is true)."""
        if sparse_prediction is not None and not isinstance(sparse_prediction, bool):
            raise TypeError(f"sparse_prediction must be True, False or None, got {sparse_prediction!r}")
        return self.config.sparse_prediction if sparse_prediction is None else sparse_prediction

    def resize_token_embeddings(self, *args, **kwargs) -> nn.Embedding:
        """As `PreTrainedModel.resize_token_embeddings`, and the head's output bias (a parameter of its own, which
        the base class does not know about) follows: old entries kept, new ones 0."""
        embeddings = super().resize_token_embeddings(*args, **kwargs)
        old = self.lm_head.bias
        n = embeddings.num_embeddings
        if old.shape[0] != n:
            new = torch.zeros(n, dtype=old.dtype, device=old.device)
            keep = min(n, old.shape[0])
            new[:keep] = old.data[:keep]
            self.lm_head.bias = nn.Parameter(new, requires_grad=old.requires_grad)
        return embeddings

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        inputs_embeds=None,
        labels=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        sparse_prediction: bool | None = None,
        position_ids=None,
        **kwargs,
    ) -> MaskedLMOutput:
        r"""
        labels (`torch.LongTensor` of shape `(batch_size, sequence_length)`, *optional*): the token to predict at
            each masked position, -100 elsewhere. `logits` is `(batch_size, sequence_length, vocab_size)`, unless
            sparse prediction is on and labels are given: then the vocabulary projection (the expensive part of the
            head) runs only at the labelled positions and `logits` is `(n_labelled, vocab_size)`, in the order of
            `labels[labels != -100]`. The loss is the same either way.
        sparse_prediction (`bool`, *optional*): sparse prediction for this call (None: `config.sparse_prediction`).
            run_mlm's Trainer passes True while it trains and evaluates; the saved config keeps the user's choice.
        num_items_in_batch (passed by the Trainer): the number of labelled tokens in the whole accumulated batch;
            the loss is then summed and divided by it, so gradient accumulation gives the same loss as one big batch.
        position_ids, kwargs: as `MinAttnModel.forward` takes them.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        num_items = kwargs.pop("num_items_in_batch", None)
        outputs = self.minattn(
            input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            position_ids=position_ids,
            **kwargs,
        )
        sequence_output = outputs.last_hidden_state  # (B, T, C)

        loss = None
        if labels is None:
            logits = self.lm_head(sequence_output)  # (B, T, V)
        else:
            labels = check_label_ids(labels, self.config.vocab_size, "token id", "vocab_size", "a position")
            if labels.shape != sequence_output.shape[:2]:
                raise ValueError(f"labels has shape {tuple(labels.shape)}, expected {tuple(sequence_output.shape[:2])}")
            labelled = labels != -100
            targets = labels[labelled]
            if self._sparse(sparse_prediction):
                logits = self.lm_head(sequence_output[labelled])  # (N, V), N = labelled tokens
                labelled_logits = logits
            else:
                logits = self.lm_head(sequence_output)  # (B, T, V)
                labelled_logits = logits[labelled]  # (N, V)
            num_items = max(targets.numel(), 1) if num_items is None else num_items
            loss = F.cross_entropy(labelled_logits.float(), targets, reduction="sum") / num_items

        output = MaskedLMOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                attentions=outputs.attentions)
        return output if return_dict else output.to_tuple()


class MinAttnClassifierModel(MinAttnPreTrainedModel):
    """What the two classifiers share: the encoder, dropout and a linear layer to `config.num_labels` outputs."""

    def __init__(self, config: MinAttnConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.minattn = MinAttnModel(config)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def _check_class_ids(self, labels) -> torch.Tensor:
        """The labels as int64 class ids, checked (see check_label_ids)."""
        return check_label_ids(labels, self.num_labels, "class", "num_labels", "an example or token")


class MinAttnForSequenceClassification(MinAttnClassifierModel):
    """The encoder plus a linear classifier on the final [CLS] vector (first position)."""

    # Its loss is a mean over the batch: the Trainer must divide it by the gradient-accumulation steps itself, which
    # it skips for a forward that takes **kwargs unless told so here.
    accepts_loss_kwargs = False

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        inputs_embeds=None,
        labels=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        position_ids=None,
        **kwargs,
    ) -> SequenceClassifierOutput:
        r"""
        labels (`torch.LongTensor` of shape `(batch_size,)`, *optional*): class indices (cross-entropy), or floats
            when `num_labels == 1` (mean squared error), or multi-hot floats (binary cross-entropy). Without a
            `config.problem_type`, the labels set it, as in BERT.
        position_ids, kwargs: as `MinAttnModel.forward` takes them.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        kwargs.pop("num_items_in_batch", None)  # a mean over the batch; the Trainer divides it (accepts_loss_kwargs)
        outputs = self.minattn(
            input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            position_ids=position_ids,
            **kwargs,
        )
        logits = self.classifier(self.dropout(outputs.last_hidden_state[:, 0]))  # (B, num_labels)

        loss = None
        if labels is not None:
            check_tensor("labels", labels, LABELS_AS_TENSOR)  # regression labels never reach check_label_ids
            problem = self._problem_type(labels)
            self._check_label_shape(labels, logits.shape[0], problem)
            if problem == "regression":
                targets = labels.reshape(-1) if self.num_labels == 1 else labels  # (B,) or (B, 1) -> (B,); else (B, L)
                loss = F.mse_loss(logits.squeeze(-1) if self.num_labels == 1 else logits, targets.to(logits.dtype))
            elif problem == "single_label_classification":
                loss = F.cross_entropy(logits, self._check_class_ids(labels).view(-1))  # (B,) or (B, 1) -> (B,)
            else:  # multi_label_classification
                loss = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
            # Kept in the config (as BERT does) only once the labels were accepted: a call refused above leaves it as
            # it was, so that the next call is not judged by, nor a save stores, a choice made from bad labels.
            if self.config.problem_type is None:
                self.config.problem_type = problem

        output = SequenceClassifierOutput(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )
        return output if return_dict else output.to_tuple()

    def _problem_type(self, labels) -> str:
        """config.problem_type, or without one, what the labels make it as BERT infers it: one output regresses,
        int64/int32 class ids classify, anything else is multi-hot. Not written to the config here."""
        problem = self.config.problem_type
        if problem is None:
            integer = labels.dtype in (torch.long, torch.int)
            problem = ("regression" if self.num_labels == 1 else
                       "single_label_classification" if integer else "multi_label_classification")
        if problem not in PROBLEM_TYPES:  # assigned after the model was built: not validated
            raise ValueError(f"config.problem_type must be one of {PROBLEM_TYPES} or None, got {problem!r}")
        return problem

    def _check_label_shape(self, labels, batch: int, problem: str) -> None:
        """Labels shaped as the problem type's loss reads them; else a ValueError naming both shapes, rather than a
        batch-size error from inside the loss or, for regression, a target silently broadcast against the logits."""
        if problem == "multi_label_classification" or (problem == "regression" and self.num_labels > 1):
            expected, what = [(batch, self.num_labels)], f"{self.num_labels} targets per sequence"
        else:
            expected = [(batch,), (batch, 1)]
            what = "one value per sequence" if problem == "regression" else "one class index per sequence"
        if tuple(labels.shape) not in expected:
            raise ValueError(f"labels has shape {tuple(labels.shape)}, expected "
                             + " or ".join(str(shape) for shape in expected) + f" ({what})")


class MinAttnForTokenClassification(MinAttnClassifierModel):
    """The encoder plus a linear classifier on every token's final vector (named entities, parts of speech)."""

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        inputs_embeds=None,
        labels=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        position_ids=None,
        **kwargs,
    ) -> TokenClassifierOutput:
        r"""
        labels (`torch.LongTensor` of shape `(batch_size, sequence_length)`, *optional*): each token's class index,
            -100 where no label counts (special tokens, padding, a word's later pieces).
        num_items_in_batch (passed by the Trainer): the number of labelled tokens in the whole accumulated batch;
            the loss is then summed and divided by it, so gradient accumulation gives the same loss as one big batch
            (as for the masked LM).
        position_ids, kwargs: as `MinAttnModel.forward` takes them.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        num_items = kwargs.pop("num_items_in_batch", None)
        outputs = self.minattn(
            input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            position_ids=position_ids,
            **kwargs,
        )
        logits = self.classifier(self.dropout(outputs.last_hidden_state))  # (B, T, num_labels)

        loss = None
        if labels is not None:
            labels = self._check_class_ids(labels)
            if labels.shape != logits.shape[:2]:
                raise ValueError(f"labels has shape {tuple(labels.shape)}, expected {tuple(logits.shape[:2])} (one "
                                 "class index per token)")
            if num_items is None:
                num_items = max(int((labels != -100).sum()), 1)
            flat_logits = logits.view(-1, self.num_labels).float()  # (B*T, num_labels)
            flat_labels = labels.view(-1)  # (B*T,)
            loss = F.cross_entropy(flat_logits, flat_labels, ignore_index=-100, reduction="sum") / num_items

        output = TokenClassifierOutput(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "MinAttnPreTrainedModel",
    "MinAttnModel",
    "MinAttnForMaskedLM",
    "MinAttnForSequenceClassification",
    "MinAttnForTokenClassification",
]
