"""Reduced variants of repro/aeolus_xpass_fig11_13 (Aeolus §V-B, Fig. 11/13: ExpressPass vs
ExpressPass + Aeolus) and repro/aeolus_tables6_7 (§V-E, Tables VI-VII: Aeolus vs the
priority-queueing alternative).

What follows from the mechanism and is asserted (a 16-host 100G leaf-spine with the paper's
link delays, web server and cache follower workloads):

* plain ExpressPass sends no data before a credit, so no small flow finishes within its first
  RTT (FCT < ideal FCT + base RTT / 2 needs data in the first RTT); with Aeolus most do;
* hence Aeolus lowers the small-flow average and median FCT;
* selective dropping only ever drops *unscheduled* packets and keeps switch queues at a few
  KB, so neither variant overflows a buffer, plain ExpressPass has no selective drops at all,
  and no flow of either needs a timeout (Aeolus recovers every loss on credits).
"""

from __future__ import annotations

from pathlib import Path

from dcnsim.repro import run_repro

REPO = Path(__file__).resolve().parents[2]


def test_aeolus_xpass_reduced_small_flows_finish_in_the_first_rtt(tmp_path: Path) -> None:
    name = "aeolus_xpass_fig11_13"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=2)
    assert not res.report.failed, [f.error for f in res.report.failed]
    assert (tmp_path / name / "table.md").is_file() and (tmp_path / name / "plot.png").is_file()
    runs = {(r["variant"], r["workload[0].cdf"]): r for r in res.report.rows}
    assert len(runs) == 4
    for (variant, cdf), r in runs.items():
        assert r["flows_unfinished"] == 0, (variant, cdf)
        assert r.get("drops_buffer_overflow", 0) == 0, (variant, cdf)
        assert r["flows_with_timeout"] == 0, (variant, cdf)
    for cdf in ("webserver_xpass", "cachefollower_xpass"):
        xp, xa = runs[("xpass", cdf)], runs[("xpass_aeolus", cdf)]
        assert xp["small_first_rtt_frac"] == 0.0, cdf
        assert xa["small_first_rtt_frac"] > 0.6, (cdf, xa["small_first_rtt_frac"])
        assert xa["small_avg_fct_us"] < xp["small_avg_fct_us"], cdf
        assert xa["small_p50_fct_us"] < xp["small_p50_fct_us"], cdf
        assert xp.get("drops_selective_drop", 0) == 0
        assert xa["drops_selective_drop"] > 0, "unscheduled bursts meet in the 2:1 leaf uplinks"


def test_aeolus_tables6_7_reduced_priority_queueing_needs_the_timeout(tmp_path: Path) -> None:
    """repro/aeolus_tables6_7 (Aeolus §V-E): with unscheduled packets in a low-priority class
    instead of selective dropping, they fill the shared buffers: packets overflow, and a flow
    whose loss only the timeout reveals waits the whole 10 ms RTO (max FCT >= 10 ms), while
    Aeolus overflows nothing and needs no timeout. In the 20-to-1 incast the overflow hits
    scheduled packets too; Aeolus finishes the incast within 10 ms, priority queueing not."""
    name = "aeolus_tables6_7"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=2)
    assert not res.report.failed, [f.error for f in res.report.failed]
    runs = {r["variant"]: r for r in res.report.rows}
    for v, r in runs.items():
        assert r["flows_unfinished"] == 0, v
    for v in ("t6_aeolus", "t7_aeolus"):
        assert runs[v].get("drops_buffer_overflow", 0) == 0, v
        assert runs[v]["flows_with_timeout"] == 0, v
        assert runs[v]["max_fct_us"] < 10_000, v
    for v in ("t6_pq_rto10ms", "t7_pq"):
        assert runs[v]["drops_buffer_overflow"] > 0, v
        assert runs[v]["flows_with_timeout"] > 0, v
        assert runs[v]["max_fct_us"] >= 10_000, v
    assert runs["t6_pq_rto20us"]["max_fct_us"] < runs["t6_pq_rto10ms"]["max_fct_us"]
    assert runs["t7_aeolus"]["avg_fct_us"] < runs["t7_pq"]["avg_fct_us"]


def test_aeolus_fig3_reduced_idealised_first_rtt_finishes_small_flows_at_once(
    tmp_path: Path,
) -> None:
    """Aeolus Fig. 3: with first-RTT packets that use only idle capacity (lowest class,
    pushed out by credited data) most small flows finish in their first RTT, none does under
    ExpressPass, and the median small flow is about 3x faster (0.5 vs 1.5 RTT)."""
    name = "aeolus_fig3_hypothetical_xpass"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=2)
    assert not res.report.failed, [f.error for f in res.report.failed]
    runs = {(r["variant"], r["workload[0].cdf"]): r for r in res.report.rows}
    for cdf in ("webserver_xpass", "cachefollower_xpass"):
        xp, ideal = runs[("xpass", cdf)], runs[("xpass_ideal", cdf)]
        assert xp["flows_unfinished"] == 0 and ideal["flows_unfinished"] == 0
        assert xp["small_first_rtt_frac"] == 0.0
        assert ideal["small_first_rtt_frac"] > 0.9, (cdf, ideal["small_first_rtt_frac"])
        assert ideal["small_p50_fct_us"] * 2.5 < xp["small_p50_fct_us"], cdf
        assert ideal["drops_pushout"] > 0, "credited data displaced first-RTT packets"


def test_aeolus_fig10_14_reduced_testbed_incast(tmp_path: Path) -> None:
    """The §V-A testbed's 7-to-1 incast simulated (10G, 14 us RTT, 200 KB ports). Fig. 10:
    Aeolus' first-RTT packets lower ExpressPass's median message completion time. Fig. 14's
    Homa losses do not occur here: seven senders' one-BDP unscheduled bursts (7 x 17.5 KB)
    fit in the port, so Homa drops nothing and nothing times out
    (repro/aeolus_fig10_14_testbed_incast/README.md)."""
    name = "aeolus_fig10_14_testbed_incast"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=2)
    assert not res.report.failed, [f.error for f in res.report.failed]
    runs = {(r["variant"], r["workload[0].size"]): r for r in res.report.rows}
    for size in ("30KB", "50KB"):
        for v in ("xpass", "xpass_aeolus", "homa", "homa_aeolus"):
            assert runs[(v, size)]["flows_unfinished"] == 0
            assert runs[(v, size)]["flows_with_timeout"] == 0, (v, size)
        assert runs[("xpass_aeolus", size)]["p50_fct_us"] < runs[("xpass", size)]["p50_fct_us"]
        assert runs[("homa", size)]["drops_total"] == 0
        assert runs[("homa_aeolus", size)]["drops_selective_drop"] > 0
