"""`ProbeSettings`: what `run_all_probes` does (which probes, on which words, how many sentences, which seed), checked
when made, each number under the name of its `hf-minattn probe` flag."""

from dataclasses import dataclass

from hf_minattn.checks import MAX_SEED, check_bounds

from .neighbours import DEFAULT_SENSE_SENTENCES, DEFAULT_SENSE_WORD, DEFAULT_WORDS
from .pooling import DEFAULT_CONTEXTS_PER_WORD, DEFAULT_TWIN_CONTEXTS_PER_WORD

DEFAULT_EXAMPLES = ("The king and the queen walked their dog to the old castle.",
                    "The quick brown fox jumps over the lazy dog, and the dog sleeps.")

# The numbers of ProbeSettings, named as hf-minattn probe's flags: {field: (lowest, highest or None, lowest allowed?)}
BOUNDS = {"head_sentences": (1, None, True), "min_count": (1, None, True), "bootstrap": (10, None, True),
          "mlm_probability": (0, 1, False), "ablation_mask_draws": (1, None, True), "batch_size": (1, None, True),
          "ablation_sentences": (1, None, True), "seed": (0, MAX_SEED + 1, True), "contexts_per_word": (1, None, True),
          "twin_contexts_per_word": (1, None, True)}
SWITCHES = ("word2vec", "decontextualized", "untrained", "heads", "view", "ablation", "logit_lens", "circuits",
            "weights", "trust_remote_code", "full_pooling", "bf16")


@dataclass(frozen=True)
class ProbeSettings:
    """What `run_all_probes` does: which probes run, on which words and how many sentences, with which seed. Checked
    when made, each number under the name of its `hf-minattn probe` flag (the CLI makes one before loading anything).
    """

    words: tuple = DEFAULT_WORDS  # probe words: their nearest neighbours under every vector set
    sense_word: str | None = DEFAULT_SENSE_WORD  # one word's vectors across sense_sentences (None: not probed)
    sense_sentences: tuple | None = DEFAULT_SENSE_SENTENCES  # each contains sense_word
    examples: tuple = DEFAULT_EXAMPLES  # sentences whose attention is drawn, first in the attention view
    model_name: str | None = None  # the model's name in the report (default: its config's name_or_path, or class)
    word2vec: bool = True  # a word2vec trained on the vector corpus, scored beside every set
    decontextualized: bool = True  # every word fed alone, a vector set per layer
    untrained: bool = False  # the same architecture re-initialised with `seed`, scored beside every benchmark number
    heads: bool = True  # attention statistics on head_sentences sentences, the examples' graphs, rollout and flow
    view: bool = True  # the interactive attention view's data (the examples, then short probe sentences), with heads
    ablation: bool = True  # masked-LM (a decoder: next-token) loss per zeroed head on ablation_sentences, with heads
    logit_lens: bool = True  # every layer decoded through the model's head, on the ablation's tokens
    circuits: bool = True  # layer 0's QK/OV circuits against named hypotheses
    weights: bool = True  # singular value spectra of the attention weights, against initialisation
    head_sentences: int = 200
    ablation_sentences: int = 64
    # a word needs this many distinct sentences of the vector corpus to get vectors. Geometry reads it as an occurrence
    # count in the probe corpus (seen >= min_count times), and scores a word only where it is also in >= 5 distinct
    # sentences (geometry's own min_contexts, which run.py leaves at its default)
    min_count: int = 5
    # the vector corpus's pooling (pooling.py): the words some probe reads, each from at most contexts_per_word
    # sentences drawn with `seed`; full_pooling: every word from every sentence (contexts_per_word unused)
    contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD
    twin_contexts_per_word: int = DEFAULT_TWIN_CONTEXTS_PER_WORD  # the same for the untrained twin's pass
    full_pooling: bool = False
    # the passes (the probe sentences'; the vector corpus's: the model's, the untrained twin's, the reference's) under
    # bf16 autocast: 1.5-1.75x faster on AVX512-BF16 (2 cores), the benchmarks' and geometry's scores within their fp32
    # noise (benchmarks/bench_pooling.py, bench_geometry_bf16.py; benchmarks/NOTES.md)
    bf16: bool = False
    batch_size: int = 64
    seed: int = 0
    bootstrap: int = 1000  # resamples of every bootstrap interval (the circuits' at most 200)
    mlm_probability: float = 0.15  # mask rate of the ablation and lens losses: the rate the model was trained at
    ablation_mask_draws: int = 1  # independent masks per sentence for those losses
    trust_remote_code: bool = False  # for loading the masked (or next-token) LM from the model's folder

    def __post_init__(self):
        for name in BOUNDS:
            value, kinds = getattr(self, name), (int, float) if name == "mlm_probability" else int
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise ValueError(f"--{name.replace('_', '-')} must be {'an integer' if kinds is int else 'a number'}"
                                 f", got {value!r}")
        check_bounds(self, BOUNDS, separator="-")
        for name in SWITCHES:
            if not isinstance(getattr(self, name), bool):
                flag = f"--{name.replace('_', '-')}" if name in ("full_pooling", "bf16") else name
                raise ValueError(f"{flag} must be True or False, got {getattr(self, name)!r}")
        for name in ("words", "sense_sentences", "examples"):
            value = getattr(self, name)
            if value is None and name == "sense_sentences":
                continue
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{name} must be a list of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))  # frozen: a caller's list cannot change it later
        for name in ("sense_word", "model_name"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string or None, got {getattr(self, name)!r}")


def check_probe_arguments(model, tokenizer, sentences, settings, reference=None) -> None:
    """What `run_all_probes` is given, checked before any work: a TypeError naming the argument that is not what
    it needs (a model and tokenizer swapped, one sentence as a string, a sentence that is not a string)."""
    import torch

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):  # a wrapper (PEFT's) passes
        raise TypeError(f"model must be a transformers model (AutoModel.from_pretrained), got {type(model).__name__}")
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"tokenizer must be a fast tokenizer (AutoTokenizer.from_pretrained), got "
                        f"{type(tokenizer).__name__}")
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise TypeError(f"sentences must be a list of strings, got {type(sentences).__name__}")
    bad = next(((i, s) for i, s in enumerate(sentences) if not isinstance(s, str)), None)
    if bad is not None:
        raise TypeError(f"sentences must be a list of strings; sentence {bad[0]} is a {type(bad[1]).__name__}: {bad[1]!r}")
    if not isinstance(settings, ProbeSettings):
        raise TypeError(f"settings must be a ProbeSettings, got {type(settings).__name__}")
    if reference is not None and not (isinstance(reference, tuple) and len(reference) == 3):
        raise TypeError(f"reference must be a (model, tokenizer, name) tuple, got {type(reference).__name__}")
    for name, given in (("tokenizer", tokenizer), ("the reference's tokenizer", reference and reference[1])):
        if given is not None and getattr(given, "padding_side", "right") != "right":
            raise ValueError(f"{name} pads on the {given.padding_side!r}; the probes read each sentence's tokens from "
                             f"the start of its row: set tokenizer.padding_side = 'right' (load_encoder does)")
