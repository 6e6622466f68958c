"""Plots of result folders (matplotlib, Agg backend: no display needed).

For a run folder, :func:`plot_run` writes

* ``fct_cdf.png``: CDF of the FCT of finished non-background flows (log x axis);
* ``fct_by_size.png``: average and p99 FCT, average and p99 slowdown per size bucket
  (``<=10KB``, ``10KB-100KB``, ``100KB-1MB``, ``>1MB``; a bucket holds sizes above its low
  and up to its high edge);
* ``queue.png``: queue length over time per sampled (port, priority), when queues were sampled
  (the 12 with the highest peak if there are more), drawn as steps: each sample holds for one
  sampling interval, and an absent row (an empty queue) is drawn as zero, never as a ramp
  between two distant samples;
* ``link_util.png``: utilization per sampling interval per sampled link, as steps over the
  interval each sample covers, when links were sampled (the 12 busiest, plus the mean over
  all sampled links); the axis goes above 1 only when a sample does, and the title then says
  why (a packet's bytes count in the interval in which its transmission starts).

Legends name each port by its node and peer with their roles (``port 3 (switch 8 -> host
2)``). The work is linear in the samples: the per-series statistics that choose the shown
series are bincounts (:func:`_series_stats`), the shown series are columns of the sample
table when it is a full (instant x port) matrix and one comparison each otherwise
(:func:`_series`), and each step line is reduced to what its pixels can show before it is
drawn (:func:`envelope`): of the vertices that fall in one pixel-wide bucket the first, the
last, the lowest and the highest are kept, so the drawn image is the full line's to within a
pixel, every peak and dip included (nothing is averaged), while matplotlib draws a few
thousand points per line instead of one per sample.

For a sweep folder, :func:`plot_sweep` writes ``comparison.png`` (FCT CDF of every run, and
average/p99 FCT per size bucket, run beside run), ``headline.png`` (bar charts of the
headline metrics per run) and ``grid.png`` (the headline metrics against each grid dimension,
seeds averaged, see :func:`grid_effects`). Beyond 12 runs or series a legend moves outside the
axes in as many columns as it needs, and series differ by line style as well as color (40
distinct styles). A missing value (a failed run, a metric a run does not define) is never drawn
as zero: its bar is absent and marked ``n/a``, and a line has a gap there.

The PNG folder must be missing, empty, or a plots folder dcnsim wrote: it carries a manifest
(``dcnsim-manifest.json``, kind ``plots``) listing the PNGs, and a folder holding anything
else is refused (:class:`dcnsim.outdir.OutputError`) before anything is drawn.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from dcnsim.metrics import SIZE_BUCKETS, size_bucket_stats
from dcnsim.outdir import check_plot_dir, record_plots
from dcnsim.results import Results
from dcnsim.sweep import is_sweep_dir, read_sweep

MAX_SERIES = 12

#: Saved PNGs' resolution (dots per inch).
DPI = 110

#: Headline metrics of the sweep bar chart: (summary key, axis label).
HEADLINE = [
    ("avg_fct_us", "avg FCT (us)"),
    ("small_avg_fct_us", "small avg FCT (us)"),
    ("small_p99_fct_us", "small p99 FCT (us)"),
    ("large_avg_fct_us", "large avg FCT (us)"),
    ("slowdown_p99", "p99 slowdown"),
]


def _fct_cdf(
    ax: Any,
    flows: dict[str, np.ndarray],
    label: str | None = None,
    style: dict[str, Any] | None = None,
) -> None:
    done = np.asarray(flows["finished"], bool) & ~np.asarray(flows["background"], bool)
    x = np.sort(np.asarray(flows["fct_us"], dtype=float)[done])
    if len(x):
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label, **(style or {}))
    ax.set_xscale("log")
    ax.set_xlabel("FCT (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _style(i: int) -> dict[str, Any]:
    """Color and line style of series ``i``: 10 colors x 4 line styles."""
    return {"color": f"C{i % 10}", "linestyle": ("-", "--", ":", "-.")[(i // 10) % 4]}


def _legend(fig: Any, ax: Any, n: int) -> None:
    """A legend that stays readable: inside the axes up to 12 entries, beyond that outside on
    the right of the figure, 20 entries per column."""
    if n == 0:
        return
    if n <= MAX_SERIES:
        ax.legend(fontsize=7)
        return
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        fontsize=6,
        ncol=math.ceil(n / 20),
        frameon=False,
    )


def _na_marks(ax: Any, xs: Sequence[float]) -> None:
    """Mark missing bars at positions ``xs`` with ``n/a`` on the axis."""
    for x in xs:
        ax.annotate(
            "n/a",
            (x, 0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            rotation=90,
            fontsize=6,
            color="0.4",
        )


def _grouped_bars(
    ax: Any, groups: Sequence[str], series: dict[str, Sequence[float]], ylabel: str
) -> None:
    n = max(len(series), 1)
    width = 0.8 / n
    x = np.arange(len(groups))
    for i, (label, vals) in enumerate(series.items()):
        pos = x + (i - (n - 1) / 2) * width
        miss = [_missing(val) for val in vals]
        v = [math.nan if m else val for m, val in zip(miss, vals)]
        ax.bar(pos, v, width, label=label, color=f"C{i % 10}")
        _na_marks(ax, [p for p, m in zip(pos, miss) if m])
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=0, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)


def _port_labels(ports: dict[str, np.ndarray]) -> dict[int, str]:
    """``port 3 (switch 8 -> host 2)``: the node a port belongs to and its peer, by role."""
    need = ("id", "node", "peer", "node_kind", "peer_kind")
    if not all(k in ports for k in need):
        return {}
    return {
        int(i): f"port {int(i)} ({nk} {int(n)} -> {pk} {int(p)})"
        for i, n, p, nk, pk in zip(*(ports[k] for k in need))
    }


_TIME_UNITS_US = {"ps": 1e-6, "ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


def _time_us(v: Any) -> float | None:
    """A scenario time in microseconds: picoseconds as a number, or a string with its unit
    as the normalized scenario writes it (``"2us"``); None if it is neither."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v) / 1e6
    if isinstance(v, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ps|ns|us|µs|ms|s)\s*", v)
        if m:
            return float(m.group(1)) * _TIME_UNITS_US[m.group(2)]
    return None


