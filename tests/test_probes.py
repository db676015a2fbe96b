"""Known-answer tests of the probes (hf_minattn/probes): each builds an input whose answer is known."""

import copy
import json
import random
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import TEXTS, no_context_model, probe_results, tiny_config
from gensim.models import KeyedVectors
from gensim.test.utils import datapath
from transformers import TrainerState

from hf_minattn import MinAttnForMaskedLM, MinAttnModel
from hf_minattn.drift import DRIFT_FILE, DriftCallback, read_drift
from hf_minattn.probes.benchmarks import Word2VecSettings, analogy_accuracy, train_word2vec
from hf_minattn.probes.corpus import read_corpus_file, split_sentences
from hf_minattn.probes.drift import drift_results
from hf_minattn.probes.encode import encode_corpus, tokenize_corpus
from hf_minattn.probes.geometry import anisotropy, max_explainable_variance, self_similarity
from hf_minattn.probes.heads import HeadStatistics, attention_graph, classical_mds, head_statistics, word_level_attention
from hf_minattn.probes.loading import load_encoder
from hf_minattn.probes.neighbours import nearest_neighbours
from hf_minattn.probes.vectors import WordVectors, decontextualized_vectors, static_vectors, word_vectors
from hf_minattn.probes.weights import effective_rank, factored_singular_values, head_weights, weight_spectra

SENTENCES = split_sentences(TEXTS, max_sentences=0)


def test_identity_layers_give_contextual_equal_to_static(tokenizer):
    model = no_context_model()
    encoded = encode_corpus(model, tokenizer, SENTENCES, min_count=2)
    vectors = word_vectors(model, tokenizer, encoded)
    static = vectors.sets["static"]
    for layer in range(model.config.num_hidden_layers + 1):
        np.testing.assert_allclose(vectors.sets[f"layer_{layer}"], static, atol=1e-5)
        np.testing.assert_allclose(vectors.sets[f"decontext_{layer}"], static, atol=1e-5)
    # and the known-different case: a real (random) model's top layer is NOT its static embedding
    real = MinAttnModel(tiny_config(vocab_size=120)).eval()
    real_vectors = word_vectors(real, tokenizer, encode_corpus(real, tokenizer, SENTENCES, min_count=2), False)
    assert not np.allclose(real_vectors.sets["layer_2"], real_vectors.sets["static"], atol=1e-3)


def test_words_pool_their_pieces_and_vocab_is_frequency_ordered(tokenizer):
    tokenized = tokenize_corpus(tokenizer, SENTENCES)
    assert tokenized.vocab[0] == "the" and list(tokenized.counts) == sorted(tokenized.counts, reverse=True)
    word = next(w for w in tokenized.vocab if len(tokenizer.tokenize(w)) > 1)  # a word split into pieces
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
    expected = model.get_input_embeddings().weight[pieces].mean(0).detach().numpy()
    np.testing.assert_allclose(static_vectors(model, tokenizer, [word])[0], expected, atol=1e-6)


def test_pieces_per_word_counts_each_words_pieces_as_the_tokenizer_splits_it(tokenizer):
    from hf_minattn.probes.geometry import pieces_per_word

    tokenized = tokenize_corpus(tokenizer, SENTENCES)
    pieces = pieces_per_word(tokenized)
    assert pieces.shape == (len(tokenized.vocab),) and pieces.min() >= 1
    assert list(pieces) == [len(tokenizer.tokenize(w)) for w in tokenized.vocab]
    assert pieces.max() > 1  # the corpus has words of several pieces: the case the counts are for


