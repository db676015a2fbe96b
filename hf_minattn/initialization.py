"""A model at initialisation, drawn reproducibly module by module: where run_mlm starts training from, and the
"before training" reference of the probes."""

import copy
import numbers
import zlib

import torch

from hf_minattn.modeling_minattn import MinAttnForMaskedLM


def initial_model(config, seed: int, model_class=None):
    """`model_class(config)` (default MinAttnForMaskedLM) at initialisation, each module drawn from a generator
    seeded by (seed, the module's name); `config` is copied, not shared with the model.

    So two models of the same seed start from the same weights in every module they share by name and shape, across
    the variants the experiments compare (a wider feed-forward, no W_Q/W_K/W_V, no feed-forward): the variants are
    paired on their initial weights too, not only on data order and masks. Not across depths, nor other initialisation
    settings (initializer_range, qk_logit_init_std, qkv_init): each residual output projection (`o_proj`,
    `down_proj`) is drawn with std initializer_range / sqrt(2 * num_hidden_layers), so models of different depth get
    the same draws there at another scale. Any model with `_init_weights` (every transformers model) works. The
    caller's global RNG is left as it was. `seed`: an integer >= 0 (an int, or a numpy integer); seeds are told apart
    by their decimal text, so 1.0 or True, which would not give seed 1's weights, are refused.

    One exception to "each module from its own name": with tied word embeddings (`tie_word_embeddings`, the default)
    the masked-LM decoder `lm_head.decoder` holds the same Parameter as `minattn.embeddings.word_embeddings` and
    comes after it, so the matrix is drawn twice and keeps the second draw: the word embeddings come from the seed
    of "lm_head.decoder". Tied models are still paired with each other; a tied and an untied model of the same seed
    start from different word embeddings. (Left so on purpose: the committed runs were initialised this way.)
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"initial_model: seed must be an integer >= 0, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"initial_model: seed must be an integer >= 0, got {seed}")
    seed = int(seed)  # a numpy integer's text is its value's, but as a plain int it is certain
    model_class = model_class or MinAttnForMaskedLM
    with torch.random.fork_rng(devices=[]):
        # Seeded first too, so that a parameter `_init_weights` leaves alone does not depend on the caller's RNG.
        torch.manual_seed(zlib.crc32(str(seed).encode()))
        model = model_class(copy.deepcopy(config))
        for name, module in model.named_modules():
            torch.manual_seed(zlib.crc32(f"{seed}/{name}".encode()))  # the CPU generator keeps 32 bits
            model._init_weights(module)
    return model
