"""Where the hypothetical DCTCP's opportunistic packets wait, and how busy the host links are.

Diagnostic for README.md (not part of the report). Give it run folders sampled on every port,
e.g.::

    dcnsim run ../ppt_fig12_13/base.toml --out /tmp/hyp --set transport.protocol=ppt \
        --set transport.hypothetical=true \
        --set output.sample_interval=100us --set output.sample_ports=all
    python netdiag.py /tmp/hyp [more run folders]

For each folder it prints

* the receiver-link utilization while busy: over every switch port facing a host, the
  sampling intervals during which some flow to that host was active (arrived, not finished)
  the whole interval, pooled; the rule of the report's ``util_busy``, applied to every
  receiver link instead of the busiest port. Also the fraction of those intervals below 90%;
* the sender-link utilization while busy: the same for every host NIC and the flows *from*
  that host;
* the mean bytes queued per port of each kind (host NICs, leaf -> host, leaf -> spine,
  spine -> leaf), split into the high-priority classes P0-P3 and the low-priority
  (opportunistic) classes P4-P7, averaged over every sampling instant of the run.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from dcnsim.repro import intervals_inside_union as active


def port_kind(r: dict[str, str]) -> str:
    if r["node_kind"] == "host":
        return "host NIC"
    return f"{r['node_kind']} -> {r['peer_kind']}"


def diagnose(d: Path) -> None:
    with (d / "ports.csv").open() as f:
        ports = {int(r["id"]): r for r in csv.DictReader(f)}
    fl = pq.read_table(d / "flows.parquet", columns=["src", "dst", "start_us", "finish_us"])
    fl = fl.to_pydict()
    src, dst = np.asarray(fl["src"]), np.asarray(fl["dst"])
    start = np.asarray(fl["start_us"], float)
    fin = np.asarray(fl["finish_us"], float)
    lk = pq.read_table(d / "link.parquet").to_pydict()
    port = np.asarray(lk["port"])
    util = np.asarray(lk["utilization"], float)
    t = np.asarray(lk["t_us"], float)
    dt = float(np.min(np.diff(np.unique(t))))
    busy: dict[str, list[np.ndarray]] = {"receiver": [], "sender": []}
    for p, r in ports.items():
        m = port == p
        if r["node_kind"] != "host" and r["peer_kind"] == "host":
            sel, side = dst == int(r["peer"]), "receiver"
        elif r["node_kind"] == "host":
            sel, side = src == int(r["node"]), "sender"
        else:
            continue
        busy[side].append(util[m][active(start[sel], fin[sel], t[m], dt)])
    print(f"{d}:")
    for side, us in busy.items():
        u = np.concatenate(us)
        print(
            f"  {side}-link utilization while busy {u.mean():.3f} "
            f"({len(u)} port-intervals, {(u < 0.9).mean():.1%} of them below 90%)"
        )
    instants = len(np.unique(t))
    q = pq.read_table(d / "queue.parquet").to_pydict()
    total: dict[tuple[str, bool], float] = {}
    for p, c, b in zip(q["port"], q["prio"], q["bytes"]):
        key = (port_kind(ports[p]), c >= 4)
        total[key] = total.get(key, 0.0) + b
    count: dict[str, int] = {}
    for r in ports.values():
        count[port_kind(r)] = count.get(port_kind(r), 0) + 1
    for k in sorted(count):
        hp, lp = (total.get((k, lo), 0.0) / instants / count[k] / 1e3 for lo in (False, True))
        print(f"  {k:15s} {count[k]:4d} ports, mean queued per port: ", end="")
        print(f"P0-P3 {hp:9.1f} KB, P4-P7 {lp:9.1f} KB")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        diagnose(Path(arg))
