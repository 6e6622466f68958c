"""Paper reproductions: a sweep plus a report, run by ``dcnsim repro FOLDER``.

A reproduction folder (``repro/<name>/``) holds a ``README.md`` (the experiment in physical
terms and the paper's numbers beside ours), the base scenario(s), and ``repro.toml``: a sweep
file (see :mod:`dcnsim.sweep`: ``base``, ``[grid]``, ``[set]``, ``[variants.NAME]``) with
three more tables::

    title = "PPT Fig. 12/13: FCT on the 144-host leaf-spine"
    [reduced]                      # what --reduced changes: a small variant for the tests
    set = { "workload[0].flows" = 300, "topology.leaves" = 3 }
    grid = { "workload[0].cdf" = ["websearch"] }   # replaces these grid keys' values
    [report]
    rows = "variant"               # run value that labels table rows (default "variant")
    columns = ["avg_fct_us", "small_avg_fct_us", "small_p99_fct_us", "large_avg_fct_us"]
    reference = "ppt"              # optional: add "reduction by <reference>" rows
    plot = "bars"                  # "bars" (default) or "link_util" (time series)
    bottleneck = "busiest"         # or "downlink": which port the port metrics describe

With ``bottleneck = "downlink"`` the port is the busiest sampled switch port towards a host
instead of the busiest of all (in a non-blocking fabric the busiest port is a core link that
never queues, while the receivers' downlinks hold the queues).

Every other grid key splits the table into blocks (one per combination of their values;
a ``seed`` key is averaged over instead). Columns are summary keys (``docs/results.md``)
or one of the derived metrics of the busiest sampled switch port of each run (the port
that serialized the most bytes in ``link.parquet``; needs ``output.sample_interval``):

* :data:`LINK_METRICS`, from ``link.parquet``: utilization;
* :data:`QUEUE_METRICS`, from ``queue.parquet``: the average occupancy of the port's
  high- and low-priority classes and the low-priority share (PPT Fig. 28). Averages are
  over the sampling instants of the port's active span (its first to its last sampling
  interval with traffic; an instant without a queue row is an empty queue). Which classes
  are low priority comes from the run's ``scenario.json`` (:func:`lp_classes`): the
  classes the transport reserves for opportunistic packets, PPT's P4-P7 and RC3's P1-P7
  with 8 classes, none for other transports (their whole queue counts as high priority).

The low-priority loop's transfer efficiency is a summary key (``lp_transfer_efficiency``).

Outputs in the output folder, next to the run folders: ``table.csv`` (one row per
(block, row label) with every column), ``table.md`` (the same as Markdown, with the
reduction rows) and ``plot.png``.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dcnsim.errors import ScenarioError
from dcnsim.scenario import parse_text, set_field
from dcnsim.sweep import SweepReport, _check_grid, _check_overrides, load_sweep, run_sweep

REPRO_FILE = "repro.toml"
REPORT_KEYS = {"rows", "columns", "reference", "plot", "lower_is_better", "bottleneck"}
LINK_METRICS = {
    "util_mean": "mean utilization of the busiest sampled switch port",
    "util_p10": "10th-percentile utilization of that port over the sampling intervals",
    "util_below_40": "fraction of that port's sampling intervals below 40% utilization",
    "util_busy": "mean utilization of that port over the sampling intervals during which some "
    "flow to the port's peer was active the whole interval (the port had work waiting)",
    "downlinks_util_busy": "the same over every sampled switch port towards a host: mean "
    "utilization over all (port, interval) pairs in which some flow to that host was active "
    "the whole interval (RPO Fig. 17's link utilization)",
}
QUEUE_METRICS = {
    "bottleneck_hp_avg_bytes": "bytes queued in the high-priority classes (every class not "
    "in lp_classes) of the busiest sampled switch port, mean over the sampling instants of "
    "its active span",
    "bottleneck_lp_avg_bytes": "the same for the low-priority classes (lp_classes)",
    "bottleneck_lp_share": "bottleneck_lp_avg_bytes / (bottleneck_hp_avg_bytes + "
    "bottleneck_lp_avg_bytes): the low-priority classes' share of the average occupancy",
    "bottleneck_hp_max_bytes": "the largest sampled occupancy of the high-priority classes "
    "of that port (summed over those classes at each sampling instant of its active span)",
    "bottleneck_lp_max_bytes": "the same for the low-priority classes",
}
LABELS = {
    "avg_fct_us": "avg FCT (us)",
    "small_avg_fct_us": "small avg FCT (us)",
    "small_p99_fct_us": "small p99 FCT (us)",
    "small_p999_fct_us": "small p99.9 FCT (us)",
    "large_avg_fct_us": "large avg FCT (us)",
    "slowdown_p99": "p99 slowdown",
    "drops_total": "drops",
    "timeouts_total": "timeouts",
    "flows_with_timeout": "flows with a timeout",
    "small_p50_fct_us": "small median FCT (us)",
    "transfer_efficiency": "transfer efficiency",
    "small_first_rtt_frac": "small flows done in 1st RTT",
    "max_fct_us": "max FCT (us)",
    "small_max_fct_us": "small max FCT (us)",
    "slowdown_avg": "avg slowdown",
    "drops_selective_drop": "selective drops",
    "drops_buffer_overflow": "overflow drops",
    "bottleneck_first_rtt_util": "bottleneck util. in 1st RTT",
    "bottleneck_queue_avg_bytes": "bottleneck avg queue (B)",
    "bottleneck_queue_max_bytes": "bottleneck max queue (B)",
    "bottleneck_hp_avg_bytes": "HP avg queue (B)",
    "bottleneck_lp_avg_bytes": "LP avg queue (B)",
    "bottleneck_lp_share": "LP share of queue",
    "lp_transfer_efficiency": "LP transfer efficiency",
    "lp_sent_bytes_total": "LP payload sent (B)",
    "downlinks_util_busy": "host downlink util. (busy)",
    "bottleneck_hp_max_bytes": "HP max queue (B)",
    "bottleneck_lp_max_bytes": "LP max queue (B)",
    "reorder_max_bytes_max": "max reorder buffer, one flow (B)",
    "host_reorder_max_bytes_max": "max reorder buffer, one receiver (B)",
}


@dataclass
class Repro:
    """A loaded reproduction: its sweep (reduced if asked) and its report settings."""

    folder: Path
    title: str
    sweep: Any  # SweepSpec
    rows: str = "variant"
    columns: list[str] = field(default_factory=list)
    reference: str | None = None
    plot: str = "bars"
    reduced: bool = False
    bottleneck: str = "busiest"


def load_repro(folder: str | os.PathLike[str], reduced: bool = False) -> Repro:
    """Read ``FOLDER/repro.toml`` (raises :class:`ScenarioError` when malformed)."""
    d = Path(folder)
    path = d / REPRO_FILE
    if not path.is_file():
        raise ScenarioError(str(d), f"not a reproduction folder (no {REPRO_FILE})")
    spec = load_sweep(path, extra_keys=("title", "reduced", "report"))
    data = parse_text(path.read_text(encoding="utf-8"), "toml", str(path))
    title = data.get("title", d.name)
    if reduced:
        red = data.get("reduced")
        if not isinstance(red, dict):
            raise ScenarioError("reduced", "missing: give [reduced] set = {...} for --reduced")
        bad = sorted(set(red) - {"set", "grid"})
        if bad:
            raise ScenarioError(f"reduced.{bad[0]}", "unknown field (expected set, grid)")
        for k, v in _check_overrides(red.get("set", {}), "reduced.set").items():
            try:
                set_field(spec.base, k, v)
            except ScenarioError as e:
                raise ScenarioError(f"reduced.set.{k}", e.message) from None
        if "grid" in red:
            for k, v in _check_grid(red["grid"]).items():
                spec.grid[k] = v
    rep = data.get("report", {})
    if not isinstance(rep, dict):
        raise ScenarioError("report", "must be a table")
    bad = sorted(set(rep) - REPORT_KEYS)
    if bad:
        raise ScenarioError(f"report.{bad[0]}", f"unknown field (expected {sorted(REPORT_KEYS)})")
    columns = rep.get("columns", ["avg_fct_us", "small_avg_fct_us", "small_p99_fct_us"])
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ScenarioError("report.columns", "must be a list of summary keys")
    plot = rep.get("plot", "bars")
    if plot not in ("bars", "link_util"):
        raise ScenarioError("report.plot", 'must be "bars" or "link_util"')
    bottleneck = rep.get("bottleneck", "busiest")
    if bottleneck not in ("busiest", "downlink"):
        raise ScenarioError("report.bottleneck", 'must be "busiest" or "downlink"')
    reference = rep.get("reference")
    if reference is not None and spec.variants and reference not in spec.variants:
        raise ScenarioError("report.reference", f"no variant named {reference!r}")
    return Repro(
        folder=d,
        title=str(title),
        sweep=spec,
        rows=str(rep.get("rows", "variant")),
        columns=list(columns),
        reference=reference,
        plot=plot,
        reduced=reduced,
        bottleneck=bottleneck,
    )


def _busiest_switch_port(
    run_dir: Path, peer_kind: str | None = None
) -> tuple[int, dict[str, Any]] | None:
    """The sampled switch port (any sampled port if none is a switch's) that serialized the
    most bytes, and the run's link samples; None without link samples. With ``peer_kind``
    (``"host"``: ``[report] bottleneck = "downlink"``) only switch ports towards such nodes
    count."""
    import numpy as np
    import pyarrow.parquet as pq

    lp = run_dir / "link.parquet"
    if not lp.is_file():
        return None
    t = pq.read_table(lp).to_pydict()
    ports = _switch_ports(run_dir, peer_kind=peer_kind)
    port = np.asarray(t["port"])
    tx = np.asarray(t["tx_bytes"], float)
    keep = np.isin(port, list(ports)) if ports else np.ones(len(port), bool)
    if not keep.any():
        return None
    return max(set(port[keep].tolist()), key=lambda p: tx[port == p].sum()), t


def _link_metrics(
    run_dir: Path, found: tuple[int, dict[str, Any]] | None, downlinks: bool = False
) -> dict[str, float]:
    """:data:`LINK_METRICS` of a run folder, on the port :func:`_busiest_switch_port` found
    in it (empty when it found none); ``downlinks_util_busy`` (every sampled port towards a
    host) only when ``downlinks`` is set."""
    import numpy as np

    if found is None:
        return {}
    busiest, t = found
    port = np.asarray(t["port"])
    util = np.asarray(t["utilization"], float)
    u = util[port == busiest]
    # Intervals before the first and after the last activity of that port are idle by
    # construction (warm-up, drain); count the span in between.
    nz = np.nonzero(u > 0)[0]
    if len(nz):
        u = u[nz[0] : nz[-1] + 1]
    busy = _busy_mask(run_dir, busiest, np.asarray(t["t_us"], float)[port == busiest])
    ub = util[port == busiest][busy] if busy is not None else np.array([])
    down: list[Any] = []
    to_hosts = _switch_ports(run_dir, peer_kind="host") if downlinks else set()
    if to_hosts:
        # Read the run's ports and flows once, and split the samples by port once: a
        # 400-host run has 400 downlinks.
        inputs = _busy_inputs(run_dir)
        t_all = np.asarray(t["t_us"], float)
        order = np.argsort(port, kind="stable")
        ids, first = np.unique(port[order], return_index=True)
        groups = dict(zip(ids.tolist(), np.split(order, first[1:])))
        for p in sorted(to_hosts & set(groups)):
            rows = groups[p]
            m = _busy_mask(run_dir, p, t_all[rows], inputs)
            if m is not None:
                down.append(util[rows][m])
    dn = np.concatenate(down) if down else np.array([])
    return {
        "util_busy": float(ub.mean()) if len(ub) else float("nan"),
        **(
            {"downlinks_util_busy": float(dn.mean()) if len(dn) else float("nan")}
            if downlinks
            else {}
        ),
        "util_mean": float(u.mean()),
        "util_p10": float(np.sort(u)[max(0, math.ceil(0.1 * len(u)) - 1)]),
        "util_below_40": float((u < 0.4).mean()),
        "util_port": float(busiest),
    }


def lp_classes(scenario: dict[str, Any]) -> list[int]:
    """The priority classes a run's transport reserves for opportunistic packets (its
    low-priority loop), as the core declares them in the run's normalized scenario
    (``scenario.json``, ``derived.lp_classes``: PPT and PPT over Swift the upper half of the
    classes, P4-P7 with 8; RC3 every class below its primary loop's class 0, P1-P7); empty
    for a transport without such a loop (every class counts as high priority)."""
    return [int(c) for c in scenario.get("derived", {}).get("lp_classes", [])]


def _queue_metrics(run_dir: Path, found: tuple[int, dict[str, Any]] | None) -> dict[str, float]:
    """:data:`QUEUE_METRICS` of a run folder, on the port :func:`_busiest_switch_port` found
    in it (empty without queue and link samples).

    The port is the one :func:`_link_metrics` reports on; its active span runs from its
    first to its last sampling interval with traffic (as for ``bottleneck_queue_avg_bytes``).
    Each sampling instant of the span counts once, an instant without a ``queue.parquet``
    row for a class being an empty queue; the means are the sums of the queued bytes over
    those instants divided by their number."""
    import json

    import numpy as np
    import pyarrow.parquet as pq

    qf = run_dir / "queue.parquet"
    if found is None or not qf.is_file():
        return {}
    busiest, t = found
    port = np.asarray(t["port"])
    tl = np.asarray(t["t_us"], float)[port == busiest]
    busy = tl[np.asarray(t["utilization"], float)[port == busiest] > 0]
    if not len(busy):
        return {}
    t0, t1 = float(busy.min()), float(busy.max())
    instants = int(((tl >= t0) & (tl <= t1)).sum())
    q = pq.read_table(qf).to_pydict()
    qt = np.asarray(q["t_us"], float)
    sel = (np.asarray(q["port"]) == busiest) & (qt >= t0) & (qt <= t1)
    prio = np.asarray(q["prio"])[sel]
    qb = np.asarray(q["bytes"], float)[sel]
    sc = run_dir / "scenario.json"
    lp_set = lp_classes(json.loads(sc.read_text())) if sc.is_file() else []
    is_lp = np.isin(prio, lp_set)
    hp = float(qb[~is_lp].sum()) / instants
    lp = float(qb[is_lp].sum()) / instants
    qts = qt[sel]

    def peak(m: Any) -> float:
        if not m.any():
            return 0.0
        _, inv = np.unique(qts[m], return_inverse=True)
        return float(np.bincount(inv, weights=qb[m]).max())

    return {
        "bottleneck_hp_avg_bytes": hp,
        "bottleneck_lp_avg_bytes": lp,
        "bottleneck_lp_share": lp / (hp + lp) if hp + lp > 0 else float("nan"),
        "bottleneck_hp_max_bytes": peak(~is_lp),
        "bottleneck_lp_max_bytes": peak(is_lp),
    }


def _busy_inputs(run_dir: Path) -> tuple[dict[int, int], Any] | None:
    """What :func:`_busy_mask` reads from a run folder: each port's peer node, and the flows'
    ``dst``, ``start_us`` and ``finish_us`` (None without ``flows.parquet``)."""
    import numpy as np
    import pyarrow.parquet as pq

    with (run_dir / "ports.csv").open() as f:
        peers = {int(r["id"]): int(r["peer"]) for r in csv.DictReader(f)}
    fp = run_dir / "flows.parquet"
    if not fp.is_file():
        return None
    fl = pq.read_table(fp, columns=["dst", "start_us", "finish_us"]).to_pydict()
    cols = (np.asarray(fl["dst"]), np.asarray(fl["start_us"], float))
    return peers, (*cols, np.asarray(fl["finish_us"], float))


def _busy_mask(
    run_dir: Path, port: int, t_end_us: Any, inputs: tuple[dict[int, int], Any] | None = None
) -> Any:
    """Sampling intervals (ending at ``t_end_us``) fully inside a period during which at
    least one flow to the port's peer had arrived and not finished. ``inputs``: the run's
    :func:`_busy_inputs`, when the caller already read them."""
    import numpy as np

    if inputs is None:
        inputs = _busy_inputs(run_dir)
    if inputs is None:
        return None
    peers, (dst, start_all, fin_all) = inputs
    peer = peers.get(port)
    if peer is None or len(t_end_us) < 2:
        return None
    start = start_all[dst == peer]
    fin = fin_all[dst == peer]
    fin = np.where(np.isnan(fin), np.inf, fin)
    dt = float(t_end_us[1] - t_end_us[0])
    return intervals_inside_union(start, fin, np.asarray(t_end_us, float), dt)


def intervals_inside_union(start: Any, fin: Any, t_end: Any, dt: float) -> Any:
    """Boolean mask over the sampling intervals ``(t - dt, t]`` (``t`` in ``t_end``): True
    where the interval lies wholly inside the union of the spans ``[start, fin)``. Used for
    the report's ``util_busy`` and by diagnostics that apply the same rule to other ports."""
    import numpy as np

    order = np.argsort(start, kind="stable")
    spans: list[list[float]] = []
    for a, b in zip(np.asarray(start)[order], np.asarray(fin)[order]):
        if spans and a <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])
    if not spans:
        return np.zeros(len(t_end), bool)
    sa = np.array([s[0] for s in spans])
    sb = np.array([s[1] for s in spans])
    i = np.searchsorted(sa, t_end - dt, side="right") - 1
    return (i >= 0) & (sb[np.maximum(i, 0)] >= t_end)


