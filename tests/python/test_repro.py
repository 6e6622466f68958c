"""Reduced variants of the paper reproductions (repro/*/repro.toml, `[reduced]` tables).

Each test runs one reproduction through `dcnsim.repro.run_repro(..., reduced=True)` and
asserts the paper's qualitative result where it follows from the mechanism. Where our model
does not reproduce a claim, the reproduction's README says so and explains the gap; those
claims are not asserted here.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

import pytest

from dcnsim.api import validate
from dcnsim.errors import ScenarioError
from dcnsim.metrics import percentile
from dcnsim.repro import build_table, intervals_inside_union, list_repros, load_repro, run_repro
from dcnsim.results import Results
from dcnsim.sweep import run_sweep

REPO = Path(__file__).resolve().parents[2]
REPRO = REPO / "repro"

#: The hosts of the papers' simulators (ns-2 / ns-3 / OMNeT++ / htsim): one FIFO per class at
#: the NIC, no per-flow NIC limit, no congestion-window validation. The reproductions run on
#: dcnsim's default Linux host; a test that checks a paper's claim which holds only on its
#: simulator's hosts runs with these and says so (the README gives both hosts' figures).
LEGACY_HOST = {"nic_qdisc": "fifo", "tsq": False, "cwnd_validation": False}


def _run(
    name: str, tmp_path: Path, host: dict[str, Any] | None = None
) -> dict[Any, dict[str, Any]]:
    return _run_with_runs(name, tmp_path, host)[0]


def _run_with_runs(
    name: str, tmp_path: Path, host: dict[str, Any] | None = None
) -> tuple[dict[Any, dict[str, Any]], dict[str, Path]]:
    """The reduced table, and the run folder of each variant (the reduced sweeps run one
    grid point per variant). ``host``: a ``[host]`` table for every run (e.g. LEGACY_HOST)."""
    if host is None:
        res = run_repro(REPRO / name, tmp_path / name, reduced=True, workers=2)
        report, columns, rows = res.report, res.repro.columns, res.table
        assert (tmp_path / name / "table.md").is_file() and (tmp_path / name / "plot.png").is_file()
    else:
        rep = load_repro(REPRO / name, reduced=True)
        rep.sweep.base["host"] = dict(host)
        report = run_sweep(rep.sweep, tmp_path / name, workers=2)
        columns, rows = rep.columns, build_table(rep, report)
    assert not report.failed, [f.error for f in report.failed]
    for r in report.rows:
        assert r["flows_unfinished"] == 0, r["run"]
    table = {tuple(v for k, v in row.items() if k not in (*columns, "runs")): row for row in rows}
    return table, {r.values.get("variant", r.name): Path(r.out_dir) for r in report.runs}


def test_every_reproduction_loads_full_and_reduced() -> None:
    folders = list_repros(REPRO)
    assert len(folders) >= 6
    for d in folders:
        assert (d / "README.md").is_file(), d
        for reduced in (False, True):
            rep = load_repro(d, reduced=reduced)
            assert rep.columns and rep.sweep.base


def test_every_committed_table_covers_the_full_size_sweep() -> None:
    """Each results/table.csv has exactly one row per variant and per combination of the
    full-size grid (seeds are averaged into one row), so a variant added to a repro.toml
    without a full-size run shows up here. A folder whose full-size run is still to be done
    holds ``results/PENDING.md`` (the command and its estimated time) and no table yet."""
    for d in list_repros(REPRO):
        rep = load_repro(d)
        if (d / "results" / "PENDING.md").is_file():
            assert not (d / "results" / "table.csv").is_file(), f"{d.name}: table and PENDING.md"
            continue
        with open(d / "results" / "table.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        grid = {k: v for k, v in rep.sweep.grid.items() if k != "seed"}
        variants = list(rep.sweep.variants) or [None]
        want = {
            (v, *map(str, combo)) for v in variants for combo in itertools.product(*grid.values())
        }
        got = [(r.get("variant"), *(r[k] for k in grid)) for r in rows]
        assert len(got) == len(set(got)), d.name
        assert set(got) == want, (d.name, sorted(want - set(got)), sorted(set(got) - want))


def test_bad_reproduction_folder_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"no repro\.toml"):
        load_repro(tmp_path)
    (tmp_path / "repro.toml").write_text(
        'base = "b.toml"\n[variants.a]\n"transport.protocol" = "dctcp"\n[report]\nplot = "pie"\n'
    )
    (tmp_path / "b.toml").write_text((REPRO / "ppt_fig12_13" / "base.toml").read_text())
    with pytest.raises(ScenarioError) as e:
        load_repro(tmp_path)
    assert e.value.field == "report.plot"
    (tmp_path / "repro.toml").write_text(
        'base = "b.toml"\n[variants.a]\n"transport.protocol" = "dctcp"\n'
        '[report]\nbottleneck = "uplink"\n'
    )
    with pytest.raises(ScenarioError) as e:
        load_repro(tmp_path)
    assert e.value.field == "report.bottleneck"


def _small_fcts(run_dirs: list[Path]) -> list[float]:
    """FCTs (us) of the small (<= 100 KB) flows of several run folders, pooled."""
    out: list[float] = []
    for d in run_dirs:
        f = Results.load(d).flows
        out += [t for s, t in zip(f["size_bytes"], f["fct_us"]) if s <= 100_000]
    return out


def _more_seeds(
    name: str,
    variants: tuple[str, ...],
    seeds: list[int],
    out: Path,
    host: dict[str, Any] | None = None,
) -> dict[str, list[Path]]:
    """Run the named variants of a reduced reproduction for more seeds; their run folders."""
    rep = load_repro(REPRO / name, reduced=True)
    if host is not None:
        rep.sweep.base["host"] = dict(host)
    rep.sweep.variants = {v: rep.sweep.variants[v] for v in variants}
    rep.sweep.grid["seed"] = seeds
    more = run_sweep(rep.sweep, out, workers=2)
    assert not more.failed, [f.error for f in more.failed]
    runs: dict[str, list[Path]] = {}
    for task in more.runs:
        runs.setdefault(task.values["variant"], []).append(Path(task.out_dir))
    return runs


def test_ppt_fig12_reduced_ppt_beats_dctcp_and_rc3_on_the_papers_hosts(tmp_path: Path) -> None:
    """Fig. 12/13's order on the hosts of the paper's simulator (LEGACY_HOST). On dcnsim's
    Linux host PPT's gain over DCTCP goes (DCTCP no longer queues its own backlog in the NIC
    ahead of its small flows): repro/ppt_fig12_13/README.md, "Host model"."""
    t, seed1 = _run_with_runs("ppt_fig12_13", tmp_path, LEGACY_HOST)
    ppt, dctcp, rc3 = (t[("websearch", v)] for v in ("ppt", "dctcp", "rc3"))
    # Drop-tail (the main rows): PPT below DCTCP overall and below DCTCP and RC3 on the
    # small-flow average held for seeds 1-15 on this network.
    assert ppt["avg_fct_us"] < dctcp["avg_fct_us"]
    for other in (dctcp, rc3):
        assert ppt["small_avg_fct_us"] < other["small_avg_fct_us"], other
    # The small-flow p99 (Fig. 12c) sits at one or two minimum RTOs (1 ms) for all three
    # and one run's ~1,900 small flows put it on either side (below RC3's in 10 of seeds
    # 1-15), so it is compared on the small flows of seeds 1-3 pooled, the sample of a run
    # three times this size: PPT below RC3 and DCTCP in each of the five disjoint triples of
    # seeds 1-15 (margins 11-30% against RC3; repro/ppt_fig12_13/README.md, "Seeds").
    runs = _more_seeds(
        "ppt_fig12_13", ("dctcp", "rc3", "ppt"), [2, 3], tmp_path / "seeds", LEGACY_HOST
    )
    p99 = {v: percentile(_small_fcts([seed1[v], *dirs]), 99) for v, dirs in runs.items()}
    assert p99["ppt"] < p99["rc3"] and p99["ppt"] < p99["dctcp"], p99
    # The claims on push-out switches (opportunistic packets evicted for HCP arrivals,
    # network.pushout_classes), against DCTCP and RC3 on drop-tail and RC3 on push-out too,
    # small-flow p99 included (one run: PPT's p99 is one RTO there). Held for seeds 1-5.
    po = t[("websearch", "ppt_pushout")]
    assert po["avg_fct_us"] < dctcp["avg_fct_us"]
    for other in (dctcp, rc3, t[("websearch", "rc3_pushout")]):
        assert po["small_avg_fct_us"] < other["small_avg_fct_us"], other
        assert po["small_p99_fct_us"] < other["small_p99_fct_us"], other


def test_busy_intervals_are_those_inside_the_union_of_flow_spans() -> None:
    """`util_busy`'s mask against a direct check: an interval (t - dt, t] is busy when every
    point of it (tested on a fine grid) lies in some flow's [start, finish)."""
    import numpy as np

    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(0, 8))
        start = rng.uniform(0, 100, n).round(1)
        fin = start + rng.uniform(0, 30, n).round(1)
        if n:
            fin[rng.integers(0, n)] = np.inf  # an unfinished flow
        dt = 5.0
        t_end = np.arange(dt, 140, dt)
        got = intervals_inside_union(start, fin, t_end, dt)
        for t, g in zip(t_end, got):
            pts = np.linspace(t - dt + 1e-6, t - 1e-6, 200)
            want = all(bool(np.any((start <= p) & (p < fin))) for p in pts)
            assert bool(g) == want, (start, fin, t)


