"""Known-answer tests of the logit lens (probes/logit_lens.py): the last layer decodes to the model's own logits
(MinAttn pre- and post-norm, BERT, DistilBERT), the final norm is applied to the other layers only, the gain is the
unigram floor minus the loss on the same tokens, a model with no MLM head is refused by name, and the report
sentence follows the numbers."""

from dataclasses import asdict

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import TEXTS, probe_results, tiny_config
from scipy import stats as scipy_stats
from transformers import BertConfig, BertForMaskedLM, BertModel, DistilBertConfig, DistilBertForMaskedLM

from hf_minattn import MinAttnForMaskedLM
from hf_minattn.probes import logit_lens as lens_module
from hf_minattn.probes import report
from hf_minattn.probes.head_ablation import head_ablation, masked_batches
from hf_minattn.probes.logit_lens import logit_lens
from hf_minattn.probes.report.logit_lens import logit_lens_text, plot_logit_lens
from hf_minattn.probes.weights import UnsupportedArchitecture
from hf_minattn.unigram import UnigramFloor

SENTENCES = TEXTS[:8]  # the distinct sentences
MASKING = dict(mlm_probability=0.3, seed=3, mask_draws=2)


def _masked_lm(kind, tokenizer):
    """A tiny randomly initialised masked LM (nothing downloaded), in eval mode."""
    V = len(tokenizer)
    if kind in ("pre", "post"):
        return MinAttnForMaskedLM(tiny_config(vocab_size=V, norm_placement=kind)).eval()
    if kind == "bert":
        return BertForMaskedLM(BertConfig(vocab_size=V, hidden_size=36, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=37, max_position_embeddings=24)).eval()
    if kind in ("albert", "electra"):  # factorised embeddings, 20 wide under a hidden size of 36
        import transformers

        name = "Albert" if kind == "albert" else "Electra"
        config = getattr(transformers, f"{name}Config")(vocab_size=V, embedding_size=20, hidden_size=36,
                                                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                                                        max_position_embeddings=24)
        return getattr(transformers, f"{name}ForMaskedLM")(config).eval()
    return DistilBertForMaskedLM(DistilBertConfig(vocab_size=V, dim=36, n_layers=2, n_heads=4, hidden_dim=37,
                                                  max_position_embeddings=24)).eval()


def _by_hand(model, tokenizer):
    """Per masked token, from the model's own forward pass on logit_lens's masks (max length 24, batch size 16):
    (cross-entropy from its logits, whether its top-1 logit is the target, the target ids)."""
    losses, correct, targets = [], [], []
    with torch.no_grad():
        for enc, chosen, labels in masked_batches(tokenizer, SENTENCES, 24, 16, **MASKING):
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits  # (B, T, V)
            losses.append(F.cross_entropy(logits[chosen], labels[chosen], reduction="none"))
            correct.append(logits[chosen].argmax(-1) == labels[chosen])
            targets.append(labels[chosen])
    return torch.cat(losses).double().numpy(), torch.cat(correct).double().numpy(), torch.cat(targets).numpy()


@pytest.mark.parametrize("kind", ["pre", "post", "bert", "distilbert", "albert", "electra"])
def test_the_last_layer_decodes_to_the_models_own_logits(tokenizer, kind):
    model = _masked_lm(kind, tokenizer)
    lens = logit_lens(model, tokenizer, SENTENCES, **MASKING)
    losses, correct, _ = _by_hand(model, tokenizer)
    assert lens.num_layers == 2 and len(lens.loss) == len(lens.accuracy) == len(lens.interval95) == 3
    assert lens.masked_tokens == len(losses) and lens.sentences == 8 and lens.mask_draws == 2
    assert lens.loss[-1] == pytest.approx(losses.mean(), abs=1e-5)
    assert lens.accuracy[-1] == pytest.approx(correct.mean(), abs=1e-12)
    low, high = scipy_stats.t.interval(0.95, df=len(losses) - 1, loc=losses.mean(), scale=scipy_stats.sem(losses))
    assert lens.interval95[-1] == pytest.approx((high - low) / 2, rel=1e-4)
    assert lens.floor is None and lens.gain is None and lens.gain_interval95 is None


