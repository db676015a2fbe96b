"""The seven answers of FINDINGS.md, one sentence each, chosen by the stored verdicts and intervals: the same
sentence opens the findings' summary and its question's section. Each function reads `results` (a results.json)
and returns the sentence without its bold markers; `ANSWERS` is the ordered registry."""

from . import statistics as st
from .findings_format import block_output, caveat, ci, compared, num, too_narrow
from .word_pairs import holds_widened, pairs_method

NOT_MEASURED = "Not measured in this run (results.json has no probe answers)"


def q1_answer(results: dict) -> str:
    q1 = results["answers"]["q1"]
    rho = q1.get("spearman_over_seeds") or q1["rows"]["spearman_drift_vs_count"]
    trend = {1: "rows of frequent tokens move further", 0: "row movement is not told apart from frequency",
             -1: "rows of rare tokens move further"}[st.sign(rho)]
    if not q1["embeddings_updated"]:  # the rows did not move: no trend to report
        return "No: in this run the input embeddings did not move from their initial values"
    return f"Yes: backpropagation updates the input embeddings like every other weight, row by row: {trend}"


def q2_answer(results: dict) -> str:
    matched = results["answers"]["q2"].get("frozen_matched_minus_full")
    gain = results["answers"]["q2"].get("frozen_gain_minus_full")
    scaled = ("; with one learned scale of the frozen rows they are "
              + compared(gain, "still worse than trained ones", "as good as trained ones", "better than trained ones",
                         "not told apart from trained ones")) if gain else ""
    return compared(matched, "Yes, at this scale: frozen random embeddings are worse, even with the capacity given back",
                    "No, at this scale: with the capacity given back, frozen random embeddings do as well as trained "
                    "ones",
                    "No, at this scale: with the capacity given back, frozen random embeddings are better",
                    "Not resolved at this scale: with the capacity given back, the data cannot tell frozen random "
                    f"embeddings from trained ones (neither a difference nor equivalence within ±{matched['margin']})"
                    if matched else None) + scaled


def q3_answer(results: dict) -> str:
    identity = results["answers"]["q3"]["identity_minus_full"]
    return ("No: they are separate matrices with their own shapes and gradients; set to the identity "
            "(W_Q = W_K = W_V = I, capacity matched), the model "
            + compared(identity, "is worse", "does as well", "is better",
                       "is not told apart from the full model at this scale"))


def q4_answer(results: dict) -> str:
    q4 = results["answers"].get("q4")
    if not q4:
        return NOT_MEASURED
    layers = len(q4["js_within_layer_trained"])
    apart = [l for l in range(layers) if st.verdict(q4["js_trained_minus_init"][f"layer_{l}"]) == "higher"]
    early = (q4.get("over_training") or {}).get("early")
    timing = ""
    if early and early["paired_seeds"] >= early["min_seeds"]:  # the early grid against the shuffled-label control
        timing = "; measured against heads trained as long without linguistic signal, " + compared(
            early["specialisation_minus_exit"], "they specialise after the loss leaves its unigram plateau",
            "they specialise as the loss leaves its unigram plateau",
            "they specialise before the loss leaves its unigram plateau",
            "whether they specialise before, as or after the loss leaves its unigram plateau is not resolved")
        own = st.own_start_step(early)  # the same timing read against the heads' own start
        if st.verdict(early["specialisation_minus_exit"]) == "lower" and (own is None
                                                                          or own >= early["plateau_exit"]["low"]):
            timing += " (but not read against the heads' own start: then not before it)"
    return ("From a random initialisation, then gradient descent. "
            + (f"Training makes the heads of {len(apart)} of {layers} layers attend more differently from each other "
               "than at initialisation" if apart else
               "Training does not make the heads of any layer measurably more different from each other than at "
               "initialisation") + timing)


VERSUS = {"higher": "above", "lower": "below", "equivalent": "equivalent to", "unresolved": "not told apart from"}
AT_SCALE = "in a model trained at scale"  # the reference encoder, beside ours in answers 5-7
REFERENCE_DESCRIPTIONS = {
    "all-MiniLM-L6-v2": "is six layers distilled from a larger model, then fine-tuned contrastively for sentence "
                        "embeddings: trained at scale, but not a plain masked language model."}


