"""Every figure also as SVG (--figure-format png|svg|both), the report embedding the smaller file, and
whole-number ticks on every layer and head axis. Small synthetic results of a 2-layer model: matplotlib's default
ticks on 0..2 layers would read 0.25, 0.5..., on a 2-row heat map -0.5, 0.5, 1.5."""

import json
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from hf_minattn.probes import plots
from hf_minattn.probes.report.bands import bands_plot
from hf_minattn.probes.report.geometry import geometry_plot
from hf_minattn.probes.report.head_map import head_map_plot
from hf_minattn.probes.report.page import figure_uri, macros, section_page
from hf_minattn.probes.results import SavedProbeResults

LAYERS, HEADS = 2, 3


def results():
    """A probes.json-like dict with the geometry (two line figures over layers) and head ablation (a layers x heads
    heat map) of a 2-layer, 3-head model."""
    curve = [0.5, 0.4, 0.3]
    geometry = {"layers": list(range(LAYERS + 1)), "adjusted_self_similarity_by_band": {"0-100": curve,
                                                                                        "100-1000": [None, 0.2, 0.1]},
                "words_per_band": {"0-100": 10, "100-1000": 5}}
    for key in ("self_similarity", "intra_similarity", "mev", "anisotropy", "mev_baseline", "adjusted_self_similarity",
                "adjusted_intra_similarity", "adjusted_mev"):
        geometry[key] = curve
    ablation = {"num_layers": LAYERS, "num_heads": HEADS, "base_loss": 5.0,
                "loss_increase": [[0.01 * (l + h) for h in range(HEADS)] for l in range(LAYERS)],
                "interval95": [[0.01] * HEADS for _ in range(LAYERS)], "masked_tokens": 40, "sentences": 8}
    return {"model": "tiny", "num_layers": LAYERS, "num_heads": HEADS, "hidden_size": 8,
            "model_class": "MinAttnForMaskedLM", "geometry": geometry, "head_ablation": ablation}


DRAWN = {"geometry", "bands", "head_ablation"}


def svg_root(path):
    return ET.parse(path).getroot()


def test_svg_writes_only_svgs_that_parse_and_are_reproducible(tmp_path):
    paths = plots.all_plots(results(), str(tmp_path), figure_format="svg")
    assert set(paths) == DRAWN
    assert sorted(os.listdir(tmp_path)) == sorted(f"{name}.svg" for name in DRAWN)
    for name, path in paths.items():
        assert path == str(tmp_path / f"{name}.svg")  # what the report is given: the file there is
        assert svg_root(path).tag == "{http://www.w3.org/2000/svg}svg"
    text = (tmp_path / "geometry.svg").read_text()
    assert "<text" in text and "layer (0 = embedding output)" in text  # svg.fonttype 'none': text stays text
    assert "<dc:date>" not in text
    (tmp_path / "again").mkdir()
    again = geometry_plot(SavedProbeResults.from_dict(results()), tmp_path / "again" / "geometry.png", "svg")
    assert again == tmp_path / "again" / "geometry.svg"  # a Path in, a Path out
    assert again.read_bytes() == (tmp_path / "geometry.svg").read_bytes()  # no date, fixed ids: the same file


def test_both_writes_png_and_svg_and_returns_the_png_paths(tmp_path):
    paths = plots.all_plots(results(), str(tmp_path), figure_format="both")
    assert paths == {name: str(tmp_path / f"{name}.png") for name in DRAWN}  # the callers' paths, as before
    for name in DRAWN:
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert svg_root(tmp_path / f"{name}.svg").tag.endswith("svg")


def test_png_writes_no_svg_and_a_path_suffix_is_the_default_format(tmp_path):
    paths = plots.all_plots(results(), str(tmp_path), figure_format="png")
    assert set(paths) == DRAWN and not list(tmp_path.glob("*.svg")) and len(list(tmp_path.glob("*.png"))) == 3
    assert bands_plot(SavedProbeResults.from_dict(results()), tmp_path / "b.svg").suffix == ".svg" and not (tmp_path / "b.png").exists()


@pytest.mark.parametrize("call", [lambda r, folder: plots.all_plots(r, folder, figure_format="jpeg"),
                                  lambda r, folder: plots.compare_plots({"a": r}, folder, figure_format="jpeg"),
                                  lambda r, folder: geometry_plot(SavedProbeResults.from_dict(r),
                                                                  os.path.join(folder, "g.png"), "jpeg"),
                                  lambda r, folder: geometry_plot(SavedProbeResults.from_dict(r),
                                                                  os.path.join(folder, "g.jpeg"))])
def test_a_bad_format_is_refused_by_name_before_drawing(call, tmp_path):
    with pytest.raises(ValueError, match=r"'jpeg'.*png, svg, both"):
        call(results(), str(tmp_path))
    assert not os.listdir(tmp_path)