def test_the_final_norm_is_applied_below_the_last_layer_only(tokenizer):
    """Pre-norm blocks that add nothing (attention-only, W_O = 0, b_O = 0, no positions): every hidden state is the
    embedding output, so every layer decoded through final norm + head must give the last layer's loss. The final
    norm gets random weights, so that applying it twice at the last layer, or not at all below, would show."""
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), intermediate_size=0,
                                           position_embedding_type="none")).eval()
    with torch.no_grad():
        for layer in model.base_model.layers:
            layer.attention.o_proj.weight.zero_()
            layer.attention.o_proj.bias.zero_()
        model.base_model.final_norm.weight.normal_(1.0, 0.5)
        model.base_model.final_norm.bias.normal_(0.0, 0.5)
    lens = logit_lens(model, tokenizer, SENTENCES, **MASKING)
    assert lens.loss == pytest.approx([lens.loss[-1]] * 3, abs=1e-5)
    assert lens.accuracy == [lens.accuracy[-1]] * 3


def test_a_model_with_no_mlm_head_is_refused_by_name(tokenizer, monkeypatch):
    body = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=36, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=37, max_position_embeddings=24)).eval()  # like all-MiniLM-L6-v2's
    with pytest.raises(UnsupportedArchitecture, match=r"\*ForMaskedLM model with an MLM head; BertModel has none"):
        logit_lens(body, tokenizer, SENTENCES)
    monkeypatch.setattr(lens_module, "MLM_HEADS", {})  # a masked LM whose head the table does not know
    with pytest.raises(UnsupportedArchitecture, match="MinAttnForMaskedLM keeps its MLM head under none of"):
        logit_lens(_masked_lm("pre", tokenizer), tokenizer, SENTENCES)
    monkeypatch.setattr(lens_module, "MLM_HEADS", {"lm_head": lambda model, hidden: 2 * model.lm_head(hidden)})
    with pytest.raises(UnsupportedArchitecture, match="last layer of MinAttnForMaskedLM does not give its own logits"):
        logit_lens(_masked_lm("pre", tokenizer), tokenizer, SENTENCES)  # a wrong head is caught, not reported


def test_the_gain_is_the_unigram_floor_minus_the_loss_on_the_same_tokens(tokenizer):
    model = _masked_lm("pre", tokenizer)
    unigram = UnigramFloor.from_token_ids((tokenizer(t)["input_ids"][1:-1] for t in TEXTS), len(tokenizer))
    lens = logit_lens(model, tokenizer, SENTENCES, unigram=unigram, **MASKING)
    losses, _, targets = _by_hand(model, tokenizer)
    floor = -unigram.log_probs[targets]  # the floor's loss on each masked token
    assert lens.floor == pytest.approx(floor.mean(), abs=1e-9)
    assert lens.gain == pytest.approx([lens.floor - x for x in lens.loss], abs=1e-9)
    assert lens.gain[-1] == pytest.approx(floor.mean() - losses.mean(), abs=1e-5)
    diff = floor - losses  # the gain's interval is paired per token
    low, high = scipy_stats.t.interval(0.95, df=len(diff) - 1, loc=diff.mean(), scale=scipy_stats.sem(diff))
    assert lens.gain_interval95[-1] == pytest.approx((high - low) / 2, rel=1e-4)
    as_array = logit_lens(model, tokenizer, SENTENCES, unigram=unigram.log_probs, **MASKING)  # log-probs alone
    assert as_array.gain == lens.gain


def test_each_sentence_keeps_its_own_masked_tokens_and_gain(tokenizer):
    """Every non-special token masked (probability 1 - 1e-6, 2 draws): each sentence, given in an order that is not the
    length-sorted one of the batches, owns twice its own token count; the token-weighted mean of the per-sentence
    gains is the overall gain; and a sentence's gain is the floor minus the loss of its own tokens alone."""
    model = _masked_lm("pre", tokenizer)
    unigram = UnigramFloor.from_token_ids((tokenizer(t)["input_ids"][1:-1] for t in TEXTS), len(tokenizer))
    sentences = sorted(SENTENCES, key=len, reverse=True)[:5]
    lens = logit_lens(model, tokenizer, sentences, unigram=unigram, mlm_probability=0.999999, mask_draws=2, seed=0)
    own = [len(tokenizer(s, truncation=True, max_length=24)["input_ids"]) - 2 for s in sentences]
    assert lens.sentence_tokens == [2 * n for n in own]
    gains = np.array(lens.sentence_gain)  # (layers + 1, sentences)
    assert gains.shape == (3, len(sentences))
    assert np.average(gains, axis=1, weights=lens.sentence_tokens) == pytest.approx(lens.gain, abs=1e-3)
    alone = logit_lens(model, tokenizer, sentences[2:3], unigram=unigram, mlm_probability=0.999999, mask_draws=2, seed=0)
    assert gains[:, 2] == pytest.approx(alone.gain, abs=1e-3)