def _sample_interval_us(scenario: dict[str, Any], t: np.ndarray) -> float:
    """The sampling interval: the scenario's ``output.sample_interval`` (picoseconds, or a
    string with its unit once normalized), else the smallest gap between sampling instants."""
    v = _time_us((scenario.get("output") or {}).get("sample_interval"))
    if v is not None and v > 0:
        return v
    if len(t) >= 2 and bool(np.all(t[1:] >= t[:-1])):
        gaps = np.diff(t)
        gaps = gaps[gaps > 0]
    else:
        gaps = np.diff(np.unique(t))
    return float(gaps.min()) if len(gaps) else 1.0


def _in_order(t: np.ndarray) -> bool:
    return len(t) < 2 or bool(np.all(t[1:] >= t[:-1]))


def _keys(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """One integer key per row for the pair (a, b): ``a * nb + b``, and ``nb``."""
    nb = int(np.max(b)) + 1 if len(b) else 1
    return np.asarray(a).astype(np.int64) * nb + np.asarray(b).astype(np.int64), nb


def _period(key: np.ndarray, t: np.ndarray) -> int:
    """``P`` when the rows (in time order) are a full matrix: every sampling instant has the
    same ``P`` distinct keys in the same order (link samples of every sampled port); else 0.
    One pass over the rows."""
    n = len(t)
    p = int(np.searchsorted(t, t[0], side="right"))
    if p == 0 or n % p or len(np.unique(key[:p])) != p:
        return 0
    if not bool((key.reshape(-1, p) == key[:p]).all()):
        return 0
    return p if bool((t.reshape(-1, p) == t[::p, None]).all()) else 0


def _series(
    a: np.ndarray,
    b: np.ndarray,
    t: np.ndarray,
    v: np.ndarray,
    keys: Sequence[tuple[int, int]] | None = None,
) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Rows grouped by (a, b), each in time order: ``{(a, b): (t, v)}`` for the pairs in
    ``keys`` (those present), or for every pair when ``keys`` is None.

    Linear in the rows, never one pass per series over all rows for every series: samples
    come from the core in time order; a full matrix (:func:`_period`) is reshaped, each series
    a column (no copy); otherwise a few named series are picked out by one comparison each,
    and all series come from one stable sort by the pair alone (a radix sort when the keys fit
    in 16 bits), which keeps each series in time order. Rows out of time order are sorted by
    (a, b, t) first."""
    if len(t) == 0:
        return {}
    key, nb = _keys(a, b)
    want = None if keys is None else {int(x) * nb + int(y) for x, y in keys}
    if not _in_order(t):
        order = np.lexsort((t, key))
        key, t, v = key[order], t[order], v[order]
    p = _period(key, t)
    if p:
        tm, vm = t.reshape(-1, p), v.reshape(-1, p)
        return {
            (int(k) // nb, int(k) % nb): (tm[:, j], vm[:, j])
            for j, k in enumerate(key[:p])
            if want is None or int(k) in want
        }
    if want is not None and len(want) <= 2 * MAX_SERIES:
        out = {}
        for k in sorted(want):
            idx = np.flatnonzero(key == k)
            if len(idx):
                out[(k // nb, k % nb)] = (t[idx], v[idx])
        return out
    small = int(key.max()) < 1 << 16 and int(key.min()) >= 0
    order = np.argsort(key.astype(np.uint16) if small else key, kind="stable")
    key, t, v = key[order], t[order], v[order]
    cut = np.flatnonzero(key[1:] != key[:-1]) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [len(t)]))
    return {
        (int(key[s]) // nb, int(key[s]) % nb): (t[s:e], v[s:e])
        for s, e in zip(starts, ends)
        if want is None or int(key[s]) in want
    }


def _series_stats(
    a: np.ndarray, b: np.ndarray, v: np.ndarray
) -> dict[tuple[int, int], tuple[float, float]]:
    """``{(a, b): (max, mean)}`` of ``v`` over the rows of each pair present, in pair
    order; linear in the rows (no sort)."""
    if len(v) == 0:
        return {}
    key, nb = _keys(a, b)
    v = np.asarray(v, dtype=float)
    if int(key.min()) >= 0 and int(key.max()) <= 4 * len(key) + 1024:
        inv, present = key, None
    else:
        present, inv = np.unique(key, return_inverse=True)
    n = np.bincount(inv)
    total = np.bincount(inv, weights=v, minlength=len(n))
    top = np.full(len(n), -np.inf)
    np.maximum.at(top, inv, v)
    ids = np.flatnonzero(n) if present is None else np.arange(len(n))
    keys = ids if present is None else present
    return {
        (int(k) // nb, int(k) % nb): (float(top[i]), float(total[i] / n[i]))
        for i, k in zip(ids, keys)
    }


def _steps(t: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """A queue held at each sample's value for one sampling interval: after a sample that
    is not followed by one an interval later, the queue was empty (its row is absent), so
    a zero is inserted there; no ramp is drawn across an empty period."""
    gap = np.concatenate((np.diff(t) > dt * 1.5, [True]))
    idx = np.flatnonzero(gap)
    ts = np.insert(t, idx + 1, t[idx] + dt)
    vs = np.insert(v, idx + 1, 0.0)
    return ts, vs


def step_path(t: np.ndarray, v: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of a step line (what ``ax.step`` draws), to be drawn with ``ax.plot``.

    ``where="post"``: ``v[i]`` holds on ``[t[i], t[i+1])`` (the last value is a point at
    ``t[-1]``); ``where="pre"``: ``v[i]`` holds on ``(t[i-1], t[i]]`` (the first value is a
    point at ``t[0]``)."""
    n = len(t)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    x = np.empty(2 * n - 1)
    y = np.empty(2 * n - 1, dtype=float)
    x[0::2] = t
    y[0::2] = v
    if where == "post":
        x[1::2] = t[1:]
        y[1::2] = v[:-1]
    elif where == "pre":
        x[1::2] = t[:-1]
        y[1::2] = v[1:]
    else:
        raise ValueError(f"where must be 'pre' or 'post', not {where!r}")
    return x, y


def envelope(
    x: np.ndarray, y: np.ndarray, lo: float, hi: float, columns: int
) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of a polyline (``x`` non-decreasing) that a ``columns``-wide drawing of
    ``[lo, hi]`` can show: in each of ``columns`` equal buckets of x, the first, the last, the
    lowest and the highest vertex (first occurrence), in their original order.

    Segments between buckets are kept exactly (the last vertex of a bucket and the first of
    the next are neighbours in the input); inside a bucket (one pixel column, or less) the
    line still spans the bucket's minimum to its maximum. So a one-sample spike survives,
    and the maximum of each bucket is the maximum of its vertices. Lines with fewer than
    ``4 * columns`` vertices are returned as they are. Linear in the vertices."""
    n = len(x)
    if n <= 4 * columns or hi <= lo:
        return x, y
    bucket = ((x - lo) * (columns / (hi - lo))).astype(np.int64)
    np.clip(bucket, 0, columns - 1, out=bucket)
    cut = np.flatnonzero(bucket[1:] != bucket[:-1]) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [n]))
    group = np.repeat(np.arange(len(starts)), ends - starts)
    keep = np.zeros(n, dtype=bool)
    keep[starts] = True
    keep[ends - 1] = True
    finite = np.isfinite(y)
    keep[~finite] = True  # a NaN (a gap) is kept as it is
    for reduce, fill in ((np.maximum, -np.inf), (np.minimum, np.inf)):
        ext = reduce.reduceat(np.where(finite, y, fill), starts)
        hit = np.flatnonzero(finite & (y == ext[group]))
        if len(hit):
            g = group[hit]
            keep[hit[np.concatenate(([True], g[1:] != g[:-1]))]] = True  # first to reach it
    return x[keep], y[keep]


#: Buckets an envelope is computed for: the width in pixels of a whole time-series figure
#: (8 inches at :data:`DPI`); its axes are narrower, so a bucket is narrower than a pixel.
ENVELOPE_COLUMNS = 8 * DPI


def _draw_steps(ax: Any, lines: list[tuple[np.ndarray, np.ndarray, dict[str, Any]]]) -> None:
    """Draw step paths (from :func:`step_path`) on one time axis, each reduced to its
    per-pixel envelope over the common x range."""
    xs = [x for x, _, _ in lines if len(x)]
    if not xs:
        return
    lo = min(float(x[0]) for x in xs)
    hi = max(float(x[-1]) for x in xs)
    for x, y, kw in lines:
        ex, ey = envelope(x, y, lo, hi, ENVELOPE_COLUMNS)
        ax.plot(ex, ey, **kw)


def _first_interval(t: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """A utilization series drawn ``where="pre"`` with its first sample's interval too: a
    vertex at ``t[0] - dt`` starts the first step."""
    if len(t) == 0:
        return t, v
    return np.concatenate(([t[0] - dt], t)), np.concatenate(([v[0]], v))


def _time_means(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean of ``v`` at each distinct ``t`` (sorted): run lengths when ``t`` is in order,
    else one ``np.unique``."""
    if len(t) < 2 or bool(np.all(t[1:] >= t[:-1])):
        cut = np.flatnonzero(t[1:] != t[:-1]) + 1
        starts = np.concatenate(([0], cut))
        counts = np.diff(np.concatenate((starts, [len(t)])))
        return t[starts], np.add.reduceat(v, starts) / counts
    ts, inv = np.unique(t, return_inverse=True)
    return ts, np.bincount(inv, weights=v) / np.bincount(inv)


def plot_run(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Plot one run folder into ``out_dir``; return the PNG paths."""
    check_plot_dir(out_dir)
    res = Results.load(
        run_dir, columns={"link.parquet": ["t_us", "port", "utilization"]}, packets=False
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = res.scenario.get("name", Path(run_dir).name)
    files = []

    fig, ax = plt.subplots(figsize=(6, 4))
    _fct_cdf(ax, res.flows)
    ax.set_title(f"{name}: FCT CDF")
    files.append(_save(fig, out / "fct_cdf.png"))

    stats = size_bucket_stats(res.flows)
    labels = [f"{b['bucket']}\n(n={b['flows']})" for b in stats]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, key, title in [
        (axes[0][0], "avg_fct_us", "avg FCT (us)"),
        (axes[0][1], "p99_fct_us", "p99 FCT (us)"),
        (axes[1][0], "avg_slowdown", "avg slowdown"),
        (axes[1][1], "p99_slowdown", "p99 slowdown"),
    ]:
        _grouped_bars(ax, labels, {name: [b[key] for b in stats]}, title)
    fig.suptitle(f"{name}: FCT and slowdown by flow size")
    files.append(_save(fig, out / "fct_by_size.png"))

    labels = _port_labels(res.ports)
    if res.has_queue_samples:
        q = res.queue_samples
        t, b = np.asarray(q["t_us"], float), np.asarray(q["bytes"], float)
        dt = _sample_interval_us(res.scenario, t)
        port, prio = np.asarray(q["port"]), np.asarray(q["prio"])
        stats = _series_stats(port, prio, b)
        shown = sorted(sorted(stats, key=lambda k: -stats[k][0])[:MAX_SERIES])
        series = _series(port, prio, t, b, keys=shown)
        fig, ax = plt.subplots(figsize=(8, 4))
        lines = []
        for i, (p_, pr) in enumerate(shown):
            ts, vs = _steps(*series[(p_, pr)], dt)
            kw = {"lw": 0.8, "color": f"C{i % 10}", "label": f"{labels.get(p_, p_)} prio {pr}"}
            lines.append((*step_path(ts, vs / 1e3, "post"), kw))
        _draw_steps(ax, lines)
        ax.set_xlabel("time (us)")
        ax.set_ylabel("queue length (KB)")
        more = f", {MAX_SERIES} highest peaks of {len(stats)}" if len(stats) > MAX_SERIES else ""
        ax.set_title(f"{name}: queue length (held over each sampling interval{more})", fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper right")
        ax.grid(True, alpha=0.3)
        files.append(_save(fig, out / "queue.png"))

    if res.has_link_samples:
        ls = res.link_samples
        t, u = np.asarray(ls["t_us"], float), np.asarray(ls["utilization"], float)
        port = np.asarray(ls["port"])
        zero = np.zeros(len(port), dtype=np.uint8)
        stats = _series_stats(port, zero, u)
        shown = sorted(sorted(stats, key=lambda k: -stats[k][1])[:MAX_SERIES])
        series = _series(port, zero, t, u, keys=shown)
        dt = _sample_interval_us(res.scenario, t)
        fig, ax = plt.subplots(figsize=(8, 4))
        lines = []
        for i, (p_, _) in enumerate(shown):
            ts, us = series[(p_, 0)]
            # a sample is the utilization over the interval that ends at t_us
            kw = {"lw": 0.8, "color": f"C{i % 10}", "label": str(labels.get(p_, p_))}
            lines.append((*step_path(*_first_interval(ts, us, dt), "pre"), kw))
        ts, mean_t = _time_means(t, u)
        kw = {"color": "k", "lw": 2, "label": "mean (all sampled)"}
        lines.append((*step_path(*_first_interval(ts, mean_t, dt), "pre"), kw))
        _draw_steps(ax, lines)
        top = float(u.max()) if len(u) else 1.0
        ax.set_ylim(0, max(1.05, top * 1.05))
        title = f"{name}: link utilization per sampling interval"
        if top > 1.0 + 1e-9:
            ax.axhline(1.0, color="r", lw=0.8, ls="--")
            title += (
                f"\n(peak {top:.2f} > 1: a packet's bytes count in the interval its "
                "transmission starts in)"
            )
        ax.set_xlabel("time (us)")
        ax.set_ylabel("utilization")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper right")
        ax.grid(True, alpha=0.3)
        files.append(_save(fig, out / "link_util.png"))
    record_plots(out, files)
    return files


#: Student's t quantile t(0.975, df) for df = 1..30 (two-sided 95%).
_T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]  # fmt: skip


def t975(df: int) -> float:
    """Student's t quantile at 0.975 with ``df`` degrees of freedom: a table to 30, then the
    Cornish-Fisher expansion about the normal quantile (within 0.001 from 30 on)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def is_seed_key(key: str) -> bool:
    """A grid key that sets the seed (``seed``): runs differing only there are replicas."""
    return key == "seed" or key.endswith(".seed")


def grid_effects(
    rows: Sequence[dict[str, Any]], dims: Sequence[str], metric: str, dim: str
) -> dict[tuple[Any, ...], dict[Any, tuple[float, float, int]]]:
    """The mean of ``metric`` over seeds against grid dimension ``dim``, one series per
    combination of the other dimensions ``dims``: ``{other values: {dim value: (mean, 95%
    half-width, n)}}``. ``n`` counts the runs with a value (missing values are left out, not
    counted as zero); the half-width is ``t(0.975, n-1) x s / sqrt(n)`` with ``s`` the sample
    standard deviation, NaN for ``n < 2``; the mean is NaN for ``n = 0``."""
    others = [k for k in dims if k != dim]
    groups: dict[tuple[Any, ...], dict[Any, list[float]]] = {}
    for r in rows:
        key = tuple(_hashable(r.get(k)) for k in others)
        vals = groups.setdefault(key, {}).setdefault(_hashable(r.get(dim)), [])
        v = r.get(metric)
        if not _missing(v):
            vals.append(float(v))
    out: dict[tuple[Any, ...], dict[Any, tuple[float, float, int]]] = {}
    for key, by_x in groups.items():
        out[key] = {}
        for x, vals in by_x.items():
            n = len(vals)
            mean = float(np.mean(vals)) if n else math.nan
            half = t975(n - 1) * float(np.std(vals, ddof=1)) / math.sqrt(n) if n >= 2 else math.nan
            out[key][x] = (mean, half, n)
    return out


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _short(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def plot_grid(
    rows: Sequence[dict[str, Any]], grid: dict[str, Sequence[Any]], path: Path, title: str = ""
) -> Path:
    """``grid.png``: one row of panels per headline metric, one column per grid dimension
    (seeds excepted); each panel plots the metric's mean over seeds (95% confidence interval as
    error bars) against that dimension's values, one series per combination of the other
    dimensions. Missing means leave a gap."""
    dims = [k for k in grid if not is_seed_key(k)]
    if not dims:
        dims = ["run"]
        grid = {"run": [r["run"] for r in rows]}
    fig, axes = plt.subplots(
        len(HEADLINE), len(dims), figsize=(4.2 * len(dims), 2.6 * len(HEADLINE)), squeeze=False
    )
    order = {k: {_hashable(v): i for i, v in enumerate(grid[k])} for k in dims}
    for j, dim in enumerate(dims):
        values = [_hashable(v) for v in grid[dim]]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        xs = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
        others = [k for k in dims if k != dim]
        nseries = 0
        for i, (metric, label) in enumerate(HEADLINE):
            ax = axes[i][j]
            eff = grid_effects(rows, dims, metric, dim)
            nseries = len(eff)

            def rank(kv: Any, others: list[str] = others) -> tuple[int, ...]:
                return tuple(order[k].get(v, -1) for k, v in zip(others, kv[0]))

            drawn = False
            for s_i, (key, by_x) in enumerate(sorted(eff.items(), key=rank)):
                pts = [(xs[v], *by_x[v]) for v in values if v in by_x]
                x = np.array([p[0] for p in pts])
                m = np.array([p[1] for p in pts])
                h = np.array([p[2] for p in pts])
                drawn = drawn or bool(np.isfinite(m).any())
                name = ", ".join(f"{_short(k)}={v}" for k, v in zip(others, key)) or "mean"
                ax.errorbar(x, m, yerr=h, capsize=3, marker="o", ms=3, label=name, **_style(s_i))
            if not drawn:
                ax.text(
                    0.5,
                    0.5,
                    "no values (missing in every run)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    fontsize=8,
                    color="0.4",
                )
                ax.set_yticks([])
            ax.set_xticks([xs[v] for v in values])
            if numeric:
                ax.set_xticklabels([str(v) for v in values], fontsize=7)
            else:
                ax.set_xticklabels([str(v) for v in values], rotation=30, ha="right", fontsize=7)
            if i == len(HEADLINE) - 1:
                ax.set_xlabel(_short(dim))
            if j == 0:
                ax.set_ylabel(label, fontsize=8)
            ax.grid(True, alpha=0.3)
        # One legend per column: in its top panel up to 12 series, below its bottom panel
        # (20 rows per legend column) beyond.
        if nseries <= MAX_SERIES:
            axes[0][j].legend(fontsize=7)
        else:
            axes[-1][j].legend(
                loc="upper center",
                bbox_to_anchor=(0.5, -0.3),
                fontsize=6,
                ncol=math.ceil(nseries / 20),
                frameon=False,
            )
    seeds = [k for k in grid if is_seed_key(k)]
    n_seeds = len(grid[seeds[0]]) if seeds else 1
    fig.suptitle(
        f"{title}: mean over {n_seeds} seed(s), bars = 95% confidence interval"
        if n_seeds > 1
        else f"{title}: one run per point (no seed dimension, no interval)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_sweep(sweep_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Plot the comparison of the complete runs of a sweep folder; return the PNG paths."""
    check_plot_dir(out_dir)
    d = Path(sweep_dir)
    meta, rows = read_sweep(d)
    if not rows:
        raise FileNotFoundError(f"{d}: no complete runs to plot")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [r["run"] for r in rows]
    flows = {r: Results.load(d / r, packets=False).flows for r in runs}
    files = []

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for i, r in enumerate(runs):
        _fct_cdf(axes[0], flows[r], label=r, style=_style(i))
    axes[0].set_title("FCT CDF")
    stats = {r: size_bucket_stats(flows[r]) for r in runs}
    groups = [b[0] for b in SIZE_BUCKETS]
    for ax, key, title in [
        (axes[1], "avg_fct_us", "avg FCT by flow size (us)"),
        (axes[2], "p99_fct_us", "p99 FCT by flow size (us)"),
    ]:
        _grouped_bars(ax, groups, {r: [b[key] for b in stats[r]] for r in runs}, title)
        ax.set_yscale("log")
    if len(runs) <= MAX_SERIES:
        for ax in axes:
            ax.legend(fontsize=7)
    else:
        _legend(fig, axes[0], len(runs))
    fig.tight_layout()
    fig.savefig(out / "comparison.png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    files.append(out / "comparison.png")

    fig, axes = plt.subplots(1, len(HEADLINE), figsize=(3.2 * len(HEADLINE), 4))
    for ax, (key, label) in zip(axes, HEADLINE):
        vals = [math.nan if _missing(r.get(key)) else float(r[key]) for r in rows]
        colors = [f"C{i % 10}" for i in range(len(runs))]  # same colors as comparison.png
        ax.bar(range(len(runs)), vals, color=colors)
        _na_marks(ax, [i for i, v in enumerate(vals) if math.isnan(v)])
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(runs, rotation=60, ha="right", fontsize=7)
        ax.set_title(label, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    name = Path(meta.get("sweep_file") or d).name
    fig.suptitle(f"sweep {name}: headline metrics")
    files.append(_save(fig, out / "headline.png"))
    grid = dict(meta.get("grid") or {})
    if meta.get("variants"):
        grid = {"variant": list(meta["variants"]), **grid}
    files.append(plot_grid(rows, grid, out / "grid.png", title=f"sweep {name}"))
    record_plots(out, files)
    return files


def plot(path: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Plot a run or sweep folder into ``out_dir`` (default ``<path>/plots``)."""
    p = Path(path)
    out = Path(out_dir) if out_dir is not None else p / "plots"
    if is_sweep_dir(p):
        return plot_sweep(p, out)
    return plot_run(p, out)