# possessives, as the sentences compare them
WORD2VECS, OWN_INPUTS, UNTRAINED_MODELS = "word2vec's", "its own input embeddings'", "the untrained model's"


def _versus(d: dict | None, what: str) -> str:
    """"above word2vec's", "not told apart from the untrained model's (its unadjusted ...)": the verdict's word, what
    it is compared with, then the caveat its numbers add."""
    verdict = st.verdict(d)
    if not holds_widened(d):
        return f"not shown {VERSUS[verdict]} {what}: {VERSUS[verdict]} only by an interval drawn too narrow, {too_narrow(d)}"
    return f"{VERSUS[verdict]} {what}{caveat(d)}"


def _alone(d: dict | None, seeds: dict | None, words: dict, it: str, sample: str) -> str:
    """", but above it over the seeds alone, the pairs not resampled": the seed level's verdict (`words`' word for
    it) where it differs from the verdict the answer states, which has the items as a sample too (PROTOCOL.md,
    section 5); "" where they agree or there is no seed level."""
    if d is None or seeds is None or st.verdict(seeds) == st.verdict(d):
        return ""
    return f", but {words[st.verdict(seeds)]} {it} over the seeds alone, {sample} not resampled"


def parameter_count(n: int) -> str:
    """2915456 -> "2.9M", 20000 -> "20k": two significant digits, for a sentence."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{float(f'{n / size:.2g}'):g}{suffix}"
    return str(n)


def ours(results: dict) -> str:
    """"in our 2.9M-parameter model at this scale", the full model's parameter count from results.json."""
    n = (results["answers"].get("scale") or {}).get("parameters")
    return f"in our {parameter_count(n)}-parameter model at this scale" if n else "in our model at this scale"


def exposure(matched: dict | None) -> str:
    """"a word2vec trained for 1.43 passes over the text, as many as the model made"; from runs that trained whole
    epochs, "a word2vec trained for 1 epoch where the model made 1.43 passes over the text"."""
    if not matched:
        return "a word2vec trained at the model's exposure"
    epochs = matched["epochs"]
    if isinstance(epochs, float):  # fractional passes, the model's to 2 decimals (runs of whole epochs stored ints)
        return f"a word2vec trained for {num(epochs)} passes over the text, as many as the model made"
    return (f"a word2vec trained for {epochs} epoch{'' if epochs == 1 else 's'} where the model made "
            f"{num(matched['model_passes'])} passes over the text")


def q5_answer(results: dict) -> str:
    """Our last layer against the untrained model and word2vec; then, where the run has the reference encoder, its
    last layer against word2vec and its own input embeddings."""
    q5 = results["answers"].get("q5")
    if not q5:
        return NOT_MEASURED
    comparisons, pairs = q5["comparisons"] or {}, (q5["pairs"] or {}).get("wordsim353", {})
    matched, ref = comparisons.get("last_vs_word2vec_matched"), q5.get("reference_scores")
    levels = st.seed_levels(comparisons)

    def versus(family, name, what, seeds=levels):  # the verdict, and the seeds alone's where it differs
        return _versus(family.get(name), what) + _alone(family.get(name), seeds.get(name), VERSUS, "it", "the pairs")

    text = (f"Measured against human similarity judgements (WordSim-353, {pairs.get('kept')} of {pairs.get('total')} "
            "pairs, both words in every vocabulary), "
            + (f"{ours(results)}, the last-layer vectors are " if ref else "the full model's last-layer vectors are ")
            + f"{versus(comparisons, 'last_vs_untrained', UNTRAINED_MODELS)} and "
            + versus(comparisons, "last_vs_word2vec", WORD2VECS)
            + (f" (tuned; {versus(comparisons, 'last_vs_word2vec_matched', exposure(q5.get('word2vec_matched')))})"
               if matched else ""))
    if ref:
        c, theirs = ref["comparisons"], st.seed_levels(ref["comparisons"] or {})
        text += (f"; {AT_SCALE} ({ref['name']}), the last layer's are {versus(c, 'vs_word2vec', WORD2VECS, theirs)} "
                 f"and {versus(c, 'vs_static', OWN_INPUTS, theirs)}")
    if pairs_method(comparisons) == "hierarchical":
        text += "; the comparisons between systems from word-pair intervals drawn too narrow (the note under the table)"
    return text


