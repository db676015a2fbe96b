"""FINDINGS.md from results.json: whether the run confirms (its seeds against the protocol's exploration seeds, and
the protocol's commit), then the seven answers (one sentence each, chosen by a stored comparison's verdict
via `statistics.verdict`: a difference after Holm's correction, equivalence by TOST within a stated margin, or
unresolved), then one section per question opening with its answer and a table of its comparisons. Every number
printed is one stored in results.json, rounded to 2-3 significant digits.

One module per job: `findings_format` (numbers, intervals, tables), `findings_answers` (the seven sentences),
`findings_training` (losses, questions 1-3), `findings_heads` (question 4), `findings_probes` (questions 5-7); this
module puts them together and re-renders a committed results.json (`rerender_findings`, behind `hf-minattn
findings`)."""

import glob
import json
import os
import shutil
import subprocess

from .findings_answers import answers_summary
from .findings_format import ci, compared, num
from .findings_heads import head_dynamics_lines, q4_section
from .findings_probes import probe_sections, q5_section, q6_section, q7_section
from .findings_training import (circuits_lines, loss_allocation_lines, loss_section, q1_section, q2_section,
                                q3_section, similarity_lines)
from .learning_rates import EXPLORATION_SEEDS

__all__ = ["render_findings", "rerender_findings", "load_results", "protocol_record", "run_kind", "seed_list", "ci", "compared", "circuits_lines",
           "head_dynamics_lines", "loss_allocation_lines", "similarity_lines", "subsets_line", "q1_section",
           "q2_section", "q3_section", "q4_section", "q5_section", "q6_section", "q7_section"]


def masked_tokens(scale: dict) -> str:
    """How many masked tokens each model was scored on: the masks are drawn per seed, so the count is per seed."""
    by_seed = scale.get("masked_tokens_by_seed")
    if not by_seed:  # results from before the per-seed counts: the first seed's
        return f"{scale['masked_tokens']} masked tokens per model at the first seed"
    counts = ", ".join(f"{count} at seed {seed}" for seed, count in by_seed.items())
    return f"masked tokens per model: {counts}"


def tests_both_levels(node) -> bool:
    """Whether some stored comparison under `node` was tested at both levels (`statistics.crossed_tested`'s
    "seeds"); results.json files from before that rule have none."""
    if isinstance(node, dict):
        return ("seeds" in node and node.get("method") == "crossed") or any(map(tests_both_levels, node.values()))
    return isinstance(node, list) and any(map(tests_both_levels, node))


def scored_set(results: dict) -> str:
    """"the whole validation set", or, where the first sequences chose the learning rates and were left out, "the
    354 validation sequences after the first 136 (those the learning rates were chosen on)"."""
    first, total = results.get("scored_sequences") or (0, None)
    if not first:
        return "the whole validation set"
    return (f"the {total - first} validation sequences after the first {first} (those the learning rates were "
            "chosen on)")


