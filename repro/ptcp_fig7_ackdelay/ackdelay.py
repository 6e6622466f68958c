"""PTCP Fig. 7 (simulated): the ACK delay of PTCP and IA-TCP over time, its statistics, and
a check of each protocol's delay law against the receiver state logged with every ACK.

Run from the repository root after ``dcnsim repro repro/ptcp_fig7_ackdelay``::

    .venv/bin/python repro/ptcp_fig7_ackdelay/ackdelay.py repro-out/ptcp_fig7_ackdelay

It runs no simulation. It reads the sweep's ``sweep_summary.csv`` and each run folder's
``ack_delays.parquet`` and ``flows.parquet``, and writes ``ackdelay.csv``, ``ackdelay.md`` and
``fig7.png`` into the output folder (each under a temporary name, then renamed; these are the
only files it writes).

* ACK delay: ``delay_us``, the hold the receiver's control asked for (PTCP: Eq. 10; IA-TCP:
  its ACK interval), of every ACK the receiver made. Statistics over all ACKs and over the
  held ones (``delay_us`` > 0); percentiles are nearest-rank.
* ``hold_us`` (the hold an ACK got, waiting behind an earlier held ACK included) is reported
  beside it as a mean.
* Law checks: PTCP's largest ``|delay_us - alpha ^ p_sum x queuing_us|`` over the ACKs with
  alpha > 0 (and the largest ``delay_us`` where alpha = 0); IA-TCP's largest
  ``|delay_us - max(0, n x w_segs x 12 us - base RTT)|`` over the ACKs after a connection's
  first (12 us: one 1,500 B segment at the receiver's 1 Gbps; the base RTT from
  ``flows.parquet``), and the first ACKs' largest excess over that value (drawn in [0, it]).
* ``state_mean``: the mean, over all ACKs, of the receiver's own measure of congestion behind
  its delay: PTCP's measured one-way queuing delay ``queuing_us``, IA-TCP's connection count
  ``n``.
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

SEG_US = 12.0  # one 1,500 B segment at 1 Gbps
ORDER = ["ptcp", "iatcp"]


def nearest_rank(v: np.ndarray, p: float) -> float:
    """The p-th percentile of ``v`` by nearest rank (``docs/metrics.md``); NaN if empty."""
    if len(v) == 0:
        return math.nan
    s = np.sort(v)
    return float(s[max(1, math.ceil(p / 100.0 * len(s))) - 1])


def runs(out_dir: Path) -> dict[str, Path]:
    with open(out_dir / "sweep_summary.csv", newline="", encoding="utf-8") as f:
        found = {r["variant"]: out_dir / r["run"] for r in csv.DictReader(f)}
    return {v: found[v] for v in ORDER if v in found}


def law_error(variant: str, t: Any, base_rtt_us: float) -> tuple[float, float]:
    """(largest deviation of ``delay_us`` from the protocol's law, largest first-ACK excess
    (IA-TCP) or largest delay at alpha = 0 (PTCP)), us."""
    d = t["delay_us"].to_numpy()
    if variant == "ptcp":
        a, p, q = (t[c].to_numpy() for c in ("alpha", "p_sum", "queuing_us"))
        on = a > 0
        err = float(np.max(np.abs(d[on] - a[on] ** p[on] * q[on]), initial=0.0))
        return err, float(np.max(d[~on], initial=0.0))
    n, w = t["n"].to_numpy(), t["w_segs"].to_numpy()
    law = np.maximum(0.0, n * w * SEG_US - base_rtt_us)
    first = ~t.duplicated("flow").to_numpy()
    err = float(np.max(np.abs(d[~first] - law[~first]), initial=0.0))
    return err, float(np.max(d[first] - law[first], initial=0.0))


def analyse(out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    import pandas as pd

    rows: list[dict[str, Any]] = []
    series: dict[str, Any] = {}
    for variant, run in runs(out_dir).items():
        t = pd.read_parquet(run / "ack_delays.parquet")
        flows = pd.read_parquet(run / "flows.parquet")
        base_rtt_us = float(flows["base_rtt_us"].iloc[0])
        starts = sorted(set(flows["round_start_us"].tolist()))
        d = t["delay_us"].to_numpy()
        held = d[d > 0]
        err, extra = law_error(variant, t, base_rtt_us)
        state = "queuing_us" if variant == "ptcp" else "n"
        rows.append(
            {
                "variant": variant,
                "acks": len(d),
                "held": len(held),
                "mean_us": float(d.mean()),
                "p50_us": nearest_rank(d, 50),
                "p99_us": nearest_rank(d, 99),
                "held_mean_us": float(held.mean()) if len(held) else math.nan,
                "held_p50_us": nearest_rank(held, 50),
                "held_p99_us": nearest_rank(held, 99),
                "hold_mean_us": float(t["hold_us"].mean()),
                "state": state,
                "state_mean": float(t[state].mean()),
                "law_max_err_us": err,
                "law_extra_us": extra,
            }
        )
        series[variant] = (t["t_us"].to_numpy(), d, starts)
        rnd = np.searchsorted(np.asarray(starts), t["t_us"].to_numpy(), side="right") - 1
        rows[-1]["round_means"] = [
            float(d[rnd == i].mean()) if np.any(rnd == i) else math.nan for i in range(len(starts))
        ]
        rows[-1]["round_state"] = [
            float(t[state].to_numpy()[rnd == i].mean()) if np.any(rnd == i) else math.nan
            for i in range(len(starts))
        ]
        if variant == "ptcp":
            rows[-1]["round_alpha"] = [
                float(t["alpha"].to_numpy()[rnd == i].mean()) if np.any(rnd == i) else math.nan
                for i in range(len(starts))
            ]
    ref = next((r for r in rows if r["variant"] == "ptcp"), None)
    for r in rows:
        for k in ("mean_us", "p50_us", "p99_us", "held_mean_us"):
            r[f"ratio_{k}"] = r[k] / ref[k] if ref and ref[k] > 0 else math.nan
    return rows, series


COLUMNS = [
    "variant",
    "acks",
    "held",
    "mean_us",
    "p50_us",
    "p99_us",
    "held_mean_us",
    "held_p50_us",
    "held_p99_us",
    "hold_mean_us",
    "ratio_mean_us",
    "ratio_p50_us",
    "ratio_p99_us",
    "ratio_held_mean_us",
    "state",
    "state_mean",
    "law_max_err_us",
    "law_extra_us",
]


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def write_tables(out_dir: Path, rows: list[dict[str, Any]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([fmt(r[c]) for c in COLUMNS])
    atomic_write_bytes(out_dir / "ackdelay.csv", buf.getvalue().encode())
    md = [
        "| variant | ACKs | held | mean (us) | p50 | p99 | held: mean | p50 | p99 "
        "| x PTCP: mean | p50 | p99 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['variant']} | {r['acks']} | {r['held']} | {r['mean_us']:.1f} | "
            f"{r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['held_mean_us']:.1f} | "
            f"{r['held_p50_us']:.1f} | {r['held_p99_us']:.1f} | {r['ratio_mean_us']:.2f} | "
            f"{r['ratio_p50_us']:.2f} | {r['ratio_p99_us']:.2f} |"
        )
    md.append("")
    md.append(
        "| variant | receiver state behind the delay (mean) | law: largest error (us) "
        "| first ACK / alpha = 0 (us) |"
    )
    md.append("|---|---|---|---|")
    for r in rows:
        md.append(
            f"| {r['variant']} | {r['state']} = {r['state_mean']:.1f} | "
            f"{r['law_max_err_us']:.2e} | {r['law_extra_us']:.2e} |"
        )
    ref = next((r for r in rows if r["variant"] == "ptcp"), None)
    if ref is not None:
        md.append("")
        md.append("Mean ACK delay per round (us; every ACK made during the round):")
        md.append("")
        others = [r for r in rows if r is not ref]
        head = "| round | ptcp | ptcp alpha | ptcp queuing_us | " + " | ".join(
            f"{r['variant']} | {r['variant']} {r['state']} | {r['variant']} / ptcp" for r in others
        )
        md.append(head + " |")
        md.append("|---" * (4 + 3 * len(others)) + "|")
        for i, m in enumerate(ref["round_means"]):
            cells = [
                str(i + 1),
                f"{m:.1f}",
                f"{ref['round_alpha'][i]:.3f}",
                f"{ref['round_state'][i]:.1f}",
            ]
            for r in others:
                o = r["round_means"][i] if i < len(r["round_means"]) else math.nan
                st = r["round_state"][i] if i < len(r["round_state"]) else math.nan
                cells += [f"{o:.1f}", f"{st:.1f}", f"{o / m:.2f}" if m > 0 else "nan"]
            md.append("| " + " | ".join(cells) + " |")
    atomic_write_bytes(out_dir / "ackdelay.md", ("\n".join(md) + "\n").encode())


def plot(
    out_dir: Path, rows: list[dict[str, Any]], series: dict[str, Any], window_ms: float = 40.0
) -> None:
    """Fig. 7: the ACK delay over the first ``window_ms`` of the first and the last round
    (mean per 0.5 ms bin), and the mean ACK delay of every round, both protocols."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.6))
    for variant, (t, d, starts) in series.items():
        for ax, i in ((axes[0], 0), (axes[1], len(starts) - 1)):
            s = starts[i]
            x = (t - s) / 1000.0
            end = (starts[i + 1] - s) / 1000.0 if i + 1 < len(starts) else math.inf
            m = (x >= 0) & (x < min(window_ms, end))
            bins = np.floor(x[m] / 0.5).astype(int)
            if len(bins) == 0:
                continue
            sums = np.bincount(bins, weights=d[m])
            counts = np.bincount(bins)
            ok = counts > 0
            centers = (np.arange(len(sums))[ok] + 0.5) * 0.5
            ax.plot(centers, sums[ok] / counts[ok], label=variant, lw=1.2)
            ax.set_title(f"round {i + 1}: ACK delay over time")
            ax.set_xlabel("time since the round's start (ms)")
    for r in rows:
        axes[2].plot(
            range(1, len(r["round_means"]) + 1), r["round_means"], marker="o", label=r["variant"]
        )
    axes[2].set_title("mean ACK delay per round")
    axes[2].set_xlabel("round")
    axes[0].set_ylabel("ACK delay (us), mean per 0.5 ms")
    axes[2].set_ylabel("ACK delay (us)")
    axes[0].legend()
    fig.suptitle("PTCP Fig. 7: ACK delay, 96 senders x 64 KB to one receiver (1 Gbps)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out_dir / "fig7.png", buf.getvalue())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out_dir = Path(argv[1])
    rows, series = analyse(out_dir)
    write_tables(out_dir, rows)
    plot(out_dir, rows, series)
    print((out_dir / "ackdelay.md").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
