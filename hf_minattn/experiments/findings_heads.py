"""FINDINGS.md's section on question 4 (do different heads end up doing different things, and when?): the heads
after training against the untrained model, their roles and costliest heads, and their course over training, with
the timing of their specialisation against the loss leaving its unigram plateau."""

from . import statistics as st
from .findings_answers import opening
from .findings_format import ci, compared, comparisons_table, details, listed, num, table


def q4_section(q4: dict, fig) -> list[str]:
    layers = len(q4["js_within_layer_trained"])
    diff, div = q4["js_trained_minus_init"], q4.get("divergence")
    rows = [(f"layer {l}: within-layer JS divergence, trained - untrained", diff[f"layer_{l}"]) for l in range(layers)]
    ablation = q4.get("ablation_by_layer") or [None] * layers
    lines = [
        *opening({"answers": {"q4": q4}}, 4),
        *comparisons_table(rows),
        "",
        "Mean Jensen-Shannon divergence between the heads of a layer, and the loss increase (nats) when all of a "
        "layer's heads are zeroed one at a time, summed (mean over seeds, 95% t-interval):",
        *table(["layer", "JS between heads, trained", "untrained", "summed ablation cost"],
               [[str(l), ci(q4["js_within_layer_trained"][l]), ci(q4["js_within_layer_init"][l]), ci(ablation[l])]
                for l in range(layers)]),
        "",
        f"- Mean attention entropy: {ci(q4['entropy_trained'])} trained, {ci(q4['entropy_init'])} at initialisation "
        f"(uniform attention: {num(q4['uniform_entropy'])}).",
        *role_lines(q4),
    ]
    if div:
        lines += across_seeds_lines(div, layers)
    lines.append(fig("head_diversity", "head diversity"))
    return lines + head_dynamics_lines(q4.get("over_training"), fig)


def across_seeds_lines(div: dict, layers: int) -> list[str]:
    """Heads against their matches in other seeds' models, per layer, as a description: the seed pairs share seeds,
    so their intervals are too narrow to test with (no p, no verdict). The matching is a minimum, which pulls the
    matched divergence down and so the gap "within-layer - matched" up even where no head recurs: a layer counts only
    where its gap's interval lies above that of the null gap (the same matching against other layers), where the run
    measured one, over more than one pair of seeds."""
    gaps = [div["within_minus_matched"][f"layer_{l}"] for l in range(layers)]
    null = div.get("null_within_minus_matched")
    nulls = [null[f"layer_{l}"] for l in range(layers)] if null else None
    lines = [
        "- Heads across seeds: each head matched to the most similar head of the same layer in another seed's model "
        f"(Hungarian matching on their Jensen-Shannon divergence, {div['seed_pairs']} pairs of seeds). The pairs "
        f"share seeds, yet the intervals below treat them as {div['seed_pairs']} independent ones: they are too "
        "narrow, so these rows describe, they do not test. The matching chooses the pairing of least divergence, which "
        "pulls the matched divergence down and the gap up even where no head recurs: a positive gap alone shows "
        "nothing. " + (recurrence_sentence(gaps, nulls, layers) if nulls else
                       "This run measured no null for it (the same matching between different layers), so recurrence "
                       "of heads from seed to seed is not shown.")]
    header = ["layer", "within-layer - matched across seeds (JS)", "95% interval, pairs as if independent"]
    rows = [[str(l), num(d["estimate"]), f"[{num(d['low'])}, {num(d['high'])}]"] for l, d in enumerate(gaps)]
    if nulls:
        header += ["null: matched against other layers", "95% interval"]
        rows = [row + [num(n["estimate"]), f"[{num(n['low'])}, {num(n['high'])}]"] for row, n in zip(rows, nulls)]
    return lines + [*table(header, rows), ""]


def recurrence_sentence(gaps: list[dict], nulls: list[dict], layers: int) -> str:
    """How many layers' gaps lie above 0 and above their null gaps, interval against interval (both as if
    independent): a gap below 0 (heads matched across seeds further apart than the heads of one layer) is no
    recurrence, however far below it its null lies; one pair of seeds gives points, not intervals, and counts no
    layer."""
    if any(d["n"] < 2 for d in (*gaps, *nulls)):
        return ("One pair of seeds gives each gap and its null as a point, not an interval: recurrence of heads from "
                "seed to seed is not shown.")
    above = [l for l, (g, n) in enumerate(zip(gaps, nulls)) if g["low"] > max(n["high"], 0)]
    if not above:
        return ("In no layer does the gap's interval (as if independent) lie above 0 and above that of its null, the "
                "same matching against the other layers of the other seed: recurrence of heads from seed to seed is "
                "not shown.")
    return (f"In {len(above)} of {layers} layers (layer{'s' if len(above) > 1 else ''} "
            f"{', '.join(str(l) for l in above)}) the gap's interval (as if independent) lies above 0 and above that "
            "of its null, "
            "the same matching against the other layers of the other seed: a description of heads whose behaviour "
            "may recur from seed to seed at their layer, not a test of it.")


