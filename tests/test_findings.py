"""FINDINGS.md answers first: seven sentences chosen by the stored verdicts, every number one of results.json's
(rounded to the digits shown), p-values labelled by what they are, and `hf-minattn findings` re-rendering the
committed docs/findings/ exactly as committed."""

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_experiments_probe_answers import probes
from test_experiments_verdicts import NUMBER, stored_numbers, synthetic, with_loss_allocation

import hf_minattn
from hf_minattn.cli import main as cli_main
from hf_minattn.experiments.findings import load_results, protocol_record, render_findings, rerender_findings
from hf_minattn.experiments.findings_answers import ANSWERS, key_numbers
from hf_minattn.experiments.findings_format import df_cell, num, p_cell, p_value, row_cells, verdict_cell
from hf_minattn.experiments.statistics import seed_levels
from hf_minattn.experiments.probe_answers import probe_answers

FINDINGS = Path(__file__).resolve().parents[1] / "docs" / "findings"
# The committed runs: the confirmation run in docs/findings (PROTOCOL.md version 3), the exploration run, the first
# confirmation (version 1) and its replication beside it
COMMITTED = [FINDINGS, FINDINGS / "exploration", FINDINGS / "confirmation-v1", FINDINGS / "replication"]
BELOW = "< 0.0001"  # a stored p of 0.0 (results.json keeps 4 decimals)


def numbers_missing(text: str, results: dict) -> list[str]:
    """The numbers printed in `text` (headings, figure links and the summary's question numbers aside) that no number
    of `results` rounds to, at the number of decimals printed. A p printed as "< 0.0001" must stand for a stored 0."""
    known = stored_numbers(results)
    first, total = results.get("scored_sequences") or (0, 0)
    known.add(float(total - first))  # the sequences scored: `scored_set` prints the difference of two stored numbers
    rounded = {decimals: {round(k, decimals) for k in known} for decimals in range(17)}
    body = [line for line in text.splitlines() if not line.startswith(("#", "!["))]
    missing = []
    for line in body:
        if BELOW in line:
            assert 0.0 in rounded[4]
            line = line.replace(BELOW, "")
        line = re.sub(r"\]\(#[^)]*\)", "]", re.sub(r"^\d\. \[", "[", line))  # the summary: numbers and links
        for match in NUMBER.finditer(line):
            token = match.group()
            decimals = len(token.split(".")[1]) if "." in token else 0
            percent = line[match.end():match.end() + 1] == "%"  # e.g. the intervals' stored confidence 0.95 as 95%
            if round(float(token), decimals) not in rounded[decimals] and not (
                    percent and round(float(token) / 100, decimals + 2) in rounded.get(decimals + 2, ())):
                missing.append(token)
    return missing


def comparison_rows_missing(text: str, results: dict) -> list[str]:
    """The rows of `text`'s comparison tables (estimate, interval, df, p, verdict) that no single stored comparison
    of `results` prints as: each cell must come from the same stored dict, so a low end printed as a high end, or one
    comparison's verdict beside another's interval, is caught where `numbers_missing` (each number somewhere) is not."""
    stored = set()

    def walk(node):
        if isinstance(node, dict):
            if {"estimate", "low", "high"} <= set(node) and None not in (node["low"], node["high"]):
                stored.add(tuple(row_cells(node)))
                half = "above" if node["low"] > 0.5 else "below" if node["high"] < 0.5 else "includes"
                stored.add((*row_cells(node)[:3], "-", f"{half} 0.5"))  # an older Q7 row: one share against 0.5
            # a family's seed levels, decided at rendering from its stored t-tests over seeds ("seeds")
            stored.update(tuple(row_cells(level)) for level in seed_levels(node).values())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(results)
    missing, in_table = [], False
    for line in text.splitlines():
        if line.startswith("| comparison") and line.endswith("| df | p | verdict |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("| ---"):
            cells = tuple(cell.strip() for cell in line.strip("|").split(" | "))
            if cells[1:] not in stored:
                missing.append(line)
    return missing


def full_results(**probe_kwargs) -> dict:
    """Synthetic results (no training) with every question answered: the loss runs of test_experiments_verdicts and
    the probe summaries of test_experiments_probe_answers."""
    results = with_loss_allocation(synthetic())
    results["answers"].update(probe_answers(results, probes(**probe_kwargs), results["config"]))
    return results


def summary_line(text: str, number: int) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"{number}. ["))


