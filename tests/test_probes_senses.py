"""Known-answer tests of the sense and layer-0 probes: the labelled homonym file, leave-one-out nearest-centroid
sense accuracy with its interval, centring, any encoder (MinAttn, BERT), distinct contexts, static (position-free)
layer 0, and their report sentences."""

import json
import re
from collections import Counter

import numpy as np
import pytest
import torch
from conftest import TEXTS, no_context_model, probe_results, tiny_config
from transformers import BertConfig, BertModel

from hf_minattn import MinAttnModel
from hf_minattn.probes import senses_data
from hf_minattn.probes.corpus import split_sentences
from hf_minattn.probes.encode import encode_corpus
from hf_minattn.probes.geometry import distinct_context_groups, geometry
from hf_minattn.probes.vectors import static_word_vectors
from hf_minattn.probes.neighbours import labelled_occurrences, sense_accuracy, sense_scores
from hf_minattn.probes.report.geometry import layer0_text
from hf_minattn.probes.report.sense_accuracy import sense_accuracy_text
from hf_minattn.probes.run import ProbeResults
from hf_minattn.probes.senses_data import HOMONYMS, read_senses
from hf_minattn.probes.vectors import all_but_the_top
from hf_minattn.stats import hierarchical_bootstrap


def test_labelled_file_has_24_homonyms_with_two_senses_of_22_contexts_each_containing_its_word():
    rows = read_senses()
    assert len(HOMONYMS) >= 24
    for word, senses in HOMONYMS.items():
        assert len(senses) == 2, (word, list(senses))
        assert [len(ss) for ss in senses.values()] == [22, 22], (word, {s: len(ss) for s, ss in senses.items()})
    sentences = [r["sentence"] for r in rows]
    assert len(set(sentences)) == len(sentences)
    for r in rows:
        assert re.findall(r"[a-z]+", r["sentence"].lower()).count(r["word"]) == 1, r
    # the counts in the module docstring are those of the file
    counts = Counter((r["word"], r["sense"], r["source"]) for r in rows)
    for word, senses in HOMONYMS.items():
        cells = [f"{s}: {counts[(word, s, 'corpus')]} + {counts[(word, s, 'written')]}" for s in senses]
        assert f"| {word} | {cells[0]} | {cells[1]} |" in senses_data.__doc__
    assert counts and sum(v for (_, _, src), v in counts.items() if src == "corpus") > len(rows) / 2


def test_a_bad_labelled_file_is_refused(tmp_path):
    path = tmp_path / "senses.tsv"
    path.write_text("word\tsense\tsource\tsentence\nbank\triver\tcorpus\tThe banks were muddy.\n")
    with pytest.raises(ValueError, match="once as a whole word"):
        read_senses(path)
    path.write_text("word\tsense\tsource\tsentence\nbank\triver\tbook\tThe bank was muddy.\n")
    with pytest.raises(ValueError, match="source must be"):
        read_senses(path)


def test_leave_one_out_nearest_centroid_known_answers():
    def accuracy(vectors, labels):  # one homonym: its accuracy is the mean leave-one-out score of its occurrences
        return sense_scores(vectors, ["w"] * len(labels), labels, n_resamples=10)[2]["w"]

    separable = np.array([[1, 0.1], [1, -0.1], [1, 0], [0.1, 1], [-0.1, 1], [0, 1]])
    labels = ["a"] * 3 + ["b"] * 3
    assert accuracy(separable, labels) == 1.0
    assert accuracy(np.ones((6, 2)), labels) == 0.5  # identical vectors: ties, chance
    # one word, two senses, items alternating between two directions: each item's own centroid (without it) leans
    # the other way, so leave-one-out scores 0 (the known below-chance bias of leave-one-out on uninformative data)
    alternating = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=float)
    assert accuracy(alternating, ["a", "a", "b", "b"]) == 0.0


