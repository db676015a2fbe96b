"""Known-answer tests of the head probes: roles by attention mass with the ratio to uniform beside
it, per-head ablation (sign, zero-cost head, intervals), norm-weighted attention (Kobayashi et al. 2020), head
divergence within a layer and across seeds, relative graph thresholds, and the report sentences they produce (each
flipped by its numbers)."""

import numpy as np
import pytest
import torch
from scipy import stats as scipy_stats
from conftest import TEXTS, probe_results, tiny_config
from transformers import BertConfig, BertForMaskedLM, BertModel

from hf_minattn import MinAttnForMaskedLM, MinAttnModel
from hf_minattn.probes.attention_norms import (capture_attention_inputs, norm_weighted, transformed_value_norms,
                                              transformed_values, whole_layer_norm_weighting)
from hf_minattn.probes.head_ablation import ablation_over_seeds, head_ablation, masked_batches, zero_head
from hf_minattn.probes.head_divergence import (cross_js_divergence_sums, cross_model_head_divergence,
                                               matched_head_divergence, seed_pairs_head_divergence)
from hf_minattn.probes.heads import (ROLE_MIN_MASS, AttentionExample, HeadStatistics, attention_examples,
                                     attention_graph, head_roles, head_statistics, js_divergence_sums,
                                     uniform_attention, uniform_weights, within_layer_divergence)
from hf_minattn.probes.report.head_ablation import head_ablation_text
from hf_minattn.probes.report.head_map import head_map_text
from hf_minattn.probes.report.head_roles import head_roles_text
from hf_minattn.probes.report.heads import heads_headline, heads_text
from hf_minattn.probes.report.norm_weighting import attention_norm_example_text, norm_weighting_text
from hf_minattn.probes.weights import UnsupportedArchitecture, head_weights


def _hand_attention():
    """Two sentences: n = 4 (tokens CLS a , SEP) and n = 2 (CLS SEP, then 2 pads). Head 0 is uniform over real keys,
    head 1 attends to the previous token (token 0 to itself)."""
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    uniform = mask[:, None, :].float().expand(2, 4, 4) / mask.sum(-1)[:, None, None]
    previous = torch.zeros(2, 4, 4)
    for t in range(4):
        previous[:, t, max(t - 1, 0)] = 1
    att = torch.stack([uniform, previous], dim=1)  # (B, heads, T, T)
    kinds = {"cls": torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]]).bool(), "sep": torch.tensor([[0, 0, 0, 1], [0, 1, 0, 0]]).bool(),
             "punctuation": torch.tensor([[0, 0, 1, 0], [0, 0, 0, 0]]).bool()}
    return [att], mask, kinds


def test_relative_to_uniform_by_hand():
    stats = HeadStatistics()
    stats.add(*_hand_attention())
    expected = stats.uniform_expectation()
    # self: 4 queries at 1/4 and 2 at 1/2 -> 2/6; previous: 3 queries at 1/4 and 1 at 1/2 -> 1.25/4
    assert expected["self"] == pytest.approx(2 / 6) and expected["previous"] == pytest.approx(1.25 / 4)
    assert expected["punctuation"] == pytest.approx(4 * 0.25 / 6)  # 1 of 4 keys in sentence 0, none in sentence 1
    assert expected["entropy"] == pytest.approx((4 * np.log(4) + 2 * np.log(2)) / 6)
    relative = stats.relative_to_uniform()
    for name, values in relative.items():  # a uniform head is at 1x on every statistic
        assert values[0][0] == pytest.approx(1.0), name
    assert relative["previous"][0][1] == pytest.approx(1 / (1.25 / 4))  # always previous: 3.2x
    roles = head_roles(stats.means(), relative)
    assert roles.roles[0][1] == "previous" and roles.mass[0][1] == pytest.approx(1.0)
    assert roles.ratio[0][1] == pytest.approx(3.2)
    # in 2- and 4-token sentences uniform attention already puts 1/3 on itself: the mass rule is Clark et al.'s,
    # meant for real sentence lengths (the ratio beside it, 1.0x, shows the head is uniform)
    assert roles.roles[0][0] == "self" and roles.ratio[0][0] == pytest.approx(1.0)


def _one_sentence(rows):
    """One 10-token sentence: [CLS] at 0, punctuation at 4 and 7, [SEP] at 9; `rows(t)` gives query t's attention."""
    n = 10
    att = torch.stack([torch.stack([rows_fn(t) for t in range(n)]) for rows_fn in rows])[None]  # (1, heads, T, T)
    kinds = {name: torch.zeros(1, n, dtype=torch.bool) for name in ("cls", "sep", "punctuation")}
    kinds["cls"][0, 0], kinds["sep"][0, 9], kinds["punctuation"][0, [4, 7]] = True, True, True
    return [att], torch.ones(1, n, dtype=torch.long), kinds


def _spread(n, mass_on, rest_over=None):
    """A row of n weights: `mass_on` {key: weight}, the rest spread evenly over the other keys."""
    row = torch.zeros(n)
    for key, weight in mass_on.items():
        row[key] = weight
    others = [j for j in range(n) if j not in mass_on]
    row[others] = (1 - sum(mass_on.values())) / len(others)
    return row


def test_roles_are_chosen_by_attention_mass_not_by_ratio():
    n = 10
    previous = lambda t: _spread(n, {t - 1: 0.6} if t else {})  # noqa: E731  0.6 on the previous token
    cls = lambda t: _spread(n, {0: 0.25})  # noqa: E731  0.25 on [CLS], 2.5x uniform (1/10)
    stats = HeadStatistics()
    stats.add(*_one_sentence([previous, cls]))
    means, relative = stats.means(), stats.relative_to_uniform()
    roles = head_roles(means, relative)
    assert roles.roles == [["previous", "none"]]
    assert roles.mass[0][0] == pytest.approx(0.6) and roles.ratio[0][0] == pytest.approx(6.0)  # 0.6 / (1/10)
    assert means["cls"][0][1] == pytest.approx(0.25) and relative["cls"][0][1] == pytest.approx(2.5)
    assert max(relative, key=lambda k: relative[k][0][1] if k != "entropy" else 0) == "cls"  # the old argmax
    assert roles.mass[0][1] is None and roles.ratio[0][1] is None
    assert ROLE_MIN_MASS == 0.3 and head_roles(means, relative, min_mass=0.2).roles == [["previous", "cls"]]


