"""docs/tutorial.ipynb: committed without outputs, and executed top to bottom with a tiny step count it shows each of
the seven answers with a figure, trains a model with run_mlm, probes it and shows its attention view inline."""

import json
import re
import shutil
from pathlib import Path

import pytest

from hf_minattn.experiments.findings_answers import ANSWERS

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "docs" / "tutorial.ipynb"
FINDINGS = REPO / "docs" / "findings"
STEPS = 20


def tagged(nb, tag):
    """The one code cell carrying `tag` in its metadata."""
    cells = [cell for cell in nb["cells"] if tag in cell.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{len(cells)} cells tagged {tag!r}"
    return cells[0]


def texts(cell, mime):
    return [output["data"][mime] for output in cell.get("outputs", []) if mime in output.get("data", {})]


def test_the_committed_notebook_has_no_outputs_and_a_cell_per_question():
    """Outputs and execution counts are cleared before committing (they would be stale and bulky); every question
    has its own tagged cell, which the execution test reads."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    ids = [cell.get("id") for cell in nb["cells"]]  # nbformat 4.5 requires one per cell (a warning now, an error later)
    assert all(ids) and len(set(ids)) == len(ids)
    code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    assert code
    for cell in code:
        assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"]
    for number, _, _ in ANSWERS:
        assert f"show_answer({number})" in "".join(tagged(nb, f"question-{number}")["source"])


def markdown(nb, tag) -> str:
    return " ".join("".join(tagged(nb, tag)["source"]).split())


def test_the_prose_states_what_the_statistics_and_the_training_cell_do():
    """The verdicts and the glossary give the thresholds the code uses and what the committed results.json holds
    (its word pairs drawn crossed, the example of two levels that differ, the model's passes); Part 2 gives the step
    count's default and the time cap of the training cell; Part 3 claims the probe for the answers it is behind
    only."""
    from hf_minattn.experiments import statistics as st
    from hf_minattn.experiments.findings_answers import q5_answer
    from hf_minattn.experiments.head_dynamics import PLATEAU_GAIN
    from hf_minattn.experiments.statistics import ALPHA
    from hf_minattn.experiments.word_pairs import HIERARCHICAL_WIDENING, pairs_method
    from hf_minattn.probes.cooccurrence import ANISOTROPY_THRESHOLD
    from hf_minattn.probes.word2vec import WORD2VEC_SETTINGS

    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    results = json.loads((FINDINGS / "results.json").read_text(encoding="utf-8"))
    q5 = results["answers"]["q5"]
    verdicts, glossary = markdown(nb, "verdicts"), markdown(nb, "glossary")
    assert f"Holm-adjusted p below {ALPHA}" in verdicts and "not adjusted" in verdicts
    assert "excludes zero after correcting" not in verdicts
    for phrase in ("the seeds and the items together (the crossed bootstrap, below) and the seeds alone",
                   "**above 0**", "*not told apart from*"):
        assert phrase in verdicts, phrase
    # the example of levels that differ: Q5's static vectors against the untrained model's in the committed run
    assert "Q5's static vectors are above the untrained model's over the seeds alone, not resolved" in verdicts
    seeds_alone = st.seed_levels(q5["comparisons"])["static_vs_untrained"]
    assert st.verdict(q5["comparisons"]["static_vs_untrained"]) == "unresolved" and st.verdict(seeds_alone) == "higher"
    # the committed word pairs are drawn crossed: the widening of the hierarchical draw is the first confirmation's
    assert pairs_method(q5["comparisons"]) == "crossed" and "not if" not in verdicts
    for phrase in (f"up to {HIERARCHICAL_WIDENING}x too narrow", f"*not if {HIERARCHICAL_WIDENING}x as wide*",
                   "`docs/findings/confirmation-v1/`"):
        assert phrase in glossary, phrase
    for term in ("Holm's adjustment", "TOST", "unigram plateau", "crossed bootstrap", "passes over the text",
                 "All-but-the-Top"):
        assert f"**{term}**" in glossary, term
    assert f"exceeds {PLATEAU_GAIN} nat" in glossary and f"above {ANISOTROPY_THRESHOLD}." in glossary
    assert f"make {WORD2VEC_SETTINGS.epochs} passes" in glossary
    matched = q5["word2vec_matched"]  # "as many as the model did": the committed run's word2vec and model passes
    assert matched["epochs"] == matched["model_passes"]
    assert f"(Q5's \"{matched['model_passes']:g} passes\")" in glossary
    # the Q5 cell says the answer points to the note under the table only where the answer does
    points = "the note under the table" in q5_answer(results)
    assert ("that the answer points" in markdown(nb, "question-5-text")) == points

    training = "".join(tagged(nb, "train")["source"])
    default = re.search(r'"HF_MINATTN_TUTORIAL_STEPS", "(\d+)"', training).group(1)
    minutes = re.search(r'"--max_train_minutes", "([\d.]+)"', training).group(1)
    assert f"`HF_MINATTN_TUTORIAL_STEPS` (default {default})" in markdown(nb, "train-text")
    assert f"`--max_train_minutes {minutes}`" in markdown(nb, "train-text")
    assert "the seven answers" not in markdown(nb, "probe-text") + markdown(nb, "contents")
    assert "not tested" in markdown(nb, "question-5-text")
    assert "means the model uses context" not in markdown(nb, "floor-text")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run in a temporary copy of docs/ (docs/findings linked beside it), as a fresh kernel of this
    interpreter runs it: `python3` is ipykernel's kernel, and jupyter_client starts it with sys.executable."""
    import nbformat
    from nbclient import NotebookClient

    work = tmp_path_factory.mktemp("docs")
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    (work / "findings").symlink_to(FINDINGS, target_is_directory=True)
    nb = nbformat.read(work / NOTEBOOK.name, as_version=4)
    env = {"HF_MINATTN_TUTORIAL_STEPS": str(STEPS), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
    return nb, work


@pytest.mark.slow
def test_the_notebook_runs_without_errors(executed):
    nb, _ = executed
    errors = [output for cell in nb.cells for output in cell.get("outputs", []) if output["output_type"] == "error"]
    assert errors == []
    assert all(cell.execution_count for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.slow
def test_each_question_shows_its_answer_and_a_figure(executed):
    """Each question's cell shows FINDINGS.md's answer sentence for the committed results.json, and an image."""
    nb, _ = executed
    results = json.loads((FINDINGS / "results.json").read_text(encoding="utf-8"))
    for number, question, answer in ANSWERS:
        cell = tagged(nb, f"question-{number}")
        shown = "\n".join(texts(cell, "text/markdown"))
        assert shown.startswith(f"### {number}. {question}\n"), shown[:120]
        assert f"**{answer(results)}**" in shown, number
        assert texts(cell, "image/png"), f"question {number} shows no figure"


@pytest.mark.slow
def test_the_notebook_trains_probes_and_shows_the_attention_view(executed):
    """The step count comes from the environment; the probe writes its report; the view is inline."""
    nb, work = executed
    run = work / "outputs" / "tutorial"
    state = json.loads((run / "minattn-tutorial" / "trainer_state.json").read_text(encoding="utf-8"))
    assert state["global_step"] == STEPS
    assert (run / "probes" / "report.html").is_file()
    probes = (run / "probes" / "probes.json").read_text(encoding="utf-8")
    assert "outputs/tutorial/minattn-tutorial" in probes  # the trained model is the one probed
    pages = [html for cell in nb.cells for html in texts(cell, "text/html") if "<iframe srcdoc=" in html]
    assert len(pages) == 1 and "hf_minattn/attention-view/1" in pages[0]


@pytest.mark.slow
def test_the_circuits_cell_answers_for_the_trained_model_and_the_model_trained_at_scale(executed):
    """One headline each, chosen by the heads' intervals: the trained model's 4 heads, all-MiniLM-L6-v2's 12."""
    nb, _ = executed
    shown = texts(tagged(nb, "circuits"), "text/markdown")
    assert len(shown) == 2
    counted = r"In layer 0, the query-key logits of (\d+ of|none of the) {} heads"
    assert re.match(r"\*\*your model\*\*: " + counted.format(4), shown[0]), shown[0]
    assert re.match(r"\*\*all-MiniLM-L6-v2\*\*: " + counted.format(12), shown[1]), shown[1]


@pytest.mark.slow
def test_the_q5_note_and_the_floors_are_shown_from_their_sources(executed):
    """Q5's note under the table and its co-occurrence line as FINDINGS.md has them; the model card's own floor
    sentence; the steps that ran; the training's and the logit lens's floors, each named."""
    from hf_minattn.model_card import floor_sentence

    nb, work = executed
    findings = (FINDINGS / "FINDINGS.md").read_text(encoding="utf-8")
    note = "\n".join(texts(tagged(nb, "q5-note"), "text/markdown"))
    shown = re.search(r"\(docs/findings/FINDINGS.md, question 5\): (.*?)\n\n", note).group(1)
    assert shown.startswith("Differences of Spearman correlations") and shown in findings
    assert note.split("(no verdict):\n\n")[1] in findings
    model = work / "outputs" / "tutorial" / "minattn-tutorial"
    metrics = json.loads((model / "eval_results.json").read_text(encoding="utf-8"))
    floor = tagged(nb, "floor")
    assert floor_sentence(metrics) in "\n".join(texts(floor, "text/markdown"))
    printed = "".join(output.get("text", "") for output in floor["outputs"])
    assert f"trained {STEPS} of the {STEPS} steps asked for" in printed
    lens = json.loads((work / "outputs" / "tutorial" / "probes" / "probes.json").read_text())["logit_lens"]
    printed = "".join(output.get("text", "") for output in tagged(nb, "floors")["outputs"])
    assert f"unigram floor of training's evaluation: {metrics['eval_unigram_loss']:.2f} nats" in printed
    assert f"unigram floor of the logit lens:        {lens['floor']:.2f} nats" in printed