def _loo_by_loop(x, labels, cosine=True):
    """Leave-one-out nearest centroid item by item: each item against every sense's centroid of the OTHER items
    (a sense emptied by leaving it out: the zero vector), cosines rounded so that equal vectors tie."""
    classes = sorted(set(labels))
    scores = []
    for i in range(len(x)):
        sims = []
        for c in classes:
            others = [j for j in range(len(x)) if labels[j] == c and j != i]
            centroid = x[others].mean(0) if others else np.zeros(x.shape[1])
            denom = np.linalg.norm(centroid) * np.linalg.norm(x[i])
            sims.append((centroid @ x[i] / denom if denom > 0 else 0.0) if cosine else -np.sum((centroid - x[i]) ** 2))
        sims = np.round(sims, 10)
        best = np.flatnonzero(sims == sims.max())
        scores.append(1 / len(best) if classes.index(labels[i]) in best else 0.0)
    return np.array(scores)


def test_sense_scores_equal_the_item_by_item_leave_one_out_loop():
    """All items are scored at once, with the numbers of the item-by-item loop: vectors from {-1, 0, 1} (exact ties,
    zero vectors), a sense of a single occurrence, three senses; the interval is the hierarchical bootstrap of those
    per-occurrence scores."""
    rng = np.random.default_rng(5)
    vectors = rng.integers(-1, 2, (60, 3)).astype(float)
    words = np.array(["a"] * 14 + ["b"] * 30 + ["c"] * 16)
    labels = np.array([0, 1] * 7 + [0, 1, 2] * 10 + [0] * 15 + [1])
    expected = {w: _loo_by_loop(vectors[words == w], labels[words == w].tolist()) for w in ("a", "b", "c")}
    accuracy, interval, by_word = sense_scores(vectors, words, labels, n_resamples=200, seed=1)
    assert by_word == {w: float(s.mean()) for w, s in expected.items()}
    assert len(set(by_word.values())) == 3 and 0 < min(by_word.values()) and max(by_word.values()) < 1
    assert interval == hierarchical_bootstrap(np.mean, [(s,) for s in expected.values()], n_resamples=200, seed=1)
    assert accuracy == interval.estimate


def test_sense_accuracy_gives_each_sentence_its_own_vector(tokenizer):
    """Sentences are encoded in batches of similar length, yet each occurrence keeps its own sentence's vector: the
    per-word accuracies are those of the word's pieces pooled from each sentence encoded alone, and the position
    control is the leave-one-out loop (Euclidean) on the word's index."""
    homonyms = {"bank": {"river": ("she sat on the bank of the river and watched the water", "a bank of mud",
                                   "the boat reached the bank", "the river runs past the bank where people walk"),
                         "money": ("money in the bank", "the bank where people keep their money is on the hill",
                                   "the bank lent money", "a bank gave the king gold")},
                "king": {"royal": ("the king ruled the kingdom", "the queen and the king", "a king of gold"),
                         "chess": ("move the king to safety now", "the king is in check on the board",
                                   "the king and the castle moved")}}
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    result = sense_accuracy(model, tokenizer, homonyms, batch_size=3, n_resamples=20)
    items = labelled_occurrences(tokenizer, homonyms, 24)[0]
    vectors = []  # (items, L+1, H): each sentence alone, no padding
    for _, _, sentence, index, _ in items:
        enc = tokenizer(sentence, truncation=True, max_length=24, return_tensors="pt")
        with torch.no_grad():
            states = torch.stack(model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                       output_hidden_states=True).hidden_states)[:, 0]
        vectors.append(states[:, [t for t, w in enumerate(enc.word_ids(0)) if w == index]].mean(1).numpy())
    words, labels = [it[0] for it in items], [it[1] for it in items]
    for layer, layer_vectors in enumerate(np.stack(vectors, 1)):
        by_word = sense_scores(layer_vectors, words, labels, n_resamples=20)[2]
        assert {w: result.raw_accuracy_by_word[w][layer] for w in by_word} == by_word
    positions = np.array([[it[3]] for it in items], dtype=float)
    expected = np.mean([_loo_by_loop(positions[np.array(words) == w], [l for x, l in zip(words, labels) if x == w],
                                     cosine=False).mean() for w in homonyms])
    assert result.position_accuracy == pytest.approx(expected)
    # the second control: the same loop on (word index, the sentence's length in words), counted here by split()
    with_length = np.array([[it[3], len(it[2].split())] for it in items], dtype=float)
    expected = np.mean([_loo_by_loop(with_length[np.array(words) == w], [l for x, l in zip(words, labels) if x == w],
                                     cosine=False).mean() for w in homonyms])
    assert result.length_accuracy == pytest.approx(expected) and result.length_accuracy != result.position_accuracy
    per_word = result.control_accuracy_by_word  # the same control, homonym by homonym, for the item-level test
    assert set(per_word) == {"position", "position and length"} and set(per_word["position"]) == set(homonyms)
    assert np.mean(list(per_word["position"].values())) == pytest.approx(result.position_accuracy)
    assert np.mean(list(per_word["position and length"].values())) == pytest.approx(result.length_accuracy)