def test_previous_token_head_scores_one():
    # batch of 2: a full 6-token sentence and a 4-token one padded to 6; one head attends to the previous token
    T, lengths = 6, [6, 4]
    attention = torch.zeros(2, 2, T, T)
    mask = torch.zeros(2, T, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        attention[b, 0, 0, 0] = 1.0  # the first token has no previous token: it looks at itself
        for i in range(1, n):
            attention[b, 0, i, i - 1] = 1.0
        attention[b, 1, :n, :n] = 1.0 / n  # head 1: uniform
    kinds = {"cls": torch.zeros(2, T, dtype=torch.bool)}
    kinds["cls"][:, 0] = True
    stats = HeadStatistics()
    stats.add([attention], mask, kinds)
    means = stats.means()
    assert means["previous"][0][0] == pytest.approx(1.0)
    assert means["next"][0][0] == pytest.approx(0.0)
    assert means["self"][0][0] == pytest.approx(2 / sum(lengths))  # only the two first tokens
    assert means["entropy"][0][0] == pytest.approx(0.0, abs=1e-6)
    assert means["entropy"][0][1] == pytest.approx((6 * np.log(6) + 4 * np.log(4)) / 10, rel=1e-5)
    assert means["previous"][0][1] == pytest.approx((5 / 6 + 3 / 4) / 8, rel=1e-5)


def test_head_statistics_on_a_real_model(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    before = model.config._attn_implementation
    result = head_statistics(model, tokenizer, SENTENCES, examples=["The king and the queen."], max_sentences=8)
    assert model.config._attn_implementation == before == "sdpa"  # eager only for the attention pass
    L, H = 2, 4
    assert np.array(result.stats["entropy"]).shape == (L, H)
    assert 0 < np.mean(result.stats["entropy"]) <= result.uniform_entropy + 1e-6
    js = np.array(result.js_divergence)
    assert js.shape == (L * H, L * H) and np.allclose(np.diag(js), 0, atol=1e-6) and (js <= np.log(2) + 1e-6).all()
    graph = attention_graph(result.examples[0], threshold=0.0)
    assert [n["label"] for n in graph["nodes"]] == ["[CLS]", "The", "king", "and", "the", "queen", ".", "[SEP]"]
    assert {e["head"] for e in graph["edges"]} == {0, 1, 2, 3, "mean"}
    json.dumps(graph)


def test_word_level_attention_sums_to_words_and_averages_from_them():
    attention = torch.softmax(torch.randn(5, 5), dim=-1)
    word_ids = [None, 0, 0, 1, None]  # [CLS] w0 w0 w1 [SEP]
    words, _ = word_level_attention(attention, word_ids)
    assert words.shape == (4, 4)
    torch.testing.assert_close(words.sum(-1), torch.ones(4))  # still distributions
    torch.testing.assert_close(words[0, 1], attention[0, 1] + attention[0, 2])  # TO a word: summed
    torch.testing.assert_close(words[1, 2], (attention[1, 3] + attention[2, 3]) / 2)  # FROM a word: averaged


def test_planted_synonyms_are_top_neighbours():
    rng = random.Random(0)
    contexts = {"apple": ["red", "eats"], "river": ["wide", "flows"], "stone": ["grey", "sinks"],
                "cloud": ["white", "drifts"], "horse": ["fast", "gallops"],
                "zorbel": ["purple", "sings"], "quixar": ["purple", "sings"]}  # planted synonyms
    fillers = ["the", "a", "today", "again", "then", "slowly"]
    sentences = []
    for _ in range(2000):
        noun = rng.choice(list(contexts))
        sentences.append([rng.choice(fillers), contexts[noun][0], noun, contexts[noun][1], rng.choice(fillers)])
    kv = train_word2vec(sentences, Word2VecSettings(vector_size=16, epochs=15, window=2))
    vectors = WordVectors(list(kv.index_to_key), {"word2vec": kv.vectors})
    result = nearest_neighbours(vectors, ["zorbel", "apple", "nonexistentword"])
    assert result.neighbours["word2vec"]["zorbel"][0][0] == "quixar"
    assert result.neighbours["word2vec"]["apple"][0][0] != "quixar"
    assert result.oov == ["nonexistentword"]


def test_anisotropy_of_isotropic_vectors_is_near_zero():
    rng = np.random.default_rng(0)
    sentences = rng.integers(0, 100, size=4000)
    assert abs(anisotropy(rng.standard_normal((4000, 64)), sentences)) < 0.02
    shifted = rng.standard_normal((4000, 64)) + 3.0  # a common direction: strongly anisotropic
    assert anisotropy(shifted, sentences) > 0.8


def test_self_similarity_and_mev_known_values():
    rng = np.random.default_rng(0)
    u = rng.standard_normal((7, 16))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pairwise = [u[i] @ u[j] for i in range(7) for j in range(7) if i != j]
    assert self_similarity(u) == pytest.approx(np.mean(pairwise))
    assert max_explainable_variance(np.outer(rng.standard_normal(5), rng.standard_normal(16))) == pytest.approx(1.0)
    assert max_explainable_variance(np.eye(4)) == pytest.approx(0.25)


def test_factored_spectra_match_the_dense_product():
    left, right = torch.randn(40, 5), torch.randn(5, 40)
    torch.testing.assert_close(factored_singular_values(left, right), torch.linalg.svdvals(left.double() @ right.double())[:5])
    assert effective_rank(torch.ones(8)) == pytest.approx(8.0)
    assert effective_rank(torch.tensor([1.0, 0, 0])) == pytest.approx(1.0)


def test_weights_probe_on_minattn_compares_with_initialisation():
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    with torch.no_grad():  # a "trained" model whose QK circuits have rank 1
        model.layers[0].attention.qkv_proj.weight[:36] = torch.outer(torch.ones(36), torch.randn(36))
    result = weight_spectra(model)
    head_dim = 9
    assert result.head_dim == head_dim
    assert np.array(result.trained.qk_singular_values).shape == (2, 4, head_dim)
    assert result.trained.qk_effective_rank[0][0] == pytest.approx(1.0, abs=1e-3)
    assert result.initial.qk_effective_rank[0][0] > 5  # random init: near full rank
    # the initial state is the model's own: re-created from the config and the seed, it is a model still there
    from hf_minattn.initialization import initial_model

    at_init = weight_spectra(initial_model(model.config, 3, MinAttnModel).eval(), seed=3)
    assert at_init.initial.qk_singular_values == at_init.trained.qk_singular_values
    assert weight_spectra(initial_model(model.config, 3, MinAttnModel).eval(), seed=4).initial.qk_singular_values \
        != at_init.trained.qk_singular_values


def test_bert_adapter_reproduces_the_query_projection():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(hidden_size=24, num_hidden_layers=1, num_attention_heads=3, intermediate_size=30,
                                 vocab_size=50)).eval()
    heads, source = head_weights(model)
    x = torch.randn(24)
    query = model.encoder.layer[0].attention.self.query
    with torch.no_grad():
        expected = (query(x) - query.bias).view(3, 8)
    torch.testing.assert_close(torch.einsum("hdc,c->hd", heads[0]["W_Q"], x), expected)
    assert "BERT" in source


def test_analogy_accuracy_matches_gensim():
    # plant a:b :: c:d structure for the "family" section: every female word = its male word + one offset
    rng = np.random.default_rng(0)
    pairs = [("boy", "girl"), ("brother", "sister"), ("father", "mother"), ("king", "queen"), ("man", "woman"),
             ("son", "daughter"), ("he", "she"), ("his", "her")]
    offset = rng.standard_normal(32) * 3
    kv = KeyedVectors(vector_size=32)
    for male, female in pairs:
        base = rng.standard_normal(32)
        kv.add_vectors([male, female], np.stack([base, base + offset]))
    kv.add_vectors([f"noise{i}" for i in range(50)], rng.standard_normal((50, 32)))
    ours, answered = analogy_accuracy(kv, datapath("questions-words.txt"))
    theirs, sections = kv.evaluate_word_analogies(datapath("questions-words.txt"))
    total = sections[-1]
    assert answered == len(total["correct"]) + len(total["incorrect"]) > 20
    assert ours == pytest.approx(theirs) and ours > 0.9


def test_clear_errors(tmp_path, tokenizer):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        load_encoder(tmp_path / "no-such-model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_encoder(tmp_path / "empty")
    with pytest.raises(ValueError, match="empty"):
        tokenize_corpus(tokenizer, [])
    (tmp_path / "corpus.txt").write_text("\n\nshort\n")
    with pytest.raises(ValueError, match="no usable sentences"):
        read_corpus_file(tmp_path / "corpus.txt")
    # a tokenizer without a fast backend: the legacy (pure Python) BERT tokenizer over the same vocabulary
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(sorted(tokenizer.get_vocab(), key=tokenizer.get_vocab().get)))
    with pytest.raises(ValueError, match="fast"):
        tokenize_corpus(BertTokenizerLegacy(str(vocab)), SENTENCES)


def test_classical_mds_recovers_planar_distances():
    points = np.random.default_rng(0).standard_normal((6, 2))
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)
    xy = classical_mds(distances)
    np.testing.assert_allclose(np.linalg.norm(xy[:, None] - xy[None], axis=-1), distances, atol=1e-8)


