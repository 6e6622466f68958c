"""RPO's analytic model of utilisation and flow-completion-time gains (RPO §V, Eq. 1-6).

N flows share a bottleneck of capacity C fairly. At time T_c the capacity available to them
drops to R (congestion elsewhere, an RTT increase, flows going OFF...). A conventional
receiver-driven transport keeps sending at R/N per flow until the flow ends. RPO's
opportunistic packets double the flows' total sending rate every round, as TCP slow start
does, until the bottleneck is full again at T_f, and then send at C. Time is counted in
round-trip times (rounds), C and R in packets per round, the flow size S in packets:

- (1) ``T_f = ceil(log2(C / R)) + T_c``: the round at which RPO fills the link again;
- (2) ``S = (C/N) T_c + (R/N)(2^(T_f - T_c) - 1) + (C/N)(T_1 - T_f)``: what one flow sends;
- (3) ``T_1 = T_f + (N S - C T_c - R (2^(T_f - T_c) - 1)) / C``: RPO's completion time;
- (4) ``T_2 = (S - (C/N) T_c) / (R/N) + T_c``: the conventional transport's completion time;
- (5) ``U_gain = T_2 / T_1``: the utilisation gain (same bytes in less time);
- (6) ``FCT_gain = (T_2 - T_i) / (T_1 - T_i)`` with ``T_i = N S / C``, the completion time
  without congestion: how much less time RPO loses to the congestion.

The model holds only while the flow is still sending at T_f (Eq. 2 has no term for a flow
that ends during the doubling rounds): :func:`gains` refuses parameters for which the flow
would finish before T_f, and R must lie in (0, C]. With R = C both transports take T_i,
U_gain is 1 and FCT_gain is undefined (0 / 0, returned as NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["RpoGains", "fig8_rows", "gains", "packets_per_rtt"]


@dataclass(frozen=True)
class RpoGains:
    """Times in rounds (RTTs) and the two gains of RPO §V for one parameter set."""

    t_f: float
    t_1: float
    t_2: float
    t_i: float
    u_gain: float
    fct_gain: float


def packets_per_rtt(rate_bps: float, rtt_s: float, packet_bytes: float = 1500.0) -> float:
    """Capacity in packets per round: ``rate x RTT / packet size`` (1500 B packets by default)."""
    if rate_bps <= 0 or rtt_s <= 0 or packet_bytes <= 0:
        raise ValueError("rate_bps, rtt_s and packet_bytes must be positive")
    return rate_bps * rtt_s / (8.0 * packet_bytes)


def gains(c: float, r: float, s: float, n: int = 1, t_c: float = 0.0) -> RpoGains:
    """Eq. 1-6 of RPO §V.

    ``c``: bottleneck capacity and ``r``: capacity left after congestion, both in packets per
    round; ``s``: flow size in packets; ``n``: number of flows sharing the bottleneck;
    ``t_c``: the round at which congestion starts.
    """
    if not (c > 0 and math.isfinite(c)):
        raise ValueError(f"c must be a positive finite capacity, got {c}")
    if not (0 < r <= c):
        raise ValueError(f"r must lie in (0, c] = (0, {c}], got {r}")
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"s must be a positive finite size, got {s}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not (t_c >= 0 and math.isfinite(t_c)):
        raise ValueError(f"t_c must be a finite time >= 0, got {t_c}")
    k = math.ceil(math.log2(c / r))  # Eq. 1 without T_c
    t_f = k + t_c
    ramp = r * (2.0**k - 1.0)  # packets all flows send during the doubling rounds
    sent_by_t_f = c * t_c + ramp
    if n * s < sent_by_t_f:
        raise ValueError(
            f"the flows ({n} x {s} packets) end before RPO fills the link again at round {t_f}"
            f" ({sent_by_t_f} packets sent by then): Eq. 2 does not apply; use a larger s or"
            " a smaller t_c"
        )
    t_1 = t_f + (n * s - c * t_c - ramp) / c  # Eq. 3
    t_2 = (s - c / n * t_c) / (r / n) + t_c  # Eq. 4
    t_i = n * s / c
    u_gain = t_2 / t_1  # Eq. 5
    den = t_1 - t_i
    fct_gain = (t_2 - t_i) / den if den != 0 else math.nan  # Eq. 6
    return RpoGains(t_f=t_f, t_1=t_1, t_2=t_2, t_i=t_i, u_gain=u_gain, fct_gain=fct_gain)


#: Fig. 8's setting (RPO §V): 10 Gbps, 50 us round trip, one flow, 1500 B packets.
FIG8_RATE_BPS = 10e9
FIG8_RTT_S = 50e-6
#: Fig. 8(b)'s capacity left after congestion, in packets per round.
FIG8_R_PACKETS = 20.0
#: Flow sizes (packets) of our Fig. 8 curves; the paper does not list its own.
FIG8A_SIZES = (100, 1000, 10000)
FIG8B_SIZES = (1000, 2000, 5000, 10000)


def fig8_rows() -> list[dict[str, float | str]]:
    """The curves of Fig. 8 as table rows.

    Panel ``a``: ``U_gain`` against R/C = 0.05, 0.10, ..., 1.00 for the sizes of
    :data:`FIG8A_SIZES` (N = 1, T_c = 0). Panel ``b``: ``FCT_gain`` against T_c/T_i = 0.0,
    0.1, ..., 0.9 with R = 20 packets per round, for the sizes of :data:`FIG8B_SIZES`
    (T_c = ratio x T_i, T_i = S / C). C is 10 Gbps x 50 us in 1500 B packets (41.67).
    """
    c = packets_per_rtt(FIG8_RATE_BPS, FIG8_RTT_S)
    rows: list[dict[str, float | str]] = []
    for s in FIG8A_SIZES:
        for i in range(1, 21):
            x = i / 20
            g = gains(c, x * c, s)
            rows.append(_row("a", s, x * c, c, 0.0, g))
    for s in FIG8B_SIZES:
        for i in range(10):
            ratio = i / 10
            g = gains(c, FIG8_R_PACKETS, s, t_c=ratio * s / c)
            rows.append(_row("b", s, FIG8_R_PACKETS, c, ratio, g))
    return rows


def _row(panel: str, s: float, r: float, c: float, ratio: float, g: RpoGains) -> dict:
    return {
        "panel": panel,
        "s_packets": s,
        "c_packets": c,
        "r_packets": r,
        "r_over_c": r / c,
        "tc_over_ti": ratio,
        "t_f": g.t_f,
        "t_1": g.t_1,
        "t_2": g.t_2,
        "t_i": g.t_i,
        "u_gain": g.u_gain,
        "fct_gain": g.fct_gain,
    }
