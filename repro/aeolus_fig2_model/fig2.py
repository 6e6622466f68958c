"""Aeolus Fig. 2: the share of flows (a) and bytes (b) that fit in the first RTT, vs link speed.

Run from the repository root: ``.venv/bin/python repro/aeolus_fig2_model/fig2.py``. Writes
``results/table.csv``, ``results/table.md`` and ``results/plot.png`` next to this file (each
under a temporary name, renamed when complete). The numbers come from
:func:`dcnsim.models.first_rtt.first_rtt`; no simulation is run.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from dcnsim.models.first_rtt import first_rtt
from dcnsim.results import atomic_write_bytes

HERE = Path(__file__).resolve().parent
WORKLOADS = ["webserver", "cachefollower", "websearch", "datamining"]
RATES_GBPS = [10, 25, 40, 100, 200, 400]
RTTS_US = [4.5, 10.0, 52.0]
COLUMNS = ["rtt_us", "cdf", "rate_gbps", "rtt_bytes", "mean_bytes", "flows", "bytes"]


def rows() -> list[dict[str, float | str]]:
    """Every (RTT, workload, rate) point of the table."""
    out: list[dict[str, float | str]] = []
    for rtt in RTTS_US:
        for cdf in WORKLOADS:
            for rate in RATES_GBPS:
                f = first_rtt(cdf, rate, rtt)
                out.append({k: getattr(f, k) for k in COLUMNS})
    return out


def _fmt(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v:.4g}"


def main() -> None:
    table = rows()
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in table:
        w.writerow({k: _fmt(r[k]) for k in COLUMNS})
    atomic_write_bytes(out / "table.csv", buf.getvalue().encode())

    md = ["# Aeolus Fig. 2 (model): flows and bytes that fit in the first RTT", ""]
    for rtt in RTTS_US:
        md += [f"## RTT {rtt:g} us: share of flows (share of bytes)", ""]
        md += ["| workload | " + " | ".join(f"{r} Gbps" for r in RATES_GBPS) + " |"]
        md += ["|---|" + "---|" * len(RATES_GBPS)]
        for cdf in WORKLOADS:
            cells = [
                f"{r['flows']:.1%} ({r['bytes']:.1%})"
                for r in table
                if r["rtt_us"] == rtt and r["cdf"] == cdf
            ]
            md += [f"| {cdf} | " + " | ".join(cells) + " |"]
        md += [""]
    atomic_write_bytes(out / "table.md", "\n".join(md).encode())

    fig, axes = plt.subplots(2, len(RTTS_US), figsize=(4 * len(RTTS_US), 6.5), sharey=True)
    for j, rtt in enumerate(RTTS_US):
        for i, (key, label) in enumerate([("flows", "flows"), ("bytes", "bytes")]):
            ax = axes[i][j]
            for cdf in WORKLOADS:
                pts = [r for r in table if r["rtt_us"] == rtt and r["cdf"] == cdf]
                ax.plot([r["rate_gbps"] for r in pts], [r[key] for r in pts], "o-", label=cdf)
            ax.set_xscale("log")
            ax.set_xticks(RATES_GBPS, [str(r) for r in RATES_GBPS])
            ax.set_ylim(0, 1.02)
            ax.set_title(f"({'ab'[i]}) {label} that fit in one RTT, RTT {rtt:g} us", fontsize=9)
            ax.set_xlabel("link speed (Gbps)")
            ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("fraction of flows")
    axes[1][0].set_ylabel("fraction of bytes (B / A, capped at 1)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    buf2 = io.BytesIO()
    fig.savefig(buf2, format="png", dpi=110)
    atomic_write_bytes(out / "plot.png", buf2.getvalue())


if __name__ == "__main__":
    main()