def section(text: str, number: int) -> str:
    return re.split(r"^## ", text, flags=re.M)[number]


def test_the_findings_open_with_seven_answers_each_repeated_at_its_section():
    results = full_results()
    text = render_findings(results, {})
    head = text.split("\n## ")[0]
    for number, question, answer in ANSWERS:
        sentence = answer(results)
        assert f"{number}. [{question}](#{number}-" in summary_line(head, number) and sentence in head
        assert section(text, number).startswith(f"{number}. {question}\n\n**{sentence}**{key_numbers(results, number)}.")
        # each section's comparisons are in a table with the columns the answer rests on
        assert "| estimate | 95% interval | df | p | verdict |" in section(text, number)


def flipped(number: int) -> tuple[dict, dict]:
    """Two results that differ only in the numbers behind question `number`'s verdict."""
    if number == 1:
        return synthetic(), synthetic(rare_move_further=True)
    if number == 2:
        return synthetic(), synthetic({"frozen_embeddings_matched": (-0.1, -0.12, -0.11)})
    if number == 3:
        return synthetic(), synthetic({"identity_qkv": (0.1, -0.12, 0.01)})
    if number == 5:
        return full_results(), full_results(q5_last_vs_untrained="unresolved")
    if number == 6:
        return full_results(), full_results(full_accuracy=(0.5, 0.505, 0.495))
    if number == 7:
        return full_results(), full_results(rollout_self=0.2)
    same = probes()  # 4: the trained heads' divergence equal to the untrained one's
    for s in same["by_seed"]["full"]:
        same["by_seed"]["full"][s]["heads"]["within_layer_js"] = list(same["by_seed"]["untrained"][s]["heads"]["within_layer_js"])
    results = full_results()
    other = copy.deepcopy(results)
    other["answers"].update(probe_answers(other, same, other["config"]))
    return results, other


@pytest.mark.parametrize("number", range(1, 8))
def test_each_answer_flips_when_its_numbers_flip(number):
    a, b = flipped(number)
    answer = ANSWERS[number - 1][2]
    assert answer(a) != answer(b)
    text_a, text_b = render_findings(a, {}), render_findings(b, {})
    assert summary_line(text_a, number) != summary_line(text_b, number)
    assert f"**{answer(b)}**" in section(text_b, number)


def test_word_pair_intervals_drawn_hierarchically_are_flagged_as_too_narrow():
    """A results.json from before the crossed draw stored its word-pair comparisons as "hierarchical": FINDINGS says
    under them that they are too narrow; one drawn crossed says nothing of the kind."""
    results = full_results()
    crossed = render_findings(results, {})
    assert "crossed bootstrap over" in crossed and "These intervals are too narrow" not in crossed
    for c in results["answers"]["q5"]["comparisons"].values():
        c["method"] = "hierarchical"
    older = render_findings(results, {})
    assert "hierarchical bootstrap over" in older and "**These intervals are too narrow:**" in older
    caveat = "the comparisons between systems from word-pair intervals drawn too narrow (the note under the table)"
    assert caveat in summary_line(older, 5) and caveat not in summary_line(crossed, 5)


def test_the_scale_paragraph_says_crossed_comparisons_need_both_levels_where_they_were_tested_so():
    rule = "a comparison's p is the larger of its crossed bootstrap's and the t-test's of the seeds' means"
    results = json.loads((FINDINGS / "confirmation-v1" / "results.json").read_text())  # drawn before the rule
    assert rule not in render_findings(results, {})
    crossed = results["answers"]["q7"]["mixing"]["comparisons"]["full_minus_uniform_measured"]
    crossed["seeds"] = {"estimate": 0.05, "low": 0.04, "high": 0.06, "n": 5, "df": 4, "p": 0.001}
    assert rule in render_findings(results, {})