def test_drift_written_by_the_callback_is_read_back(tmp_path):
    model = MinAttnForMaskedLM(tiny_config())
    callback = DriftCallback(model)
    args, state = SimpleNamespace(output_dir=str(tmp_path)), TrainerState(global_step=0, epoch=0.0)
    callback.on_train_begin(args, state, None)  # the initial state: drift 0, no gradient yet
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    input_ids = torch.randint(5, 99, (2, 8))
    model(input_ids=input_ids, labels=input_ids).loss.backward()
    callback.on_pre_optimizer_step(args, state, None)
    optimizer.step()
    state.global_step, state.epoch = 1, 0.5
    callback.on_log(args, state, None, logs={"loss": 4.0})

    history = read_drift(tmp_path)
    assert history.steps == [0, 1] and history.epochs == [0.0, 0.5] and history.loss == [None, 4.0]
    assert set(history.drift) == set(history.grad_norm) == set(callback.initial)
    assert all(values[0] == 0 and values[1] > 0 for values in history.drift.values())
    assert all(values[0] is None and values[1] > 0 for values in history.grad_norm.values())
    assert history.drift == read_drift(tmp_path / DRIFT_FILE).drift  # the file itself, or its folder
    drift = drift_results(history)
    assert drift.metrics["drift"]["layers.0.W_Q"] == {"steps": [0, 1], "values": history.drift["layers.0.W_Q"]}
    assert drift.metrics["grad_norm"]["word_embeddings"]["steps"] == [1]  # no gradient at step 0
    assert drift.metrics["loss"] == {"loss": {"steps": [1], "values": [4.0]}}
    assert read_drift(tmp_path / "missing") is None and drift_results(None) is None


def test_drift_is_the_relative_frobenius_distance_from_the_initial_weights(tmp_path):
    """Known answers: W = 3 W0 is 2.0 away (||2 W0|| / ||W0||); W0 + E with E of norm 0.5 ||W0|| is 0.5 away; an
    untouched matrix 0. The gradient norm is ||dL/dW||_F as torch computes it, averaged over the steps logged."""
    model = MinAttnForMaskedLM(tiny_config())
    callback = DriftCallback(model)
    args, state = SimpleNamespace(output_dir=str(tmp_path)), TrainerState(global_step=0, epoch=0.0)
    callback.on_train_begin(args, state, None)
    embeddings = model.get_input_embeddings().weight
    w_q = model.get_head_weights()[0]["W_Q"]  # a view into the fused projection: editing it edits the model
    with torch.no_grad():
        embeddings.mul_(3.0)
        noise = torch.randn_like(w_q)
        w_q.add_(noise * (0.5 * w_q.norm() / noise.norm()))
    input_ids = torch.randint(5, 99, (2, 8))
    model.zero_grad()
    model(input_ids=input_ids, labels=input_ids).loss.backward()
    grad = model.get_input_embeddings().weight.grad.norm().item()
    callback.on_pre_optimizer_step(args, state, None)
    callback.on_pre_optimizer_step(args, state, None)  # two steps with the same gradient: the mean is that norm
    state.global_step = 1
    callback.on_log(args, state, None, logs={"loss": 1.0})
    record = read_drift(tmp_path)
    assert record.drift["word_embeddings"][-1] == pytest.approx(2.0, rel=1e-5)
    assert record.drift["layers.0.W_Q"][-1] == pytest.approx(0.5, rel=1e-4)
    assert record.drift["layers.0.W_K"][-1] == 0 and record.drift["layers.1.W_V"][-1] == 0
    assert record.grad_norm["word_embeddings"][-1] == pytest.approx(grad, rel=1e-5)


def test_drift_scalars_average_each_kind_of_matrix_over_the_layers(tmp_path):
    """The training logs' "drift/W_Q" is the mean over layers of layers.{i}.W_Q: layer 0's W_Q at 3 W0 (drift 2) and
    layer 1's untouched (drift 0) log 1.0; the embeddings are their own kind. A matrix whose norm is below 1 (W_Q
    scaled to 0.01) measures the same way."""
    model = MinAttnForMaskedLM(tiny_config(num_hidden_layers=2))  # learned positions: tracked too
    with torch.no_grad():
        model.get_head_weights()[0]["W_Q"].mul_(0.01 / model.get_head_weights()[0]["W_Q"].norm())
    callback = DriftCallback(model)
    with torch.no_grad():
        model.get_head_weights()[0]["W_Q"].mul_(3.0)
        model.get_input_embeddings().weight.mul_(2.0)
    scalars = callback.scalars(step=1)
    assert scalars["drift/W_Q"] == pytest.approx(1.0, rel=1e-5)
    assert scalars["drift/W_K"] == 0 and scalars["drift/W_O"] == 0 and scalars["drift/position_embeddings"] == 0
    assert scalars["drift/word_embeddings"] == pytest.approx(1.0, rel=1e-5)
    assert set(scalars) == {f"drift/{kind}" for kind in
                            ("word_embeddings", "position_embeddings", "W_Q", "W_K", "W_V", "W_O")}
    rotary = DriftCallback(MinAttnForMaskedLM(tiny_config(position_embedding_type="rope", hidden_size=32)))
    assert "position_embeddings" not in rotary.initial  # nothing trained to track