def _synthetic(rng, signal_scale, rogue=0.0, words=12, per_sense=20, dim=64):
    """Occurrence vectors of `words` homonyms: a per-word direction per sense (scale `signal_scale`), isotropic noise,
    a common offset, and `rogue` times a random amount along one shared direction (anisotropy)."""
    u, v = np.linalg.qr(rng.standard_normal((dim, 2)))[0].T
    vectors, names, labels = [], [], []
    for w in range(words):
        directions = rng.standard_normal((2, dim))
        for sense in range(2):
            for _ in range(per_sense):
                vectors.append(20 * v + rogue * rng.standard_normal() * u + signal_scale * directions[sense]
                               + 0.5 * rng.standard_normal(dim))
                names.append(f"w{w}"), labels.append(sense)
    return np.array(vectors), names, labels


def test_sense_scores_known_answers_separable_random_and_centring():
    rng = np.random.default_rng(0)
    accuracy, interval, by_word = sense_scores(*_synthetic(rng, signal_scale=0.5), n_resamples=200)
    assert accuracy == 1.0 and interval.low == interval.high == 1.0 and interval.n == 12
    assert set(by_word.values()) == {1.0}
    accuracy, interval, _ = sense_scores(*_synthetic(rng, signal_scale=0.0), n_resamples=200)  # senses carry nothing
    assert abs(accuracy - 0.5) < 0.1 and interval.low < 0.5 < interval.high
    # a large shared direction of random extent swamps a small sense signal in raw cosines; All-but-the-Top removes it
    vectors, names, labels = _synthetic(rng, signal_scale=0.5, rogue=20.0)
    assert sense_scores(vectors, names, labels, n_resamples=50)[0] < 0.8
    assert sense_scores(all_but_the_top(vectors), names, labels, n_resamples=50)[0] == 1.0
    with pytest.raises(ValueError, match="one word and label per occurrence"):
        sense_scores(vectors, names[:-1], labels)


def test_a_model_without_context_or_position_scores_chance(tokenizer):
    homonyms = {"bank": {"river": ("the bank of the river", "she sat on the bank", "a bank of mud"),
                         "money": ("the bank lent money", "money in the bank", "a bank raised rates")}}
    result = sense_accuracy(no_context_model(len(tokenizer)), tokenizer, homonyms, n_resamples=50)
    # every occurrence has the same vector (the word embedding): ties everywhere, raw and centred
    assert result.raw_accuracy == [0.5] * 3 and result.accuracy == [0.5] * 3
    assert result.chance == 0.5 and result.occurrences == 6
    with pytest.raises(ValueError, match="2 senses"):
        sense_accuracy(no_context_model(len(tokenizer)), tokenizer, {"bank": {"river": ("the bank",)}})


