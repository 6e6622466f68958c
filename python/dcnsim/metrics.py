"""Summary metrics of a run, as defined in ``docs/metrics.md`` (see ``docs/results.md``).

Flow statistics are over the *finished, non-background* flows. Times are in microseconds.
Percentiles use the nearest-rank method: the p-th percentile of n sorted values is the value
of rank ``ceil(p / 100 * n)`` (1-based), i.e. the smallest value such that at least p% of the
values are less than or equal to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

#: Small flows are those of at most this many bytes, large flows those above.
SMALL_FLOW_MAX_BYTES = 100_000

#: Size buckets of the by-size plots: (label, low exclusive, high inclusive) in bytes.
SIZE_BUCKETS: list[tuple[str, float, float]] = [
    ("<=10KB", 0, 10_000),
    ("10KB-100KB", 10_000, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    (">1MB", 1_000_000, math.inf),
]


def percentile(values: Sequence[float] | np.ndarray, p: float) -> float:
    """Nearest-rank percentile of ``values`` (NaNs ignored); NaN when there are none.

    ``p`` is in [0, 100]; ``p = 0`` gives the minimum, ``p = 100`` the maximum. The rank is
    computed in exact arithmetic from the decimal form of ``p``, so the 99.9th percentile of
    1000 values is the 999th value, not the 1000th.
    """
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} is outside [0, 100]")
    x = np.asarray(values, dtype=np.float64)
    x = np.sort(x[~np.isnan(x)])
    n = len(x)
    if n == 0:
        return math.nan
    rank = math.ceil(Fraction(str(p)) * n / 100)
    return float(x[max(rank, 1) - 1])


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else math.nan


def size_bucket_stats(flows: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """Per size bucket (:data:`SIZE_BUCKETS`): flow count, average and p99 FCT (us), average
    and p99 slowdown, over finished non-background flows; and the number of non-background
    flows with a deadline and the fraction of them that met it (finished or not)."""
    sel = _done(flows)
    size = flows["size_bytes"][sel]
    fct = flows["fct_us"][sel]
    sd = flows["slowdown"][sel]
    dl = _with_deadline(flows)
    all_size = np.asarray(flows["size_bytes"])
    out = []
    for label, lo, hi in SIZE_BUCKETS:
        m = (size > lo) & (size <= hi)
        dm = dl & (all_size > lo) & (all_size <= hi)
        out.append(
            {
                "bucket": label,
                "flows": int(m.sum()),
                "avg_fct_us": _mean(fct[m]),
                "p99_fct_us": percentile(fct[m], 99),
                "avg_slowdown": _mean(sd[m]),
                "p99_slowdown": percentile(sd[m], 99),
                "deadline_flows": int(dm.sum()),
                "deadline_met_frac": _met_frac(flows, dm),
            }
        )
    return out


def _with_deadline(flows: Mapping[str, np.ndarray]) -> np.ndarray:
    """Non-background flows that have a deadline (finished or not)."""
    d = np.asarray(flows["deadline_us"], dtype=np.float64)
    return ~np.isnan(d) & ~np.asarray(flows["background"], dtype=bool)


def _met(flows: Mapping[str, np.ndarray]) -> np.ndarray:
    """The ``met_deadline`` column (recomputed from the microsecond columns for tables written
    before it existed)."""
    if "met_deadline" in flows:
        return np.asarray(flows["met_deadline"], dtype=bool)
    fct = np.asarray(flows["fct_us"], dtype=np.float64)
    d = np.asarray(flows["deadline_us"], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(flows["finished"], dtype=bool) & (fct <= d)


def _met_frac(flows: Mapping[str, np.ndarray], sel: np.ndarray) -> float:
    """Fraction of the selected flows whose ``met_deadline`` is true (NaN if none selected)."""
    n = int(sel.sum())
    if n == 0:
        return math.nan
    return float(_met(flows)[sel].sum()) / n


def _done(flows: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.asarray(flows["finished"], dtype=bool) & ~np.asarray(flows["background"], dtype=bool)


def _first_rtt_frac(flows: Mapping[str, np.ndarray], sel: np.ndarray) -> float:
    """Fraction of the selected flows that finished within their first RTT: FCT < ideal FCT +
    base RTT / 2. A flow that waits for a grant or credit before sending data needs at least
    ideal FCT + one request/credit round trip (two one-way propagation delays), so it never
    counts; one that goes out at once and is delayed less than half a base RTT does. NaN
    without selected flows or without the ``base_rtt_us`` column."""
    if "base_rtt_us" not in flows or not sel.any():
        return math.nan
    base = np.asarray(flows["base_rtt_us"], dtype=np.float64)[sel]
    if np.isnan(base).any():
        return math.nan
    fct = np.asarray(flows["fct_us"], dtype=np.float64)[sel]
    ideal = np.asarray(flows["ideal_fct_us"], dtype=np.float64)[sel]
    return float(np.mean(fct < ideal + base / 2))


def bottleneck_stats(
    flows: Mapping[str, np.ndarray],
    link_samples: Mapping[str, np.ndarray] | None,
    queue_samples: Mapping[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """Utilization and queue of the bottleneck: the sampled port that serialized the most
    bytes. Its active span runs from its first to its last sampling interval with traffic.

    * ``bottleneck_first_rtt_util``: its mean utilization over the first base RTT of that span
      (the first ``max(1, round(RTT / interval))`` intervals from the first busy one; RTT =
      the largest ``base_rtt_us`` of the flows);
    * ``bottleneck_queue_avg_bytes`` / ``bottleneck_queue_max_bytes``: bytes queued at the port
      (all classes), mean and maximum over the sampling instants of its active span (an
      instant without a queue row is an empty queue).

    NaN where the samples needed are missing."""
    nan = math.nan
    out = {
        "bottleneck_first_rtt_util": nan,
        "bottleneck_queue_avg_bytes": nan,
        "bottleneck_queue_max_bytes": nan,
    }
    if link_samples is None or len(link_samples.get("port", [])) == 0:
        return out
    port = np.asarray(link_samples["port"])
    tx = np.asarray(link_samples["tx_bytes"], dtype=np.float64)
    ports = np.unique(port)
    busiest = ports[int(np.argmax([tx[port == p].sum() for p in ports]))]
    m = port == busiest
    t = np.asarray(link_samples["t_us"], dtype=np.float64)[m]
    order = np.argsort(t, kind="stable")
    t = t[order]
    util = np.asarray(link_samples["utilization"], dtype=np.float64)[m][order]
    busy = np.nonzero(util > 0)[0]
    if len(busy) == 0:
        return out
    i0, i1 = int(busy[0]), int(busy[-1])
    rtt = np.asarray(flows.get("base_rtt_us", []), dtype=np.float64)
    rtt = rtt[np.isfinite(rtt)]
    if len(rtt) and len(t) > 1:
        dt = float(t[1] - t[0])
        k = max(1, round(float(rtt.max()) / dt))
        out["bottleneck_first_rtt_util"] = float(util[i0 : i0 + k].mean())
    if queue_samples is not None and len(queue_samples.get("port", [])) > 0:
        # Queue and link samples share the sampling instants; the link samples of the port
        # give every instant of the span, the queue rows only the non-empty ones.
        per_t = {round(float(x), 6): 0.0 for x in t[i0 : i1 + 1]}
        qp = np.asarray(queue_samples["port"])
        qt = np.asarray(queue_samples["t_us"], dtype=np.float64)[qp == busiest]
        qb = np.asarray(queue_samples["bytes"], dtype=np.float64)[qp == busiest]
        for tt, b in zip(qt.tolist(), qb.tolist()):
            key = round(tt, 6)
            if key in per_t:
                per_t[key] += b
        q = np.array(list(per_t.values()))
        out["bottleneck_queue_avg_bytes"] = float(q.mean())
        out["bottleneck_queue_max_bytes"] = float(q.max())
    return out


def lp_efficiency(flows: Mapping[str, np.ndarray], sel: np.ndarray) -> dict[str, Any]:
    """Opportunistic (low-priority loop) payload of the selected flows: bytes sent
    (``lp_sent_bytes_total``) and the fraction of them that reached the receiving host
    (``lp_transfer_efficiency``, PPT Fig. 29's low-priority transfer efficiency). The
    efficiency is NaN when no opportunistic byte was sent (transports without a low-priority
    loop); both are NaN when the flow table lacks the ``lp_*`` columns."""
    if "lp_sent_bytes" not in flows or "lp_rcvd_bytes" not in flows:
        return {"lp_sent_bytes_total": math.nan, "lp_transfer_efficiency": math.nan}
    sent = int(np.sum(np.asarray(flows["lp_sent_bytes"], dtype=np.uint64)[sel]))
    rcvd = int(np.sum(np.asarray(flows["lp_rcvd_bytes"], dtype=np.uint64)[sel]))
    return {
        "lp_sent_bytes_total": sent,
        "lp_transfer_efficiency": rcvd / sent if sent > 0 else math.nan,
    }


def opportunistic_share(flows: Mapping[str, np.ndarray], sel: np.ndarray) -> dict[str, Any]:
    """``lp_sent_share``: opportunistic payload sent over all payload sent, by the selected
    flows (RPO Fig. 16's ratio of opportunistic packets; NaN when they sent nothing or the
    table lacks the columns); ``reorder_max_bytes_max``: the largest re-sequencing buffer one
    of them needed (RPO Fig. 18 per flow; 0 for transports that do not report it)."""
    out: dict[str, Any] = {"lp_sent_share": math.nan, "reorder_max_bytes_max": math.nan}
    if "lp_sent_bytes" in flows and "sent_bytes" in flows:
        lp = float(np.sum(np.asarray(flows["lp_sent_bytes"], dtype=np.uint64)[sel]))
        tot = float(np.sum(np.asarray(flows["sent_bytes"], dtype=np.uint64)[sel]))
        out["lp_sent_share"] = lp / tot if tot > 0 else math.nan
    if "reorder_max_bytes" in flows:
        r = np.asarray(flows["reorder_max_bytes"], dtype=np.uint64)[sel]
        out["reorder_max_bytes_max"] = int(r.max()) if len(r) else math.nan
    return out


def goodput(flows: Mapping[str, np.ndarray], ports: Mapping[str, np.ndarray] | None) -> float:
    """Payload delivery rate in steady state, normalized by the hosts' link capacity.

    The arrival period runs from the first to the last start of a non-background flow; the
    window is its second half (the first half warms the network up to its steady backlog).
    Each finished non-background flow is taken to deliver its bytes evenly from its start to
    its finish and contributes ``size_bytes`` times the fraction of that interval inside the
    window (unfinished flows contribute nothing). The sum, in bits per second of window, is
    divided by the sum of the ``rate_bps`` of the host ports (one NIC per host). NaN without
    ports, without finished flows or with an empty window (Aeolus Fig. 21).
    """
    if ports is None or len(ports.get("rate_bps", ())) == 0:
        return math.nan
    fg = ~np.asarray(flows["background"], dtype=bool)
    done = fg & np.asarray(flows["finished"], dtype=bool)
    if not done.any():
        return math.nan
    kind = np.asarray(ports["node_kind"], dtype=object)
    cap = float(np.sum(np.asarray(ports["rate_bps"], dtype=np.float64)[kind == "host"]))
    start = np.asarray(flows["start_us"], dtype=np.float64)
    t1 = float(np.max(start[fg]))
    t0 = (float(np.min(start[fg])) + t1) / 2
    if cap <= 0 or t1 <= t0:
        return math.nan
    s = start[done]
    f = np.asarray(flows["finish_us"], dtype=np.float64)[done]
    size = np.asarray(flows["size_bytes"], dtype=np.float64)[done]
    inside = np.clip(np.minimum(f, t1) - np.maximum(s, t0), 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(f > s, inside / (f - s), (f <= t1).astype(np.float64))
    return float(np.sum(size * frac)) * 8 / (cap * (t1 - t0) * 1e-6)


def loss_rate(ports: Mapping[str, np.ndarray] | None) -> float:
    """Share of the bytes the hosts put on the wire that the network dropped.

    The sum of ``dropped_bytes`` over every port divided by the sum of ``tx_bytes`` over the
    host ports (data and control, retransmissions included). Data packets are full-size, so
    where drops are data packets this is close to the fraction of data packets dropped (PASE
    Fig. 4's "loss rate"). NaN without ports or when no host sent anything.
    """
    if ports is None or len(ports.get("tx_bytes", ())) == 0 or "dropped_bytes" not in ports:
        return math.nan
    kind = np.asarray(ports["node_kind"], dtype=object)
    sent = float(np.sum(np.asarray(ports["tx_bytes"], dtype=np.float64)[kind == "host"]))
    dropped = float(np.sum(np.asarray(ports["dropped_bytes"], dtype=np.float64)))
    return dropped / sent if sent > 0 else math.nan


def summarize(
    flows: Mapping[str, np.ndarray],
    counters: Mapping[str, Any],
    link_samples: Mapping[str, np.ndarray] | None = None,
    queue_samples: Mapping[str, np.ndarray] | None = None,
    ports: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Compute the run summary (keys documented in ``docs/results.md``).

    Args:
        flows: the per-flow table (columns as in ``flows.parquet``).
        counters: the whole-run counters (as in ``counters.json``).
        link_samples: the link-sample table, if links were sampled.
        queue_samples: the queue-sample table, if queues were sampled.
        ports: the per-port table (as in ``ports.csv``), for ``goodput``.
    """
    bg = np.asarray(flows["background"], dtype=bool)
    finished = np.asarray(flows["finished"], dtype=bool)
    fg = ~bg
    done = finished & fg
    size = np.asarray(flows["size_bytes"], dtype=np.float64)
    fct = np.asarray(flows["fct_us"], dtype=np.float64)
    sd = np.asarray(flows["slowdown"], dtype=np.float64)
    small = done & (size <= SMALL_FLOW_MAX_BYTES)
    large = done & (size > SMALL_FLOW_MAX_BYTES)

    s: dict[str, Any] = {}
    s["flows_total"] = int(fg.sum())
    s["flows_finished"] = int(done.sum())
    s["flows_unfinished"] = int((fg & ~finished).sum())
    s["background_flows"] = int(bg.sum())
    s["avg_fct_us"] = _mean(fct[done])
    s["p50_fct_us"] = percentile(fct[done], 50)
    s["p99_fct_us"] = percentile(fct[done], 99)
    s["max_fct_us"] = percentile(fct[done], 100)
    s["small_flows"] = int(small.sum())
    s["small_avg_fct_us"] = _mean(fct[small])
    s["small_p50_fct_us"] = percentile(fct[small], 50)
    s["small_p99_fct_us"] = percentile(fct[small], 99)
    s["small_p999_fct_us"] = percentile(fct[small], 99.9)
    s["small_max_fct_us"] = percentile(fct[small], 100)
    s["small_p99_slowdown"] = percentile(sd[small], 99)
    s["small_first_rtt_frac"] = _first_rtt_frac(flows, small)
    s["large_flows"] = int(large.sum())
    s["large_avg_fct_us"] = _mean(fct[large])
    s["slowdown_avg"] = _mean(sd[done])
    s["slowdown_p50"] = percentile(sd[done], 50)
    s["slowdown_p90"] = percentile(sd[done], 90)
    s["slowdown_p99"] = percentile(sd[done], 99)
    s["slowdown_p999"] = percentile(sd[done], 99.9)

    # Deadlines: over every non-background flow with a deadline (an unfinished or aborted flow
    # missed it); "application throughput" is the fraction that met it.
    dl = _with_deadline(flows)
    small_all = size <= SMALL_FLOW_MAX_BYTES
    s["deadline_flows"] = int(dl.sum())
    s["deadline_met"] = int(_met(flows)[dl].sum())
    s["deadline_met_frac"] = _met_frac(flows, dl)
    s["small_deadline_met_frac"] = _met_frac(flows, dl & small_all)
    s["large_deadline_met_frac"] = _met_frac(flows, dl & ~small_all)
    aborted = flows.get("aborted")
    s["flows_aborted"] = 0 if aborted is None else int((np.asarray(aborted, dtype=bool) & fg).sum())

    sent_done = float(np.sum(np.asarray(flows["sent_bytes"], dtype=np.float64)[done]))
    delivered = float(np.sum(size[done]))
    s["transfer_efficiency"] = delivered / sent_done if sent_done > 0 else math.nan
    s.update(lp_efficiency(flows, done))
    s.update(opportunistic_share(flows, done))
    s["goodput"] = goodput(flows, ports)
    hr = None if ports is None else ports.get("host_reorder_max_bytes")
    s["host_reorder_max_bytes_max"] = int(np.max(hr)) if hr is not None and len(hr) else math.nan
    s["retx_bytes_total"] = int(np.sum(np.asarray(flows["retx_bytes"], dtype=np.uint64)))
    timeouts = np.asarray(flows["timeouts"], dtype=np.uint64)
    s["timeouts_total"] = int(np.sum(timeouts))
    s["flows_with_timeout"] = int(np.sum(fg & (timeouts > 0)))

    drops = dict(counters.get("drops", {}))
    s["drops_total"] = int(sum(drops.values()))
    for cause in sorted(drops):
        s[f"drops_{cause}"] = int(drops[cause])
    s["trims"] = int(counters.get("trims", 0))
    s["loss_rate"] = loss_rate(ports)

    util = None if link_samples is None else link_samples.get("utilization")
    s["avg_link_utilization"] = _mean(np.asarray(util)) if util is not None else math.nan
    s.update(bottleneck_stats(flows, link_samples, queue_samples))

    s.update(round_stats(flows))

    events = int(counters.get("events", 0))
    wall = float(counters.get("wall_s", math.nan))
    s["events"] = events
    s["wall_s"] = wall
    s["events_per_s"] = events / wall if wall > 0 else math.nan
    s["sim_end_us"] = float(counters.get("sim_end_ps", 0)) / 1e6
    area = counters.get("flows_in_system_integral_ps")
    end_ps = float(counters.get("sim_end_ps", 0))
    s["flows_in_system_avg"] = float(area) / end_ps if area is not None and end_ps > 0 else math.nan
    s["cut_at_limit"] = bool(counters.get("cut_at_limit", False))
    s["stop_reason"] = str(counters.get("stop_reason", "done"))
    s["packets_left"] = int(counters.get("packets_left", 0))
    s["data_payload_sent_bytes"] = int(counters.get("data_payload_sent", 0))
    s["peak_live_packets"] = int(counters.get("peak_live_packets", 0))
    arb = int(counters.get("arb_msgs_sent", 0))
    s["arb_msgs_sent"] = arb
    s["arb_msgs_per_s"] = arb / (end_ps / 1e12) if end_ps > 0 else math.nan
    return s


def round_table(flows: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One row per barrier round (``incast`` with ``barrier = true``), by round id.

    Columns: ``round``; ``start_us`` (the round's start); ``end_us`` (the last byte of its
    last flow, NaN if a flow of it is unfinished or abandoned); ``qct_us`` (query completion
    time, ``end_us - start_us``); ``flows``; ``timeouts`` (sum over its flows). Empty
    without barrier rounds.
    """
    empty = {
        "round": np.zeros(0, dtype=np.int64),
        "start_us": np.zeros(0),
        "end_us": np.zeros(0),
        "qct_us": np.zeros(0),
        "flows": np.zeros(0, dtype=np.int64),
        "timeouts": np.zeros(0, dtype=np.int64),
    }
    if "round" not in flows:
        return empty
    rid = np.asarray(flows["round"], dtype=np.int64)
    sel = rid >= 0
    if not sel.any():
        return empty
    ids = np.unique(rid[sel])
    start = np.asarray(flows["round_start_us"], dtype=np.float64)
    fin = np.asarray(flows["finish_us"], dtype=np.float64)
    ok = np.asarray(flows["finished"], dtype=bool)
    tmo = np.asarray(flows["timeouts"], dtype=np.int64)
    out = {k: [] for k in empty}
    for r in ids:
        m = rid == r
        st = float(start[m][0])
        end = float(np.max(fin[m])) if bool(ok[m].all()) else math.nan
        out["round"].append(int(r))
        out["start_us"].append(st)
        out["end_us"].append(end)
        out["qct_us"].append(end - st)
        out["flows"].append(int(m.sum()))
        out["timeouts"].append(int(tmo[m].sum()))
    return {k: np.asarray(v, dtype=empty[k].dtype) for k, v in out.items()}


def round_stats(flows: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Summary keys of the barrier rounds (see :func:`round_table`)."""
    t = round_table(flows)
    q = t["qct_us"][np.isfinite(t["qct_us"])]
    return {
        "rounds": len(t["round"]),
        "rounds_finished": len(q),
        "round_qct_avg_us": _mean(q),
        "round_qct_p50_us": percentile(q, 50),
        "round_qct_p99_us": percentile(q, 99),
        "round_qct_max_us": percentile(q, 100),
    }


def json_safe(value: Any) -> Any:
    """Replace NaN/inf floats by ``None`` (JSON has no NaN), recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
