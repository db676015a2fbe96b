"""REPLICATION.md (experiments/replication.py): every verdict of a second run of the protocol beside the first run's,
counted as the same, reversed or differing, with the sentence chosen by those counts."""

import copy
import json
from pathlib import Path

import pytest

from hf_minattn.cli import main as cli_main
from hf_minattn.experiments.replication import agreement, comparisons, headline, replication_markdown

FINDINGS = Path(__file__).resolve().parent.parent / "docs" / "findings"
V1 = FINDINGS / "confirmation-v1" / "results.json"  # the first confirmation (seeds 3-7, PROTOCOL.md version 1): a fixed run


def comparison(estimate, low, high, verdict):
    return {"estimate": estimate, "low": low, "high": high, "p_holm": 0.01, "margin": 0.05, "verdict": verdict}


def run(seeds, **verdicts):
    """A results.json's parts that replication reads: seeds, command, date and the answers' comparisons."""
    answers = {"q2": {"frozen_minus_full": comparison(0.5, 0.4, 0.6, verdicts.get("q2", "higher"))},
               "q3": {"identity_minus_full": comparison(0.8, 0.6, 0.9, verdicts.get("q3", "higher")),
                      "attention_only_minus_full": comparison(0.02, -0.05, 0.09, verdicts.get("q3b", "unresolved"))},
               "q5": {"reference_scores": {"comparisons": {"vs_word2vec": comparison(0.15, 0.11, 0.19, "higher")}}},
               "q7": {"mixing": {"reference": {"measured": {"minus_uniform": comparison(0.008, 0.007, 0.009,
                                                                                          "higher")}}}}}
    return {"seeds": list(seeds), "command": f"hf-minattn experiments --seeds {seeds[0]}-{seeds[-1]}",
            "date": "2026-11-28", "preset": "full", "answers": answers}


def test_comparisons_are_named_by_their_path_and_the_reference_encoders_own_are_left_out():
    assert list(comparisons(run((3, 4, 5)))) == ["q2 frozen_minus_full", "q3 identity_minus_full",
                                                 "q3 attention_only_minus_full"]


def test_the_sentence_follows_how_many_verdicts_agree_are_reversed_or_differ():
    first, second = run((3, 4, 5)), run((8, 9, 10))
    assert agreement(first, second)["same"] == list(comparisons(first))
    assert headline(first, second) == ("Of the 3 comparisons both runs made, 3 reach the same verdict on seeds 8-10 "
                                       "as on seeds 3-5; none is reversed (higher in one run, lower in the other).")
    flipped = run((8, 9, 10), q2="lower", q3b="higher")  # one reversed, one resolved only in the second run
    text = headline(first, flipped)
    assert text.startswith("Of the 3 comparisons both runs made, 1 reaches the same verdict")
    assert "; 1 is reversed (higher in one run, lower in the other): q2 frozen_minus_full" in text
    assert "; 1 resolved in one run and not in the other, or equivalent in one only: q3 attention_only_minus_full" \
        in text and "none is reversed" not in text


def test_the_page_lists_the_differing_comparisons_and_those_one_run_lacks():
    first, second = run((3, 4, 5)), run((8, 9, 10), q3="equivalent")
    second["answers"]["q4"] = {"timing": comparison(-92.0, -105.6, -78.4, "lower")}
    page = replication_markdown(first, second)
    assert page.startswith("# Replication: seeds 8-10 against seeds 3-5\n")
    assert "| q3 identity_minus_full | 0.8 [0.6, 0.9]: higher | 0.8 [0.6, 0.9]: equivalent within ±0.05 |" in page
    assert "With a verdict in the second run only: q4 timing; in the first run only: none." in page
    assert "The comparisons whose verdicts differ" not in replication_markdown(first, run((8, 9, 10)))


def test_the_page_names_the_comparisons_decided_another_way_in_each_run():
    first, second = run((3, 4, 5)), run((8, 9, 10))
    assert "another interval method" not in replication_markdown(first, second)
    first["answers"]["q2"]["frozen_minus_full"]["method"] = "hierarchical"
    second["answers"]["q2"]["frozen_minus_full"]["method"] = "crossed"
    first["answers"]["q3"]["identity_minus_full"]["method"] = "hierarchical"
    second["answers"]["q3"]["identity_minus_full"]["method"] = "crossed"
    assert ("Decided by another method in each run: hierarchical in the first, crossed in the second: "
            "q2 frozen_minus_full, q3 identity_minus_full.") in replication_markdown(first, second)
    second["answers"]["q3"]["attention_only_minus_full"].update(method="crossed", seeds={"p": 0.2})
    first["answers"]["q3"]["attention_only_minus_full"]["method"] = "crossed"
    assert ("crossed in the first, crossed with the seeds' t-test in the second: q3 attention_only_minus_full"
            in replication_markdown(first, second))