def role_lines(q4: dict) -> list[str]:
    """Q4's head roles (Clark et al.) and, per seed, the head whose removal costs most: two tables."""
    means = q4.get("role_counts_mean") or {}
    lines = ["", "Roles as Clark et al. report them: a head has a role when it gives at least "
             f"{num(q4['role_min_mass'])} of its attention (mean over queries) to one kind of target, on the probe's "
             "sentences (the heads over training, further down, are measured on fewer fixed sentences: their counts "
             f"differ). Heads of each role, out of {q4['heads']}:",
             *table(["role", "heads, seed by seed", "mean over seeds"],
                    [[role, listed(counts), ci(means.get(role))] for role, counts in q4["role_counts"].items()])]
    if q4.get("costliest_head"):
        lines += ["", "The head whose removal costs most at each seed: the masked-LM loss increase when its output is "
                  f"zeroed, at the training mask rate {num(q4['ablation_mlm_probability'])} (mean over seeds "
                  f"{ci(q4['costliest_increase'])} nats):",
                  *table(["seed", "head", "loss increase (nats)", "± (95%)", "masked tokens", "role", "role mass"],
                         [[str(c["seed"]), c["head"], f"{'+' * (c['increase'] >= 0)}{num(c['increase'])}", num(c["interval95"]),
                           str(c["masked_tokens"]), c["role"], num(c["mass"]) if c["mass"] is not None else "-"]
                          for c in q4["costliest_head"]])]
    return lines + [""]


MEASURE_NAMES = (("heads_with_role", "heads with a role"), ("max_role_mass", "largest role mass, mean over heads"),
                 ("max_role_ratio", "largest role mass / what uniform attention gives"),
                 ("within_layer_js", "within-layer JS divergence"),
                 ("ablation_max", "loss increase when the costliest head is zeroed (nats)"),
                 ("ablation_mean", "loss increase, mean over heads (nats)"),
                 ("qk_effective_rank", "effective rank of W_Q,h^T W_K,h"))


def head_dynamics_lines(d: dict | None, fig) -> list[str]:
    """Q4 over training: do the heads specialise before, as or after the loss leaves the unigram plateau? Chosen by
    the paired difference of the two steps over seeds: on the early grid against the shuffled-label control where the
    run has one (`early_timing_lines`), else on the saved states (margin: one evaluation interval)."""
    if not d:
        return []
    m, first, last = d["measures"], d["steps"][0], d["steps"][-1]
    return [
        *(early_timing_lines(d["early"]) + coarse_beside_early(d) if d.get("early") else coarse_timing_lines(d)),
        "",
        f"The heads from step {first} to step {last} (mean over {d['seeds']} seeds, 95% t-interval; every saved state "
        f"measured on the same {d['sentences']} sentences; {d['heads']} heads, role mass >= {num(d['role_min_mass'])}, "
        f"rank at most {d['head_dim']}):",
        *table(["measure", f"step {first}", f"step {last}"],
               [[label, ci(m[name][0]), ci(m[name][-1])] for name, label in MEASURE_NAMES if name in m]),
        fig("head_dynamics", "the heads during training, beside the gain over the unigram floor"),
    ]


def coarse_beside_early(d: dict) -> list[str]:
    """Where the early grid decides the timing, what the whole run's saved states say of it too, and why they do not
    decide: their grid step is the equivalence margin, so "as" there means within one of its steps."""
    if d["paired_seeds"] < d["min_seeds"]:
        return []
    every, verdict = d["steps"][1] - d["steps"][0], timing_verdict(d)
    coarse, early = st.verdict(d["specialisation_minus_exit"]), st.verdict(d["early"]["specialisation_minus_exit"])
    why = ("A grid that coarse cannot order the two within one of its steps, hence the early grid above"
           if coarse in ("equivalent", "unresolved") else
           "As on the early grid above" if coarse == early else "Unlike the early grid above")
    return ["", f"On the whole run's saved states, every {every} steps (specialisation there: the divergence has "
                f"risen half of its way), {verdict[0].lower()}{verdict[1:]}: specialisation - exit "
                f"{ci(d['specialisation_minus_exit'])} steps. {why}."]