def drawn_figures(monkeypatch):
    """Every figure save_figure writes (and closes), kept for inspection."""
    figures = []
    close = plots.plt.close

    def keep(fig=None):
        if hasattr(fig, "axes"):  # a figure, not "all" or a figure number
            figures.append(fig)
        return close(fig)

    monkeypatch.setattr(plots.plt, "close", keep)
    return figures


def tick_labels(axis):
    """The tick labels drawn: those within the axis's view."""
    low, high = sorted(axis.get_view_interval())
    return [t.get_text() for loc, t in zip(axis.get_majorticklocs(), axis.get_ticklabels())
            if low - 1e-9 <= loc <= high + 1e-9 and t.get_text()]


def test_layer_and_head_axes_have_integer_ticks(monkeypatch, tmp_path):
    figures = drawn_figures(monkeypatch)
    r = results()
    plots.all_plots(r, str(tmp_path), figure_format="png")
    r["heads"] = {"num_layers": LAYERS, "num_heads": HEADS,
                  "mds": [[0.1 * k, 0.05 * k * k] for k in range(LAYERS * HEADS)]}
    head_map_plot(SavedProbeResults.from_dict(r), tmp_path / "map.png")  # its colour bar is the layer
    plots.compare_plots({"a": results(), "b": results()}, str(tmp_path), figure_format="png")
    checked = []
    for fig in figures:
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                if axis.get_label_text().lower().startswith(("layer", "head")):
                    labels = tick_labels(axis)
                    assert labels and all(re.fullmatch(r"\d+", t) for t in labels), (axis.get_label_text(), labels)
                    checked.append(axis.get_label_text().split()[0])
    # geometry (2 panels), bands, the heat map's layer and head axes, the MDS colour bar, compare's geometry
    assert checked.count("layer") >= 6 and checked.count("head") == 1
    heat_map = next(fig for fig in figures if any(ax.get_xlabel() == "head" for ax in fig.axes)).axes[0]
    assert tick_labels(heat_map.yaxis) == ["0", "1"] and tick_labels(heat_map.xaxis) == ["0", "1", "2"]


def test_integer_ticks_keep_ticks_placed_by_hand():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 2, 3])
    ax.set_xlabel("layer"), ax.set_ylabel("loss")
    ax.set_xticks([0, 2], ["static", "top"])
    plots.integer_ticks(fig)
    assert list(ax.get_xticks()) == [0, 2] and [t.get_text() for t in ax.get_xticklabels()] == ["static", "top"]
    plt.close(fig)


def test_the_report_embeds_the_smaller_file_of_the_same_figure(tmp_path):
    png, svg = tmp_path / "f.png", tmp_path / "f.svg"
    png.write_bytes(b"\x89PNG" + b"p" * 100)
    svg.write_bytes(b"<svg/>")  # written after the PNG, smaller
    assert figure_uri(png).startswith("data:image/svg+xml;base64,")
    svg.write_bytes(b"<svg>" + b" " * 200 + b"</svg>")  # larger
    assert figure_uri(png).startswith("data:image/png;base64,")
    # an SVG left by an earlier run (older than the PNG given) is not this figure
    svg.write_bytes(b"<svg/>")
    os.utime(svg, ns=(png.stat().st_mtime_ns - 10**9,) * 2)
    assert figure_uri(png).startswith("data:image/png;base64,")
    only = tmp_path / "only.svg"
    only.write_bytes(b"<svg/>")
    assert figure_uri(only) == "data:image/svg+xml;base64,PHN2Zy8+"
    # the section's <img>: the data: URI as its src, the alt text kept
    html = str(macros().section(section_page("x", "X", None, str(only), alt="a figure")))
    assert '<img src="data:image/svg+xml;base64,PHN2Zy8+" alt="a figure"' in html


def test_a_real_report_embeds_svgs_where_smaller(tmp_path):
    paths = plots.all_plots(results(), str(tmp_path), figure_format="both")
    for name, path in paths.items():
        smaller = "svg+xml" if (tmp_path / f"{name}.svg").stat().st_size < (tmp_path / f"{name}.png").stat().st_size \
            else "png"
        assert figure_uri(path).startswith(f"data:image/{smaller};base64,"), name


