"""The model's attentions in bertviz (README, "Open the attentions in bertviz"): bertviz's head_view and model_view
are called with html_action="return", which runs their whole data-preparation path offline (shape checks,
format_attention, the token lists) and embeds the result as JSON in the page's script (`const params = {...};`).
The tests read that JSON back and compare it with what the model returned. Opening the page in a browser needs
require.js, d3 and jQuery from a CDN, so nothing here renders it."""

import json
import re
from pathlib import Path

import pytest
import torch
from bertviz import head_view, model_view
from transformers import AutoModelForMaskedLM

from conftest import tiny_config
from hf_minattn import MinAttnForMaskedLM

README = Path(__file__).resolve().parent.parent / "docs" / "interoperability.md"  # where the snippet lives
SENTENCE = "She sat on the bank of the river and watched the water."
PAIR = ("The queen ruled the kingdom.", "A dog barked at the cat.")
LAYERS, HEADS = 2, 4  # tiny_config


def embedded_params(html: str) -> dict:
    """The params bertviz built, as the page's script holds them (bertviz replaces the marker PYTHON_PARAMS in
    head_view.js / model_view.js by json.dumps(params))."""
    marker = "const params = "
    assert html.count(marker) == 1
    params, _ = json.JSONDecoder().raw_decode(html, html.index(marker) + len(marker))
    return params


def tiny_model(tokenizer):
    # qk_logit_init_std 2: attention far from uniform, so rows, heads and layers differ visibly.
    return MinAttnForMaskedLM(tiny_config(vocab_size=len(tokenizer), qk_logit_init_std=2.0)).eval()


def attentions_and_tokens(model, tokenizer, *text):
    inputs = tokenizer(*text, return_tensors="pt")
    with torch.no_grad():
        attention = model(**inputs, output_attentions=True).attentions
    return attention, tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])


def stacked(attention) -> torch.Tensor:
    """(layers, heads, tokens, tokens): bertviz's format_attention of a batch of one."""
    return torch.cat(attention)


def as_tensor(nested) -> torch.Tensor:
    # bertviz does not round: float32 -> Python float (.tolist()) -> JSON (repr) -> float32 is exact.
    return torch.tensor(nested, dtype=torch.float32)


def test_our_attentions_have_the_shape_bertviz_documents(tokenizer):
    """bertviz's contract: one tensor per layer, (batch_size (must be 1), num_heads, seq_len, seq_len)."""
    attention, tokens = attentions_and_tokens(tiny_model(tokenizer), tokenizer, SENTENCE)
    assert isinstance(attention, tuple) and len(attention) == LAYERS
    for layer in attention:
        assert layer.shape == (1, HEADS, len(tokens), len(tokens)) and layer.dtype == torch.float32
        torch.testing.assert_close(layer.sum(-1), torch.ones(1, HEADS, len(tokens)))
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and any(token.startswith("##") for token in tokens)


def test_head_view_embeds_our_tokens_and_attentions(tokenizer):
    attention, tokens = attentions_and_tokens(tiny_model(tokenizer), tokenizer, SENTENCE)
    params = embedded_params(head_view(attention, tokens, html_action="return").data)
    assert params["include_layers"] == list(range(LAYERS)) and params["layer"] is None and params["heads"] is None
    (data,) = params["attention"]  # one view without sentence_b_start
    assert data["left_text"] == tokens and data["right_text"] == tokens  # WordPiece tokens pass through unchanged
    embedded = as_tensor(data["attn"])
    assert embedded.shape == (LAYERS, HEADS, len(tokens), len(tokens))
    assert torch.equal(embedded, stacked(attention))
    assert not torch.equal(embedded[0], embedded[1]) and not torch.equal(embedded[:, 0], embedded[:, 1])


