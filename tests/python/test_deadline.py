"""Deadlines: the per-flow ``met_deadline`` and ``aborted`` columns, the summary's fraction of
deadline flows that met their deadline, overall and by size class, and deadlines carried
from the workload through every transport."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dcnsim
from dcnsim.metrics import size_bucket_stats
from dcnsim.results import Results

from conftest import synthetic_core_output

NONE = np.iinfo(np.uint64).max


def _hand_made() -> Results:
    """Eight flows; deadlines in ps, one microsecond = 1e6 ps."""
    raw = synthetic_core_output(
        size=[1000, 1000, 1000, 200_000, 200_000, 1000, 1000, 50_000],
        fct_us=[80.0, 100.0, 100.000001, None, 300.0, 10.0, 10.0, 90.0],
        ideal_us=[1.0] * 8,
        sent=[1000] * 8,
        background=[False, False, False, False, False, False, True, False],
    )
    us = 1_000_000
    raw["flows"]["deadline_ps"] = np.array(
        [100 * us, 100 * us, 100 * us, 50 * us, 400 * us, NONE, 100 * us, 80 * us], dtype=np.uint64
    )
    # Flow 7 was abandoned at its deadline (it is unfinished in a real run; here its fct is
    # below the deadline on purpose, so only the aborted flag can make it a miss).
    raw["flows"]["aborted"] = np.array([False] * 7 + [True])
    return Results.from_core(raw)


def test_met_deadline_is_finished_within_the_deadline_exactly() -> None:
    f = _hand_made().flows
    # 80 <= 100 met; 100 <= 100 met (boundary); 100.000001 > 100 missed; unfinished missed;
    # 300 <= 400 met; no deadline -> false; background with a deadline: met per flow (the
    # summary excludes it); aborted -> missed.
    assert f["met_deadline"].tolist() == [True, True, False, False, True, False, True, False]
    assert f["aborted"].tolist() == [False] * 7 + [True]


def test_summary_fraction_met_excludes_flows_without_deadline_and_background() -> None:
    s = _hand_made().summary()
    # Deadline flows: 0, 1, 2, 3, 4, 7 (5 has none, 6 is background); met: 0, 1, 4.
    assert s["deadline_flows"] == 6
    assert s["deadline_met"] == 3
    assert s["deadline_met_frac"] == pytest.approx(0.5)
    # Small (<= 100 KB): 0, 1, 2, 7 -> 2 of 4; large: 3, 4 -> 1 of 2.
    assert s["small_deadline_met_frac"] == pytest.approx(0.5)
    assert s["large_deadline_met_frac"] == pytest.approx(0.5)
    assert s["flows_aborted"] == 1
    by = {b["bucket"]: b for b in size_bucket_stats(_hand_made().flows)}
    # Buckets: <=10KB holds 0, 1, 2 (2 met); 10KB-100KB flow 7 (aborted); 100KB-1MB 3, 4.
    assert (by["<=10KB"]["deadline_flows"], by["<=10KB"]["deadline_met_frac"]) == (
        3,
        pytest.approx(2 / 3),
    )
    assert (by["10KB-100KB"]["deadline_flows"], by["10KB-100KB"]["deadline_met_frac"]) == (1, 0.0)
    assert (by["100KB-1MB"]["deadline_flows"], by["100KB-1MB"]["deadline_met_frac"]) == (2, 0.5)
    assert by[">1MB"]["deadline_flows"] == 0 and math.isnan(by[">1MB"]["deadline_met_frac"])


def test_no_deadline_flows_give_null_fractions() -> None:
    raw = synthetic_core_output(size=[1000], fct_us=[5.0], ideal_us=[1.0], sent=[1000])
    s = Results.from_core(raw).summary()
    assert s["deadline_flows"] == 0 and math.isnan(s["deadline_met_frac"])
    assert s["flows_aborted"] == 0


FLOWS_CSV = "src,dst,size,start,deadline\n1,0,20000,0,1ms\n2,0,20000,0,1us\n3,4,15000,5,\n"


@pytest.mark.parametrize(
    "protocol", ["tcp", "dctcp", "d2tcp", "l2dct", "pias", "homa", "ndp", "swift"]
)
def test_every_transport_reports_met_and_missed(tmp_path: Path, protocol: str) -> None:
    """A 20 KB flow with a 1 ms deadline meets it, one with 1 us cannot (its ideal FCT is
    longer), one without a deadline is excluded."""
    (tmp_path / "flows.csv").write_text(FLOWS_CSV)
    sc = f"""
name = "dl"
seed = 1
[topology]
kind = "single_switch"
hosts = 5
host_rate = "10Gbps"
host_delay = "1us"
[network]
buffer = "200KB"
ecn_k = "30KB"
priorities = 8
[transport]
protocol = "{protocol}"
[[workload]]
pattern = "explicit"
file = "flows.csv"
"""
    (tmp_path / "s.toml").write_text(sc)
    res = dcnsim.run(str(tmp_path / "s.toml"))
    f = res.flows
    assert f["deadline_us"][:2].tolist() == [1000.0, 1.0] and math.isnan(f["deadline_us"][2])
    assert f["finished"].all()
    assert f["met_deadline"].tolist() == [True, False, False]
    s = res.summary()
    assert (s["deadline_flows"], s["deadline_met"], s["deadline_met_frac"]) == (2, 1, 0.5)


def test_abort_at_deadline_from_the_api(tmp_path: Path) -> None:
    (tmp_path / "flows.csv").write_text(
        "src,dst,size,start,deadline\n1,0,5MB,0,100us\n2,3,20000,0,1ms\n"
    )
    sc = """