def test_ppt_fig20_reduced_ppt_keeps_the_bottleneck_busier_than_dctcp(tmp_path: Path) -> None:
    t = _run("ppt_fig1_20", tmp_path)
    dctcp, hyp, ppt = (t[(v,)] for v in ("dctcp", "hypothetical", "ppt"))
    # Utilization while flows to the receiver are waiting: DCTCP leaves spare bandwidth
    # (K = 120 KB < BDP = 383 KB), PPT's low-priority loop fills part of it, and the
    # hypothetical DCTCP (fills the gap to the flow's max window every RTT) more.
    assert ppt["util_busy"] > dctcp["util_busy"]
    assert hyp["util_busy"] > dctcp["util_busy"]
    assert dctcp["util_busy"] < 0.9


def test_ppt_ablations_reduced_each_mechanism_helps_on_the_papers_hosts(tmp_path: Path) -> None:
    """On LEGACY_HOST (the paper's simulator's hosts); with the Linux host PPT without
    scheduling has the lower small-flow average (repro/ppt_ablations/README.md)."""
    t = _run("ppt_ablations", tmp_path, LEGACY_HOST)
    ppt = t[("ppt",)]
    # Fig. 17 (w/o scheduling): overall and small-flow average FCT worse.
    assert t[("no_scheduling",)]["avg_fct_us"] > ppt["avg_fct_us"]
    assert t[("no_scheduling",)]["small_avg_fct_us"] > ppt["small_avg_fct_us"]
    # Fig. 18 (w/o identification): small-flow average and tail FCT worse.
    assert t[("no_identification",)]["small_avg_fct_us"] > ppt["small_avg_fct_us"]
    assert t[("no_identification",)]["small_p99_fct_us"] > ppt["small_p99_fct_us"]
    # Fig. 16 (w/o EWD: opportunistic packets at line rate while a loop is open): overall,
    # small-flow average and small-flow p99 FCT worse. Measured on the reduced network with
    # seeds 1, 2, 3: PPT 25-33% better overall, 27-44% on the small-flow average and 35-51% on
    # the small-flow p99, so a 10% margin holds without depending on one seed.
    no_ewd = t[("no_ewd",)]
    assert no_ewd["avg_fct_us"] > 1.1 * ppt["avg_fct_us"]
    assert no_ewd["small_avg_fct_us"] > 1.1 * ppt["small_avg_fct_us"]
    assert no_ewd["small_p99_fct_us"] > 1.1 * ppt["small_p99_fct_us"]
    # Fig. 15 (w/o LCP ECN) is not reproduced (-3% to +6% overall over those seeds; the
    # transport.lcp_rtt = "lp" and lcp_late_acks readings change sign between seeds too), so
    # it is not asserted; see repro/ppt_ablations/README.md.
    # On push-out switches (network.pushout_classes) scheduling and identification still
    # matter as in Fig. 17/18 (seeds 1, 2, 3: 20-22% overall and 52% small average for
    # scheduling; 45-49% small average and 16-49% small p99 for identification); EWD and LCP
    # ECN do not (the switch already keeps opportunistic packets out of the HCP's way), so
    # they are not asserted there.
    po = t[("ppt_pushout",)]
    assert t[("no_scheduling_pushout",)]["avg_fct_us"] > po["avg_fct_us"]
    assert t[("no_scheduling_pushout",)]["small_avg_fct_us"] > po["small_avg_fct_us"]
    assert t[("no_identification_pushout",)]["small_avg_fct_us"] > po["small_avg_fct_us"]
    assert t[("no_identification_pushout",)]["small_p99_fct_us"] > po["small_p99_fct_us"]


