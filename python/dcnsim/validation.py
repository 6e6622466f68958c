"""The validation suite: small scenarios whose answer is known independently of dcnsim, run
and compared with that answer (``dcnsim validate-model``, ``make validate``).

Each check has a setup in physical terms, a reference (an exact value, a queueing formula, an
exact fluid schedule of the same arrivals, a conservation law), our number, a tolerance and
the reason the tolerance is fair, chosen from the mechanism before looking at the result. A
check that fails is either a bug to find or, when its cause is known and measured, a listed
deviation (``known``); the report says which.

The references are in :mod:`dcnsim.theory`. The reduced set (``reduced=True``) runs in the
test suite; the full set adds seeds, loads and transports.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dcnsim import theory
from dcnsim.api import run

MSS = 1460
HEADER = 40


@dataclass
class Check:
    """One row of the report."""

    group: str
    name: str
    setup: str
    reference: str
    ours: str
    tolerance: str
    why: str
    passed: bool
    known: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if self.passed:
            return "pass"
        return "known deviation" if self.known else "FAIL"


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


def _star(n_hosts: int, rate: str, buffer: str, protocol: str, **transport: Any) -> dict[str, Any]:
    return {
        "topology": {
            "kind": "single_switch",
            "hosts": n_hosts,
            "host_rate": rate,
            "host_delay": "1us",
        },
        "network": {"buffer": buffer},
        "transport": {"protocol": protocol, **transport},
    }


def _bottleneck(
    protocol: str, load: float, flows: int, seed: int, sizes: tuple[str, str]
) -> dict[str, Any]:
    """16 senders and one receiver on one switch, 10 Gbps links, Poisson arrivals whose load
    is defined on the receiver's link: that link is the only place flows meet. The buffer
    (20 MB) is large enough that nothing is lost at these loads, so the references, which
    know nothing of loss, apply."""
    sc = _star(17, "10Gbps", "20MB", protocol)
    sc["workload"] = [
        {
            "pattern": "poisson",
            "load": load,
            "receivers": [16],
            "uniform": {"min": sizes[0], "max": sizes[1]},
            "flows": flows,
        }
    ]
    sc["seed"] = seed
    return sc


def _run_with_flows(sc: dict[str, Any], rows: list[tuple[int, int, int, str]]) -> Any:
    """Run ``sc`` with an explicit flow list (src, dst, size in bytes, start with its unit)."""
    with tempfile.TemporaryDirectory(prefix="dcnsim-validate-") as d:
        with open(f"{d}/flows.csv", "w") as fh:
            fh.write("src,dst,size,start\n")
            for src, dst, size, start in rows:
                fh.write(f"{src},{dst},{size},{start}\n")
        sc = dict(sc, workload=[{"pattern": "explicit", "file": "flows.csv"}])
        return run(sc, base_dir=d)


# --------------------------------------------------------------------------------------------
# Exactness: a lone flow finishes at its ideal FCT
# --------------------------------------------------------------------------------------------


def ideal_fct_equal_rates(
    size: int, mtu: int, links: int, rate_bps: float, delay_s: float
) -> float:
    """Ideal FCT (s) of ``size`` payload bytes on a path of ``links`` links of equal rate and
    delay, derived here independently of the core: with S the serialization of a full packet,
    s that of the last one and n packets, the last packet leaves the first link at
    (n - 1) S + s and, store-and-forward behind the full packet ahead of it, gains S per
    further link; with one packet it gains its own s per link."""
    mss = mtu - HEADER
    n = max(1, math.ceil(size / mss))
    full = mtu * 8 / rate_bps
    last = (size - (n - 1) * mss + HEADER) * 8 / rate_bps
    if n == 1:
        return links * (last + delay_s)
    return (n - 1) * full + (links - 1) * full + last + links * delay_s


def check_lone_flow(protocol: str, topo: str, mtu: int, sizes: Iterable[int]) -> Check:
    """Flows one at a time on an idle network, far apart, each with a window that never limits
    (TCP's initial window set to 10,000 packets; Homa's unscheduled bytes and grants keep its
    pipe full by design): FCT must equal the ideal FCT to the picosecond."""
    sizes = list(sizes)
    if topo == "single_switch":
        topology = {"kind": "single_switch", "hosts": 2, "host_rate": "10Gbps", "host_delay": "1us"}
        links, src, dst = 2, 0, 1
    else:
        topology = {
            "kind": "leaf_spine",
            "leaves": 2,
            "hosts_per_leaf": 1,
            "spines": 1,
            "host_rate": "10Gbps",
            "core_rate": "10Gbps",
            "host_delay": "1us",
            "core_delay": "1us",
        }
        links, src, dst = 4, 0, 1
    transport: dict[str, Any] = {"protocol": protocol}
    if protocol in ("tcp", "dctcp"):
        transport["init_cwnd"] = 10_000
    sc = {
        "topology": topology,
        "network": {"mtu": f"{mtu}B", "buffer": "20MB"},
        "transport": transport,
    }
    r = _run_with_flows(sc, [(src, dst, s, f"{i * 20}ms") for i, s in enumerate(sizes)])
    f = r.flows
    worst_ps = 0.0
    worst_ref_ps = 0.0
    for i, s in enumerate(sizes):
        ref = ideal_fct_equal_rates(s, mtu, links, 10e9, 1e-6)
        fct = float(f["fct_us"][i]) * 1e-6
        core_ideal = float(f["ideal_fct_us"][i]) * 1e-6
        # NaN (an unfinished flow) must fail, not vanish in max().
        worst_ps = max(worst_ps, abs(fct - core_ideal) * 1e12) if math.isfinite(fct) else math.inf
        worst_ref_ps = max(worst_ref_ps, abs(core_ideal - ref) * 1e12)
    ok = worst_ps < 0.5 and worst_ref_ps < 0.5
    return Check(
        "exactness",
        f"lone flow = ideal FCT: {protocol}, {links} links, MTU {mtu} B",
        f"{protocol} on an idle {topo.replace('_', '-')} path of {links} 10 Gbps links "
        "(1 us each), "
        f"MTU {mtu} B; flows of {', '.join(str(s) for s in sizes)} B, one at a time",
        "ideal FCT derived by hand for equal-rate links (store-and-forward pipeline)",
        f"largest /FCT - ideal/ {worst_ps:.1f} ps; core's ideal vs hand-derived "
        f"{worst_ref_ps:.1f} ps",
        "< 1 ps",
        "times are integer picoseconds and the pipeline is deterministic: any difference is a bug",
        ok,
    )


# --------------------------------------------------------------------------------------------
# Fair sharing: processor sharing
# --------------------------------------------------------------------------------------------


def _payload_rate() -> float:
    """Payload bytes per second a 10 Gbps link carries in full data packets."""
    return 10e9 / 8 * MSS / (MSS + HEADER)


def _slowdowns(flows: dict[str, np.ndarray], done_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(our slowdowns, the reference's) with service time = size / payload rate, so that both
    have the same denominator."""
    rate = _payload_rate()
    a = flows["start_us"] * 1e-6
    s = flows["size_bytes"].astype(np.float64)
    svc = s / rate
    return flows["fct_us"] * 1e-6 / svc, (done_s - a) / svc