def test_drift_gradient_norms_are_each_matrix_own_and_reset_at_every_log(tmp_path):
    """grad_norm of the position embeddings and of W_Q is ||dL/dW|| of that matrix, and each record averages the
    steps since the previous record only."""
    model = MinAttnForMaskedLM(tiny_config())
    callback = DriftCallback(model)
    args, state = SimpleNamespace(output_dir=str(tmp_path)), TrainerState(global_step=0, epoch=0.0)
    callback.on_train_begin(args, state, None)
    input_ids = torch.randint(5, 99, (2, 8))
    model(input_ids=input_ids, labels=input_ids).loss.backward()
    positions = model.minattn.embeddings.position_embeddings.weight.grad.norm().item()
    w_q = model.get_head_weights(grad=True)[0]["W_Q"].norm().item()
    for step in (1, 2):  # one optimizer step per record, the same gradient: each record's mean is that norm
        callback.on_pre_optimizer_step(args, state, None)
        state.global_step = step
        callback.on_log(args, state, None, logs={"loss": 1.0})
    callback.on_log(args, state, None, logs={"eval_loss": 2.0})  # an evaluation log is no training step
    history = read_drift(tmp_path)
    assert history.steps == [0, 1, 2] and history.path == str(tmp_path / DRIFT_FILE)
    assert history.grad_norm["position_embeddings"][1:] == pytest.approx([positions] * 2, rel=1e-5)
    assert history.grad_norm["layers.0.W_Q"][1:] == pytest.approx([w_q] * 2, rel=1e-5)


def test_drift_of_a_bare_encoder_and_of_a_resumed_run_without_a_drift_file(tmp_path, monkeypatch):
    bare = DriftCallback(MinAttnModel(tiny_config()))
    assert "position_embeddings" in bare.initial and "layers.1.W_O" in bare.initial
    callback = DriftCallback(MinAttnForMaskedLM(tiny_config()))
    args = SimpleNamespace(output_dir=str(tmp_path / "new"))
    callback.on_train_begin(args, TrainerState(global_step=5), None)  # resumed, but no drift.json was written
    callback.on_log(args, TrainerState(global_step=6), None, logs={"loss": 1.0})
    assert read_drift(tmp_path / "new").steps == [6]
    monkeypatch.chdir(tmp_path)
    callback.save("drift-here.json")  # a bare file name: written in the working folder, no folder created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drift-here.json", "new"]


def test_a_resumed_run_keeps_the_drift_records_up_to_its_checkpoint(tmp_path):
    model = MinAttnForMaskedLM(tiny_config())
    callback = DriftCallback(model)
    args = SimpleNamespace(output_dir=str(tmp_path / "run"))
    callback.records = [{"step": s, "epoch": None, "loss": None, "drift": {}, "grad_norm": {}} for s in (0, 1, 2, 3)]
    callback.save(str(tmp_path / "run" / DRIFT_FILE))  # save creates the folder it writes into
    resumed = DriftCallback(model)
    resumed.on_train_begin(args, TrainerState(global_step=2), None)
    assert [r["step"] for r in resumed.records] == [0, 1, 2]
    resumed.on_train_begin(args, TrainerState(global_step=1), None)
    assert [r["step"] for r in resumed.records] == [0, 1]
    fresh = DriftCallback(model)  # step 0 with an old file there: a new run, which starts from its initial state
    fresh.on_train_begin(args, TrainerState(global_step=0), None)
    assert [r["step"] for r in fresh.records] == [0] and fresh.records[0]["drift"]["word_embeddings"] == 0


def test_decontextualized_vectors_do_not_depend_on_batching(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=120)).eval()
    words = ["king", "queen", "attention", "the", "dogs"]
    one = decontextualized_vectors(model, tokenizer, words, batch_size=len(words))
    two = decontextualized_vectors(model, tokenizer, words, batch_size=2)
    np.testing.assert_allclose(one, two, atol=1e-5)


def tiny_distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    return DistilBertModel(DistilBertConfig(vocab_size=120, dim=32, n_layers=2, n_heads=4, hidden_dim=40,
                                            max_position_embeddings=24, dropout=0.0, attention_dropout=0.0)).eval()


@pytest.mark.slow
def test_all_probes_run_on_another_architecture(tokenizer, monkeypatch):
    """DistilBERT: no get_head_weights, no token_type_ids, its own module names. An architecture the weights
    probe does not know is skipped with a note instead of failing the whole run."""
    from hf_minattn.probes import layouts
    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = tiny_distilbert()
    heads, source = head_weights(model)
    assert "DistilBERT" in source and heads[0]["W_O"].shape == (4, 32, 8)
    monkeypatch.setattr(layouts, "LAYOUTS", ())
    results = run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2), log=lambda message: None)
    assert results.weights is None and any("weights probe skipped" in note for note in results.notes)
    assert np.array(results.heads.stats["self"]).shape == (2, 4)
    assert len(results.geometry.adjusted_self_similarity) == 3
    json.dumps(results.to_dict(), allow_nan=False)  # benchmarks with (almost) every pair OOV: null, not NaN
    # the attention view too, without the norm weighting that needs the layout
    view = results.attention_view
    assert view["weightings"] == ["attention", "rollout"] and view["num_layers"] == 2 and view["sentences"]
    assert all(set(entry["graphs"]) == {"attention", "rollout"} for entry in view["sentences"])


def byte_level_bpe(vocab_size, special_tokens, byte_alphabet=False):
    """A GPT-2/RoBERTa-style byte-level BPE trained on TEXTS; without `byte_alphabet` it cannot encode (and drops)
    characters those texts lack."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer, backend.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet() if byte_alphabet else []
    backend.train_from_iterator(TEXTS, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                                           initial_alphabet=alphabet))
    return backend


def test_head_ablation_on_an_architecture_the_layouts_do_not_know_is_skipped_with_a_note(tokenizer, monkeypatch):
    """A masked LM whose attention layout the table lacks (DeBERTa's, say): zeroing one head needs that layout, so the
    ablation is skipped with a note, and the rest of the run, the logit lens included, goes on (it used to end the
    whole probe with the layout's message)."""
    from transformers import BertConfig, BertForMaskedLM

    from hf_minattn.probes import ProbeSettings, layouts, run_all_probes

    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=4, intermediate_size=40, max_position_embeddings=24)).eval()
    monkeypatch.setattr(layouts, "LAYOUTS", ())
    results = run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2, word2vec=False, untrained=False),
                             log=lambda message: None)
    assert results.head_ablation is None
    # the layout's modules are listed once, in the first note that meets it; the later ones point to it
    skipped = [note for note in results.notes if "skipped" in note]
    assert skipped[0].startswith("norm-weighted attention skipped: don't know where BertForMaskedLM keeps")
    assert "head ablation skipped: the attention layout does not fit, as said above" in skipped
    assert sum("attention.self.query (Linear)" in note for note in results.notes) == 1
    assert results.logit_lens is not None and results.heads is not None


