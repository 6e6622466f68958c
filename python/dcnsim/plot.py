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
2)``). Series are grouped with one sort of the samples, so plotting is linear in the number
of samples after that sort.

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
    fig.savefig(path, dpi=110)
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


def _sample_interval_us(scenario: dict[str, Any], t: np.ndarray) -> float:
    """The sampling interval: the scenario's ``output.sample_interval`` (picoseconds once
    normalized), else the smallest gap between sampling instants."""
    v = (scenario.get("output") or {}).get("sample_interval")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return float(v) / 1e6
    gaps = np.diff(np.unique(t))
    return float(gaps.min()) if len(gaps) else 1.0


def _series(
    a: np.ndarray, b: np.ndarray, t: np.ndarray, v: np.ndarray
) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Rows grouped by (a, b), each in time order: one sort, then slices (linear in the
    samples after the sort, instead of one mask over all rows per series)."""
    if len(t) == 0:
        return {}
    order = np.lexsort((t, b, a))
    a, b, t, v = a[order], b[order], t[order], v[order]
    cut = np.flatnonzero((np.diff(a) != 0) | (np.diff(b) != 0)) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [len(t)]))
    return {(int(a[s]), int(b[s])): (t[s:e], v[s:e]) for s, e in zip(starts, ends)}


def _steps(t: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """A queue held at each sample's value for one sampling interval: after a sample that
    is not followed by one an interval later, the queue was empty (its row is absent), so
    a zero is inserted there; no ramp is drawn across an empty period."""
    gap = np.concatenate((np.diff(t) > dt * 1.5, [True]))
    idx = np.flatnonzero(gap)
    ts = np.insert(t, idx + 1, t[idx] + dt)
    vs = np.insert(v, idx + 1, 0.0)
    return ts, vs


def plot_run(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Plot one run folder into ``out_dir``; return the PNG paths."""
    check_plot_dir(out_dir)
    res = Results.load(run_dir)
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
        series = _series(np.asarray(q["port"]), np.asarray(q["prio"]), t, b)
        shown = sorted(sorted(series, key=lambda k: -series[k][1].max())[:MAX_SERIES])
        fig, ax = plt.subplots(figsize=(8, 4))
        for p_, pr in shown:
            ts, vs = _steps(*series[(p_, pr)], dt)
            ax.step(ts, vs / 1e3, where="post", lw=0.8, label=f"{labels.get(p_, p_)} prio {pr}")
        ax.set_xlabel("time (us)")
        ax.set_ylabel("queue length (KB)")
        more = f", {MAX_SERIES} highest peaks of {len(series)}" if len(series) > MAX_SERIES else ""
        ax.set_title(f"{name}: queue length (held over each sampling interval{more})", fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper right")
        ax.grid(True, alpha=0.3)
        files.append(_save(fig, out / "queue.png"))

    if res.has_link_samples:
        ls = res.link_samples
        t, u = np.asarray(ls["t_us"], float), np.asarray(ls["utilization"], float)
        port = np.asarray(ls["port"])
        series = _series(port, np.zeros(len(port), dtype=np.uint8), t, u)
        mean_u = {k[0]: float(v[1].mean()) for k, v in series.items()}
        shown = sorted(sorted(mean_u, key=lambda p_: -mean_u[p_])[:MAX_SERIES])
        fig, ax = plt.subplots(figsize=(8, 4))
        for p_ in shown:
            ts, us = series[(p_, 0)]
            # a sample is the utilization over the interval that ends at t_us
            ax.step(ts, us, where="pre", lw=0.8, label=str(labels.get(p_, p_)))
        ts, inv = np.unique(t, return_inverse=True)
        mean_t = np.bincount(inv, weights=u) / np.bincount(inv)
        ax.step(ts, mean_t, where="pre", color="k", lw=2, label="mean (all sampled)")
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
    fig.savefig(path, dpi=110, bbox_inches="tight")
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
    flows = {r: Results.load(d / r).flows for r in runs}
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
    fig.savefig(out / "comparison.png", dpi=110, bbox_inches="tight")
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