def _bucket_worst(ours: np.ndarray, ref: np.ndarray, sizes: np.ndarray, buckets: int = 4) -> float:
    """Largest relative difference of the mean slowdown over size quartiles."""
    edges = np.quantile(sizes, np.linspace(0, 1, buckets + 1))
    worst = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (sizes >= lo) & (sizes <= hi)
        if sel.sum() == 0:
            continue
        worst = max(worst, abs(np.nanmean(ours[sel]) / np.mean(ref[sel]) - 1))
    return worst


def _batch_se(x: np.ndarray, batches: int = 10) -> float:
    """Standard error of the mean of a correlated series by batch means."""
    n = len(x) // batches
    if n == 0:
        return float("nan")
    means = [np.mean(x[i * n : (i + 1) * n]) for i in range(batches)]
    return float(np.std(means, ddof=1) / math.sqrt(batches))


#: Measured causes of the fair-sharing deviations (see docs/validation.md).
PS_KNOWN = {
    "tcp": (
        "TCP without ECN fills the drop-tail buffer: the bottleneck holds hundreds of KB to MBs "
        "(the row's queue figures) and every flow waits behind that queue whatever its size, "
        "FIFO rather than processor sharing. When the queueing delay exceeds a new flow's "
        "initial RTO (1 ms here: the floor min_rto, since 3 base RTTs are less) the flow times "
        "out without any loss and resends its window go-back-N (the row's timeouts with 0 "
        "drops), which keeps the queue up. Linux starts at a 1 s initial RTO (RFC 6298), which "
        "would not fire here"
    ),
    "swift": (
        "Swift's mean slowdown stays within a few % of fluid PS but it favours short flows: the "
        "smallest size quartile below its PS slowdown, the largest above. Not the flow-based "
        "target scaling (with `flow_scaling = false` the spread grows to 39% at load 0.8, seed "
        "2). The cause, measured: every flow starts at 10 packets, several times its fair share "
        "of this 12.5 KB BDP, and Swift's additive increase of one packet per RTT against "
        "decreases capped at once per RTT evens the shares out more slowly than short flows "
        "live. The same runs with `init_cwnd = 2` give quartile ratios 1.06 / 1.00 / 0.98 / "
        "0.99 (seed 1) and 1.00 / 1.01 / 1.01 / 1.01 (seed 2) against 0.88 / 1.04 / 1.07 / "
        "1.09 and 0.82 / 1.01 / 1.08 / 1.12 at the default 10, within the 10% per quartile"
    ),
}


def check_ps(protocol: str, load: float, flows: int, seed: int) -> list[Check]:
    sc = _bottleneck(protocol, load, flows, seed, ("100KB", "1MB"))
    sc["output"] = {"sample_interval": "100us"}
    r = run(sc)
    f = r.flows
    sm = r.summary()
    rate = _payload_rate()
    a = f["start_us"] * 1e-6
    s = f["size_bytes"].astype(np.float64)
    ps_done = theory.fluid_ps(a, s, rate)
    ours, ref = _slowdowns(f, ps_done)
    unfinished = int(np.isnan(f["fct_us"]).sum())
    drops = sm["drops_total"]
    rel = float(np.nanmean(ours) / np.mean(ref) - 1)
    worst_bucket = _bucket_worst(ours, ref, s)
    setup = (
        f"{protocol}: 16 senders -> 1 receiver on one switch, 10 Gbps links, 20 MB buffer; "
        f"Poisson arrivals at load {load} of the receiver's link, sizes uniform 100 KB-1 MB, "
        f"{flows} flows, seed {seed}"
    )
    out = [
        Check(
            "fair sharing",
            f"{protocol} vs fluid PS, load {load}, seed {seed}",
            setup,
            "exact fluid processor sharing of the same arrivals at the link's payload rate "
            f"(mean slowdown {np.mean(ref):.3f})",
            f"mean slowdown {np.nanmean(ours):.3f} ({rel:+.1%}); worst size quartile "
            f"{worst_bucket:.1%}; {unfinished} unfinished, {drops} drops, "
            f"{sm['timeouts_total']} timeouts; bottleneck queue mean "
            f"{(sm['bottleneck_queue_avg_bytes'] or 0) / 1e3:.0f} KB, max "
            f"{(sm['bottleneck_queue_max_bytes'] or 0) / 1e3:.0f} KB",
            "mean 5%, each size quartile 10%",
            "same arrivals, so no sampling noise; what remains is per-flow protocol overhead (a "
            "base RTT of ~7 us against services of 0.1-0.8 ms: ~1-2%) and packet-level rather than "
            "fluid fairness, larger per quartile (fewer flows)",
            abs(rel) <= 0.05 and worst_bucket <= 0.10 and unfinished == 0,
            known=PS_KNOWN.get(protocol, ""),
            detail={"rel": rel, "worst_bucket": worst_bucket},
        )
    ]
    return out


def check_workload_ps(load: float, flows: int, seed: int) -> Check:
    """The generator's arrivals, served by ideal PS, against M/G/1-PS: checks the Poisson
    process and the load calibration (no packet simulated: the run is only used for its flow
    list, with the transport irrelevant)."""
    sc = _bottleneck("dctcp", load, flows, seed, ("100KB", "1MB"))
    sc["run"] = {"time_limit": "1ps"}
    r = run(sc)
    f = r.flows
    rate = _payload_rate()
    a = f["start_us"] * 1e-6
    s = f["size_bytes"].astype(np.float64)
    ref_sd = (theory.fluid_ps(a, s, rate) - a) / (s / rate)
    rho = load * (MSS + HEADER) / MSS
    formula = theory.mg1_ps_slowdown(rho)
    mean = float(np.mean(ref_sd))
    se = _batch_se(ref_sd)
    ok = abs(mean - formula) <= 3 * se
    return Check(
        "workload",
        f"Poisson arrivals at load {load} vs M/G/1-PS, seed {seed}",
        f"the flow list of the fair-sharing scenario ({flows} flows, seed {seed}), served by an "
        "ideal PS server at the receiver link's payload rate",
        f"M/G/1-PS mean slowdown 1/(1 - rho) = {formula:.3f}, rho = {rho:.3f} (load x 1500/1460: "
        "headers)",
        f"{mean:.3f} (standard error {se:.3f})",
        "3 standard errors (batch means over 10 batches)",
        "a finite sample of a heavy-traffic queue: the error of its mean is what a correct "
        "generator can be off by",
        ok,
    )


