"""Reduced variants of repro/ptcp_fig3_background (PTCP §III, Fig. 3) and
repro/ptcp_fig8_9_incast_background (PTCP §V-B, Fig. 8/9): N-to-1 incast at 1 Gbps with
background traffic into the same receiver.

Fig. 3 (N = 8 and 48 senders x 64 KB, 3 barrier rounds, 0, 1 or 10 endless background flows):
- background flows lengthen every protocol's rounds at N = 8, more with more flows;
- ICTCP shares the receiver's link fairly among all connections, so k background flows
  lengthen a round by about k x 65.76 KB / 1 Gbps (k flows' worth of link time): the paper's
  "about 5 ms" is ten flows' worth;
- with ten background flows at N = 48, ICTCP and DCTCP meet retransmission timeouts that
  they do not meet without background, and PTCP meets none and finishes its rounds first.

Fig. 8 (web search background at load 0.5, 300 flows, 10 queries of 32 x 64 KB, seeds 1-3):
PTCP's small flows finish faster than DCTCP's on average (each seed) and at the 99th
percentile (mean over the seeds), and DCTCP meets more timeouts (a background flow's standing
queue leaves too little buffer for a query's first round trip).
"""

from __future__ import annotations

from pathlib import Path

from dcnsim.repro import load_repro, run_repro
from dcnsim.sweep import run_sweep

REPRO = Path(__file__).resolve().parents[2] / "repro"
# One 64 KB flow's worth of link time: 64,000 B of payload in 44 segments of 40 B header.
FLOW_US = (64_000 + 44 * 40) * 8 / 1e3


def test_ptcp_fig3_reduced_background_delays_ictcp_by_its_fair_share(tmp_path: Path) -> None:
    name = "ptcp_fig3_background"
    res = run_repro(REPRO / name, tmp_path / name, reduced=True, workers=1)
    assert not res.report.failed, [f.error for f in res.report.failed]
    t = {(r["variant"], int(r["workload[0].senders"])): r for r in res.table}
    assert len(t) == 18
    for p in ("ictcp", "dctcp", "ptcp"):
        q = [t[(v, 8)]["round_qct_avg_us"] for v in (p, f"{p}_bg1", f"{p}_bg10")]
        f = [t[(v, 8)]["small_avg_fct_us"] for v in (p, f"{p}_bg1", f"{p}_bg10")]
        assert q[0] < q[1] < q[2], (p, q)
        assert f[0] < f[1] < f[2], (p, f)
    base = t[("ictcp", 8)]["round_qct_avg_us"]
    for k in (1, 10):
        added = t[(f"ictcp_bg{k}", 8)]["round_qct_avg_us"] - base
        # Measured: 0.97x (k = 1) and 0.99x (k = 10) the fair-share increment.
        assert 0.5 * k * FLOW_US <= added <= 2 * k * FLOW_US, (k, added)
    for p in ("ictcp", "dctcp"):
        assert t[(p, 48)]["timeouts_total"] == 0, p
        assert t[(f"{p}_bg10", 48)]["timeouts_total"] > 0, p
    ptcp = t[("ptcp_bg10", 48)]
    assert ptcp["timeouts_total"] == 0
    for p in ("ictcp_bg10", "dctcp_bg10"):
        assert ptcp["round_qct_avg_us"] < t[(p, 48)]["round_qct_avg_us"], p


def test_ptcp_fig8_reduced_ptcp_small_flows_beat_dctcp_under_incast_with_background(
    tmp_path: Path,
) -> None:
    rep = load_repro(REPRO / "ptcp_fig8_9_incast_background", reduced=True)
    rep.sweep.grid["seed"] = [1, 2, 3]
    keep = ("ws_ptcp", "ws_dctcp")
    rep.sweep.variants = {k: v for k, v in rep.sweep.variants.items() if k in keep}
    report = run_sweep(rep.sweep, tmp_path / "out", workers=1)
    assert not report.failed, [f.error for f in report.failed]
    by = {(r["variant"], int(r["seed"])): r for r in report.rows}
    assert len(by) == 6
    for seed in (1, 2, 3):
        p, d = by[("ws_ptcp", seed)], by[("ws_dctcp", seed)]
        assert p["flows_unfinished"] == 0 and d["flows_unfinished"] == 0, seed
        assert p["small_avg_fct_us"] < d["small_avg_fct_us"], seed
        assert p["timeouts_total"] < d["timeouts_total"], seed
    # The 99th percentile moves only in a seed where more than 1% of the small flows meet a
    # timeout (seed 2: DCTCP's p99 is 207 ms); so it is compared on the mean over the seeds.
    p99 = {v: sum(by[(v, s)]["small_p99_fct_us"] for s in (1, 2, 3)) for v in keep}
    assert p99["ws_ptcp"] < p99["ws_dctcp"], p99