def test_chance_is_the_score_with_every_sense_tied_not_the_majority_share(tokenizer):
    """Unbalanced senses (3 river, 2 money): the majority share is 0.6, but the word embeddings alone give every
    occurrence the same vector, so the senses tie and each occurrence scores 1/2, as the layers of a model that adds
    nothing do. Chance is that score (it was the majority share, so vectors carrying nothing read "below chance")."""
    homonyms = {"bank": {"river": ("the bank of the river", "she sat on the bank", "a bank of mud"),
                         "money": ("the bank lent money", "money in the bank")}}
    result = sense_accuracy(no_context_model(len(tokenizer)), tokenizer, homonyms, n_resamples=50)
    assert result.raw_accuracy == [0.5] * 3 and result.static_accuracy == 0.5
    assert result.chance == 0.5
    three = {"bank": {**homonyms["bank"], "tilt": ("the plane began to bank", "bank the fire for the night")}}
    assert sense_accuracy(no_context_model(len(tokenizer)), tokenizer, three, n_resamples=50).chance == \
        pytest.approx(1 / 3)


@pytest.mark.parametrize("static, recorded, says, verdict", [
    (0.5, 0.5, "; the static word embeddings get 0.50, chance by construction. ",
     "0.50 [0.45, 0.55] against chance 0.50, is not told apart from chance"),
    (0.5, 0.6, "; the static word embeddings get 0.50 (every sense tied), the chance read here, not the 0.60 this "
               "file records as chance (the majority sense's share). ",
     "0.50 [0.45, 0.55] against chance 0.50, is not told apart from chance"),
    (None, 0.4, "sentence's length 0.50. At the last layer", "0.50 [0.45, 0.55] against chance 0.40, is above chance"),
])
def test_the_sense_text_names_the_chance_it_reads_and_the_static_score(static, recorded, says, verdict):
    """A file from before chance was the tie score (chance 0.60 = the majority share, static 0.50) read "below chance"
    beside "static word embeddings: chance by construction", and its table showed chance 0.60 and static 0.50."""
    from hf_minattn.probes.report.sense_accuracy import sense_accuracy_headline, sense_accuracy_tables

    interval = {"low": 0.45, "high": 0.55}
    r = probe_results(sense_accuracy={
        "words": ["bank"], "occurrences": 5, "layers": [0, 1], "accuracy": [0.5, 0.5], "raw_accuracy": [0.5, 0.5],
        "accuracy_interval": [interval, interval], "chance": recorded, "position_accuracy": 0.5,
        "length_accuracy": 0.5, "static_accuracy": static})
    text = sense_accuracy_text(r)
    assert says in text and verdict in text, text
    assert "below chance" not in text and ("chance by construction" in text) == (static == recorded)
    chance = sense_accuracy_tables(r)[1]["rows"][0]
    assert chance == ["chance", "0.40" if static is None else "0.50"]
    assert ("includes chance (50%)" if static else "above chance (40%)") in sense_accuracy_headline(r)


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["minattn", "bert"])
def test_sense_accuracy_on_the_shipped_set_with_any_encoder(tokenizer, architecture):
    if architecture == "minattn":
        model = MinAttnModel(tiny_config(vocab_size=len(tokenizer)))
    else:
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=37, max_position_embeddings=24)
        model = BertModel(config, add_pooling_layer=False)
    result = sense_accuracy(model.eval(), tokenizer, n_resamples=50)
    # the test tokenizer keeps 24 tokens: long sentences are left out, and words left with < 2 per sense skipped
    assert len(result.words) + len(result.skipped) == len(HOMONYMS) and result.skipped_sentences > 0
    assert len(result.layers) == 3 == len(result.accuracy_interval) == len(result.raw_accuracy)
    for a, i in zip(result.accuracy, result.accuracy_interval):
        assert i["low"] <= a <= i["high"] and i["n"] == len(result.words)
    assert result.chance == 0.5 and result.abtt_components == 1  # two senses each, some sentences left out
    # through probes.json and back into the report sentence
    probes = ProbeResults("m", type(model).__name__, 2, 4, 32, corpus=None, geometry=None, neighbours=None,
                          sense_accuracy=result)
    saved = json.loads(json.dumps(probes.to_dict(), allow_nan=False))["sense_accuracy"]
    assert "At the last layer (2) sense accuracy, " in sense_accuracy_text(probe_results(sense_accuracy=saved))


