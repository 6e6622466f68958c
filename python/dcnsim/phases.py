"""Per-phase summaries of one sampled switch port, for the reproduction folders' scripts.

A "phase" is a named interval of a run, ``(name, start_ms, end_ms)``. The utilization of a
phase is the mean of the port's ``link.parquet`` utilization samples whose whole sampling
interval lies inside it (a sample at ``t_us`` covers ``(t_us - dt, t_us]``, ``dt`` the
smallest spacing of the port's samples). The quantity table is one column per variant and
one row per quantity, written as ``phases.csv`` (one row per variant) and ``phases.md``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.results import atomic_write_bytes

__all__ = ["fmt", "phase_utilization", "write_quantity_table"]


def phase_utilization(
    run: Path, port: int, phases: Sequence[tuple[str, float, float]]
) -> dict[str, float]:
    """Mean utilization of ``port`` in each phase of ``run`` (NaN for a phase without a
    whole sample)."""
    import pandas as pd

    link = pd.read_parquet(run / "link.parquet")
    link = link[link["port"] == port].sort_values("t_us")
    end = link["t_us"].to_numpy()
    dt = float(np.min(np.diff(end))) if len(end) > 1 else math.nan
    util = link["utilization"].to_numpy()
    out = {}
    for name, a, b in phases:
        sel = (end - dt >= a * 1000 - 1e-6) & (end <= b * 1000 + 1e-6)
        out[name] = float(util[sel].mean()) if sel.any() else math.nan
    return out


def fmt(v: Any) -> str:
    """A table cell: floats with three decimals (``nan`` for NaN), anything else as text."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def write_quantity_table(
    out_dir: Path, rows: list[dict[str, Any]], title: str, key_cols: int = 1
) -> list[str]:
    """Write ``rows`` (one per variant, ``"variant"`` among their first ``key_cols`` keys) to
    ``out_dir/phases.csv`` and, turned to one column per variant, to ``out_dir/phases.md``
    under ``title``; a quantity a variant lacks is left empty. Returns the Markdown lines."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", restval="")
    w.writeheader()
    for r in rows:
        w.writerow({k: fmt(v) for k, v in r.items()})
    atomic_write_bytes(out_dir / "phases.csv", buf.getvalue().encode())
    md = [f"# {title}", ""]
    md.append("| quantity | " + " | ".join(r["variant"] for r in rows) + " |")
    md.append("|---" * (len(rows) + 1) + "|")
    for c in cols[key_cols:]:
        md.append(f"| {c} | " + " | ".join(fmt(r.get(c, "")) for r in rows) + " |")
    atomic_write_bytes(out_dir / "phases.md", ("\n".join(md) + "\n").encode())
    return md
