"""Reduced variant of repro/ptcp_fig11_12_no_incast (PTCP §V-C, Fig. 10-12: small flows
sharing a receiver's link with a long background flow, no incast).

The claims seen to hold at reduced size on seeds 1-3 are asserted: on the data mining
workload PTCP's small flows finish faster than M21TCP's, on average and at the 99th
percentile (M21TCP's small flows meet retransmission timeouts behind the background flow),
and faster than DCTCP's on average (the paper's direction: PTCP's receiver-side window and
ACK hold keep the background flow's queue from the small flows). The paper's claims against
ICTCP and IA-TCP do not all hold in our model; the folder's README gives the measured gaps.
"""

from __future__ import annotations

from pathlib import Path

from dcnsim.repro import load_repro
from dcnsim.sweep import run_sweep

REPRO = Path(__file__).resolve().parents[2] / "repro"


def test_ptcp_fig11_12_reduced_datamining_small_flows_beat_m21tcp_and_dctcp(tmp_path: Path) -> None:
    rep = load_repro(REPRO / "ptcp_fig11_12_no_incast", reduced=True)
    rep.sweep.grid["workload[1].cdf"] = ["datamining"]
    rep.sweep.grid["seed"] = [1, 2, 3]
    keep = ("ptcp", "m21tcp", "dctcp")
    rep.sweep.variants = {k: v for k, v in rep.sweep.variants.items() if k in keep}
    report = run_sweep(rep.sweep, tmp_path / "out", workers=2)
    assert not report.failed, [f.error for f in report.failed]
    by = {(r["variant"], int(r["seed"])): r for r in report.rows}
    assert len(by) == 9
    for seed in (1, 2, 3):
        p, m = by[("ptcp", seed)], by[("m21tcp", seed)]
        assert p["flows_unfinished"] == 0 and m["flows_unfinished"] == 0, seed
        assert p["small_avg_fct_us"] < m["small_avg_fct_us"], seed
        assert p["small_p99_fct_us"] < m["small_p99_fct_us"], seed
        d = by[("dctcp", seed)]
        assert d["flows_unfinished"] == 0, seed
        assert p["small_avg_fct_us"] < d["small_avg_fct_us"], seed