def test_bad_arguments_are_named(tokenizer):
    model = _masked_lm("pre", tokenizer)
    with pytest.raises(ValueError, match=r"mlm_probability must be a number in \(0, 1\), got 0"):
        logit_lens(model, tokenizer, SENTENCES, mlm_probability=0)
    with pytest.raises(ValueError, match="mask_draws must be a positive integer, got 0"):
        logit_lens(model, tokenizer, SENTENCES, mask_draws=0)
    with pytest.raises(ValueError, match="no sentences"):
        logit_lens(model, tokenizer, [])
    with pytest.raises(ValueError, match="the unigram floor covers 5 token ids"):
        logit_lens(model, tokenizer, SENTENCES, unigram=np.log(np.full(5, 0.2)))
    import copy

    no_mask = copy.deepcopy(tokenizer)
    no_mask.mask_token = None
    with pytest.raises(ValueError, match="has no mask token; masking sentences .*the logit lens.* needs a masked-LM"):
        logit_lens(model, no_mask, SENTENCES)


def _special_only_tokenizer():
    """A WordPiece tokenizer that knows only its special tokens, as transformers 5 builds one from a config where no
    tokenizer file is found: every word is [UNK], a special token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    backend = Tokenizer(models.WordPiece({token: i for i, token in enumerate(specials)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=24)


def test_sentences_with_no_token_to_score_are_refused_in_one_sentence():
    """Nothing to mask (every token special): the logit lens and the head ablation say so, where the lens used to
    fail on the max() of an empty tensor and the ablation to report a NaN loss."""
    special_only = _special_only_tokenizer()
    model = _masked_lm("bert", special_only)
    for probe in (logit_lens, head_ablation):
        with pytest.raises(ValueError, match=r"^no token to score: none of the 8 sentences has a non-special token to "
                                             r"mask under the tokenizer"):
            probe(model, special_only, SENTENCES, **MASKING)


def test_a_batch_with_no_token_to_score_is_passed_over(tokenizer):
    """A next-token LM on sentences one of which, alone in its batch, has no next token to score ("" is [CLS] [SEP]):
    the lens checks the last layer on the other batches, and it and the ablation score the same tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4,
                                       n_positions=24)).eval()
    sentences = ["", *SENTENCES[:3]]
    lens = logit_lens(model, tokenizer, sentences, batch_size=1)
    ablation = head_ablation(model, tokenizer, sentences, batch_size=1)
    # [CLS] w_1..w_n [SEP], cut at the model's 24 positions: n next tokens
    tokens = sum(len(tokenizer(s, truncation=True, max_length=24)["input_ids"]) - 2 for s in sentences)
    assert lens.objective == "next-token" and lens.masked_tokens == ablation.masked_tokens == tokens
    assert lens.loss[-1] == pytest.approx(ablation.base_loss, abs=1e-5) and np.isfinite(ablation.loss_increase).all()


def _lens_dict(loss, floor=None, half_width=0.1):
    return {"num_layers": len(loss) - 1, "sentences": 8, "masked_tokens": 40, "loss": loss,
            "accuracy": [0.1] * len(loss), "interval95": [0.1] * len(loss), "mlm_probability": 0.3, "mask_draws": 1,
            "floor": floor, "gain": None if floor is None else [floor - x for x in loss],
            "gain_interval95": None if floor is None else [half_width] * len(loss)}