def test_the_cli_writes_replication_md_and_refuses_a_run_on_the_same_seeds(tmp_path, capsys):
    committed = json.loads(V1.read_text())
    second = copy.deepcopy(committed)
    second["seeds"] = [8, 9, 10, 11, 12]
    second["answers"]["q2"]["frozen_minus_full"]["verdict"] = "lower"
    path = tmp_path / "second" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(second))
    assert cli_main(["findings", str(path), "--replicates", str(V1), "--figure-format",
                     "png"]) == 0
    page = (path.parent / "REPLICATION.md").read_text()
    assert "1 is reversed (higher in one run, lower in the other): q2 frozen_minus_full" in page
    assert (path.parent / "FINDINGS.md").is_file()
    assert cli_main(["findings", str(V1), "--out", str(tmp_path / "x"), "--replicates",
                     str(V1)]) == 2
    assert "shares seeds [3, 4, 5, 6, 7]" in capsys.readouterr().err
    other = copy.deepcopy(second)
    other["seeds"], other["protocol"] = [13, 14], {**committed["protocol"], "commit": "0" * 40}
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert cli_main(["findings", str(tmp_path / "other.json"), "--replicates", str(V1)]) == 2
    assert "a replication runs the same protocol" in capsys.readouterr().err
    (tmp_path / "notes.json").write_text("{}")
    assert cli_main(["findings", str(path), "--replicates", str(tmp_path / "notes.json")]) == 2
    assert f"--replicates {tmp_path / 'notes.json'}: not a results.json" in capsys.readouterr().err


# (the replication's folder, the first run's folder, whether both ran under one version of PROTOCOL.md)
PAIRS = [(FINDINGS / "replication", FINDINGS / "confirmation-v1", True),
         (FINDINGS, FINDINGS / "confirmation-v1", False)]


@pytest.mark.parametrize("folder, first_folder, same_protocol", PAIRS)
def test_the_committed_replications_are_what_their_two_results_render(folder, first_folder, same_protocol):
    first = json.loads((first_folder / "results.json").read_text())
    second = json.loads((folder / "results.json").read_text())
    assert replication_markdown(first, second, same_protocol) == (folder / "REPLICATION.md").read_text()


@pytest.mark.parametrize("folder, first_folder, same_protocol", PAIRS)
def test_the_readme_states_each_committed_replications_counts(folder, first_folder, same_protocol):
    """README's findings give each committed replication's count beside its link: a count that moved is seen."""
    first = json.loads((first_folder / "results.json").read_text())
    second = json.loads((folder / "results.json").read_text())
    found = agreement(first, second)
    n = sum(len(found[k]) for k in ("same", "reversed", "differ"))
    readme = (FINDINGS.parents[1] / "README.md").read_text()
    findings = " ".join(readme[readme.index("## Findings"):readme.index("## More")].split())
    link = f"({(folder / 'REPLICATION.md').relative_to(FINDINGS.parents[1])})"
    reversed_ = "none reversed" if not found["reversed"] else f"{len(found['reversed'])} reversed"
    after_link = findings[findings.index(link):findings.index(link) + 100]
    assert f"{len(found['same'])} of {n} verdicts the same, {reversed_}" in after_link


def test_across_protocols_reads_a_run_of_another_protocol_and_says_so(tmp_path, capsys):
    committed = json.loads(V1.read_text())
    other = copy.deepcopy(committed)
    other["seeds"], other["protocol"] = [13, 14, 15, 16, 17], {**committed["protocol"], "commit": "0" * 40}
    path = tmp_path / "second" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(other))
    first = str(V1)
    assert cli_main(["findings", str(path), "--replicates", first, "--figure-format", "png"]) == 2
    assert "--across-protocols reads them anyway" in capsys.readouterr().err
    assert cli_main(["findings", str(path), "--replicates", first, "--across-protocols", "--figure-format",
                     "png"]) == 0
    page = (path.parent / "REPLICATION.md").read_text()
    assert (f"under two versions of the protocol (PROTOCOL.md at commit `{committed['protocol']['commit']}` for the "
            f"first, `{'0' * 40}` for the second)") in page and "the same protocol" not in page
    assert "under two versions" not in replication_markdown(committed, other)  # the default: one protocol
    same = copy.deepcopy(committed)
    same["seeds"] = [8, 9]
    (tmp_path / "same.json").write_text(json.dumps(same))
    assert cli_main(["findings", str(tmp_path / "same.json"), "--out", str(tmp_path / "s"), "--replicates", first,
                     "--across-protocols"]) == 2
    assert "ran under the same protocol" in capsys.readouterr().err
    assert cli_main(["findings", str(path), "--across-protocols"]) == 2
    assert "--across-protocols reads the run of --replicates" in capsys.readouterr().err


def test_a_verdict_findings_does_not_state_is_counted_as_findings_states_it():
    """A hierarchical word-pair "higher" that an interval as wide as it should be would not keep is stated as not
    resolved in FINDINGS; the replication counted the stored "higher" and so found it resolved in one run only."""
    first = json.loads(V1.read_text())
    second = copy.deepcopy(first)
    matched = first["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"]  # "higher, not if 2.1x as wide"
    second["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"] = {**matched, "verdict": "unresolved"}
    assert "q5 comparisons last_vs_word2vec_matched" in agreement(first, second)["same"]
    second["answers"]["q5"]["comparisons"]["last_vs_word2vec_matched"] = {**matched, "low": 0.1, "high": 0.16}
    assert "q5 comparisons last_vs_word2vec_matched" in agreement(first, second)["differ"]  # held there: it differs
