"""Shared fixtures: tiny MinAttn configs with odd sizes, a WordPiece tokenizer trained on real text, and the
training data of the run_mlm tests (the Wikipedia sample, a tokenizer, local text files)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch

from hf_minattn import MinAttnConfig, train_tokenizer

# Under pytest-xdist (`make test` runs a worker per core) the workers share the cores: one torch thread each, in
# the worker and in the processes its tests start, so that two workers on 2 cores do not run four threads.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"

# Under pytest-xdist the files are handed out in collection order, one at a time as workers free up: the longest go
# first, so that none of them starts last and runs alone at the end (the experiments' quick run alone takes 3 minutes).
LONGEST_FIRST = ("test_experiments.py", "test_learning_rates.py", "test_demo.py", "test_probes_cli.py", "test_wheel.py")


def pytest_collection_modifyitems(config, items):
    order = {name: rank for rank, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: order.get(item.path.name, len(order)))  # stable: each file keeps its own order


# A few sentences of real English (about the classic probe words), enough for a tiny vocabulary.
TEXTS = [
    "The king and the queen ruled the kingdom from a castle on the hill.",
    "A dog barked at the cat, and the cat ran up a tree.",
    "The queen gave the king a crown of gold.",
    "Dogs and cats are common pets in many homes.",
    "The river runs past the bank where people keep their money.",
    "She sat on the bank of the river and watched the water.",
    "Words that occur together often share meaning.",
    "Attention lets every token look at every other token in the sentence.",
] * 4


def tiny_config(**overrides) -> MinAttnConfig:
    """Odd sizes catch dimension bugs: hidden 36 = 4 heads of 9, feed-forward 37, vocab 99."""
    values = dict(
        vocab_size=99,
        hidden_size=36,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=24,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    values.update(overrides)
    return MinAttnConfig(**values)


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_script(name: str):
    """benchmarks/NAME.py loaded as a module, its sibling modules importable as when it runs as a script."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def padded_batch(vocab_size: int = 99):
    """Two sequences of 9 tokens, the second padded after 5."""
    input_ids = torch.randint(5, vocab_size, (2, 9))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    input_ids[1, 5:] = 0
    return input_ids, attention_mask


def no_context_model(vocab_size: int = 120):
    """A MinAttnModel whose blocks add nothing: attention-only, W_O = 0, no positions, final LayerNorm removed, so
    every layer's output is the word embedding itself (a known answer for the probes)."""
    from hf_minattn import MinAttnModel

    model = MinAttnModel(tiny_config(intermediate_size=0, position_embedding_type="none", vocab_size=vocab_size)).eval()
    with torch.no_grad():
        for layer in model.layers:
            layer.attention.o_proj.weight.zero_()
            layer.attention.o_proj.bias.zero_()
    model.final_norm = torch.nn.Identity()
    return model


@pytest.fixture(scope="session")
def tokenizer():
    return train_tokenizer(TEXTS, vocab_size=120, min_frequency=1, model_max_length=24, show_progress=False)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="module")
def _seed_module():
    """Module-scoped fixtures are set up before the function-scoped `_seed`: seeded here, the random weights they
    build do not depend on which test file the same xdist worker ran before."""
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="session")
def _word2vec_cache(tmp_path_factory):
    """The tests train word2vec into a cache of their own (empty at the start of every session), never the user's;
    subprocesses (the CLI runs) inherit the variable."""
    import os

    from hf_minattn.probes.benchmarks import WORD2VEC_CACHE_ENV

    old = os.environ.get(WORD2VEC_CACHE_ENV)
    os.environ[WORD2VEC_CACHE_ENV] = str(tmp_path_factory.mktemp("word2vec_cache"))
    yield
    if old is None:
        os.environ.pop(WORD2VEC_CACHE_ENV)
    else:
        os.environ[WORD2VEC_CACHE_ENV] = old


# ---------------------------------------------------------------- training data (test_training.py)


@pytest.fixture(scope="session")
def wiki():
    from hf_minattn.data import load_wikipedia_sample

    return load_wikipedia_sample()


@pytest.fixture(scope="session")
def tokenizer_dir(wiki, tmp_path_factory):
    """A small WordPiece tokenizer trained once per session, so that the tests share one vocabulary (and its
    ids) without training it again."""
    from hf_minattn import train_tokenizer

    path = tmp_path_factory.mktemp("tokenizer")
    train_tokenizer(wiki["train"]["text"], vocab_size=400, model_max_length=64, show_progress=False).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def text_files(wiki, tmp_path_factory):
    """Local .txt training and validation files (one paragraph per line), for the local-file code path."""
    path = tmp_path_factory.mktemp("text")
    (path / "train.txt").write_text("\n".join(wiki["train"]["text"][:300]) + "\n")
    (path / "validation.txt").write_text("\n".join(wiki["validation"]["text"][:40]) + "\n")
    return path


def probe_results(**parts):
    """The typed results the report's sections read (SavedProbeResults) of a small run whose probes.json has only
    `parts` (its keys: geometry=..., heads=...)."""
    from hf_minattn.probes.results import SavedProbeResults

    return SavedProbeResults.from_dict({"model": "test", "num_layers": 2, **parts})
