"""RPO §V model (Eq. 1-6): hand-computed values, limiting cases and the trends of Fig. 8."""

from __future__ import annotations

import math

import pytest

from dcnsim.models.rpo import gains, packets_per_rtt


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
