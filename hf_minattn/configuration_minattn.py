"""MinAttn model configuration."""

import json
import math
from contextlib import contextmanager

from transformers import PretrainedConfig
from transformers.activations import ACT2FN

POSITION_EMBEDDING_TYPES = ("learned", "sinusoidal", "rope", "none")
NORM_PLACEMENTS = ("pre", "post")
QKV_PROJECTIONS = ("learned", "identity")
QKV_INITS = ("normal", "identity")
SPECIAL_TOKEN_ID_FIELDS = ("pad_token_id", "cls_token_id", "sep_token_id", "mask_token_id")
PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")
# The fields None means something for: an override "null" (or "None") sets them to None.
NULLABLE_FIELDS = SPECIAL_TOKEN_ID_FIELDS + ("classifier_dropout", "problem_type")
POSITIVE_INT_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings")
# Fields the model reads as floats: an int given for one must fit a float too (10**400 overflows at model build).
FLOAT_FIELDS = ("rope_theta", "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout",
                "layer_norm_eps", "initializer_range", "qk_logit_init_std")


def json_or_text(value: str):
    """A config override's value read as JSON (0.1, 5, true, null), else the text itself."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def check_num_labels(value) -> None:
    """A ValueError unless `value` is a whole number of labels, at least 1: 0 would build a classifier with no outputs
    (and the base class reads a negative count as 0)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"MinAttnConfig.num_labels must be an integer of at least 1 (the classifier's outputs), "
                         f"got {value!r}")


def check_base_fields(kwargs: dict) -> None:
    """The base class's fields that it would fail on without naming them: a label map that is no dict
    (AttributeError: 'list' object has no attribute 'items') and a dtype that names no torch dtype (AttributeError
    from torch)."""
    for name in ("id2label", "label2id"):
        if kwargs.get(name) is not None and not isinstance(kwargs[name], dict):
            raise TypeError(f"MinAttnConfig.{name} must be a dict such as {{0: 'NEGATIVE', 1: 'POSITIVE'}}, got a "
                            f"{type(kwargs[name]).__name__}")
    for name in ("dtype", "torch_dtype"):
        value = kwargs.get(name)
        if isinstance(value, str):
            import torch  # the config stays importable without torch until a dtype is named

            if not isinstance(getattr(torch, value, None), torch.dtype):
                raise ValueError(f"MinAttnConfig.{name} must name a torch dtype such as 'float32' or 'bfloat16', got "
                                 f"{value!r}")