# --------------------------------------------------------------------------------------------
# Size-based scheduling: SRPT
# --------------------------------------------------------------------------------------------


def check_srpt(
    protocol: str, load: float, flows: int, seed: int, sizes: tuple[str, str], known: str = ""
) -> Check:
    sc = _bottleneck(protocol, load, flows, seed, sizes)
    r = run(sc)
    f = r.flows
    sm = r.summary()
    rate = _payload_rate()
    a = f["start_us"] * 1e-6
    s = f["size_bytes"].astype(np.float64)
    srpt = theory.fluid_srpt(a, s, rate)
    ours, ref = _slowdowns(f, srpt)
    rel = float(np.nanmean(ours) / np.mean(ref) - 1)
    worst_bucket = _bucket_worst(ours, ref, s)
    unfinished = int(np.isnan(f["fct_us"]).sum())
    ok = abs(rel) <= 0.10 and worst_bucket <= 0.20 and unfinished == 0
    return Check(
        "size-based scheduling",
        f"{protocol} vs fluid SRPT, load {load}, sizes {sizes[0]}-{sizes[1]}",
        f"{protocol}: 16 senders -> 1 receiver on one switch, 10 Gbps links, 20 MB buffer; "
        f"Poisson arrivals at load {load} of the receiver's link, sizes uniform "
        f"{sizes[0]}-{sizes[1]}, {flows} flows, seed {seed}",
        f"exact fluid preemptive SRPT of the same arrivals (mean slowdown {np.mean(ref):.3f})",
        f"mean slowdown {np.nanmean(ours):.3f} ({rel:+.1%}); worst size quartile "
        f"{worst_bucket:.1%}; "
        f"{sm['drops_total']} drops, {sm['timeouts_total']} timeouts, "
        f"{sm['retx_bytes_total'] / 1e6:.1f} MB retransmitted",
        "mean 10%, each size quartile 20%",
        "Homa approximates SRPT with 8 priority classes and an overcommitment of several "
        "messages, so a few messages share the link where SRPT serves one; the quartiles carry "
        "fewer flows",
        ok,
        known=known if not ok else "",
        detail={"rel": rel, "worst_bucket": worst_bucket},
    )


def check_workload_srpt(load: float, flows: int, seed: int, sizes: tuple[str, str]) -> Check:
    sc = _bottleneck("dctcp", load, flows, seed, sizes)
    sc["run"] = {"time_limit": "1ps"}
    r = run(sc)
    f = r.flows
    rate = _payload_rate()
    a = f["start_us"] * 1e-6
    s = f["size_bytes"].astype(np.float64)
    t = theory.fluid_srpt(a, s, rate) - a
    # Schrage-Miller for the distribution the generator draws from (uniform sizes: a fine grid
    # of the uniform law stands for it) at the arrival rate the load calibrates.
    lo, hi = (_size_bytes(x) for x in sizes)
    grid = np.linspace(lo, hi, 2001)
    dist = theory.SizeDistribution(grid)
    lam = load * 10e9 / 8 / dist.mean
    formula = float(np.mean([theory.mg1_srpt_response(x, dist, lam, rate) for x in s]))
    mean = float(np.mean(t))
    se = _batch_se(t)
    ok = abs(mean - formula) <= 3 * se
    return Check(
        "workload",
        f"Poisson arrivals at load {load} vs M/G/1-SRPT (Schrage-Miller), "
        f"sizes {sizes[0]}-{sizes[1]}",
        f"the flow list of the SRPT scenario ({flows} flows, seed {seed}), served by an ideal "
        "preemptive SRPT server at the receiver link's payload rate",
        f"Schrage-Miller mean response time over the same sizes: {formula * 1e6:.1f} us",
        f"{mean * 1e6:.1f} us (standard error {se * 1e6:.1f} us)",
        "3 standard errors (batch means over 10 batches)",
        "a finite sample: its mean can be off by its sampling error",
        ok,
    )


def _size_bytes(text: str) -> float:
    units = {"KB": 1e3, "MB": 1e6, "B": 1.0}
    for u in ("KB", "MB", "B"):
        if text.endswith(u):
            return float(text[: -len(u)]) * units[u]
    raise ValueError(text)


def _quartiles(sizes: np.ndarray) -> list[np.ndarray]:
    """Masks of the four size quartiles (by the sample's own quantiles)."""
    edges = np.quantile(sizes, np.linspace(0, 1, 5))
    out = []
    for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        out.append((sizes >= lo) & ((sizes < hi) if i < 3 else (sizes <= hi)))
    return out


def _uniform_dist(sizes: tuple[str, str]) -> theory.SizeDistribution:
    """The uniform size law the generator draws from, as a fine grid."""
    lo, hi = (_size_bytes(x) for x in sizes)
    return theory.SizeDistribution(np.linspace(lo, hi, 2001))


def _fmt_ratios(r: Iterable[float]) -> str:
    return "/".join(f"{x:.2f}" for x in r)


#: Measured cause of pFabric's departure from SRPT in the largest flows (docs/validation.md).
PFABRIC_KNOWN = (
    "At load 0.8 pFabric loses bottleneck capacity that SRPT does not: its small buffer drops the "
    "packets of the largest remaining flows, which recover only by the fixed timeout (3 base "
    "RTTs) and restart from one packet, so the link serves some packets twice (resent while "
    "their first copy was still queued: the row's bytes served twice, and retransmissions "
    "beyond the bytes dropped) and stands idle while the only flows present are in timeout or "
    "slow start (the row's idle time). SRPT's waiting grows as 1 / (1 - load)^2 for the largest "
    "flows, so a loss of about 2% of the capacity at load 0.8 shows mostly in them: the fluid "
    "SRPT of the same arrivals on a link slowed by the measured share comes within the row's "
    "tolerance of the run (its last figures)"
)


#: pFabric's switch buffer in the SRPT rows: two bandwidth-delay products of this network
#: (base RTT 6.5 us at 10 Gbps: 8.1 KB), pFabric's own sizing (§4.1). With it no packet waits
#: in the switch longer than the retransmission timeout (3 base RTTs); a large buffer makes
#: packets wait past it and time out without loss (measured at load 0.5: a 300 KB buffer gives
#: FCT / SRPT of 3.9-6.4 by quartile with 288,514 timeouts, 36 KB 1.09-1.18 with 28,216).
PFABRIC_BUFFER = "16KB"