def test_distinct_contexts_count_sentence_texts_once():
    texts = ["a b", "c d", "e f", "g h", "a b", "a b"]
    groups = distinct_context_groups(np.zeros(6, dtype=int), np.arange(6), texts, min_contexts=4)
    assert list(groups[0]) == [0, 1, 2, 3]
    assert distinct_context_groups(np.zeros(6, dtype=int), np.arange(6), texts, min_contexts=5) == {}
    with pytest.raises(ValueError, match="min_contexts"):
        distinct_context_groups(np.zeros(6, dtype=int), np.arange(6), texts, min_contexts=1)


def test_static_layer_equals_layer_zero_without_a_position_signal(tokenizer):
    sentences = split_sentences(TEXTS, max_sentences=0)
    model = no_context_model(len(tokenizer))  # no positions, no embedding LayerNorm: layer 0 = the word embeddings
    encoded = encode_corpus(model, tokenizer, sentences, min_count=2)
    static = static_word_vectors(model, encoded.tokenized)
    result = geometry(encoded, min_count=2, static=static, model=model)
    assert result.static["self_similarity"] == pytest.approx(1.0, abs=1e-5)
    assert result.static["anisotropy"] == pytest.approx(result.anisotropy[0], abs=1e-5)
    assert result.static["adjusted_self_similarity"] == pytest.approx(result.adjusted_self_similarity[0], abs=1e-5)
    assert "no position term" in result.layer0_note
    positioned = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    enc2 = encode_corpus(positioned, tokenizer, sentences, min_count=2)
    moved = geometry(enc2, min_count=2, static=static_word_vectors(positioned, enc2.tokenized), model=positioned)
    assert moved.static["adjusted_self_similarity"] != pytest.approx(moved.adjusted_self_similarity[0], abs=1e-3)
    assert "a plain sum with no embedding LayerNorm" in moved.layer0_note
    narrow = geometry(encoded, min_count=2, static=static[:, :3])  # a factorised embedding (ALBERT, ELECTRA)
    assert narrow.static["self_similarity"] == pytest.approx(1.0, abs=1e-5) and narrow.adjusted_self_similarity == \
        result.adjusted_self_similarity  # the layers' scores do not read the static vectors
    with pytest.raises(ValueError, match="static must be"):
        geometry(encoded, min_count=2, static=static[:3])


def test_sense_accuracy_sentence_follows_the_interval():
    def senses(low, high, position=0.5):
        interval = {"low": low, "high": high}
        return {"sense_accuracy": {"words": ["bank"], "occurrences": 44, "layers": [0, 1],
                                   "accuracy": [0.5, (low + high) / 2], "raw_accuracy": [0.5, 0.6],
                                   "accuracy_interval": [{"low": 0.4, "high": 0.6}, interval],
                                   "chance": 0.5, "position_accuracy": position, "length_accuracy": position}}
    assert "against chance 0.50, is above chance, and above the position control" in sense_accuracy_text(
        probe_results(**senses(0.7, 0.9)))
    assert "Layers above chance: 1; of those, above the position control too: 1 (each layer's interval alone" in \
        sense_accuracy_text(probe_results(**senses(0.7, 0.9)))
    assert "Layers above chance: 1; of those, above the position control too: none" in \
        sense_accuracy_text(probe_results(**senses(0.6, 0.9, position=0.75)))  # above chance, not the control
    assert "is not told apart from chance: not at this scale" in sense_accuracy_text(probe_results(**senses(0.45, 0.6)))
    assert "Layers above chance: none (each layer's" in sense_accuracy_text(probe_results(**senses(0.45, 0.6)))
    assert "is below chance" in sense_accuracy_text(probe_results(**senses(0.3, 0.45)))
    assert "but not above the position control (0.75)" in sense_accuracy_text(
        probe_results(**senses(0.6, 0.9, position=0.75)))
    untrained = probe_results(**senses(0.45, 0.6)).sense_accuracy
    assert ("The untrained model: 0.53 [0.45, 0.60] at its last layer (not told apart from chance: not at this scale, "
            "chance 0.50)") in sense_accuracy_text(probe_results(**senses(0.7, 0.9)), untrained=untrained)
    old = {"words": ["bank"], "occurrences": 12, "accuracy": [0.3, 0.9], "layers": [0, 1], "chance": 0.5,
           "position_accuracy": 0.4}  # a probes.json written before the intervals
    assert "no interval, so no verdict" in sense_accuracy_text(probe_results(sense_accuracy=old))


