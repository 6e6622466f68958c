"""How much of a workload fits in the first RTT (Aeolus §II-B, Fig. 2).

A flow that a sender could transmit at full link speed within one round-trip time needs no
credit at all: a proactive transport that holds it back for the first RTT (the "pre-credit
phase") makes it take at least twice as long as necessary. The paper's idealised estimate
assumes one flow per link (no multiplexing):

- **flows** (Fig. 2a): a flow of ``size`` bytes "could have been finished within the first
  RTT" when ``size x 8 / rate <= RTT``, i.e. when it is at most ``B = rate x RTT / 8`` bytes;
  the fraction of such flows is P(size <= B) under the workload's size distribution;
- **bytes** (Fig. 2b): ``B / A``, with ``A`` the workload's mean flow size, capped at 1.

The paper does not give the RTT; callers pass it. Distributions are dcnsim's shipped ones,
read in their native reading (:func:`dcnsim._core.shipped_cdf_stats`).
"""

from __future__ import annotations

from dataclasses import dataclass

from dcnsim import _core

__all__ = ["FirstRtt", "first_rtt"]


@dataclass(frozen=True)
class FirstRtt:
    """One workload at one link speed and RTT."""

    cdf: str
    rate_gbps: float
    rtt_us: float
    #: bytes a link sends in one RTT (B)
    rtt_bytes: float
    #: the workload's mean flow size (A), bytes
    mean_bytes: float
    #: fraction of flows of at most B bytes (Fig. 2a)
    flows: float
    #: min(1, B / A) (Fig. 2b)
    bytes: float


def first_rtt(cdf: str, rate_gbps: float, rtt_us: float) -> FirstRtt:
    """Fig. 2's two fractions for the shipped distribution ``cdf`` on a ``rate_gbps`` link
    with a round-trip time of ``rtt_us``. Raises ValueError for an unknown distribution or a
    rate or RTT that is not positive."""
    if not rate_gbps > 0 or not rtt_us > 0:
        raise ValueError(f"rate_gbps and rtt_us must be positive, got {rate_gbps}, {rtt_us}")
    b = rate_gbps * 1e9 * rtt_us * 1e-6 / 8
    # P(size <= B) = P(size < floor(B) + 1) for whole-byte sizes.
    stats = _core.shipped_cdf_stats(cdf, [int(b) + 1])
    if stats is None:
        raise ValueError(f"no shipped flow-size distribution named {cdf!r}")
    mean, (below,) = stats
    return FirstRtt(cdf, rate_gbps, rtt_us, b, mean, below, min(1.0, b / mean))
