"""RPO Fig. 15: 99th-percentile slowdown vs flow size at load 0.6, from Fig. 14's runs.

Run from the repository root after ``dcnsim repro repro/rpo_fig14_fct`` (full size or
``--reduced``)::

    .venv/bin/python repro/rpo_fig14_fct/fig15.py repro-out/rpo_fig14_fct [--load 0.6]

It runs no simulation: it reads the sweep's ``sweep_summary.csv`` and the ``flows.parquet``
of every finished run at the given load, and writes ``fig15_table.csv``, ``fig15_table.md``
and ``fig15_plot.png`` into that folder (each under a temporary name, renamed when
complete; these three names are the only files it writes).

Size groups follow the paper's x-axis, which is linear in the number of flows: the flows of
a run, sorted by size (ties by flow id), are cut by rank into the smallest 50% and then ten
groups of 5% each. A group is labelled by its rank range and the largest flow size in it;
its value is the nearest-rank 99th percentile of the slowdown (FCT over the FCT alone in the
idle network) of its finished flows. With n flows per run a 5% group holds n/20 flows, so
its 99th percentile is its largest value for fewer than 100 flows and its second largest for
100-199: the statistic is a tail estimate only as good as the flows behind it.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.metrics import percentile
from dcnsim.results import atomic_write_bytes

# Rank cut points in percent of the flows: [0, 50), [50, 55), ..., [95, 100].
CUTS = [0, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100]
COLUMNS = ["cdf", "pause_fraction", "variant", "group", "rank_from_pct", "rank_to_pct"]
COLUMNS += ["max_size_bytes", "flows", "unfinished", "p99_slowdown"]
KEYS = {"cdf": "workload[0].cdf", "load": "workload[0].load", "pause": "pause[0].fraction"}


def size_groups(flows: Any) -> list[dict[str, Any]]:
    """The 11 rank groups of one run's flows (a DataFrame with ``id``, ``size_bytes`` and
    ``slowdown``): their rank range, largest size, flow count, unfinished count and p99
    slowdown (NaN when no flow of the group finished)."""
    order = np.lexsort((flows["id"].to_numpy(), flows["size_bytes"].to_numpy()))
    size = flows["size_bytes"].to_numpy()[order]
    sd = flows["slowdown"].to_numpy(dtype=np.float64)[order]
    n = len(order)
    out = []
    for g, (lo, hi) in enumerate(zip(CUTS[:-1], CUTS[1:])):
        a, b = n * lo // 100, n * hi // 100
        grp = sd[a:b]
        out.append(
            {
                "group": g,
                "rank_from_pct": lo,
                "rank_to_pct": hi,
                "max_size_bytes": int(size[b - 1]) if b > a else 0,
                "flows": b - a,
                "unfinished": int(np.isnan(grp).sum()),
                "p99_slowdown": percentile(grp, 99) if b > a else math.nan,
            }
        )
    return out


def fig15_rows(out_dir: Path, load: float = 0.6) -> list[dict[str, Any]]:
    """One row per (workload, pause fraction, variant, size group) over the finished runs at
    ``load`` in the sweep folder ``out_dir``; runs with several seeds are pooled (their flows
    cut into groups together)."""
    import pandas as pd

    summary = out_dir / "sweep_summary.csv"
    if not summary.is_file():
        raise SystemExit(f"{summary}: not found; run `dcnsim repro repro/rpo_fig14_fct` first")
    runs: dict[tuple[str, float, str], list[Any]] = {}
    with open(summary, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("status") != "ok" or not math.isclose(float(r[KEYS["load"]]), load):
                continue
            key = (r[KEYS["cdf"]], float(r.get(KEYS["pause"]) or 0.0), r["variant"])
            flows = pd.read_parquet(out_dir / r["run"] / "flows.parquet")
            runs.setdefault(key, []).append(flows[["id", "size_bytes", "slowdown"]])
    if not runs:
        raise SystemExit(f"{summary}: no finished run at load {load}")
    rows = []
    for (cdf, pause, variant), parts in sorted(runs.items()):
        flows = pd.concat(parts, ignore_index=True)
        flows["id"] = np.arange(len(flows))  # pooled seeds: ties broken by position
        for g in size_groups(flows):
            rows.append({"cdf": cdf, "pause_fraction": pause, "variant": variant, **g})
    return rows


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def write_outputs(out_dir: Path, rows: list[dict[str, Any]], load: float) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(r[k]) for k in COLUMNS})
    atomic_write_bytes(out_dir / "fig15_table.csv", buf.getvalue().encode())

    md = [f"# RPO Fig. 15: 99th-percentile slowdown by size group, load {load}", ""]
    blocks = sorted({(r["cdf"], r["pause_fraction"]) for r in rows})
    for cdf, pause in blocks:
        sel = [r for r in rows if r["cdf"] == cdf and r["pause_fraction"] == pause]
        variants = list(dict.fromkeys(r["variant"] for r in sel))
        groups = sorted({r["group"] for r in sel})
        md += [f"## {cdf}, pause fraction {pause}", ""]
        md.append("| flows by size (rank %) | largest size (B) | " + " | ".join(variants) + " |")
        md.append("|---" * (len(variants) + 2) + "|")
        for g in groups:
            cells = {r["variant"]: r for r in sel if r["group"] == g}
            first = next(iter(cells.values()))
            label = f"{first['rank_from_pct']}-{first['rank_to_pct']}"
            vals = [_fmt(cells[v]["p99_slowdown"]) if v in cells else "" for v in variants]
            md.append(f"| {label} | {first['max_size_bytes']:,} | " + " | ".join(vals) + " |")
        md.append("")
    atomic_write_bytes(out_dir / "fig15_table.md", "\n".join(md).encode())

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(blocks), figsize=(4 * len(blocks) + 1, 3.6), squeeze=False)
    for ax, (cdf, pause) in zip(axes[0], blocks):
        sel = [r for r in rows if r["cdf"] == cdf and r["pause_fraction"] == pause]
        for v in dict.fromkeys(r["variant"] for r in sel):
            pts = sorted((r["group"], r["p99_slowdown"]) for r in sel if r["variant"] == v)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=v)
        ax.set_xticks(range(len(CUTS) - 1))
        ax.set_xticklabels([f"{c}%" for c in CUTS[1:]], rotation=90, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"{cdf}, pause {pause}", fontsize=9)
        ax.set_xlabel("flows by size (upper rank)")
    axes[0][0].set_ylabel("p99 slowdown")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    buf_png = io.BytesIO()
    fig.savefig(buf_png, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out_dir / "fig15_plot.png", buf_png.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path, help="the output folder of the Fig. 14 repro")
    ap.add_argument("--load", type=float, default=0.6)
    a = ap.parse_args(argv)
    rows = fig15_rows(a.out_dir, a.load)
    write_outputs(a.out_dir, rows, a.load)
    print(f"wrote fig15_table.csv, fig15_table.md, fig15_plot.png in {a.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
