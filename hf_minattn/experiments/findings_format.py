"""How FINDINGS.md prints a stored number: 3 significant digits (p-values 2), intervals as "estimate [low, high]",
and each tested comparison as a table row with its df, its p-value labelled by what it is (Holm-adjusted within a
family of k tests, or one test alone, unadjusted) and its verdict. Nothing is computed here: every number printed
is one in results.json, rounded for reading."""

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
    """A stored p at 2 significant digits, never rounded across the 0.05 threshold the verdicts use."""
    if p is None:
        return "-"
    if p < P_FLOOR:
        return f"< {P_FLOOR}"
    text = num(p, 2)
    return num(p, 3) if p < st.ALPHA <= float(text) else text


def p_cell(d: dict | None) -> str:
    """The p of a stored comparison, labelled honestly: Holm-adjusted within its family of k tests, or a test alone."""
    if not d or d.get("p_holm") is None:
        return "-"
    k = d.get("family_size") or 1
    return f"{p_value(d['p_holm'])} (Holm, {k} tests)" if k > 1 else f"{p_value(d['p_holm'])} (one test, unadjusted)"


def df_cell(d: dict | None) -> str:
    if not d:
        return "-"
    if d.get("method", "t") != "t":
        return {"bootstrap": "bootstrap over items"}.get(d["method"], f"{d['method']} bootstrap")
    return "-" if d.get("df") is None else str(d["df"])


def verdict_cell(d: dict | None) -> str:
    """A tested comparison's verdict; a bare interval says only where it lies against 0."""
    if not d:
        return "-"
    if "verdict" in d:
        word = {"higher": "higher", "lower": "lower", "equivalent": f"equivalent within ±{num(d.get('margin'))}",
                "unresolved": "not resolved"}[d["verdict"]]
        return word if holds_widened(d) else f"{word}, not if {HIERARCHICAL_WIDENING}x as wide"
    return {1: "above 0", -1: "below 0", 0: "includes 0"}[st.sign(d)]


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
                 [[label, num(d["estimate"]), f"[{num(d['low'])}, {num(d['high'])}]", df_cell(d), p_cell(d),
                   verdict_cell(d)] for label, d in kept])


def details(summary: str, lines: list[str]) -> list[str]:
    """A collapsed block (GitHub renders Markdown inside it after a blank line)."""
    return ["", "<details>", f"<summary>{summary}</summary>", "", *lines, "", "</details>"]


def caveat(d: dict | None) -> str:
    """What a verdict's word leaves out that its own numbers show, as " (...)"; "" where nothing is left out:
    - a difference smaller than its margin: "higher"/"lower" whose TOST test also finds it within the margin;
    - an unresolved difference whose unadjusted 95% interval excludes 0: Holm's adjustment decided it."""
    if not d or "verdict" not in d or d.get("low") is None or d.get("high") is None:
        return ""
    if d["verdict"] in ("higher", "lower") and (d.get("tost") or {}).get("equivalent"):
        return f" (by less than the ±{num(d['margin'])} margin: a TOST test puts the difference inside it)"
    k = d.get("family_size") or 1
    if d["verdict"] == "unresolved" and (d["low"] > 0 or d["high"] < 0) and k > 1:
        if d.get("p") is not None and d["p"] >= st.ALPHA:  # a percentile interval and its p can part at the boundary
            return (f" (its unadjusted 95% interval excludes 0, but its p does not reach {num(st.ALPHA)}: "
                    f"{p_value(d['p'])} before Holm's adjustment for {k} tests, {p_value(d['p_holm'])} after)")
        return (f" (its unadjusted 95% interval excludes 0, but Holm's adjustment for {k} tests leaves p "
                f"{p_value(d['p_holm'])})")
    return ""


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
    if verdict == "equivalent":
        small = diff["low"] > 0 or diff["high"] < 0  # inside the margins, yet its own interval excludes 0
        if small:
            return (f"{same} within ±{num(diff['margin'])} (TOST), but not identical: its 95% interval "
                    f"[{num(diff['low'])}, {num(diff['high'])}] excludes 0, a difference smaller than the margin")
        return f"{same} (equivalent within ±{num(diff['margin'])} by a TOST test)"
    margin = f" nor equivalence within ±{num(diff['margin'])}" if diff and diff.get("margin") else ""
    return (unresolved or f"not resolved at this scale (neither a difference{margin})") + caveat(diff)


def listed(values) -> str:
    return ", ".join(num(v) for v in values)
