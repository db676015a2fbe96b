"""`hf-minattn compare` on hand-written probes.json files (no model): the best-score cells say what the report would
(the pairs kept, too few pairs, the interval or its absence, the report's names for vector sets), the benchmark
figure's sentence says what was drawn, the settings that differ between the probes are listed, the same folder twice
is refused, and a damaged file is refused in one line naming it, before the output folder is made."""

import json
import re

import pytest

from hf_minattn.cli import main


def score_row(vectors, simlex=None, interval=None, **more):
    row = {"vectors": vectors, "wordsim353": None, "simlex999": simlex, "analogy": None, "simlex999_pairs": 3,
           "simlex999_total": 999, **more}
    if interval:
        row["simlex999_interval"] = {"estimate": simlex, "low": interval[0], "high": interval[1], "n": 300,
                                     "method": "bootstrap"}
    return row


def probes(seed=0, max_sentences=40, benchmarks=True, **changes):
    """A probes.json as `hf-minattn probe` writes it, cut to what compare reads: SimLex-999 scored on 3 pairs (4
    vector sets, no interval), WordSim-353 on 2 (too few to score), no word2vec, no analogy."""
    scores = [score_row("static", 0.5), score_row("layer_0", 1.0), score_row("layer_1", 1.0),
              score_row("layer_2", 0.5), score_row("random", -0.5)]
    pairs = {"wordsim353": {"kept": 2, "total": 353, "coverage": 2 / 353},
             "simlex999": {"kept": 3, "total": 999, "coverage": 3 / 999}}
    arguments = {"model": "/models/m", "out": "/probes/m", "corpus": "corpus.txt", "max_sentences": max_sentences,
                 "seed": seed, "figure_format": "both"}
    return {"model": "m", "model_class": "MinAttnModel", "num_layers": 2, "num_heads": 4, "hidden_size": 36,
            "geometry": {"layers": [0, 1, 2], "adjusted_self_similarity": [0.5, 0.45, 0.4]},
            "benchmarks": {"scores": scores, "pairs": pairs} if benchmarks else None,
            "provenance": {"seed": seed, "probe_sentences": max_sentences, "versions": {"torch": "2.0"},
                           "arguments": arguments}, **changes}


def folder(tmp_path, name, content):
    (tmp_path / name).mkdir()
    (tmp_path / name / "probes.json").write_text(content if isinstance(content, str) else json.dumps(content))
    return str(tmp_path / name)


def compare(tmp_path, *folders, figure_format="svg"):
    assert main(["compare", *folders, "--out", str(tmp_path / "cmp"), "--figure-format", figure_format]) == 0
    page = (tmp_path / "cmp" / "compare.html").read_text()
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<img[^>]*>", "", page))).replace("&#39;", "'")


def test_best_cells_show_the_pairs_kept_the_interval_and_too_few_pairs_as_the_report_does(tmp_path):
    with_interval = probes()
    with_interval["benchmarks"]["scores"][3] = score_row("layer_2", 0.4, (0.2, 0.6))
    with_interval["benchmarks"]["scores"][:3] = [score_row(v, 0.1) for v in ("static", "layer_0", "layer_1")]
    text = compare(tmp_path, folder(tmp_path, "a", probes()), folder(tmp_path, "b", with_interval))
    # WordSim-353: under 3 pairs no set has a Spearman, and the report says "too few pairs to score"
    assert text.count("too few pairs to score (2 of 353 pairs)") == 2
    # SimLex-999 on 3 pairs: the bootstrap gave no interval, and the cell says so
    assert "1.00 (no 95% interval): contextual layer 0, best of 4 sets, on 3 of 999 pairs; word2vec not trained" in text
    assert "0.40 [0.20, 0.60]: contextual layer 2, best of 4 sets, on 3 of 999 pairs" in text
    assert "layer_0" not in text and "(layer_" not in text  # the report's names, not probes.json's keys


