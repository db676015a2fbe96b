"""A model at initialisation, drawn reproducibly module by module: where run_mlm starts training from, and the
"before training" reference of the probes."""

import copy
import zlib

import torch

from hf_minattn.modeling_minattn import MinAttnForMaskedLM


def initial_model(config, seed: int, model_class=None):
    """`model_class(config)` (default MinAttnForMaskedLM) at initialisation, each module drawn from a generator
    seeded by (seed, the module's name); `config` is copied, not shared with the model.

    So two models of the same seed start from the same weights in every module they share by name and shape,
    whatever else differs (a wider feed-forward, no W_Q/W_K/W_V, no feed-forward): the experiments' variants are
    paired on their initial weights too, not only on data order and masks. Any model with `_init_weights` (every
    transformers model) works. The caller's global RNG is left as it was.

    One exception to "each module from its own name": with tied word embeddings (`tie_word_embeddings`, the default)
    the masked-LM decoder `lm_head.decoder` holds the same Parameter as `minattn.embeddings.word_embeddings` and
    comes after it, so the matrix is drawn twice and keeps the second draw: the word embeddings come from the seed
    of "lm_head.decoder". Tied models are still paired with each other; a tied and an untied model of the same seed
    start from different word embeddings. (Left so on purpose: the committed runs were initialised this way.)
    """
    model_class = model_class or MinAttnForMaskedLM
    with torch.random.fork_rng(devices=[]):
        # Seeded first too, so that a parameter `_init_weights` leaves alone does not depend on the caller's RNG.
        torch.manual_seed(zlib.crc32(str(seed).encode()))
        model = model_class(copy.deepcopy(config))
        for name, module in model.named_modules():
            torch.manual_seed(zlib.crc32(f"{seed}/{name}".encode()))  # the CPU generator keeps 32 bits
            model._init_weights(module)
    return model