def scale_paragraph(results: dict) -> list[str]:
    scale, settings = results["answers"]["scale"], results["settings"]
    lines = [
        f"**Scale: {scale['parameters']} parameters ({scale['layers']} layers, hidden size {scale['hidden_size']}, "
        f"{scale['heads']} heads, vocabulary {scale['vocab_size']}), {scale['tokens_trained']} tokens trained "
        f"({scale['steps']} steps of {settings['batch_size']} x {settings['max_seq_length']}, {scale['precision']}), "
        f"{scale['seeds']} paired seeds.** Each model is scored on {scored_set(results)} masked {scale['mask_draws']} "
        f"times ({masked_tokens(scale)}). The floor: the unigram model (training-split token "
        f"frequencies) scores {num(scale['unigram_loss'])} nats on the same masked tokens; a model has learned something "
        f"from context only as far as it is below that. Intervals are {scale['confidence_percent']}% t-intervals over "
        f"seeds (df = seeds - 1) of paired differences (same seed: same data order, masks and, where shapes agree, "
        "initial weights), or bootstrap intervals where the table says so. Within each question's family of comparisons "
        "the p-values are Holm-adjusted, and the tables say so (\"Holm, k tests\"); a p of a test that stands alone is "
        "marked unadjusted. A difference is called one only when its adjusted p is below 0.05 and its 95% interval "
        f"excludes 0, \"equivalent\" only when a TOST test puts it within ±{num(scale['loss_margin'])} nat (or the "
        "margin the table gives), and anything else is \"not resolved at this scale\". The printed intervals are "
        "not adjusted: one that just excludes 0 can stand beside \"not resolved\" when Holm's adjustment leaves its p "
        "above 0.05." + (" Where seeds and items (pairs, homonyms, sentences) are crossed, a comparison's p is the "
                         "larger of its crossed bootstrap's and the t-test's of the seeds' means: a difference needs "
                         "both." if tests_both_levels(results["answers"]) else ""),
    ]
    if not scale["enough_seeds"]:
        lines.append(f"\n**Only {scale['seeds']} seeds: intervals need >= {scale['min_seeds']} seeds to be "
                     "usable; read every verdict below as provisional.**")
    return lines


def subsets_line(subsets: dict | None) -> list[str]:
    """WordSim-353's similarity and relatedness subsets side by side; nothing for results from before them."""
    if not subsets or subsets["similarity"]["pairs"] is None:
        return []
    sim, rel = subsets["similarity"], subsets["relatedness"]
    pair = lambda key: f"{num(sim[key])} / {num(rel[key])}"  # noqa: E731
    return [f"- WordSim-353 split into its similarity / relatedness subsets (Agirre et al.; {pair('pairs')} pairs "
            f"in every vocabulary): static {pair('static')}, last layer {pair('last_layer')}, word2vec "
            f"{pair('word2vec')}."]


def pairing_lines(results: dict) -> list[str]:
    init = results["answers"]["pairing"]["initialisation"]
    return ["## How the runs are paired", "",
            "Same seed: the Trainer's data order and the collator's per-example masks are functions of the seed only. "
            "Initial weights, share of the full model's parameters that are identical at the same seed: "
            + ", ".join(f"{name} {num(v['identical_share'])}" for name, v in init.items())
            + " (each module's initial weights are drawn from a generator seeded by the seed and the module's name, "
            "so variants share every module they have in common by name and shape; the rest differs by design).", ""]


PROTOCOL = "docs/findings/PROTOCOL.md"  # which seeds explore and which confirm; relative to the source tree's root


