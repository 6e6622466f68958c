"""Sweep plots on synthetic sweep tables: seeds averaged with 95% confidence intervals,
one panel per grid dimension, legends beyond 12 series, missing values left missing."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from dcnsim.plot import _grouped_bars, _legend, grid_effects, plot_grid, t975


def test_t975_matches_the_t_table_and_tends_to_the_normal_quantile() -> None:
    assert t975(1) == pytest.approx(12.706, abs=1e-3)
    assert t975(10) == pytest.approx(2.228, abs=1e-3)
    # Beyond the table: published values 2.000 (60), 1.980 (120), 1.962 (1000).
    assert t975(60) == pytest.approx(2.000, abs=1e-3)
    assert t975(120) == pytest.approx(1.980, abs=1e-3)
    assert t975(1000) == pytest.approx(1.962, abs=1e-3)
    assert math.isnan(t975(0))


def rows_for(values: dict[tuple[str, float], list[float | None]]) -> list[dict]:
    rows = []
    for (proto, load), per_seed in values.items():
        for seed, v in enumerate(per_seed, start=1):
            rows.append(
                {
                    "run": f"{proto}_{load}_{seed}",
                    "transport.protocol": proto,
                    "workload[0].load": load,
                    "seed": seed,
                    "avg_fct_us": v,
                }
            )
    return rows


def test_seeds_are_averaged_with_a_student_t_interval() -> None:
    rows = rows_for({("dctcp", 0.3): [1.0, 2.0, 3.0], ("dctcp", 0.5): [10.0, 10.0, 13.0]})
    dims = ["transport.protocol", "workload[0].load"]
    eff = grid_effects(rows, dims, "avg_fct_us", "workload[0].load")
    assert list(eff) == [("dctcp",)]
    mean, half, n = eff[("dctcp",)][0.3]
    # mean 2, sample sd 1: 4.303 / sqrt(3)
    assert (mean, n) == (2.0, 3)
    assert half == pytest.approx(4.303 / math.sqrt(3), rel=1e-9)
    mean, half, n = eff[("dctcp",)][0.5]
    assert mean == pytest.approx(11.0)
    assert half == pytest.approx(4.303 * math.sqrt(3.0) / math.sqrt(3), rel=1e-9)


def test_missing_values_are_left_out_not_counted_as_zero() -> None:
    rows = rows_for(
        {
            ("tcp", 0.3): [4.0, None, 6.0],  # one seed failed
            ("tcp", 0.5): [None, float("nan"), None],  # every seed failed
            ("tcp", 0.7): [8.0, None, None],  # one value: no interval
        }
    )
    dims = ["transport.protocol", "workload[0].load"]
    eff = grid_effects(rows, dims, "avg_fct_us", "workload[0].load")[("tcp",)]
    assert eff[0.3][0] == 5.0 and eff[0.3][2] == 2
    assert math.isnan(eff[0.5][0]) and eff[0.5][2] == 0
    assert eff[0.7][0] == 8.0 and math.isnan(eff[0.7][1]) and eff[0.7][2] == 1


def test_grid_png_has_one_panel_column_per_dimension_and_a_legend_for_many_series(
    tmp_path: Path,
) -> None:
    # 16 protocols x 3 loads x 2 seeds: 16 series per load panel.
    protos = [f"p{i}" for i in range(16)]
    loads = [0.3, 0.5, 0.7]
    values = {
        (p, x): [i + x, i + x + 0.1] if (i, x) != (3, 0.5) else [None, None]
        for i, p in enumerate(protos)
        for x in loads
    }
    rows = rows_for(values)
    for r in rows:
        r.update({"small_avg_fct_us": 1.0, "small_p99_fct_us": 2.0, "large_avg_fct_us": 3.0})
        r["slowdown_p99"] = None
    grid = {"transport.protocol": protos, "workload[0].load": loads, "seed": [1, 2]}
    captured = {}
    real_savefig = plt.Figure.savefig

    def spy(fig, *a, **k):  # type: ignore[no-untyped-def]
        captured["fig"] = fig
        return real_savefig(fig, *a, **k)

    plt.Figure.savefig = spy  # type: ignore[method-assign]
    try:
        out = plot_grid(rows, grid, tmp_path / "grid.png", title="t")
    finally:
        plt.Figure.savefig = real_savefig  # type: ignore[method-assign]
    assert out.is_file() and out.stat().st_size > 10_000
    fig = captured["fig"]
    axes = fig.get_axes()
    assert len(axes) == 5 * 2  # 5 headline metrics x 2 non-seed dimensions
    # Row-major panels: (metric, protocol column), (metric, load column). The protocol
    # column has one series per load (3: legend in its top panel); the load column one per
    # protocol (16: legend below its bottom panel, in grid order).
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == [
        "load=0.3",
        "load=0.5",
        "load=0.7",
    ]
    assert axes[1].get_legend() is None
    assert [t.get_text() for t in axes[9].get_legend().get_texts()] == [
        f"protocol={p}" for p in protos
    ]
    # slowdown_p99 is missing in every run: its panels say so instead of drawing zeros.
    assert "no values" in axes[8].texts[0].get_text()
    assert "95% confidence interval" in fig._suptitle.get_text()
    # The failed (p3, 0.5) point is a gap (NaN), not a zero.
    load_ax = axes[1]  # first metric, load column
    ys = [line.get_ydata() for line in load_ax.get_lines() if len(line.get_ydata()) == 3]
    p3 = [y for y in ys if not np.isnan(y[0]) and np.isclose(y[0], 3.3 + 0.05)]
    assert p3 and np.isnan(p3[0][1])
    assert not any(np.any(np.asarray(y) == 0) for y in ys)


def test_legend_moves_outside_beyond_12_entries_in_columns_of_20() -> None:
    fig, ax = plt.subplots()
    for i in range(25):
        ax.plot([0, 1], [i, i], label=f"run {i}")
    _legend(fig, ax, 25)
    assert ax.get_legend() is None
    assert len(fig.legends) == 1 and fig.legends[0]._ncols == 2
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="one")
    _legend(fig, ax, 1)
    assert ax.get_legend() is not None and not fig.legends
    plt.close(fig)


def test_missing_bar_is_absent_and_marked_not_drawn_as_zero() -> None:
    fig, ax = plt.subplots()
    _grouped_bars(ax, ["a", "b"], {"r1": [1.0, math.nan], "r2": [None, 2.0]}, "y")
    heights = [p.get_height() for p in ax.patches]
    assert heights[0] == 1.0 and math.isnan(heights[1])
    assert math.isnan(heights[2]) and heights[3] == 2.0
    assert [t.get_text() for t in ax.texts] == ["n/a", "n/a"]
    plt.close(fig)
