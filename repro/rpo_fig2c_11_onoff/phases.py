"""RPO Fig. 2(c) and Fig. 11 (simulated): bottleneck utilization per ON/OFF phase, and the
adaptive threshold k and the opportunistic queue over time.

Run from the repository root after ``dcnsim repro repro/rpo_fig2c_11_onoff``::

    .venv/bin/python repro/rpo_fig2c_11_onoff/phases.py repro-out/rpo_fig2c_11_onoff

It runs no simulation. It reads the sweep's ``sweep_summary.csv`` and each run folder, and
writes ``phases.csv``, ``phases.md`` and ``fig11.png`` into the output folder (temporary
name, then renamed; these are the only files it writes).

* Bottleneck: the switch-to-switch port that serialized the most bytes (left -> right).
* Utilization of a phase: the mean of the port's ``link.parquet`` utilization over the
  sampling intervals lying wholly inside the phase.
* k (Fig. 11's variant, which traces the switch ports): the bottleneck's adaptive threshold
  replayed from its ``dequeue`` trace rows with the policy's rule (``rpo_crossmark``,
  docs/scenario.md): at the first departure at least one period t after the last update,
  k = C x t - (normal bytes sent since) x t / (time since), floored at 0; opportunistic
  packets do not count as normal. The port may also update k on a departure attempt that
  finds the queue empty, which leaves no trace row, so the replay is checked against the
  marks the port actually made: a normal data packet leaves with CE exactly when the
  opportunistic backlog (counted in packets of MSS) exceeds k. ``k_replay_agreement`` is the
  share of departing normal data packets whose CE mark the replayed k predicts.
* The opportunistic queue: the bottleneck's low-priority classes in ``queue.parquet``, in
  packets of 1,500 B.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.phases import phase_utilization, write_quantity_table
from dcnsim.results import atomic_write_bytes

# Phases of base.toml (ms): f1 alone, both ON, f1 OFF, both ON, f1 OFF, both ON.
PHASES = [
    ("f1 alone", 0.0, 5.0),
    ("both ON", 5.0, 18.0),
    ("f1 OFF", 18.0, 28.0),
    ("both ON (2)", 28.0, 46.0),
    ("f1 OFF (2)", 46.0, 56.0),
    ("both ON (3)", 56.0, 60.0),
]
OPPORTUNISTIC = 16  # trace flag bit
DATA = 1
MSS_WIRE = 1500


def bottleneck_port(run: Path) -> dict[str, Any]:
    with open(run / "ports.csv", newline="", encoding="utf-8") as f:
        rows = [
            r for r in csv.DictReader(f) if r["node_kind"] != "host" and r["peer_kind"] != "host"
        ]
    return max(rows, key=lambda r: int(r["tx_bytes"]))


def replay_k(run: Path, port: int, rate_bps: int, period_ps: int, mss: int) -> dict[str, Any]:
    """k over time at ``port`` from the dequeue trace, and the share of normal data departures
    whose CE mark it predicts."""
    import pandas as pd

    tr = pd.read_parquet(
        run / "packets.parquet",
        columns=["t_ps", "event", "port", "flags", "size_bytes", "ecn", "flow", "seq"],
    )
    tr = tr[tr["port"] == port]
    full = rate_bps * period_ps // (8 * 10**12)
    k = full
    ws = 0
    normal = 0
    opp_pkts = 0
    times, ks = [0], [k]
    agree = total = 0
    marked_on_entry: set[tuple[int, int]] = set()
    for t, ev, fl, sz, ecn, flow, seq in zip(
        tr["t_ps"].to_numpy(),
        tr["event"].to_numpy(),
        tr["flags"].to_numpy(),
        tr["size_bytes"].to_numpy(),
        tr["ecn"].to_numpy(),
        tr["flow"].to_numpy(),
        tr["seq"].to_numpy(),
    ):
        t, fl, sz = int(t), int(fl), int(sz)
        opp = bool(fl & OPPORTUNISTIC)
        if ev == "enqueue":
            opp_pkts += opp
        elif ev == "mark":
            # the port's ordinary per-class ECN threshold marked it on arrival
            marked_on_entry.add((int(flow), int(seq)))
        elif ev == "dequeue":
            el = t - ws
            if el >= period_ps:
                k = max(0, full - normal * period_ps // el)
                ws, normal = t, 0
                times.append(t)
                ks.append(k)
            if opp:
                opp_pkts -= 1
            else:
                normal += sz
                if fl & DATA:
                    total += 1
                    entry = (int(flow), int(seq)) in marked_on_entry
                    marked_on_entry.discard((int(flow), int(seq)))
                    predicted = entry or opp_pkts * mss > k
                    agree += predicted == (int(ecn) == 2)
        # a "drop" row is an arriving packet the port refused (no enqueue row): nothing queued
    return {
        "t_ms": np.array(times) / 1e9,
        "k_pkts": np.array(ks) / mss,
        "agreement": agree / total if total else math.nan,
    }


def lp_queue(run: Path, port: int, lp: list[int]) -> Any:
    import pandas as pd

    q = pd.read_parquet(run / "queue.parquet")
    q = q[(q["port"] == port) & q["prio"].isin(lp)]
    s = q.groupby("t_us")["bytes"].sum()
    return s


def first_rtt_counts(run: Path, port: int, flow: int, start_ps: int, rtt_ps: int) -> dict[str, int]:
    """Normal data packets of ``flow`` that the bottleneck sent on and dropped during the
    flow's first round trip (its first BDP, sent before any grant came back)."""
    import pandas as pd

    tr = pd.read_parquet(
        run / "packets.parquet", columns=["t_ps", "event", "port", "flow", "flags"]
    )
    tr = tr[(tr["port"] == port) & (tr["flow"] == flow) & ((tr["flags"] & DATA) > 0)]
    tr = tr[(tr["flags"] & OPPORTUNISTIC) == 0]
    tr = tr[(tr["t_ps"] >= start_ps) & (tr["t_ps"] < start_ps + 2 * rtt_ps)]
    unsched = (tr["flags"] & 2) > 0  # first-RTT packets are flagged unscheduled
    return {
        "sent_on": int(((tr["event"] == "dequeue") & unsched).sum()),
        "dropped": int(((tr["event"] == "drop") & unsched).sum()),
    }