def test_layer0_sentence_follows_the_numbers():
    g = {"adjusted_self_similarity": [0.5, 0.3], "static": {"adjusted_self_similarity": 0.9, "anisotropy": 0.1}}
    assert "makes a word's occurrences less alike" in layer0_text(probe_results(geometry=g))
    g["static"]["adjusted_self_similarity"] = 0.4
    assert "makes a word's occurrences more alike" in layer0_text(probe_results(geometry=g))
    g["static"]["adjusted_self_similarity"] = 0.501  # 0.50 both, as shown
    assert "does not measurably change" in layer0_text(probe_results(geometry=g))


def test_the_default_sense_sentences_carry_their_senses_and_others_none(tokenizer):
    """The report compares same-sense with cross-sense pairs only where the senses are known: the default
    sentences' labels travel with the result; a user's own sentences have none."""
    from hf_minattn.probes.neighbours import (DEFAULT_SENSE_LABELS, DEFAULT_SENSE_SENTENCES, DEFAULT_SENSE_WORD,
                                              word_in_contexts)

    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    default = word_in_contexts(model, tokenizer, DEFAULT_SENSE_WORD, DEFAULT_SENSE_SENTENCES)
    assert default.senses == list(DEFAULT_SENSE_LABELS) and len(default.senses) == len(default.sentences)
    own = word_in_contexts(model, tokenizer, "bank", ["the bank is here.", "a bank by the river."])
    assert own.senses is None


def test_the_sense_figure_labels_the_senses_has_a_colour_bar_and_says_what_it_plots(tmp_path):
    """Sentences labelled with their senses where known; a colour bar; raw cosine, or minus each layer's anisotropy
    baseline where the results have the geometry probe's (then the cells are shifted by it)."""
    import matplotlib.pyplot as plt

    from hf_minattn.probes.report.sense import sense_figure, sense_plot

    sim = [[[1, 0.8, 0.2], [0.8, 1, 0.3], [0.2, 0.3, 1]]] * 2
    sense = {"word": "bank", "sentences": ["a", "b", "c"], "layers": [0, 1], "similarity": sim,
             "senses": ["river", "river", "money"]}
    raw = sense_figure(probe_results(sense=sense))
    heat = [ax for ax in raw.axes if ax.get_title().startswith("layer")]
    colour_bar = [ax for ax in raw.axes if ax not in heat]
    assert len(heat) == 2 and len(colour_bar) == 1
    assert [t.get_text() for t in heat[0].get_yticklabels()] == ["0 river", "1 river", "2 money"]
    assert colour_bar[0].get_ylabel() == "raw cosine" and raw._suptitle.get_text().startswith("raw cosine between")
    assert heat[1].images[0].get_array()[0, 1] == pytest.approx(0.8)
    plt.close(raw)

    adjusted = sense_figure(probe_results(sense=sense, geometry={"anisotropy": [0.5, 0.3], "layers": [0, 1],
                                                                        "adjusted_self_similarity": [0.5, 0.4]}))
    heat = [ax for ax in adjusted.axes if ax.get_title().startswith("layer")]
    assert "minus the layer's anisotropy baseline" in adjusted._suptitle.get_text()
    assert [ax.get_ylabel() for ax in adjusted.axes if ax not in heat] == ["cosine minus baseline"]
    assert heat[1].images[0].get_array()[0, 1] == pytest.approx(0.5)  # 0.8 - 0.3
    plt.close(adjusted)

    unlabelled = sense_figure(probe_results(sense={**sense, "senses": None}))
    assert [t.get_text() for t in unlabelled.axes[0].get_yticklabels()] == ["0", "1", "2"]
    plt.close(unlabelled)
    assert sense_plot(probe_results(sense=sense), tmp_path / "sense.png").is_file()
