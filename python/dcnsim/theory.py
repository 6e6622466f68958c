"""Analytic and exact references that the validation suite (:mod:`dcnsim.validation`) holds the
simulator against. Nothing here runs the simulator.

Two kinds of reference:

- **Queueing formulas** for an M/G/1 queue (Poisson arrivals, i.i.d. sizes, one server of
  fixed rate): the mean response time under processor sharing (PS), where every job present
  is served at an equal share of the rate, and under preemptive shortest-remaining-processing-
  time first (SRPT), from Schrage and Miller's result. They hold in expectation over infinitely
  many jobs, so a finite run meets them only up to sampling noise.
- **Exact fluid schedules** of one given arrival sequence: the completion time of every job
  when a single server of the given rate serves the very same jobs (same arrival times, same
  sizes) by PS or by preemptive SRPT. Comparing a packet-level run with the fluid schedule of
  its own arrivals removes the sampling noise; what remains is the difference between the
  transport and the ideal discipline (packetisation, round trips, start-up, imperfect
  sharing).

Units: sizes and work in bytes, rates in bytes per second, times in seconds, unless a
function says otherwise.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np


def mg1_ps_slowdown(rho: float) -> float:
    """Mean slowdown (response time / service time) of every job size in an M/G/1-PS queue
    at utilisation ``rho``: 1 / (1 - rho), whatever the size distribution."""
    if not 0 <= rho < 1:
        raise ValueError(f"utilisation {rho} must be in [0, 1)")
    return 1.0 / (1.0 - rho)


class SizeDistribution:
    """A job-size distribution given by a sample of sizes (each equally likely): an empirical
    distribution, as the size CDF a run draws from, or the sizes of one run's flows."""

    def __init__(self, sizes: Sequence[float] | np.ndarray):
        x = np.sort(np.asarray(sizes, dtype=np.float64))
        if len(x) == 0 or not np.all(np.isfinite(x)) or x[0] <= 0:
            raise ValueError("sizes must be a non-empty list of positive finite numbers")
        self.x = x
        n = len(x)
        # Prefix sums over the sorted sample: P(S <= x_i) and the partial moments
        # E[S 1{S <= x_i}], E[S^2 1{S <= x_i}].
        self.cdf = np.arange(1, n + 1) / n
        self.m1 = np.cumsum(x) / n
        self.m2 = np.cumsum(x * x) / n

    @property
    def mean(self) -> float:
        return float(self.m1[-1])

    def _upto(self, t: float) -> tuple[float, float, float]:
        """(P(S <= t), E[S; S <= t], E[S^2; S <= t])."""
        i = int(np.searchsorted(self.x, t, side="right"))
        if i == 0:
            return 0.0, 0.0, 0.0
        return float(self.cdf[i - 1]), float(self.m1[i - 1]), float(self.m2[i - 1])


def mg1_srpt_response(size: float, dist: SizeDistribution, lam: float, rate: float) -> float:
    """Mean response time (s) of a job of ``size`` bytes in an M/G/1 queue under preemptive
    SRPT (Schrage and Miller, 1966), with arrival rate ``lam`` (jobs/s), sizes from ``dist``
    and a server of ``rate`` bytes/s.

    With service times s = size / rate and rho(x) = lam E[S; S <= x] (the load of jobs no
    larger than x), the response time of a job of service time x is the waiting time

        W(x) = lam (E[S^2; S <= x] + x^2 P(S > x)) / (2 (1 - rho(x))^2)

    plus the residence time integral_0^x dt / (1 - rho(t)). For an empirical distribution rho(t)
    is a step function, so the integral is a finite sum over the steps below x.
    """
    if rate <= 0 or lam < 0:
        raise ValueError("rate must be positive and lam non-negative")
    x = size / rate
    xs = dist.x / rate  # service times of the sample points, sorted
    f, m1, m2 = dist._upto(size)
    m1, m2 = m1 / rate, m2 / (rate * rate)
    rho_x = lam * m1
    if rho_x >= 1:
        return float("inf")
    wait = lam * (m2 + x * x * (1.0 - f)) / (2.0 * (1.0 - rho_x) ** 2)
    # Residence: integrate 1/(1 - rho(t)) over [0, x]; rho(t) jumps at each sample point.
    resid = 0.0
    prev_t = 0.0
    rho_t = 0.0
    n = len(xs)
    for i in range(n):
        t = xs[i]
        if t >= x:
            break
        resid += (t - prev_t) / (1.0 - rho_t)
        rho_t += lam * t / n
        prev_t = t
    resid += (x - prev_t) / (1.0 - rho_t)
    return wait + resid