def test_ppt_fig27_reduced_ppt_with_a_small_send_buffer_beats_dctcp_and_rc3_on_the_papers_hosts(
    tmp_path: Path,
) -> None:
    """Fig. 27 / §6.3: "PPT works well under different send buffer sizes", on LEGACY_HOST (with
    the Linux host PPT is above DCTCP at every buffer, as in Fig. 12). We assert that PPT
    at 128 KB (and 2 GB) stays below DCTCP overall and below DCTCP and RC3 (2 GB send buffer,
    the paper's RC3 setting) on the small-flow average, on the same reduced network and seed
    (held for seeds 1-5). The paper's 128 KB comparison with the proactive transports is not
    reproduced (repro/ppt_fig12_13/README.md, item 4).

    The paper's trend (overall and large-flow FCT falling as the buffer grows to a few MB) is
    not reproduced (repro/ppt_fig27_sendbuf/README.md): 2 GB vs 128 KB changes the overall
    average by -4.7% to +1.3% over seeds 1-5, either sign, so it is not asserted.
    """
    t = _run("ppt_fig27_sendbuf", tmp_path, LEGACY_HOST)
    base = tmp_path / "baselines"
    base.mkdir()
    (base / "repro.toml").write_text(
        f"""title = "Fig. 27 baselines"
base = "{(REPRO / "ppt_fig12_13" / "base.toml").as_posix()}"
[set]
"host.nic_qdisc" = "fifo"
"host.tsq" = false
"host.cwnd_validation" = false
[variants.dctcp]
"transport.protocol" = "dctcp"
[variants.rc3]
"transport.protocol" = "rc3"
[reduced.set]
"topology.leaves" = 4
"topology.spines" = 2
"topology.hosts_per_leaf" = 8
"workload[0].flows" = 3000
[report]
columns = ["avg_fct_us", "small_avg_fct_us", "small_p99_fct_us"]
"""
    )
    res = run_repro(base, tmp_path / "baselines-out", reduced=True, workers=2)
    assert not res.report.failed, [f.error for f in res.report.failed]
    ref = {row["variant"]: row for row in res.table}
    for buf in ("128KB", "2GB"):
        ppt = t[(buf,)]
        assert ppt["avg_fct_us"] < ref["dctcp"]["avg_fct_us"], buf
        for other in ("dctcp", "rc3"):
            assert ppt["small_avg_fct_us"] < ref[other]["small_avg_fct_us"], (buf, other)


