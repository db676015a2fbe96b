"""Word similarity and analogies: do the word vectors agree with human similarity judgements? The section's
sentences, tables and figure, written from the numbers alone.

Every comparative word follows `results.DECISION_RULE` (the paired bootstrap interval of the difference of two
systems' Spearman correlations on the same pairs), so flipping the numbers flips the sentence; the tests do exactly
that. Files from before the paired comparison are worded by `results.LEGACY_DECISION_RULE`, and say so.

The functions take the typed results (SavedProbeResults, built once per page).
"""

import matplotlib.pyplot as plt
import numpy as np

from ..plots import legend_or_not_scored, save_figure
from ..results import BENCHMARKS, DECISION_RULE, LEGACY_DECISION_RULE, paired_verdict, verdict
from .page import Section
from .words import lower, signed_interval


TOO_FEW_PAIRS = "too few pairs to score"  # where no vector set has a Spearman (under 3 pairs): report and compare
NAMES = {"wordsim353": "WordSim-353", "simlex999": "SimLex-999",
         "wordsim353_similarity": "WordSim-353 similarity subset", "wordsim353_relatedness": "WordSim-353 relatedness subset"}


def _label(name):
    if name.startswith("layer_"):
        return f"contextual layer {name[6:]}"
    if name.startswith("decontext_"):
        return f"decontextualized layer {name[10:]}"
    return name


def _score(s):
    if s is None or s.spearman is None:
        return "n/a"
    if s.interval is None or s.interval.low is None:
        return f"{s.spearman:.2f}"
    return f"{s.spearman:.2f} [{s.interval.low:.2f}, {s.interval.high:.2f}]"


_WORDS = {1: "higher than", -1: "lower than", 0: "not told apart from"}


def _delta(interval):
    return f"Δρ {signed_interval(interval.estimate, interval.low, interval.high)}"


def comparison(a, b, other, abtt=False):
    """(sign, interval): +1 / -1 / 0 for SimilarityScore `a` against `b` (system `other`) by DECISION_RULE, with the
    paired interval of the difference; for files with no paired interval, by LEGACY_DECISION_RULE (A's interval
    against B's estimate), with interval None."""
    sign = paired_verdict(a, other, abtt)
    if sign is None:
        return verdict(a, b), None
    return sign, (a.abtt_versus if abtt else a.versus)[other]


def _versus(a_name, a, b_name, b, other, abtt=False):
    """'A is higher than B (Δρ +0.12 [+0.03, +0.21])' from A's paired interval against system `other`; by the legacy
    rule (A's interval against B's estimate) only for files that have no paired interval."""
    sign, interval = comparison(a, b, other, abtt)
    text = f"{a_name} is {_WORDS[sign]} {b_name}"
    return text if interval is None else f"{text} ({_delta(interval)})"


def _reference_versus(b, bench, s):
    """The reference encoder's best set on `bench` against word2vec (or this model's best `s` against it), in words;
    None without a reference."""
    ref = b.best(bench, table=b.reference) if b.reference else None
    if ref is None:
        return None
    r = ref.similarity[bench]
    w2v = b.systems.get("word2vec")
    w2v_score = w2v.similarity.get(bench) if w2v else None
    # Two encoders are compared through the baseline both are paired with: each one's difference to word2vec.
    return ref, (_versus("the reference", r, "word2vec", w2v_score, "word2vec") if "word2vec" in r.versus
                 else _versus("this model", s, "the reference", r, "reference"))