def test_the_clis_refuse_an_unknown_figure_format(tmp_path, capsys):
    from hf_minattn.cli import main
    from hf_minattn.experiments import run_experiments
    from hf_minattn.experiments.cli import main as experiments_main
    from hf_minattn.probes.cli import probe_parser

    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "probes.json").write_text(json.dumps(results()))
    for argv in (lambda: main(["compare", str(folder), "--out", str(tmp_path / "c"), "--figure-format", "jpeg"]),
                 lambda: probe_parser().parse_args(["model", "--out", "x", "--figure-format", "jpeg"]),
                 lambda: experiments_main(["--out", str(tmp_path / "e"), "--figure-format", "jpeg"])):
        with pytest.raises(SystemExit) as exit:
            argv()
        assert exit.value.code == 2
        message = capsys.readouterr().err
        assert "--figure-format" in message and "'jpeg'" in message and "'png', 'svg', 'both'" in message
    with pytest.raises(ValueError, match="'jpeg'"):  # before any training
        run_experiments(str(tmp_path / "e"), figure_format="jpeg")
    assert not (tmp_path / "c").exists() and not (tmp_path / "e").exists()
    assert probe_parser().parse_args(["model", "--out", "x"]).figure_format == "both"


def test_compare_cli_writes_the_format_asked_for(tmp_path):
    from hf_minattn.cli import main

    for name in ("a", "b"):  # the same results in two folders: one folder given twice is refused
        (tmp_path / name).mkdir()
        (tmp_path / name / "probes.json").write_text(json.dumps(results()))
    folders = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert main(["compare", *folders, "--out", str(tmp_path / "c"), "--figure-format", "svg"]) == 0
    assert sorted(p.name for p in (tmp_path / "c").glob("compare_*")) == ["compare_geometry.svg"]
    assert "data:image/svg+xml;base64," in (tmp_path / "c" / "compare.html").read_text()


def test_experiment_figures_follow_the_format(tmp_path):
    from test_experiments_verdicts import synthetic

    from hf_minattn.experiments.figures import make_figures

    paths = make_figures(synthetic(), str(tmp_path), "svg")
    assert paths and all(p.startswith("figures/") and p.endswith(".svg") for p in paths.values())
    assert sorted(os.listdir(tmp_path / "figures")) == sorted(os.path.basename(p) for p in paths.values())
    for p in paths.values():
        assert svg_root(tmp_path / p).tag.endswith("svg")


def test_the_row_drift_svg_holds_its_points_as_one_image_and_stays_small(tmp_path):
    """8,192 vocabulary rows as SVG paths made a 2.4 MB figure; rasterized, the points are one embedded image."""
    from test_experiments_verdicts import synthetic

    from hf_minattn.experiments.figures import make_figures

    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5000, 8192)
    np.savez(tmp_path / "rows.npz", counts=counts, full_drift=rng.random(8192), frozen_drift=rng.random(8192))
    paths = make_figures(synthetic(), str(tmp_path), "svg")
    svg = tmp_path / paths["row_drift"]
    images = [e for e in svg_root(svg).iter() if e.tag.endswith("image")]
    assert len(images) == 1 and os.path.getsize(svg) < 300_000, os.path.getsize(svg)


@pytest.mark.parametrize("scored", [("king/queen", "king/dog"), ()])
def test_related_words_are_drawn_only_where_every_system_scored_a_pair(tmp_path, scored):
    # a corpus too small for the pairs (the quick preset's) gave empty axes that FINDINGS.md still showed
    from test_experiments_verdicts import synthetic

    from hf_minattn.experiments.figures import make_figures

    interval = {"estimate": 0.2, "low": 0.1, "high": 0.3, "n": 3, "confidence": 0.95, "method": "t", "df": 2}
    results = synthetic()
    results["answers"]["q4"] = {"js_within_layer_trained": [interval] * LAYERS, "js_within_layer_init": [interval] * LAYERS}
    results["answers"]["q5"] = {"related": {system: {"abtt": False, "anisotropy": interval,
                                                     **{pair: interval for pair in scored}}
                                            for system in ("static", "layer_2", "word2vec")}}
    paths = make_figures(results, str(tmp_path), "svg")
    assert "head_diversity" in paths  # the figures beside it are drawn either way
    assert ("related_words" in paths) == bool(scored)
    assert os.path.isfile(tmp_path / "figures" / "related_words.svg") == bool(scored)


def test_the_row_drift_is_drawn_only_from_the_scoring_behind_the_results(tmp_path):
    """rows.npz keeps the scoring key it was written under: a folder scored again on other seeds holds the later
    file, which `hf-minattn findings` drew under the earlier results."""
    from test_experiments_verdicts import synthetic

    from hf_minattn.experiments.caches import SCORING_SETTINGS
    from hf_minattn.experiments.figures import make_figures

    results, rng = synthetic(), np.random.default_rng(0)
    settings = {k: results["settings"][k] for k in SCORING_SETTINGS if k in results["settings"]}
    for seeds, drawn in ((list(results["seeds"]), True), ([*results["seeds"], 99], False)):
        key = json.dumps({"seeds": seeds, "settings": settings, "models": {}})
        np.savez(tmp_path / "rows.npz", key=np.array(key), counts=rng.integers(0, 50, 100),
                 full_drift=rng.random(100), frozen_drift=rng.random(100))
        assert ("row_drift" in make_figures(results, str(tmp_path), "png")) is drawn