def _switch_ports(run_dir: Path, peer_kind: str | None = None) -> set[int]:
    """Switch ports of a run (those towards a node of ``peer_kind`` if given)."""
    p = run_dir / "ports.csv"
    if not p.is_file():
        return set()
    with p.open() as f:
        return {
            int(r["id"])
            for r in csv.DictReader(f)
            if r["node_kind"] != "host" and (peer_kind is None or r["peer_kind"] == peer_kind)
        }


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3f}"
    return str(v)


def build_table(rep: Repro, report: SweepReport) -> list[dict[str, Any]]:
    """One row per (block, row label): the mean over seeds of every report column."""
    by_run = {r["run"]: r for r in report.rows}
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    block_keys = [k for k in rep.sweep.grid if k not in (rep.rows, "seed")]
    if rep.rows != "variant" and rep.sweep.variants:
        block_keys = ["variant", *block_keys]
    for task in report.runs:
        r = by_run.get(task.name)
        if r is None:
            continue
        vals = dict(r)
        link, queue = (any(c in m for c in rep.columns) for m in (LINK_METRICS, QUEUE_METRICS))
        if link or queue:
            # Both kinds report on the same port: find it (reading link.parquet) once.
            kind = "host" if rep.bottleneck == "downlink" else None
            found = _busiest_switch_port(Path(task.out_dir), peer_kind=kind)
            if link:
                down = "downlinks_util_busy" in rep.columns
                vals.update(_link_metrics(Path(task.out_dir), found, downlinks=down))
            if queue:
                vals.update(_queue_metrics(Path(task.out_dir), found))
        key = (*(task.values.get(k) for k in block_keys), task.values.get(rep.rows))
        row = rows.setdefault(
            key,
            {**{k: task.values.get(k) for k in block_keys}, rep.rows: task.values.get(rep.rows)},
        )
        row.setdefault("_n", 0)
        row["_n"] += 1
        for c in rep.columns:
            v = vals.get(c)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row.setdefault("_sum_" + c, 0.0)
                row["_sum_" + c] += float(v)
    out = []
    for row in rows.values():
        n = row.pop("_n")
        for c in rep.columns:
            s = row.pop("_sum_" + c, None)
            row[c] = None if s is None else s / n
        row["runs"] = n
        out.append(row)
    return out


