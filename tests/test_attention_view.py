"""The interactive attention view: its data (known answers from the model's own attentions; the documented schema),
the page in a real headless Chromium from a file:// URL (select a head, hover a token, read the highlighted edges
from the DOM, compare them with the JSON), and `hf-minattn view` serving it (type a sentence and see its edges;
bad sentences get a message in the page; the server stops by itself)."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from importlib import resources

import jsonschema
import pytest
import torch
from conftest import TEXTS, tiny_config

from hf_minattn import MinAttnForMaskedLM, train_tokenizer
from hf_minattn.probes.attention_flow import attention_rollout, rollout_graph
from hf_minattn.probes.attention_view import (VIEW_SCHEMA, attention_view, check_sentence, view_json,
                                              view_sentences)
from hf_minattn.probes.corpus import default_sentences

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root, in a sandbox without a network: no sandbox, no background connections (they fail and slow the start).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def schema_validator():
    schema = json.loads((resources.files("hf_minattn.probes") / "attention_graph.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def peaked(tokenizer):
    """A tiny MinAttn model with large QK logits: attention far from uniform, so there are edges to see."""
    return MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), qk_logit_init_std=2.0)).eval()


def test_view_edges_are_the_models_own_attention_from_twice_uniform(peaked, tokenizer):
    view, notes = attention_view(peaked, tokenizer, TEXTS[:2], model_name="tiny")
    assert not schema_validator().is_valid({**view, "schema": "other"})  # the validator does check
    schema_validator().validate(view)
    assert view["schema"] == VIEW_SCHEMA and view["weightings"] == ["attention", "norm", "rollout"] and not notes
    assert (view["num_layers"], view["num_heads"], view["max_tokens"]) == (2, 4, 24)
    entry = view["sentences"][1]
    enc = tokenizer(TEXTS[1], return_tensors="pt")
    with torch.no_grad():
        attentions = torch.stack(peaked(**enc, output_attentions=True).attentions)[:, 0]  # (L, H, T, T)
    n = attentions.shape[-1]
    assert entry["tokens"] == tokenizer.convert_ids_to_tokens(enc["input_ids"][0]) and n == len(entry["tokens"])
    graph = entry["graphs"]["attention"]
    assert graph["threshold"] == pytest.approx(2 / n) and graph["level"] == "token"

    def edges(g, layer, head):
        return {(e["source"], e["target"]): e["weight"] for e in g["edges"] if e["layer"] == layer and e["head"] == head}

    for layer in range(2):
        for head in [*range(4), "mean"]:
            a = attentions[layer].mean(0) if head == "mean" else attentions[layer, head]
            # stored weights are rounded to 4 decimals before the cut: compare away from the cut
            expected = {(i, j): float(a[i, j]) for i, j in (a >= 2 / n).nonzero().tolist()}
            got = edges(graph, layer, head)
            assert {k for k in expected if expected[k] > 2 / n + 1e-4} <= set(got) <= set(expected)
            assert all(got[k] == pytest.approx(expected[k], abs=1e-4) for k in got)
    assert sum(len(edges(graph, 1, h)) for h in range(4)) > 4 * n  # peaked: more than one edge per query
    rollout = attention_rollout(attentions.numpy())
    last = edges(entry["graphs"]["rollout"], 1, "mean")
    assert last and all(v == pytest.approx(rollout[1][i, j], abs=2e-4) for (i, j), v in last.items())
    assert {e["head"] for e in entry["graphs"]["rollout"]["edges"]} == {"mean"}
    norm = edges(entry["graphs"]["norm"], 0, 0)
    assert norm and norm != edges(graph, 0, 0)  # the value norms reweight


def test_view_sentences_are_the_examples_then_short_probe_sentences(tokenizer):
    probe = ["The.", TEXTS[0], " ".join(TEXTS[:4]), TEXTS[1], TEXTS[2], TEXTS[3]]
    chosen = view_sentences(tokenizer, ["An example.", "An example."], probe, n=3, max_tokens=30)
    assert chosen == ["An example.", TEXTS[0], TEXTS[1]]  # repeats, 3-token and over-long sentences left out
    assert view_sentences(tokenizer, TEXTS[:5], probe, n=2) == TEXTS[:2]


@pytest.mark.parametrize("sentence, message", [("", "it is empty"), ("   ", "it is empty"), (None, "it is empty"),
                                               (" ".join(TEXTS[:4]), "tokens; the view encodes at most 24"),
                                               ("\u200b", "no token but its special ones"),
                                               ("\x00\u200b", "no token but its special ones")])
def test_typed_sentences_are_checked(tokenizer, sentence, message):
    """Invisible characters alone (a zero-width space, NUL) leave the model nothing but [CLS] [SEP]: refused."""
    with pytest.raises(ValueError, match=message):
        check_sentence(tokenizer, sentence, 24)
    assert check_sentence(tokenizer, "  the king  ", 24) == "the king"
    assert check_sentence(tokenizer, "\u2603", 24) == "\u2603"  # a character the vocabulary lacks reads as [UNK]


def test_example_sentences_longer_than_the_model_reads_say_they_are_cut(tokenizer):
    """The view encodes an example sentence as the model reads it, cut to its positions: its entry says so, as a
    typed sentence that long is refused (check_sentence) rather than cut without a word."""
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), max_position_embeddings=12)).eval()
    long = TEXTS[0]
    assert len(tokenizer(long)["input_ids"]) > 12
    view, _ = attention_view(model, tokenizer, ["The king.", long])
    short, cut = view["sentences"]
    assert short["sentence"] == "The king." and cut["sentence"] == f"{long} (cut to 12 tokens)"
    assert len(cut["tokens"]) == 12 and view["max_tokens"] == 12
    schema_validator().validate(view)


def test_view_json_cannot_close_its_script_block():
    text = view_json({"sentence": "a </script><script>alert(1)</script>"})
    assert "<" not in text and json.loads(text)["sentence"] == "a </script><script>alert(1)</script>"


# ---------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser, url):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("#av-head-view svg")
    return page


def active_edges(page, view="#av-head-view"):
    return sorted(page.eval_on_selector_all(
        f"{view} line.edge.active",
        "lines => lines.map(l => [+l.dataset.layer, l.dataset.head, +l.dataset.source, +l.dataset.target,"
        " +l.dataset.weight])"))


def json_edges(graph, layer, head, source):
    return sorted([e["layer"], str(e["head"]), e["source"], e["target"], e["weight"]] for e in graph["edges"]
                  if e["layer"] == layer and str(e["head"]) == str(head) and e["source"] == source)


@pytest.fixture(scope="module")
def probe_folder(tmp_path_factory, tokenizer):
    """`hf-minattn probe` on a tiny peaked model: report.html and attention_view.json, as a user gets them."""
    from hf_minattn.cli import main

    folder = tmp_path_factory.mktemp("view_probe")
    sentences = default_sentences(60)
    (folder / "corpus.txt").write_text("\n".join(sentences) + "\n")
    tok = train_tokenizer(sentences, vocab_size=300, model_max_length=32, show_progress=False)
    model = MinAttnForMaskedLM(tiny_config(vocab_size=len(tok), max_position_embeddings=32, qk_logit_init_std=2.0))
    model.save_pretrained(folder / "model")
    tok.save_pretrained(folder / "model")
    argv = ["probe", str(folder / "model"), "--corpus", str(folder / "corpus.txt"), "--max-sentences", "40",
            "--min-count", "2", "--head-sentences", "10", "--out", str(folder / "probe"), "--bootstrap", "20",
            "--vector-corpus", str(folder / "corpus.txt"), "--no-word2vec", "--no-untrained", "--no-logit-lens",
            "--no-circuits", "--no-save-vectors", "--no-decontextualized", "--name", "tiny </script> model"]
    assert main(argv) == 0
    return folder


@pytest.mark.slow  # starts a browser
def test_report_view_from_a_file_url_shows_the_json_edges_of_the_hovered_token(browser, probe_folder):
    out = probe_folder / "probe"
    view = json.loads((out / "attention_view.json").read_text())
    schema_validator().validate(view)
    schema_validator().validate(json.loads((out / "attention_graph.json").read_text()))
    html = (out / "report.html").read_text()
    # two inline scripts (the data, the code), nothing fetched: no script or style from a URL, no link
    assert len(re.findall(r"<script\b", html)) == 2 and "<script src" not in html and "<link" not in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    page = open_page(browser, (out / "report.html").as_uri())
    assert page.evaluate("location.protocol") == "file:" and page.is_hidden("#av-form")  # no server: no typing
    assert page.eval_on_selector_all("#av-sentence option", "os => os.map(o => o.title)") == [
        s["sentence"] for s in view["sentences"]]
    entry = view["sentences"][1]
    page.select_option("#av-sentence", "1")
    page.select_option("#av-weighting", "attention")
    page.select_option("#av-layer", "1")
    page.select_option("#av-head", "2")
    # before hovering, every edge of the head is drawn and none is highlighted
    drawn = page.eval_on_selector_all("#av-head-view line.edge", "ls => ls.length")
    assert drawn == sum(1 for e in entry["graphs"]["attention"]["edges"] if e["layer"] == 1 and e["head"] == 2)
    assert active_edges(page) == []
    for token in range(len(entry["tokens"])):
        page.hover(f'#av-head-view g.token[data-side="source"][data-index="{token}"]')
        assert active_edges(page) == json_edges(entry["graphs"]["attention"], 1, 2, token), token
        if active_edges(page):
            dimmed = page.eval_on_selector_all("#av-head-view line.edge.dim", "ls => ls.length")
            assert dimmed == drawn - len(active_edges(page))
    # the model view highlights the same token in every layer and head
    page.hover('#av-head-view g.token[data-side="source"][data-index="3"]')
    expected = sorted(e for layer in range(2) for head in range(4)
                      for e in json_edges(entry["graphs"]["attention"], layer, head, 3))
    assert expected and active_edges(page, "#av-model-view") == expected
    # keyboard: focus a token, arrow down to the next one
    page.mouse.move(0, 0)
    page.focus('#av-head-view g.token[data-side="source"][data-index="2"]')
    assert active_edges(page) == json_edges(entry["graphs"]["attention"], 1, 2, 2)
    page.keyboard.press("ArrowDown")
    assert active_edges(page) == json_edges(entry["graphs"]["attention"], 1, 2, 3)
    # norm-weighted and rollout (heads averaged: only "mean" can be chosen)
    page.select_option("#av-weighting", "norm")
    page.hover('#av-head-view g.token[data-side="source"][data-index="4"]')
    assert active_edges(page) == json_edges(entry["graphs"]["norm"], 1, 2, 4)
    page.select_option("#av-weighting", "rollout")
    assert page.eval_on_selector("#av-head", "s => s.value") == "mean"
    assert page.eval_on_selector_all("#av-head option:not([disabled])", "os => os.map(o => o.value)") == ["mean"]
    page.hover('#av-head-view g.token[data-side="source"][data-index="5"]')
    assert active_edges(page) == json_edges(entry["graphs"]["rollout"], 1, "mean", 5)
    assert "rollout" in page.text_content("#av-caption") and page.errors == []


@contextlib.contextmanager
def view_server(*args, stderr=subprocess.STDOUT):
    """`hf-minattn view ARGS --port 0` in a process of its own: yields (process, the URL it serves), then stops it."""
    command = [sys.executable, "-c", "import sys; from hf_minattn.cli import main; sys.exit(main())", "view",
               *map(str, args), "--port", "0", "--serve-for", "120"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        for line in server.stdout:
            if match := re.search(r"serving (http://\S+)", line):
                break
        else:
            pytest.fail(f"hf-minattn view did not start (exit {server.wait()})")
        yield server, match.group(1)
    finally:
        server.terminate()
        server.wait(timeout=30)


def type_sentence(page, sentence):
    """Type `sentence` into the served page's form and wait for it to be listed; returns the server's answer."""
    before = page.eval_on_selector_all("#av-sentence option", "os => os.length")
    page.fill("#av-input", sentence)
    page.click("#av-form button")
    page.wait_for_function(f"document.querySelectorAll('#av-sentence option').length === {before + 1}")
    return page.evaluate("s => fetch('api/attention?sentence=' + encodeURIComponent(s)).then(r => r.json())", sentence)


@pytest.mark.slow  # starts a browser
def test_view_server_encodes_a_typed_sentence_and_explains_bad_ones(browser, probe_folder):
    with view_server(probe_folder / "model") as (_, url):
        page = open_page(browser, url)
        page.wait_for_selector("#av-form", state="visible")
        before = page.eval_on_selector_all("#av-sentence option", "os => os.length")
        sentence = "the queen gave the dog a crown"
        answer = type_sentence(page, sentence)
        assert answer["sentence"] == sentence and page.eval_on_selector("#av-sentence", "s => s.value") == str(before)
        page.select_option("#av-head", "mean")
        page.hover('#av-head-view g.token[data-side="source"][data-index="1"]')
        assert active_edges(page) and active_edges(page) == json_edges(answer["graphs"]["attention"], 0, "mean", 1)
        for typed, message in [("   ", "type a sentence: it is empty"),
                               ("king " * 40, "tokens; the view encodes at most 32 with this model")]:
            page.fill("#av-input", typed)
            page.click("#av-form button")
            page.wait_for_function("document.getElementById('av-error').textContent !== ''")
            assert message in page.text_content("#av-error")
        assert page.eval_on_selector_all("#av-sentence option", "os => os.length") == before + 1
        assert page.errors == []


def menu(page, name):
    return page.eval_on_selector_all(f"#av-{name} option:not([disabled])", "os => os.map(o => o.value)")


@pytest.mark.slow  # starts a browser
def test_view_lists_each_sentences_own_layers_and_heads_and_keeps_the_picked_head(browser, probe_folder):
    """--model may name a model of another size than the probed one (here 3 layers x 2 heads; the probe's 2 x 4): a
    typed sentence's Layer and Head menus and model view are its model's. A head picked stays picked through a
    weighting or sentence that lacks it (rollout has the head mean only), and is shown again where it exists."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(probe_folder / "model")
    other = probe_folder / "model_3x2"
    MinAttnForMaskedLM(tiny_config(vocab_size=len(tok), max_position_embeddings=32, num_hidden_layers=3,
                                   num_attention_heads=2, qk_logit_init_std=2.0)).save_pretrained(other)
    tok.save_pretrained(other)
    with view_server(probe_folder / "probe", "--model", other) as (_, url):
        page = open_page(browser, url)
        page.wait_for_selector("#av-form", state="visible")
        assert menu(page, "layer") == ["0", "1"] and menu(page, "head") == ["0", "1", "2", "3", "mean"]
        page.select_option("#av-head", "2")
        page.select_option("#av-weighting", "rollout")
        assert page.eval_on_selector("#av-head", "s => s.value") == "mean"
        page.select_option("#av-weighting", "attention")
        assert page.eval_on_selector("#av-head", "s => s.value") == "2"  # the head picked, not the mean
        answer = type_sentence(page, "the king and the queen")
        assert menu(page, "layer") == ["0", "1", "2"] and menu(page, "head") == ["0", "1", "mean"]
        assert page.eval_on_selector("#av-head", "s => s.value") == "mean"  # head 2 is not this model's
        rows = page.eval_on_selector_all("#av-model-view tr th:first-child", "ths => ths.map(t => t.textContent)")
        columns = page.eval_on_selector_all("#av-model-view tr:first-child th", "ths => ths.map(t => t.textContent)")
        assert rows[1:] == ["layer 0", "layer 1", "layer 2"] and columns[1:] == ["head 0", "head 1"]
        page.select_option("#av-layer", "2")
        page.select_option("#av-head", "1")
        page.hover('#av-head-view g.token[data-side="source"][data-index="1"]')
        assert active_edges(page) == json_edges(answer["graphs"]["attention"], 2, 1, 1) and active_edges(page)
        page.select_option("#av-sentence", "0")  # the probe's model: layer 2 is not there, head 1 is
        assert page.eval_on_selector("#av-layer", "s => s.value") == "1"
        assert page.eval_on_selector("#av-head", "s => s.value") == "1"
        assert page.errors == []


def test_a_killed_view_server_removes_its_temporary_page(probe_folder, tmp_path):
    """SIGTERM (a kill, a process manager, Popen.terminate) stops the server as Ctrl-C does: the model page's
    temporary folder goes with it."""
    command = [sys.executable, "-c", "import sys; from hf_minattn.cli import main; sys.exit(main())", "view",
               str(probe_folder / "model"), "--port", "0", "--serve-for", "120"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp_path)})
    try:
        lines = []
        for line in server.stdout:
            lines.append(line)
            if "serving http://" in line:
                break
        else:
            pytest.fail(f"hf-minattn view did not start (exit {server.wait()}): {''.join(lines)}")
        assert len(list(tmp_path.glob("hf-minattn-view-*"))) == 1  # the page, while it serves
        server.terminate()
        rest = server.communicate(timeout=60)[0]
    finally:
        server.kill()
    assert server.returncode == 0 and "[view] stopped" in rest
    assert list(tmp_path.glob("hf-minattn-view-*")) == []


