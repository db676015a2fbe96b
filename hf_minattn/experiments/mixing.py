"""Q7's numbers: how much of a word's representation after the last layer rollout attributes to its own input, over
many sentences, against controls that could have come out the other way.

For each seed, the full and the untrained model run `probes.mixing.rollout_self_shares` over the same sentences, and
the pretrained reference (all-MiniLM-L6-v2, where installed) once. Each gives, per sentence, the rollout self-share
with the residual weight measured from the layer's norms and with Abnar & Zuidema's 0.5, and uniform attention's
self-share with the same weights on the same tokens. The sentences are measured at every seed, so the intervals are
crossed bootstraps over seeds and sentences (`stats.crossed_draws`): a sentence where every seed gives a word a large
self-share counts once.

The comparisons (one Holm family):
- full - uniform: does rollout attribute more (or less) of a word to its own input with trained attention than with
  attention spread evenly, at the same residual weights? Rollout's construction alone gives most of a word to the
  others; this is the part attention chooses.
- full - untrained: what training changed, at each one's own measured weights.
"""

import numpy as np

from hf_minattn.stats import crossed_bootstrap

from . import statistics as st
from .probe_answers import per_layer
from .training import log

MIXING_SENTENCES = 200  # Q7's sample of sentences (the first of the probe sentences: the validation split first)
MIXING_MARGIN = 0.02  # self-shares within +-0.02 are "equivalent" (uniform over 15 tokens after 4 layers: 0.125)
WEIGHTINGS = ("measured", "half")


def mixing_rows(model, tokenizer, sentences) -> dict:
    """{column: [one value per sentence]} of one model: measured, half, uniform_measured, uniform_half, and the
    residual weight per layer averaged over the sentences."""
    from hf_minattn.probes.mixing import rollout_self_shares

    rows = rollout_self_shares(model, tokenizer, sentences)
    columns = {key: [row[key] for row in rows] for key in ("measured", "half", "uniform_measured", "uniform_half")}
    columns["residual_weight"] = np.mean([row["residual_weight"] for row in rows], axis=0).tolist()
    return columns


def mixing_over_seeds(folders: dict, settings: dict, seeds, sentences, reference=None, device="cpu") -> dict:
    """{"sentences": n, "full": {seed: columns}, "untrained": {seed: columns}, "reference": columns or None} over the
    first `settings["mixing_sentences"]` (default MIXING_SENTENCES) of `sentences`; `reference` is
    (model, tokenizer, name) or None."""
    from hf_minattn.probes.loading import load_encoder

    sample = list(sentences[: settings.get("mixing_sentences", MIXING_SENTENCES)])
    out = {"sentences": len(sample), "full": {}, "untrained": {}, "reference": None}
    for name in ("full", "untrained"):
        for seed in seeds:
            log(f"rollout self-shares: {name}, seed {seed}, {len(sample)} sentences")
            model, tokenizer = load_encoder(folders[name][seed], device=device)
            out[name][seed] = mixing_rows(model, tokenizer, sample)
    if reference is not None:
        model, tokenizer, ref_name = reference
        log(f"rollout self-shares: {ref_name}")
        out["reference"] = {**mixing_rows(model, tokenizer, sample), "name": ref_name}
    return out


def _matrix(by_seed: dict, key: str, seeds=None) -> np.ndarray:
    """(seeds, sentences): `seeds` (default: all of `by_seed`'s, sorted) in that order."""
    return np.array([by_seed[s][key] for s in (sorted(by_seed) if seeds is None else seeds)], dtype=float)


def mixing_answers(mixing: dict, n_resamples: int = 1000) -> dict | None:
    """Q7's answer from `mixing_over_seeds`: per weighting, the full model's self-share, uniform attention's and the
    untrained model's (crossed intervals), the two differences tested and Holm-adjusted as one family, the residual
    weights measured per layer, and the reference encoder's numbers over the sentences alone."""
    if not mixing or not mixing.get("full"):
        return None
    full, untrained = mixing["full"], mixing["untrained"]
    answer = {"sentences": mixing["sentences"], "seeds": len(full), "margin": MIXING_MARGIN,
              "residual_weight": {name: per_layer([v["residual_weight"] for v in by_seed.values()])
                                  for name, by_seed in (("full", full), ("untrained", untrained))}}
    family, paired = {}, st.common_seeds(full, untrained)  # full - untrained pairs the same seed's models, by id
    for w in WEIGHTINGS:
        mine, uniform, init = _matrix(full, w), _matrix(full, f"uniform_{w}"), _matrix(untrained, w)
        answer[w] = {name: crossed_bootstrap(m, n_resamples=n_resamples).to_dict()
                     for name, m in (("full", mine), ("uniform", uniform), ("untrained", init))}
        family[f"full_minus_uniform_{w}"] = st.crossed_tested(mine - uniform, MIXING_MARGIN, n_resamples)
        family[f"full_minus_untrained_{w}"] = st.crossed_tested(
            _matrix(full, w, paired) - _matrix(untrained, w, paired), MIXING_MARGIN, n_resamples)
    answer["comparisons"] = st.holm_family(family)
    ref = mixing.get("reference")
    if ref:
        answer["reference"] = {"name": ref["name"], "residual_weight": ref["residual_weight"],
                               **{w: {"self_share": crossed_bootstrap([ref[w]], n_resamples=n_resamples).to_dict(),
                                      "minus_uniform": {**st.crossed_tested(
                                          np.array([ref[w]]) - np.array([ref[f"uniform_{w}"]]), MIXING_MARGIN,
                                          n_resamples, n=len(ref[w])), "family_size": 1}}
                                  for w in WEIGHTINGS}}
    return answer