def test_ppt_fig21_and_fig23_reduced_run_to_completion(tmp_path: Path) -> None:
    t = _run("ppt_fig21_memcached", tmp_path)
    assert t[("ppt",)]["avg_fct_us"] <= 1.05 * t[("dctcp",)]["avg_fct_us"]
    t = _run("ppt_fig23_incast", tmp_path)
    # N = senders x flows_per_sender: 8 and 31 distinct senders, once with 2 flows each.
    assert {k[:2] for k in t} == {(1, 8), (1, 31), (2, 8), (2, 31)}
    # Every variant in every block, Homa+Aeolus included (its full-size run at 128 x 2 used
    # to hang: a message whose unscheduled packets and their Aeolus retransmissions were all
    # lost never got a RESEND); _run checks that every flow finished.
    variants = {"dctcp", "ppt", "ndp", "homa", "homa_aeolus", "ppt_pushout"}
    for block in {k[:2] for k in t}:
        assert {k[2] for k in t if k[:2] == block} == variants, block
    # Fig. 23's "PPT falls back to DCTCP": on push-out switches PPT's overall average is
    # closer to DCTCP's than on drop-tail, in every cell (held for seeds 1, 2, 3).
    for cell in {k[:2] for k in t}:
        dctcp, ppt, po = (t[(*cell, v)]["avg_fct_us"] for v in ("dctcp", "ppt", "ppt_pushout"))
        assert abs(po - dctcp) < abs(ppt - dctcp), (cell, dctcp, ppt, po)