def test_among_passing_roles_the_largest_mass_wins_whatever_the_ratios():
    # next: 0.35 of the attention, 3.5x uniform; punctuation (2 keys of 10): 0.55, only 2.75x
    stats = {"next": [[0.35, 0.1]], "punctuation": [[0.55, 0.29]]}
    relative = {"next": [[3.5, 1.0]], "punctuation": [[2.75, 1.45]]}
    roles = head_roles(stats, relative)
    assert roles.roles == [["punctuation", "none"]] and roles.mass == [[0.55, None]] and roles.ratio == [[2.75, None]]
    stats["next"][0][0] = 0.6  # now next has the larger mass
    assert head_roles(stats, relative).roles == [["next", "none"]]
    assert head_roles(stats, {}).ratio == [[None, None]]  # no ratios saved: the role stands, its ratio is unknown
    with pytest.raises(ValueError, match="min_mass"):
        head_roles(stats, relative, min_mass=30)


def test_relative_ratio_is_none_without_any_key_of_a_kind():
    att, mask, kinds = _hand_attention()
    kinds["punctuation"][:] = False
    stats = HeadStatistics()
    stats.add(att, mask, kinds)
    assert stats.relative_to_uniform()["punctuation"] == [[None, None]]


def _causal_uniform(mask):
    """(B, 1, T, T): one causal head spreading each real query evenly over the real tokens up to itself."""
    T = mask.shape[1]
    visible = torch.ones(T, T).tril()[None] * mask[:, None, :].float() * mask[:, :, None].float()  # (B, Tq, Tk)
    return (visible / visible.sum(-1, keepdim=True).clamp_min(1))[:, None]


@pytest.mark.parametrize("padding", ["right", "left"])
def test_a_uniform_causal_head_is_uniform_against_the_keys_each_query_sees(padding):
    """A decoder's query i sees i + 1 keys: spread evenly over them it is 1x uniform on every statistic (against all
    n keys it read as focused, 3.6x uniform on itself), and the next token, which it cannot see, has no ratio."""
    T = 20
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, 12:] = 0 if padding == "right" else 1
    mask[1, :8] = 0 if padding == "left" else 1
    kinds = {name: torch.zeros(2, T, dtype=torch.bool) for name in ("cls", "sep", "punctuation")}
    kinds["punctuation"][:, [3, 10, 15]] = True
    stats = HeadStatistics()
    stats.add([_causal_uniform(mask)], mask, kinds)
    relative, means = stats.relative_to_uniform(), stats.means()
    for name in ("entropy", "self", "previous", "punctuation"):
        assert relative[name][0][0] == pytest.approx(1.0, abs=1e-5), name
    assert relative["next"] == [[None]] and means["next"] == [[0.0]]
    log_n = np.mean([np.log(i) for i in range(1, T + 1)] + [np.log(i) for i in range(1, 13)])  # n_i = i + 1
    assert stats.uniform_expectation()["entropy"] == pytest.approx(log_n)
    heads = {"num_heads": 1, "stats": means, "uniform_entropy": stats.uniform_expectation()["entropy"],
             "relative_to_uniform": relative, "tokens": stats.queries, "sentences": 2}
    assert heads_headline(probe_results(heads=heads)).startswith("On average the heads spread their attention broadly")
    assert "(broad attention on average)" in heads_text(probe_results(heads=heads))


def test_a_decoder_is_measured_against_the_keys_before_each_query(tokenizer):
    """GPT-2's eager attention gives the keys after each query exactly 0, which is how the probe knows it is causal: a
    freshly initialised decoder attends almost evenly over what it sees, so its entropy is at uniform's, and its next
    token, unseen, has no ratio. A BERT encoder of the same size keeps the full baseline."""
    from transformers import GPT2Config, GPT2LMHeadModel

    decoder = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=24, n_layer=2, n_head=3, n_positions=24,
                                         bos_token_id=0, eos_token_id=0)).eval()
    result = head_statistics(decoder, tokenizer, TEXTS[:8], norm_weighting=False)
    assert result.uniform_expectation["next"] == 0 and result.relative_to_uniform["next"] == [[None] * 3] * 2
    assert np.mean(result.stats["entropy"]) == pytest.approx(result.uniform_entropy, rel=0.01)
    encoder = head_statistics(_bert_mlm(tokenizer), tokenizer, TEXTS[:8], norm_weighting=False)
    assert encoder.uniform_expectation["next"] > 0 and encoder.uniform_entropy > result.uniform_entropy


def test_one_head_seeing_a_later_key_keeps_the_full_baseline():
    """Causal only when every head of every layer gives the keys after each query exactly 0: a bidirectional model
    whose one head happens to look back is measured against all n keys."""
    mask = torch.ones(1, 6, dtype=torch.long)
    kinds = {name: torch.zeros(1, 6, dtype=torch.bool) for name in ("cls", "sep", "punctuation")}
    backwards, full = _causal_uniform(mask), torch.full((1, 1, 6, 6), 1 / 6)
    assert uniform_attention([backwards, full], mask)[0, 0].tolist() == pytest.approx([1 / 6] * 6)
    assert uniform_attention([backwards], mask)[0, 0].tolist() == pytest.approx([1, 0, 0, 0, 0, 0])
    stats = HeadStatistics()
    stats.add([torch.cat([backwards, full], dim=1)], mask, kinds)
    assert stats.uniform_expectation()["entropy"] == pytest.approx(np.log(6))
    assert stats.relative_to_uniform()["self"][0][1] == pytest.approx(1.0)


def _bert_mlm(tokenizer):
    return BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                      intermediate_size=30, max_position_embeddings=24, hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0)).eval()


def _output_linear(model, layer):
    return model.base_model.layers[layer].attention.o_proj if hasattr(model.base_model, "layers") else \
        model.base_model.encoder.layer[layer].attention.output.dense