def similarity_sentence(res, bench):
    """One sentence per benchmark: coverage, the best encoder set, and how it stands against word2vec, random
    vectors, the untrained model and the reference encoder, each by DECISION_RULE."""
    b = res.benchmarks
    name = NAMES[bench]
    best = b.best(bench)
    pairs = b.pairs.get(bench)
    any_score = next(iter(b.systems.values()), None)
    oov = any_score.similarity[bench].oov if any_score and bench in any_score.similarity else None
    coverage = (f"{pairs['kept']} of {pairs['total']} pairs kept" if pairs else "")
    head = f"{name} (OOV {oov:.0%} of pairs{'; ' + coverage if coverage else ''}, the same pairs for every system)" \
        if oov is not None else f"{name}"
    if best is None:
        return f"{head}: {TOO_FEW_PAIRS}"
    s = best.similarity[bench]
    parts = [f"{head}: best encoder set is {_label(best.vectors)} (Spearman {_score(s)})"]
    static = b.systems.get("static")
    if static is not None and static.vectors != best.vectors:
        parts.append(f"static {_score(static.similarity.get(bench))}")
    for other in ("word2vec", "random"):
        if other in b.systems:
            o = b.systems[other].similarity.get(bench)
            parts.append(f"{other} {_score(o)}: {_versus(_label(best.vectors), s, other, o, other)}")
    if b.untrained:
        u = b.untrained.get(best.vectors)
        if u is not None:
            us = u.similarity.get(bench)
            parts.append(f"the untrained model's {_label(best.vectors)} {_score(us)}: "
                         f"{_versus('the trained one', s, 'it', us, 'untrained')}")
    reference = _reference_versus(b, bench, s)
    if reference is not None:
        ref, words = reference
        parts.append(f"fully trained reference {b.reference_model or ''} best {_label(ref.vectors)} "
                     f"{_score(ref.similarity[bench])}: {words}")
    abtt = [(k, v.similarity[bench]) for k, v in b.systems.items()
            if k.startswith(("static", "layer_", "decontext_")) and bench in v.similarity and v.similarity[bench].abtt is not None]
    if abtt:
        k, v = max(abtt, key=lambda kv: kv[1].abtt)
        text = f"after All-but-the-Top the best is {_label(k)} ({v.abtt:.2f})"
        w2v = b.systems.get("word2vec")
        if "word2vec" in v.abtt_versus and w2v is not None and w2v.similarity[bench].abtt is not None:
            text += (f", word2vec {w2v.similarity[bench].abtt:.2f}: "
                     + _versus(_label(k), v, "word2vec", None, "word2vec", abtt=True))
        parts.append(text)
    return "; ".join(parts)


def analogy_sentence(res):
    b = res.benchmarks
    q = b.analogy_questions
    scored = {k: v for k, v in b.systems.items() if v.analogy is not None}
    if not scored:
        return "analogies: no question has all four words in every vocabulary"
    best = max((v for k, v in scored.items() if k.startswith(("static", "layer_", "decontext_"))),
               key=lambda v: v.analogy, default=None)
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    n = f"{q.get('semantic', '?')} semantic and {q.get('syntactic', '?')} syntactic of {q.get('total', 19544)} questions"
    text = f"analogies ({n} in every vocabulary)"
    if best is not None:
        text += (f": best encoder set {_label(best.vectors)}, semantic {fmt(best.analogy_semantic)}, syntactic "
                 f"{fmt(best.analogy_syntactic)}")
        u = b.untrained.get(best.vectors) if b.untrained else None
        if u is not None:
            text += f" (untrained: {fmt(u.analogy_semantic)}, {fmt(u.analogy_syntactic)})"
            if u.analogy is not None and lower(best.analogy, u.analogy, 3):
                text += (f"; the untrained model's same set scores higher overall ({u.analogy:.3f} against "
                         f"{best.analogy:.3f}), so these analogies do not show what training added")
    if "word2vec" in scored:
        w = scored["word2vec"]
        text += f"; word2vec semantic {fmt(w.analogy_semantic)}, syntactic {fmt(w.analogy_syntactic)}"
    return text


def benchmarks_text(res):
    """Written from the intervals and coverage (see results.DECISION_RULE)."""
    vc = res.vector_corpus or {}
    source = (f"Vectors pooled from {vc.get('occurrences', 'every occurrence')} in {vc['source']} ({vc['words']} words; {vc['vocabulary']} words "
              f"seen in >= {vc['min_contexts']} distinct sentences get vectors). ") if vc else ""
    parts = [similarity_sentence(res, bench) for bench in BENCHMARKS] + [analogy_sentence(res)]
    paired = any(score.versus for system in res.benchmarks.systems.values() for score in system.similarity.values())
    return ("Which vectors agree best with human similarity judgements (contextual = mean over the word's corpus "
            "occurrences, pieces mean-pooled; decontextualized = the word fed alone)? " + source
            + word2vec_description(res.benchmarks.word2vec, res.benchmarks.word2vec_selection)
            + "; ".join(parts)
            + ". Intervals: 95% bootstrap over pairs. " + (DECISION_RULE if paired else LEGACY_DECISION_RULE))


