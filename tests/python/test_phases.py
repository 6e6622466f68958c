"""dcnsim.phases: per-phase utilization of a sampled port and the quantity table, against
hand-computed values on a synthetic link table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dcnsim.phases import phase_utilization, write_quantity_table


def test_phase_utilization_averages_only_samples_wholly_inside_each_phase(tmp_path: Path) -> None:
    # Port 3 sampled every 500 us (a sample at t covers (t - 500 us, t]); port 4 is noise.
    t = [500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]
    u = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    rows = [{"t_us": a, "port": 3, "utilization": b} for a, b in zip(t, u)]
    rows += [{"t_us": a, "port": 4, "utilization": 1.0} for a in t]
    pd.DataFrame(rows).to_parquet(tmp_path / "link.parquet")
    phases = [("early", 0.0, 1.0), ("mid", 1.0, 2.25), ("late", 2.0, 3.0), ("none", 3.0, 3.2)]
    got = phase_utilization(tmp_path, 3, phases)
    assert math.isclose(got["early"], 0.15)  # samples ending at 500 and 1000 us
    assert math.isclose(got["mid"], 0.35)  # 1500 and 2000; the one ending at 2500 sticks out
    assert math.isclose(got["late"], 0.55)  # 2500 and 3000
    assert math.isnan(got["none"])


def test_quantity_table_column_per_variant_missing_cells_empty(tmp_path: Path) -> None:
    rows = [{"variant": "a", "util": 0.5, "k": 3}, {"variant": "b", "util": math.nan}]
    md = write_quantity_table(tmp_path, rows, "T")
    assert md == [
        "# T",
        "",
        "| quantity | a | b |",
        "|---|---|---|",
        "| util | 0.500 | nan |",
        "| k | 3 |  |",
    ]
    assert (tmp_path / "phases.md").read_text() == "\n".join(md) + "\n"
    assert (tmp_path / "phases.csv").read_text() == "variant,util,k\na,0.500,3\nb,nan,\n"