def check_pfabric_srpt(
    load: float, flows: int, seed: int, sizes: tuple[str, str], buffer: str
) -> list[Check]:
    """pFabric (end host and switch policy) on one bottleneck against M/G/1-SRPT per size
    quartile (Schrage-Miller), with the exact fluid SRPT schedule of the same arrivals beside
    it to separate sampling noise from the transport. Modelled FCT of a flow: its ideal FCT
    (propagation and store-and-forward on the idle path) plus the reference's waiting, i.e.
    response time minus service time."""
    sc = _bottleneck("pfabric", load, flows, seed, sizes)
    sc["network"]["queue_policy"] = "pfabric"
    sc["network"]["pfabric"] = {"buffer": buffer}
    r = run(sc)
    f = r.flows
    sm = r.summary()
    rate = _payload_rate()
    a = f["start_us"] * 1e-6
    s = f["size_bytes"].astype(np.float64)
    svc = s / rate
    ideal = f["ideal_fct_us"] * 1e-6
    fct = f["fct_us"] * 1e-6
    dist = _uniform_dist(sizes)
    lam = load * 10e9 / 8 / dist.mean
    sm_model = ideal + np.array([theory.mg1_srpt_response(x, dist, lam, rate) for x in s]) - svc
    fluid = ideal + theory.fluid_srpt(a, s, rate) - a - svc
    qs = _quartiles(s)
    r_sm = [float(np.nanmean(fct[q]) / np.mean(sm_model[q])) for q in qs]
    r_fl = [float(np.nanmean(fct[q]) / np.mean(fluid[q])) for q in qs]
    r_fs = [float(np.mean(fluid[q]) / np.mean(sm_model[q])) for q in qs]
    # Sampling error of this flow sample against the formula: batch means of the fluid
    # schedule's per-flow ratio to the formula, per quartile.
    se = [_batch_se(fluid[q] / sm_model[q]) for q in qs]
    unfinished = int(np.isnan(fct).sum())
    # Retransmitted payload beyond the bytes dropped anywhere (wire bytes, so an upper bound
    # on the payload lost): a lower bound on the resent copies of packets that were not lost,
    # only waiting in a queue past the retransmission timeout.
    retx = float(sm["retx_bytes_total"])
    dropped = float(np.sum(r.ports["dropped_bytes"]))
    spurious = max(0.0, retx - dropped)
    payload = float(np.sum(s))
    # Bottleneck capacity SRPT never loses: bytes the receiver's link served beyond each
    # flow's packets once (duplicates, probes), and time it stood idle while flows were in the
    # system (the union of the flows' [start, finish] minus its busy time; an upper bound, as
    # it includes each busy period's first and last hop).
    ports = r.ports
    bp = int(np.flatnonzero((ports["peer"] == 16) & (ports["node_kind"] != "host"))[0])
    tx = float(ports["tx_bytes"][bp])
    unique = float(np.sum(s + np.maximum(1, np.ceil(s / MSS)) * HEADER))
    dup = tx - unique
    busy = tx * 8 / 10e9
    order = np.argsort(a)
    present = 0.0
    cur_s, cur_e = -1.0, -1.0
    for i in order:
        st, en = a[i], a[i] + fct[i]
        if st > cur_e:
            present += cur_e - cur_s if cur_e > cur_s else 0.0
            cur_s, cur_e = st, en
        else:
            cur_e = max(cur_e, en)
    present += cur_e - cur_s
    idle = present - busy
    # Diagnostic: the fluid SRPT of the same arrivals on a link slowed by that lost share.
    lost = (dup * 8 / 10e9 + idle) / present
    fluid_lost = ideal + theory.fluid_srpt(a, s, rate * (1 - lost)) - a - svc
    r_lost = [float(np.nanmean(fct[q]) / np.mean(fluid_lost[q])) for q in qs]
    ok_fl = all(abs(x - 1) <= 0.15 for x in r_fl) and unfinished == 0
    ok_sm = all(abs(x - 1) <= 0.15 + 3 * e for x, e in zip(r_sm, se)) and unfinished == 0
    setup = (
        f"pfabric end hosts, pfabric switch policy with a {buffer} buffer: 16 senders -> 1 "
        f"receiver on one switch, 10 Gbps links; Poisson arrivals at load {load} of the "
        f"receiver's link, sizes uniform {sizes[0]}-{sizes[1]}, {flows} flows, seed {seed}"
    )
    common = (
        f"{unfinished} unfinished, {sm['drops_total']} drops ({dropped / 1e6:.1f} MB), "
        f"{sm['timeouts_total']} timeouts in {sm['flows_with_timeout']} flows, "
        f"{retx / 1e6:.1f} MB retransmitted ({retx / payload:.1%} of the payload), of which at "
        f"least {spurious / 1e6:.1f} MB were copies of packets not lost; the bottleneck served "
        f"{dup / 1e6:.1f} MB twice ({dup / unique:.1%} of its unique bytes) and stood idle at most "
        f"{idle * 1e3:.2f} ms ({idle / present:.1%}) while flows were in the system"
    )
    tol_why = (
        "SRPT is the optimum pFabric approximates: ranks are remaining sizes as of the last ACK, "
        "a window arrives at line rate rather than at once, a flow starts from one BDP; we allow "
        "15% per quartile for that"
    )
    return [
        Check(
            "size-based scheduling",
            f"pfabric vs M/G/1-SRPT (Schrage-Miller) by size quartile, load {load}",
            setup,
            "Schrage-Miller mean response time for each flow's size at the calibrated arrival "
            "rate, minus its service time, plus its ideal FCT; mean over each size quartile",
            f"FCT / model by quartile {_fmt_ratios(r_sm)} (the fluid SRPT schedule of the same "
            f"arrivals / model: {_fmt_ratios(r_fs)}, sampling standard error "
            f"{_fmt_ratios(se)}); {common}",
            "15% + 3 sampling standard errors per quartile",
            tol_why + "; the formula holds for the mean over infinitely many flows, so this "
            "sample's own error (measured by the exact schedule of its arrivals) is added",
            ok_sm,
            known=PFABRIC_KNOWN if not ok_sm else "",
            detail={"r_sm": r_sm, "r_fluid": r_fl},
        ),
        Check(
            "size-based scheduling",
            f"pfabric vs fluid SRPT of the same arrivals by size quartile, load {load}",
            setup + " (the run of the row above)",
            "exact fluid preemptive SRPT of the same arrivals at the link's payload rate: its "
            "waiting plus each flow's ideal FCT, mean over each size quartile",
            f"FCT / fluid SRPT by quartile {_fmt_ratios(r_fl)}; {common}. Against the fluid "
            f"SRPT on a link slowed by that lost share ({lost:.1%}): {_fmt_ratios(r_lost)}",
            "15% per quartile",
            tol_why + "; same arrivals, so no sampling noise",
            ok_fl,
            known=PFABRIC_KNOWN if not ok_fl else "",
            detail={"r_fluid": r_fl},
        ),
    ]