def word2vec_description(settings, selection=None):
    """What the word2vec baseline is, from the settings saved with the results ('' when none was trained);
    `selection`: where its settings were chosen (None: not by the selection, e.g. gensim's defaults)."""
    if not settings:
        return ""
    kind = "skip-gram" if settings.get("sg", 1) else "CBOW"
    seed = f", seed {settings['seed']}" if "seed" in settings else ""
    chosen = f"; settings chosen on SimLex-999 and the analogies, not on WordSim-353: {selection}" if selection else ""
    return (f"word2vec: gensim {kind} ({settings['epochs']} epochs, sample {settings.get('sample', 1e-3):g}, window "
            f"{settings.get('window', 5)}, {settings.get('vector_size', 100)} dimensions, min_count "
            f"{settings['min_count']}{seed}{chosen}) on the same corpus words. ")


def _cells(s, bench):
    x = s.similarity.get(bench)
    return [_score(x), "n/a" if x is None or x.abtt is None else f"{x.abtt:.2f}"]


def benchmark_rows(r):
    """{header, rows}: every vector set's scores (this model, untrained, reference), one row each."""
    b = r.benchmarks
    head = ["system", "vectors", *[h for bench in BENCHMARKS for h in (f"{NAMES[bench]} [95% CI]", "ABTT")],
            "analogy sem.", "analogy syn.", "analogy all"]
    f = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    rows = []
    for system, table in (("this model", b.systems), ("untrained", b.untrained),
                          (f"reference {b.reference_model or ''}".strip(), b.reference)):
        for name, s in (table or {}).items():
            rows.append([system, name, *[c for bench in BENCHMARKS for c in _cells(s, bench)], f(s.analogy_semantic),
                         f(s.analogy_syntactic), f(s.analogy)])
    return {"header": head, "rows": rows}


# the systems the best encoder set is compared with, in plain words (results.DECISION_RULE)
OTHERS = {"word2vec": "word2vec trained on the probe's corpus", "random": "random vectors",
          "untrained": "the same model at random initialisation"}
_VERDICT = {1: "higher", -1: "lower", 0: "not told apart"}  # the best set against the other


def and_list(items):
    """ "a", "a and b", "a, b and c" ("" for none)."""
    items = list(items)
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1] if items else ""


def _plain(name):
    """A vector set in plain words."""
    if name == "static":
        return "the input embeddings"
    if name.startswith("layer_"):
        return f"layer {name[6:]}, averaged over each word's sentences"
    if name.startswith("decontext_"):
        return f"layer {name[10:]} with the word fed alone"
    return name


def _others(b, best, bench):
    """[(system, plain name, its SimilarityScore, sign, paired interval or None)]: `best`'s set against word2vec,
    random vectors and the same set untrained, each by DECISION_RULE, where scored."""
    s = best.similarity[bench]
    out = []
    for other, plain in OTHERS.items():
        system = (b.untrained or {}).get(best.vectors) if other == "untrained" else b.systems.get(other)
        o = system.similarity.get(bench) if system else None
        if o is None or o.spearman is None:
            continue
        out.append((other, plain, o, *comparison(s, o, other)))
    return out