def _blocks(rep: Repro, table: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    keys = [k for k in table[0] if k not in (rep.rows, "runs", *rep.columns)] if table else []
    blocks: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in table:
        blocks.setdefault(tuple((k, row[k]) for k in keys), []).append(row)
    return blocks


def table_markdown(rep: Repro, table: list[dict[str, Any]]) -> str:
    """The table as Markdown; with a reference, rows 'PPT vs X' give 1 - ref / X in %."""
    lines = [f"# {rep.title}{' (reduced)' if rep.reduced else ''}", ""]
    for block, rows in _blocks(rep, table).items():
        if block:
            lines.append("## " + ", ".join(f"{k} = {v}" for k, v in block))
            lines.append("")
        head = [rep.rows, *(LABELS.get(c, c) for c in rep.columns)]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            lines.append(
                "| " + " | ".join([str(r[rep.rows]), *(_fmt(r[c]) for c in rep.columns)]) + " |"
            )
        ref = next((r for r in rows if r[rep.rows] == rep.reference), None)
        if ref is not None:
            lines.append("")
            lines.append(f"Reduction by {rep.reference} (1 - {rep.reference} / other):")
            lines.append("")
            lines.append("| vs | " + " | ".join(LABELS.get(c, c) for c in rep.columns) + " |")
            lines.append("|" + "---|" * (len(rep.columns) + 1))
            for r in rows:
                if r is ref:
                    continue
                cells = []
                for c in rep.columns:
                    a, b = ref[c], r[c]
                    cells.append("n/a" if not a or not b else f"{100 * (1 - a / b):+.1f}%")
                lines.append(f"| {r[rep.rows]} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def table_csv(rep: Repro, table: list[dict[str, Any]]) -> str:
    cols: list[str] = []
    for r in table:
        cols.extend(k for k in r if k not in cols)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in table:
        w.writerow(["" if r.get(c) is None else r.get(c) for c in cols])
    return buf.getvalue()


def plot_repro(rep: Repro, table: list[dict[str, Any]], report: SweepReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from dcnsim.results import atomic_write_bytes

    bottom = 0.0  # figure fraction kept free below the panels (for a figure legend)
    if rep.plot == "link_util":
        import pyarrow.parquet as pq

        fig, ax = plt.subplots(figsize=(9, 4))
        for task in report.runs:
            d = Path(task.out_dir)
            m = _link_metrics(d, _busiest_switch_port(d))
            if not m or task.values.get("seed", None) not in (
                None,
                rep.sweep.grid.get("seed", [None])[0],
            ):
                continue
            t = pq.read_table(d / "link.parquet").to_pydict()
            sel = np.asarray(t["port"]) == int(m["util_port"])
            ax.plot(
                np.asarray(t["t_us"])[sel] / 1000,
                np.asarray(t["utilization"])[sel],
                label=task.name,
                lw=1,
            )
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("utilization of the bottleneck")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(rep.title, fontsize=9)
    else:
        blocks = _blocks(rep, table)
        n = len(rep.columns)
        # At most four panels per row.
        ncol = min(n, 4)
        nrow = -(-n // ncol)
        fig, grid = plt.subplots(nrow, ncol, figsize=(3.2 * ncol + 1, 3.6 * nrow), squeeze=False)
        axes = list(grid.flat)
        for ax in axes[n:]:
            ax.set_visible(False)
        # Tick labels name only the keys that vary between blocks (a one-value grid key,
        # such as a fixed round count, would repeat on every tick); the axis names them.
        keys = next(iter(blocks)) if blocks else ()
        vary = [
            i
            for i in range(len(keys))
            if len(blocks) == 1 or len({b[i][1] for b in blocks if len(b) > i}) > 1
        ]
        labels = [", ".join(str(b[i][1]) for i in vary) or "all" for b in blocks]
        xlabel = ", ".join(keys[i][0] for i in vary)
        names: list[Any] = []
        for rows in blocks.values():
            names.extend(r[rep.rows] for r in rows if r[rep.rows] not in names)
        width = 0.8 / max(1, len(names))
        for ax, c in zip(axes, rep.columns):
            for i, name in enumerate(names):
                ys = []
                for rows in blocks.values():
                    r = next((r for r in rows if r[rep.rows] == name), None)
                    ys.append(np.nan if r is None or r[c] is None else r[c])
                ax.bar(np.arange(len(blocks)) + i * width, ys, width, label=str(name))
            ax.set_xticks(np.arange(len(blocks)) + width * (len(names) - 1) / 2)
            ax.set_xticklabels(labels, fontsize=7)
            ax.set_xlabel(xlabel, fontsize=7)
            ax.set_title(LABELS.get(c, c), fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        fig.suptitle(rep.title + (" (reduced)" if rep.reduced else ""), fontsize=10)
        if nrow == 1:
            axes[0].legend(fontsize=7)
        else:  # below the panels, so that it hides no bar
            handles, names_ = axes[0].get_legend_handles_labels()
            fig.legend(handles, names_, loc="lower center", ncol=min(len(names), 8), fontsize=8)
            bottom = 0.06
    fig.tight_layout(rect=(0, bottom, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


@dataclass
class ReproResult:
    repro: Repro
    report: SweepReport
    table: list[dict[str, Any]]
    files: list[Path]


def run_repro(
    folder: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    reduced: bool = False,
    workers: int | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    variants: Sequence[str] | None = None,
    on_change: str = "rerun",
    executor: Any = None,
    progress: Callable[[int, int, Any], Any] | None = None,
) -> ReproResult:
    """Run a reproduction's sweep into ``out_dir`` and write its table and plot there.

    ``variants`` runs only the named ``[variants.NAME]`` (all grid points each), e.g. to
    rerun the rows a change affects; the table and plot then hold those rows only.
    ``executor`` (e.g. a ``distributed.Client``) and ``progress`` are handed to
    :func:`~dcnsim.sweep.run_sweep`."""
    from dcnsim.results import atomic_write_bytes

    rep = load_repro(folder, reduced=reduced)
    if variants is not None:
        select_variants(rep, variants)
    report = run_sweep(
        rep.sweep,
        out_dir,
        workers=workers,
        force=force,
        on_change=on_change,
        log=log,
        executor=executor,
        progress=progress,
    )
    table = build_table(rep, report)
    out = Path(out_dir)
    files = [out / "table.csv", out / "table.md", out / "plot.png"]
    atomic_write_bytes(files[0], table_csv(rep, table).encode())
    atomic_write_bytes(files[1], table_markdown(rep, table).encode())
    if table:
        plot_repro(rep, table, report, files[2])
    else:
        files.pop()
    return ReproResult(rep, report, table, files)


def select_variants(rep: Repro, names: Sequence[str]) -> None:
    """Keep only the named variants of ``rep`` (in the folder's order); the report's
    reference is dropped when it is not among them."""
    known = list(rep.sweep.variants)
    if not known:
        raise ScenarioError(
            "--variants", f"{rep.folder} defines no [variants.NAME]; omit --variants"
        )
    if not names:
        raise ScenarioError("--variants", f"name at least one of: {', '.join(known)}")
    for n in names:
        if n not in rep.sweep.variants:
            raise ScenarioError(
                "--variants", f"unknown variant {n!r}; {rep.folder} defines: {', '.join(known)}"
            )
    rep.sweep.variants = {k: v for k, v in rep.sweep.variants.items() if k in set(names)}
    if rep.reference is not None and rep.reference not in rep.sweep.variants:
        rep.reference = None


def list_repros(root: str | os.PathLike[str] = "repro") -> Sequence[Path]:
    return sorted(p.parent for p in Path(root).glob(f"*/{REPRO_FILE}"))


__all__ = [
    "LINK_METRICS",
    "QUEUE_METRICS",
    "Repro",
    "ReproResult",
    "build_table",
    "load_repro",
    "lp_classes",
    "run_repro",
    "select_variants",
]