def test_words_without_tokens_are_left_out_of_the_sense_probe_and_the_probe_sentences():
    """A tokenizer can give a word an index but no token (characters it cannot encode, dropped by a byte-level BPE
    trained without the byte alphabet): the homonym is still found in its sentences, and the probe sentences' words
    are those with tokens (word_to_chars of a word without tokens used to end the probe with a TypeError)."""
    from transformers import PreTrainedTokenizerFast

    from hf_minattn.probes.neighbours import labelled_occurrences

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=byte_level_bpe(200, ["<s>", "</s>", "<pad>"]), bos_token="<s>",
                                        eos_token="</s>", pad_token="<pad>")
    sentence = "They rowed to the bank (я) and sat on the grass."  # no text had "я": its word has no token
    word_ids = [w for w in tokenizer(sentence).word_ids() if w is not None]
    assert sorted(set(word_ids)) != list(range(max(word_ids) + 1))  # a gap: the case this test is about
    tokenized = tokenize_corpus(tokenizer, [sentence])
    # "(я)" is three pre-tokens: " (" keeps the token of its space (its text is then ""), "я" and ")" have none
    assert tokenized.words[0] == ["They", "rowed", "to", "the", "bank", "", "and", "sat", "on", "the", "grass", "."]
    assert sorted({w for w in tokenized.word_ids[0] if w is not None}) == list(range(len(tokenized.words[0])))
    homonyms = {"bank": {"river": [sentence, "She sat on the bank of the river."],
                         "money": ["The bank kept their money.", "He took money from the bank."]}}
    items, skipped, left_out = labelled_occurrences(tokenizer, homonyms, max_length=64)
    assert skipped == [] and left_out == 0 and len(items) == 4
    word, sense, text, index, n_words = items[0]
    assert (word, sense, text) == ("bank", "river", sentence)
    start, end = tokenizer([sentence]).word_to_chars(0, index)
    assert sentence[start:end].strip() == "bank"


def test_a_gpt2_style_model_without_padding_cls_or_sep_tokens_is_probed(tmp_path):
    """GPT-2's tokenizer has no padding token and no [CLS] or [SEP]: loading gives it its end-of-text token to pad
    with (the attention mask hides padding), the heads' [CLS]/[SEP] statistics are 0 rather than an error, and the
    probes run (padding used to fail with transformers' "Asking to pad but the tokenizer does not have a padding
    token", then the head statistics with a TypeError)."""
    from transformers import GPT2Config, GPT2Model, PreTrainedTokenizerFast

    from hf_minattn.probes import ProbeSettings, run_all_probes

    backend = byte_level_bpe(300, ["<|endoftext|>"], byte_alphabet=True)
    # saved padding on the left, as decoders' tokenizers often are: the probes read rows from the start
    PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>",
                            padding_side="left").save_pretrained(tmp_path)
    GPT2Model(GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64)).save_pretrained(tmp_path)
    model, tokenizer = load_encoder(str(tmp_path))
    assert tokenizer.pad_token == "<|endoftext|>" and tokenizer.cls_token is None and tokenizer.sep_token is None
    assert tokenizer.padding_side == "right"
    results = run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2, word2vec=False, untrained=False),
                             log=lambda message: None)
    stats = results.heads.stats
    assert np.all(np.array(stats["cls"]) == 0) and np.all(np.array(stats["sep"]) == 0)
    assert np.array(stats["self"]).shape == (2, 4) and results.geometry is not None


def test_a_special_token_beyond_the_models_embeddings_is_refused_when_loaded(tokenizer, tmp_path):
    """A token added to the tokenizer without resizing the model (here a padding token of its own) has no embedding
    row: refused by name when loaded (torch's "index out of range" used to come at the first padded batch)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer.save_pretrained(tmp_path)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                         intermediate_size=40)).save_pretrained(tmp_path)
    assert load_encoder(str(tmp_path))[0].config.vocab_size == len(tokenizer)  # as saved, it loads
    grown = AutoTokenizer.from_pretrained(tmp_path)
    grown.add_special_tokens({"additional_special_tokens": ["<extra>"]})
    grown.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=rf"special token '<extra>' the id {len(tokenizer)}, but the model's input "
                                         rf"embeddings have {len(tokenizer)} rows"):
        load_encoder(str(tmp_path))


def test_a_model_that_pools_tokens_between_blocks_is_refused_by_name(tokenizer):
    """The Funnel Transformer shortens the sequence between blocks: the probes, which need one vector per token at
    every layer, refuse it with one line saying so (it used to end in torch.stack's RuntimeError)."""
    from transformers import FunnelConfig, FunnelModel

    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = FunnelModel(FunnelConfig(vocab_size=len(tokenizer), d_model=32, n_head=4, d_head=8, d_inner=40,
                                     block_sizes=[1, 1], num_decoder_layers=1)).eval()
    with pytest.raises(ValueError, match=r"FunnelModel's layers give hidden states of different lengths \(\[\d+, \d+, "
                                         r"\d+"):
        run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2, word2vec=False, untrained=False),
                       log=lambda message: None)


def test_attention_that_is_not_token_by_token_skips_the_attention_probes_only(tokenizer):
    """Longformer's sliding window gives (batch, heads, T, window + 1) attention weights: the attention probes are
    skipped with a note naming the shape, and the others run (the head statistics used to end the whole probe with
    a RuntimeError about tensor sizes)."""
    from transformers import LongformerConfig, LongformerForMaskedLM

    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = LongformerForMaskedLM(LongformerConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
        attention_window=[4, 4], max_position_embeddings=80, pad_token_id=tokenizer.pad_token_id)).eval()
    results = run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2, word2vec=False, untrained=False),
                             log=lambda message: None)
    assert results.heads is None and results.attention_view is None and results.attention_graph is None
    skipped = [note for note in results.notes if note.startswith("attention probes skipped")]
    assert len(skipped) == 1 and "LongformerForMaskedLM returns attention weights of shape (" in skipped[0]
    assert results.geometry is not None and results.head_ablation is not None and results.logit_lens is not None
    # its attention reads (tokens, batch, hidden), padded to its window: the circuits refuse it rather than misread
    refused = "circuits skipped: LongformerForMaskedLM's layer-0 attention reads an input of shape"
    assert results.circuits is None and any(note.startswith(refused) for note in results.notes)


