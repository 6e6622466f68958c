"""RPO Fig. 1(c) (simulated): utilization of the shared bottleneck B -> C before, during and
after the by-pass that raises f2's round trip.

Run from the repository root after ``dcnsim repro repro/rpo_fig1c_rtt``::

    .venv/bin/python repro/rpo_fig1c_rtt/phases.py repro-out/rpo_fig1c_rtt

It runs no simulation: it reads ``sweep_summary.csv`` and each run's ``ports.csv``,
``link.parquet`` and ``flows.parquet``, and writes ``phases.csv`` and ``phases.md`` into the
output folder (temporary name, then renamed; the only files it writes). A phase's
utilization is the mean of the port's sampled utilization over the sampling intervals lying
wholly inside it; f1's and f2's shares are their payload delivered during the phase is not
recorded per interval, so only the port's total is given. The first millisecond (start-up)
is left out of the first phase.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.results import atomic_write_bytes

# Phases of base.toml (ms): before, during and after f3 by-passes f2 on A -> B.
PHASES = [("before", 1.0, 10.0), ("during", 10.0, 35.0), ("after", 35.0, 45.0)]
# Node ids of the explicit topology: hosts s1, s2, s3, r1, r2, r3, s4, r4 are 0-7, switches
# A, B, C 8-10.
NODE_B, NODE_C, NODE_A = 9, 10, 8


def port_of(run: Path, node: int, peer: int) -> int:
    with open(run / "ports.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if int(r["node"]) == node and int(r["peer"]) == peer:
                return int(r["id"])
    raise SystemExit(f"{run}: no port from node {node} to node {peer}")


def phase_utilization(run: Path, port: int) -> dict[str, float]:
    import pandas as pd

    link = pd.read_parquet(run / "link.parquet")
    link = link[link["port"] == port].sort_values("t_us")
    end = link["t_us"].to_numpy()
    dt = float(np.min(np.diff(end))) if len(end) > 1 else math.nan
    util = link["utilization"].to_numpy()
    out = {}
    for name, a, b in PHASES:
        sel = (end - dt >= a * 1000 - 1e-6) & (end <= b * 1000 + 1e-6)
        out[name] = float(util[sel].mean()) if sel.any() else math.nan
    return out


def analyse(out_dir: Path) -> list[dict[str, Any]]:
    rows = []
    with open(out_dir / "sweep_summary.csv", newline="", encoding="utf-8") as f:
        runs = [
            (r["variant"], out_dir / r["run"]) for r in csv.DictReader(f) if r.get("status") == "ok"
        ]
    if not runs:
        raise SystemExit(f"{out_dir}: no finished run; run `dcnsim repro` first")
    for variant, run in runs:
        bc = phase_utilization(run, port_of(run, NODE_B, NODE_C))
        ab = phase_utilization(run, port_of(run, NODE_A, NODE_B))
        row: dict[str, Any] = {"variant": variant}
        row.update({f"B->C util {k}": v for k, v in bc.items()})
        row["B->C drop during vs before"] = 1 - bc["during"] / bc["before"]
        row.update({f"A->B util {k}": v for k, v in ab.items()})
        rows.append(row)
    return rows


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: phases.py OUTPUT_FOLDER_OF_THE_REPRO", file=sys.stderr)
        return 2
    out = Path(args[0])
    rows = analyse(out)
    cols = list(rows[0])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(v) for k, v in r.items()})
    atomic_write_bytes(out / "phases.csv", buf.getvalue().encode())
    md = ["# RPO Fig. 1(c) (simulated): bottleneck utilization per phase", ""]
    md.append("| quantity | " + " | ".join(r["variant"] for r in rows) + " |")
    md.append("|---" * (len(rows) + 1) + "|")
    for c in cols[1:]:
        md.append(f"| {c} | " + " | ".join(_fmt(r[c]) for r in rows) + " |")
    atomic_write_bytes(out / "phases.md", ("\n".join(md) + "\n").encode())
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
