"""The interactive attention view (attention_view.py): where does each token look, head by head? Script, style and
data inline, so report.html opens offline; no figure."""

from markupsafe import Markup

from ..attention_view import view_assets, view_json
from .page import Section, templates


def attention_view_headline(view):
    """A description, not a claim: what the interactive view holds and how to use it."""
    return (f"An interactive view of {len(view['sentences'])} sentences' attention ({view['num_layers']} layers x "
            f"{view['num_heads']} heads): pick a sentence, a layer and a head, then point at a token to see where it "
            "looks.")


def attention_view_text(view):
    names = {"attention": "raw attention", "norm": "norm-weighted attention", "rollout": "rollout"}
    return (f"{len(view['sentences'])} sentences, {view['num_layers']} layers x {view['num_heads']} heads, as "
            f"{', '.join(names.get(w, w) for w in view['weightings'])}: pick a sentence, a layer and a head, then "
            "hover or focus a token to see its edges alone. The data is attention_view.json (docs/attention-graph.md).")


def attention_view_html(view):
    """The interactive view (attention_view.html.j2), script, style and data inline: it opens offline."""
    macro = templates().get_template("attention_view.html.j2").module.view
    return macro(Markup(view_json(view)), view_assets())


# first of the attention sections
SECTION = Section(
    name="attention_view", title="Attention, interactive", needs="attention_view", reads="view",
    question="Where does each token look, head by head?",
    headline=attention_view_headline, text=attention_view_text, html=attention_view_html)
