"""A second run of the same protocol on other seeds, read against the first: the verdict of every comparison in both.
`hf-minattn findings SECOND/results.json --replicates FIRST/results.json` writes it as REPLICATION.md beside the
second run's FINDINGS.md (`--across-protocols`: a first run made under another version of the protocol, which the
page names).

A verdict is "higher", "lower", "equivalent" or "unresolved" (experiments/statistics.py `decide`). Two runs
agree on a comparison when its verdict is the same; they are reversed when one says higher and the other lower;
otherwise one run resolved what the other did not (or called it equivalent). The pretrained reference encoder's own
comparisons are left out: it is the same model, scored on the same items, in two runs of one protocol, so they
agree by construction (across protocols the items may differ, but the model does not). Nothing is computed here beyond counting: every number printed is one of the two results.json."""

from .findings import seed_list
from .findings_format import details, num, table, verdict_cell
from .word_pairs import holds_widened

OPPOSITE = {("higher", "lower"), ("lower", "higher")}


def comparisons(results: dict) -> dict:
    """{name: stored comparison} for every comparison with a verdict under results["answers"], named by its path
    ("q2 frozen_minus_full"), in the order results.json holds them; the reference encoder's own left out."""
    found = {}

    def walk(node, path):
        if isinstance(node, dict):
            if "verdict" in node and path:
                found[" ".join(path)] = node
            for key, value in node.items():
                walk(value, path + [str(key)])

    walk(results["answers"], [])
    return {name: d for name, d in found.items() if not any(part.startswith("reference") for part in name.split())}


def stated(d: dict) -> str:
    """The verdict FINDINGS states for a stored comparison: a hierarchical word-pair verdict that an interval as wide
    as it should be would not keep (`holds_widened`) is stated as not resolved."""
    return d["verdict"] if holds_widened(d) else "unresolved"


def agreement(first: dict, second: dict) -> dict:
    """The comparisons both runs made, split by how their verdicts relate: {"same", "reversed", "differ": [names],
    "only_first", "only_second": [names]}."""
    a, b = comparisons(first), comparisons(second)
    both = [name for name in b if name in a]
    kinds = {"same": [], "reversed": [], "differ": []}
    for name in both:
        pair = (stated(a[name]), stated(b[name]))
        kinds["same" if pair[0] == pair[1] else "reversed" if pair in OPPOSITE else "differ"].append(name)
    return {**kinds, "only_first": [n for n in a if n not in b], "only_second": [n for n in b if n not in a]}


def headline(first: dict, second: dict) -> str:
    """One sentence, chosen by the counts: how many verdicts the second run shares with the first, and which not."""
    found = agreement(first, second)
    n = sum(len(found[k]) for k in ("same", "reversed", "differ"))
    same = len(found["same"])
    text = (f"Of the {n} comparisons both runs made, {same} {'reaches' if same == 1 else 'reach'} the same verdict on "
            f"{seed_list(second['seeds'])} as on {seed_list(first['seeds'])}")
    if found["reversed"]:
        text += (f"; {len(found['reversed'])} {'is' if len(found['reversed']) == 1 else 'are'} reversed (higher in one "
                 f"run, lower in the other): {', '.join(found['reversed'])}")
    else:
        text += "; none is reversed (higher in one run, lower in the other)"
    if found["differ"]:
        text += (f"; {len(found['differ'])} resolved in one run and not in the other, or equivalent in one only: "
                 f"{', '.join(found['differ'])}")
    return text + "."


def _method(d: dict) -> str | None:
    """How a stored comparison was decided: its interval's method, and the seed-level t-test where it has one
    (`statistics.with_seed_level`)."""
    return d.get("method") if "seeds" not in d else f"{d.get('method')} with the seeds' t-test"


def method_changes(a: dict, b: dict) -> dict:
    """{name: (first method, second method)} of the comparisons both runs made that were decided another way (e.g.
    word pairs "hierarchical" in a run from before the crossed draw, "crossed with the seeds' t-test" after)."""
    return {name: (_method(a[name]), _method(b[name])) for name in b if name in a and _method(a[name]) != _method(b[name])}


def _cell(d: dict) -> str:
    return f"{num(d['estimate'])} [{num(d['low'])}, {num(d['high'])}]: {verdict_cell(d)}"


def replication_markdown(first: dict, second: dict, same_protocol: bool = True) -> str:
    """REPLICATION.md: the headline, the comparisons whose verdicts differ, then every comparison (collapsed).
    `same_protocol` False: the runs ran under two versions of the protocol, which the page names."""
    a, b = comparisons(first), comparisons(second)
    found = agreement(first, second)
    header = ["comparison", f"first run ({seed_list(first['seeds'])})", f"second run ({seed_list(second['seeds'])})"]
    differing = [[name, _cell(a[name]), _cell(b[name])] for name in found["reversed"] + found["differ"]]
    every = [[name, _cell(a[name]), _cell(b[name])] for name in b if name in a]
    commits = [(run.get("protocol") or {}).get("commit") for run in (first, second)]
    protocol = ("the same protocol" if same_protocol else
                f"under two versions of the protocol (PROTOCOL.md at commit `{commits[0]}` for the first, "
                f"`{commits[1]}` for the second): a verdict that differs may come from the protocol's change as much "
                "as from the seeds")
    lines = [f"# Replication: {seed_list(second['seeds'])} against {seed_list(first['seeds'])}", "",
             f"Both runs: `{first['command']}` ({first['date']}) and `{second['command']}` ({second['date']}), "
             f"{protocol}; each comparison is the stored estimate, its 95% interval and its verdict. The reference "
             "encoder's own comparisons are left out: " + ("it is the same model on the same items in both runs."
                                                           if same_protocol else "it is the same model in both runs."),
             "",
             f"**{headline(first, second)}**"]
    if differing:
        lines += ["", "The comparisons whose verdicts differ:", *table(header, differing)]
    by_methods = {}
    for name, pair in method_changes(a, b).items():
        by_methods.setdefault(pair, []).append(name)
    if by_methods:
        lines += ["", "Decided by another method in each run: "
                      + "; ".join(f"{x} in the first, {y} in the second: {', '.join(names)}"
                                  for (x, y), names in by_methods.items()) + "."]
    if found["only_second"] or found["only_first"]:
        lines += ["", f"With a verdict in the second run only: {', '.join(found['only_second']) or 'none'}; in the "
                      f"first run only: {', '.join(found['only_first']) or 'none'}."]
    lines += details(f"Every comparison both runs made ({len(every)})", table(header, every))
    return "\n".join(lines) + "\n"
