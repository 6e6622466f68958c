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
        "2). Our reading, not yet confirmed: every flow starts at 10 packets, several times its "
        "fair share of this 12.5 KB BDP, and Swift's additive increase of one packet per RTT "
        "against decreases capped at once per RTT converges to equal shares more slowly than "
        "short flows live"
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


def check_conservation(protocol: str, seed: int) -> Check:
    """A lossy mixed workload (8 hosts, 10 Gbps, 60 KB buffers, web-search sizes at load 0.6)
    on a transport: every flow finishes; each finished flow's first transmissions carry its
    bytes exactly once (0 <= sent - retransmitted - size <= opportunistic bytes sent); the
    queue of every switch port never exceeds its buffer."""
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
    return Check(
        "conservation",
        f"bytes and buffers: {protocol}",
        f"{protocol}: 8 hosts on one switch, 10 Gbps, 60 KB buffers, web-search sizes, all-to-all "
        f"Poisson at load 0.6, 300 flows, seed {seed}",
        "every flow finishes; per flow 0 <= sent - retransmitted - size <= opportunistic bytes "
        "sent (= 0 without an opportunistic loop); switch queues <= 60 KB",
        f"{unfinished} unfinished; {bad} flows outside the bytes identity; largest switch queue "
        f"{qmax} B; {sm['drops_total']} drops, {sm['trims']} trims",
        "exact",
        "these are accounting identities and the buffer limit of the model",
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
    for buf, iw in [(60, 10)] if reduced else [(60, 10), (120, 10), (240, 10), (120, 4)]:
        s.append(lambda buf=buf, iw=iw: check_incast_first_loss(buf, iw))
    for proto in ["dctcp", "homa"] if reduced else CONSERVATION_PROTOCOLS:
        thunk = lambda p=proto: check_conservation(p, 1)  # noqa: E731
        thunk.check_name = f"bytes and buffers: {proto}"  # type: ignore[attr-defined]
        thunk.check_group = "conservation"  # type: ignore[attr-defined]
        thunk.check_setup = (  # type: ignore[attr-defined]
            f"{proto}: 8 hosts on one switch, 10 Gbps, 60 KB buffers, web-search sizes, "
            "all-to-all Poisson at load 0.6, 300 flows, seed 1"
        )
        s.append(thunk)
    return s


def run_suite(reduced: bool = False, log: Callable[[str], Any] | None = None) -> list[Check]:
    from dcnsim.errors import RunError, ScenarioError

    out: list[Check] = []
    for thunk in suite(reduced):
        t0 = time.perf_counter()
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
        for c in items:
            c.detail["wall_s"] = time.perf_counter() - t0
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