@pytest.mark.parametrize("kind", ["minattn", "bert"])
def test_ablating_a_head_whose_output_slice_is_zero_changes_nothing(tokenizer, kind):
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval() if kind == "minattn" else _bert_mlm(tokenizer)
    H = model.config.num_attention_heads
    D = model.config.hidden_size // H
    with torch.no_grad():
        _output_linear(model, 1).weight[:, 1 * D:2 * D] = 0  # layer 1, head 1 already outputs nothing
    result = head_ablation(model, tokenizer, TEXTS[:8], seed=1, mlm_probability=0.3)
    increase = np.array(result.loss_increase)
    assert increase.shape == (2, H) and result.masked_tokens >= 8
    assert increase[1, 1] == 0.0
    assert increase[0, 0] != 0.0  # a head that does output something changes the loss


def test_zero_head_zeroes_exactly_that_slice(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    seen = []
    handle = model.layers[0].attention.o_proj.register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()))
    enc = tokenizer(TEXTS[1:3], padding=True, return_tensors="pt")
    with torch.no_grad(), zero_head(model, 0, 2):
        model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    handle.remove()
    # the hook registered first sees the input before zeroing; run again to see what W_O receives
    D = 9
    with torch.no_grad(), zero_head(model, 0, 2):
        captured = []
        h2 = model.layers[0].attention.o_proj.register_forward_hook(lambda m, args, out: captured.append(args[0].clone()))
        model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        h2.remove()
    assert torch.all(captured[0][..., 2 * D:3 * D] == 0) and torch.equal(captured[0][..., :2 * D], seen[0][..., :2 * D])
    with pytest.raises(ValueError, match="layer, head"):
        with zero_head(model, 5, 0):
            pass


def test_ablation_needs_a_masked_lm(tokenizer):
    with pytest.raises(UnsupportedArchitecture, match="masked-LM"):
        head_ablation(MinAttnModel(tiny_config(vocab_size=len(tokenizer))), tokenizer, TEXTS[:2])
    with pytest.raises(ValueError, match="mlm_probability"):
        head_ablation(MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))), tokenizer, TEXTS[:2],
                      mlm_probability=2)
    with pytest.raises(ValueError, match="mask_draws"):
        head_ablation(MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))), tokenizer, TEXTS[:2], mask_draws=0)


def _one_head_model(tokenizer, steps=150):
    """A one-layer masked LM whose attention output passes through head 0 only (W_O of heads 1-3 zero, kept zero
    while training), trained briefly on the test sentences: to fill a mask it must read the context through head 0."""
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), num_hidden_layers=1))
    output = model.base_model.layers[0].attention.o_proj
    keep = torch.zeros_like(output.weight)
    keep[:, :9] = 1  # head 0's input channels (head_dim 9)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        with torch.no_grad():
            output.weight.mul_(keep)
        for enc, chosen, labels in masked_batches(tokenizer, TEXTS[:8], 24, 8, 0.3, seed=100 + step):
            loss = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                         labels=labels.masked_fill(~chosen, -100)).loss
            optimizer.zero_grad(), loss.backward(), optimizer.step()
    with torch.no_grad():
        output.weight.mul_(keep)
    return model.eval()


def _masked_lm_losses(model, batches):
    """Per masked token cross-entropy, through the model's own loss (labels -100 elsewhere), not head_ablation's."""
    losses = []
    with torch.no_grad():
        for enc, chosen, labels in batches:
            for b in range(len(chosen)):  # one sentence at a time: the model's mean loss over its masked tokens
                for t in chosen[b].nonzero()[:, 0].tolist():
                    only = torch.full_like(labels[b:b + 1], -100)
                    only[0, t] = labels[b, t]
                    losses.append(float(model(input_ids=enc["input_ids"][b:b + 1], labels=only,
                                              attention_mask=enc["attention_mask"][b:b + 1]).loss))
    return np.array(losses)


def test_ablation_sign_a_needed_head_costs_what_zeroing_its_output_by_hand_costs(tokenizer):
    """increase = loss with the head zeroed - loss intact: positive for the one head the model reads context
    through, exactly 0 for heads whose W_O is zero, and equal to removing head 0's W_O columns by hand."""
    import copy

    model = _one_head_model(tokenizer)
    result = head_ablation(model, tokenizer, TEXTS[:8], mlm_probability=0.3, seed=0)
    batches = masked_batches(tokenizer, TEXTS[:8], 24, 16, 0.3, seed=0)  # head_ablation's masks (same batches)
    intact = _masked_lm_losses(model, batches)
    zeroed_model = copy.deepcopy(model)
    with torch.no_grad():
        zeroed_model.base_model.layers[0].attention.o_proj.weight[:, :9] = 0  # no attention output but b_O
    zeroed = _masked_lm_losses(zeroed_model, batches)
    assert result.masked_tokens == len(intact) and result.base_loss == pytest.approx(intact.mean(), abs=1e-5)
    increase = np.array(result.loss_increase)
    assert increase[0, 0] == pytest.approx(zeroed.mean() - intact.mean(), abs=1e-5)
    assert increase[0, 0] > 0.5  # the model needs its only context head (about 1.9 nats here)
    assert increase[0, 1:].tolist() == [0.0, 0.0, 0.0] and result.interval95[0][1:] == [0.0, 0.0, 0.0]
    # the interval: a 95% t-interval over the masked tokens of the per-token differences, as scipy computes it
    diff = zeroed - intact
    low, high = scipy_stats.t.interval(0.95, df=len(diff) - 1, loc=diff.mean(), scale=scipy_stats.sem(diff))
    assert result.interval95[0][0] == pytest.approx((high - low) / 2, rel=1e-4)
    assert result.mlm_probability == 0.3 and result.mask_draws == 1


def test_ablation_masks_at_the_rate_it_is_given(tokenizer):
    eligible = sum(len(tokenizer(t)["input_ids"]) - 2 for t in TEXTS)  # every token but [CLS] and [SEP]
    for rate in (0.15, 0.3):
        chosen = sum(int(c.sum()) for _, c, _ in masked_batches(tokenizer, TEXTS, 24, 16, rate, seed=0, mask_draws=4))
        assert chosen / (4 * eligible) == pytest.approx(rate, abs=0.03)
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).eval()
    one, two = (head_ablation(model, tokenizer, TEXTS[:8], mlm_probability=0.3, mask_draws=d) for d in (1, 2))
    assert two.masked_tokens > one.masked_tokens and two.mask_draws == 2