def test_ppt_fig22_reduced_100g_ppt_beats_dctcp_and_rc3_on_the_papers_hosts(tmp_path: Path) -> None:
    """Fig. 22 (§6.3.2, 100/400G links, §6.2's 120 KB buffers and 96 / 86 KB thresholds), on
    LEGACY_HOST: with the Linux host PPT is above DCTCP (repro/ppt_fig22_100g/README.md).
    Asserted: the paper's first two findings against DCTCP and RC3 (overall, small-flow and
    large-flow averages; held for seeds 1-15 on this network) and its third, PPT's small-flow
    p99 above Homa's and Homa+Aeolus'. Not asserted, as not reproduced: PPT below NDP, Homa and
    Homa+Aeolus on the averages (all three are below PPT here; repro/ppt_fig22_100g/README.md).
    """
    t, seed1 = _run_with_runs("ppt_fig22_100g", tmp_path, LEGACY_HOST)
    ppt, dctcp, rc3 = (t[(v,)] for v in ("ppt", "dctcp", "rc3"))
    for other in (dctcp, rc3):
        for col in ("avg_fct_us", "small_avg_fct_us", "large_avg_fct_us"):
            assert ppt[col] < other[col], (col, other)
    # Third finding. All three p99s sit just above one 1 ms timeout (5-8% of the small flows
    # time out in each) and one run's p99 put Homa+Aeolus above PPT for one of seeds 1-15
    # (seed 4), so the small flows of seeds 1-3 are pooled: PPT above both in each of the
    # five disjoint triples of seeds 1-15, by 19-128 us (README, "Seeds").
    runs = _more_seeds(
        "ppt_fig22_100g", ("ppt", "homa", "homa_aeolus"), [2, 3], tmp_path / "seeds", LEGACY_HOST
    )
    p99 = {v: percentile(_small_fcts([seed1[v], *dirs]), 99) for v, dirs in runs.items()}
    assert p99["ppt"] > p99["homa"] and p99["ppt"] > p99["homa_aeolus"], p99


def test_ppt_fig26_reduced_nonoversubscribed_ppt_beats_dctcp_and_rc3(tmp_path: Path) -> None:
    """Fig. 26 (appendix E, 10/40G links, 1:1). Asserted: PPT below DCTCP and RC3 on the
    overall and large-flow averages (held for seeds 1-15, margins above 15%). Not asserted,
    as not reproduced: PPT below NDP (about equal), Homa and Homa+Aeolus (both far below PPT),
    and PPT's small-flow figures near the proactive transports' (repro/ppt_fig26_nonoversub/
    README.md)."""
    t = _run("ppt_fig26_nonoversub", tmp_path)
    ppt, dctcp, rc3 = (t[(v,)] for v in ("ppt", "dctcp", "rc3"))
    for other in (dctcp, rc3):
        for col in ("avg_fct_us", "large_avg_fct_us"):
            assert ppt[col] < other[col], (col, other)
    # At 10 Gbps the BDP (13.9 KB) is below the 10-packet initial window, so RC3's first-RTT
    # burst (and PPT's case-1 window), BDP - initial window, is empty and RC3 is DCTCP run for
    # run (the README's explanation of the RC3 column); this guards that explanation.
    assert all(rc3[c] == dctcp[c] for c in ("avg_fct_us", "small_p99_fct_us", "drops_total"))


def test_ppt_fig24_reduced_ppt_beats_rc3_with_a_limited_lp_buffer_on_the_papers_hosts(
    tmp_path: Path,
) -> None:
    """On LEGACY_HOST; with the Linux host RC3 is below PPT (repro/ppt_fig24_rc3_lp_buffer)."""
    t = _run("ppt_fig24_rc3_lp_buffer", tmp_path, LEGACY_HOST)
    ppt = t[("ppt",)]
    # Overall and large-flow averages: PPT below every RC3 variant for seeds 1-5 here and at
    # full size. The small-flow p99 was below for seeds 1 and 5 only, so it is not asserted
    # (repro/ppt_fig24_rc3_lp_buffer/README.md, "Seeds").
    for share in ("rc3", "rc3_lp20", "rc3_lp40", "rc3_lp60", "rc3_lp80"):
        rc3 = t[(share,)]
        assert ppt["avg_fct_us"] < rc3["avg_fct_us"], share
        assert ppt["large_avg_fct_us"] < rc3["large_avg_fct_us"], share


