"""RPO Fig. 16-18 as the paper draws them: one quantity against the number of flows.

Run from the repository root after ``dcnsim repro repro/rpo_fig17_18_util`` (full size or
``--reduced``)::

    .venv/bin/python repro/rpo_fig17_18_util/figs.py repro-out/rpo_fig17_18_util

It runs no simulation: it reads the sweep's ``table.csv`` (one row per transport, workload,
number of flows and ON/OFF setting, seeds averaged) and writes ``figs.png`` into that folder
(under a temporary name, renamed when complete; the only file it writes). The sweep's own
``plot.png`` puts all 40 blocks of the table side by side as bars; this figure has one panel
per workload and quantity, the number of flows on the x-axis and one line per transport:
solid with ON/OFF traffic, dashed without.

Rows of panels: Fig. 17 (``downlinks_util_busy``: receiver-link utilization while a flow to
that receiver is active), Fig. 16 (``lp_sent_share``: opportunistic payload over all payload
sent, RPO only) and Fig. 18 (``host_reorder_max_bytes_max``: the largest payload one
receiver held out of order, RPO only).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from dcnsim.results import atomic_write_bytes

WORKLOADS = ["datamining", "websearch", "cachefollower", "webserver"]
ROWS = [
    ("downlinks_util_busy", "receiver-link utilization (busy)", None, 1.0),
    ("lp_sent_share", "opportunistic share of payload (%)", "rpo", 100.0),
    ("host_reorder_max_bytes_max", "max reorder buffer, one receiver (MB)", "rpo", 1e-6),
]


def load(table: Path) -> list[dict[str, str]]:
    with table.open(newline="") as f:
        return list(csv.DictReader(f))


def draw(rows: list[dict[str, str]], out_png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants: list[str] = []
    for r in rows:
        if r["variant"] not in variants:
            variants.append(r["variant"])
    cdfs = [w for w in WORKLOADS if any(r["workload[0].cdf"] == w for r in rows)]
    fig, axes = plt.subplots(
        len(ROWS), len(cdfs), figsize=(3.4 * len(cdfs) + 0.6, 3.0 * len(ROWS)), squeeze=False
    )
    for i, (col, label, only, scale) in enumerate(ROWS):
        for j, cdf in enumerate(cdfs):
            ax = axes[i][j]
            for k, v in enumerate(variants):
                if only is not None and v != only:
                    continue
                for frac, style in (("0.5", "-"), ("0.0", "--")):
                    pts = sorted(
                        (int(r["workload[0].flows"]), float(r[col]) * scale)
                        for r in rows
                        if r["workload[0].cdf"] == cdf
                        and r["variant"] == v
                        and float(r["pause[0].fraction"]) == float(frac)
                        and r[col] not in ("", "nan")
                    )
                    if not pts:
                        continue
                    xs, ys = zip(*pts, strict=True)
                    on_off = "ON/OFF" if frac == "0.5" else "no pauses"
                    ax.plot(
                        xs,
                        ys,
                        style,
                        marker="o",
                        ms=3,
                        color=f"C{k % 10}",
                        label=f"{v}, {on_off}",
                    )
            if i == 0:
                ax.set_title(cdf, fontsize=9)
                ax.set_ylim(0, 1.02)
            else:  # from zero, so that a small spread does not look like a large one
                ax.set_ylim(bottom=0)
            if j == 0:
                ax.set_ylabel(label, fontsize=8)
            if i == len(ROWS) - 1:
                ax.set_xlabel("flows in the run", fontsize=8)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=6, fontsize=7)
    fig.suptitle(
        "RPO Fig. 16-18 vs number of flows (load 0.6; solid: half the flows ON/OFF, dashed: none)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out_png, buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep_dir", type=Path, help="the folder dcnsim repro wrote")
    a = ap.parse_args(argv)
    table = a.sweep_dir / "table.csv"
    if not table.is_file():
        print(f"error: {table} not found: run dcnsim repro first", file=sys.stderr)
        return 2
    draw(load(table), a.sweep_dir / "figs.png")
    print(f"wrote figs.png in {a.sweep_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
