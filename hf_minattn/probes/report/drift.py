"""Drift during training: which weights did training change most? Each parameter's distance from initialisation
(and gradient norm and loss where recorded) over training steps."""

import os

import matplotlib.pyplot as plt

from ..plots import save_figure
from .benchmark import and_list
from .page import Section
from .words import cell


def _drift_final(d):
    """(metric, {parameter: its last value}, largest first)."""
    metric = "drift" if "drift" in d.metrics else next(iter(d.metrics))
    final = dict(sorted(((p, s["values"][-1]) for p, s in d.metrics[metric].items()), key=lambda x: -x[1]))
    return metric, final


def _ranked(final: dict) -> bool:
    """Whether the parameters have a most and a least: two or more, not all at one value as printed."""
    return len({f"{v:.3g}" for v in final.values()}) > 1


def _ends(final: dict) -> tuple[str, str]:
    """("a" or "a and b", the same for the least): every parameter tied at the top (bottom) value as printed, since
    naming one of equal printed values would rank what the numbers do not."""
    values = list(final.values())
    top, bottom = f"{values[0]:.3g}", f"{values[-1]:.3g}"
    return (and_list(p for p, v in final.items() if f"{v:.3g}" == top),
            and_list(p for p, v in final.items() if f"{v:.3g}" == bottom))


def drift_text(r):
    d = r.drift
    metric, final = _drift_final(d)
    names = list(final)
    if not _ranked(final):
        return (f"From {os.path.basename(d.path)}: by the end of training, {metric} is {final[names[0]]:.3g} for "
                f"{' and '.join(names) if len(names) < 4 else f'all {len(names)} parameters'}: no parameter stands out.")
    where = ("that is where training moved the weights most and least" if metric == "drift" else
             "this file records no drift (distance from initialisation), so it does not say where the weights moved")
    most, least = _ends(final)
    return (f"From {os.path.basename(d.path)}: by the end of training, {metric} is largest for {most} "
            f"({final[names[0]]:.3g}) and smallest for {least} ({final[names[-1]]:.3g}): {where}.")


def drift_headline(r):
    metric, final = _drift_final(r.drift)
    names = list(final)
    if not _ranked(final):
        return f"By the end of training, {metric} is level across the parameters ({final[names[0]]:.3g})."
    most, least = _ends(final)
    if metric != "drift":  # a file without drift: its ranking does not say where the weights moved
        return (f"By the end of training, {metric} is largest for {most} ({final[names[0]]:.3g}) and smallest for "
                f"{least} ({final[names[-1]]:.3g}); the file records no drift.")
    size = "their initial sizes" if " and " in most else "its initial size"
    return (f"Training moved {most} the most relative to {size} (||W - W_0|| / ||W_0|| = "
            f"{final[names[0]]:.3g} at the end) and {least} the least ({final[names[-1]]:.3g}).")


def drift_tables(r):
    d = r.drift
    metric, final = _drift_final(d)
    others = [m for m, series in d.metrics.items() if m != metric and set(series) & set(final)]
    return [{"header": ["parameter", f"{metric} at the end", *[f"{m} at the end" for m in others]],
             "rows": [[p, f"{v:.3g}", *[cell(d.metrics[m][p]["values"][-1] if p in d.metrics[m] else None,
                                              fmt=".3g") for m in others]]
                      for p, v in final.items()]}]


def drift_plot(r, path, figure_format=None):
    d = r.drift
    if not d or not d.metrics:
        return None
    metrics = [m for m in ("drift", "grad_norm", "loss") if m in d.metrics] or list(d.metrics)
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for name, series in d.metrics[metric].items():
            ax.plot(series["steps"], series["values"], label=name)
        ax.set_title({"drift": "relative distance from init ||W-W0||/||W0||"}.get(metric, metric), fontsize=9)
        ax.set_yscale("log" if metric == "grad_norm" else "linear")
        ax.set_xlabel("training step")
        if len(d.metrics[metric]) <= 12:
            ax.legend(fontsize=6)
    return save_figure(fig, path, figure_format)


SECTION = Section(
    name="drift", title="Drift during training", needs="drift", question="Which weights did training change most?",
    reads="results", headline=drift_headline, text=drift_text, tables=drift_tables, figure=drift_plot,
    alt="Line charts over training steps, one line per parameter: distance from initialisation (and gradient norm "
        "and loss where recorded)")
