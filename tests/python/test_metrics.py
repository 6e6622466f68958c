"""Summary metrics against hand-computed values (docs/metrics.md definitions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dcnsim import Results, percentile
from dcnsim.metrics import bottleneck_stats, goodput, size_bucket_stats

from conftest import synthetic_core_output


def test_percentile_nearest_rank_textbook() -> None:
    # The classic nearest-rank example: 15, 20, 35, 40, 50.
    x = [40, 15, 50, 35, 20]  # unsorted on purpose
    assert percentile(x, 0) == 15
    assert percentile(x, 5) == 15
    assert percentile(x, 30) == 20
    assert percentile(x, 40) == 20  # rank exactly 2: no interpolation, no rounding up
    assert percentile(x, 50) == 35
    assert percentile(x, 100) == 50


def test_percentile_exact_rank_arithmetic() -> None:
    x = np.arange(1, 1001)
    assert percentile(x, 99.9) == 999  # 99.9/100*1000 is 999.000...1 in floating point
    assert percentile(x, 99) == 990
    assert percentile(x, 50) == 500
    assert percentile(np.arange(1, 101), 99) == 99
    assert percentile([7.0], 99.9) == 7.0


def test_percentile_empty_nan_and_range() -> None:
    assert math.isnan(percentile([], 50))
    assert percentile([1.0, math.nan, 3.0], 100) == 3.0
    with pytest.raises(ValueError):
        percentile([1, 2], 101)


def synthetic() -> Results:
    # flow:        0      1      2       3       4          5     6 (unfinished)  7 (background)
    return Results.from_core(
        synthetic_core_output(
            size=[1000, 50000, 100000, 200000, 5000000, 2000, 3000, 400000],
            fct_us=[10, 20, 30, 100, 1000, 40, None, 500],
            ideal_us=[5, 10, 10, 50, 250, 10, 5, 100],
            sent=[1000, 60000, 100000, 250000, 5000000, 2000, 1500, 999999],
            retx=[0, 10000, 0, 50000, 0, 0, 500, 0],
            timeouts=[0, 1, 0, 2, 0, 0, 1, 0],
            background=[False] * 7 + [True],
            drops={"buffer_overflow": 5, "selective_drop": 2},
            base_rtt_us=[12, 30, 40, 10, 10, 62, 10, 10],
        )
    )


def test_flow_table_conversion() -> None:
    r = synthetic()
    f = r.flows
    assert f["finished"].tolist() == [True] * 6 + [False, True]
    assert math.isnan(f["finish_us"][6]) and math.isnan(f["fct_us"][6])
    assert math.isnan(f["slowdown"][6])
    assert f["fct_us"][3] == pytest.approx(100.0)
    assert f["slowdown"][4] == pytest.approx(4.0)
    assert f["start_us"][2] == pytest.approx(2.0)
    assert f["finish_us"][2] == pytest.approx(32.0)
    assert np.isnan(f["deadline_us"]).all()
    assert f["base_rtt_us"][1] == pytest.approx(30.0)
    # port utilization over the run: 1.25 MB at 10 Gbps over 1 ms = 1.0
    assert r.ports["utilization"][0] == pytest.approx(1.0)


def test_summary_hand_computed() -> None:
    s = synthetic().summary()
    assert s["flows_total"] == 7  # background flow excluded
    assert s["flows_finished"] == 6
    assert s["flows_unfinished"] == 1
    assert s["background_flows"] == 1
    assert s["avg_fct_us"] == pytest.approx((10 + 20 + 30 + 100 + 1000 + 40) / 6)
    # small: sizes <= 100 KB (100000 B included) -> FCT 10, 20, 30, 40
    assert s["small_flows"] == 4
    assert s["small_avg_fct_us"] == pytest.approx(25.0)
    assert s["small_p99_fct_us"] == pytest.approx(40.0)
    assert s["small_p50_fct_us"] == pytest.approx(20.0)  # nearest rank: 2nd of 4
    assert s["small_max_fct_us"] == pytest.approx(40.0)
    assert s["max_fct_us"] == pytest.approx(1000.0)
    assert s["small_p99_slowdown"] == pytest.approx(4.0)  # slowdowns 2, 2, 3, 4
    # first RTT: FCT < ideal + base RTT / 2: 10 < 11, 20 < 25, not 30 < 30, 40 < 41
    assert s["small_first_rtt_frac"] == pytest.approx(0.75)
    assert s["large_flows"] == 2
    assert s["large_avg_fct_us"] == pytest.approx(550.0)
    # slowdowns of finished non-background flows: 2, 2, 3, 2, 4, 4
    assert s["slowdown_avg"] == pytest.approx(17 / 6)
    assert s["slowdown_p50"] == pytest.approx(2.0)
    assert s["slowdown_p90"] == pytest.approx(4.0)
    assert s["slowdown_p99"] == pytest.approx(4.0)
    assert s["p50_fct_us"] == pytest.approx(30.0)
    # efficiency: sizes / sent bytes of the six finished non-background flows
    assert s["transfer_efficiency"] == pytest.approx(5_353_000 / 5_413_000)
    assert s["retx_bytes_total"] == 60_500
    assert s["timeouts_total"] == 4
    assert s["flows_with_timeout"] == 3  # flows 1, 3 and the unfinished 6
    assert s["drops_total"] == 7
    assert s["drops_buffer_overflow"] == 5
    assert s["drops_selective_drop"] == 2
    assert s["avg_link_utilization"] == pytest.approx(0.6)
    assert s["events"] == 1000
    assert s["events_per_s"] == pytest.approx(2000.0)
    assert s["sim_end_us"] == pytest.approx(1000.0)


def test_size_buckets() -> None:
    b = {x["bucket"]: x for x in size_bucket_stats(synthetic().flows)}
    assert b["<=10KB"]["flows"] == 2  # 1000 B and 2000 B
    assert b["<=10KB"]["avg_fct_us"] == pytest.approx(25.0)
    assert b["10KB-100KB"]["flows"] == 2  # 50 KB and exactly 100 KB
    assert b["100KB-1MB"]["flows"] == 1
    assert b[">1MB"]["p99_fct_us"] == pytest.approx(1000.0)


def test_goodput_hand_computed() -> None:
    # Non-background flows start at 0, 1, ..., 6 us (flow 6 unfinished): the arrival period
    # is [0, 6] us, the window its second half [3, 6]. Each finished flow delivers evenly over
    # [start, finish]; its share inside the window:
    #   0: [0, 10]    3/10   x 1000    = 300
    #   1: [1, 21]    3/20   x 50000   = 7500
    #   2: [2, 32]    3/30   x 100000  = 10000
    #   3: [3, 103]   3/100  x 200000  = 6000
    #   4: [4, 1004]  2/1000 x 5000000 = 10000
    #   5: [5, 45]    1/40   x 2000    = 50
    # 33850 B = 270800 bit in 3 us over the one 10 Gbps host port (30000 bit): 9.0267.
    r = synthetic()
    assert r.summary()["goodput"] == pytest.approx(270_800 / 30_000)
    assert goodput(r.flows, r.ports) == pytest.approx(270_800 / 30_000)
    assert math.isnan(goodput(r.flows, None))
    # Two 10 Gbps hosts, one 1 MB flow over [0, 800] us and one 1 MB flow over [400, 400]
    # (a flow that starts and finishes at the same instant counts wholly when inside): window
    # [200, 400] us -> 1 MB x 200/800 + 1 MB = 1.25 MB = 10^7 bit / (2 x 10^10 x 200e-6 s) = 2.5.
    flows = {
        "background": np.array([False, False]),
        "finished": np.array([True, True]),
        "start_us": np.array([0.0, 400.0]),
        "finish_us": np.array([800.0, 400.0]),
        "size_bytes": np.array([1_000_000, 1_000_000], dtype=np.uint64),
    }
    ports = {
        "rate_bps": np.array([10**10, 10**10, 4 * 10**10], dtype=np.uint64),
        "node_kind": np.array(["host", "host", "leaf"], dtype=object),
    }
    assert goodput(flows, ports) == pytest.approx(2.5)


def test_summary_without_finished_flows() -> None:
    r = Results.from_core(synthetic_core_output(size=[1000], fct_us=[None], ideal_us=[5], sent=[0]))
    s = r.summary()
    assert s["flows_finished"] == 0 and s["flows_unfinished"] == 1
    assert math.isnan(s["avg_fct_us"]) and math.isnan(s["transfer_efficiency"])
    assert math.isnan(s["small_first_rtt_frac"])  # no finished small flow (and no base RTT)


def test_bottleneck_stats_hand_computed() -> None:
    # Two ports sampled every 1 us; port 5 carries more bytes, so it is the bottleneck. Its
    # active span is t = 2..5 (the intervals ending at 2, 3, 4, 5 us); base RTT 2 us -> the
    # first two busy intervals. Queue rows (two classes at t = 3) outside the span or on the
    # other port do not count; t = 2 and 5 have no row (empty queue).
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0] * 2)
    port = np.array([5] * 6 + [7] * 6)
    util = np.array([0.0, 0.5, 1.0, 0.25, 0.5, 0.0, 0.0, 0.1, 0.1, 0.1, 0.0, 0.0])
    links = {"t_us": t, "port": port, "utilization": util, "tx_bytes": util * 12_500}
    queues = {
        "t_us": np.array([1.0, 3.0, 3.0, 4.0, 4.0]),
        "port": np.array([5, 5, 5, 5, 7]),
        "prio": np.array([0, 0, 1, 1, 0]),
        "bytes": np.array([9000, 1000, 3000, 2000, 7000]),
    }
    flows = {"base_rtt_us": np.array([1.5, 2.0, np.nan])}
    s = bottleneck_stats(flows, links, queues)
    assert s["bottleneck_first_rtt_util"] == pytest.approx(0.75)
    assert s["bottleneck_queue_max_bytes"] == pytest.approx(4000)
    assert s["bottleneck_queue_avg_bytes"] == pytest.approx((0 + 4000 + 2000 + 0) / 4)
    none = bottleneck_stats(flows, None, queues)
    assert all(math.isnan(v) for v in none.values())


def test_lp_transfer_efficiency_hand_computed() -> None:
    raw = synthetic_core_output(
        size=[100_000, 200_000, 300_000, 400_000],
        fct_us=[10, 20, None, 30],
        ideal_us=[5, 5, 5, 5],
        sent=[100_000, 210_000, 1000, 400_000],
        background=[False, False, False, True],
    )
    # Opportunistic payload sent / arrived: the unfinished flow 2 and the background flow 3
    # do not count (the same flows as transfer_efficiency).
    raw["flows"]["lp_sent_bytes"] = np.array([10_000, 30_000, 5_000, 7_000], dtype=np.uint64)
    raw["flows"]["lp_rcvd_bytes"] = np.array([10_000, 20_000, 0, 7_000], dtype=np.uint64)
    s = Results.from_core(raw).summary()
    assert s["lp_sent_bytes_total"] == 40_000
    assert s["lp_transfer_efficiency"] == pytest.approx(30_000 / 40_000)
    # A core output without the columns (no low-priority loop): nothing sent, no efficiency.
    s = Results.from_core(
        synthetic_core_output(size=[1000], fct_us=[10], ideal_us=[5], sent=[1000])
    ).summary()
    assert s["lp_sent_bytes_total"] == 0 and math.isnan(s["lp_transfer_efficiency"])
