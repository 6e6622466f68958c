"""Reduced variants of the Aeolus reproductions on NDP and of the heavy-incast and probe
experiments: repro/aeolus_ndp_fig17 (§V-D, Fig. 17), repro/aeolus_fig20_incast (§V-E,
Fig. 20) and repro/aeolus_fig22_probe (§V-E, Fig. 22).

What is asserted follows from the mechanisms or is the paper's qualitative claim where our
model reproduces it (the READMEs give the full-size numbers and the gaps).
"""

from __future__ import annotations

from pathlib import Path

from dcnsim.repro import run_repro

REPO = Path(__file__).resolve().parents[2]


def _run(name: str, tmp_path: Path) -> dict[tuple[str, object], dict]:
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=1)
    assert not res.report.failed, [f.error for f in res.report.failed]
    assert (tmp_path / name / "table.md").is_file()
    rows = res.report.rows
    return {(r["variant"], r.get("workload[0].cdf", r.get("workload[0].senders"))): r for r in rows}


def test_aeolus_ndp_fig17_reduced_aeolus_replaces_trimming(tmp_path: Path) -> None:
    """NDP trims and never drops selectively; NDP+Aeolus runs on switches that do not trim, so
    it never trims and loses first-window packets to selective dropping instead, recovers all
    of them (every flow finishes) and still finishes many small flows in their first RTT
    (the first window goes out before any PULL). A larger threshold admits more of the first
    window, so it drops fewer packets."""
    runs = _run("aeolus_ndp_fig17", tmp_path)
    assert len(runs) == 6
    for (variant, cdf), r in runs.items():
        assert r["flows_unfinished"] == 0, (variant, cdf)
        assert r["small_first_rtt_frac"] > 0.25, (variant, cdf, r["small_first_rtt_frac"])
    for cdf in ("webserver", "websearch"):
        ndp, a6, a36 = (runs[(v, cdf)] for v in ("ndp", "ndp_aeolus", "ndp_aeolus_36kb"))
        assert ndp["trims"] > 0 and ndp.get("drops_selective_drop", 0) == 0, cdf
        assert ndp["flows_with_timeout"] == 0, cdf
        for a in (a6, a36):
            assert a["trims"] == 0, cdf
            assert a["drops_selective_drop"] > 0, cdf
        assert a36["drops_selective_drop"] < a6["drops_selective_drop"], cdf
        assert a36["small_first_rtt_frac"] > a6["small_first_rtt_frac"], cdf


def test_aeolus_fig20_reduced_incast(tmp_path: Path) -> None:
    """N-to-1 incast (Fig. 20). The paper's observations, as they follow from the mechanisms:
    the first RTT carries a tiny part of N x 64 KB, so Aeolus changes ExpressPass and NDP
    little (average slowdown within 10%); Homa's unscheduled bursts overflow the receiver's
    port and its scheduled packets are lost with them, so flows wait for the timeout, while
    selective dropping keeps the port for scheduled packets: Homa+Aeolus has no timeout and a
    lower average slowdown."""
    runs = _run("aeolus_fig20_incast", tmp_path)
    assert len(runs) == 12
    for (variant, n), r in runs.items():
        assert r["flows_unfinished"] == 0, (variant, n)
    for n in (8, 31):
        for base in ("xpass", "ndp"):
            b, a = runs[(base, n)], runs[(f"{base}_aeolus", n)]
            assert abs(a["slowdown_avg"] / b["slowdown_avg"] - 1) < 0.10, (base, n)
            assert a["drops_selective_drop"] > 0, (base, n)
        homa, ha = runs[("homa", n)], runs[("homa_aeolus", n)]
        assert homa["drops_buffer_overflow"] > 0 and homa["flows_with_timeout"] > 0, n
        assert ha["flows_with_timeout"] == 0, n
        assert ha.get("drops_buffer_overflow", 0) == 0, n
        assert ha["slowdown_avg"] < homa["slowdown_avg"], n
        assert runs[("ndp", n)]["trims"] > 0, n