def test_ppt_fig25_reduced_ppt_beats_pias_and_hpcc_keeps_the_queues_empty(tmp_path: Path) -> None:
    """Fig. 25 (appendix D) on the Linux host. Asserted: PPT below PIAS and HPCC on the overall
    and large-flow averages (seeds 1-5 here and at full size); HPCC drops nothing and its
    small-flow p99 is below PPT's (every seed, by 10x or more). Not asserted: PPT below PIAS
    on the small-flow average (full size yes; at this size seeds 2-4 put PIAS 1-8% below), and
    PPT below HPCC on small flows, which does not reproduce (repro/ppt_fig25_hpcc_pias)."""
    t = _run("ppt_fig25_hpcc_pias", tmp_path)
    ppt, pias, hpcc = (t[(v,)] for v in ("ppt", "pias", "hpcc"))
    for other in (pias, hpcc):
        for col in ("avg_fct_us", "large_avg_fct_us"):
            assert ppt[col] < other[col], (col, other)
    assert hpcc["drops_total"] == 0
    assert hpcc["small_p99_fct_us"] < ppt["small_p99_fct_us"] / 5


def test_ppt_fig8_11_reduced_testbed_ppt_small_flows_beat_dctcp_and_rc3(tmp_path: Path) -> None:
    """The §6.1 testbed (15 hosts, 10G, 80 us RTT) simulated, 15-to-15 and 14-to-1, web search
    at load 0.5: PPT's small flows start in the top class and its large ones are identified
    after 100 KB, so its small-flow average is below DCTCP's and RC3's (seeds 1-5 in both
    folders). Overall the three are within a few percent and the p99 is not robust (a 10 ms
    RTO on one seed): repro/ppt_fig8_9_testbed_15to15/README.md."""
    for name in ("ppt_fig8_9_testbed_15to15", "ppt_fig10_11_testbed_14to1"):
        t = _run(name, tmp_path)
        ppt = t[("websearch", 0.5, "ppt")]
        for other in ("dctcp", "rc3"):
            small = t[("websearch", 0.5, other)]["small_avg_fct_us"]
            assert ppt["small_avg_fct_us"] < small, (name, other)