def analyse(out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    runs = {}
    with open(out_dir / "sweep_summary.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("status") == "ok":
                runs[r["variant"]] = out_dir / r["run"]
    if not runs:
        raise SystemExit(f"{out_dir}: no finished run; run `dcnsim repro` first")
    rows = []
    fig11: dict[str, Any] = {}
    for variant, run in runs.items():
        p = bottleneck_port(run)
        port = int(p["id"])
        util = phase_utilization(run, port, PHASES)
        row: dict[str, Any] = {"variant": variant, "port": port}
        row.update({f"util {k}": v for k, v in util.items()})
        if (run / "packets.parquet").is_file():
            sc = json.loads((run / "scenario.json").read_text())
            net = sc["network"]
            cm = net["crossmark"]
            mss = _b(net["mtu"]) - _b(net["header"]) if cm.get("count_packets") else 1
            period_ps = _ps(cm["period"])
            rep = replay_k(run, port, int(p["rate_bps"]), period_ps, mss)
            lpq = lp_queue(run, port, sc["derived"]["lp_classes"])
            first = first_rtt_counts(run, port, 1, 5 * 10**9, 50 * 10**6)
            t, k = rep["t_ms"], rep["k_pkts"]

            def k_mean(a: float, b: float, t: Any = t, k: Any = k) -> float:
                sel = (t >= a) & (t < b)
                return float(k[sel].mean()) if sel.any() else math.nan

            def lp_at(ms: float, lpq: Any = lpq) -> float:
                # the sample at that instant; an instant without a row is an empty queue
                return float(lpq.get(ms * 1000.0, 0.0)) / MSS_WIRE

            row.update(
                {
                    "k_replay_agreement": rep["agreement"],
                    "k mean both ON (pkts)": k_mean(6, 18),
                    "k mean f1 OFF (pkts)": k_mean(18, 28),
                    "k max f1 OFF (pkts)": float(k[(t >= 18) & (t < 28)].max()),
                    "LP queue 10 ms after OFF (pkts)": lp_at(28.0 - 0.0),
                    "LP queue mean f1 OFF (pkts)": float(
                        lpq[(lpq.index > 19000) & (lpq.index <= 28000)].sum() / 18 / MSS_WIRE
                    ),
                    "f2 first-RTT normal sent on": first["sent_on"],
                    "f2 first-RTT normal dropped": first["dropped"],
                }
            )
            fig11 = {
                "t_ms": t,
                "k": k,
                "lp_t_ms": lpq.index.to_numpy() / 1000.0,
                "lp": lpq.to_numpy() / MSS_WIRE,
            }
        rows.append(row)
    return rows, fig11


def _ps(v: Any) -> int:
    """A normalized duration: an integer of picoseconds, or a string such as "50us"."""
    if isinstance(v, (int, float)):
        return int(v)
    s = str(v).strip()
    for unit, mult in (("ps", 1), ("ns", 10**3), ("us", 10**6), ("ms", 10**9), ("s", 10**12)):
        if s.endswith(unit):
            return round(float(s[: -len(unit)]) * mult)
    raise ValueError(f"cannot read the duration {v!r}")


def _b(v: Any) -> int:
    """A normalized size such as "1500B"."""
    s = str(v).strip()
    return int(s[:-1]) if s.endswith("B") else int(s)


def write_outputs(out_dir: Path, rows: list[dict[str, Any]], fig11: dict[str, Any]) -> None:
    title = "RPO Fig. 2(c)/11 (simulated): per-phase bottleneck utilization; Fig. 11's k"
    write_quantity_table(out_dir, rows, title, key_cols=2)
    if not fig11:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    ax[0].step(fig11["t_ms"], fig11["k"], where="post")
    ax[0].set_ylabel("adaptive k (packets)")
    ax[1].step(fig11["lp_t_ms"], fig11["lp"], where="post", color="tab:orange")
    ax[1].set_ylabel("opportunistic queue (pkts)")
    ax[1].set_xlabel("time (ms); f1 OFF 18-28 and 46-56 ms")
    for a in ax:
        for s, e in ((18, 28), (46, 56)):
            a.axvspan(s, e, color="0.9")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out_dir / "fig11.png", png.getvalue())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: phases.py OUTPUT_FOLDER_OF_THE_REPRO", file=sys.stderr)
        return 2
    out = Path(args[0])
    rows, fig11 = analyse(out)
    write_outputs(out, rows, fig11)
    print((out / "phases.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
