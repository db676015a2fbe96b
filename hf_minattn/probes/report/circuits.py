"""Layer 0's circuits token by token: what makes layer 0's heads attend to a token? Each head's query-key logits
against the embedding similarity, co-occurrence and its initial form; its OV circuit copying or not."""

import re
import matplotlib.pyplot as plt
import numpy as np

from ..plots import save_figure
from .page import Section
from .words import interval_text


def _rho(interval):
    """ "ρ = 0.62 [0.55, 0.70]" from an Interval dict (None: a constant form gave no correlation)."""
    if interval["estimate"] is None or interval["low"] is None:
        return "ρ undefined"
    # a bound near 0 printed as 0.00 beside "partly follow", or near CIRCUIT_FOLLOWS as 0.50 beside "reproduce"
    return "ρ = " + interval_text(interval["estimate"], interval["low"], interval["high"], (0.0, CIRCUIT_FOLLOWS))


def _above(interval, bound):
    return interval is not None and interval["low"] is not None and interval["low"] > bound


def _split_sentences(text):
    """The sentences of `text` (a sentence ends with a full stop before a capital letter)."""
    return re.split(r"(?<=\.)\s+(?=[A-Z])", text.strip())


def _sentences(text, n):
    """The first `n` sentences of `text`."""
    return " ".join(_split_sentences(text)[:n])


CIRCUIT_FOLLOWS = 0.5  # identity interval's low end above this: W_Q/W_K reproduce the embedding similarity


OV_COPIES = 0.5  # copying score above this (and below -this: suppresses)


OV_SELF_RANK = 0.1  # ... with a token's own logit ranked within this fraction of chance, (N + 1) / 2


def _circuit_head(c, h):
    """What the numbers say of layer 0's head `h`: {"qk": "reproduces" / "partly" / "constant" / "other" / None (no QK
    scores: queries and keys normalised per head), "cooccurrence": bool, "initial": bool, "ov": "copies" / "leans" /
    "suppresses" / "none" / None (no OV scores)}; "leans": a copying score above OV_COPIES whose token's own logit
    still ranks too far down to call it copying."""
    identity = c.identity[h] if c.identity else None
    if identity is None:
        qk = None
    elif _above(identity, CIRCUIT_FOLLOWS):
        qk = "reproduces"
    elif _above(identity, 0):
        qk = "partly"
    elif identity["low"] is None:  # NaN in the probe: a head whose logits are all equal
        qk = "constant"
    else:
        qk = "other"
    initial = (c.initial or [None] * (h + 1))[h]
    copying = (c.ov_copying or [None] * (h + 1))[h]
    ov = None
    if copying is not None:
        chance = (len(c.token_ids) + 1) / 2
        if copying > OV_COPIES and c.ov_self_rank[h] < OV_SELF_RANK * chance:
            ov = "copies"
        elif copying > OV_COPIES:
            ov = "leans"
        elif copying < -OV_COPIES:
            ov = "suppresses"
        else:
            ov = "none"
    # "mostly" its initial form: a strong correlation with it (as "reproduce" is for the identity), above the
    # identity one; a correlation near 0 with both is neither
    return {"qk": qk, "cooccurrence": _above((c.cooccurrence or [None] * (h + 1))[h], 0),
            "initial": identity is not None and identity["high"] is not None
            and _above(initial, max(identity["high"], CIRCUIT_FOLLOWS)),
            "ov": ov}


def head_kinds(c):
    """`_circuit_head` for every head of `c` (a Circuits, SavedCircuits or anything with their fields)."""
    return [_circuit_head(c, h) for h in range(c.num_heads)]


