"""Head roles (Clark et al. 2019): the target each head gives the largest attention mass, if that mass is large
enough; the ratio to uniform attention on the same queries beside it."""

from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from ..plots import layer_by_head, save_figure
from .heads import HEAD_STATS, mass_text, target_object
from .page import Section
from .words import cell


ROLE_LABELS = {"self": "itself", "previous": "previous token", "next": "next token", "cls": "[CLS]", "sep": "[SEP]",
               "punctuation": "punctuation"}


def saved_roles(h):
    """(roles, mass, ratio, min_mass) as heads.head_roles gives them; files written before roles were chosen by
    mass (no role_min_mass) are relabelled from their saved statistics."""
    if h.role_min_mass is not None:
        return h.roles, h.role_mass, h.role_ratio, h.role_min_mass
    from ..heads import ROLE_MIN_MASS, head_roles

    roles = head_roles(h.stats, h.relative_to_uniform or {})
    return roles.roles, roles.mass, roles.ratio, ROLE_MIN_MASS


def role_label(role, min_mass):
    """A role's name; "none" says the mass a role needs in this run (heads.role_min_mass)."""
    return ROLE_LABELS.get(role) or f"no role (no target gets {min_mass:g} of the attention)"


def _role_counts(h):
    """(cells, counts, min_mass, most_none, commonest): cells per head k = layer * H + head as (role, mass, ratio);
    most_none when more than half the heads have no role; commonest (n, [roles]) among named roles otherwise: every
    role tied for the largest count n, in the file's order."""
    roles, mass, ratio, min_mass = saved_roles(h)
    cells = [cell for row in zip(roles, mass, ratio) for cell in zip(*row)]
    counts = Counter(role for role, _, _ in cells)
    most_none = counts["none"] > len(cells) / 2
    n = None if most_none else max(n for role, n in counts.items() if role != "none")
    commonest = None if most_none else (n, [role for role, k in counts.items() if role != "none" and k == n])
    return cells, counts, min_mass, most_none, commonest


def _strongest_by_role(cells, counts):
    """{role: head k with the largest mass among the heads of that role}, named roles commonest first."""
    named = sorted((role for role in counts if role != "none"), key=lambda role: -counts[role])
    return {role: max((k for k, cell in enumerate(cells) if cell[0] == role), key=lambda k: cells[k][1])
            for role in named}


def head_roles_text(r):
    h = r.heads
    H = h.num_heads
    cells, counts, min_mass, most_none, commonest = _role_counts(h)
    parts = [f"{counts[role]} {role_label(role, min_mass)} (strongest: head {k // H}-{k % H}, {mass_text(*cells[k][1:])})"
             for role, k in _strongest_by_role(cells, counts).items()]
    if counts["none"]:
        parts.append(f"{counts['none']} {role_label('none', min_mass)}")
    if most_none:
        verdict = f"most heads ({counts['none']} of {len(cells)}) give no single target {min_mass:g} of their attention"
    else:  # at least half the heads have a role
        n, top = commonest
        verdict = (f"the commonest role is {role_label(top[0], min_mass)} ({n} of {len(cells)} heads)" if len(top) == 1
                   else f"{' and '.join(role_label(t, min_mass) for t in top)} are tied for the commonest role ({n} of "
                   f"{len(cells)} heads each)")
    return (f"Roles as Clark et al. (2019) report them: a head's role is the target it gives the largest attention "
            f"mass (mean over queries), if that mass is >= {min_mass:g}; the ratio to uniform attention on the same "
            f"queries is shown beside it, but does not choose the role (its ceiling differs by target). Roles: "
            + "; ".join(parts) + f". So {verdict}.")


def head_roles_headline(r):
    cells, counts, min_mass, most_none, commonest = _role_counts(r.heads)
    named = [target_object(ROLE_LABELS.get(role, role)) for role in _strongest_by_role(cells, counts)]
    if most_none:
        rest = f"; the others give their largest share to {' or '.join(named)}" if named else ""
        return (f"Most heads ({counts['none']} of {len(cells)}) have no single clear job: no target gets "
                f"{min_mass:.0%} of their attention{rest}.")
    n, top = commonest
    if len(top) > 1:
        tied = " and to ".join(target_object(ROLE_LABELS.get(t, t)) for t in top)
        return (f"Attending to {tied} are tied for the commonest job: each is the job of {n} of {len(cells)} heads, "
                f"which give it at least {min_mass:.0%} of their attention.")
    return (f"The commonest job is attending to {target_object(ROLE_LABELS.get(top[0], top[0]))}: {n} of {len(cells)} "
            f"heads give it at least {min_mass:.0%} of their attention.")


def head_roles_tables(r):
    h = r.heads
    H = h.num_heads
    cells, counts, min_mass, _, _ = _role_counts(h)
    roles = {"header": ["role", "heads", "strongest head", "attention mass", "x uniform"],
             "rows": [[ROLE_LABELS.get(role, role), counts[role], f"{k // H}-{k % H}", cell(cells[k][1]),
                       cell(cells[k][2], fmt=".1f")] for role, k in _strongest_by_role(cells, counts).items()]}
    if counts["none"]:
        roles["rows"].append([f"no role (< {min_mass:g})", counts["none"], "-", "-", "-"])
    per_head = {"header": ["head", "role", "attention mass", "x uniform"], "details": True,
                "rows": [[f"{k // H}-{k % H}", ROLE_LABELS.get(role, "no role"), cell(mass), cell(ratio, fmt=".1f")]
                         for k, (role, mass, ratio) in enumerate(cells)]}
    return [roles, per_head]


def head_roles_plot(r, path, figure_format=None):
    h = r.heads
    if not h or not h.relative_to_uniform:
        return None
    keys = [(k, t) for k, t in HEAD_STATS if k != "entropy" and k in h.relative_to_uniform]
    fig, axes = plt.subplots(1, len(keys), figsize=(2.3 * len(keys), 0.5 * h.num_layers + 1.8), squeeze=False)
    for ax, (key, title) in zip(axes[0], keys):
        values = np.array([[np.nan if v is None else v for v in row] for row in h.relative_to_uniform[key]], dtype=float)
        layer_by_head(fig, ax, np.log2(np.maximum(values, 1e-3)), f"{title} / uniform", label="log2 ratio", fontsize=8,
                       cmap="RdBu_r", vmin=-4, vmax=4)
        ax.set_xticks(range(values.shape[1])), ax.set_yticks(range(values.shape[0]))  # whole heads and layers
    fig.suptitle("observed / uniform-attention expectation on the same queries (0 = as uniform)", fontsize=9)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="head_roles", title="Head roles by attention mass, ratio to uniform beside", needs="heads",
    question="Do the heads have clear jobs?",
    reads="results",
    headline=head_roles_headline, text=head_roles_text, tables=head_roles_tables, figure=head_roles_plot,
    alt="Heat maps over layer and head: log2 of observed attention over what uniform attention gets, per target")