def test_masks_skip_padding_and_special_tokens_follow_the_seed_and_give_every_sentence_one_token(tokenizer):
    """The documented draw: one generator seeded with `seed`, a token masked where its uniform draw is below the rate,
    never [CLS], [SEP] or padding; a sentence left with none gets exactly one of its own tokens; a sentence with no
    token of its own (the empty string) gets none."""
    sentences = [TEXTS[0], "", TEXTS[1] * 3]  # different lengths: padding; the last one longer than max_length
    batches = masked_batches(tokenizer, sentences, 16, 16, 0.3, seed=5)
    (enc, chosen, labels), = batches
    assert enc["input_ids"].shape[1] == 16  # truncated to max_length (the tokenizer's own limit is 24)
    assert not (chosen & ~enc["attention_mask"].bool()).any()
    special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                            for ids in labels.tolist()]).bool() | ~enc["attention_mask"].bool()
    draws = torch.rand(labels.shape, generator=torch.Generator().manual_seed(5))
    expected = (draws < 0.3) & ~special
    # rows sorted by length: "", TEXTS[0], the long one
    assert expected[1].any() and torch.equal(chosen[1], expected[1]) and torch.equal(chosen[2], expected[2])
    assert not chosen[0].any()  # "" is [CLS] [SEP] only
    assert torch.equal(enc["input_ids"][chosen], torch.full((int(chosen.sum()),), tokenizer.mask_token_id))
    rare = [masked_batches(tokenizer, TEXTS[:6], 24, 16, 1e-9, seed=3)[0] for _ in range(2)]
    assert rare[0][1].sum(1).tolist() == [1] * 6  # at a tiny rate: exactly one masked token per sentence
    assert torch.equal(rare[0][1], rare[1][1])  # drawn from the seed's generator, so the same every time
    specials = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                             for ids in rare[0][2].tolist()]).bool()
    assert not (rare[0][1] & specials).any()


def test_masking_arguments_are_checked_with_their_names():
    from hf_minattn.probes.head_ablation import check_masking

    for rate in (0, 1, 1.5, "0.3", True):
        with pytest.raises(ValueError, match="mlm_probability"):
            check_masking(rate, 1)
    for draws in (0, True, 1.5):
        with pytest.raises(ValueError, match="mask_draws must"):
            check_masking(0.3, draws)
    check_masking(0.5, 2)


@pytest.mark.slow  # a dozen ablations of up to 64 sentences
def test_ablation_fields_defaults_and_a_single_masked_token(tokenizer):
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), num_hidden_layers=3)).eval()
    many = (TEXTS * 20)[:70]
    result = head_ablation(model, tokenizer, many[:20], max_sentences=70)
    assert (result.num_layers, result.num_heads, result.sentences) == (3, 4, 20)
    assert head_ablation(model, tokenizer, many).sentences == 64  # the documented default cap
    default = head_ablation(model, tokenizer, TEXTS[:20])
    assert default.loss_increase == head_ablation(model, tokenizer, TEXTS[:20], batch_size=16, seed=0).loss_increase
    single = head_ablation(model, tokenizer, [TEXTS[0]], mlm_probability=1e-9)  # one masked token: no interval
    assert single.masked_tokens == 1 and all(np.isnan(x) for row in single.interval95 for x in row)
    short = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), max_position_embeddings=16)).eval()
    assert head_ablation(short, tokenizer, [TEXTS[1] * 3]).sentences == 1  # cut to the model's 16 positions, not 24
    pair = head_ablation(model, tokenizer, TEXTS[:2], mlm_probability=1e-9)  # two masked tokens: an interval, df 1
    assert pair.masked_tokens == 2 and all(np.isfinite(x) for row in pair.interval95 for x in row)


def test_ablation_over_seeds_is_a_t_interval_per_head():
    seeds = [{"loss_increase": [[0.1, 0.0], [0.3, -0.1]]}, {"loss_increase": [[0.2, 0.0], [0.5, 0.1]]},
             {"loss_increase": [[0.4, 0.0], [0.1, 0.0]]}]
    summary = ablation_over_seeds(seeds)
    values = [0.1, 0.2, 0.4]
    low, high = scipy_stats.t.interval(0.95, df=2, loc=np.mean(values), scale=scipy_stats.sem(values))
    assert summary["mean"][0][0] == pytest.approx(np.mean(values))
    assert (summary["low"][0][0], summary["high"][0][0]) == pytest.approx((low, high))
    assert summary["mean"][0][1] == summary["low"][0][1] == summary["high"][0][1] == 0.0
    assert summary["seeds"] == 3 and summary["df"] == 2
    with pytest.raises(ValueError, match="same layers x heads"):
        ablation_over_seeds([*seeds, {"loss_increase": [[0.1]]}])
    from hf_minattn.probes.head_ablation import HeadAblation

    one = HeadAblation(num_layers=1, num_heads=2, sentences=3, masked_tokens=9, base_loss=5.0,
                       loss_increase=[[0.1, 0.2]], interval95=[[0.0, 0.0]])
    alone = ablation_over_seeds([one])  # the dataclass itself, and a single seed: the point, df 0
    assert alone["mean"] == [[0.1, 0.2]] and alone["df"] == 0


def test_norm_weighting_gives_a_zero_vector_zero_weight():
    attention = torch.full((1, 2, 3, 3), 1 / 3)
    norms = torch.tensor([[[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]]])
    shares = norm_weighted(attention, norms)
    assert torch.all(shares[0, 0, :, 1] == 0)
    torch.testing.assert_close(shares[0, 0, 0], torch.tensor([1 / 3, 0, 2 / 3]))
    torch.testing.assert_close(shares[0, 1], attention[0, 1])  # equal norms: shares = attention
    with pytest.raises(ValueError, match="must match"):
        norm_weighted(attention, norms[..., :2])