def test_head_view_splits_a_sentence_pair_where_the_second_sentence_starts(tokenizer):
    attention, tokens = attentions_and_tokens(tiny_model(tokenizer), tokenizer, *PAIR)
    b_start = tokens.index("[SEP]") + 1  # the tokenizer returns no token_type_ids; [CLS] A [SEP] B [SEP]
    assert tokens.count("[SEP]") == 2 and b_start < len(tokens) - 1
    params = embedded_params(head_view(attention, tokens, sentence_b_start=b_start, html_action="return").data)
    views = {view["name"]: view for view in params["attention"]}
    whole = stacked(attention)
    a, b = slice(0, b_start), slice(b_start, len(tokens))
    for name, rows, columns in [("All", slice(None), slice(None)), ("Sentence A -> Sentence A", a, a),
                                ("Sentence B -> Sentence B", b, b), ("Sentence A -> Sentence B", a, b),
                                ("Sentence B -> Sentence A", b, a)]:
        view = views.pop(name)
        assert view["left_text"] == tokens[rows] and view["right_text"] == tokens[columns]
        assert torch.equal(as_tensor(view["attn"]), whole[:, :, rows, columns])
    assert not views


def test_model_view_embeds_every_layer_and_head(tokenizer):
    attention, tokens = attentions_and_tokens(tiny_model(tokenizer), tokenizer, SENTENCE)
    params = embedded_params(model_view(attention, tokens, html_action="return").data)
    assert params["include_layers"] == list(range(LAYERS)) and params["include_heads"] == list(range(HEADS))
    assert params["total_heads"] == HEADS
    (data,) = params["attention"]
    assert data["left_text"] == tokens and data["right_text"] == tokens
    assert torch.equal(as_tensor(data["attn"]), stacked(attention))
    # A subset of layers and heads, as the README's note on long inputs suggests.
    params = embedded_params(model_view(attention, tokens, include_layers=[1], include_heads=[2, 0],
                                        html_action="return").data)
    assert torch.equal(as_tensor(params["attention"][0]["attn"]), stacked(attention)[[1]][:, [2, 0]])


def test_bertviz_rejects_a_token_list_that_does_not_match():
    """The check our token lists must pass: bertviz compares their length with the attention's."""
    attention = tuple(torch.full((1, HEADS, 3, 3), 1 / 3) for _ in range(LAYERS))
    with pytest.raises(ValueError, match="Attention has 3 positions, while number of tokens is 2"):
        head_view(attention, ["[CLS]", "[SEP]"], html_action="return")


def readme_snippet() -> str:
    text = README.read_text()
    match = re.search(r"<!-- bertviz-snippet -->\n```python\n(.*?)```\n<!-- /bertviz-snippet -->", text, re.S)
    assert match, "README.md lost its bertviz snippet markers"
    return match.group(1)


def test_the_readme_snippet_writes_both_views_of_a_saved_model(tokenizer, tmp_path, monkeypatch):
    """The README's code, run as written on a tiny model saved as run_mlm.py saves one (weights and tokenizer in
    one folder); only the folder's path is replaced."""
    model_dir = tmp_path / "model"
    tiny_model(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    snippet = readme_snippet()
    readme_path = 'model_path = "outputs/minattn-wiki"\n'
    assert snippet.count(readme_path) == 1
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(snippet.replace(readme_path, f"model_path = {str(model_dir)!r}\n"), "README.md", "exec"), namespace)

    attention, tokens = namespace["attention"], namespace["tokens"]
    assert len(attention) == LAYERS and tokens[0] == "[CLS]"
    # Loaded with the default attention implementation; the attentions are still those of the eager path.
    assert namespace["model"].config._attn_implementation != "eager"
    eager = AutoModelForMaskedLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        want = eager(**namespace["inputs"], output_attentions=True).attentions
    torch.testing.assert_close(stacked(attention), stacked(want))
    for page in ("head_view.html", "model_view.html"):
        params = embedded_params((tmp_path / page).read_text())
        (data,) = params["attention"]
        assert data["left_text"] == tokens
        assert torch.equal(as_tensor(data["attn"]), stacked(attention).detach())