def protocol_record(root: str | None = None) -> dict:
    """results.json's "protocol", taken when a run writes it: the protocol's file, the git commit that last changed it
    and whether it has uncommitted changes (both None where `root`, by default the source tree the package runs from,
    is no git checkout holding the file, or git is missing), and the exploration seeds the code knows."""
    root = root or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def git(*args) -> str | None:
        try:
            done = subprocess.run(["git", "-C", root, *args, "--", PROTOCOL], capture_output=True, text=True,
                                  timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = (git("log", "-1", "--format=%H") or None) if os.path.isfile(os.path.join(root, PROTOCOL)) else None
    changes = git("status", "--porcelain") if commit else None
    return {"file": PROTOCOL, "commit": commit, "uncommitted_changes": None if changes is None else bool(changes),
            "exploration_seeds": list(EXPLORATION_SEEDS)}


def seed_list(seeds) -> str:
    """"seed 4", "seeds 3-7", "seeds 0, 2, 4-6": runs of consecutive seeds as ranges, as `--seeds` takes them."""
    runs = []
    for seed in sorted(seeds):
        if runs and seed == runs[-1][1] + 1:
            runs[-1][1] = seed
        else:
            runs.append([seed, seed])
    parts = [f"{a}" if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in runs]
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(parts)


def protocol_citation(protocol: dict | None) -> str:
    if not protocol:
        return "the protocol's commit is unknown: results.json does not record it"
    if not protocol.get("commit"):
        return (f"the protocol's commit is unknown: the run was not made from a git checkout holding "
                f"{os.path.basename(protocol['file'])}")
    dirty = ", with uncommitted changes to it" if protocol.get("uncommitted_changes") else ""
    return f"{os.path.basename(protocol['file'])} at commit `{protocol['commit']}`{dirty}"


def run_kind(results: dict) -> str:
    """Whether the run's verdicts confirm: its seeds split by the protocol into exploration seeds (they chose the
    recipe and the learning rates) and confirmation seeds (they chose nothing), with the protocol's commit."""
    protocol = results.get("protocol")
    exploration = set((protocol or {}).get("exploration_seeds", EXPLORATION_SEEDS))
    explored = [s for s in results["seeds"] if s in exploration]
    confirming = [s for s in results["seeds"] if s not in exploration]
    cited = protocol_citation(protocol)
    if not explored:
        return (f"Confirmation run: {seed_list(confirming)}, none of which chose anything (the exploration "
                f"{seed_list(exploration)} chose the recipe and the learning rates; {cited})")
    if not confirming:
        return (f"Exploration run: {seed_list(explored)} chose the recipe and the learning rates; its verdicts are "
                f"not confirmation ({cited})")
    return (f"Mixed run: exploration {seed_list(explored)} (they chose the recipe and the learning rates) and "
            f"confirmation {seed_list(confirming)} (they chose nothing); its verdicts mix both, so none of them is "
            f"confirmation ({cited})")


EARLY_FIGURE = ("head_dynamics_early", "the divergence between heads per layer on the early grid, beside the "
                                       "shuffled-label control")


def figure_links(results: dict, figures: dict):
    """fig(name, caption) for the section functions: the Markdown link of a figure drawn ("" for one not drawn). The
    early grid's figure follows the heads-over-training figure, and only where the run has an early grid."""
    early = ((results["answers"].get("q4") or {}).get("over_training") or {}).get("early")

    def link(name: str, caption: str) -> str:
        return f"\n![{caption}]({figures[name]})\n" if name in figures else ""

    def fig(name: str, caption: str) -> str:
        return link(name, caption) + (link(*EARLY_FIGURE) if name == "head_dynamics" and early else "")

    return fig


def render_findings(results: dict, figures: dict) -> str:
    fig = figure_links(results, figures)
    scale = results["answers"]["scale"]
    lines = [
        "# Findings: what self-attention training does, measured",
        "",
        f"**{run_kind(results)}.**",
        "",
        *answers_summary(results),
        "",
        f"Produced by `{results['command']}` on {results['machine']} ({results['date']}), on "
        f"{results.get('corpus', 'the Wikipedia sample bundled with gensim')}. "
        f"{scale['training_runs']} training runs of {num(scale['training_minutes'])} minutes in all (each run's own "
        f"clock), and {num(results['minutes'])} minutes for this call (which reuses any model already trained in its "
        "output folder"
        + (": " + ", ".join(f"{name} {num(m)}" for name, m in results["phase_minutes"].items())
           if results.get("phase_minutes") else "")
        + "). All numbers below are in `results.json`.",
        "",
        *scale_paragraph(results), *loss_section(results, fig), "", *q1_section(results, fig), "",
        *q2_section(results, fig), "", *q3_section(results, fig), *probe_sections(results, fig), "",
        *pairing_lines(results),
    ]
    return "\n".join(lines) + "\n"


REQUIRED = ("answers", "variants", "settings", "config", "seeds", "command")


def results_file(path) -> str:
    """`path`, or the results.json in it where it is a run's folder."""
    path = os.fspath(path)
    return os.path.join(path, "results.json") if os.path.isdir(path) else path


def int_seed_keys(value):
    """JSON turns the int seed keys of {seed: ...} into strings; turn them back (every all-digit key is a seed)."""
    if isinstance(value, dict):
        return {(int(k) if isinstance(k, str) and k.isdigit() else k): int_seed_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [int_seed_keys(v) for v in value]
    return value


def load_results(path) -> dict:
    """A results.json written by `hf-minattn experiments`, its seed keys ints again (JSON made them strings); a
    ValueError naming `path` for anything else."""
    path = results_file(path)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file (expected the results.json of an `hf-minattn experiments` folder)")
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a results.json (not JSON: {error})") from None
    missing = [key for key in REQUIRED if key not in results] if isinstance(results, dict) else list(REQUIRED)
    if missing:
        raise ValueError(f"{path}: not a results.json written by `hf-minattn experiments` (no {', '.join(missing)})")
    seeds = results["seeds"]
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ValueError(f"{path}: its seeds are {seeds!r}; expected a list of integers, as `hf-minattn experiments` "
                         "writes them")
    return int_seed_keys(results)  # seeds as keys back to ints, as the run that wrote the file held them


def rerender_findings(path, out=None, figure_format: str = "both") -> dict:
    """Write FINDINGS.md and the figures from the results.json at `path` into `out` (default: its folder), without
    training. Figures that need files results.json does not hold (rows.npz, the probes' own figures) are kept from
    the results' folder where it has them. Returns {"findings": path written, "figures": {name: relative path}}."""
    from .figures import make_figures

    path = results_file(path)
    results = load_results(path)
    source = os.path.dirname(os.path.abspath(path))
    out = source if out is None else os.fspath(out)
    check_findings_out(out, source, path)
    try:  # an older or edited results.json fails here, before any file is written (make_figures draws all first)
        render_findings(results, {})
        figures = make_figures(results, out, figure_format)
    except KeyError as error:
        raise ValueError(f"{path}: written by an older `hf-minattn experiments`: it lacks {error}; rerun the "
                         "experiments to re-render it") from None
    except (TypeError, AttributeError) as error:  # e.g. a list where the run writes a dict
        raise ValueError(f"{path}: a value is not of the kind `hf-minattn experiments` writes ({error}); rerun the "
                         "experiments to re-render it") from None
    figures.update(kept_figures(source, out, figures))
    findings = os.path.join(out, "FINDINGS.md")
    with open(findings, "w", encoding="utf-8") as f:
        f.write(render_findings(results, figures))
    return {"findings": findings, "figures": figures}


def check_findings_out(out: str, source: str, path: str) -> None:
    """A ValueError naming `out` where it is another run's folder (not the results' own, `source`, and holding a
    results.json): its FINDINGS.md, REPLICATION.md and figures would be replaced by these without a word. A folder
    of findings rendered before, with no results.json, is rendered into again."""
    if not os.path.isdir(out) or os.path.samefile(out, source) or not os.path.lexists(os.path.join(out, "results.json")):
        return
    raise ValueError(f"--out {out!r} is another run's folder (it holds a results.json): the findings of {path!r} "
                     "would replace its own; pass another --out (or none, for the results' own folder)")


def kept_figures(source: str, out: str, drawn: dict) -> dict:
    """{name: "figures/<file>"} for the figures in `source`/figures that were not drawn again (copied into `out` when it
    is another folder); the PNG when there is one, as make_figures gives."""
    kept = {}
    folder = os.path.join(source, "figures")
    for path in sorted(glob.glob(os.path.join(folder, "*.svg"))) + sorted(glob.glob(os.path.join(folder, "*.png"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name in drawn:
            continue
        if os.path.abspath(source) != os.path.abspath(out):
            os.makedirs(os.path.join(out, "figures"), exist_ok=True)
            shutil.copy(path, os.path.join(out, "figures", os.path.basename(path)))
        kept[name] = f"figures/{os.path.basename(path)}"  # the PNG, globbed last, wins
    return kept
