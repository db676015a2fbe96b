"""The layer-0 circuit probe in the probe run and the report: each sentence of circuits_text flips with the numbers
that choose it, the figure is drawn from a probes.json dict, the run tokenizes the vector corpus once for the lens
and the circuits, and the CLI can turn the probe off."""

import copy
from dataclasses import asdict

import pytest
from conftest import TEXTS, probe_results, tiny_config

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.probes.circuits import circuit_hypotheses
from hf_minattn.probes.cli import probe_parser
from hf_minattn.probes.report import write_report
from hf_minattn.probes.report.circuits import circuits_text, plot_circuits
from hf_minattn.probes.results import SavedCircuits
from hf_minattn.probes.run import _token_ids

NOTE = ("The tokens are the 99 most frequent non-special ids of the given counts. X = LN(E[t]) with the first block's "
        "LayerNorm (pre-norm). Positions are rotary: the stream holds no position vector. The model scales A_h by "
        "1/sqrt(head_dim) = 0.3536 before the softmax; no number here depends on that scale.")


def interval(estimate, low, high):
    return {"estimate": estimate, "low": low, "high": high, "n": 99, "confidence": 0.95, "method": "bootstrap",
            "df": None}


# one head, N = 99 tokens (chance rank 50): numbers chosen so that every sentence takes its first branch
HEAD = {"identity": interval(0.7, 0.6, 0.8), "cooccurrence": interval(0.3, 0.2, 0.4),
        "initial": interval(0.1, 0.0, 0.2), "qk_positive": 0.9, "qk_self_rank": 3.0, "ov_copying": 0.8,
        "ov_self_rank": 2.0}


def circuits(**changes):
    """A probes.json "circuits" dict of one head, HEAD with `changes` (a value of None drops that hypothesis)."""
    head = {**copy.deepcopy(HEAD), **changes}
    c = {"layer": 0, "num_heads": 1, "head_dim": 9, "token_ids": list(range(1, 100)), "scaling": 9**-0.5,
         "pairs": {"identity": 9702}, "window": 5, "note": NOTE}
    for key, value in head.items():
        c[key] = None if value is None else [value]
    c["ov_self_rank"] = None if c["ov_copying"] is None else c["ov_self_rank"]
    return c


def text(**changes):
    return circuits_text(probe_results(circuits=circuits(**changes)))


@pytest.mark.parametrize("identity, expected, absent", [
    (interval(0.7, 0.6, 0.8), "Head 0's W_Q/W_K reproduce the embedding similarity (ρ = 0.70 [0.60, 0.80])",
     "partly"),
    (interval(0.4, 0.3, 0.5), "Head 0's W_Q/W_K partly follow the embedding similarity (ρ = 0.40 [0.30, 0.50])",
     "reproduce"),
    (interval(0.05, -0.1, 0.2), "Head 0's query-key logits are not shown to follow embedding similarity (ρ = 0.05 "
     "[-0.10, 0.20]: the interval includes 0)", "W_Q/W_K"),
    (interval(-0.3, -0.4, -0.2), "Head 0's query-key logits rank token pairs against embedding similarity (ρ = "
     "-0.30 [-0.40, -0.20])", "W_Q/W_K"),
    (interval(None, None, None), "Head 0's logits are constant: no ranking to compare with embedding similarity",
     "W_Q/W_K"),
])
def test_the_identity_sentence_follows_the_interval(identity, expected, absent):
    sentence = text(identity=identity, initial=None)
    assert expected in sentence and absent not in sentence


def test_cooccurrence_is_named_only_when_its_interval_is_above_zero():
    assert "(ρ = 0.70 [0.60, 0.80]) and words that occur together (ρ = 0.30 [0.20, 0.40])" in text()
    assert "occur together" not in text(cooccurrence=interval(0.1, -0.05, 0.2))
    assert "occur together" not in text(cooccurrence=None)
    other = text(identity=interval(0.0, -0.1, 0.1))  # no embedding similarity, but co-occurrence
    assert "the interval includes 0); it does follow words that occur together (ρ = 0.30" in other


