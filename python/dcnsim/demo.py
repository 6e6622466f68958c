"""The demo: DCTCP vs TCP on a 144-host leaf-spine under web-search traffic at load 0.5.

The scenario is ``dcnsim/scenarios/demo.toml`` (shipped with the package); the demo runs it
as a two-run sweep over ``transport.protocol``, prints a comparison table and writes the
comparison plots (``<out>/plots/comparison.png``: FCT CDF of both and FCT by size bucket;
``<out>/plots/headline.png``).
"""

from __future__ import annotations

import math
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from dcnsim.scenario import parse_text
from dcnsim.sweep import SweepSpec, run_sweep

PROTOCOLS = ["dctcp", "tcp"]

COLUMNS = [
    ("protocol", "protocol", None),
    ("flows", "flows_total", None),
    ("avg FCT us", "avg_fct_us", 1),
    ("small avg us", "small_avg_fct_us", 1),
    ("small p99 us", "small_p99_fct_us", 1),
    ("large avg us", "large_avg_fct_us", 1),
    ("p99 slowdown", "slowdown_p99", 2),
    ("drops", "drops_total", None),
]


def demo_scenario() -> tuple[dict[str, Any], Path]:
    """The demo scenario as a dict, and the folder it lives in."""
    ref = resources.files("dcnsim") / "scenarios" / "demo.toml"
    text = ref.read_text(encoding="utf-8")
    return parse_text(text, "toml", "demo.toml"), Path(str(ref)).parent


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """A fixed-width text table of the headline metrics, one line per run."""
    cells = [[h for h, _, _ in COLUMNS]]
    for r in rows:
        line = []
        for _, key, digits in COLUMNS:
            v = r.get("transport.protocol") if key == "protocol" else r.get(key)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                line.append("n/a")
            elif digits is not None:
                line.append(f"{float(v):,.{digits}f}")
            else:
                line.append(f"{v:,}" if isinstance(v, int) else str(v))
        cells.append(line)
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    out = []
    for n, c in enumerate(cells):
        padded = [x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(c, widths))]
        out.append("  ".join(padded))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def run_demo(
    out_dir: str | os.PathLike[str] = "demo-out", *, workers: int | None = None, quiet: bool = False
) -> int:
    """Run the demo into ``out_dir``; return the exit status."""
    from dcnsim.plot import plot_sweep

    base, base_dir = demo_scenario()
    spec = SweepSpec(
        base=base, base_dir=base_dir, grid={"transport.protocol": PROTOCOLS}, origin="demo"
    )
    log = None if quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    rep = run_sweep(spec, out_dir, workers=workers, force=True, log=log)
    if rep.failed:
        from dcnsim.cli import _report_failures

        return _report_failures(rep)
    files = plot_sweep(rep.out_dir, rep.out_dir / "plots")
    if not quiet:
        print(comparison_table(rep.rows))
        print(f"results in {rep.out_dir}; plots: " + ", ".join(str(f) for f in files))
    return 0