def test_view_command_rejects_what_it_cannot_serve(tmp_path, capsys):
    from hf_minattn.cli import main

    assert main(["view", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["view", str(tmp_path)]) == 2
    assert "neither report.html" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--serve-for", "-1"]) == 2
    assert f"--serve-for must be in (0, {threading.TIMEOUT_MAX}), got -1.0" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--serve-for", "1e20"]) == 2  # threading.Timer's OverflowError, in its thread
    assert f"--serve-for must be in (0, {threading.TIMEOUT_MAX}), got 1e+20" in capsys.readouterr().err
    page = tmp_path / "page"  # a report alone: served without a model
    page.mkdir()
    (page / "report.html").write_text("<html></html>")
    assert main(["view", str(page), "--device", "nosuch", "--serve-for", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device 'nosuch' cannot be used here" in err[0]
    assert main(["view", str(page), "--host", "192.0.2.1", "--port", "0", "--serve-for", "1"]) == 2  # not this machine
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--host 192.0.2.1 --port 0: cannot serve there" in err[0]


@pytest.mark.slow  # probes a model through the CLI
def test_view_serves_a_probe_folder_with_the_model_it_probed(probe_folder):
    """In process, without a browser: the report and its files, and api/info naming the probed model."""
    import threading
    import urllib.error
    import urllib.request

    from hf_minattn.probes.serve import make_server, prepare

    folder, encoder, page = prepare(str(probe_folder / "probe"))
    assert (folder, page) == (str(probe_folder / "probe"), "report.html") and encoder.name == "model"
    server = make_server("127.0.0.1", 0, folder, encoder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        assert b'id="attention-view"' in urllib.request.urlopen(url + "report.html").read()
        assert json.loads(urllib.request.urlopen(url + "api/info").read()) == {
            "model": "model", "max_tokens": 32, "num_layers": 2, "num_heads": 4}
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(url + "api/nothing")
        assert error.value.code == 404 and "api/info and api/attention" in json.loads(error.value.read())["error"]
    finally:
        server.shutdown()
        server.server_close()
    # without a model to load, the report is still served, and the page is told there is nothing to type into
    (probe_folder / "probe_copy").mkdir(exist_ok=True)
    shutil.copy(probe_folder / "probe" / "report.html", probe_folder / "probe_copy")
    assert prepare(str(probe_folder / "probe_copy"))[1] is None


def test_graphs_and_figures_show_tokens_as_their_tokenizer_writes_them(tokenizer):
    """A byte-level BPE (RoBERTa's, GPT-2's) writes "bank" as the token "Ġbank" and "é" as two byte tokens: the view's
    nodes and the figures show "bank" (as bertviz does), a byte token as it is, and a word-level graph the words as
    the sentence writes them ("café"); WordPiece's "##" pieces keep their marker."""
    from test_probes import byte_level_bpe
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from hf_minattn.probes.attention_flow import rollout_graph
    from hf_minattn.probes.heads import attention_examples, attention_graph
    from hf_minattn.probes.results import HeadExample, shown_tokens

    byte_level = PreTrainedTokenizerFast(tokenizer_object=byte_level_bpe(400, ["<pad>"], byte_alphabet=True),
                                         pad_token="<pad>")
    model = BertModel(BertConfig(vocab_size=400, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=40, max_position_embeddings=32)).eval()
    sentence = "The café is on the river bank"
    [example], _ = attention_examples(model, byte_level, [sentence], norm_weighting=False)
    assert "Ġbank" in example.tokens and "Ã" in example.tokens  # the case this test is about
    labels = attention_graph(example, level="token")["nodes"]
    assert [node["label"] for node in labels] == example.labels == shown_tokens(example)
    assert example.labels[example.tokens.index("Ġbank")] == "bank" and "Ã" in example.labels
    assert all(label == "Ġ" or not label.startswith("Ġ") for label in example.labels)  # a lone space stays "Ġ"
    words = ["The", "café", "is", "on", "the", "river", "bank"]
    assert [node["label"] for node in attention_graph(example)["nodes"]] == words
    assert [node["label"] for node in rollout_graph(example)["nodes"]] == words
    # probes.json keeps the labels for the report's figures; a file from before them shows the tokens
    saved = HeadExample.from_dict({"sentence": sentence, "tokens": example.tokens, "attention": example.attention,
                                   "labels": example.labels})
    assert shown_tokens(saved) == example.labels
    assert shown_tokens(HeadExample(sentence, example.tokens, example.attention)) == example.tokens
    # WordPiece: the continuation marker stays, specials as they are
    [pieces], _ = attention_examples(model, tokenizer, ["An unbelievable example."], norm_weighting=False)
    assert pieces.labels == pieces.tokens and any(t.startswith("##") for t in pieces.tokens)


def _labels_view(causal=False):
    """A view of one 3-token sentence whose norm graphs are an older file's (no whole_layer: the "mean" edges are the
    head mean) and a new one's (whole_layer "layer"), as attention_graph writes them."""
    from hf_minattn.probes.heads import AttentionExample, attention_graph

    a = torch.tensor([[[0.2, 0.3, 0.5]] * 3, [[0.6, 0.3, 0.1]] * 3]).tril()
    a = a / a.sum(-1, keepdim=True) if causal else torch.tensor([[[0.2, 0.3, 0.5]] * 3, [[0.6, 0.3, 0.1]] * 3])
    example = AttentionExample(sentence="a b c", tokens=list("abc"), word_ids=[0, 1, 2], attention=a[None].tolist(),
                               norm_weighted=a[None].tolist(), norm_weighted_layer=a.mean(0)[None].tolist(),
                               causal=causal)
    new = attention_graph(example, level="token", weighting="norm")
    old = {k: v for k, v in new.items() if k not in ("whole_layer", "causal")}
    graphs = {"attention": attention_graph(example, level="token"), "norm": new, "rollout": rollout_graph(example)}
    entry = {"sentence": "a b c", "tokens": list("abc"), "graphs": graphs}
    return {"schema": VIEW_SCHEMA, "model": "m", "num_layers": 1, "num_heads": 2, "level": "token", "max_tokens": 8,
            "weightings": ["attention", "norm", "rollout"],
            "sentences": [entry, {**entry, "sentence": "a b c (old)", "graphs": {**graphs, "norm": old}}]}


def test_view_graphs_say_what_their_mean_edges_are():
    view = _labels_view()
    schema_validator().validate(view)
    graphs = view["sentences"][0]["graphs"]
    assert graphs["norm"]["whole_layer"] == "layer" and graphs["attention"]["whole_layer"] == "head mean"
    assert "whole_layer" not in view["sentences"][1]["graphs"]["norm"]  # the older file's graph, valid too


@pytest.mark.slow  # starts a browser
@pytest.mark.parametrize("causal", [False, True])
def test_view_labels_the_mean_head_and_the_cut_by_the_data(browser, tmp_path, causal):
    """The "mean" head of a norm graph is the whole layer where its whole_layer says so and the head mean in an older
    file; a causal graph's caption names the per-query cut 2/n_i rather than its smallest cut as the cut."""
    from hf_minattn.probes.report.view import attention_view_html

    page_path = tmp_path / "view.html"
    page_path.write_text(f"<!doctype html><html><body>{attention_view_html(_labels_view(causal))}</body></html>")
    page = open_page(browser, page_path.as_uri())
    seen = {}
    for sentence in ("0", "1"):
        page.select_option("#av-sentence", sentence)
        page.select_option("#av-weighting", "norm")
        page.select_option("#av-head", "mean")
        seen[sentence] = (page.inner_text("#av-caption"), page.eval_on_selector(
            '#av-head option[value="mean"]', "o => o.textContent"))
    assert not page.errors
    assert "the whole layer (||sum_h a f_h||, not a head mean)" in seen["0"][0] and seen["0"][1] == "whole layer"
    assert "mean of the heads" in seen["1"][0] and seen["1"][1] == "all heads (mean)"
    assert ("1/n_i over the n_i tokens each query sees" in seen["0"][0]) is causal
    assert "1/n_i" not in seen["1"][0]  # the older graph does not say it is causal
    page.close()