def test_norm_weighting_in_a_model_whose_value_of_one_token_is_zero(tokenizer):
    """Pre-norm, no positions, no Q/K/V bias: a token whose word embedding is 0 has LayerNorm(0) = 0, so
    W_V x + b_V = 0 and it moves nothing, whatever attention it gets."""
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer), position_embedding_type="none",
                                     intermediate_size=0, num_hidden_layers=1)).eval()
    enc = tokenizer(["the king and the queen"], return_tensors="pt")
    zero_id = int(enc["input_ids"][0, 2])
    with torch.no_grad():
        model.get_input_embeddings().weight[zero_id] = 0
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        att = model(**enc, output_attentions=True).attentions
        norms = transformed_value_norms(model, inputs)[0]
    assert torch.all(norms[0, :, 2] == 0) and torch.all(norms[0, :, 1] > 0)
    shares = norm_weighted(att[0], norms)
    assert torch.all(shares[0, :, :, 2] == 0) and torch.all(att[0][0, :, :, 2] > 0)


@pytest.mark.parametrize("kind", ["minattn", "bert"])
def test_transformed_values_reproduce_the_attention_output(tokenizer, kind):
    """sum_h sum_j a_ij W_O^h (W_V^h x_j + b_V^h) + b_O is exactly what W_O outputs: the decomposition behind the norms."""
    if kind == "minattn":
        model = MinAttnModel(tiny_config(vocab_size=len(tokenizer), qkv_bias=True)).eval()
        with torch.no_grad():
            model.layers[0].attention.qkv_proj.bias.normal_()
    else:
        model = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                     intermediate_size=30, max_position_embeddings=24)).eval()
        model.set_attn_implementation("eager")
    output = _output_linear(model, 0)
    captured = []
    handle = output.register_forward_hook(lambda m, args, out: captured.append(out))
    enc = tokenizer(["the king and the queen ruled"], return_tensors="pt")
    enc.pop("token_type_ids", None)
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        att = model(**enc, output_attentions=True).attentions
        x = inputs[0]
    handle.remove()
    weights = head_weights(model)[0][0]
    C = model.config.hidden_size
    bias = (model.layers[0].attention.qkv_proj.bias[2 * C:] if kind == "minattn"
            else model.encoder.layer[0].attention.self.value.bias).detach()
    values = torch.einsum("hdc,btc->bhtd", weights["W_V"], x) + bias.view(weights["W_V"].shape[0], 1, -1)
    f = torch.einsum("hcd,bhtd->bhtc", weights["W_O"], values)  # (B, H, T, C)
    rebuilt = torch.einsum("bhij,bhjc->bic", att[0], f) + output.bias
    torch.testing.assert_close(rebuilt, captured[0], atol=1e-5, rtol=1e-4)
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        model(**enc)
        torch.testing.assert_close(transformed_value_norms(model, inputs)[0], f.norm(dim=-1), atol=1e-5, rtol=1e-4)