def is_finite(value) -> bool:
    """Whether the number `value` is finite as a float: NaN, inf and an int too large for a float (10**400) are not."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


class MinAttnConfig(PretrainedConfig):
    r"""
    This is the configuration class to store the configuration of a [`MinAttnModel`]. It is used to instantiate a
    MinAttn encoder: token (and position) embeddings followed by a stack of multi-head self-attention blocks, each
    with an optional feed-forward sublayer. The defaults give a small model (about 5M parameters) that trains on a
    CPU in minutes.

    Configuration objects inherit from [`PretrainedConfig`] and can be used to control the model outputs. Read the
    documentation from [`PretrainedConfig`] for more information.

    Args:
        vocab_size (`int`, *optional*, defaults to 8192):
            Vocabulary size: the number of rows of the word embedding matrix.
        hidden_size (`int`, *optional*, defaults to 256):
            Dimension of the embeddings and of every hidden state.
        num_hidden_layers (`int`, *optional*, defaults to 4):
            Number of self-attention blocks.
        num_attention_heads (`int`, *optional*, defaults to 4):
            Number of attention heads per block; must divide `hidden_size`.
        intermediate_size (`int`, *optional*, defaults to 1024):
            Width of the feed-forward sublayer. `0` gives attention-only blocks (no feed-forward sublayer).
        hidden_act (`str`, *optional*, defaults to `"gelu"`):
            Activation of the feed-forward sublayer and of the masked-LM head, any key of
            `transformers.activations.ACT2FN`.
        max_position_embeddings (`int`, *optional*, defaults to 512):
            Longest sequence the model accepts when positions are `"learned"` or `"sinusoidal"` (see
            `sequence_length_limit`); `"rope"` and `"none"` take any length.
        position_embedding_type (`str`, *optional*, defaults to `"learned"`):
            `"learned"` (a trained embedding per position, as in BERT), `"sinusoidal"` (the fixed encoding of
            "Attention Is All You Need", added to the token vectors), `"rope"` (rotary position embeddings, as in
            RoFormer and ModernBERT: queries and keys are rotated by an angle proportional to their position, so
            attention logits depend on relative positions and the token vectors carry no position signal) or
            `"none"` (no position information: the model sees a bag of tokens).
        rope_theta (`float`, *optional*, defaults to 10000.0):
            Base of the rotary frequencies (`"rope"` only): pair i of a head's channels turns by
            position * rope_theta^(-2i / head_dim).
        norm_placement (`str`, *optional*, defaults to `"pre"`):
            `"pre"`: LayerNorm before each sublayer and once after the last block (GPT-2 style, stable to train);
            `"post"`: LayerNorm after each residual addition and on the embeddings (original Transformer / BERT).
        hidden_dropout_prob (`float`, *optional*, defaults to 0.1):
            Dropout on the embeddings and on each sublayer's output.
        attention_probs_dropout_prob (`float`, *optional*, defaults to 0.1):
            Dropout on the attention probabilities.
        layer_norm_eps (`float`, *optional*, defaults to 1e-12):
            Epsilon of every LayerNorm.
        initializer_range (`float`, *optional*, defaults to 0.02):
            Standard deviation of the normal initialisation of all weight matrices except W_Q and W_K.
        qk_logit_init_std (`float`, *optional*, defaults to 0.1):
            Standard deviation of the initial attention logits on LayerNormed inputs, which sets that of W_Q and
            W_K: sqrt(qk_logit_init_std / hidden_size) (the logits' standard deviation is std(W)^2 * hidden_size).
            At 0.1, attention starts close to uniform, about what `initializer_range=0.02` gives at hidden 256;
            order-1 logits (1.0) trained more slowly in the recipe sweep (docs/recipe.md).
        qkv_bias (`bool`, *optional*, defaults to `True`):
            Whether the query/key/value projection has a bias.
        qkv_projection (`str`, *optional*, defaults to `"learned"`):
            `"learned"`: trained W_Q, W_K, W_V. `"identity"`: W_Q = W_K = W_V = I, the textbook special case in which
            queries, keys and values are the block's input split into heads (the output projection W_O stays).
        qkv_init (`str`, *optional*, defaults to `"normal"`):
            Initialisation of learned W_Q, W_K, W_V: `"normal"` (see `initializer_range`, `qk_logit_init_std`) or
            `"identity"` (each starts as I, biases at 0: the `qkv_projection="identity"` model, free to move away).
        embedding_gain (`bool`, *optional*, defaults to `False`):
            Whether the word vectors are multiplied by one learned scalar (initialised at 1) before positions are
            added. With frozen embeddings (`run_mlm.py --freeze_embeddings`) the gain stays trainable, so the model
            can learn the scale a frozen random matrix would otherwise keep at its initial norm.
        tie_word_embeddings (`bool`, *optional*, defaults to `True`):
            Whether the masked-LM decoder shares its weight with the word embeddings (stored once).
        sparse_prediction (`bool`, *optional*, defaults to `False`):
            Masked LM with `labels` only: project to the vocabulary at the labelled positions alone, so `logits` is
            `(n_labelled, vocab_size)` in the order of `labels[labels != -100]` rather than `(batch, sequence,
            vocab_size)` (as ModernBERT's flag of the same name). Faster training; off by default because code
            written for BERT expects the full logits. `forward(..., sparse_prediction=...)` decides per call: the
            Trainer of `run_mlm.py` passes True, and saves this field as the user chose it.
        classifier_dropout (`float`, *optional*):
            Dropout before the sequence-classification head; defaults to `hidden_dropout_prob`.
        num_labels (`int`, *optional*, defaults to 2):
            Outputs of the classification heads (the base class keeps them as `id2label`); at least 1.
        problem_type (`str`, *optional*):
            The sequence classifier's loss: `"regression"` (mean squared error), `"single_label_classification"`
            (cross-entropy) or `"multi_label_classification"` (binary cross-entropy); None: chosen by the first
            labels, as in BERT.
        pad_token_id (`int`, *optional*, defaults to 0):
            Id of the padding token.
        cls_token_id (`int`, *optional*, defaults to 2):
            Id of the [CLS] token, which the tokenizer puts first in every sequence. The sequence-classification
            head reads the final hidden state at position 0 whatever token is there; it never looks this id up.
        sep_token_id (`int`, *optional*, defaults to 3):
            Id of the [SEP] token.
        mask_token_id (`int`, *optional*, defaults to 4):
            Id of the [MASK] token.

    Example:

    ```python
    >>> from hf_minattn import MinAttnConfig, MinAttnModel

    >>> config = MinAttnConfig(hidden_size=128, num_hidden_layers=2, intermediate_size=0)  # attention-only
    >>> model = MinAttnModel(config)
    >>> model.config.num_attention_heads
    4
    ```
    """

    model_type = "minattn"

    def __init__(
        self,
        vocab_size: int = 8192,
        hidden_size: int = 256,
        num_hidden_layers: int = 4,
        num_attention_heads: int = 4,
        intermediate_size: int = 1024,
        hidden_act: str = "gelu",
        max_position_embeddings: int = 512,
        position_embedding_type: str = "learned",
        rope_theta: float = 10000.0,
        norm_placement: str = "pre",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        layer_norm_eps: float = 1e-12,
        initializer_range: float = 0.02,
        qk_logit_init_std: float = 0.1,
        qkv_bias: bool = True,
        qkv_projection: str = "learned",
        qkv_init: str = "normal",
        embedding_gain: bool = False,
        tie_word_embeddings: bool = True,
        sparse_prediction: bool = False,
        classifier_dropout: float | None = None,
        pad_token_id: int | None = 0,
        cls_token_id: int | None = 2,
        sep_token_id: int | None = 3,
        mask_token_id: int | None = 4,
        **kwargs,
    ):
        check_num_labels(kwargs.get("num_labels", 1))  # as given: the base class would turn -1 into 0 labels
        check_base_fields(kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.max_position_embeddings = max_position_embeddings
        self.position_embedding_type = position_embedding_type
        self.rope_theta = rope_theta
        self.norm_placement = norm_placement
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.qk_logit_init_std = qk_logit_init_std
        self.qkv_bias = qkv_bias
        self.qkv_projection = qkv_projection
        self.qkv_init = qkv_init
        self.embedding_gain = embedding_gain
        # transformers 5 no longer declares these on the base class: without them here, nothing is tied.
        self.tie_word_embeddings = tie_word_embeddings
        self.sparse_prediction = sparse_prediction
        self.classifier_dropout = classifier_dropout
        self.pad_token_id, self.cls_token_id = pad_token_id, cls_token_id
        self.sep_token_id, self.mask_token_id = sep_token_id, mask_token_id
        self._validate_sizes()  # before the base class: its token-id check fails on a str vocab_size, naming no field
        super().__init__(**kwargs)
        self.validate_minattn()

    @classmethod
    def from_dict(cls, config_dict: dict, **kwargs):
        """As `PretrainedConfig.from_dict`, then `validate_minattn`: the base class sets the keyword overrides
        (`from_pretrained(folder, hidden_size=7)`) after `__init__` has validated, so they would go unchecked into a
        config that save_pretrained writes and no longer loads."""
        result = super().from_dict(config_dict, **kwargs)
        config = result[0] if kwargs.get("return_unused_kwargs") else result  # (config, unused kwargs) when asked
        config.validate_minattn()
        return result

    @contextmanager
    def _unchanged_on_error(self):
        """Runs an edit; if it raises, every field is put back as it was before, so that a rejected edit leaves
        nothing behind (the base class sets each field before anything is checked)."""
        saved = dict(self.__dict__)
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def update(self, config_dict: dict):
        """As `PretrainedConfig.update`, then `validate_minattn`; all or nothing: an edit that fails validation leaves
        the config as it was."""
        if "num_labels" in config_dict:  # as given: the base class would turn -1 into 0 labels
            check_num_labels(config_dict["num_labels"])
        with self._unchanged_on_error():
            super().update(config_dict)
            self.validate_minattn()

    def update_from_string(self, update_str: str):
        """As `PretrainedConfig.update_from_string` ("hidden_size=128,qkv_projection=identity", what run_mlm's
        --config_overrides passes), with errors that name the bad entry; then `validate_minattn`. All or nothing:
        if an entry or the result is refused, the config is left as it was. A field that is None
        (`classifier_dropout`, a special token id) takes a JSON value: a number, true/false, null, else the text; one
        that may be None (NULLABLE_FIELDS: the special token ids, `classifier_dropout`, `problem_type`) takes "null"
        or "None" to set it to None."""
        if not isinstance(update_str, str):
            raise TypeError(f"config overrides must be a string like 'hidden_size=128,intermediate_size=0', got {update_str!r}")
        with self._unchanged_on_error():
            for item in update_str.split(","):
                self._update_one(item)
            self.validate_minattn()

    def _update_one(self, item: str) -> None:
        """One "key=value" entry of `update_from_string`."""
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if item.count("=") != 1 or not key:
            raise ValueError(f"config override {item!r}: expected key=value, e.g. 'hidden_size=128'")
        if key == "num_labels":  # as given: the base class would turn -1 into 0 labels
            check_num_labels(json_or_text(value))
        if key in NULLABLE_FIELDS and value.lower() in ("null", "none"):  # the base class would parse "null" as an int
            setattr(self, key, None)
            return
        if hasattr(self, key) and getattr(self, key) is None:  # the base class parses by the current value's type
            setattr(self, key, json_or_text(value))
            return
        try:
            super().update_from_string(f"{key}={value}")
        except (ValueError, TypeError) as error:
            raise ValueError(f"config override {item!r}: {error}") from None

    def sequence_length_limit(self) -> int | None:
        """The longest input the model takes: `max_position_embeddings` when positions are looked up by index
        ("learned", "sinusoidal"), None (any length) for "rope" and "none". The model's input check and run_mlm's
        --max_seq_length check both ask this."""
        if self.position_embedding_type in ("learned", "sinusoidal"):
            return self.max_position_embeddings
        return None

    def validate_minattn(self):
        """Raise a `ValueError` naming the field, its value and what is allowed, for every invalid combination."""
        self._validate_floats()
        self._validate_sizes()
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"MinAttnConfig.hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})"
            )
        for name, allowed in (
            ("position_embedding_type", POSITION_EMBEDDING_TYPES),
            ("norm_placement", NORM_PLACEMENTS),
            ("qkv_projection", QKV_PROJECTIONS),
            ("qkv_init", QKV_INITS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"MinAttnConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.position_embedding_type == "rope" and (self.hidden_size // self.num_attention_heads) % 2:
            raise ValueError(
                f"MinAttnConfig.position_embedding_type='rope' rotates pairs of channels: the head dimension "
                f"hidden_size / num_attention_heads = {self.hidden_size}/{self.num_attention_heads} must be even"
            )
        if self.qkv_init != "normal" and self.qkv_projection != "learned":
            raise ValueError(f"MinAttnConfig.qkv_init={self.qkv_init!r} initialises learned projections: it needs "
                             f"qkv_projection='learned', got {self.qkv_projection!r}")
        for name in ("qkv_bias", "tie_word_embeddings", "sparse_prediction", "embedding_gain"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"MinAttnConfig.{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.hidden_act, str) or self.hidden_act not in ACT2FN:  # a list is unhashable for `in`
            raise ValueError(f"MinAttnConfig.hidden_act must be one of {sorted(ACT2FN)}, got {self.hidden_act!r}")
        self._validate_ids_and_labels()

    def _validate_sizes(self):
        """The size fields positive integers (`intermediate_size` may be 0), not bools, strings or floats."""
        for name in POSITIVE_INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"MinAttnConfig.{name} must be a positive integer, got {value!r}")
        if isinstance(self.intermediate_size, bool) or not isinstance(self.intermediate_size, int) or self.intermediate_size < 0:
            raise ValueError(
                f"MinAttnConfig.intermediate_size must be a non-negative integer (0 = attention-only), "
                f"got {self.intermediate_size!r}"
            )

    def _validate_floats(self):
        """Every float field finite (NaN compares False with every bound, and inf passes a bound without upper limit:
        either would give a model that outputs NaN, and a config.json holding a bare NaN that is not JSON; an int
        too large for a float overflows when the model is built); dropout probabilities in [0, 1]; epsilons, scales
        and rope_theta above 0."""
        for name, value in vars(self).items():
            number = isinstance(value, float) or (name in FLOAT_FIELDS and isinstance(value, int))
            if number and not isinstance(value, bool) and not is_finite(value):
                raise ValueError(f"MinAttnConfig.{name} must be a finite number, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"):
            value = getattr(self, name)
            if value is None and name == "classifier_dropout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"MinAttnConfig.{name} must be a probability in [0, 1], got {value!r}")
        for name in ("layer_norm_eps", "initializer_range", "qk_logit_init_std", "rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"MinAttnConfig.{name} must be a positive number, got {value!r}")

    def _validate_ids_and_labels(self):
        """Special token ids inside the vocabulary (or None), at least one label, a known problem type (or None):
        a misspelt one would train with the wrong loss."""
        for name in SPECIAL_TOKEN_ID_FIELDS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value < self.vocab_size):
                raise ValueError(
                    f"MinAttnConfig.{name} must be an id in [0, vocab_size={self.vocab_size}) or None, got {value!r}"
                )
        if self.id2label is not None:
            check_num_labels(self.num_labels)
        if self.problem_type is not None and self.problem_type not in PROBLEM_TYPES:
            raise ValueError(f"MinAttnConfig.problem_type must be one of {PROBLEM_TYPES} or None, got "
                             f"{self.problem_type!r}")

    def special_token_ids(self) -> dict[str, int]:
        """{field: id} of the special token ids that are set (`pad_token_id`, `cls_token_id`, ...): the ids that
        must lie inside the vocabulary."""
        return {name: getattr(self, name) for name in SPECIAL_TOKEN_ID_FIELDS if getattr(self, name) is not None}


__all__ = ["MinAttnConfig"]
