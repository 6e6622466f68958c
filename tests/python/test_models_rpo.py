"""RPO §V model (Eq. 1-6): hand-computed values, limiting cases and the trends of Fig. 8."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from dcnsim.models.rpo import fig8_rows, gains, packets_per_rtt


def test_hand_computed_values():
    # C = 8, R = 2 packets per round, S = 100 packets, one flow, congestion from round 0.
    # T_f = ceil(log2 4) = 2; RPO sends 2 + 4 = 6 packets in rounds 0-1, then 94 at 8 per
    # round: T_1 = 2 + 94 / 8 = 13.75. Without RPO: T_2 = 100 / 2 = 50; T_i = 100 / 8 = 12.5.
    g = gains(8, 2, 100)
    assert (g.t_f, g.t_1, g.t_2, g.t_i) == (2, 13.75, 50, 12.5)
    assert g.u_gain == pytest.approx(50 / 13.75)
    assert g.fct_gain == pytest.approx(37.5 / 1.25)
    # Two flows, congestion from round 3: T_f = 3 + 2 = 5; T_1 = 5 + (200 - 24 - 6) / 8;
    # T_2 = (100 - 12) / 1 + 3 = 91.
    g = gains(8, 2, 100, n=2, t_c=3)
    assert (g.t_f, g.t_1, g.t_2) == (5, 5 + 170 / 8, 91)


def test_no_congestion_left_means_no_gain():
    # R = C: both transports finish at the uncongested time; U_gain = 1, FCT_gain = 0/0.
    g = gains(40, 40, 500, n=3, t_c=2)
    assert g.t_1 == pytest.approx(g.t_i) and g.t_2 == pytest.approx(g.t_i)
    assert g.u_gain == pytest.approx(1.0)
    assert math.isnan(g.fct_gain)


def test_long_flows_gain_tends_to_c_over_r():
    # Once the doubling rounds are negligible, RPO runs at C and the other at R.
    g = gains(40, 10, 1e9)
    assert g.u_gain == pytest.approx(4.0, rel=1e-6)


def test_fig8_trends():
    c = packets_per_rtt(10e9, 50e-6)  # 10 Gbps, 50 us: 41.67 packets per round
    assert c == pytest.approx(41.6667, rel=1e-4)
    # Fig. 8(a): the utilisation gain falls as R/C rises (N = 1, T_c = 0).
    u = [gains(c, x * c, 2000).u_gain for x in (0.1, 0.2, 0.4, 0.6, 0.8, 1.0)]
    assert all(a > b for a, b in zip(u, u[1:], strict=False))

    # Fig. 8(b): R = 20 packets per round; FCT gain rises with S and falls with T_c / T_i.
    def fct(s: float, ratio: float) -> float:
        return gains(c, 20, s, t_c=ratio * s / c).fct_gain

    for ratio in (0.0, 0.2, 0.5):
        f = [fct(s, ratio) for s in (200, 400, 800, 1600)]
        assert all(a < b for a, b in zip(f, f[1:], strict=False))
    for s in (400, 800, 1600):
        f = [fct(s, ratio) for ratio in (0.0, 0.2, 0.5, 0.8)]
        assert all(a > b for a, b in zip(f, f[1:], strict=False))


@pytest.mark.parametrize(
    ("args", "word"),
    [
        ((8, 0, 100), "r must"),
        ((8, 9, 100), "r must"),
        ((0, 1, 100), "c must"),
        ((8, 2, 0), "s must"),
        ((8, 2, 100, 0), "n must"),
        ((8, 2, 100, 1, -1), "t_c must"),
        ((8, 2, 5), "Eq. 2 does not apply"),
    ],
)
def test_bad_parameters_are_refused(args, word):
    with pytest.raises(ValueError, match=word):
        gains(*args)


def test_fig8_rows_hand_computed_and_directions():
    rows = fig8_rows()
    c = 10e9 * 50e-6 / 12000  # 41.67 packets per round
    # (b), S = 1000, T_c = 0, R = 20: T_f = ceil(log2 2.083) = 2, T_2 = 1000 / 20 = 50,
    # T_i = 24, T_1 - T_i = 2 - 20 x 3 / C = 0.56, so FCT_gain = 26 / 0.56 = 46.43.
    (b0,) = [
        r for r in rows if r["panel"] == "b" and r["s_packets"] == 1000 and r["tc_over_ti"] == 0
    ]
    assert b0["t_2"] == pytest.approx(50) and b0["t_i"] == pytest.approx(24)
    assert b0["t_1"] - b0["t_i"] == pytest.approx(2 - 60 / c)
    assert b0["fct_gain"] == pytest.approx(26 / (2 - 60 / c))
    # (a), S = 100, R/C = 0.5: T_f = 1, T_1 = 1 + (100 - C/2) / C, T_2 = 200 / C.
    (a5,) = [
        r for r in rows if r["panel"] == "a" and r["s_packets"] == 100 and r["r_over_c"] == 0.5
    ]
    assert a5["u_gain"] == pytest.approx((200 / c) / (1 + (100 - c / 2) / c))
    # Directions of Fig. 8: U_gain falls as R/C rises; FCT_gain rises with S, falls with T_c/T_i.
    for s in {r["s_packets"] for r in rows if r["panel"] == "a"}:
        u = [r["u_gain"] for r in rows if r["panel"] == "a" and r["s_packets"] == s]
        assert all(x > y for x, y in zip(u, u[1:], strict=False)) and u[-1] == pytest.approx(1)
    sizes = sorted({r["s_packets"] for r in rows if r["panel"] == "b"})
    for ratio in {r["tc_over_ti"] for r in rows if r["panel"] == "b"}:
        f = [
            r["fct_gain"]
            for s in sizes
            for r in rows
            if r["panel"] == "b" and r["s_packets"] == s and r["tc_over_ti"] == ratio
        ]
        assert all(x < y for x, y in zip(f, f[1:], strict=False))
    for s in sizes:
        f = [r["fct_gain"] for r in rows if r["panel"] == "b" and r["s_packets"] == s]
        assert all(x > y for x, y in zip(f, f[1:], strict=False))


def test_committed_fig8_table_is_the_models_output():
    path = (
        Path(__file__).resolve().parents[2] / "repro" / "rpo_fig8_model" / "results" / "table.csv"
    )
    with open(path, newline="") as f:
        got = list(csv.DictReader(f))
    want = fig8_rows()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g["panel"] == w["panel"] and float(g["s_packets"]) == w["s_packets"]
        for k in ("u_gain", "fct_gain", "t_1", "t_2"):
            assert float(g[k]) == pytest.approx(w[k], rel=1e-3, nan_ok=True), (g, k)