#: Measured cause of PIAS's departure from the fluid MLFQ at high load (docs/validation.md).
PIAS_KNOWN = (
    "At high load PIAS's flows in the lower classes are starved by the higher classes for "
    "longer than their retransmission timeout (DCTCP's, min_rto 1 ms) with nothing lost (the "
    "row's timeouts with 0 drops): each timeout resends the flow's window, go-back-N, although "
    "its packets were only waiting. The resent bytes take link time, which at load 0.8 costs "
    "every class below: the fluid MLFQ given each flow's sent payload (retransmissions "
    "included) as its work comes within the row's tolerance of the run (the row's last "
    "figures), so the spurious retransmissions account for the gap"
)


def _bytes_value(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) else _size_bytes(str(v))


def check_pias_mlfq(
    load: float, flows: int, seed: int, sizes: tuple[str, str], thresholds: list[int]
) -> list[Check]:
    """PIAS on one bottleneck against the project's MLFQ model (per size quartile), with the
    exact fluid MLFQ schedules of the same arrivals (first come first served inside a class,
    the model's assumption, and fair sharing inside a class, what DCTCP inside a class
    approximates) to separate the model's sampling noise and its in-class discipline from
    the transport."""
    sc = _bottleneck("pias", load, flows, seed, sizes)
    sc["transport"]["thresholds"] = [f"{t}B" for t in thresholds]
    r = run(sc)
    # The thresholds the run used (its normalized scenario), so the references use them too.
    used = [_bytes_value(t) for t in r.scenario["transport"]["thresholds"]]
    f = r.flows
    sm = r.summary()
    rate = _payload_rate()
    a = f["start_us"] * 1e-6
    s = f["size_bytes"].astype(np.float64)
    svc = s / rate
    ideal = f["ideal_fct_us"] * 1e-6
    fct = f["fct_us"] * 1e-6
    dist = _uniform_dist(sizes)
    lam = load * 10e9 / 8 / dist.mean
    th = used
    model = ideal + np.array([theory.mlfq_response(x, dist, lam, rate, th) for x in s]) - svc
    fcfs = ideal + theory.fluid_mlfq(a, s, rate, th, "fcfs") - a - svc
    ps = ideal + theory.fluid_mlfq(a, s, rate, th, "ps") - a - svc
    qs = _quartiles(s)
    r_model = [float(np.nanmean(fct[q]) / np.mean(model[q])) for q in qs]
    r_ps = [float(np.nanmean(fct[q]) / np.mean(ps[q])) for q in qs]
    r_fcfs_model = [float(np.mean(fcfs[q]) / np.mean(model[q])) for q in qs]
    r_ps_model = [float(np.mean(ps[q]) / np.mean(model[q])) for q in qs]
    se = [_batch_se(fcfs[q] / model[q]) for q in qs]
    mean_ps = float(np.nanmean(fct) / np.mean(ps) - 1)
    unfinished = int(np.isnan(fct).sum())
    # Diagnostic: the same fluid MLFQ with each flow's work = the payload it actually sent
    # (size + retransmissions; PIAS tags by bytes sent, retransmissions included), so
    # retransmitted bytes take link time and push their flow down the classes as in the run.
    sent = f["sent_bytes"].astype(np.float64)
    retx = float(np.sum(f["retx_bytes"]))
    ps_sent = ideal + theory.fluid_mlfq(a, sent, rate, th, "ps") - a - svc
    r_ps_sent = [float(np.nanmean(fct[q]) / np.mean(ps_sent[q])) for q in qs]
    mean_ps_sent = float(np.nanmean(fct) / np.mean(ps_sent) - 1)
    setup = (
        f"pias (DCTCP, packets tagged by a multi-level feedback queue with {len(th) + 1} "
        f"classes, thresholds {', '.join(f'{t / 1e3:.0f} KB' for t in th)}: the quartiles of "
        "the size law, so a flow of the l-th size quartile ends in class l; strict priority at "
        "the switch): "
        f"16 senders -> 1 receiver on one switch, 10 Gbps links, 20 MB buffer; Poisson arrivals "
        f"at load {load} of the receiver's link, sizes uniform {sizes[0]}-{sizes[1]}, {flows} "
        f"flows, seed {seed}"
    )
    common = (
        f"{unfinished} unfinished, {sm['drops_total']} drops, {sm['timeouts_total']} timeouts, "
        f"{retx / 1e6:.1f} MB retransmitted ({retx / float(np.sum(s)):.1%} of the payload)"
    )
    ok_model_fcfs = all(abs(x - 1) <= 3 * e for x, e in zip(r_fcfs_model, se))
    ok_model = all(abs(x - 1) <= 0.10 + 3 * e for x, e in zip(r_model, se)) and unfinished == 0
    ok_ps = abs(mean_ps) <= 0.05 and all(abs(x - 1) <= 0.10 for x in r_ps) and unfinished == 0
    pias_known = (
        "The MLFQ model serves each class first come first served; DCTCP flows in one class "
        "share the link, which favours the flows that leave the class soonest (the smaller ones "
        "of the last class) and delays the larger ones. The exact fluid MLFQ with fair sharing "
        "inside a class, on the same arrivals, differs from the model by "
        f"{_fmt_ratios(r_ps_model)} by quartile, and pias follows it (the row below)"
    )
    return [
        Check(
            "workload",
            f"MLFQ model vs exact fluid MLFQ of the same arrivals, load {load}",
            f"the flow list of the PIAS scenario ({flows} flows, seed {seed}), served by an ideal "
            "multi-level feedback queue (same thresholds, first come first served inside a class) "
            "at the receiver link's payload rate",
            "the project's MLFQ model (pias_thresholds.rs): T(x) = x / (1 - sigma_{l-1}) + V_l / "
            "((1 - sigma_{l-1}) (1 - sigma_l)), mean over each size quartile",
            f"fluid / model by quartile {_fmt_ratios(r_fcfs_model)} (standard error "
            f"{_fmt_ratios(se)})",
            "3 standard errors per quartile (batch means over 10 batches)",
            "the model is exact in expectation for this queue; a finite sample's mean is off by "
            "its sampling error",
            ok_model_fcfs,
        ),
        Check(
            "size-based scheduling",
            f"pias vs its MLFQ model by size quartile, load {load}",
            setup,
            "the project's MLFQ model of PIAS (Poisson arrivals, strict-priority classes, first "
            "come first served inside a class) for each flow's size at the calibrated arrival "
            "rate, minus its service time, plus its ideal FCT; mean over each size quartile",
            f"FCT / model by quartile {_fmt_ratios(r_model)} (standard error of this sample "
            f"against the model {_fmt_ratios(se)}); {common}",
            "10% + 3 sampling standard errors per quartile",
            "DCTCP's packet-level sharing and round trips against the fluid model (~1-2% of "
            "services of 0.1-0.8 ms), and tagging by bytes sent rather than served; plus the "
            "sample's own error",
            ok_model,
            known=pias_known if not ok_model else "",
            detail={"r_model": r_model},
        ),
        Check(
            "size-based scheduling",
            f"pias vs fluid MLFQ (fair sharing inside a class) of the same arrivals, load {load}",
            setup + " (the run of the row above)",
            "exact fluid MLFQ of the same arrivals with the link shared equally inside the "
            "highest non-empty class: its waiting plus each flow's ideal FCT",
            f"mean FCT {mean_ps:+.1%}; FCT / reference by quartile {_fmt_ratios(r_ps)}; {common}. "
            f"Against the same reference with each flow's work = the payload it sent "
            f"(retransmissions included): mean {mean_ps_sent:+.1%}, by quartile "
            f"{_fmt_ratios(r_ps_sent)}",
            "mean 5%, each size quartile 10%",
            "the tolerance of DCTCP against fluid processor sharing (same mechanism: packet-level "
            "rather than fluid fairness, round trips); same arrivals, so no sampling noise",
            ok_ps,
            known=PIAS_KNOWN if not ok_ps else "",
            detail={"r_ps": r_ps, "r_ps_sent": r_ps_sent},
        ),
    ]