def test_the_initial_form_is_named_when_its_interval_is_above_the_identity_one():
    assert "initial random form" not in text()  # initial [0.0, 0.2] below identity [0.6, 0.8]
    assert "initial random form" not in text(initial=interval(0.75, 0.7, 0.8))  # overlapping: not above
    still = text(identity=interval(0.2, 0.1, 0.3), initial=interval(0.9, 0.85, 0.95))
    assert "; its QK form is still mostly its initial random form (ρ = 0.90 [0.85, 0.95] with it)" in still
    assert "initial random form" not in text(identity=interval(0.2, 0.1, 0.3), initial=None)
    # both near or below 0: not "mostly its initial form" (the quick demo's heads: identity -0.35, initial 0.0)
    assert "initial random form" not in text(identity=interval(-0.35, -0.39, -0.31), initial=interval(0.0, -0.03, 0.02))


@pytest.mark.parametrize("copying, rank, expected", [
    (0.8, 2.0, "its OV circuit copies: a token it attends to raises that token's own logit (score 0.80, a token's "
               "own logit ranked 2.0 of 99 on average, chance 50.0)"),
    (0.8, 6.0, "its OV circuit leans to copying, but a token's own logit does not rank near the top (score 0.80"),
    (0.3, 1.0, "its OV circuit neither copies nor suppresses (score 0.30"),
    (-0.8, 98.0, "its OV circuit suppresses: a token it attends to lowers its own logit (score -0.80"),
])
def test_the_ov_sentence_follows_the_copying_score_and_the_own_rank(copying, rank, expected):
    assert expected in text(ov_copying=copying, ov_self_rank=rank)


def test_no_ov_sentence_without_an_unembedding():
    sentence = text(ov_copying=None)
    assert "no OV scores: the model has no unembedding W_U." in sentence and "OV circuit" not in sentence


def test_the_text_ends_with_the_tokens_and_positions_of_the_note():
    sentence = text()
    assert sentence.endswith("The tokens are the 99 most frequent non-special ids of the given counts. X = LN(E[t]) "
                             "with the first block's LayerNorm (pre-norm). Positions are rotary: the stream holds no "
                             "position vector.")
    assert "1/sqrt(head_dim)" not in sentence
    ov = "OV: W_U is the tied word embeddings; later layers are left out: the direct path."
    note = f"{NOTE} Identity and initial: Spearman's rho. {ov} Co-occurrence: PPMI."
    noted = lambda **changes: circuits_text(probe_results(circuits={**circuits(**changes), "note": note}))  # noqa: E731
    assert noted().endswith("position vector. " + ov)  # the OV scores' unembedding named after the note
    assert "OV:" not in noted(ov_copying=None)  # no OV scores: no word on their W_U


def test_the_figure_and_the_report_section_from_a_dict(tmp_path):
    assert plot_circuits(None, tmp_path / "none.png") is None
    bare = SavedCircuits.from_dict(circuits(cooccurrence=None, initial=None, ov_copying=None))
    assert plot_circuits(bare, tmp_path / "bare.png").exists()
    r = {"model": "tiny", "model_class": "MinAttnForMaskedLM", "num_layers": 2, "num_heads": 1, "hidden_size": 9,
         "corpus": {"sentences": 8, "words": 80, "vocabulary": 50, "tokens": 100, "max_length": 24}, "timings": {},
         "circuits": circuits()}
    png = plot_circuits(SavedCircuits.from_dict(r["circuits"]), tmp_path / "circuits.png")
    assert png.exists()
    html = write_report(r, {"circuits": png}, tmp_path / "report.html").read_text()
    assert '<section id="circuits">' in html and circuits_text(probe_results(**r)) in html.replace("&#39;", "'")
    assert "<th>ρ co-occurrence</th>" in html and "<td>0.30 [0.20, 0.40]</td>" in html