name = "abort"
seed = 1
[topology]
kind = "single_switch"
hosts = 4
host_rate = "10Gbps"
host_delay = "1us"
[transport]
protocol = "dctcp"
[run]
abort_at_deadline = true
[[workload]]
pattern = "explicit"
file = "flows.csv"
"""
    (tmp_path / "s.toml").write_text(sc)
    res = dcnsim.run(str(tmp_path / "s.toml"))
    f = res.flows
    assert f["aborted"].tolist() == [True, False]
    assert f["finished"].tolist() == [False, True]
    assert f["met_deadline"].tolist() == [False, True]
    # Nothing is sent after the deadline: the sender handed its NIC exactly what the same run
    # cut at the deadline by time_limit shows.
    assert 0 < int(f["sent_bytes"][0]) < 5_000_000
    cut = dcnsim.run(
        (tmp_path / "s.toml")
        .read_text()
        .replace("abort_at_deadline = true", 'time_limit = "100us"'),
        base_dir=tmp_path,
    ).flows
    assert int(cut["sent_bytes"][0]) == int(f["sent_bytes"][0])
    s = res.summary()
    assert (s["flows_aborted"], s["deadline_met_frac"], s["flows_unfinished"]) == (1, 0.5, 1)
    assert dcnsim.validate(str(tmp_path / "s.toml"))["run"]["abort_at_deadline"] is True


def test_deadline_draws_are_deterministic(tmp_path: Path) -> None:
    sc = """
name = "draws"
seed = 11
[topology]
kind = "single_switch"
hosts = 8
host_rate = "10Gbps"
host_delay = "1us"
[transport]
protocol = "d2tcp"
[[workload]]
pattern = "poisson"
cdf = "websearch"
load = 0.3
flows = 40
deadline = { min = "5ms", max = "25ms" }
"""
    a = dcnsim.run(sc).flows
    b = dcnsim.run(sc).flows
    assert np.array_equal(a["deadline_us"], b["deadline_us"])
    assert ((a["deadline_us"] >= 5000) & (a["deadline_us"] <= 25000)).all()
    assert len(set(a["deadline_us"].tolist())) > 30
    other = dcnsim.run(sc.replace("seed = 11", "seed = 12")).flows
    assert not np.array_equal(a["deadline_us"], other["deadline_us"])


@pytest.mark.parametrize(
    ("protocol", "table", "field"),
    [
        ("d2tcp", "d_max = 0.5", "transport.d_max"),
        ("d2tcp", "d_min = 0", "transport.d_min"),
        ("d2tcp", "ecn = false", "transport.ecn"),
        ("l2dct", 's_max = "10KB"', "transport.s_max"),
        ("l2dct", "w_min = -1", "transport.w_min"),
        ("l2dct", "bogus = 1", "transport.bogus"),
    ],
)
def test_deadline_laws_config_errors_name_the_field(protocol: str, table: str, field: str) -> None:
    sc = f"""
name = "bad"
seed = 1
[topology]
kind = "single_switch"
hosts = 4
host_rate = "10Gbps"
host_delay = "1us"
[transport]
protocol = "{protocol}"
{table}
[[workload]]
pattern = "poisson"
cdf = "websearch"
load = 0.3
flows = 10
"""
    with pytest.raises(dcnsim.ScenarioError) as ei:
        dcnsim.validate(sc)
    assert ei.value.field == field


def test_cli_runs_the_new_protocols(tmp_path: Path, cli: Any) -> None:
    for protocol in ["d2tcp", "l2dct"]:
        p = tmp_path / f"{protocol}.toml"
        p.write_text(
            f"""
name = "{protocol}"
seed = 1
[topology]
kind = "single_switch"
hosts = 4
host_rate = "10Gbps"
host_delay = "1us"
[transport]
protocol = "{protocol}"
[[workload]]
pattern = "poisson"
cdf = "websearch"
load = 0.3
flows = 20
deadline = {{ min = "5ms", max = "5ms" }}
"""
        )
        r = cli(["run", str(p), "--out", str(tmp_path / protocol)], tmp_path)
        assert r.returncode == 0, r.stderr
        s = Results.load(tmp_path / protocol).summary()
        assert s["deadline_flows"] == 20
        bad = p.read_text().replace(
            f'protocol = "{protocol}"', f'protocol = "{protocol}"\nnope = 1'
        )
        p.write_text(bad)
        r = cli(["run", str(p), "--out", str(tmp_path / "x")], tmp_path)
        assert r.returncode == 2 and "transport.nope" in r.stderr
        assert not (tmp_path / "x").exists()
