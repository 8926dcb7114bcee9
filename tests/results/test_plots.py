"""Plots read at a glance: one for every kind of Result, legends beside the data, no tick offset,
point labels apart, and a failed row drawn as failed."""

import pytest

from kprof.results.plots import POINT_LABEL, figure, plot_results
from tests.results.test_tables import LONG, chain, widened

pytest.importorskip("matplotlib")


def _kinds(real):
    sweep = widened(real, specs=["santa:s=32", "santa:s=64", "santa:s=124"], workloads=["w-8k", "w-32k"],
                    fail=["santa:s=64"])
    stages = chain(real)
    stages.kind = "stages"
    return {"compare": widened(real, fail=[LONG[1]]), "sweep": sweep, "chain": chain(real, fail=True),
            "stages": stages}


def test_every_kind_of_result_is_plotted_with_plain_axes_and_legends_outside(real_result, tmp_path):
    for kind, res in _kinds(real_result).items():
        fig = figure([res])
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        assert len(fig.axes) >= 2, kind
        for ax in fig.axes:
            assert ax.xaxis.get_offset_text().get_text() == "", (kind, ax.get_title())
            assert ax.yaxis.get_offset_text().get_text() == "", (kind, ax.get_title())
            legend = ax.get_legend()
            if legend is not None:
                box, inner = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
                assert box.x0 >= inner.x1 or box.y1 <= inner.y0, f"{kind}: a legend on the data of {ax.get_title()!r}"
        assert any("µs" in ax.get_ylabel() + ax.get_xlabel() for ax in fig.axes), kind
        path = plot_results([res], tmp_path / f"{kind}.png")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    titles = " | ".join(ax.get_title() for ax in figure([_kinds(real_result)["sweep"]]).axes)
    assert "scaling" in titles and "frontier" in titles and "roofline" in titles, titles


def test_a_failed_row_says_fail_and_is_drawn_hollow_and_red(real_result):
    fig = figure([_kinds(real_result)["compare"]])
    drift, forest = fig.axes[:2]
    labels = [t.get_text() for t in drift.get_legend().get_texts()]
    failed = [x for x in labels if "FAIL" in x]
    assert len(failed) == 1 and "NUM_SPLITS=64" in failed[0]
    line = next(ln for ln in drift.get_lines() if "FAIL" in ln.get_label())
    assert line.get_markerfacecolor() == "none"
    ticks = [t for t in forest.get_yticklabels() if "FAIL" in t.get_text()]
    assert len(ticks) == 1 and ticks[0].get_color() != "black"
    chain_fig = figure([_kinds(real_result)["chain"]])
    assert any("FAIL" in ax.get_title() for ax in chain_fig.axes)


def test_frontier_point_labels_do_not_overlap(real_result):
    specs = [f"santa:s={s}" for s in (24, 28, 32, 36, 40, 44, 48)]  # close together: labels would collide
    res = widened(real_result, specs=specs, fail=["santa:s=36"])
    fig = figure([res])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frontier = next(ax for ax in fig.axes if "frontier" in ax.get_title())
    labels = [t for t in frontier.texts if t.get_gid() == POINT_LABEL]
    assert len(labels) == len(specs) and any(t.get_text().startswith("FAIL") for t in labels)
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), "two point labels overlap"