def test_a_probed_model_gives_the_text_and_the_figure(tokenizer, tmp_path):
    """The fields circuits_text and plot_circuits read are those circuit_hypotheses writes, saved and read back."""
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), tie_word_embeddings=False)).eval()
    seqs = tokenizer(TEXTS, add_special_tokens=False)["input_ids"]
    c = circuit_hypotheses(model, n_tokens=20, n_resamples=10, initial_model=True, cooccurrence=seqs)
    sentence = circuits_text(probe_results(circuits=asdict(c)))
    assert sentence.count("Head ") == 4 and "OV circuit" in sentence
    assert "No token counts were given: the tokens are the first 20 non-special ids" in sentence
    assert "before the softmax" not in sentence  # the note's fourth sentence on: not in the text
    assert plot_circuits(c, tmp_path / "c.png").exists()  # a Circuits, as SavedCircuits has the same fields


def test_the_corpus_is_tokenized_once_for_the_lens_and_the_circuits(tokenizer):
    calls = []

    def counting(sentences, **kwargs):
        calls.append(len(sentences))
        return tokenizer(sentences, **kwargs)

    cache = []
    assert _token_ids(counting, TEXTS, cache, 5) == tokenizer(TEXTS[:5], add_special_tokens=False)["input_ids"]
    assert _token_ids(counting, TEXTS, cache) == tokenizer(TEXTS, add_special_tokens=False)["input_ids"]
    assert _token_ids(counting, TEXTS, cache, 20) == tokenizer(TEXTS[:20], add_special_tokens=False)["input_ids"]
    assert calls == [5, len(TEXTS) - 5]  # each sentence once; the last call reads the cache


def test_the_cli_turns_the_circuits_off():
    assert probe_parser().parse_args(["m", "--out", "o", "--no-circuits"]).no_circuits
    assert not probe_parser().parse_args(["m", "--out", "o"]).no_circuits


def test_circuits_without_qk_scores_speak_of_the_ov_circuits_alone():
    """A model that normalises queries and keys per head (Qwen 3) has OV scores only: the text, the headline and the
    comparison's cell say that no query-key score was given, and still read the OV circuits."""
    from hf_minattn.probes.report.circuits import circuits_headline
    from hf_minattn.probes.report.render import _circuits_cell

    r = probe_results(circuits=circuits(identity=None, cooccurrence=None, initial=None, qk_positive=None,
                                        qk_self_rank=None))
    assert "Head 0: no query-key score; its OV circuit copies" in circuits_text(r)
    assert circuits_headline(r) == ("In layer 0, no head's query-key logits are scored (queries and keys are "
                                    "normalised per head); 1 of 1 copy the token they attend to into their output.")
    assert _circuits_cell(r.circuits) == "no QK scores; 1 copy"


def test_a_probe_run_on_a_model_with_query_key_norms_gives_its_ov_circuits_alone(tokenizer, tmp_path):
    """Qwen 3 normalises each head's queries and keys: the run keeps layer 0's OV scores, gives no QK score, and the
    report's text and figure read that."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from hf_minattn.probes import ProbeSettings, run_all_probes
    from hf_minattn.probes.corpus import split_sentences

    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                         intermediate_size=37, max_position_embeddings=24)).eval()
    results = run_all_probes(model, tokenizer, split_sentences(TEXTS, max_sentences=0),
                             ProbeSettings(min_count=2, word2vec=False, untrained=False, bootstrap=20),
                             log=lambda message: None)
    c = results.circuits
    assert c.identity is None and c.initial is None and len(c.ov_copying) == 4 and results.weights is None
    assert "QK scores skipped: Qwen3ForCausalLM normalises each head's queries and keys" in c.note
    assert any(note.startswith("circuits: token counts from ") for note in results.notes)
    r = probe_results(circuits=asdict(c))
    assert circuits_text(r).count("Head ") == 4 and plot_circuits(r.circuits, tmp_path / "c.png").exists()