def _bigbird(tokenizer):
    from transformers import BigBirdConfig, BigBirdForMaskedLM

    return BigBirdForMaskedLM(BigBirdConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                            num_attention_heads=4, intermediate_size=40, max_position_embeddings=64,
                                            attention_type="block_sparse", block_size=4, num_random_blocks=2))


def _squeezebert(tokenizer):
    from transformers import SqueezeBertConfig, SqueezeBertForMaskedLM

    return SqueezeBertForMaskedLM(SqueezeBertConfig(vocab_size=len(tokenizer), hidden_size=32, embedding_size=32,
                                                    num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                                                    max_position_embeddings=64))


@pytest.mark.parametrize("make, said", [
    (_bigbird, "BigBirdForMaskedLM returns no attention weights when asked for them (output_attentions=True)"),
    (_squeezebert, "SqueezeBertForMaskedLM returns attention weights from -"),
])
def test_attention_weights_that_are_not_shares_skip_the_attention_probes_only(tokenizer, make, said):
    """BigBird configured for block-sparse attention returns an empty tuple of attention weights, and SqueezeBERT its
    scores before the softmax (negative values): the attention probes are skipped with a note saying what came back, and the others run (BigBird ended
    the probe with an IndexError, SqueezeBERT with "attention weights must be finite and >= 0" from the rollout)."""
    from hf_minattn.probes import ProbeSettings, run_all_probes

    results = run_all_probes(make(tokenizer).eval(), tokenizer, SENTENCES,
                             ProbeSettings(min_count=2, word2vec=False, untrained=False), log=lambda message: None)
    assert results.heads is None and results.attention_view is None and results.attention_graph is None
    skipped = [note for note in results.notes if note.startswith("attention probes skipped")]
    assert len(skipped) == 1 and said in skipped[0]
    assert results.geometry is not None and results.logit_lens is not None


def test_heads_are_counted_from_the_attention_weights_and_other_head_shapes_are_skipped(tokenizer):
    """ConvBERT gives half its configured heads to attention (head_ratio 2): the head statistics and the view count
    the heads the weights have, and the probes that split W_Q/W_K/W_V/W_O by the configured heads (norm weighting,
    head ablation, weights) are skipped with the shapes named (they used to end the report with an IndexError)."""
    from transformers import ConvBertConfig, ConvBertForMaskedLM

    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = ConvBertForMaskedLM(ConvBertConfig(vocab_size=len(tokenizer), hidden_size=32, embedding_size=32,
                                               num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                                               max_position_embeddings=64)).eval()
    results = run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2, word2vec=False, untrained=False),
                             log=lambda message: None)
    assert np.array(results.heads.stats["self"]).shape == (2, 2) and (results.heads.num_heads, model.config.num_attention_heads) == (2, 4)
    assert results.attention_view["num_heads"] == 2
    assert results.head_ablation is None and results.weights is None and results.heads.examples[0].norm_weighted is None
    assert any("query maps 32 -> 16 features where 4 heads" in note for note in results.notes)
    assert "weights probe skipped: the attention layout does not fit, as said above" in results.notes


def test_a_model_without_a_position_limit_is_probed(tokenizer, tmp_path):
    """XLNet's config gives max_position_embeddings = -1 (relative positions, no limit): the probes read at most 128
    tokens, as for any model (the -1 used to reach the tokenizer's truncation, an OverflowError). It has no masked-LM
    class, and its language-model head (XLNetLMHeadModel) sees the tokens after each position: a checkpoint without
    that head's weights is said to lack them in one line, and the head itself is refused as no next-token LM."""
    from transformers import XLNetConfig, XLNetModel

    from hf_minattn.probes import ProbeSettings, run_all_probes
    from hf_minattn.probes.loading import max_length_for
    from hf_minattn.probes.head_ablation import language_model_for

    model = XLNetModel(XLNetConfig(vocab_size=len(tokenizer), d_model=32, n_layer=2, n_head=4, d_inner=40)).eval()
    assert model.config.max_position_embeddings == -1 and max_length_for(model, tokenizer) == min(
        128, tokenizer.model_max_length)
    results = run_all_probes(model, tokenizer, SENTENCES, ProbeSettings(min_count=2, word2vec=False, untrained=False),
                             log=lambda message: None)
    assert results.geometry is not None and np.array(results.heads.stats["self"]).shape == (2, 4)
    model.save_pretrained(tmp_path)
    mlm, reason = language_model_for(model, str(tmp_path))
    assert mlm is None and "has no trained language-model head (missing 1 weights, e.g. lm_loss.bias)" in reason
    assert "\n" not in reason and "Model type should be one of" not in reason
    from transformers import XLNetLMHeadModel

    from hf_minattn.probes.head_ablation import head_ablation
    from hf_minattn.probes.weights import UnsupportedArchitecture

    with pytest.raises(UnsupportedArchitecture, match="XLNetLMHeadModel's predictions change with the tokens after "
                                                      "them: it is no next-token LM"):
        head_ablation(XLNetLMHeadModel(model.config).eval(), tokenizer, SENTENCES[:4])


def test_an_encoder_decoder_model_is_refused_when_loaded(tokenizer, tmp_path):
    """T5 is loaded by AutoModel as an encoder-decoder: refused by name when loaded, before any probe (its forward
    used to fail asking for decoder inputs: "You must specify exactly one of input_ids or inputs_embeds")."""
    from transformers import T5Config, T5Model

    T5Model(T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=40, num_layers=1, num_heads=4,
                     decoder_start_token_id=0)).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    expected = f"{tmp_path} is an encoder-decoder model (T5Model); the probes read"
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_encoder(str(tmp_path))


def test_a_checkpoint_saved_in_bf16_is_probed_in_fp32(tokenizer, tmp_path):
    """transformers 5 loads a checkpoint in the dtype it was saved in; the probes load it in fp32, so that their
    numbers do not depend on how the model was stored (computing in bf16 is `--bf16`'s choice)."""
    from transformers import BertConfig, BertModel

    saved = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=40, max_position_embeddings=24)).to(torch.bfloat16)
    saved.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, _ = load_encoder(str(tmp_path))
    assert model.dtype == torch.float32
    torch.testing.assert_close(model.embeddings.word_embeddings.weight,
                               saved.embeddings.word_embeddings.weight.float(), rtol=0, atol=0)


