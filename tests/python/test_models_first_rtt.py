"""The first-RTT model of Aeolus Fig. 2 (python/dcnsim/models/first_rtt.py) and its folder."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from dcnsim.models.first_rtt import first_rtt

FOLDER = Path(__file__).resolve().parents[2] / "repro" / "aeolus_fig2_model"


def test_uniform_distribution_gives_the_hand_computed_fractions() -> None:
    # U[2000, 198000] B, whole bytes; 10 Gbps x 40 us = 50,000 B per RTT.
    f = first_rtt("uniform_pase", 10, 40)
    assert f.rtt_bytes == 50_000
    assert f.flows == pytest.approx((50_000 - 2_000) / 196_000, rel=1e-9)
    assert f.bytes == pytest.approx(50_000 / f.mean_bytes)
    assert f.mean_bytes == pytest.approx(100_000, rel=1e-5)
    # Beyond the largest size every flow fits, and the byte share is capped at 1.
    big = first_rtt("uniform_pase", 400, 52)
    assert big.flows == 1.0 and big.bytes == 1.0


def test_fractions_never_fall_as_the_link_gets_faster() -> None:
    for cdf in ("webserver", "cachefollower", "websearch", "datamining"):
        for rtt in (4.5, 52.0):
            pts = [first_rtt(cdf, r, rtt) for r in (10, 25, 40, 100, 200, 400)]
            for a, b in zip(pts, pts[1:]):
                assert a.flows <= b.flows and a.bytes <= b.bytes, (cdf, rtt)
            assert pts[-1].flows > pts[0].flows, (cdf, rtt)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="no shipped"):
        first_rtt("no_such_workload", 10, 10)
    with pytest.raises(ValueError, match="positive"):
        first_rtt("websearch", 0, 10)


def test_committed_table_is_what_the_script_computes() -> None:
    spec = importlib.util.spec_from_file_location("fig2", FOLDER / "fig2.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with open(FOLDER / "results" / "table.csv", newline="") as fh:
        committed = list(csv.DictReader(fh))
    now = mod.rows()
    assert len(committed) == len(now) == 3 * 4 * 6
    for c, n in zip(committed, now):
        assert c["cdf"] == n["cdf"]
        for k in ("rtt_us", "rate_gbps", "flows", "bytes"):
            assert float(c[k]) == pytest.approx(float(n[k]), rel=1e-3), (c, k)