def benchmarks_headline(r, bench="wordsim353"):
    """One sentence: how the best encoder set on `bench` stands against word2vec, random vectors and the untrained
    model, each verdict by DECISION_RULE (an interval that includes 0: no clear difference)."""
    b = r.benchmarks
    best = b.best(bench)
    if best is None:
        return f"Too few {NAMES[bench]} pairs have both words in every vocabulary to score the vectors."
    s = best.similarity[bench]
    groups = {1: [], -1: [], 0: []}
    scores = {}
    for other, plain, o, sign, _ in _others(b, best, bench):
        groups[sign].append(plain)
        scores[other] = o.spearman
    who = f"On {NAMES[bench]}, the best vectors here ({_plain(best.vectors)})"
    claims = ([f"better than {and_list(groups[1])}"] if groups[1] else []) + \
             ([f"worse than {and_list(groups[-1])}"] if groups[-1] else [])
    if claims:
        text = f"{who} agree with its human similarity judgements {', but '.join(claims)}"
        if groups[0]:
            text += f"; no clear difference from {and_list(groups[0])} at this scale"
    elif groups[0]:
        text = f"{who} are not told apart from {and_list(groups[0])} at this scale"
    else:
        text = f"{who} agree with its human similarity judgements; nothing else was scored to compare"
    other = next((o for o in ("word2vec", "random", "untrained") if o in scores), None)
    numbers = f"{NAMES[bench]} Spearman {s.spearman:.2f}" + (f", {other} {scores[other]:.2f}" if other else "")
    return f"{text} ({numbers}){_picked(b, bench)}."


def _sets_scored(b, bench):
    """How many encoder vector sets have a Spearman on `bench`: the best set is picked among these."""
    return sum(1 for name, system in b.systems.items() if name.startswith(("static", "layer_", "decontext_"))
               and bench in system.similarity and system.similarity[bench].spearman is not None)


def _picked(b, bench):
    """Said where the best set was picked among several on the very pairs it is scored on: selection flatters it."""
    sets = _sets_scored(b, bench)
    return (f"; picked as the best of {sets} vector sets on these same pairs, so its score and its lead are "
            "optimistic" if sets > 1 else "")


def comparison_rows(r):
    """{header, rows}: per benchmark, its coverage, the best encoder set and its verdict against each system."""
    b = r.benchmarks
    header = ["benchmark", "pairs kept (both words in every vocabulary)", "best vectors", "Spearman [95% CI]",
              *[f"best vs {o}" for o in OTHERS], *(["vs reference"] if b.reference else [])]
    rows = []
    for bench in BENCHMARKS:
        best = b.best(bench)
        pairs = b.pairs.get(bench)
        kept = f"{pairs['kept']} of {pairs['total']} ({pairs['coverage']:.0%})" if pairs else "-"
        if best is None:
            if pairs or any(bench in s.similarity for s in b.systems.values()):
                rows.append([NAMES[bench], kept, "-", "-", *["-"] * (len(header) - 4)])
            continue
        s = best.similarity[bench]
        cells = {other: _VERDICT[sign] + (f", {_delta(iv)}" if iv is not None else "") + f" ({other} {_score(o)})"
                 for other, _, o, sign, iv in _others(b, best, bench)}
        row = [NAMES[bench], kept, _label(best.vectors), _score(s), *[cells.get(o, "-") for o in OTHERS]]
        if b.reference:
            reference = _reference_versus(b, bench, s)
            row.append("-" if reference is None else f"{_score(reference[0].similarity[bench])} "
                                                     f"({_label(reference[0].vectors)}): {reference[1]}")
        rows.append(row)
    return {"header": header, "rows": rows}


def benchmarks_plot(r, path, figure_format=None):
    """Spearman by layer with 95% error bars (contextual, decontextualized; untrained and reference dotted),
    static/word2vec/random as horizontal lines with bands, one panel per benchmark, and the analogy accuracies."""
    b = r.benchmarks
    if b is None:
        return None
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    axes = axes.ravel()  # WordSim-353, SimLex-999, analogies; the two WordSim-353 subsets; (unused)
    axes[5].set_axis_off()
    for ax, bench in zip(axes[[0, 1, 3, 4]], BENCHMARKS):
        series = [("contextual", b.layers("layer_"), "-o"), ("decontextualized", b.layers("decontext_"), "-s"),
                  ("untrained contextual", b.layers("layer_", b.untrained), ":o"),
                  (f"reference {b.reference_model or ''} contextual", b.layers("layer_", b.reference), "--^")]
        for label, by_layer, style in series:
            xs = sorted(k for k, v in by_layer.items() if v.similarity.get(bench) and v.similarity[bench].spearman is not None)
            if not xs:
                continue
            ys = np.array([by_layer[k].similarity[bench].spearman for k in xs])
            ivs = [by_layer[k].similarity[bench].interval for k in xs]
            err = np.array([[y - (i.low if i else y), (i.high if i else y) - y] for y, i in zip(ys, ivs)]).T
            ax.errorbar(xs, ys, yerr=np.clip(err, 0, None), fmt=style, capsize=3, label=label)
        for name, color in (("static", "grey"), ("word2vec", "k"), ("random", "r")):
            s = b.systems.get(name)
            x = s.similarity.get(bench) if s else None
            if x is None or x.spearman is None:
                continue
            ax.axhline(x.spearman, color=color, linestyle="--", linewidth=1, label=name)
            if x.interval is not None and x.interval.low is not None:
                ax.axhspan(x.interval.low, x.interval.high, color=color, alpha=0.1)
        pairs = b.pairs.get(bench)
        cov = f", {pairs['kept']}/{pairs['total']} pairs" if pairs else ""
        ax.set_title(f"{NAMES[bench]} (Spearman, 95% CI{cov})", fontsize=9)
        ax.set_xlabel("layer")
        legend_or_not_scored(ax)  # a probes.json from before the subsets has none to draw
    _analogy_panel(axes[2], b)
    return save_figure(fig, path, figure_format)