def test_aeolus_fig22_reduced_probe_recovers_tail_losses(tmp_path: Path) -> None:
    """Aeolus with and without the probe (Fig. 22). With the probe, a lost tail of the
    unscheduled burst is found when the probe's ACK returns, so no small flow waits for the
    transport's timeout (ExpressPass 10 ms, NDP 1 ms). Without it, a flow whose last
    unscheduled packets were all dropped has nothing left to reveal the loss (the accounting
    ExpressPass receiver, `credit_from_request = false` in rows `xpass_aeolus` and
    `xpass_aeolus_noprobe`, withholds credits for packets it still expects unscheduled; an
    NDP receiver sends a PULL only per packet it receives), so some small flows wait the
    whole timeout. With the Aeolus paper's ExpressPass receiver (`credit_from_request`, the
    default; rows `xpass_aeolus_cfr*`), credits flow from the request on whatever the
    receiver expects, and the sender spends them on unacknowledged unscheduled packets once
    no new data is left: no small flow waits for the timeout, with or without the probe (the
    paper's "both schemes achieve very similar performance")."""
    runs = {v: r for (v, _), r in _run("aeolus_fig22_probe", tmp_path).items()}
    assert len(runs) == 6
    for v, r in runs.items():
        assert r["flows_unfinished"] == 0, v
        assert r["drops_selective_drop"] > 0, v
    for base, timeout_us in (("xpass_aeolus", 10_000), ("ndp_aeolus", 1_000)):
        probe, noprobe = runs[base], runs[f"{base}_noprobe"]
        assert probe["small_max_fct_us"] < timeout_us, base
        assert noprobe["small_max_fct_us"] >= timeout_us, base
        assert noprobe["flows_with_timeout"] > probe["flows_with_timeout"], base
        assert noprobe["small_avg_fct_us"] > probe["small_avg_fct_us"], base
    for v in ("xpass_aeolus_cfr", "xpass_aeolus_cfr_noprobe"):
        assert runs[v]["small_max_fct_us"] < 10_000, v
        assert runs[v]["flows_with_timeout"] == 0, v


def test_aeolus_fig18_19_reduced_threshold(tmp_path: Path) -> None:
    """Selective-dropping threshold in an N-to-1 burst of unscheduled packets (Fig. 18/19).
    Unscheduled packets are admitted only while the queue is at most the threshold and the
    credited packets after them are paced to the link, so the bottleneck's queue never holds
    much more than the threshold plus a few packets: its maximum grows with the threshold.
    With N >= 2 senders at line rate the link is overloaded from the first packet on, so even
    the smallest threshold keeps it busy: the first-RTT utilization is high for every
    threshold (the paper's point that 6 KB suffices)."""
    name = "aeolus_fig18_19_threshold"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=1)
    assert not res.report.failed, [f.error for f in res.report.failed]
    rows = {
        (r["network.selective.threshold"], r["workload[0].senders"]): r for r in res.report.rows
    }
    assert len(rows) == 6
    kb = {"1.5KB": 1500, "6KB": 6000, "48KB": 48000}
    for (thr, n), r in rows.items():
        assert r["flows_unfinished"] == 0 and r["flows_with_timeout"] == 0, (thr, n)
        assert r["drops_selective_drop"] > 0, (thr, n)
        assert r["bottleneck_queue_max_bytes"] <= kb[thr] + 3 * 1500, (thr, n)
        assert r["bottleneck_first_rtt_util"] > 0.9, (thr, n)
    for n in (2, 16):
        q = [rows[(t, n)]["bottleneck_queue_max_bytes"] for t in ("1.5KB", "6KB", "48KB")]
        assert q[0] < q[1] < q[2], (n, q)
        assert q[2] >= 48000, (n, q)


def test_aeolus_fig21_reduced_goodput(tmp_path: Path) -> None:
    """Goodput (delivered payload over the hosts' link capacity) is a fraction of capacity,
    every flow of the web search + incast mix finishes under all six schemes, and a higher
    offered load delivers more payload per unit time (the same seed: denser arrivals of the
    same flow sizes; none of the reduced loads saturates the network)."""
    name = "aeolus_fig21_goodput"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=1)
    assert not res.report.failed, [f.error for f in res.report.failed]
    runs = {(r["variant"], r["workload[0].load"]): r for r in res.report.rows}
    variants = ("xpass", "xpass_aeolus", "homa", "homa_aeolus", "ndp", "ndp_aeolus")
    loads = (0.2, 0.5, 0.8)
    assert set(runs) == {(v, x) for v in variants for x in loads}
    for (variant, load), r in runs.items():
        assert r["flows_unfinished"] == 0, (variant, load)
        assert 0 < r["goodput"] < 1, (variant, load, r["goodput"])
    for v in variants:
        g = [runs[(v, x)]["goodput"] for x in loads]
        assert g[0] < g[1] < g[2], (v, g)