def test_the_report_sentence_follows_the_numbers():
    above = logit_lens_text(probe_results(logit_lens=_lens_dict([5.0, 4.9, 4.8], floor=4.5)))
    assert "No layer's loss is below the unigram floor (4.50 nats" in above
    below = logit_lens_text(probe_results(logit_lens=_lens_dict([5.0, 4.0, 3.0], floor=4.5)))
    assert "first goes below the unigram floor (4.50 nats on the same tokens) beyond its 95% interval at layer 1" in below
    assert "at the last layer the gain is +1.50" in below
    assert "through this head; layer 0 is worse than them, beyond its 95% interval." in below  # -0.5 +- 0.1
    worse = logit_lens_text(probe_results(logit_lens=_lens_dict([5.0, 5.2, 4.0, 3.0], floor=4.5)))
    assert "layers 0, 1 are worse than them, beyond their 95% interval." in worse
    near = logit_lens_text(probe_results(logit_lens=_lens_dict([4.55, 4.0], floor=4.5)))  # -0.05: inside its interval
    assert "worse than them" not in near
    # a gain inside its interval is not enough: layer 1's gain 0.05 +- 0.1, layer 2's 0.5 +- 0.1
    assert "interval at layer 2 (gain 0.50" in logit_lens_text(
        probe_results(logit_lens=_lens_dict([5.0, 4.45, 4.0], floor=4.5)))
    assert "Even the embedding output" in logit_lens_text(
        probe_results(logit_lens=_lens_dict([4.0, 3.0], floor=4.5)))
    none = logit_lens_text(probe_results(logit_lens=_lens_dict([5.0, 4.0, 3.0])))
    assert "No unigram floor was given" in none and "lowest at layer 2" in none


def test_the_figure_and_the_report_section(tokenizer, tmp_path):
    unigram = UnigramFloor.from_token_ids((tokenizer(t)["input_ids"][1:-1] for t in TEXTS), len(tokenizer))
    lens = logit_lens(_masked_lm("post", tokenizer), tokenizer, SENTENCES, unigram=unigram, **MASKING)
    assert plot_logit_lens(None, tmp_path / "none.png") is None
    assert plot_logit_lens(lens, tmp_path / "lens.png").exists()  # a LogitLens, or as saved (same fields)
    r = {"model": "tiny", "model_class": "MinAttnForMaskedLM", "num_layers": 2, "num_heads": 4, "hidden_size": 36,
         "corpus": {"sentences": 8, "words": 80, "vocabulary": 50, "tokens": 100, "max_length": 24}, "timings": {},
         "logit_lens": asdict(lens)}
    html = report.write_report(r, {"logit_lens": plot_logit_lens(probe_results(**r).logit_lens, tmp_path / "d.png")},
                               tmp_path / "report.html").read_text()
    assert '<section id="logit_lens">' in html and logit_lens_text(probe_results(**r)) in html.replace("&#39;", "'")


def test_the_lens_floor_is_never_counted_on_the_sentences_it_scores(tokenizer):
    """Where the vector corpus is the probe sentences themselves (run_all_probes without a corpus, `--vector-corpus
    probe`), the lens's unigram floor counts the default corpus's training split instead: counted on the scored
    tokens, it would be in-sample and too low. Another vector corpus is counted as before."""
    from hf_minattn.probes.corpus import wikipedia_train_sentences
    from hf_minattn.probes.run import CIRCUIT_SENTENCES, _lens_floor, _VectorCorpus

    sentences = list(TEXTS)
    corpus = sentences + ["the cat sat on the mat ."]  # another corpus, the probe sentences among it
    training = tokenizer(wikipedia_train_sentences(CIRCUIT_SENTENCES), add_special_tokens=False, verbose=False)
    expected = UnigramFloor.from_token_ids(training["input_ids"], len(tokenizer))
    for same in (sentences, list(sentences)):  # the probe sentences themselves, or a copy (--corpus F --vector-corpus F)
        notes = []
        floor = _lens_floor(tokenizer, sentences, _VectorCorpus(same, "the probe sentences"), notes)
        np.testing.assert_array_equal(floor.log_probs, expected.log_probs)
        assert "training split, not of the probe sentences, which the lens scores" in notes[0]
    counted = UnigramFloor.from_token_ids(tokenizer(corpus, add_special_tokens=False)["input_ids"], len(tokenizer))
    other = _lens_floor(tokenizer, sentences, _VectorCorpus(corpus, "a corpus"), notes)
    np.testing.assert_array_equal(other.log_probs, counted.log_probs)
    assert notes[1] == "logit lens: the unigram floor counts the tokens of a corpus"
