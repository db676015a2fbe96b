"""Per-head ablation: which heads does the model need? The loss increase (masked-LM or next-token) when one head is
zeroed."""

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from ...stats import holm
from ..plots import layer_by_head, save_figure
from .head_roles import ROLE_LABELS, role_label, saved_roles
from .page import Section
from .words import apart, predicted


def _ablation(r):
    """(inc, ci, k, beyond, role, min_mass): loss increases and 95% half-widths per head, the costliest head k =
    layer * H + head, how many heads raise the loss beyond their interval, and k's role with the mass roles need
    (None, None without the heads probe: a head with no role can still matter)."""
    ablation = r.head_ablation
    inc, ci = np.array(ablation.loss_increase), np.array(ablation.interval95)
    k = int(np.argmax(inc))
    role = min_mass = None
    if r.heads:
        roles, _, _, min_mass = saved_roles(r.heads)
        H = ablation.num_heads
        role = roles[k // H][k % H]
    return inc, ci, k, int(np.sum(inc - ci > 0)), role, min_mass


def _nats(increase, interval, spread=True) -> str:
    """"+0.08 ± 0.02 nats" (`spread`; else "+0.08 nats"): at 2 decimals, or more where the interval excludes 0 and a
    bound would print as 0 ("+0.00 nats" beside "raises it")."""
    d = apart(increase - interval, increase + interval)
    return f"{increase:+.{d}f}" + (f" ± {interval:.{d}f}" if spread else "") + " nats"


def _lowering(inc, ci, H) -> str:
    """"; zeroing head 1-1 (-0.08 ± 0.02 nats) lowers it beyond its 95% interval": the heads whose interval lies wholly
    below 0 (the model does better without them on these tokens), or "" where none does."""
    below = [int(k) for k in np.flatnonzero(np.ravel(inc + ci) < 0)]
    if not below:
        return ""
    heads = ", ".join(f"{k // H}-{k % H} ({_nats(inc.flat[k], ci.flat[k])})" for k in below)
    return (f"; zeroing head{'s' if len(below) > 1 else ''} {heads} lowers it beyond "
            f"{'their' if len(below) > 1 else 'its'} 95% interval")


def _costliest(largest) -> str:
    """What zeroing the costliest head does, by the sign of its increase: where no head raises the loss, the
    costliest one only lowers it least (or leaves it unchanged), and "raises it most" would misstate it."""
    if largest > 0:
        return "raises it most"
    return "lowers it least (no head raises it)" if largest < 0 else "leaves it unchanged (no head raises it)"


def holm_count(inc, ci) -> int:
    """How many heads raise the loss with Holm's adjustment over all heads: each head's two-sided normal p from its
    increase and 95% half-width (the probe's interval treats the masked tokens as independent)."""
    se = np.clip(np.ravel(ci), 1e-12, None) / stats.norm.ppf(0.975)
    p = np.nan_to_num(2 * stats.norm.sf(np.abs(np.ravel(inc)) / se), nan=1.0)  # an undefined interval: no evidence
    return int(sum(a < 0.05 and x > 0 for a, x in zip(holm(p.tolist()), np.ravel(inc))))


def head_ablation_text(r):
    ablation = r.head_ablation
    inc, ci, k, beyond, role, min_mass = _ablation(r)
    H = ablation.num_heads
    # The lowering heads are reported whichever way the verdict goes: a head can lower the loss while others raise it.
    held = holm_count(inc, ci)
    if not beyond:
        verdict = "No single head raises the loss beyond its 95% interval: none is shown to be needed alone"
    else:
        verdict = (f"{beyond} of {inc.size} heads raise the loss beyond their 95% interval, each read alone, and "
                   f"{held} with Holm's adjustment over the {inc.size} heads: "
                   + ("none is shown to be needed once they are tested together" if not held else
                      f"removing {'it' if held == 1 else 'those'} costs the model"
                      + ("" if held == beyond else f"; the other {beyond - held}, read alone only, are not shown to")))
    verdict += _lowering(inc, ci, H)
    rate, words = ablation.mlm_probability, predicted(ablation)
    role = f" (role: {role_label(role, min_mass)})" if role else ""
    loss = words["loss"][:1].upper() + words["loss"][1:]
    return (f"{loss} {ablation.base_loss:.3f} nats on {ablation.masked_tokens} {words['tokens']} "
            f"of {ablation.sentences} sentences{f' (masking rate {rate:g})' if rate is not None else ''}; zeroing head "
            f"{k // H}-{k % H}{role} {_costliest(inc.flat[k])}, by {inc.flat[k]:.3f} ± {ci.flat[k]:.3f} nats. "
            f"{verdict}.")


def head_ablation_headline(r):
    inc, ci, k, beyond, role, _ = _ablation(r)
    H = r.head_ablation.num_heads
    head = f"head {k // H}-{k % H}" + (f" ({ROLE_LABELS.get(role, 'no clear role')})" if role else "")
    word, held = predicted(r.head_ablation)["word"], holm_count(inc, ci)
    if beyond and not held:
        return (f"No single head is shown to be needed on its own at this scale: {beyond} of {inc.size}, zeroed, raise "
                f"the {word} loss beyond their 95% interval each read alone, none after Holm's adjustment over the "
                f"{inc.size} (largest rise {_nats(inc.flat[k], ci.flat[k])}, {head}){_lowering(inc, ci, H)}.")
    if beyond:
        return (f"{held} of {inc.size} heads matter on their own after Holm's adjustment over the {inc.size} ({beyond} "
                f"read alone): zeroing one raises the {word} loss beyond its 95% interval; the costliest is "
                f"{head}, {_nats(inc.flat[k], ci.flat[k], spread=False)}{_lowering(inc, ci, H)}.")
    return (f"No single head is shown to be needed on its own at this scale: no head, zeroed, raises the {word} loss "
            f"beyond its 95% interval (largest rise {_nats(inc.flat[k], ci.flat[k])}, {head})"
            f"{_lowering(inc, ci, H)}.")


def head_ablation_tables(r):
    inc, ci, _, _, _, _ = _ablation(r)
    H = r.head_ablation.num_heads
    roles = saved_roles(r.heads) if r.heads else None

    def row(k):
        role = ROLE_LABELS.get(roles[0][k // H][k % H], "no role") if roles else "-"
        return [f"{k // H}-{k % H}", role, f"{inc.flat[k]:+.3f}", f"{ci.flat[k]:.3f}",
                "yes" if inc.flat[k] - ci.flat[k] > 0 else "no"]

    header = ["head", "role", "loss increase (nats)", "± 95%", "beyond its interval"]
    order = [int(k) for k in np.argsort(-inc, axis=None)]
    return [{"header": header, "rows": [row(k) for k in order[:5]]},
            {"header": header, "rows": [row(k) for k in range(inc.size)], "details": True}]


def head_ablation_plot(r, path, figure_format=None):
    ablation = r.head_ablation
    if not ablation:
        return None
    values = np.array(ablation.loss_increase)
    fig, ax = plt.subplots(figsize=(0.6 * ablation.num_heads + 2.5, 0.5 * ablation.num_layers + 1.8))
    bound = max(float(np.abs(values).max()), 1e-6)
    layer_by_head(fig, ax, values, f"{predicted(ablation)['loss']} increase when one head is zeroed (base "
                   f"{ablation.base_loss:.3f} nats)", cmap="RdBu_r", vmin=-bound, vmax=bound)
    for (layer, head), v in np.ndenumerate(values):
        ax.text(head, layer, f"{v:.3f}", ha="center", va="center", fontsize=6)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="head_ablation", title="Per-head ablation", needs="head_ablation", question="Which heads does the model need?",
    reads="results",
    headline=head_ablation_headline, text=head_ablation_text, tables=head_ablation_tables, figure=head_ablation_plot,
    alt="Heat map over layer and head: the loss increase (masked-LM, or next-token for a decoder) when that head is "
        "zeroed")