def test_dataset_folder_as_corpus(tmp_path):
    import datasets

    from hf_minattn.probes.corpus import read_dataset

    datasets.DatasetDict({"validation": datasets.Dataset.from_dict({"text": TEXTS[:3]})}).save_to_disk(tmp_path / "d")
    assert read_dataset(str(tmp_path / "d")) == SENTENCES[:3]


@pytest.mark.parametrize("arguments, message", [
    (lambda m, t: (t, m, SENTENCES), "model must be a transformers model (AutoModel.from_pretrained), got "),
    (lambda m, t: (m, "bert", SENTENCES), "tokenizer must be a fast tokenizer (AutoTokenizer.from_pretrained), got str"),
    (lambda m, t: (m, t, SENTENCES[0]), "sentences must be a list of strings, got str"),
    (lambda m, t: (m, t, [SENTENCES[0], None]), "sentences must be a list of strings; sentence 1 is a NoneType: None"),
    (lambda m, t: (m, t, [3]), "sentences must be a list of strings; sentence 0 is a int: 3"),
])
def test_run_all_probes_names_an_argument_of_the_wrong_kind_before_any_work(tokenizer, arguments, message):
    """A Python caller who swaps the model and the tokenizer, or passes one sentence as a string (it used to be read
    character by character until the vector corpus refused it), gets a TypeError naming the argument at once."""
    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    with pytest.raises(TypeError, match=re.escape(message)):
        run_all_probes(*arguments(model, tokenizer), ProbeSettings(min_count=2, word2vec=False),
                       log=lambda line: pytest.fail(f"work started: {line}"))


def test_run_all_probes_refuses_a_tokenizer_that_pads_on_the_left(tokenizer):
    """The probes read each sentence's tokens from the start of its padded row: with padding on the left they
    pooled padding into the word vectors, with no error."""
    from hf_minattn.probes import ProbeSettings, run_all_probes

    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    left = copy.deepcopy(tokenizer)
    left.padding_side = "left"
    for given, reference, name in ((left, None, "tokenizer"), (tokenizer, (model, left, "ref"), "the reference's")):
        with pytest.raises(ValueError, match=f"{name}.* pads on the 'left'.*padding_side = 'right'"):
            run_all_probes(model, given, SENTENCES, ProbeSettings(min_count=2, word2vec=False), reference=reference,
                           log=lambda line: pytest.fail(f"work started: {line}"))


def test_a_data_file_as_dataset_reads_its_text_column(tmp_path):
    """--dataset takes a data file as run_mlm's --train_file does (it used to answer "Couldn't find any data file" for
    a file that exists): the text is the "text" column, else the first column of strings; a named column that is
    missing or not text, and a file of another kind, are refused by name."""
    import json

    import datasets

    from hf_minattn.probes.corpus import read_dataset

    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "body": text}) + "\n" for i, text in enumerate(TEXTS[:3])))
    assert read_dataset(str(jsonl)) == SENTENCES[:3]
    parquet = tmp_path / "corpus.parquet"
    datasets.Dataset.from_dict({"text": TEXTS[:2]}).to_parquet(str(parquet))
    assert read_dataset(str(parquet)) == SENTENCES[:2]
    with pytest.raises(ValueError, match=r"--text-column 'text' is not a column of .*corpus.jsonl; its columns: \['id', 'body'\]"):
        read_dataset(str(jsonl), column="text")
    with pytest.raises(ValueError, match=r"column 'id' of .*corpus.jsonl holds int values such as 0, not text"):
        read_dataset(str(jsonl), column="id")
    other = tmp_path / "corpus.xml"
    other.write_text("<text>the king</text>")
    with pytest.raises(ValueError, match=r"--dataset '.*corpus.xml': expected a .txt, .json, .jsonl, .csv or .parquet"):
        read_dataset(str(other))


def test_report_sentences_state_the_thresholds_the_run_used():
    """The report's thresholds come from probes.json: the geometry word filter (min_contexts, --min-count), the
    ratio a head role needs and the attention-graph cut; none is written into the sentence by hand."""
    from hf_minattn.probes.report.geometry import geometry_text
    from hf_minattn.probes.report.head_roles import head_roles_text
    from hf_minattn.probes.report.norm_weighting import attention_norm_example_text

    g = {"layers": [0, 1], "words_scored": 12, "occurrences_per_word": 6.0, "adjusted_self_similarity": [0.5, 0.3],
         "anisotropy": [0.1, 0.2], "adjusted_intra_similarity": [0.2, 0.1], "mev": [0.4, 0.3],
         "adjusted_mev": [0.2, 0.1], "min_contexts": 3}

    def geometry(min_count):
        return geometry_text(probe_results(geometry=g, provenance={"arguments": {"min_count": min_count}}))

    assert "12 words (each in >= 3 distinct sentences, ~6 occurrences kept)" in geometry(2)  # 2 is implied by 3
    assert "12 words (each in >= 3 distinct sentences and seen >= 7 times, ~6 occurrences kept)" in geometry(7)
    heads = {"num_heads": 2, "stats": {"self": [[0.2, 0.35]]}, "relative_to_uniform": {"self": [[2.0, 3.5]]},
             "roles": [["none", "none"]], "role_mass": [[None, None]], "role_ratio": [[None, None]], "role_min_mass": 0.4}
    roles = head_roles_text(probe_results(heads=heads))
    assert "if that mass is >= 0.4" in roles and "2 no role (no target gets 0.4 of the attention)" in roles
    assert "0.3" not in roles
    graph = {"relative_threshold": 3.0, "threshold": 0.3, "edges": [[0, 1], [1, 0]]}
    text = attention_norm_example_text(probe_results(attention_graph=graph,
                                                     attention_graph_norm_weighted={**graph, "edges": [[0, 1]]}))
    assert "edges need >= 3/n (3 times uniform attention over the n words): 2 edges raw, 1 norm-weighted, in every " \
           "layer's graphs, each head's and their mean together (the figure draws the heads' mean)" in text  # an
    # older file's graphs, without `whole_layer`: their mean is the heads' (tests/test_probes_graph_measures.py: a new one)