# --------------------------------------------------------------------------------------------
# Incast: the first window against the buffer
# --------------------------------------------------------------------------------------------


def check_incast_first_loss(buffer_kb: int, init_cwnd: int) -> Check:
    """N senders each start one flow of exactly one initial window at t = 0 to one receiver
    (all links 10 Gbps, 1 us); the first N with a drop against the fewest senders whose
    synchronized first windows overflow the buffer."""
    wire = init_cwnd * (MSS + HEADER)
    predicted = theory.incast_first_loss_senders(wire, buffer_kb * 1000)
    first = None
    tried = []
    for n in range(max(2, predicted - 3), predicted + 3):
        sc = _star(n + 1, "10Gbps", f"{buffer_kb}KB", "tcp", init_cwnd=init_cwnd)
        d = _run_with_flows(sc, [(i, n, init_cwnd * MSS, "0us") for i in range(n)]).summary()[
            "drops_total"
        ]
        tried.append((n, d))
        if d > 0 and first is None:
            first = n
            break
    ok = first is not None and abs(first - predicted) <= 1
    return Check(
        "incast",
        f"first loss: buffer {buffer_kb} KB, initial window {init_cwnd} packets",
        f"N tcp senders -> 1 receiver on one switch, 10 Gbps links, buffer {buffer_kb} KB, each "
        f"sending one flow of one initial window ({init_cwnd} x 1460 B) at t = 0",
        f"first N with (N - 1) x {wire} B > buffer: N = {predicted}",
        f"first N with a drop: {first} (tried {', '.join(f'{n}: {d} drops' for n, d in tried)})",
        "+-1 sender",
        "the packet being forwarded when the last bursts arrive is outside the queue count, and "
        "arrivals interleave packet by packet, so the overflow point is known to within one "
        "packet, less than one sender's burst",
        ok,
    )


# --------------------------------------------------------------------------------------------
# Conservation and bounds on every kind of transport
# --------------------------------------------------------------------------------------------

CONSERVATION_PROTOCOLS = [
    "tcp",
    "dctcp",
    "swift",
    "pias",
    "rc3",
    "ppt",
    "ptcp",
    "ictcp",
    "pfabric",
    "pase",
    "homa",
    "phost",
    "ndp",
    "expresspass",
    "rpo",
]


def _conservation_scenario(protocol: str, seed: int) -> dict[str, Any]:
    sc = _star(8, "10Gbps", "60KB", protocol)
    net = sc["network"]
    if protocol == "ndp":
        net["queue_policy"] = "ndp_trim"
        net["routing"] = "spray"
    if protocol == "expresspass":
        net["queue_policy"] = "expresspass_credit"
    if protocol == "pfabric":
        net["queue_policy"] = "pfabric"
    if protocol == "rpo":
        net["queue_policy"] = "rpo_crossmark"
        net["crossmark"] = {"adaptive": True}
    sc["workload"] = [{"pattern": "poisson", "load": 0.6, "cdf": "websearch", "flows": 300}]
    sc["seed"] = seed
    sc["output"] = {"sample_interval": "10us"}
    return sc


CONSERVATION_SETUP = (
    "{p}: 8 hosts on one switch, 10 Gbps, 60 KB buffers, web-search sizes, all-to-all Poisson at "
    "load 0.6, 300 flows, seed {seed}"
)

#: The transports whose Little's-law row is run: one per family (window-based, window-based
#: with an opportunistic second loop, receiver-driven, arbitration).
LITTLE_PROTOCOLS = ["dctcp", "ppt", "homa", "pase"]


def check_conservation(protocol: str, seed: int, little: bool = False) -> list[Check]:
    """A lossy mixed workload (8 hosts, 10 Gbps, 60 KB buffers, web-search sizes at load 0.6)
    on a transport: every flow finishes; each finished flow's first transmissions carry its
    bytes exactly once (0 <= sent - retransmitted - size <= opportunistic bytes sent); the
    queue of every switch port never exceeds its buffer; every port's bytes balance
    (:func:`check_port_balance`); with ``little``, Little's law on the same run and on one cut
    in the middle (:func:`check_little`)."""
    sc = _conservation_scenario(protocol, seed)
    r = run(sc)
    f = r.flows
    fin = f["finished"].astype(bool)
    unfinished = int((~fin).sum())
    # Bytes sent beyond the flow's size and the counted retransmissions: zero for a transport
    # with one sending loop; with an opportunistic loop (RC3, PPT) at most the bytes that loop
    # sent, since where the two loops meet a byte can go out once from each.
    extra = (
        f["sent_bytes"][fin].astype(np.int64)
        - f["retx_bytes"][fin].astype(np.int64)
        - f["size_bytes"][fin].astype(np.int64)
    )
    bad = int(((extra < 0) | (extra > f["lp_sent_bytes"][fin].astype(np.int64))).sum())
    qmax = 0
    if r.has_queue_samples:
        q = r.queue_samples
        ports = r.ports
        switch_ports = {int(p) for p, k in zip(ports["id"], ports["node_kind"]) if k != "host"}
        per_port: dict[tuple[float, int], int] = {}
        for t, p, b in zip(q["t_us"], q["port"], q["bytes"]):
            if int(p) in switch_ports:
                per_port[(float(t), int(p))] = per_port.get((float(t), int(p)), 0) + int(b)
        qmax = max(per_port.values(), default=0)
    sm = r.summary()
    ok = unfinished == 0 and bad == 0 and qmax <= 60_000
    main = Check(
        "conservation",
        f"bytes and buffers: {protocol}",
        CONSERVATION_SETUP.format(p=protocol, seed=seed),
        "every flow finishes; per flow 0 <= sent - retransmitted - size <= opportunistic bytes "
        "sent (= 0 without an opportunistic loop); switch queues <= 60 KB",
        f"{unfinished} unfinished; {bad} flows outside the bytes identity; largest switch queue "
        f"{qmax} B; {sm['drops_total']} drops, {sm['trims']} trims",
        "exact",
        "these are accounting identities and the buffer limit of the model",
        ok,
    )
    out = [main, check_port_balance(protocol, seed, r)]
    if little:
        out.append(check_little(protocol, seed, r))
    return out


