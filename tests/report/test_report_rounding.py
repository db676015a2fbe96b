"""A number printed beside a verdict never contradicts it by its rounding: an interval that excludes 0 (or chance)
prints its nearest bound apart from it, and a p below 0.05 never prints as 0.05 (found by review: "+0.00 nats"
beside "raises it", "[0.50, 0.60]" beside "above chance 0.50", "p 0.05" beside a significant Yes)."""

from conftest import probe_results

from hf_minattn.experiments.findings_format import p_value
from hf_minattn.probes.report.benchmark import _delta
from hf_minattn.probes.report.circuits import _rho
from hf_minattn.probes.report.head_ablation import head_ablation_headline, head_ablation_text
from hf_minattn.probes.report.sense_accuracy import _accuracy
from hf_minattn.probes.report.words import apart, p_text, signed_interval
from hf_minattn.stats import Interval


def test_an_interval_prints_apart_from_what_it_excludes():
    assert apart(0.503, 0.6, 0.5) == 3 and apart(0.49, 0.6, 0.5) == 2  # includes it: the decimals asked for
    assert apart(-0.004, -0.0001, 0.0) == 4  # up to `most`
    assert apart(0.2, 0.3) == 2
    assert signed_interval(0.01, 0.004, 0.02) == "+0.010 [+0.004, +0.020]"
    assert _delta(Interval(0.01, 0.004, 0.02, 5)) == "Δρ +0.010 [+0.004, +0.020]"  # "[+0.00, +0.02]" beside "higher"
    assert _rho({"estimate": 0.01, "low": 0.003, "high": 0.02}) == "ρ = 0.010 [0.003, 0.020]"
    assert _rho({"estimate": 0.4, "low": 0.3, "high": 0.5}) == "ρ = 0.40 [0.30, 0.50]"
    assert _rho({"estimate": 0.6, "low": 0.5004, "high": 0.7}) == "ρ = 0.6000 [0.5004, 0.7000]"  # "reproduce": > 0.5
    assert _accuracy(0.55, {"low": 0.503, "high": 0.6}, 0.5) == "0.550 [0.503, 0.600]"


def test_a_p_below_the_threshold_never_prints_at_it():
    assert p_text(0.049975) != "0.05" and float(p_text(0.049975)) < 0.05
    assert p_text(0.05) == "0.05" and p_text(0.0500001) == "0.05" and p_text(0.123456) == "0.123"
    assert p_value(0.0498) == "0.0498" and p_value(0.049975) != "0.05" and p_value(0.5) == "0.5"


def test_a_head_that_raises_the_loss_by_less_than_a_hundredth_is_printed_so():
    r = probe_results(head_ablation={"num_heads": 2, "base_loss": 5.0, "masked_tokens": 10, "sentences": 2,
                                     "loss_increase": [[0.004, -0.004]], "interval95": [[0.003, 0.003]],
                                     "mlm_probability": 0.3})
    text = head_ablation_text(r) + head_ablation_headline(r)
    assert "+0.004 nats" in text and "(-0.004 ± 0.003 nats) lowers it" in text
    assert "+0.00 nats" not in text and "-0.00 ±" not in text