def test_queue_metrics_split_the_bottleneck_occupancy_by_the_transports_low_priority_classes(
    tmp_path: Path,
) -> None:
    """Hand-computed QUEUE_METRICS on a synthetic run folder, and the classes each transport
    reserves for opportunistic packets."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from dcnsim.repro import _busiest_switch_port, _queue_metrics, lp_classes

    def sc(proto: str, prios: int = 8) -> dict[str, Any]:
        """The normalized scenario the core writes for a run of `proto`."""
        return validate(
            {
                "topology": {"kind": "single_switch", "hosts": 2},
                "network": {"priorities": prios},
                "transport": {"protocol": proto},
                "workload": {"pattern": "permutation", "size": "1000B"},
            }
        )

    assert lp_classes(sc("ppt")) == [4, 5, 6, 7]
    assert lp_classes(sc("ppt_swift", 4)) == [2, 3]
    assert lp_classes(sc("rc3")) == [1, 2, 3, 4, 5, 6, 7]
    assert lp_classes(sc("dctcp")) == [] and lp_classes(sc("pias")) == []
    # Port 3 (switch) serializes the most bytes; port 0 is a host NIC (not a candidate even
    # though it is busier), port 4 a less busy switch port. Port 3's active span is
    # t = 20..40 us (three instants; t = 10 and 50 are idle). Queue rows outside the span or
    # of other ports do not count; t = 30 has no row for port 3 (empty queue).
    (tmp_path / "ports.csv").write_text(
        "id,node,peer,node_kind,peer_kind\n0,0,3,host,switch\n3,3,2,switch,host\n4,3,0,switch,host\n"
    )
    t = [10.0, 20.0, 30.0, 40.0, 50.0]
    pq.write_table(
        pa.table(
            {
                "t_us": t * 3,
                "port": [3] * 5 + [4] * 5 + [0] * 5,
                "tx_bytes": [0, 100, 100, 100, 0] + [0, 10, 10, 10, 0] + [500] * 5,
                "utilization": [0.0, 0.5, 0.5, 0.5, 0.0] + [0.0, 0.1, 0.1, 0.1, 0.0] + [0.9] * 5,
            }
        ),
        tmp_path / "link.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "t_us": [10.0, 20.0, 20.0, 20.0, 40.0, 40.0, 50.0, 20.0],
                "port": [3, 3, 3, 3, 3, 3, 3, 4],
                "prio": [0, 0, 3, 5, 1, 7, 0, 0],
                "bytes": [9000, 1000, 500, 3000, 1500, 600, 9000, 7000],
            }
        ),
        tmp_path / "queue.parquet",
    )
    (tmp_path / "scenario.json").write_text(json.dumps(sc("ppt")))
    found = _busiest_switch_port(tmp_path)
    assert found is not None and found[0] == 3
    m = _queue_metrics(tmp_path, found)
    assert m["bottleneck_hp_avg_bytes"] == pytest.approx((1000 + 500 + 1500) / 3)
    assert m["bottleneck_lp_avg_bytes"] == pytest.approx((3000 + 600) / 3)
    assert m["bottleneck_lp_share"] == pytest.approx(3600 / 6600)
    (tmp_path / "scenario.json").write_text(json.dumps(sc("rc3")))
    assert _queue_metrics(tmp_path, found)["bottleneck_lp_avg_bytes"] == pytest.approx(5600 / 3)
    (tmp_path / "scenario.json").write_text(json.dumps(sc("dctcp")))
    m = _queue_metrics(tmp_path, found)
    assert (m["bottleneck_lp_avg_bytes"], m["bottleneck_lp_share"]) == (0.0, 0.0)


def test_ppt_fig28_29_reduced_buffer_split_and_transfer_efficiency(tmp_path: Path) -> None:
    """Fig. 28/29 (2 senders -> 1 receiver, 40G, 120 KB shared buffer, K = 72 / 96 KB for
    every class; the reduced variant is the full-size run for seed 1). Asserted, for both K,
    what held for seeds 1-10 at full size (repro/ppt_fig28_29_ecn/README.md, "Seeds"):

    * PPT occupies more buffer than DCTCP ("PPT incurs 10.8%~17.4% more buffer than
      DCTCP"): measured +19% to +53% on drop-tail, +17% to +45% on push-out switches;
    * push-out switches cut the opportunistic classes' share of the occupancy, PPT's and
      RC3's (ratio push-out / drop-tail 0.22-0.55);
    * PPT's transfer efficiency is comparable to DCTCP's (1.7-4.9% lower);
    * at the testbed RTT (77 us) PPT occupies less buffer than RC3 ("PPT requires 20.4%~21.6%
      less switch buffer than RC3"; measured 16-30% less) and delivers a higher transfer
      efficiency (2.1-3.6% higher; the paper's 14.6-18.4% is not reproduced).

    Not asserted because not reproduced: PPT's low-priority share of 2.6-3.1% (ours 45-62% on
    drop-tail, 15-31% on push-out), PPT below RC3 at the 8.6 us RTT (-6.5% to +3.0%), RC3's
    low-priority share growing with K, RC3's low-priority transfer efficiency below PPT's.
    """
    t = _run("ppt_fig28_29_ecn", tmp_path)
    for k in ("72KB", "96KB"):
        row = {v: t[(k, v)] for (kk, v) in t if kk == k}

        def total(v: str, row: dict[str, dict[str, Any]] = row) -> float:
            return float(row[v]["bottleneck_queue_avg_bytes"])

        # The split adds up to the summary's bottleneck occupancy; DCTCP has no
        # opportunistic class, RC3 and PPT do.
        for v, r in row.items():
            hp, lp = r["bottleneck_hp_avg_bytes"], r["bottleneck_lp_avg_bytes"]
            assert hp + lp == pytest.approx(total(v), rel=1e-9), (k, v)
            assert (lp == 0) == v.startswith("dctcp"), (k, v, lp)
            # no opportunistic byte sent: no low-priority efficiency (n/a in the table)
            assert (r["lp_transfer_efficiency"] is None) == v.startswith("dctcp"), (k, v)
        for v in ("ppt", "ppt_pushout"):
            assert total(v) > 1.05 * total("dctcp"), (k, v, total(v), total("dctcp"))
        for v in ("ppt", "rc3"):
            dt, po = row[v]["bottleneck_lp_share"], row[v + "_pushout"]["bottleneck_lp_share"]
            assert po < 0.75 * dt, (k, v, dt, po)
        eff = {v: row[v]["transfer_efficiency"] for v in row}
        assert eff["ppt"] > 0.93 * eff["dctcp"], (k, eff)
        assert total("ppt_rtt77") < 0.9 * total("rc3_rtt77"), k
        assert eff["ppt_rtt77"] > eff["rc3_rtt77"], (k, eff)


def test_ppt_fig2_reduced_hypothetical_dctcp_harms_itself_through_the_shared_buffer(
    tmp_path: Path,
) -> None:
    """Fig. 2 (§2.3): none of the paper's comparisons reproduces here (the hypothetical DCTCP
    is above DCTCP, Homa and NDP on drop-tail switches, and within 5% of DCTCP on push-out
    switches; repro/ppt_fig2_hypothetical/README.md), so none is asserted. What is asserted
    guards the README's measured explanation, on seeds 1-5 of this network ("Seeds"), on the
    hosts of the paper's simulator it was measured with (LEGACY_HOST; the folder runs on fq
    host NICs, where push-out switches leave the hypothetical 1.65x DCTCP's timeouts and 9.9%
    above DCTCP at full size, README "Host model: before -> after"):

    * on drop-tail switches the hypothetical's opportunistic packets, never backed off, take
      the shared buffer from DCTCP's packets: 8.0-10.7x DCTCP's drops and 6.8-11.5x its
      timeouts;
    * on push-out switches (opportunistic packets evicted for arrivals) the timeouts are back
      near DCTCP's (0.93-1.21x) and the overall average FCT is 39-45% below the drop-tail
      hypothetical's, but within 3.6% of DCTCP's: filling the gap gains little here.
    """
    t = _run("ppt_fig2_hypothetical", tmp_path, LEGACY_HOST)
    dctcp, hyp, po = (t[(v,)] for v in ("dctcp", "hypothetical", "hypothetical_pushout"))
    assert hyp["drops_total"] > 5 * dctcp["drops_total"]
    assert hyp["timeouts_total"] > 5 * dctcp["timeouts_total"]
    assert po["timeouts_total"] < 1.3 * dctcp["timeouts_total"]
    assert po["avg_fct_us"] < 0.8 * hyp["avg_fct_us"]
    assert abs(po["avg_fct_us"] / dctcp["avg_fct_us"] - 1) < 0.05, (po, dctcp)


def test_ppt_fig3_reduced_filling_above_mw_wastes_more(tmp_path: Path) -> None:
    """Fig. 3 (§2.3), data mining at load 0.6, 600 flows on the reduced network. Asserted, the
    part of "above MW ... a significantly high loss rate" that held for seeds 1-5 here and at
    full size (repro/ppt_fig3_fill/README.md, "Seeds"): filling to 125% or 150% of MW wastes a
    larger share of the sent payload (lower transfer efficiency) than filling to 100%, on
    drop-tail and on push-out switches, and on push-out switches the drops (evictions
    included) grow with the fill from 50% to 150%.

    Not asserted, as not reproduced: the FCT effects (56% higher at 50%, up to 6x above MW;
    ours differ by a few % either way, with an order that changes between seeds) and the
    drop-tail drop counts growing with the fill (not on every seed)."""
    t = _run("ppt_fig3_fill", tmp_path)
    eff = {v: t[(v,)]["transfer_efficiency"] for (v,) in t}
    assert eff["fill125"] < eff["fill100"] and eff["fill150"] < eff["fill100"], eff
    assert eff["fill150_pushout"] < eff["fill100_pushout"] < eff["fill050_pushout"], eff
    drops = [t[(f"fill{f}_pushout",)]["drops_total"] for f in ("050", "100", "150")]
    assert drops[0] < drops[1] < drops[2], drops