REFERENCE_SENSES = {"higher": "its last layer tells them apart above chance",
                    "lower": "its last layer classifies them below chance",
                    "equivalent": "its last layer is at chance on them",
                    "unresolved": "whether its last layer tells them apart is not resolved"}


SENSE_COMPARISONS = (("vs_chance", "chance"), ("vs_untrained", "the untrained model"),
                     ("vs_position", "the control that sees only position and sentence length"))


def q6_answer(results: dict) -> str:
    """Our last layer on the homonyms' senses against chance and the controls; then, where the run has the reference
    encoder with its test over homonyms, its last layer against chance."""
    senses = (results["answers"].get("q6") or {}).get("senses")
    if not senses:
        return "Senses were not measured in this run"
    ref = senses.get("reference") or {}
    beside = "vs_chance" in ref  # "at this scale" is then said once, for our model
    here = "" if beside else " at this scale"
    # with the homonyms as a sample too where the probes allow it: the interval a reader can generalise from
    c = {**senses["comparisons"], **(senses.get("comparisons_items") or {})}
    beats_controls = st.verdict(c["vs_position"]) == "higher" and st.verdict(c["vs_untrained"]) == "higher"
    text = {"higher": "the last layer tells a homonym's senses apart above chance"
                      + (", above the untrained model and above the control that sees only position and sentence "
                         "length" if beats_controls else
                         ", but not above both the untrained model and the control that sees only position and "
                         f"sentence length: that it comes from meaning is not shown{here}"),
            "lower": "the last layer classifies a homonym's senses below chance",
            "equivalent": "the last layer is at chance on a homonym's senses (equivalent within the margin)",
            "unresolved": f"not resolved{here} whether the last layer tells a homonym's senses apart"
            }[st.verdict(c["vs_chance"])]
    items = senses.get("comparisons_items") or {}
    alone = [f"{VERSUS[st.verdict(senses['comparisons'][name])]} {what}" for name, what in SENSE_COMPARISONS
             if name in items and st.verdict(items[name]) != st.verdict(senses["comparisons"][name])]
    if alone:  # the answer reads the homonyms as a sample too; where the seeds alone say otherwise, both are given
        text += f" (over the seeds alone, the homonyms not resampled: {', '.join(alone)})"
    if not beside:
        return f"Senses: {text}"
    return (f"Senses: {ours(results)}, {text}; {AT_SCALE} ({ref['name']}), "
            f"{REFERENCE_SENSES[st.verdict(ref['vs_chance'])]}")


def q7_answer(results: dict) -> str:
    q7 = results["answers"].get("q7")
    if not q7:
        return NOT_MEASURED
    if q7.get("mixing"):
        return q7_mixing_answer(q7["mixing"], ours(results))
    share = q7["self_share"] or {}
    share = share if share.get("n", 2) >= 2 else {}  # one seed: no interval, no verdict
    return ("Each head's attention weights are a weighted directed graph over the tokens, but a layer's edges are not "
            f"word-to-word relations: followed through the residual path and the layers (rollout, after layer "
            f"{block_output(q7['layer'])}), "
            + ("the residual path keeps most of each word its own" if share.get("low", 0) > 0.5 else
               "most of each word comes from the other words" if share.get("high", 1) < 0.5 else
               "whether most of a word stays its own is not resolved"))


# How a word's share of its own input under rollout compares: rollout attributes, it does not show what a word "keeps".
SHARE = {"higher": "larger than", "lower": "smaller than", "equivalent": "as large as",
         "unresolved": "not told apart from"}