def test_a_stored_verdict_chooses_the_sentence_not_the_rounded_numbers():
    """Flip only the stored verdict of the comparison behind question 2: the sentence follows it."""
    results = synthetic()
    comparison = results["answers"]["q2"]["frozen_matched_minus_full"]
    sentences = {}
    for verdict in ("higher", "lower", "equivalent", "unresolved"):
        comparison["verdict"] = verdict
        sentences[verdict] = ANSWERS[1][2](results)
    assert len(set(sentences.values())) == 4 and "worse" in sentences["higher"] and "better" in sentences["lower"]


@pytest.mark.parametrize("results", [synthetic(), full_results(), synthetic(seeds=(0, 1))], ids=["losses", "all", "2 seeds"])
def test_every_number_in_the_synthetic_findings_is_in_the_results(results):
    text = render_findings(results, {})
    assert len(NUMBER.findall(text)) > 100 and not numbers_missing(text, results)


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda folder: folder.name)
def test_every_number_in_the_committed_findings_is_in_its_results_json(folder):
    results = json.loads((folder / "results.json").read_text())
    text = (folder / "FINDINGS.md").read_text()
    assert len(NUMBER.findall(text)) > 300 and not numbers_missing(text, results)
    assert text.count("| df | p | verdict |") >= 10 and not comparison_rows_missing(text, results)
    row = next(line for line in text.splitlines() if line.endswith("| lower |"))
    assert comparison_rows_missing(text.replace(row, row[: -len("lower |")] + "higher |"), results) != []
    # 2-3 significant digits: no number with more than 4 decimals (p-values and tiny values keep theirs)
    assert not [x for x in NUMBER.findall(text) if "." in x and len(x.split(".")[1].lstrip("0")) > 3]


def test_numbers_are_printed_at_three_significant_digits_and_p_never_crosses_the_threshold():
    assert [num(x) for x in (0.5844, 158.0813, -161.02, 2915456, 0.0002, 1.0, 0.0, None)] == \
        ["0.584", "158", "-161", "2915456", "0.0002", "1", "0", "n/a"]
    assert p_value(0.0098) == "0.0098" and p_value(0.0546) == "0.055" and p_value(0.0496) == "0.0496"
    assert p_value(0.0) == BELOW and p_value(1.0) == "1"