def fluid_ps(arrivals: Sequence[float], sizes: Sequence[float], rate: float) -> np.ndarray:
    """Completion times of jobs served by one processor-sharing server of ``rate`` bytes/s:
    every job present receives rate / n while n jobs are present. Exact (event by event)."""
    a = np.asarray(arrivals, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.float64)
    order = np.argsort(a, kind="stable")
    done = np.full(len(a), np.nan)
    # Jobs present, keyed by their "virtual finish": under PS every present job receives the
    # same service, so a job that arrives when the cumulative per-job service is V finishes
    # when it reaches V + size. The heap holds (V + size, job).
    heap: list[tuple[float, int]] = []
    v = 0.0  # cumulative service per present job
    t = 0.0
    k = 0
    n = len(a)
    while k < n or heap:
        next_arr = a[order[k]] if k < n else np.inf
        if heap:
            n_present = len(heap)
            t_fin = t + (heap[0][0] - v) * n_present / rate
        else:
            t_fin = np.inf
        if next_arr <= t_fin:
            if heap:
                v += (next_arr - t) * rate / len(heap)
            t = next_arr
            j = int(order[k])
            heapq.heappush(heap, (v + s[j], j))
            k += 1
        else:
            v = heap[0][0]
            t = t_fin
            _, j = heapq.heappop(heap)
            done[j] = t
    return done


def fluid_srpt(arrivals: Sequence[float], sizes: Sequence[float], rate: float) -> np.ndarray:
    """Completion times of jobs served by one server of ``rate`` bytes/s under preemptive
    shortest-remaining-processing-time first (ties: earlier arrival). Exact."""
    a = np.asarray(arrivals, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.float64)
    order = np.argsort(a, kind="stable")
    done = np.full(len(a), np.nan)
    heap: list[tuple[float, int, int]] = []  # (remaining bytes, arrival rank, job)
    t = 0.0
    k = 0
    n = len(a)
    while k < n or heap:
        next_arr = a[order[k]] if k < n else np.inf
        if heap:
            rem, rank, j = heap[0]
            t_fin = t + rem / rate
        else:
            t_fin = np.inf
        if next_arr < t_fin:
            if heap:
                rem, rank, j = heapq.heappop(heap)
                heapq.heappush(heap, (rem - (next_arr - t) * rate, rank, j))
            t = next_arr
            jj = int(order[k])
            heapq.heappush(heap, (s[jj], k, jj))
            k += 1
        else:
            heapq.heappop(heap)
            t = t_fin
            done[j] = t
    return done


def incast_peak_queue(senders: int, burst_wire_bytes: float) -> float:
    """Peak bytes queued at the port to the receiver when ``senders`` hosts, on links of the
    same rate as the receiver's, each send a back-to-back burst of ``burst_wire_bytes`` (wire
    bytes) that reaches the switch at the same instant: bytes arrive at ``senders`` times the
    rate the port drains them for the burst's duration, so (senders - 1) bursts' worth piles
    up (to within one packet, the one being forwarded when the last bits arrive)."""
    if senders < 1 or burst_wire_bytes < 0:
        raise ValueError("senders must be >= 1 and burst_wire_bytes >= 0")
    return (senders - 1) * burst_wire_bytes