def circuits_text(r):
    """One sentence per head of layer 0, each chosen by its numbers: its QK logits against the embedding similarity
    (the identity hypothesis), co-occurrence and its initial form; its OV circuit copying, suppressing or neither.
    Then what the tokens and positions were (the probe's note)."""
    c = r.circuits
    N = len(c.token_ids)
    chance = (N + 1) / 2
    sentences = [f"Layer 0 on {N} tokens: Spearman's ρ (95% bootstrap interval over tokens) of each "
                 "head's query-key logits with the embedding similarity (what W_Q = W_K = I would give), with "
                 "co-occurrence and with the same head at initialisation" if c.identity else
                 f"Layer 0 on {N} tokens: no query-key scores (see below)"]
    sentences[0] += ("; the OV circuit's copying score is in [-1, 1]." if c.ov_copying else
                     "; no OV scores: the model has no unembedding W_U.")
    for h in range(c.num_heads):
        kind = _circuit_head(c, h)
        identity = c.identity[h] if c.identity else None
        if kind["qk"] is None:
            text = f"Head {h}: no query-key score"
        elif kind["qk"] == "reproduces":
            text = f"Head {h}'s W_Q/W_K reproduce the embedding similarity ({_rho(identity)})"
        elif kind["qk"] == "partly":
            text = f"Head {h}'s W_Q/W_K partly follow the embedding similarity ({_rho(identity)})"
        elif kind["qk"] == "constant":
            text = f"Head {h}'s logits are constant: no ranking to compare with embedding similarity"
        elif identity["high"] >= 0:
            text = (f"Head {h}'s query-key logits are not shown to follow embedding similarity ({_rho(identity)}: the "
                    "interval includes 0)")
        else:
            text = f"Head {h}'s query-key logits rank token pairs against embedding similarity ({_rho(identity)})"
        if kind["cooccurrence"]:
            text += (f"{' and' if kind['qk'] in ('reproduces', 'partly') else '; it does follow'} words that occur "
                     f"together ({_rho(c.cooccurrence[h])})")
        if kind["initial"]:
            text += f"; its QK form is still mostly its initial random form ({_rho(c.initial[h])} with it)"
        if kind["ov"] is not None:
            numbers = (f"score {c.ov_copying[h]:.2f}, a token's own logit ranked {c.ov_self_rank[h]:.1f} of {N} "
                       f"on average, chance {chance:.1f}")
            text += {"copies": "; its OV circuit copies: a token it attends to raises that token's own logit",
                     "leans": "; its OV circuit leans to copying, but a token's own logit does not rank near the top",
                     "suppresses": "; its OV circuit suppresses: a token it attends to lowers its own logit",
                     "none": "; its OV circuit neither copies nor suppresses"}[kind["ov"]] + f" ({numbers})"
        sentences.append(text + ".")
    # the note's first three sentences: which tokens, what layer 0 reads (X = LN(E[t])) and what of positions; then
    # where W_U comes from, which the OV scores rest on
    ov_source = [x for x in _split_sentences(c.note) if x.startswith("OV:")]
    return " ".join(sentences) + " " + _sentences(c.note, 3) + "".join(" " + x for x in ov_source[:1] if c.ov_copying)


def circuits_headline(r):
    """How many heads of layer 0 choose by embedding similarity (interval above 0), how many clearly (above
    CIRCUIT_FOLLOWS), how many against it (interval below 0); how many OV circuits copy, and where a leaning head's own
    token ranks."""
    c = r.circuits
    kinds = head_kinds(c)
    against = sum(k["qk"] == "other" and c.identity[h]["high"] < 0 for h, k in enumerate(kinds)) if c.identity else None
    ranks = [c.ov_self_rank[h] for h, k in enumerate(kinds) if k["ov"] == "leans"]
    return headline_text(**head_counts(c), against=against, lean_ranks=ranks, tokens=len(c.token_ids))


def head_counts(c):
    """{"heads", "follow" (interval above 0), "closely" (above CIRCUIT_FOLLOWS), "copies", "leans" (None: no OV
    scores)}."""
    kinds = head_kinds(c)
    qk = bool(c.identity)
    return {"heads": c.num_heads, "follow": sum(k["qk"] in ("reproduces", "partly") for k in kinds) if qk else None,
            "closely": sum(k["qk"] == "reproduces" for k in kinds) if qk else None,
            "copies": sum(k["ov"] == "copies" for k in kinds) if c.ov_copying else None,
            "leans": sum(k["ov"] == "leans" for k in kinds) if c.ov_copying else None}


def headline_text(heads, follow, closely, copies, leans=None, against=None, lean_ranks=None, tokens=None):
    """The sentence of `head_counts` (`leans` None: counts stored before that tier, not said; `follow` None: no QK
    scores). `against`: how many heads' intervals lie below 0, said where counted ("positively" then tells the two
    apart); `lean_ranks`, `tokens`: the own-token ranks of the leaning heads, of `tokens`, said where given."""
    negative = (f", and those of {against} negatively (interval{'s' if against > 1 else ''} below 0)" if against
                else "")
    if follow is None:
        text = "In layer 0, no head's query-key logits are scored (queries and keys are normalised per head)"
    elif follow:
        text = (f"In layer 0, the query-key logits of {follow} of {heads} heads correlate "
                f"{'positively ' if against is not None else ''}with how similar the token embeddings are"
                + (f" ({closely} closely)" if closely else f" (weakly: no interval above {CIRCUIT_FOLLOWS})")
                + negative)
    else:
        text = (f"In layer 0, the query-key logits of none of the {heads} heads are shown to follow embedding "
                "similarity (every interval includes 0 or is below it" + (f": {against} below" if against else "")
                + ")")
    if copies is not None:
        text += (f"; {copies} of {heads} copy the token they attend to into their output" if copies else
                 "; none copies the token it attends to into its output")
        if leans:
            ranks = (f", {' and '.join(f'{x:.0f}' for x in lean_ranks)} of {tokens} on average" if lean_ranks and tokens
                     else "")
            text += (f" ({leans} more lean{'s' if leans == 1 else ''} to it: high copying scores, but a token's own "
                     f"logit does not rank near the top{ranks})")
    return text + "."