def q7_mixing_answer(mixing: dict, in_ours: str = "in our model at this scale") -> str:
    """Q7 over many sentences: rollout with the residual weight measured from the layers' norms, against uniform
    attention with the same weights and against the untrained model (and, where the fixed weight 0.5 turns that
    comparison around, what it says there); the reference encoder beside it. `in_ours`: how the sentence names our
    model (`ours`)."""
    c, levels = mixing["comparisons"], st.seed_levels(mixing["comparisons"])
    uniform, untrained = c["full_minus_uniform_measured"], c["full_minus_untrained_measured"]

    def alone(name):  # the seeds alone's verdict, where it differs
        return _alone(c[name], levels.get(name), SHARE, "it", "the sentences")

    text = ("Each head's attention weights are a weighted directed graph over the tokens; followed through the "
            f"residual path and the layers (rollout over {mixing['sentences']} sentences, residual weights measured "
            f"from the layers' norms), the share of a word that rollout attributes to its own input {in_ours} is "
            f"{SHARE[st.verdict(uniform)]} uniform attention's with the same residual weights"
            f"{caveat(uniform)}{alone('full_minus_uniform_measured')}, and {SHARE[st.verdict(untrained)]} the "
            f"untrained model's{caveat(untrained)}{alone('full_minus_untrained_measured')}"
            f"{_fixed_weight_clause(mixing)}")
    ref = mixing.get("reference")
    if ref:
        text += (f"; {AT_SCALE} ({ref['name']}), "
                 f"{SHARE[st.verdict(ref['measured']['minus_uniform'])]} uniform attention's"
                 f"{caveat(ref['measured']['minus_uniform'])}")
    return text


def _fixed_weight_clause(mixing: dict) -> str:
    """Where trained - untrained at the fixed residual weight 0.5 has another verdict than at the measured weights:
    that verdict, and which model's layers measure the larger residual weights (every layer's interval apart)."""
    c = mixing["comparisons"]
    half, measured = c.get("full_minus_untrained_half"), c["full_minus_untrained_measured"]
    if half is None or st.verdict(half) == st.verdict(measured):
        return ""
    weights = mixing.get("residual_weight") or {}
    trained, untrained = weights.get("full") or [], weights.get("untrained") or []
    larger = ""
    if trained and len(trained) == len(untrained):
        if all(u["low"] > t["high"] for t, u in zip(trained, untrained)):
            larger = ", whose layers measure larger residual weights"
        elif all(t["low"] > u["high"] for t, u in zip(trained, untrained)):
            larger = ", whose layers measure smaller residual weights"
    return f"{larger} (with the residual weight fixed at 0.5 in both: {SHARE[st.verdict(half)]} it)"


def reference_name(results: dict) -> str | None:
    """The reference encoder an answer sets beside ours, or None."""
    a = results["answers"]
    named = [(a.get("q5") or {}).get("reference_scores"), ((a.get("q6") or {}).get("senses") or {}).get("reference"),
             ((a.get("q7") or {}).get("mixing") or {}).get("reference")]
    return next((r["name"] for r in named if r and r.get("name") and (r.get("comparisons") or r.get("vs_chance")
                                                                      or r.get("measured"))), None)


# (number, heading, answer): the headings are the sections' anchors, which other documents link to.
ANSWERS = (
    (1, "Are the input embedding vectors updated during training, or only W_Q, W_K, W_V?", q1_answer),
    (2, "If W_Q, W_K, W_V are trained, is there any need to train the input embeddings?", q2_answer),
    (3, "Are W_Q and W_K the embedding matrix? What if W_Q = W_K = W_V = I?", q3_answer),
    (4, "Where do the weight matrices come from, and do different heads end up doing different things?", q4_answer),
    (5, "Does training put words that occur together, or that are related, close together?", q5_answer),
    (6, "What do the contextual embeddings capture that the static ones do not?", q6_answer),
    (7, "Is self-attention a graph?", q7_answer),
)


def heading(number: int) -> str:
    return f"## {number}. {ANSWERS[number - 1][1]}"


REFERENCE_SENSE_KEY = ("the model trained at scale: sense accuracy - chance, over homonyms",
                       ("q6", "senses", "reference", "vs_chance"))