def incast_first_loss_senders(burst_wire_bytes: float, buffer_bytes: float) -> int:
    """The fewest synchronized senders whose first bursts overflow a port buffer of
    ``buffer_bytes``: the smallest N with (N - 1) x burst > buffer (see
    :func:`incast_peak_queue`)."""
    if burst_wire_bytes <= 0:
        raise ValueError("burst_wire_bytes must be positive")
    return int(buffer_bytes // burst_wire_bytes) + 2


# --------------------------------------------------------------------------------------------
# Multi-level feedback queue (PIAS)
# --------------------------------------------------------------------------------------------


def mlfq_response(
    size: float, dist: SizeDistribution, lam: float, rate: float, thresholds: Sequence[float]
) -> float:
    """Mean response time (s) of a job of ``size`` bytes in the project's model of PIAS's
    multi-level feedback queue (the model the ``pias`` transport derives its default
    thresholds from, stated in full in ``transport/blocks/pias_thresholds.rs``).

    One server of ``rate`` bytes/s, Poisson arrivals at ``lam`` jobs/s, sizes from ``dist``.
    A job's bytes in ``[a_{l-1}, a_l)`` are served in class l (``thresholds`` = a_1 < ... <
    a_{K-1}, a_0 = 0, a_K = infinity); classes in preemptive-resume strict priority, first come
    first served inside a class. With sigma_l = lam E[min(S, a_l)] (the load of the work done
    in classes 1..l, in seconds of service) and V_l = lam E[min(S, a_l)^2] / 2, a job of
    service time x that ends in class l has the mean response time

        T(x) = x / (1 - sigma_{l-1}) + V_l / ((1 - sigma_{l-1}) (1 - sigma_l)).
    """
    if rate <= 0 or lam < 0:
        raise ValueError("rate must be positive and lam non-negative")
    a = [0.0, *sorted(float(t) for t in thresholds), math.inf]
    level = next(i for i in range(1, len(a)) if size <= a[i])
    s = dist.x

    def sigma_v(cap: float) -> tuple[float, float]:
        m = np.minimum(s, cap) / rate
        return lam * float(np.mean(m)), lam * float(np.mean(m * m)) / 2.0

    sig_prev, _ = sigma_v(a[level - 1])
    sig_l, v_l = sigma_v(a[level])
    if sig_l >= 1:
        return math.inf
    x = size / rate
    return x / (1 - sig_prev) + v_l / ((1 - sig_prev) * (1 - sig_l))


def fluid_mlfq(
    arrivals: Sequence[float],
    sizes: Sequence[float],
    rate: float,
    thresholds: Sequence[float],
    within: str = "ps",
) -> np.ndarray:
    """Completion times of jobs served by one server of ``rate`` bytes/s as a multi-level
    feedback queue: a job with ``b`` bytes served is in class l while ``a_{l-1} <= b < a_l``
    (``thresholds`` = a_1 < ... < a_{K-1}); the lowest non-empty class is served, preemptively;
    inside it ``within = "ps"`` shares the rate equally (what fair transports inside a
    priority class approximate) and ``"fcfs"`` serves the job that entered the class first
    (the analytic model's assumption). Exact, event by event (arrival, demotion, completion)."""
    if within not in ("ps", "fcfs"):
        raise ValueError("within must be 'ps' or 'fcfs'")
    a = np.asarray(arrivals, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.float64)
    th = np.asarray(sorted(float(t) for t in thresholds), dtype=np.float64)
    order = np.argsort(a, kind="stable")
    n = len(a)
    done = np.full(n, np.nan)
    served = np.zeros(n)
    entered = np.zeros(n)  # when the job entered its current class (FCFS order)
    active: list[int] = []
    t = 0.0
    k = 0
    eps = 1e-9

    def level(j: int) -> int:
        # Demotions snap ``served`` to the threshold, so the comparison is exact.
        return int(np.searchsorted(th, served[j], side="right"))

    while k < n or active:
        next_arr = a[order[k]] if k < n else math.inf
        if not active:
            t = next_arr
            j = int(order[k])
            active.append(j)
            entered[j] = t
            k += 1
            continue
        levels = [level(j) for j in active]
        top = min(levels)
        cls = [j for j, lv in zip(active, levels) if lv == top]
        if within == "fcfs":
            cls = [min(cls, key=lambda j: (entered[j], a[j]))]
        share = rate / len(cls)
        cap = th[top] if top < len(th) else math.inf
        # Bytes each served job can take before an event: its completion or its demotion.
        room = min(min(s[j], cap) - served[j] for j in cls)
        dt = max(room, 0.0) / share
        if t + dt <= next_arr:
            t += dt
            for j in cls:
                served[j] += room
            for j in list(cls):
                if served[j] >= s[j] - eps * max(1.0, s[j]):
                    done[j] = t
                    active.remove(j)
                elif served[j] >= cap - eps * max(1.0, cap):
                    served[j] = cap
                    entered[j] = t
        else:
            step = (next_arr - t) * share
            for j in cls:
                served[j] += step
            t = next_arr
            j = int(order[k])
            active.append(j)
            entered[j] = t
            k += 1
    return done
