"""The vectorised time-series plots: step vertices, the per-pixel envelope, series grouping,
and a run folder with a few hundred thousand samples plotted end to end.

Each computation is checked against a plain reference (a Python loop over the rows, or
matplotlib's own step conversion), and the envelope against what a pixel grid shows."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib import cbook

import dcnsim.plot as plot_mod
from dcnsim.plot import (
    ENVELOPE_COLUMNS,
    _series,
    _series_stats,
    _steps,
    _time_means,
    envelope,
    plot_run,
    step_path,
)
from dcnsim.results import Results


def test_step_vertices_are_the_ones_matplotlib_draws_for_a_step() -> None:
    t = np.array([1.0, 3.0, 4.0, 9.0])
    v = np.array([5.0, 0.0, 2.0, 7.0])
    for where, ref in (("post", cbook.pts_to_poststep), ("pre", cbook.pts_to_prestep)):
        x, y = step_path(t, v, where)
        rx, ry = ref(t, v)
        assert list(x) == list(rx) and list(y) == list(ry)
    with pytest.raises(ValueError):
        step_path(t, v, "mid")


def reference_buckets(x: np.ndarray, y: np.ndarray, lo: float, hi: float, cols: int) -> dict:
    """Bucket -> list of (x, y) vertices, by a loop over the vertices."""
    out: dict[int, list[tuple[float, float]]] = {}
    for xi, yi in zip(x, y):
        b = min(max(int((xi - lo) * cols / (hi - lo)), 0), cols - 1)
        out.setdefault(b, []).append((float(xi), float(yi)))
    return out


def spiky_series(n: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """A queue sampled every 2 us: mostly small values, one sample of 50 (a spike) and one
    deep dip inside a busy period."""
    rng = np.random.default_rng(3)
    t = np.arange(n) * 2.0
    v = rng.integers(0, 5, n).astype(float)
    v[12_345] = 50.0
    v[2_000:2_600] = 30.0
    v[2_301] = 0.0
    return t, v


def test_a_one_sample_spike_survives_and_each_bucket_keeps_its_extremes() -> None:
    t, v = spiky_series()
    x, y = step_path(t, v, "post")
    cols = 100  # 400 vertices per bucket
    ex, ey = envelope(x, y, float(x[0]), float(x[-1]), cols)
    assert len(ex) <= 4 * cols < len(x)
    # Every kept vertex is a vertex of the line, in the line's order.
    pos = np.searchsorted(x, ex)
    assert np.all(np.diff(ex) >= 0)
    assert all(x[i] == a for i, a in zip(pos, ex))
    # The spike and the dip are there.
    assert ey.max() == 50.0 and 50.0 in set(ey[(ex >= t[12_345]) & (ex <= t[12_346])])
    assert 0.0 in set(ey[(ex >= t[2_301]) & (ex <= t[2_302])])
    # Per bucket: same max, min, first and last as the reference loop.
    ref = reference_buckets(x, y, float(x[0]), float(x[-1]), cols)
    got = reference_buckets(ex, ey, float(x[0]), float(x[-1]), cols)
    assert sorted(got) == sorted(ref)
    for b, pts in ref.items():
        ys = [p[1] for p in pts]
        gys = [p[1] for p in got[b]]
        assert max(gys) == max(ys) and min(gys) == min(ys)
        assert got[b][0] == pts[0] and got[b][-1] == pts[-1]
        assert len(got[b]) <= 4


def test_the_envelope_draws_no_ramp_wider_than_a_bucket() -> None:
    """A queue with an empty stretch (absent rows) stays steps: any segment of the reduced
    line that is neither flat nor vertical lies inside one bucket (a fraction of a pixel),
    so no ramp is drawn across the empty period."""
    t, v = spiky_series()
    keep = (t < 10_000) | (t > 30_000)  # 10 ms with no rows: an empty queue
    ts, vs = _steps(t[keep], v[keep], 2.0)
    x, y = step_path(ts, vs, "post")
    cols = 200
    ex, ey = envelope(x, y, float(x[0]), float(x[-1]), cols)
    width = (x[-1] - x[0]) / cols
    slanted = (np.diff(ex) > 0) & (np.diff(ey) != 0)
    assert slanted.any() and np.all(np.diff(ex)[slanted] <= width * (1 + 1e-12))
    # The empty period is one flat segment at zero, from one interval after the last sample
    # before it (9998 us) to the first sample after it (30002 us).
    assert not np.any((ex > 10_000) & (ex < 30_002))
    j = int(np.flatnonzero((ex == 10_000.0) & (ey == 0.0))[-1])
    assert (ex[j + 1], ey[j + 1]) == (30_002.0, 0.0)


def pixel_tops(x: np.ndarray, y: np.ndarray, lim: tuple[float, float], width: int) -> np.ndarray:
    """The highest drawn pixel row (counted from the bottom) of each pixel column."""
    fig = plt.figure(figsize=(width / 100, 2), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.plot(x, y, lw=0.8, color="k", antialiased=False)
    ax.set_xlim(*lim)
    ax.set_ylim(0, 52)
    ax.axis("off")
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[:, :, 0] < 128
    plt.close(fig)
    return np.where(img.any(axis=0), img.shape[0] - np.argmax(img, axis=0), 0)


@pytest.mark.parametrize("buckets", [400, 500, 800])
def test_the_envelope_draws_the_picture_of_the_full_line(buckets: int) -> None:
    """Drawn 400 pixels wide with at least as many buckets as pixel columns (the plots use
    the figure's width in pixels, wider than their axes), the line's top in every pixel
    column is the full line's within one column either side: no peak is lost or invented."""
    t, v = spiky_series(100_000)
    x, y = step_path(t, v, "post")
    lim = (float(x[0]), float(x[-1]))
    ex, ey = envelope(x, y, *lim, buckets)
    assert len(ex) < len(x) / 20
    full = pixel_tops(x, y, lim, 400)
    env = pixel_tops(ex, ey, lim, 400)

    def near(a: np.ndarray) -> np.ndarray:
        p = np.pad(a, 1)
        return np.maximum(np.maximum(p[:-2], p[1:-1]), p[2:])

    assert np.all(near(env) >= full) and np.all(near(full) >= env)
    assert full.max() == env.max()


def test_short_lines_and_nan_gaps_are_left_as_they_are() -> None:
    x = np.arange(10.0)
    y = np.arange(10.0)
    ex, ey = envelope(x, y, 0.0, 9.0, 5)
    assert ex is x and ey is y
    x = np.arange(1000.0)
    y = np.ones(1000)
    y[500] = np.nan
    ex, ey = envelope(x, y, 0.0, 999.0, 10)
    assert np.isnan(ey).sum() == 1 and ex[np.isnan(ey)][0] == 500.0


def reference_groups(a, b, t, v) -> dict:
    out: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for ai, bi, ti, vi in zip(a, b, t, v):
        out.setdefault((int(ai), int(bi)), []).append((float(ti), float(vi)))
    return {k: sorted(p, key=lambda q: q[0]) for k, p in out.items()}


@pytest.mark.parametrize("layout", ["matrix", "sparse", "unordered", "large ids"])
def test_series_and_their_stats_match_a_loop_over_the_rows(layout: str) -> None:
    rng = np.random.default_rng(5)
    ports, steps = 7, 300
    t = np.repeat(np.arange(1, steps + 1) * 2.0, ports)
    a = np.tile(np.array([4, 0, 9, 2, 7, 1, 3], dtype=np.uint32), steps)
    b = np.tile(np.array([0, 1, 0, 2, 0, 0, 1], dtype=np.uint8), steps)
    v = rng.exponential(3.0, len(t))
    if layout == "large ids":  # keys past 16 bits and far above the row count
        a = a + np.uint32(3_000_000)
    if layout in ("sparse", "unordered", "large ids"):
        keep = rng.random(len(t)) < 0.4
        a, b, t, v = a[keep], b[keep], t[keep], v[keep]
    if layout == "unordered":
        o = rng.permutation(len(t))
        a, b, t, v = a[o], b[o], t[o], v[o]
    ref = reference_groups(a, b, t, v)
    got = _series(a, b, t, v)
    assert sorted(got) == sorted(ref)
    for k, pts in ref.items():
        assert list(zip(got[k][0].tolist(), got[k][1].tolist())) == pts
    off = 3_000_000 if layout == "large ids" else 0
    some = [(9 + off, 0), (2 + off, 2), (5 + off, 0)]  # (5, 0) does not occur
    picked = _series(a, b, t, v, keys=some)
    assert sorted(picked) == [(2 + off, 2), (9 + off, 0)]
    for k in picked:
        assert list(zip(picked[k][0].tolist(), picked[k][1].tolist())) == ref[k]
    stats = _series_stats(a, b, v)
    assert list(stats) == sorted(ref)
    for k, pts in ref.items():
        ys = [p[1] for p in pts]
        assert stats[k][0] == max(ys)
        assert stats[k][1] == pytest.approx(sum(ys) / len(ys), rel=1e-12)
    ts, mean = _time_means(t, v)
    for ti, mi in zip(ts[:20], mean[:20]):
        at = v[t == ti]
        assert mi == pytest.approx(at.mean(), rel=1e-12)


def synthetic_run(folder: Path, steps: int, peak: float = 1.2) -> dict[str, Any]:
    """A run folder (from the conftest core-output shape) whose samples are replaced by
    ``steps`` instants x 10 ports of link samples and a sparse queue table, with one
    one-sample queue spike and one utilization sample above 1."""
    from conftest import synthetic_core_output

    raw = synthetic_core_output(
        size=[1000, 20_000, 300_000], fct_us=[5.0, 20.0, None], ideal_us=[2.0, 8.0, 50.0],
        sent=[1000, 20_000, 1000],
    )  # fmt: skip
    nports = 10
    raw["ports"] = {
        "id": np.arange(nports, dtype=np.uint32),
        "node": np.arange(nports, dtype=np.uint32) % 2 + 8,
        "peer": np.arange(nports, dtype=np.uint32),
        "rate_bps": np.full(nports, 10**10, dtype=np.uint64),
        "delay_ps": np.full(nports, 10**6, dtype=np.uint64),
        "node_kind": ["switch"] * nports,
        "peer_kind": ["host"] * nports,
        "tx_bytes": np.zeros(nports, dtype=np.uint64),
        "drops": np.zeros(nports, dtype=np.uint64),
    }
    rng = np.random.default_rng(11)
    t_ps = np.repeat(np.arange(1, steps + 1, dtype=np.uint64) * 2_000_000, nports)
    port = np.tile(np.arange(nports, dtype=np.uint32), steps)
    phase = t_ps / 2e11 + port  # a slow wave per port, plus noise
    util = 0.5 + 0.3 * np.sin(phase) + rng.normal(0.0, 0.02, len(t_ps))
    util = np.clip(util, 0.0, 0.95)
    util[len(util) // 3] = peak
    raw["link_samples"] = {
        "t_ps": t_ps,
        "port": port,
        "tx_bytes": (util * 2500).astype(np.uint64),
        "utilization": util,
    }
    busy = rng.random(len(t_ps)) < 0.5
    qbytes = rng.integers(1, 20_000, len(t_ps)).astype(np.uint64)
    spike = int(np.flatnonzero(busy & (port == 3))[len(t_ps) // 40])
    qbytes[spike] = 900_000
    raw["queue_samples"] = {
        "t_ps": t_ps[busy],
        "port": port[busy],
        "prio": np.zeros(int(busy.sum()), dtype=np.uint8),
        "bytes": qbytes[busy],
    }
    raw["scenario_json"] = json.dumps({"name": "synthetic", "output": {"sample_interval": "2us"}})
    Results.from_core(raw).write(folder)
    return {"rows": len(t_ps) + int(busy.sum()), "spike_kb": 900.0, "spike_t_us": t_ps[spike] / 1e6}


def record_drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What each saved figure's first axes shows: title, y limits, lines by label."""
    drawn: dict[str, Any] = {}
    save = plot_mod._save

    def keep_lines(fig: Any, path: Path) -> Path:
        ax = fig.axes[0]
        drawn[path.name] = {
            "title": ax.get_title(),
            "ylim": ax.get_ylim(),
            "lines": {ln.get_label(): (ln.get_xdata(), ln.get_ydata()) for ln in ax.lines},
        }
        return save(fig, path)

    monkeypatch.setattr(plot_mod, "_save", keep_lines)
    return drawn


def test_a_run_with_hundreds_of_thousands_of_samples_is_plotted_with_its_peaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = synthetic_run(tmp_path / "run", steps=25_000)
    assert info["rows"] > 300_000
    drawn = record_drawn(monkeypatch)
    start = time.perf_counter()
    files = plot_run(tmp_path / "run", tmp_path / "plots")
    elapsed = time.perf_counter() - start
    assert elapsed < 30.0  # generous: a few seconds on a busy shared machine
    names = {"fct_cdf.png", "fct_by_size.png", "queue.png", "link_util.png"}
    assert {f.name for f in files} == names
    queue = drawn["queue.png"]["lines"]
    q3 = next(v for k, v in queue.items() if k.startswith("port 3 "))
    assert max(q3[1]) == info["spike_kb"]  # the one-sample spike is drawn
    i = int(np.argmax(q3[1]))
    assert q3[0][i] == pytest.approx(info["spike_t_us"])
    for x, _ in queue.values():
        assert len(x) <= 4 * ENVELOPE_COLUMNS
    util = drawn["link_util.png"]
    assert "peak 1.20 > 1" in util["title"]
    assert max(max(y) for _, y in util["lines"].values() if len(y) > 2) == pytest.approx(1.2)
    assert all(len(x) <= 4 * ENVELOPE_COLUMNS + 2 for x, _ in util["lines"].values())


@pytest.mark.parametrize("peak", [0.97, 1.35])
def test_utilization_passes_1_only_with_the_reason_and_legends_name_node_and_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, peak: float
) -> None:
    synthetic_run(tmp_path / "run", steps=2_000, peak=peak)
    drawn = record_drawn(monkeypatch)
    plot_run(tmp_path / "run", tmp_path / "plots")
    util = drawn["link_util.png"]
    top = max(max(y) for y in (ln[1] for ln in util["lines"].values()))
    assert top == pytest.approx(peak)
    at_one = [k for k, (_, y) in util["lines"].items() if len(y) == 2 and set(y) == {1.0}]
    if peak <= 1:
        assert util["ylim"][1] == pytest.approx(1.05)  # the axis stops just above 1
        assert "peak" not in util["title"] and not at_one
    else:
        assert util["ylim"][1] == pytest.approx(peak * 1.05)
        assert f"peak {peak:.2f} > 1: a packet's bytes count in the interval" in util["title"]
        assert len(at_one) == 1  # the line at 1 that the samples pass
    # ports 0..9 belong to switches 8 and 9 and lead to hosts 0..9
    labels = set(drawn["queue.png"]["lines"]) | set(util["lines"])
    assert "port 3 (switch 9 -> host 3) prio 0" in labels
    assert "port 4 (switch 8 -> host 4)" in labels