# question -> (what, where in results["answers"]): the interval each answer rests on, printed beside it
KEYS = {1: (("Spearman of a row's distance with its token's count", ("q1", "spearman_over_seeds")),),
        2: (("frozen - full loss with the capacity given back, nats", ("q2", "frozen_matched_minus_full")),
            ("with one learned scale - full", ("q2", "frozen_gain_minus_full"))),
        3: (("identity - full loss, nats", ("q3", "identity_minus_full")),),
        5: (("Spearman, last layer - untrained", ("q5", "comparisons", "last_vs_untrained")),
            ("last layer - word2vec", ("q5", "comparisons", "last_vs_word2vec")),
            ("Spearman of the model trained at scale, last layer", ("q5", "reference_scores", "rho")),
            ("its last layer - word2vec", ("q5", "reference_scores", "comparisons", "vs_word2vec"))),
        6: (("sense accuracy - chance", ("q6", "senses", "comparisons", "vs_chance")), REFERENCE_SENSE_KEY),
        7: (("a word's share of its own input", ("q7", "self_share")),)}
# Where the answers hold comparisons with the items as a sample too (newer results), the answer rests on these
ITEM_KEYS = {
    6: (("q6", "senses", "comparisons_items"),
        (("sense accuracy - chance, seeds x homonyms", ("q6", "senses", "comparisons_items", "vs_chance")),
         ("- untrained model", ("q6", "senses", "comparisons_items", "vs_untrained")),
         (("- position-and-length control", ("q6", "senses", "comparisons_items", "vs_position")),  # or else:
          ("- position-and-length control, over seeds alone", ("q6", "senses", "comparisons", "vs_position"))),
         REFERENCE_SENSE_KEY)),
    7: (("q7", "mixing"),
        (("a word's share of its own input", ("q7", "mixing", "measured", "full")),
         ("trained - uniform attention", ("q7", "mixing", "comparisons", "full_minus_uniform_measured")),
         ("trained - untrained", ("q7", "mixing", "comparisons", "full_minus_untrained_measured")),
         ("trained - untrained, residual weight 0.5", ("q7", "mixing", "comparisons", "full_minus_untrained_half")),
         ("the model trained at scale - uniform attention", ("q7", "mixing", "reference", "measured", "minus_uniform")))),
}


def _at(answers: dict, path) -> dict | None:
    for key in path:
        answers = answers.get(key) if isinstance(answers, dict) else None
    return answers


def _alternatives(key):
    """A key's (what, path) pairs in order of preference: one pair, or a tuple of them (the first stored wins)."""
    return key if isinstance(key[0], tuple) else (key,)


def key_numbers(results: dict, number: int) -> str:
    """" (what: estimate [low, high]; ...)" for the intervals question `number` rests on; "" where none is stored."""
    keys = KEYS.get(number, ())
    if number in ITEM_KEYS and _at(results["answers"], ITEM_KEYS[number][0]):
        keys = ITEM_KEYS[number][1]
    found = [next(((what, value) for what, path in _alternatives(key) if (value := _at(results["answers"], path))),
                  None) for key in keys]
    parts = [f"{what}: {ci(value)}" for what, value in filter(None, found)]
    return f" ({'; '.join(parts)})" if parts else ""


def opening(results: dict, number: int) -> list[str]:
    """A section's heading and its answer in bold, with the intervals it rests on."""
    return [heading(number), "", f"**{ANSWERS[number - 1][2](results)}**{key_numbers(results, number)}."]


def answers_summary(results: dict) -> list[str]:
    """The seven answers first, each linked to its section."""
    lines = ["**The answers** (one sentence each, chosen by the verdicts below; the sections give the numbers):", ""]
    for number, question, answer in ANSWERS:
        anchor = "".join(c for c in f"{number}. {question}".lower() if c.isalnum() or c in " -_").replace(" ", "-")
        lines.append(f"{number}. [{question}](#{anchor}) {answer(results)}{key_numbers(results, number)}.")
    name = reference_name(results)
    if name:  # where FINDINGS first names it: what kind of model it is
        lines += ["", f"{name}, the model trained at scale in these answers, "
                  + REFERENCE_DESCRIPTIONS.get(name, "is the pretrained encoder probed beside ours.")]
    return lines