def _analogy_panel(ax, b):
    """The analogy accuracies by layer (semantic, syntactic; untrained dotted), word2vec's as horizontal lines."""
    for label, table, style in (("semantic", b.systems, "-o"), ("syntactic", b.systems, "-s"),
                                ("untrained semantic", b.untrained, ":o"), ("untrained syntactic", b.untrained, ":s")):
        key = "analogy_" + label.split()[-1]
        by_layer = b.layers("layer_", table)
        xs = sorted(k for k, v in by_layer.items() if getattr(v, key) is not None)
        if xs:
            ax.plot(xs, [getattr(by_layer[k], key) for k in xs], style, label=label)
    w = b.systems.get("word2vec")
    for key, style in (("analogy_semantic", "--"), ("analogy_syntactic", "-.")):
        if w is not None and getattr(w, key) is not None:
            ax.axhline(getattr(w, key), color="k", linestyle=style, linewidth=1, label=f"word2vec {key[8:]}")
    q = b.analogy_questions
    ax.set_title(f"Google analogies, 3CosAdd ({q.get('semantic', '?')} sem. / {q.get('syntactic', '?')} syn. questions)",
                 fontsize=9)
    ax.set_xlabel("layer")
    legend_or_not_scored(ax)  # a vocabulary too small for any question has none to draw


def benchmarks_tables(r):
    """The verdicts per benchmark (shown), then every vector set's scores (in the details)."""
    return [comparison_rows(r), {**benchmark_rows(r), "details": True}]


def best_cell(r, key):
    """compare.html's cell for benchmark `key`: the best encoder set's Spearman with its 95% interval (or "no 95%
    interval" where the bootstrap gave none), the set as the report names it, how many sets it was picked from, the
    pairs kept, and word2vec's score; TOO_FEW_PAIRS where the report says so (no set has a Spearman)."""
    b = r.benchmarks
    if b is None:
        return "not scored (no benchmarks in this probe)"
    pairs = b.pairs.get(key)
    kept = f"{pairs['kept']} of {pairs['total']} pairs" if pairs else "pairs kept not recorded"
    top = b.best(key)
    if top is None:
        return f"{TOO_FEW_PAIRS} ({kept})"
    s = top.similarity[key]
    score = _score(s) if s.interval is not None else f"{s.spearman:.2f} (no 95% interval)"
    sets = _sets_scored(b, key)
    picked = f", best of {sets} sets" if sets > 1 else ""
    w2v = b.systems.get("word2vec")
    return (f"{score}: {_label(top.vectors)}{picked}, on {kept}; "
            f"word2vec {_score(w2v.similarity.get(key)) if w2v else 'not trained'}")


SECTION = Section(
    name="benchmarks", title="Word similarity and analogies", needs="benchmarks", reads="results",
    question="Do the word vectors agree with human similarity judgements?",
    headline=benchmarks_headline, text=benchmarks_text, tables=benchmarks_tables, figure=benchmarks_plot,
    alt="Charts by layer: WordSim-353 and SimLex-999 Spearman correlations with 95% intervals for each vector set, "
        "and analogy accuracy")