def test_the_benchmark_figure_is_described_by_what_it_draws(tmp_path):
    text = compare(tmp_path, folder(tmp_path, "a", probes()), folder(tmp_path, "b", probes(seed=1)))
    assert "word2vec baseline (dashed, same corpus)" not in text and "no probe trained a word2vec baseline" in text
    assert "of each model's contextual vectors" in text
    assert "not scored for any model: WordSim-353 and Google analogies" in text
    figure = (tmp_path / "cmp" / "compare_benchmarks.svg").read_text()
    assert figure.count(">not scored<") == 2  # the two empty panels say so, as the report's figure does
    with_w2v = probes(seed=2)
    with_w2v["benchmarks"]["scores"].append(score_row("word2vec", 0.3))
    text = compare(tmp_path / "cmp", folder(tmp_path, "c", probes()), folder(tmp_path, "w", with_w2v))
    assert "with the word2vec baseline trained on the probe's own corpus (dashed) of w" in text


def test_the_settings_that_differ_between_the_probes_are_listed(tmp_path):
    text = compare(tmp_path, folder(tmp_path, "a", probes()), folder(tmp_path, "b", probes(seed=3, max_sentences=90)))
    assert "The probes differ in 3 recorded settings" in text
    assert "seed 0 3" in text and "probe_sentences 40 90" in text and "--max-sentences 40 90" in text
    assert "--out" not in text and "--figure-format" not in text  # where the files went is not how they were made
    text = compare(tmp_path / "cmp", folder(tmp_path, "c", probes()), folder(tmp_path, "d", probes()))
    assert "The probes were run with the same recorded settings (seed, corpora, arguments, package versions)." in text
    bare = probes(provenance={"seed": 0})  # only the seed recorded: the sentence names no more than that
    text = compare(tmp_path / "c2", folder(tmp_path, "e", bare), folder(tmp_path, "f", bare))
    assert "The probes were run with the same recorded settings (seed)." in text


def test_the_same_folder_twice_is_refused(tmp_path, capsys):
    a = folder(tmp_path, "a", probes())
    for again in (a, a + "/", f"{tmp_path}/./a"):
        assert main(["compare", a, folder(tmp_path, f"b{len(again)}", probes()), again,
                     "--out", str(tmp_path / "cmp")]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err == [f"hf-minattn compare: error: {a} and {again} are the same folder ({tmp_path / 'a'}); expected "
                       "each probe folder once"]
    assert not (tmp_path / "cmp").exists()


def damaged(change):
    r = probes()
    change(r)
    return r


@pytest.mark.parametrize("content, message", [
    (damaged(lambda r: r.update(geometry={})), "(it has no geometry results)"),
    (damaged(lambda r: r["geometry"].update(adjusted_self_similarity=[0.5, 0.4])),
     "(geometry.layers is [0, 1, 2], for 2 adjusted_self_similarity values; expected a list of as many layers)"),
    (damaged(lambda r: r["geometry"].update(adjusted_self_similarity=[0.5, None, "x"])),
     "(geometry.adjusted_self_similarity is [0.5, None, 'x']; expected a number per layer)"),
    (damaged(lambda r: r.update(num_layers="two")), "(num_layers is 'two'; expected a whole number)"),
    (damaged(lambda r: r.pop("model")), "(it has no model)"),
    (damaged(lambda r: r["benchmarks"]["scores"][0].pop("vectors")), "(it cannot be read (KeyError: 'vectors'))"),
    (damaged(lambda r: r["benchmarks"]["scores"][1].update(simlex999="high")),
     "(its benchmark scores are not all numbers)"),
])
def test_a_damaged_probes_json_is_refused_in_one_line_naming_it_before_anything_is_written(tmp_path, capsys, content,
                                                                                        message):
    good, bad = folder(tmp_path, "good", probes()), folder(tmp_path, "bad", content)
    assert main(["compare", good, bad, "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"hf-minattn compare: error: {tmp_path / 'bad' / 'probes.json'}: not a probes.json written by "
                   f"`hf-minattn probe` {message}"]
    assert not (tmp_path / "cmp").exists()