def test_head_statistics_carry_relative_and_norm_weighted_numbers(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    result = head_statistics(model, tokenizer, TEXTS[:8], examples=[TEXTS[0]])
    assert np.array(result.relative_to_uniform["punctuation"]).shape == (2, 4)
    assert np.array(result.roles).shape == (2, 4) and len(result.within_layer_js) == 2
    assert np.array(result.norm_weighted_stats["cls"]).shape == (2, 4)
    shares = np.array(result.examples[0].norm_weighted)
    np.testing.assert_allclose(shares.sum(-1), 1, atol=1e-3)
    off = head_statistics(model, tokenizer, TEXTS[:8], norm_weighting=False)
    assert off.norm_weighted_stats == {} and off.roles == result.roles


def test_js_divergence_sums_are_scipys_jensen_shannon_over_real_queries_and_keys():
    """The (heads x heads) sums of JS divergence, per query token over the sentence's real keys, against scipy's
    `jensenshannon` (the square root of the divergence, natural log): uniform against previous-token attention."""
    from scipy.spatial.distance import jensenshannon

    (att,), mask, _ = _hand_attention()
    expected = np.zeros((2, 2))
    for b, n in enumerate(mask.sum(-1).tolist()):
        for t in range(n):
            for i in range(2):
                for j in range(2):
                    expected[i, j] += jensenshannon(att[b, i, t, :n], att[b, j, t, :n]) ** 2
    assert expected[0, 1] > 0.5  # 6 queries, each far from uniform: a sum a wrong normalisation would not reach
    np.testing.assert_allclose(js_divergence_sums([att], mask).numpy(), expected, atol=1e-6)
    swapped = att[:, [1, 0]]  # model b: the same heads in the other order
    np.testing.assert_allclose(cross_js_divergence_sums([att], [swapped], mask).numpy(), expected[:, [1, 0]], atol=1e-6)
    # the same sentences padded on the left (a decoder's tokenizer may pad there): the same sums
    T = mask.shape[1]
    order = torch.stack([torch.cat([torch.nonzero(m == 0).flatten(), torch.nonzero(m).flatten()]) for m in mask])
    left = torch.stack([att[b][..., order[b], :][..., order[b]] for b in range(len(mask))])  # pads first
    left_mask = torch.stack([mask[b][order[b]] for b in range(len(mask))])
    assert not torch.equal(left_mask, mask) and left_mask[:, -1].all() and T == left.shape[-1]
    np.testing.assert_allclose(js_divergence_sums([left], left_mask).numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(cross_js_divergence_sums([left], [left[:, [1, 0]]], left_mask).numpy(),
                               expected[:, [1, 0]], atol=1e-6)


def test_within_layer_and_matched_head_divergence(tokenizer):
    js = np.array([[0, .2, .5, .5], [.2, 0, .5, .5], [.5, .5, 0, .4], [.5, .5, .4, 0]])
    assert within_layer_divergence(js, 2, 2) == pytest.approx([0.2, 0.4])
    with pytest.raises(ValueError, match="js must be"):
        within_layer_divergence(js, 3, 2)
    # b = a with the heads of each layer swapped: matched divergence 0 through the swap
    cross = np.array([[.3, 0, .5, .5], [0, .3, .5, .5], [.5, .5, .2, 0], [.5, .5, 0, .2]])
    result = matched_head_divergence(cross, js, js, 2, 2)
    assert result.matched == [0, 0] and result.matching == [[1, 0], [1, 0]]
    # the null: the same minimum matching of each layer against the other layer (0.5 everywhere); none with one layer
    assert result.matched_other_layers == [0.5, 0.5]
    assert matched_head_divergence(cross[:2, :2], js[:2, :2], js[:2, :2], 1, 2).matched_other_layers == [None]
    # one model against itself: every head matches itself at divergence 0, below the within-layer divergence
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    same = cross_model_head_divergence(model, model, tokenizer, TEXTS[:8])
    assert np.allclose(same.matched, 0, atol=1e-6) and same.matching == [[0, 1, 2, 3]] * 2
    assert all(w > 0 for w in same.within_layer_a)
    enc = tokenizer(TEXTS[1:4], padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        att = model(**enc, output_attentions=True).attentions
    torch.testing.assert_close(cross_js_divergence_sums(att, att, enc["attention_mask"]),
                               js_divergence_sums(att, enc["attention_mask"]), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="same layers x heads"):
        cross_model_head_divergence(model, MinAttnModel(tiny_config(vocab_size=len(tokenizer), num_hidden_layers=1)),
                                    tokenizer, TEXTS[:2])


def test_seed_pairs_are_compared_in_order_and_match_the_pairwise_function(tokenizer):
    seeds = [MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval() for _ in range(2)]
    models = [seeds[0], seeds[1], seeds[0]]  # the third "seed" repeats the first
    pairs = seed_pairs_head_divergence(models, tokenizer, TEXTS[:8])
    assert len(pairs) == 3  # (0, 1), (0, 2), (1, 2)
    assert np.allclose(pairs[1].matched, 0, atol=1e-6) and min(pairs[0].matched) > 0
    assert pairs[0].matched == pytest.approx(pairs[2].matched, abs=1e-6)  # (0, 1) and (1, 2) compare the same models
    one = cross_model_head_divergence(seeds[0], seeds[1], tokenizer, TEXTS[:8])
    assert one.matched == pytest.approx(pairs[0].matched, abs=1e-6) and one.matching == pairs[0].matching
    assert one.within_layer_a == pytest.approx(pairs[0].within_layer_a, abs=1e-6)
    with pytest.raises(ValueError, match="at least two models"):
        seed_pairs_head_divergence(seeds[:1], tokenizer, TEXTS[:8])


def test_graph_threshold_is_relative_to_uniform():
    n = 4
    uniform = torch.full((1, 1, n, n), 1 / n)
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3], attention=uniform.tolist(),
                               norm_weighted=torch.eye(n)[None, None].tolist())
    assert len([e for e in attention_graph(example, relative_threshold=1.0)["edges"] if e["head"] == 0]) == n * n
    graph = attention_graph(example)  # default: 2x uniform
    assert graph["threshold"] == pytest.approx(2 / n) and graph["edges"] == []
    norm = attention_graph(example, weighting="norm")
    assert {(e["source"], e["target"]) for e in norm["edges"] if e["head"] == 0} == {(i, i) for i in range(n)}
    with pytest.raises(ValueError, match="weighting"):
        attention_graph(example, weighting="raw")


def test_graph_threshold_of_a_causal_model_is_relative_to_the_keys_each_query_sees():
    """In a causal model query i sees i + 1 nodes: an edge needs 2/(i + 1), so uniform causal attention has none
    (against 2/n for all, its early queries would all pass); "threshold" holds the smallest cut."""
    n = 4
    uniform = torch.ones(n, n).tril() / torch.arange(1, n + 1)[:, None]  # (n, n): row i spread over keys 0..i
    example = AttentionExample(sentence="a b c d", tokens=list("abcd"), word_ids=[0, 1, 2, 3],
                               attention=uniform[None, None].tolist())
    graph = attention_graph(example, level="token")
    assert graph["edges"] == [] and graph["threshold"] == pytest.approx(2 / n)
    peaked = uniform.clone()
    peaked[3] = torch.tensor([0.1, 0.1, 0.6, 0.2])  # 0.6 >= 2/4; row 1's 0.5 is uniform over its 2 keys
    example.attention = peaked[None, None].tolist()
    assert {(e["source"], e["target"]) for e in attention_graph(example, level="token")["edges"]} == {(3, 2)}
    # words: [CLS] w0 w0 w1 [SEP] -> nodes 0..3; node i sees nodes 0..i
    owner = torch.tensor([0, 1, 1, 2, 3])
    assert uniform_weights(owner, causal=True).ravel().tolist() == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    assert uniform_weights(owner).ravel().tolist() == pytest.approx([1 / 4] * 4)


def test_layer_norm_weighting_weighs_the_heads_by_what_they_move():
    """Kobayashi et al.'s layer measure ||sum_h a_ij^h f_h(x_j)||: head 0 attends to token 1 and moves a vector of norm
    0.01, head 1 to token 2 with norm 5. A mean of the heads' shares gives 0.5 and 0.5; the layer gives 0.002 and
    0.998."""
    a = torch.zeros(2, 3, 3)
    a[0, :, 1], a[1, :, 2] = 1, 1
    f = torch.zeros(2, 3, 4)  # (heads, T, C)
    f[0, :, 0], f[1, :, 1] = 0.01, 5.0
    assert norm_weighted(a, f.norm(dim=-1)).mean(0)[0].tolist() == pytest.approx([0, 0.5, 0.5])
    assert whole_layer_norm_weighting(a, f)[0].tolist() == pytest.approx([0, 0.01 / 5.01, 5 / 5.01])
    assert whole_layer_norm_weighting(a, f, normalise=False)[0].tolist() == pytest.approx([0, 0.01, 5.0])
    # one head: the layer measure is that head's shares
    torch.testing.assert_close(whole_layer_norm_weighting(a[:1], f[:1]), norm_weighted(a[:1], f[:1].norm(dim=-1))[0])
    with pytest.raises(ValueError, match="must match"):
        whole_layer_norm_weighting(a, f[:, :2])
    # the graph's "mean" of a norm-weighted layer is the layer measure (it keeps 2 -> only, at 2x uniform = 2/3)
    example = AttentionExample(sentence="a b c", tokens=list("abc"), word_ids=[0, 1, 2], attention=a[None].tolist(),
                               norm_weighted=norm_weighted(a, f.norm(dim=-1))[None].tolist(),
                               norm_weighted_layer=whole_layer_norm_weighting(a, f)[None].tolist())
    mean = [e for e in attention_graph(example, level="token", weighting="norm")["edges"] if e["head"] == "mean"]
    assert {(e["source"], e["target"]) for e in mean} == {(0, 2), (1, 2), (2, 2)}
    example.norm_weighted_layer = None  # an example without the layer measure: no "mean" rather than a wrong one
    assert not [e for e in attention_graph(example, level="token", weighting="norm")["edges"] if e["head"] == "mean"]


def test_attention_examples_keep_the_layer_norm_weighting(tokenizer):
    model = MinAttnModel(tiny_config(vocab_size=len(tokenizer))).eval()
    (example,), _ = attention_examples(model, tokenizer, ["the king and the queen ruled"])
    enc = tokenizer("the king and the queen ruled", return_tensors="pt")
    with torch.no_grad(), capture_attention_inputs(model) as inputs:
        att = model(**enc, output_attentions=True).attentions
        f = transformed_values(model, inputs)
    for layer in range(2):
        moved = torch.einsum("hij,hjc->ijc", att[layer][0], f[layer][0]).norm(dim=-1)  # (T, T)
        np.testing.assert_allclose(example.norm_weighted_layer[layer], moved / moved.sum(-1, keepdim=True), atol=2e-4)


def test_the_norm_example_figure_draws_the_layer_measure(monkeypatch):
    """The figure's bottom row is the layer's ||sum_h a_ij^h f_h(x_j)|| that probes.json keeps with the example; a file
    from before it was kept draws the heads' mean share, and says so."""
    import matplotlib.pyplot as plt

    from hf_minattn.probes.report import norm_weighting

    layer = [[[0.2, 0.8], [0.1, 0.9]]]  # (L, T, T)
    example = {"sentence": "a b", "tokens": ["a", "b"], "attention": [[[[0.5, 0.5], [0.5, 0.5]]] * 2],
               "norm_weighted": [[[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]]], "norm_weighted_layer": layer}
    monkeypatch.setattr(norm_weighting, "save_figure", lambda fig, path, figure_format=None: fig)
    fig = norm_weighting.attention_norm_example_plot(probe_results(heads={"examples": [example]}), "x.png")
    bottom = fig.axes[1]  # row 2 of a one-layer figure
    np.testing.assert_allclose(bottom.images[0].get_array(), layer[0])
    assert bottom.get_title() == "layer 0 norm-weighted"
    del example["norm_weighted_layer"]
    fig = norm_weighting.attention_norm_example_plot(probe_results(heads={"examples": [example]}), "x.png")
    np.testing.assert_allclose(fig.axes[1].images[0].get_array(), [[0.5, 0.5], [0.5, 0.5]])
    assert fig.axes[1].get_title() == "layer 0 heads' norm shares"
    plt.close("all")


def _heads_dict(previous_mass, punct_mass, entropy=(1.0, 2.0)):
    """probes.json's "heads" for one layer of two heads: head 0's masses as given, head 1 near uniform."""
    stats = {"previous": [[previous_mass, 0.1]], "punctuation": [[punct_mass, 0.1]], "entropy": [list(entropy)]}
    relative = {"previous": [[previous_mass / 0.04, 2.5]], "punctuation": [[punct_mass / 0.1, 1.0]]}
    roles = head_roles(stats, relative)
    return {"num_layers": 1, "num_heads": 2, "tokens": 40, "sentences": 4, "uniform_entropy": 2.5, "stats": stats,
            "relative_to_uniform": relative, "uniform_expectation": {"previous": 0.04, "punctuation": 0.1},
            "roles": roles.roles, "role_mass": roles.mass, "role_ratio": roles.ratio, "role_min_mass": ROLE_MIN_MASS,
            "js_divergence": [[0, 0.2], [0.2, 0]]}


def test_head_roles_sentence_follows_the_numbers():
    assert "most heads (2 of 2) give no single target 0.3 of their attention" in \
        head_roles_text(probe_results(heads=_heads_dict(0.25, 0.2)))
    text = head_roles_text(probe_results(heads=_heads_dict(0.45, 0.2)))
    assert "the commonest role is previous token (1 of 2 heads)" in text
    assert "1 previous token (strongest: head 0-0, mass 0.45 (11x uniform))" in text and "if that mass is >= 0.3" in text
    # punctuation's mass is larger though its ratio (5.5x) is below previous's (10x): punctuation wins
    assert "the commonest role is punctuation" in head_roles_text(probe_results(heads=_heads_dict(0.4, 0.55)))


def test_old_files_are_relabelled_by_mass():
    """A file from before roles were chosen by mass: 'cls (2.29x)' that was 6.8% of the head's attention."""
    old = {"num_heads": 1, "stats": {"cls": [[0.068]], "previous": [[0.05]]},
           "relative_to_uniform": {"cls": [[2.29]], "previous": [[1.2]]}, "roles": [["cls"]], "role_min_ratio": 2.0}
    text = head_roles_text(probe_results(heads=old))
    assert "1 no role (no target gets 0.3 of the attention)" in text and "[CLS]" not in text
    old["stats"]["cls"] = [[0.68]]
    assert "1 [CLS] (strongest: head 0-0, mass 0.68 (2.3x uniform))" in head_roles_text(probe_results(heads=old))


def test_heads_sentence_shows_mass_and_ratio_and_follows_the_entropy():
    text = heads_text(probe_results(heads=_heads_dict(0.45, 0.2)))
    assert "previous token: head 0-0, mass 0.45 (11x uniform)" in text and "punctuation: head 0-0, mass 0.20 (2.0x" in text
    assert "(focused attention on average)" in text
    assert "(broad attention on average)" in heads_text(
        probe_results(heads=_heads_dict(0.45, 0.2, entropy=(2.4, 2.3))))


def test_head_map_sentence_follows_the_numbers():
    layer = np.repeat(np.arange(3), 3)  # 3 layers of 3 heads: 280 ways to split them, so a block can be shown
    js = np.where(layer[:, None] == layer[None, :], 0.1, 0.5)
    np.fill_diagonal(js, 0)
    text = head_map_text(probe_results(heads={"num_layers": 3, "num_heads": 3, "js_divergence": js.tolist()}))
    assert "are closer (mean JS 0.100) than heads of different layers (0.500; one-sided permutation p 0.005" in text
    assert "Without layer 0: 0.100 within, 0.500 across, p 0.111" in text  # 2 layers of 3 heads: 10 splits
    assert "the clustering is not shown without it" in text
    apart = np.where(layer[:, None] == layer[None, :], 0.6, 0.1)  # every pair of a layer far apart
    np.fill_diagonal(apart, 0)
    assert "not shown to be closer" in head_map_text(
        probe_results(heads={"num_layers": 3, "num_heads": 3, "js_divergence": apart.tolist()}))
    two = {"num_layers": 2, "num_heads": 2, "js_divergence": [[0, .1, .5, .5], [.1, 0, .5, .5], [.5, .5, 0, .2],
                                                              [.5, .5, .2, 0]]}
    assert "not shown to be closer (mean JS 0.150) than heads of different layers (0.500; one-sided permutation p " \
           "0.3" in head_map_text(probe_results(heads=two))  # 4 heads: 3 ways to split them, too few to show it


def test_norm_weighting_sentence_follows_the_numbers():
    h = {"stats": {"cls": [[0.6]], "sep": [[0.1]]}, "norm_weighted_stats": {"cls": [[0.1]], "sep": [[0.1]]}}
    assert "[CLS] falls from 0.60 to 0.10" in norm_weighting_text(probe_results(heads=h))
    h["norm_weighted_stats"]["cls"] = [[0.9]]
    assert "[CLS] rises from 0.60 to 0.90" in norm_weighting_text(probe_results(heads=h))


def test_ablation_sentence_follows_the_numbers():
    a = {"num_heads": 2, "base_loss": 5.0, "masked_tokens": 10, "sentences": 2, "loss_increase": [[0.5, 0.0]],
         "interval95": [[0.1, 0.1]], "mlm_probability": 0.3}
    assert "1 of 2 heads raise the loss beyond" in head_ablation_text(probe_results(head_ablation=a))
    assert "(masking rate 0.3); zeroing head 0-0 raises it most" in head_ablation_text(probe_results(head_ablation=a))
    a["loss_increase"] = [[0.05, 0.0]]
    assert "No single head" in head_ablation_text(probe_results(head_ablation=a))
    # the costliest head's role is named: a head with no role can matter
    text = head_ablation_text(probe_results(head_ablation=a, heads=_heads_dict(0.2, 0.1)))
    assert "zeroing head 0-0 (role: no role (no target gets 0.3 of the attention)) raises" in text
    text = head_ablation_text(probe_results(head_ablation=a, heads=_heads_dict(0.6, 0.1)))
    assert "zeroing head 0-0 (role: previous token) raises" in text


def test_norm_example_sentence_follows_the_numbers():
    r = {"attention_graph": {"edges": [1, 2, 3]}, "attention_graph_norm_weighted": {"edges": [1]}}
    assert "fewer edges" in attention_norm_example_text(probe_results(**r))
    r["attention_graph_norm_weighted"]["edges"] = [1, 2, 3, 4]
    assert "more edges" in attention_norm_example_text(probe_results(**r))


@pytest.mark.slow
def test_run_all_probes_writes_the_new_keys(tmp_path, tokenizer):
    import json

    from hf_minattn.probes.corpus import split_sentences
    from hf_minattn.probes.loading import load_encoder
    from hf_minattn.probes import ProbeSettings, run_all_probes

    MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer))).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, tok = load_encoder(str(tmp_path))  # the base model: the masked LM is loaded from the folder for ablation
    settings = ProbeSettings(min_count=2, word2vec=False, decontextualized=False, weights=False)
    results = run_all_probes(model, tok, split_sentences(TEXTS, max_sentences=0), settings, model_path=str(tmp_path),
                             log=lambda m: None)
    d = json.loads(json.dumps(results.to_dict(), allow_nan=False))
    assert np.array(d["head_ablation"]["loss_increase"]).shape == (2, 4)
    lens = d["logit_lens"]  # the ablation's masks: its last layer is the ablation's intact loss
    assert len(lens["loss"]) == 3 and lens["masked_tokens"] == d["head_ablation"]["masked_tokens"]
    assert lens["loss"][-1] == pytest.approx(d["head_ablation"]["base_loss"], abs=1e-5)
    assert len(d["circuits"]["identity"]) == 4 and d["circuits"]["ov_copying"] is not None  # the masked LM's W_U
    assert 0 < d["sense_accuracy"]["chance"] < 1
    assert d["geometry"]["static"]["self_similarity"] == pytest.approx(1, abs=1e-5)
    h = d["heads"]
    assert h["role_min_mass"] == 0.3 and np.array(h["roles"]).shape == (2, 4)
    assert np.array(h["role_mass"], dtype=object).shape == np.array(h["role_ratio"], dtype=object).shape == (2, 4)
    assert all((m is None) == (role == "none") for row_r, row_m in zip(h["roles"], h["role_mass"])
               for role, m in zip(row_r, row_m))
    assert d["attention_graph_norm_weighted"]["weighting"] == "norm" and d["heads"]["relative_to_uniform"]
    assert d["attention_graph"]["relative_threshold"] == 2.0  # old key kept, threshold now relative to 1/n
    no_head = run_all_probes(model, tok, split_sentences(TEXTS, max_sentences=0), settings, log=lambda m: None)
    assert no_head.head_ablation is None and any("head ablation skipped" in n for n in no_head.notes)
    assert no_head.logit_lens is None and any("logit lens skipped" in n for n in no_head.notes)