def _tiny_hf(kind):
    """Tiny Hugging Face encoders/decoders of the layer-0 layouts the note must tell apart."""
    from transformers import (BertConfig, BertModel, ElectraConfig, ElectraModel, GemmaConfig, GemmaModel, GPT2Config,
                              GPT2Model, LlamaConfig, LlamaModel)

    ids = dict(vocab_size=120, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    sizes = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=40)
    return {"gpt2": lambda: GPT2Model(GPT2Config(n_embd=32, n_layer=1, n_head=4, n_positions=24, **ids)),
            "llama": lambda: LlamaModel(LlamaConfig(num_key_value_heads=4, **sizes, **ids)),
            "gemma": lambda: GemmaModel(GemmaConfig(num_key_value_heads=4, head_dim=8, **sizes, **ids)),
            "bert": lambda: BertModel(BertConfig(max_position_embeddings=24, **sizes, **ids)),
            "electra": lambda: ElectraModel(ElectraConfig(embedding_size=16, max_position_embeddings=24, **sizes,
                                                          **ids))}[kind]().eval()


# (model, what the note must say, what it must not): the position term and the embedding normalisation as the model
# has them. GPT-2 and Llama have no embedding LayerNorm, Llama and Gemma no position term (rotary), Gemma scales its
# embeddings by sqrt(hidden); ELECTRA's factorised embedding is projected, so its normalisation is not claimed.
LAYER0_CASES = [
    ("gpt2", ["+ position embedding, a plain sum with no embedding LayerNorm"], ["normalised", "no position term"]),
    ("llama", ["the word embedding alone, with no position term"], ["LayerNorm", "+ position embedding", "times"]),
    ("gemma", ["the word embedding alone times 5.66, with no position term"], ["LayerNorm", "+ position"]),
    ("bert", ["+ position embedding, then normalised"], ["a plain sum with", "no position term"]),
    ("electra", ["+ position embedding, in another width"], ["LayerNorm", "plain sum", "no position term"]),
    ("minattn learned pre", ["+ learned position embedding, a plain sum with no embedding LayerNorm"], ["normalised"]),
    ("minattn sinusoidal post", ["+ sinusoidal position embedding, then normalised"], ["a plain sum with"]),
    ("minattn rope pre", ["the word embedding alone, with no position term"], ["LayerNorm", "+ "]),
    ("minattn none post", ["the word embedding alone, then normalised (e.g. an embedding LayerNorm), with no position "
                           "term"], ["+ "]),
]


@pytest.mark.parametrize("kind, says, never", LAYER0_CASES, ids=[case[0] for case in LAYER0_CASES])
def test_layer0_note_measures_the_position_term_and_the_embedding_normalisation(kind, says, never):
    """Measured on the model, not read from MinAttn's config fields: GPT2Config and LlamaConfig have neither
    `position_embedding_type` nor `norm_placement`, and both used to read "absolute position embedding then
    LayerNorm"."""
    from hf_minattn.probes.geometry import layer0_note

    if kind.startswith("minattn"):
        _, positions, norm = kind.split()
        model = MinAttnModel(tiny_config(hidden_size=32, position_embedding_type=positions, norm_placement=norm))
    else:
        model = _tiny_hf(kind)
    model.train()  # dropout on: the measurement must not read it as a position term
    note = layer0_note(model)
    assert all(phrase in note for phrase in says), note
    assert not any(phrase in note for phrase in never), note
    assert model.training  # left as it was found


def test_probes_json_is_written_whole_or_not_at_all(tmp_path):
    """A probe that fails while writing probes.json (here: a value JSON cannot hold) leaves the earlier file whole:
    it was opened for writing, so truncated, before the first byte was dumped."""
    from hf_minattn.probes.run import ProbeResults

    path = tmp_path / "probes.json"
    path.write_text('{"model": "the earlier probe"}')
    broken = ProbeResults(model="m", model_class="C", num_layers=1, num_heads=1, hidden_size=4, corpus=None,
                          geometry=None, neighbours=None, notes=[{1, 2}])  # a set: not JSON
    with pytest.raises(TypeError):
        broken.save_json(str(path))
    assert json.loads(path.read_text()) == {"model": "the earlier probe"}
    assert [p.name for p in tmp_path.iterdir()] == ["probes.json"]  # no temporary file left either


def test_a_probe_folder_holds_one_probe_and_a_failed_rerun_leaves_the_earlier_one(tokenizer, tmp_path, monkeypatch):
    """A rerun into the same folder leaves none of the earlier probe's files (a figure format or vectors it no longer
    writes), keeps the user's own files, and a rerun that fails while drawing leaves the earlier folder as it was:
    probes.json was written first, so a failure left one probe's numbers beside the other's report."""
    from hf_minattn.probes import ProbeSettings, run_all_probes
    from hf_minattn.probes.report import render

    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval()
    results = run_all_probes(model, tokenizer, TEXTS[:12], ProbeSettings(min_count=2, word2vec=False, untrained=False),
                             log=lambda message: None)
    out = tmp_path / "probe"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    render.write_outputs(results, str(out), "both", vector_formats=("binary",))
    first = sorted(p.name for p in out.iterdir())
    assert {"probes.json", "report.html", "vectors", "notes.txt", "geometry.svg"} <= set(first)
    before = (out / "report.html").read_text()
    results.model = "the second probe"

    def broken(*args, **kwargs):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(render, "all_plots", broken)
    with pytest.raises(RuntimeError, match="drawing failed"):
        render.write_outputs(results, str(out), "png")
    assert sorted(p.name for p in out.iterdir()) == first and (out / "report.html").read_text() == before
    assert json.loads((out / "probes.json").read_text())["model"] != "the second probe"
    assert not (out / render.STAGING).exists()
    monkeypatch.undo()
    render.write_outputs(results, str(out), "png")  # no vectors, no SVG this time
    names = {p.name for p in out.iterdir()}
    assert "notes.txt" in names and "vectors" not in names and not any(n.endswith(".svg") for n in names)
    assert json.loads((out / "probes.json").read_text())["model"] == "the second probe"