def check_port_balance(protocol: str, seed: int, r: Any) -> Check:
    """Every port of the run ``r`` balances its bytes: offered = serialized + dropped +
    trimmed off + still queued; and, with the network drained, each switch was offered
    exactly the bytes its ingress links delivered."""
    p = r.ports
    rx = p["rx_bytes"].astype(np.int64)
    rhs = (
        p["tx_bytes"].astype(np.int64)
        + p["dropped_bytes"].astype(np.int64)
        + p["trimmed_bytes"].astype(np.int64)
        + p["queued_bytes"].astype(np.int64)
    )
    bad_ports = int((rx != rhs).sum())
    worst = int(np.max(np.abs(rx - rhs))) if len(rx) else 0
    sm = r.summary()
    drained = sm["packets_left"] == 0
    bad_switches = 0
    switches = sorted({int(n) for n, k in zip(p["node"], p["node_kind"]) if k != "host"})
    for sw in switches:
        delivered = int(p["tx_bytes"][p["peer"] == sw].astype(np.int64).sum())
        offered = int(p["rx_bytes"][p["node"] == sw].astype(np.int64).sum())
        bad_switches += delivered != offered
    ok = bad_ports == 0 and drained and bad_switches == 0 and int(rx.sum()) > 0
    return Check(
        "conservation",
        f"per-port byte balance: {protocol}",
        CONSERVATION_SETUP.format(p=protocol, seed=seed) + " (the run of the row above)",
        "for every port (host NICs and switch ports): bytes offered = bytes serialized + bytes "
        "dropped + bytes trimmed off + bytes queued at the end; per switch, bytes its ingress "
        "links delivered = bytes offered to its egress ports (network drained)",
        f"{bad_ports} of {len(rx)} ports off (largest gap {worst} B); {bad_switches} switches off; "
        f"{int(rx.sum()) / 1e6:.1f} MB offered, {int(p['dropped_bytes'].sum()) / 1e6:.2f} MB "
        f"dropped, {int(p['trimmed_bytes'].sum()) / 1e6:.2f} MB trimmed, "
        f"{int(p['queued_bytes'].sum())} B queued at the end, {sm['packets_left']} packets left",
        "exact (bytes)",
        "the four terms are counted in different places (the offer, each serialization, each "
        "drop or trim, the queue policy's own count), so a packet lost or counted twice anywhere "
        "shows as a difference of its size",
        ok,
    )


