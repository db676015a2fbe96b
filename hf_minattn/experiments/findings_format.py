"""How FINDINGS.md prints a stored number: 3 significant digits (p-values 2), intervals as "estimate [low, high]",
and each tested comparison as a table row with its df, its p-value labelled by what it is (Holm-adjusted within a
family of k tests, or one test alone, unadjusted) and its verdict. Nothing is computed here: every number printed
is one in results.json, rounded for reading."""

from ..probes.report.words import p_text
from . import statistics as st
from .word_pairs import HIERARCHICAL_WIDENING, holds_widened

P_FLOOR = 0.0001  # results.json stores p-values at 4 decimals: a stored 0.0 is below this


def num(x, digits: int = 3) -> str:
    """`x` at `digits` significant digits (integers, and the integer part of large numbers, in full); "n/a" for None."""
    if x is None:
        return "n/a"
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:.0f}"
    text = f"{x:.{digits}g}"
    if "e" in text:  # below 1e-4: print the decimals in full
        text = f"{x:.{digits - 1 - int(f'{abs(x):e}'.split('e')[1])}f}"
    return text


def block_output(block: int) -> int:
    """The layer, numbered as Q5, Q6 and the logit lens number hidden states (0 = the embedding output), that block
    `block` (0-based, as rollout and the attention graphs index blocks) outputs."""
    return block + 1


def pct(x) -> str:
    return "n/a" if x is None else f"{num(x)}%"


def ci(d: dict | None, unit: str = "") -> str:
    """"estimate [low, high]" of a stored interval ("n/a" when there is none)."""
    if d is None:
        return "n/a"
    return f"{num(d['estimate'])}{unit} [{num(d['low'])}, {num(d['high'])}]"


def p_value(p) -> str:
    """A stored p at 2 significant digits, never rounded across the 0.05 threshold the verdicts use: a p below it
    takes more digits until it prints below it (0.04996 as "0.04996", not "0.05"), and a p at or above it never
    prints below it."""
    if p is None:
        return "-"
    if p < P_FLOOR:
        return f"< {P_FLOOR}"
    return p_text(p, 2, st.ALPHA)


def p_cell(d: dict | None) -> str:
    """The p of a stored comparison, labelled honestly: Holm-adjusted within its family of k tests, or a test alone;
    a seed level decided at rendering (`statistics.seed_levels`) prints its stored p, the one before Holm's
    adjustment (its verdict reads the adjusted one)."""
    k = (d or {}).get("family_size") or 1
    if d and d.get("level") == "seeds" and d.get("p") is not None:
        return f"{p_value(d['p'])} (" + (f"before Holm's adjustment for {k} tests)" if k > 1 else "one test, unadjusted)")
    if not d or d.get("p_holm") is None:
        return "-"
    return f"{p_value(d['p_holm'])} (Holm, {k} tests)" if k > 1 else f"{p_value(d['p_holm'])} (one test, unadjusted)"


def df_cell(d: dict | None) -> str:
    if not d:
        return "-"
    if d.get("method", "t") != "t":
        return {"bootstrap": "bootstrap over items"}.get(d["method"], f"{d['method']} bootstrap")
    return "-" if d.get("df") is None else str(d["df"])


def verdict_cell(d: dict | None, tost_interval: bool = False) -> str:
    """A tested comparison's verdict; a bare interval says only where it lies against 0. `tost_interval`: an
    equivalence with the 90% interval its TOST test decided on (a table prints the 95% one beside it, which may leave
    the margins)."""
    if not d:
        return "-"
    if "verdict" in d:
        word = {"higher": "higher", "lower": "lower", "equivalent": f"equivalent within ±{num(d.get('margin'))}",
                "unresolved": "not resolved"}[d["verdict"]]
        tost = d.get("tost") or {}
        if tost_interval and d["verdict"] == "equivalent" and None not in (tost.get("low"), tost.get("high")):
            word += f" (90% [{num(tost['low'])}, {num(tost['high'])}])"
        return word if holds_widened(d) else f"{word}, not if {HIERARCHICAL_WIDENING}x as wide"
    # a bare interval has no p beside it: the cell describes where the printed interval lies, not a test's outcome
    # (`st.sign` would read a zero-width [1, 1] of 5 seeds, a value fixed by construction, as the sign test does:
    # not above 0); one seed still says nothing, and the cell says so (its [x, x] beside "includes 0" was read as 0)
    if d["n"] < 2:
        return "one seed: no interval"
    side = 1 if d["low"] > 0 else -1 if d["high"] < 0 else 0
    return {1: "above 0", -1: "below 0", 0: "includes 0"}[side]