def timing_verdict(d: dict) -> str:
    """"Heads specialise before / as / after the loss leaves the unigram plateau", by the paired test of a summary
    with `specialisation_minus_exit` (the saved states' or the early grid's); or why it is not resolved."""
    if d["paired_seeds"] < d["min_seeds"]:
        return (f"When heads specialise, relative to the loss leaving the unigram plateau, is not resolved at this "
                f"scale: {d['paired_seeds']} of {d['seeds']} seeds have both steps (the loss left the plateau in "
                f"{d['seeds_with_exit']}, the heads' divergence rose in {d['seeds_specialised']}) and an interval "
                f"needs {d['min_seeds']}")
    return compared(d["specialisation_minus_exit"], "Heads specialise after the loss leaves the unigram plateau",
                    "Heads specialise as the loss leaves the unigram plateau",
                    "Heads specialise before the loss leaves the unigram plateau",
                    "Whether heads specialise before, as or after the loss leaves the unigram plateau is not "
                    "resolved at this scale")


def coarse_timing_lines(d: dict) -> list[str]:
    """The timing on the saved states alone (results from before the early grid)."""
    first, last = d["steps"][0], d["steps"][-1]
    return [
        "", f"**{timing_verdict(d)}** (per seed, the loss leaves the plateau at the first evaluation whose gain over "
        f"the unigram floor exceeds {num(d['plateau_gain'])} nat, and the heads specialise at the first saved step "
        "where the mean Jensen-Shannon divergence between the heads of a layer has risen half of the way from its "
        f"value at step {first} to its value at step {last}; equivalence margin ±{num(d['margin'])} steps, one "
        f"evaluation interval. Plateau exit: step {ci(d['plateau_exit'])}; specialisation: step "
        f"{ci(d['specialisation'])}.)",
        *comparisons_table([(f"specialisation - exit, paired over {d['paired_seeds']} seeds",
                             d["specialisation_minus_exit"])], "steps"),
    ]


def early_timing_lines(e: dict) -> list[str]:
    """The timing on the early grid, against heads trained as long without linguistic signal, and the grid itself."""
    rows = [[str(step), ci(e["divergence"][i]), ci(e["control_divergence"][i]), ci(e["divergence_minus_control"][i]),
             ci(e["gain"][i])] for i, step in enumerate(e["steps"])]
    return [
        "", f"**{timing_verdict(e)}** (on states saved every {e['every']} steps up to step {e['until']}, beside a "
        f"control trained step for step with the same seed, data, masks and learning rate on masked targets permuted "
        "across each batch, so that it can learn token frequencies only. Per seed, the loss leaves the plateau at the "
        f"first grid step whose gain over the unigram floor exceeds {num(e['plateau_gain'])} nat, and the heads "
        "specialise at the first grid step from which the mean Jensen-Shannon divergence between the heads of a layer "
        "exceeds the control's by more than the control's largest change between neighbouring grid steps, at every "
        f"later grid step; equivalence margin ±{num(e['margin'])} steps, one grid step. Plateau exit: step "
        f"{ci(e['plateau_exit'])}; specialisation: step {ci(e['specialisation'])}.)",
        *comparisons_table([(f"specialisation - exit, paired over {e['paired_seeds']} seeds",
                             e["specialisation_minus_exit"])], "steps"),
        *own_start_lines(e),
        *details(f"Divergence between heads and gain over the unigram floor on the early grid (mean over {e['seeds']} "
                 "seeds, 95% t-interval)",
                 table(["step", "full", "control", "full - control", "gain (nats)"], rows)),
    ]


def own_start_lines(e: dict) -> list[str]:
    """The early timing read against the model's own start instead of the control (not in the protocol): where the
    control's divergence falls below its step-0 interval, the full model's excess over it includes that fall. The
    step from which the full model's divergence (mean over seeds) stays above its own step-0 interval, against the
    plateau exit."""
    ctrl, steps, step = e["control_divergence"], e["steps"], st.own_start_step(e)
    lowest = min(range(len(steps)), key=lambda i: ctrl[i]["estimate"])
    fall = (f"the control's divergence falls from {num(ctrl[0]['estimate'])} at step {steps[0]} to "
            f"{num(ctrl[lowest]['estimate'])} at step {steps[lowest]}, so the early excess over it includes that fall (how "
            "much of it, the table below shows). " if ctrl[lowest]["high"] < ctrl[0]["low"] else "")
    exit_ = e["plateau_exit"]
    if step is None:
        where = "the full model's divergence does not stay above its step-0 interval on this grid"
    elif exit_ is None:  # no seed left the plateau on this grid
        where = (f"the full model's divergence stays above its own step-0 interval from step {step} on; the loss "
                 "leaves its plateau at no step of this grid")
    else:
        order = ("before" if step < exit_["low"] else "after" if step > exit_["high"] else "as")
        where = (f"the full model's divergence stays above its own step-0 interval from step {step} on, {order} "
                 f"the plateau exit (step {ci(exit_)})")
    return ["", "Read against the heads' own start instead (not in PROTOCOL.md: a reading added after version 1's "
                f"confirmation run, outside the decision rule): {fall}"
                f"{where[0].upper()}{where[1:]} (mean over seeds, 95% t-intervals, the table below)."]