def check_little(protocol: str, seed: int, r: Any) -> Check:
    """Little's law L = lambda W with L counted by the event loop (the integral of the number
    of flows in the system over time, updated at each arrival and departure), lambda and W
    from the flow table. Window [0, end of run]: the system is empty at both ends, so the law
    holds exactly on the sample path. A second run of the same scenario is cut at the median
    arrival time T (halfway between two arrivals): over [0, T], W is each arrived flow's time
    in the system inside the window (its FCT, or T - start if still running), which again
    makes the law exact; the usual
    estimate from finished flows only is shown beside it to give the edge effect's size."""
    f = r.flows
    sm = r.summary()
    end_us = float(sm["sim_end_us"])
    n = len(f["fct_us"])
    lam = n / end_us
    w = float(np.mean(f["fct_us"]))
    big_l = float(sm["flows_in_system_avg"])
    # Exact comparison in flows x ps: both sides are sums of integer picoseconds.
    area = float(r.counters["flows_in_system_integral_ps"])
    table_area = float(np.sum(np.round(f["fct_us"] * 1e6)))
    err_full = abs(area - table_area)

    sc = _conservation_scenario(protocol, seed)
    # Halfway between the two arrivals around the median, so no arrival sits on the cut.
    starts = np.sort(f["start_us"])
    t_cut_ps = round((starts[n // 2 - 1] + starts[n // 2]) / 2 * 1e6)
    sc["run"] = {"time_limit": f"{t_cut_ps}ps"}
    rc = run(sc)
    fc, smc = rc.flows, rc.summary()
    t_end = float(smc["sim_end_us"])
    arrived = fc["start_us"] <= t_end
    done = arrived & np.isfinite(fc["fct_us"])
    in_window = np.where(done, fc["fct_us"], t_end - fc["start_us"])[arrived]
    lam_c = int(arrived.sum()) / t_end
    l_c = float(smc["flows_in_system_avg"])
    w_c = float(np.mean(in_window))
    naive = lam_c * float(np.mean(fc["fct_us"][done])) if done.any() else math.nan
    err_cut = abs(l_c - lam_c * w_c) / max(l_c, 1e-300)
    ok = err_full < 1.0 and err_cut < 1e-9 and big_l > 0 and int(arrived.sum()) > int(done.sum())
    return Check(
        "Little's law",
        f"L = lambda W: {protocol}",
        CONSERVATION_SETUP.format(p=protocol, seed=seed)
        + f" (the run above); and the same run cut at the median arrival, T = {t_end:.1f} us",
        "L = lambda W on the sample path: over [0, end] (empty at both ends) lambda = flows / end, "
        "W = mean FCT; over [0, T], W = mean time in the system inside the window of the flows "
        "arrived by T",
        f"whole run: L = {big_l:.4f} counted, lambda W = {lam * w:.4f} (difference "
        f"{err_full:.0f} flow-ps); cut: L = {l_c:.4f}, lambda W = {lam_c * w_c:.4f} "
        f"({int(arrived.sum()) - int(done.sum())} flows still in the system at T; lambda x mean "
        f"FCT of the finished ones alone = {naive:.4f}, the edge effect)",
        "exact (< 1 flow-ps; relative 1e-9 for the cut, float division)",
        "L is counted by the event loop at each arrival and departure, independently of the "
        "flow table; with the window defined as above no edge term remains, so any difference "
        "is a miscounted arrival, departure or time",
        ok,
    )


# --------------------------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------------------------

HOMA_HIGH_LOAD = (
    "Homa resends packets that are not lost but wait in a lower priority class behind more "
    "urgent messages (its RESEND timer fires while they queue), adding duplicate bytes to a full "
    "queue; see docs/validation.md"
)


def suite(reduced: bool = False) -> list[Callable[[], Check | list[Check]]]:
    """The checks, as thunks (so a caller can time and report each)."""
    flows_ps = 600 if reduced else 2000
    seeds = [1] if reduced else [1, 2]
    s: list[Callable[[], Check | list[Check]]] = []
    s.append(
        lambda: check_lone_flow("tcp", "single_switch", 1500, [1, 1460, 1461, 100_000, 1_000_000])
    )
    s.append(lambda: check_lone_flow("tcp", "leaf_spine", 9000, [1, 8960, 8961, 1_000_000]))
    if not reduced:
        s.append(lambda: check_lone_flow("dctcp", "leaf_spine", 1500, [1, 1460, 2921, 1_000_000]))
        s.append(
            lambda: check_lone_flow("homa", "single_switch", 1500, [1, 1460, 100_000, 1_000_000])
        )
    for load in (0.5, 0.8):
        for seed in seeds:
            s.append(lambda load=load, seed=seed: check_workload_ps(load, flows_ps, seed))
        for proto in ["dctcp"] if reduced else ["tcp", "dctcp", "swift"]:
            for seed in seeds:
                s.append(lambda p=proto, load=load, seed=seed: check_ps(p, load, flows_ps, seed))
    srpt_cases = [
        (0.5, ("100KB", "1MB"), 2000),
        (0.8, ("100KB", "1MB"), 2000),
        (0.8, ("1MB", "10MB"), 400),
    ]
    if reduced:
        srpt_cases = [(0.5, ("100KB", "1MB"), 600)]
    for load, sizes, n in srpt_cases:
        s.append(lambda load=load, sizes=sizes, n=n: check_workload_srpt(load, n, 1, sizes))
        s.append(
            lambda load=load, sizes=sizes, n=n: check_srpt(
                "homa", load, n, 1, sizes, known=HOMA_HIGH_LOAD
            )
        )
    # pFabric against SRPT and PIAS against its MLFQ model, at a moderate and a high load.
    for load in [0.5] if reduced else [0.5, 0.8]:
        n = 600 if reduced else 2000
        s.append(
            lambda load=load, n=n: check_pfabric_srpt(load, n, 1, ("100KB", "1MB"), PFABRIC_BUFFER)
        )
        s.append(
            lambda load=load, n=n: check_pias_mlfq(
                load, n, 1, ("100KB", "1MB"), [325_000, 550_000, 775_000]
            )
        )
    for buf, iw in [(60, 10)] if reduced else [(60, 10), (120, 10), (240, 10), (120, 4)]:
        s.append(lambda buf=buf, iw=iw: check_incast_first_loss(buf, iw))
    for proto in ["dctcp", "homa"] if reduced else CONSERVATION_PROTOCOLS:
        little = proto in LITTLE_PROTOCOLS
        thunk = lambda p=proto, li=little: check_conservation(p, 1, li)  # noqa: E731
        thunk.check_name = f"bytes and buffers: {proto}"  # type: ignore[attr-defined]
        thunk.check_group = "conservation"  # type: ignore[attr-defined]
        thunk.check_setup = CONSERVATION_SETUP.format(p=proto, seed=1)  # type: ignore[attr-defined]
        s.append(thunk)
    return s


def run_suite(reduced: bool = False, log: Callable[[str], Any] | None = None) -> list[Check]:
    from dcnsim.errors import RunError, ScenarioError

    out: list[Check] = []
    for k, thunk in enumerate(suite(reduced)):
        t0 = time.perf_counter()
        c0 = time.process_time()
        try:
            res = thunk()
        except (RunError, ScenarioError) as e:
            # A run that ends in an error (a resource limit, a refused scenario) fails its
            # check; the suite goes on.
            res = Check(
                getattr(thunk, "check_group", "error"),
                getattr(thunk, "check_name", "a check"),
                getattr(thunk, "check_setup", ""),
                "the run completes",
                f"the run ended with an error: {e}",
                "exact",
                "a run of a valid scenario must not end in an error",
                False,
            )
        items = res if isinstance(res, list) else [res]
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        for c in items:
            # The time of the thunk that produced the check (shared by the checks of one run).
            c.detail["wall_s"] = wall
            c.detail["cpu_s"] = cpu
            c.detail["thunk"] = k
            out.append(c)
            if log:
                log(f"{c.status:>15}  {c.group}: {c.name} ({c.detail['wall_s']:.1f} s)")
    return out


#: The first line of the report: ``validate-model --out`` overwrites only a file that starts so.
REPORT_TITLE = "# Validation against theory"


def report(checks: list[Check], reduced: bool) -> str:
    """docs/validation.md's text."""
    n_pass = sum(c.passed for c in checks)
    n_known = sum((not c.passed) and bool(c.known) for c in checks)
    n_fail = len(checks) - n_pass - n_known
    per_thunk = {c.detail.get("thunk", i): c.detail for i, c in enumerate(checks)}
    wall = sum(d.get("wall_s", 0.0) for d in per_thunk.values())
    cpu = sum(d.get("cpu_s", 0.0) for d in per_thunk.values())
    try:
        load = f"{os.getloadavg()[0]:.1f}"
    except OSError:
        load = "unknown"
    lines = [
        REPORT_TITLE,
        "",
        "Generated by `make validate` (`dcnsim validate-model --out docs/validation.md`); do not "
        "edit by hand. Each row runs a small scenario whose answer is known independently of "
        "dcnsim and compares. The references are in `python/dcnsim/theory.py`, the checks in "
        "`python/dcnsim/validation.py`; the definitions (slowdown, load) in docs/metrics.md.",
        "",
        f"Set: {'reduced' if reduced else 'full'}. {len(checks)} checks: {n_pass} pass, "
        f"{n_known} known deviations, {n_fail} failures.",
        "",
        f"Time of the run that wrote this file: {wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU "
        f"(one process, one core: the simulations and the references run in turn), on a "
        f"{os.cpu_count()}-core machine with load average {load} at the end (other jobs "
        "shared it, so the wall time includes waiting for a core; the CPU time is the suite's "
        "own).",
        "",
        "Slowdown here is FCT / (size / payload rate of a 10 Gbps link), the service time of the "
        "queueing references, for the simulation and the reference alike.",
        "",
        "| group | check | setup | reference | ours | tolerance | why that tolerance | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        cells = [c.group, c.name, c.setup, c.reference, c.ours, c.tolerance, c.why, c.status]
        lines.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
    known = [c for c in checks if not c.passed and c.known]
    if known:
        lines += ["", "## Known deviations", ""]
        by_cause: dict[str, list[str]] = {}
        for c in known:
            by_cause.setdefault(c.known, []).append(c.name)
        for cause, names in by_cause.items():
            lines.append(f"- **{'; '.join(names)}**: {cause}.")
    return "\n".join(lines) + "\n"