def circuits_table(r):
    """{header, rows}: the circuits' numbers per head, for the report's table."""
    c = r.circuits

    def rho(key, h):
        values = getattr(c, key)
        return "-" if not values else _rho(values[h]).removeprefix("ρ = ")

    def number(key, h, fmt):
        values = getattr(c, key)
        return "-" if not values or values[h] is None else format(values[h], fmt)

    return {"header": ["head", "ρ identity", "ρ co-occurrence", "ρ initial", "QK positive share", "QK self rank",
                       "OV copying", "OV self rank"],
            "rows": [[h, rho("identity", h), rho("cooccurrence", h), rho("initial", h), number("qk_positive", h, ".2f"),
                      number("qk_self_rank", h, ".1f"), number("ov_copying", h, ".2f"), number("ov_self_rank", h, ".1f")]
                     for h in range(c.num_heads)]}


CIRCUIT_HYPOTHESES = (("identity", "embedding similarity (W_Q = W_K = I)"), ("cooccurrence", "co-occurrence (PPMI)"),
                      ("initial", "initial form"))


def plot_circuits(circuits, path, figure_format=None):
    """Layer 0's circuits (a circuits.Circuits, or results.SavedCircuits as saved: the same fields), grouped bars per head: Spearman's rho of
    the QK form with each hypothesis and its 95% interval (left), the OV copying score and the QK form's positive
    eigenvalue share (right)."""
    if not circuits:
        return None
    c = circuits
    heads = np.arange(c.num_heads)
    fig, (rho, scores) = plt.subplots(1, 2, figsize=(max(10, 1.2 * len(heads) + 4), 3.8))
    shown = [(key, label) for key, label in CIRCUIT_HYPOTHESES if getattr(c, key)]
    width = 0.8 / max(len(shown), 1)
    for k, (key, label) in enumerate(shown):
        values = [[np.nan if i[f] is None else i[f] for f in ("estimate", "low", "high")] for i in getattr(c, key)]
        estimate, low, high = np.array(values, dtype=float).T  # (H,) each
        rho.bar(heads + (k - (len(shown) - 1) / 2) * width, estimate, width, label=label,
                yerr=[estimate - low, high - estimate], capsize=2)
    rho.set_ylim(-1, 1)
    rho.set_ylabel("Spearman's rho with the QK logits")
    rho.set_title(f"layer 0, {len(c.token_ids)} tokens (95% bootstrap over tokens)", fontsize=10)
    if shown:  # none where the model has no QK scores
        rho.legend(fontsize=7)
    shown = [(key, label) for key, label in (("ov_copying", "OV copying score"),
                                            ("qk_positive", "QK positive eigenvalue share")) if getattr(c, key)]
    width = 0.8 / max(len(shown), 1)
    for k, (key, label) in enumerate(shown):
        scores.bar(heads + (k - (len(shown) - 1) / 2) * width, [np.nan if v is None else v for v in getattr(c, key)], width,
                   label=label)
    scores.set_ylim(-1, 1)
    scores.set_title("1: copies / positive definite; -1: suppresses / negative", fontsize=10)
    scores.legend(fontsize=7)
    for ax in (rho, scores):
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(heads)  # whole heads
        ax.set_xlabel("head")
    return save_figure(fig, path, figure_format)


def circuits_tables(r):
    return [circuits_table(r)]


def circuits_plot(r, path, figure_format=None):
    """The section's figure."""
    return plot_circuits(r.circuits, path, figure_format)


SECTION = Section(
    name="circuits", title="Layer 0's circuits token by token: embedding similarity, co-occurrence, initialisation",
    needs="circuits", question="What makes layer 0's heads attend to a token?",
    reads="results", headline=circuits_headline, text=circuits_text, tables=circuits_tables, figure=circuits_plot,
    alt="Grouped bars per head of layer 0: Spearman correlation of its query-key logits with the embedding "
        "similarity, co-occurrence and its initial form, with 95% intervals (left); OV copying score and positive "
        "eigenvalue share of the QK form, between -1 and 1 (right)")
