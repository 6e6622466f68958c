"""RPO Fig. 8: the analytic model's utilisation and FCT gains (RPO §V, Eq. 1-6).

Run from the repository root: ``.venv/bin/python repro/rpo_fig8_model/fig8.py``. Writes
``results/table.csv``, ``results/table.md`` and ``results/plot.png`` next to this file (each
under a temporary name, renamed when complete). The numbers come from
:func:`dcnsim.models.rpo.fig8_rows`; no simulation is run.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from dcnsim.models.rpo import fig8_rows
from dcnsim.results import atomic_write_bytes

HERE = Path(__file__).resolve().parent
COLUMNS = ["panel", "s_packets", "c_packets", "r_packets", "r_over_c", "tc_over_ti"]
COLUMNS += ["t_f", "t_1", "t_2", "t_i", "u_gain", "fct_gain"]


def _fmt(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v:.4g}"


def main() -> None:
    rows = fig8_rows()
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(r[k]) for k in COLUMNS})
    atomic_write_bytes(out / "table.csv", buf.getvalue().encode())

    md = ["# RPO Fig. 8 (model, Eq. 1-6): C = 41.67 packets per round (10 Gbps x 50 us)", ""]
    md += ["## (a) utilisation gain vs R/C (N = 1, T_c = 0)", ""]
    sizes_a = sorted({r["s_packets"] for r in rows if r["panel"] == "a"})
    md.append("| R/C | " + " | ".join(f"S = {s} pkts" for s in sizes_a) + " |")
    md.append("|---" * (len(sizes_a) + 1) + "|")
    for x in sorted({r["r_over_c"] for r in rows if r["panel"] == "a"}):
        vals = [r["u_gain"] for s in sizes_a for r in rows if r["panel"] == "a"]
        vals = [
            r["u_gain"]
            for s in sizes_a
            for r in rows
            if r["panel"] == "a" and r["s_packets"] == s and r["r_over_c"] == x
        ]
        md.append(f"| {x:.2f} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
    md += ["", "## (b) FCT gain vs T_c/T_i (R = 20 packets per round, N = 1)", ""]
    sizes_b = sorted({r["s_packets"] for r in rows if r["panel"] == "b"})
    md.append("| T_c/T_i | " + " | ".join(f"S = {s} pkts" for s in sizes_b) + " |")
    md.append("|---" * (len(sizes_b) + 1) + "|")
    for x in sorted({r["tc_over_ti"] for r in rows if r["panel"] == "b"}):
        vals = [
            r["fct_gain"]
            for s in sizes_b
            for r in rows
            if r["panel"] == "b" and r["s_packets"] == s and r["tc_over_ti"] == x
        ]
        md.append(f"| {x:.1f} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
    atomic_write_bytes(out / "table.md", ("\n".join(md) + "\n").encode())

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for s in sizes_a:
        pts = [
            (r["r_over_c"], r["u_gain"]) for r in rows if r["panel"] == "a" and r["s_packets"] == s
        ]
        ax1.plot(*zip(*pts), marker="o", ms=3, label=f"S = {s} pkts")
    ax1.set_xlabel("R / C")
    ax1.set_ylabel("utilisation gain U_gain = T_2 / T_1")
    ax1.set_yscale("log")
    ax1.set_title("(a) N = 1, T_c = 0")
    ax1.legend()
    for s in sizes_b:
        pts = [
            (r["tc_over_ti"], r["fct_gain"])
            for r in rows
            if r["panel"] == "b" and r["s_packets"] == s
        ]
        ax2.plot(*zip(*pts), marker="o", ms=3, label=f"S = {s} pkts")
    ax2.set_xlabel("T_c / T_i")
    ax2.set_ylabel("FCT gain (T_2 - T_i) / (T_1 - T_i)")
    ax2.set_title("(b) R = 20 packets per round")
    ax2.legend()
    fig.suptitle("RPO Fig. 8 (model): C = 10 Gbps x 50 us = 41.67 packets per round")
    fig.tight_layout()
    buf2 = io.BytesIO()
    fig.savefig(buf2, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out / "plot.png", buf2.getvalue())


if __name__ == "__main__":
    main()