def test_a_p_is_called_holm_adjusted_only_within_a_family():
    alone = {"p": 0.0051, "p_holm": 0.0051, "verdict": "lower"}
    assert p_cell(alone) == "0.0051 (one test, unadjusted)" and "Holm" not in p_cell({**alone, "family_size": 1})
    assert p_cell({**alone, "p_holm": 0.0098, "family_size": 2}) == "0.0098 (Holm, 2 tests)"
    text = render_findings(full_results(), {})
    assert all(int(k) > 1 for k in re.findall(r"\(Holm, (\d+) tests\)", text)) and "unadjusted" in text


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda folder: folder.name)
def test_the_committed_findings_are_what_its_results_json_renders(folder):
    figures = {path.stem: f"figures/{path.name}" for path in sorted((folder / "figures").glob("*.svg"))}
    figures.update({path.stem: f"figures/{path.name}" for path in sorted((folder / "figures").glob("*.png"))})
    results = json.loads((folder / "results.json").read_text())
    assert render_findings(results, figures) == (folder / "FINDINGS.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("folder", COMMITTED, ids=lambda folder: folder.name)
def test_the_cli_rerenders_the_committed_findings_exactly(tmp_path, folder):
    """Drawn again from results.json (figures that need files it does not hold are kept from its folder)."""
    assert cli_main(["findings", str(folder / "results.json"), "--out", str(tmp_path), "--figure-format", "png"]) == 0
    assert (tmp_path / "FINDINGS.md").read_text() == (folder / "FINDINGS.md").read_text()
    for link in re.findall(r"\]\((figures/[^)]+)\)", (tmp_path / "FINDINGS.md").read_text()):
        assert (tmp_path / link).stat().st_size > 1000, link


def test_bad_input_is_one_clear_error_naming_the_file(tmp_path, capsys):
    missing, text, other = tmp_path / "none.json", tmp_path / "notes.txt", tmp_path / "other.json"
    text.write_text("not json")
    other.write_text(json.dumps({"variants": {}}))
    for path, message in ((missing, "no such file"), (text, "not a results.json"), (other, "not a results.json")):
        with pytest.raises(ValueError, match=message) as error:
            load_results(path)
        assert str(path) in str(error.value)
    assert cli_main(["findings", str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hf-minattn findings: error: ") and str(other) in err[0]


def test_a_runs_folder_reads_its_results_json_and_edited_seeds_are_named(tmp_path):
    """The run's folder stands for its results.json (it used to answer "no such file"); seeds that are not a list
    of integers are named, where the message used to read "its answers lack can only concatenate str ..."."""
    results = json.loads((FINDINGS / "results.json").read_text())
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert load_results(tmp_path)["seeds"] == results["seeds"]
    for seeds in ("3-7", [3, "4"], None):
        (tmp_path / "results.json").write_text(json.dumps({**results, "seeds": seeds}))
        with pytest.raises(ValueError, match=re.escape(f"its seeds are {seeds!r}; expected a list of integers")):
            load_results(tmp_path)


def test_a_value_of_the_wrong_kind_is_not_called_a_missing_answer(tmp_path):
    results = json.loads((FINDINGS / "results.json").read_text())
    results["answers"]["scale"] = ["edited"]  # hand-edited: a list where the run writes a dict
    (tmp_path / "results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match="a value is not of the kind `hf-minattn experiments` writes") as error:
        rerender_findings(tmp_path, tmp_path / "out")
    assert "lack" not in str(error.value) and not (tmp_path / "out" / "figures").exists()


def test_an_older_results_json_is_refused_before_any_figure_is_drawn(tmp_path):
    results = json.loads((FINDINGS / "results.json").read_text())
    del results["answers"]["scale"]["precision"]  # what results.json files from before bf16 lack
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    with pytest.raises(ValueError, match="older .*precision"):
        rerender_findings(path, tmp_path / "out")
    assert not (tmp_path / "out" / "figures").exists()


def test_a_results_json_lacking_what_a_figure_reads_is_refused_with_nothing_written(tmp_path):
    """Only what FINDINGS.md reads was checked first: a results.json without "drift" (older, or edited) failed with
    a KeyError from figures.py and left figures/ half drawn."""
    results = json.loads((FINDINGS / "exploration" / "results.json").read_text())
    del results["drift"]  # read by the drift figure, drawn after the loss curves; FINDINGS.md does not read it
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: written by an older .* it lacks 'drift'"):
        rerender_findings(path, tmp_path / "out", "png")
    assert not (tmp_path / "out").exists()

def test_an_out_that_is_another_runs_folder_is_refused_and_earlier_findings_are_rendered_again(tmp_path, capsys):
    """--out runs/b, the folder of another run, had its FINDINGS.md and figures replaced by those of runs/a without a
    word. The results' own folder, and a folder of findings rendered before (no results.json), are rendered into."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text((FINDINGS / "exploration" / "results.json").read_text())
    other = tmp_path / "b"
    other.mkdir()
    for name in ("results.json", "FINDINGS.md"):
        (other / name).write_text(f"the other run's {name}")
    source = str(tmp_path / "a" / "results.json")
    assert cli_main(["findings", source, "--out", str(other), "--figure-format", "png"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hf-minattn findings: error: --out {str(other)!r} is another run's folder (it holds a results.json): "
                   f"the findings of {source!r} would replace its own; pass another --out (or none, for the results' "
                   "own folder)"]
    assert sorted(p.name for p in other.iterdir()) == ["FINDINGS.md", "results.json"]
    assert all((other / name).read_text() == f"the other run's {name}" for name in ("results.json", "FINDINGS.md"))
    rendered = tmp_path / "rendered"
    for _ in range(2):  # the second call renders over the first's findings
        assert cli_main(["findings", source, "--out", str(rendered), "--figure-format", "png"]) == 0
    assert (rendered / "FINDINGS.md").read_text().startswith("# Findings")


def test_an_equivalence_whose_interval_excludes_zero_says_why_no_difference_was_called():
    """Equivalent, yet its unadjusted 95% interval excludes 0: Holm's adjustment (or, for a test alone, its own p at
    the boundary) is why no difference was called; it is not said to differ ("not identical", as it read)."""
    from hf_minattn.experiments.findings_format import compared

    inside = {"estimate": 0.02, "low": -0.01, "high": 0.05, "n": 3, "margin": 0.05, "verdict": "equivalent"}
    small = {**inside, "low": 0.0012, "high": 0.0392, "p": 0.0445, "p_holm": 0.0618, "family_size": 3}
    assert compared(inside, "worse", "the same", "better") == "the same (equivalent within ±0.05 by a TOST test)"
    assert compared(small, "worse", "the same", "better") == (
        "the same (equivalent within ±0.05 by a TOST test; its unadjusted 95% interval excludes 0, but Holm's "
        "adjustment for 3 tests leaves p 0.062)")
    alone = compared({**small, "p": 0.05, "p_holm": 0.05, "family_size": 1}, "worse", "the same", "better")
    assert alone.endswith("its 95% interval [0.0012, 0.0392] excludes 0, but its p, 0.05, does not reach 0.05)")


def test_the_logit_lens_verdict_reads_the_interval_with_the_sentences_when_there_is_one():
    """Layer 3's gain is positive at every seed but varies a lot between the sentences: the per-seed intervals put
    it above the floor, the intervals over seeds and sentences do not. The first layer (and the sentence) follows the
    latter where the probes kept per-sentence gains, and never says where the prediction 'forms'."""
    from hf_minattn.experiments.findings_probes import logit_lens_lines, logit_lens_verdict
    from hf_minattn.experiments.probe_answers import logit_lens_answers

    rng = np.random.default_rng(0)
    spread = rng.normal(0, 1.0, 40)
    layer3 = spread - spread.mean() + 0.05  # the same sentences at every seed: mean 0.05, sd about 1

    def lens(seed, per_sentence):
        g = np.stack([np.full(40, -1.0), np.full(40, -0.5), np.full(40, -0.2), layer3 + 0.001 * seed,
                      np.full(40, 0.8) + 0.01 * seed])  # (layers + 1, sentences)
        out = {"gain": g.mean(1).tolist(), "loss": (5 - g.mean(1)).tolist(), "accuracy": [0.1] * 5, "floor": 5.0,
               "masked_tokens": 600}
        return {**out, "sentence_gain": g.tolist()} if per_sentence else out

    def answers(per_sentence):
        return logit_lens_answers({"by_seed": {"full": {s: {"logit_lens": lens(s, per_sentence)} for s in range(3)},
                                               "untrained": {}}}, n_resamples=500)

    seeds_only, with_sentences = answers(False), answers(True)
    assert seeds_only["first_layer_above_floor"] == 3 and "from layer 3 of 4 on" in logit_lens_verdict(seeds_only)
    assert with_sentences["first_layer_above_floor"] == 4
    assert "the last layer (layer 4)" in logit_lens_verdict(with_sentences)
    text = "\n".join(logit_lens_lines(with_sentences, lambda *a: ""))
    assert "seeds x sentences" in text and "40 sentences" in text and "forms" not in text
    # a layer above the floor, then one that is not, then the last: "from layer 2 on" would claim layer 3 too
    gaps = copy.deepcopy(seeds_only)
    gaps["gain"][2] = gaps["gain"][4]
    gaps["gain"][3] = {**gaps["gain"][3], "low": -0.1}
    gaps["first_layer_above_floor"] = 2
    assert "layers 2, 4 of 4, decoded by it, beat token frequencies" in logit_lens_verdict(gaps)
    assert "from layer" not in logit_lens_verdict(gaps) and "the other layers are not shown to" in logit_lens_verdict(gaps)


def test_masked_token_counts_are_given_per_seed():
    """Each seed draws its own masks, so each model is scored on its seed's count, not the first seed's."""
    results = synthetic()
    for i, row in enumerate(results["variants"]["full"]["seeds"]):
        row["masked_tokens"] = 12000 + i
    from hf_minattn.experiments.answers import scale_numbers

    results["answers"]["scale"] = scale_numbers(results)
    text = render_findings(results, {})
    assert "masked tokens per model: 12000 at seed 0, 12001 at seed 1, 12002 at seed 2" in text


COMMIT = "0123abcd" * 5  # a protocol commit, as git prints it


def header(seeds, protocol) -> str:
    """The line under FINDINGS.md's title for synthetic results at `seeds` (None: a results.json without "protocol")."""
    results = synthetic()
    results["seeds"] = list(seeds)
    if protocol is not None:
        results["protocol"] = protocol
    return render_findings(results, {}).splitlines()[2]


def test_the_header_says_confirmation_exploration_or_both_by_the_seeds_and_cites_the_protocol():
    protocol = {"file": "docs/findings/PROTOCOL.md", "commit": COMMIT, "uncommitted_changes": False,
                "exploration_seeds": [0, 1, 2]}
    assert header((3, 4, 5, 6, 7), protocol) == ("**Confirmation run: seeds 3-7, none of which chose anything (the "
                                                 "exploration seeds 0-2 chose the recipe and the learning rates; "
                                                 f"PROTOCOL.md at commit `{COMMIT}`).**")
    explored = header((0, 1, 2), protocol)
    assert explored.startswith("**Exploration run: seeds 0-2 chose the recipe and the learning rates; its verdicts "
                               "are not confirmation (") and COMMIT in explored
    mixed = header((1, 2, 3, 5), protocol)
    assert "exploration seeds 1, 2 (they chose" in mixed and "confirmation seeds 3, 5 (they chose nothing)" in mixed
    assert "its verdicts mix both" in mixed and "Confirmation run" not in mixed and "Exploration run" not in mixed
    # the roles are the run's own protocol's: seed 3 explored under another one
    assert header((3, 4), {**protocol, "exploration_seeds": [3]}).startswith("**Mixed run")
    dirty = header((3, 4, 5), {**protocol, "uncommitted_changes": True})
    assert f"`{COMMIT}`, with uncommitted changes to it" in dirty


def test_a_run_without_a_protocol_commit_says_the_commit_is_unknown():
    unknown = header((3, 4, 5), {"file": "docs/findings/PROTOCOL.md", "commit": None, "uncommitted_changes": None,
                                 "exploration_seeds": [0, 1, 2]})
    assert unknown.startswith("**Confirmation run: seeds 3-5") and "the protocol's commit is unknown" in unknown
    assert "commit `" not in unknown
    older = header((0, 1, 2), None)  # a results.json from before the protocol was recorded
    assert older.startswith("**Exploration run") and "the protocol's commit is unknown" in older


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_protocol_commit_is_the_last_that_changed_the_protocol_file(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=test", "-c", "user.email=test@example.com",
                               *args], check=True, capture_output=True, text=True).stdout.strip()

    no_checkout = protocol_record(str(tmp_path))
    assert no_checkout["commit"] is None and no_checkout["uncommitted_changes"] is None
    git("init", "-q")
    protocol = tmp_path / "docs" / "findings" / "PROTOCOL.md"
    protocol.parent.mkdir(parents=True)
    protocol.write_text("seeds 0-2 explore\n")
    git("add", "."), git("commit", "-q", "-m", "protocol")
    changed = git("rev-parse", "HEAD")
    (tmp_path / "other.txt").write_text("a later commit that leaves the protocol alone\n")
    git("add", "."), git("commit", "-q", "-m", "other")
    assert protocol_record(str(tmp_path)) == {"file": "docs/findings/PROTOCOL.md", "commit": changed,
                                              "uncommitted_changes": False, "exploration_seeds": [0, 1, 2]}
    protocol.write_text("seeds 0-3 explore\n")
    assert protocol_record(str(tmp_path))["uncommitted_changes"] is True
    source = Path(hf_minattn.__file__).resolve().parents[1]  # by default, the source tree the package runs from
    if source == FINDINGS.parents[1] and (source / ".git").exists():
        last = subprocess.run(["git", "-C", str(FINDINGS.parents[1]), "log", "-1", "--format=%H", "--",
                               "docs/findings/PROTOCOL.md"], capture_output=True, text=True).stdout.strip()
        assert protocol_record()["commit"] == (last or None)


def test_the_loss_table_gives_each_variant_its_own_learning_rate():
    """The rate each variant trained at, from the run's settings: the study's choice where the preset has one, the
    preset's rate otherwise, the full model's for the control that follows it, none for the untrained model."""
    results = full_results()
    results["settings"] = {k: v for k, v in results["settings"].items() if k != "learning_rates"}

    def rates(text):
        return {row[0]: row[2] for line in text.splitlines() if line.startswith("| ")
                and len(row := [c.strip() for c in line.strip("|").split("|")]) > 7 and row[2] != "learning rate"}

    base = rates(render_findings(results, {}))
    assert base["full"] == base["frozen_embeddings"] == num(results["settings"]["learning_rate"])
    assert base["untrained"] == "-"
    results["settings"] = {**results["settings"], "learning_rates": {"frozen_embeddings": 5e-4, "full": 1e-3}}
    tuned = rates(render_findings(results, {}))
    assert tuned["frozen_embeddings"] == "0.0005" and tuned["full"] == "0.001" and tuned["untrained"] == "-"


# The README's short answers are written by hand from the committed confirmation run: each phrase stands on the
# stored verdicts listed with it, so a rerun that moves one of them fails here until the README says what it shows.
README_ANSWERS = [
    ("frozen random embeddings are worse, even with the capacity given back and one learned scale",
     {"q2.frozen_matched_minus_full": "higher", "q2.frozen_gain_minus_full": "higher"}),
    ("W = I at matched size is worse", {"q3.identity_minus_full": "higher"}),
    ("the heads of every layer attend more differently after training",
     {f"q4.js_trained_minus_init.layer_{layer}": "higher" for layer in range(4)}),
    ("they specialise before the loss leaves its unigram plateau",
     {"q4.over_training.early.specialisation_minus_exit": "lower"}),
    ("its last layer is not told apart from the untrained model's, nor from a word2vec trained for as many passes "
     "over the text; it is below a tuned word2vec",
     {"q5.comparisons.last_vs_untrained": "unresolved", "q5.comparisons.last_vs_word2vec_matched": "unresolved",
      "q5.comparisons.last_vs_word2vec": "lower"}),
    ("In all-MiniLM-L6-v2: yes, above word2vec", {"q5.reference_scores.comparisons.vs_word2vec": "higher"}),
    ("above chance, above the untrained model and above a control that sees only position and sentence length",
     {"q6.senses.comparisons.vs_chance": "higher", "q6.senses.comparisons_items.vs_untrained": "higher",
      "q6.senses.comparisons.vs_position": "higher"}),
    ("so does all-MiniLM-L6-v2, above chance", {"q6.senses.reference.vs_chance": "higher"}),
    ("in our trained model, larger than uniform attention's and smaller than the untrained model's",
     {"q7.mixing.comparisons.full_minus_uniform_measured": "higher",
      "q7.mixing.comparisons.full_minus_untrained_measured": "lower"}),
    ("(at a fixed residual weight of 0.5: larger)", {"q7.mixing.comparisons.full_minus_untrained_half": "higher"}),
    ("in all-MiniLM-L6-v2 larger than uniform attention's, by less than the 0.02 margin",
     {"q7.mixing.reference.measured.minus_uniform": "higher"}),
]


def stored_verdict(results: dict, path: str) -> str:
    """The verdict at `path` ("q5.comparisons.last_vs_untrained") of results.json's answers; keys may hold dots."""
    node, rest = results["answers"], path
    while rest:
        key = next(k for k in sorted(node, key=len, reverse=True) if rest == k or rest.startswith(k + "."))
        node, rest = node[key], rest[len(key) + 1:]
    return node["verdict"]


@pytest.mark.parametrize("phrase, verdicts", README_ANSWERS, ids=[p[:40] for p, _ in README_ANSWERS])
def test_the_readme_short_answers_say_what_the_committed_verdicts_say(phrase, verdicts):
    readme = (FINDINGS.parents[1] / "README.md").read_text()
    table = readme[readme.index("## Findings"):readme.index("## More")]
    assert phrase in table, f"README's findings table lost {phrase!r}"
    results = load_results(str(FINDINGS / "results.json"))
    assert {path: stored_verdict(results, path) for path in verdicts} == verdicts


def test_a_moved_verdict_is_seen_by_the_readme_check():
    results = load_results(str(FINDINGS / "results.json"))
    assert stored_verdict(results, "q5.comparisons.last_vs_untrained") == "unresolved"
    moved = copy.deepcopy(results)
    moved["answers"]["q5"]["comparisons"]["last_vs_untrained"]["verdict"] = "higher"
    assert stored_verdict(moved, "q5.comparisons.last_vs_untrained") == "higher"
