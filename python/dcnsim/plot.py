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
average/p99 FCT per size bucket, run beside run) and ``headline.png`` (bar charts of the
headline metrics per run).

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


def _fct_cdf(ax: Any, flows: dict[str, np.ndarray], label: str | None = None) -> None:
    done = np.asarray(flows["finished"], bool) & ~np.asarray(flows["background"], bool)
    x = np.sort(np.asarray(flows["fct_us"], dtype=float)[done])
    if len(x):
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
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


def _grouped_bars(
    ax: Any, groups: Sequence[str], series: dict[str, Sequence[float]], ylabel: str
) -> None:
    n = max(len(series), 1)
    width = 0.8 / n
    x = np.arange(len(groups))
    for i, (label, vals) in enumerate(series.items()):
        v = [0.0 if (val is None or math.isnan(val)) else val for val in vals]
        ax.bar(x + (i - (n - 1) / 2) * width, v, width, label=label)
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
    for r in runs:
        _fct_cdf(axes[0], flows[r], label=r)
    axes[0].set_title("FCT CDF")
    if len(runs) <= MAX_SERIES:
        axes[0].legend(fontsize=7)
    stats = {r: size_bucket_stats(flows[r]) for r in runs}
    groups = [b[0] for b in SIZE_BUCKETS]
    for ax, key, title in [
        (axes[1], "avg_fct_us", "avg FCT by flow size (us)"),
        (axes[2], "p99_fct_us", "p99 FCT by flow size (us)"),
    ]:
        _grouped_bars(ax, groups, {r: [b[key] for b in stats[r]] for r in runs}, title)
        ax.set_yscale("log")
        if len(runs) <= MAX_SERIES:
            ax.legend(fontsize=7)
    files.append(_save(fig, out / "comparison.png"))

    fig, axes = plt.subplots(1, len(HEADLINE), figsize=(3.2 * len(HEADLINE), 4))
    for ax, (key, label) in zip(axes, HEADLINE):
        vals = [r.get(key) for r in rows]
        vals = [math.nan if v is None else float(v) for v in vals]
        colors = [f"C{i % 10}" for i in range(len(runs))]  # same colors as comparison.png
        ax.bar(range(len(runs)), [0 if math.isnan(v) else v for v in vals], color=colors)
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(runs, rotation=60, ha="right", fontsize=7)
        ax.set_title(label, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"sweep {Path(meta.get('sweep_file') or d).name}: headline metrics")
    files.append(_save(fig, out / "headline.png"))
    record_plots(out, files)
    return files


def plot(path: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Plot a run or sweep folder into ``out_dir`` (default ``<path>/plots``)."""
    p = Path(path)
    out = Path(out_dir) if out_dir is not None else p / "plots"
    if is_sweep_dir(p):
        return plot_sweep(p, out)
    return plot_run(p, out)