def row_cells(d: dict) -> list[str]:
    """A comparison's cells in a table: estimate, 95% interval, df, p, verdict (an equivalence with its 90%)."""
    return [num(d["estimate"]), f"[{num(d['low'])}, {num(d['high'])}]", df_cell(d), p_cell(d),
            verdict_cell(d, tost_interval=True)]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table, preceded by a blank line."""
    return ["", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def comparisons_table(rows: list[tuple[str, dict | None]], unit: str = "") -> list[str]:
    """One row per (what, stored interval or comparison): estimate, 95% interval, df, p, verdict."""
    kept = [(label, d) for label, d in rows if d is not None]
    if not kept:
        return []
    return table([f"comparison{f' ({unit})' if unit else ''}", "estimate", "95% interval", "df", "p", "verdict"],
                 [[label, *row_cells(d)] for label, d in kept])


SEEDS_ALONE = "the same, seeds alone"


def family_rows(family: dict, named) -> list[tuple[str, dict | None]]:
    """(label, comparison) rows of one Holm family from its (name, label) pairs, each crossed comparison followed by
    its seed level (`statistics.seed_levels`), so that both levels are printed (PROTOCOL.md, section 5)."""
    levels = st.seed_levels(family)
    rows = []
    for name, label in named:
        rows.append((label, family.get(name)))
        if name in levels:
            rows.append((SEEDS_ALONE, levels[name]))
    return rows


def details(summary: str, lines: list[str]) -> list[str]:
    """A collapsed block (GitHub renders Markdown inside it after a blank line)."""
    return ["", "<details>", f"<summary>{summary}</summary>", "", *lines, "", "</details>"]


def caveat(d: dict | None) -> str:
    """What a verdict's word leaves out that its own numbers show, as " (...)"; "" where nothing is left out:
    - a difference smaller than its margin: "higher"/"lower" whose TOST test also finds it within the margin;
    - an unresolved difference whose unadjusted 95% interval excludes 0: Holm's adjustment decided it, or (a test
      alone) its p, which for a crossed comparison is also the seeds' t-test's."""
    if not d or "verdict" not in d or d.get("low") is None or d.get("high") is None:
        return ""
    if d["verdict"] in ("higher", "lower") and (d.get("tost") or {}).get("equivalent"):
        return f" (by less than the ±{num(d['margin'])} margin: a TOST test puts the difference inside it)"
    alone = _excludes_zero_alone(d) if (d.get("p") or 0) >= st.ALPHA else ""  # its p, the reason it gives
    held_back = (not_called(d) or alone) if d["verdict"] == "unresolved" else ""
    return f" ({held_back})" if held_back else ""


def not_called(d: dict) -> str:
    """Why a comparison whose unadjusted 95% interval excludes 0 was not called a difference, within a family of k > 1
    tests: Holm's adjustment, or its own p not reaching 0.05; "" where its interval includes 0 or it stands alone."""
    k = d.get("family_size") or 1
    if d.get("low") is None or d.get("high") is None or not (d["low"] > 0 or d["high"] < 0) or k == 1:
        return ""
    if d.get("p") is not None and d["p"] >= st.ALPHA:  # a percentile interval and its p can part at the boundary
        return (f"its unadjusted 95% interval excludes 0, but its p does not reach {num(st.ALPHA)}: "
                f"{p_value(d['p'])} before Holm's adjustment for {k} tests, {p_value(d.get('p_holm'))} after")
    # a seed level decided at rendering has no stored adjusted p
    after = f"leaves p {p_value(d['p_holm'])}" if d.get("p_holm") is not None else f"takes its p to {num(st.ALPHA)} or more"
    return f"its unadjusted 95% interval excludes 0, but Holm's adjustment for {k} tests {after}"


