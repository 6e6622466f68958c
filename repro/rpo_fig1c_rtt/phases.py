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
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.phases import phase_utilization, write_quantity_table

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


def port_rate_bps(run: Path, port: int) -> float:
    with open(run / "ports.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if int(r["id"]) == port:
                return float(r["rate_bps"])
    raise SystemExit(f"{run}: no port {port}")


def queue_delay_us(run: Path, port: int, a_ms: float, b_ms: float, rate_bps: float) -> float:
    """Mean queueing delay (us) at ``port`` over the queue samples in [a_ms, b_ms]: its
    sampled bytes (all classes; an instant without a row is an empty queue) over the rate."""
    import pandas as pd

    link = pd.read_parquet(run / "link.parquet", columns=["t_us", "port"])
    t = np.unique(link.loc[link["port"] == port, "t_us"].to_numpy())
    t = t[(t >= a_ms * 1000 - 1e-6) & (t <= b_ms * 1000 + 1e-6)]
    q = pd.read_parquet(run / "queue.parquet")
    q = q[(q["port"] == port) & q["t_us"].isin(t)]
    if len(t) == 0:
        return math.nan
    return float(q["bytes"].sum()) / len(t) * 8 / rate_bps * 1e6


def rtt_growth_us(run: Path, f2_ports: list[tuple[int, int]]) -> float:
    """How much the run's [[link_delay]] tables lengthen f2's round trip (us) on the links
    of its path given as (node, peer) pairs: each direction on the path adds its new delay
    minus the topology's. 0 without tables."""
    sc = json.loads((run / "scenario.json").read_text(encoding="utf-8"))
    names = {n["name"]: i for i, n in enumerate(sc["topology"]["nodes"])}
    delay = {}
    with open(run / "ports.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            delay[(int(r["node"]), int(r["peer"]))] = float(r["delay_us"])
    growth = 0.0
    for rule in sc.get("link_delay", []):
        a, b = names[rule["a"]], names[rule["b"]]
        dirs = [(a, b)] if rule.get("direction") == "a_to_b" else [(a, b), (b, a)]
        new = _time_us(rule["delay"])
        growth += sum(new - delay[d] for d in dirs if d in f2_ports or d[::-1] in f2_ports)
    return growth


def _time_us(v: Any) -> float:
    """A scenario time (picoseconds as a number, or a string such as "21.25us") in us."""
    if isinstance(v, (int, float)):
        return v / 1e6
    units = {"ps": 1e-6, "ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    for u in ("ps", "ns", "us", "ms", "s"):
        if v.endswith(u):
            return float(v[: -len(u)]) * units[u]
    raise SystemExit(f"cannot read the time {v!r}")


def grant_clock_prediction(
    bc_before: float, ab_before: float, q0_us: float, t1_us: float, t2_us: float, growth_us: float
) -> dict[str, float]:
    """The fixed-window model of a per-packet grant clock (README): flow i keeps
    W_i = r_i (T_i + q0) in flight, read from the phase before (f2's rate r2 is A -> B's
    utilization, which only f2 crosses in the RTT variants; r1 is the rest of B -> C's);
    with f2's round trip T2 + growth the link stays full if W1/T1 + W2/(T2 + growth) >= C,
    else it carries that sum (rates in units of the link rate C)."""
    r2 = ab_before
    r1 = bc_before - r2
    w1, w2 = r1 * (t1_us + q0_us), r2 * (t2_us + q0_us)
    return {
        "f1 window (us x C)": w1,
        "f2 window (us x C)": w2,
        "predicted B->C util during": min(1.0, w1 / t1_us + w2 / (t2_us + growth_us)),
        "predicted f2 rate during": w2 / (t2_us + growth_us),
    }


def analyse(out_dir: Path) -> list[dict[str, Any]]:
    rows = []
    with open(out_dir / "sweep_summary.csv", newline="", encoding="utf-8") as f:
        runs = [
            (r["variant"], out_dir / r["run"]) for r in csv.DictReader(f) if r.get("status") == "ok"
        ]
    if not runs:
        raise SystemExit(f"{out_dir}: no finished run; run `dcnsim repro` first")
    for variant, run in runs:
        bc = phase_utilization(run, port_of(run, NODE_B, NODE_C), PHASES)
        ab = phase_utilization(run, port_of(run, NODE_A, NODE_B), PHASES)
        row: dict[str, Any] = {"variant": variant}
        row.update({f"B->C util {k}": v for k, v in bc.items()})
        row["B->C drop during vs before"] = 1 - bc["during"] / bc["before"]
        row.update({f"A->B util {k}": v for k, v in ab.items()})
        # The f2-round-trip variants ([[link_delay]], no by-passing flows): the grant-clock
        # prediction beside the measurement (nan for the by-passing-flows variants).
        growth = rtt_growth_us(run, [(NODE_A, NODE_B)])
        pred: dict[str, float] = {
            "f2 RTT growth (us)": growth,
            "B->C queue before (us)": math.nan,
            "f1 window (us x C)": math.nan,
            "f2 window (us x C)": math.nan,
            "predicted B->C util during": math.nan,
            "predicted f2 rate during": math.nan,
        }
        if growth > 0:
            import pandas as pd

            fl = pd.read_parquet(run / "flows.parquet", columns=["id", "base_rtt_us"])
            rtt = dict(zip(fl["id"], fl["base_rtt_us"]))
            bc_port = port_of(run, NODE_B, NODE_C)
            _, a_ms, b_ms = PHASES[0]
            q0 = queue_delay_us(run, bc_port, a_ms, b_ms, port_rate_bps(run, bc_port))
            pred["B->C queue before (us)"] = q0
            pred.update(
                grant_clock_prediction(bc["before"], ab["before"], q0, rtt[0], rtt[1], growth)
            )
        else:
            pred["f2 RTT growth (us)"] = math.nan
        row.update(pred)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: phases.py OUTPUT_FOLDER_OF_THE_REPRO", file=sys.stderr)
        return 2
    out = Path(args[0])
    rows = analyse(out)
    md = write_quantity_table(
        out, rows, "RPO Fig. 1(c) (simulated): bottleneck utilization per phase"
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