def too_narrow(d: dict) -> str:
    """Why a hierarchical word-pair verdict is not stated (word_pairs.holds_widened), for a sentence."""
    if d.get("verdict") == "equivalent":
        return f"whose 90% interval {HIERARCHICAL_WIDENING}x as wide would leave the ±{num(d['margin'])} margins"
    return f"which would reach 0 if {HIERARCHICAL_WIDENING}x as wide"


def compared(diff: dict, worse: str, same: str, better: str, unresolved: str | None = None) -> str:
    """The phrase for a stored comparison a - b by its verdict: "higher" (a worse), "lower" (a better), "equivalent"
    (`same`, with the TOST margin), "unresolved" (`unresolved`, default: `same` is NOT claimed, the data cannot tell).
    A hierarchical word-pair verdict that a wider interval would not keep is given as unresolved, saying why."""
    verdict = st.verdict(diff)
    if not holds_widened(diff):
        phrase = {"higher": worse, "lower": better, "equivalent": same}[verdict]
        return f"{unresolved or 'not resolved at this scale'} ({phrase} only by an interval drawn too narrow, {too_narrow(diff)})"
    if verdict == "higher":
        return worse + caveat(diff)
    if verdict == "lower":
        return better + caveat(diff)
    if verdict == "equivalent":  # inside the margins; where its own interval excludes 0, why no difference was called
        held_back = not_called(diff) or _excludes_zero_alone(diff)
        return f"{same} (equivalent within ±{num(diff['margin'])} by a TOST test" + (f"; {held_back})" if held_back else ")")
    neither = (f"neither a difference nor equivalence within ±{num(diff['margin'])}" if diff and diff.get("margin")
               else "no difference")  # no margin stated (Q4's layers): there was no equivalence to test
    return (unresolved or f"not resolved at this scale ({neither})") + caveat(diff)


def at_both_levels(crossed: dict, seeds: dict | None, worse: str, same: str, better: str,
                   unresolved: str | None = None, sample: str = "the items", always: bool = False) -> str:
    """`compared` of a comparison with the items as a sample too (the answer's level), and where its seed level
    `seeds` (None: none) gives another verdict, or `always`, that one beside it: "... with the pairs as a sample too
    (seeds alone: ...)". PROTOCOL.md, section 5: both levels are reported where they disagree."""
    text = compared(crossed, worse, same, better, unresolved)
    if seeds is not None and (always or st.verdict(seeds) != st.verdict(crossed)):
        text += f" with {sample} as a sample too (seeds alone: {compared(seeds, worse, same, better, unresolved)})"
    return text


def _excludes_zero_alone(d: dict) -> str:
    """`not_called` for a test alone (no Holm adjustment): its 95% interval excludes 0, yet its p (a percentile
    bootstrap's, at the boundary) does not reach 0.05; "" where the interval includes 0."""
    if not (d["low"] > 0 or d["high"] < 0) or d.get("n", 2) < 2:  # one seed: its [x, x] is no interval
        return ""
    p = d.get("p")
    return (f"its 95% interval [{num(d['low'])}, {num(d['high'])}] excludes 0"
            + (f", but its p, {p_value(p)}, does not reach {num(st.ALPHA)}" if p is not None and p >= st.ALPHA else ""))


def seed_count(n: int) -> str:
    """"1 seed", "2 seeds"."""
    return f"{n} seed{'s' * (n != 1)}"


def listed(values) -> str:
    return ", ".join(num(v) for v in values)
