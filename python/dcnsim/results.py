"""Results of one run: numpy tables, the summary, and the on-disk result folder.

The core hands over raw columns (picoseconds, ``u64::MAX`` for "none"); :meth:`Results.from_core`
turns them into the documented tables (microseconds as float64, NaN for "none"). The result
folder layout, every column and every summary key are described in ``docs/results.md``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.metrics import json_safe, size_bucket_stats, summarize

_NONE_U64 = np.iinfo(np.uint64).max

Table = dict[str, np.ndarray]

#: Column order of each table on disk.
FLOW_COLUMNS = [
    "id",
    "src",
    "dst",
    "size_bytes",
    "start_us",
    "finish_us",
    "fct_us",
    "ideal_fct_us",
    "base_rtt_us",
    "slowdown",
    "sent_bytes",
    "retx_bytes",
    "timeouts",
    "lp_sent_bytes",
    "lp_rcvd_bytes",
    "reorder_max_bytes",
    "background",
    "deadline_us",
    "finished",
    "aborted",
    "met_deadline",
    "round",
    "round_start_us",
]
PORT_COLUMNS = [
    "id",
    "node",
    "peer",
    "node_kind",
    "peer_kind",
    "rate_bps",
    "delay_us",
    "tx_bytes",
    "drops",
    "utilization",
    "rx_bytes",
    "dropped_bytes",
    "trimmed_bytes",
    "queued_bytes",
    "arb_msgs",
    "host_reorder_max_bytes",
]
QUEUE_COLUMNS = ["t_us", "port", "prio", "bytes"]
LINK_COLUMNS = ["t_us", "port", "tx_bytes", "utilization"]
#: The packet trace (``packets.parquet``; ``output.trace_ports``/``trace_flows``).
PACKET_COLUMNS = [
    "t_ps",
    "event",
    "node",
    "port",
    "class",
    "flow",
    "seq",
    "ack",
    "size_bytes",
    "payload_bytes",
    "kind",
    "flags",
    "ecn",
    "src",
    "dst",
    "queue_bytes",
]
_PACKET_TYPES = {
    "t_ps": np.uint64,
    "node": np.uint32,
    "port": np.uint32,
    "class": np.uint8,
    "flow": np.uint32,
    "seq": np.uint64,
    "ack": np.uint64,
    "size_bytes": np.uint32,
    "payload_bytes": np.uint32,
    "kind": np.uint8,
    "flags": np.uint16,
    "ecn": np.uint8,
    "src": np.uint32,
    "dst": np.uint32,
    "queue_bytes": np.uint64,
}

#: The ACK-delay log (``ack_delays.parquet``; ``output.ack_delays``): these columns, then the
#: receiver control's own quantities (``ACK_DELAY_STATE`` for the shipped controls).
ACK_DELAY_COLUMNS = [
    "t_us",
    "release_us",
    "host",
    "flow",
    "ack",
    "rwnd_bytes",
    "delay_us",
    "hold_us",
]
#: The quantities each receiver-side control adds to ``ack_delays.parquet``, in order.
ACK_DELAY_STATE = {
    "ptcp": ["alpha", "p_sum", "queuing_us"],
    "iatcp": ["n", "w_segs", "delta_us"],
}


def _col(x: Any) -> Any:
    """A core column: ``(dtype, bytes)`` -> numpy array; lists and arrays pass through."""
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], (bytes, bytearray, memoryview)):
        return np.frombuffer(x[1], dtype=np.dtype(x[0]))
    if isinstance(x, list):
        return x
    return np.asarray(x)


def _us(ps: np.ndarray, *, none_is_nan: bool = True) -> np.ndarray:
    ps = np.asarray(ps, dtype=np.uint64)
    out = ps.astype(np.float64) / 1e6
    if none_is_nan:
        out[ps == _NONE_U64] = math.nan
    return out


def _flows_from_core(raw: Mapping[str, Any]) -> Table:
    c = {k: _col(v) for k, v in raw.items()}
    finish = np.asarray(c["finish_ps"], dtype=np.uint64)
    finished = finish != _NONE_U64
    fct = _us(c["fct_ps"])
    fct[~finished] = math.nan
    ideal = _us(c["ideal_fct_ps"])
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(ideal > 0, fct / ideal, math.nan)
    aborted = np.asarray(c.get("aborted", np.zeros(len(ideal), dtype=bool)), dtype=bool)
    deadline_ps = np.asarray(c["deadline_ps"], dtype=np.uint64)
    fct_ps = np.asarray(c["fct_ps"], dtype=np.uint64)
    # Exact (integer picoseconds): finished no later than start + deadline.
    met = finished & ~aborted & (deadline_ps != _NONE_U64) & (fct_ps <= deadline_ps)
    return {
        "id": np.asarray(c["id"], dtype=np.uint32),
        "src": np.asarray(c["src"], dtype=np.uint32),
        "dst": np.asarray(c["dst"], dtype=np.uint32),
        "size_bytes": np.asarray(c["size"], dtype=np.uint64),
        "start_us": _us(c["start_ps"]),
        "finish_us": _us(finish),
        "fct_us": fct,
        "ideal_fct_us": ideal,
        "base_rtt_us": _us(c["base_rtt_ps"])
        if "base_rtt_ps" in c
        else np.full(len(ideal), math.nan),
        "slowdown": slowdown,
        "sent_bytes": np.asarray(c["sent_bytes"], dtype=np.uint64),
        "retx_bytes": np.asarray(c["retx_bytes"], dtype=np.uint64),
        "timeouts": np.asarray(c["timeouts"], dtype=np.uint32),
        "lp_sent_bytes": np.asarray(c.get("lp_sent_bytes", np.zeros(len(ideal))), dtype=np.uint64),
        "lp_rcvd_bytes": np.asarray(c.get("lp_rcvd_bytes", np.zeros(len(ideal))), dtype=np.uint64),
        "reorder_max_bytes": np.asarray(
            c.get("reorder_max_bytes", np.zeros(len(ideal))), dtype=np.uint64
        ),
        "background": np.asarray(c["background"], dtype=bool),
        "deadline_us": _us(deadline_ps),
        "finished": finished,
        "aborted": aborted,
        "met_deadline": met,
        "round": _round_ids(c, len(ideal)),
        "round_start_us": _us(c["round_start_ps"])
        if "round_start_ps" in c
        else np.full(len(ideal), math.nan),
    }


def _round_ids(c: Mapping[str, Any], n: int) -> np.ndarray:
    """Barrier round of each flow as int64, -1 outside barrier rounds."""
    if "round" not in c:
        return np.full(n, -1, dtype=np.int64)
    r = np.asarray(c["round"], dtype=np.uint32)
    out = r.astype(np.int64)
    out[r == np.iinfo(np.uint32).max] = -1
    return out


def _ports_from_core(raw: Mapping[str, Any], sim_end_ps: int) -> Table:
    c = {k: _col(v) for k, v in raw.items()}
    rate = np.asarray(c["rate_bps"], dtype=np.float64)
    tx = np.asarray(c["tx_bytes"], dtype=np.uint64)
    denom = rate * (sim_end_ps / 1e12)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(denom > 0, tx.astype(np.float64) * 8 / denom, math.nan)
    return {
        "id": np.asarray(c["id"], dtype=np.uint32),
        "node": np.asarray(c["node"], dtype=np.uint32),
        "peer": np.asarray(c["peer"], dtype=np.uint32),
        "node_kind": np.asarray(c["node_kind"], dtype=object),
        "peer_kind": np.asarray(c["peer_kind"], dtype=object),
        "rate_bps": np.asarray(c["rate_bps"], dtype=np.uint64),
        "delay_us": _us(c["delay_ps"], none_is_nan=False),
        "tx_bytes": tx,
        "drops": np.asarray(c["drops"], dtype=np.uint64),
        "utilization": util,
        # The byte balance (absent from outputs of older cores: zeros).
        **{
            k: np.asarray(c.get(k, np.zeros(len(rate))), dtype=np.uint64)
            for k in (
                "rx_bytes",
                "dropped_bytes",
                "trimmed_bytes",
                "queued_bytes",
                "arb_msgs",
                "host_reorder_max_bytes",
            )
        },
    }


def _queue_from_core(raw: Mapping[str, Any]) -> Table:
    c = {k: _col(v) for k, v in raw.items()}
    return {
        "t_us": _us(c["t_ps"], none_is_nan=False),
        "port": np.asarray(c["port"], dtype=np.uint32),
        "prio": np.asarray(c["prio"], dtype=np.uint8),
        "bytes": np.asarray(c["bytes"], dtype=np.uint64),
    }


def _links_from_core(raw: Mapping[str, Any]) -> Table:
    c = {k: _col(v) for k, v in raw.items()}
    return {
        "t_us": _us(c["t_ps"], none_is_nan=False),
        "port": np.asarray(c["port"], dtype=np.uint32),
        "tx_bytes": np.asarray(c["tx_bytes"], dtype=np.uint64),
        "utilization": np.asarray(c["utilization"], dtype=np.float64),
    }


def _packets_from_core(raw: Mapping[str, Any]) -> Table:
    c = {k: _col(v) for k, v in raw.items() if k not in ("lost", "limit", "event_names")}
    c["size_bytes"] = c.pop("size")
    c["payload_bytes"] = c.pop("payload")
    names = np.asarray(raw["event_names"], dtype=object)
    out: Table = {k: np.asarray(c[k], dtype=t) for k, t in _PACKET_TYPES.items()}
    out["event"] = names[np.asarray(c["event"], dtype=np.intp)]
    return {k: out[k] for k in PACKET_COLUMNS}


def _ack_delays_from_core(raw: Mapping[str, Any]) -> Table:
    made = np.asarray(_col(raw["made_ps"]), dtype=np.uint64)
    release = np.asarray(_col(raw["release_ps"]), dtype=np.uint64)
    rwnd = np.asarray(_col(raw["rwnd"]), dtype=np.uint64)
    delay = np.asarray(_col(raw["delay_ps"]), dtype=np.uint64)
    out: Table = {
        "t_us": _us(made, none_is_nan=False),
        "release_us": _us(release, none_is_nan=False),
        "host": np.asarray(_col(raw["host"]), dtype=np.uint32),
        "flow": np.asarray(_col(raw["flow"]), dtype=np.uint32),
        "ack": np.asarray(_col(raw["ack"]), dtype=np.uint64),
        "rwnd_bytes": np.where(rwnd == np.iinfo(np.uint64).max, np.nan, rwnd.astype(np.float64)),
        "delay_us": _us(delay, none_is_nan=False),
        "hold_us": _us(release - made, none_is_nan=False),
    }
    for name in raw["state_names"]:
        out[str(name)] = np.asarray(_col(raw["state"][name]), dtype=np.float64)
    return out


def _warn_log_full(message: str) -> None:
    """Warn that a bounded run log (packet trace, ACK-delay log) stopped recording."""
    import warnings

    # stacklevel 3: the caller of Results.from_core, not this helper nor from_core.
    warnings.warn(message, stacklevel=3)


def _rows(table: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(table.values()))) if table else 0


class Results:
    """The output of one run.

    Attributes:
        flows: per-flow table (``docs/results.md``, "flows"), column name -> numpy array.
        ports: per-egress-port table.
        queue_samples: queue occupancy samples (empty columns if not sampled).
        link_samples: link samples (empty columns if not sampled).
        counters: whole-run counters (events, drops by cause, sim end, wall time, ...).
        scenario: the normalized scenario (every default filled in), as a dict.
        packets: the packet trace (``packets.parquet``), or None if the run traced nothing.
        ack_delays: the ACK-delay log (``ack_delays.parquet``), or None if the run kept none.
    """

    def __init__(
        self,
        flows: Table,
        ports: Table,
        queue_samples: Table,
        link_samples: Table,
        counters: dict[str, Any],
        scenario: dict[str, Any],
        packets: Table | None = None,
        ack_delays: Table | None = None,
    ) -> None:
        self.packets = packets
        self.ack_delays = ack_delays
        self.flows = flows
        self.ports = ports
        self.queue_samples = queue_samples
        self.link_samples = link_samples
        self.counters = counters
        self.scenario = scenario
        self._summary: dict[str, Any] | None = None

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_core(cls, raw: Mapping[str, Any]) -> Results:
        """Build from the dict returned by ``dcnsim._core.run``.

        Columns may be ``(dtype, bytes)`` pairs (as the core returns them) or arrays.
        """
        counters = dict(raw["counters"])
        counters["drops"] = dict(counters.get("drops", {}))
        scenario_json = raw.get("scenario_json") or "{}"
        packets = None
        if raw.get("trace") is not None:
            tr = raw["trace"]
            packets = _packets_from_core(tr)
            counters["trace_events"] = _rows(packets)
            counters["trace_events_lost"] = int(tr["lost"])
            if tr["lost"]:
                _warn_log_full(
                    f"output.trace_limit: the packet trace stopped at {int(tr['limit'])} events; "
                    f"{int(tr['lost'])} later events were not recorded (narrow output.trace_ports "
                    "or output.trace_flows, or raise output.trace_limit)"
                )
        ack_delays = None
        if raw.get("ack_delays") is not None:
            ad = raw["ack_delays"]
            ack_delays = _ack_delays_from_core(ad)
            counters["ack_delays_rows"] = _rows(ack_delays)
            counters["ack_delays_lost"] = int(ad["lost"])
            if ad["lost"]:
                _warn_log_full(
                    f"output.ack_delays_limit: the ACK-delay log stopped at {int(ad['limit'])} "
                    f"rows; {int(ad['lost'])} later ACKs were not recorded (raise "
                    "output.ack_delays_limit or shorten the run)"
                )
        return cls(
            flows=_flows_from_core(raw["flows"]),
            ports=_ports_from_core(raw["ports"], int(counters.get("sim_end_ps", 0))),
            queue_samples=_queue_from_core(raw["queue_samples"]),
            link_samples=_links_from_core(raw["link_samples"]),
            counters=counters,
            scenario=json.loads(scenario_json),
            packets=packets,
            ack_delays=ack_delays,
        )

    @classmethod
    def load(
        cls,
        out_dir: str | os.PathLike[str],
        *,
        columns: Mapping[str, list[str]] | None = None,
        packets: bool = True,
    ) -> Results:
        """Read a result folder written by :meth:`write`.

        ``columns`` reads only the named columns of some Parquet tables (keys
        ``flows.parquet``, ``queue.parquet``, ``link.parquet``, ``packets.parquet``,
        ``ack_delays.parquet``), e.g. a
        plot of link samples that needs no ``tx_bytes``; ``packets=False`` leaves the packet
        trace unread (``packets`` is then None)."""
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        d = Path(out_dir)
        if not (d / "summary.json").is_file():
            raise FileNotFoundError(f"{d} is not a dcnsim result folder (no summary.json)")
        only = dict(columns or {})

        def parquet(name: str, cols: list[str]) -> Table:
            p = d / name
            if not p.is_file():
                return {c: np.zeros(0) for c in only.get(name, cols)}
            t = pq.read_table(p, columns=only.get(name))
            return {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}

        ports_t = pacsv.read_csv(d / "ports.csv")
        ports = {c: ports_t.column(c).to_numpy(zero_copy_only=False) for c in ports_t.column_names}
        res = cls(
            flows=parquet("flows.parquet", FLOW_COLUMNS),
            ports=ports,
            queue_samples=parquet("queue.parquet", QUEUE_COLUMNS),
            link_samples=parquet("link.parquet", LINK_COLUMNS),
            counters=json.loads((d / "counters.json").read_text()),
            scenario=json.loads((d / "scenario.json").read_text()),
            packets=parquet("packets.parquet", PACKET_COLUMNS)
            if packets and (d / "packets.parquet").is_file()
            else None,
            ack_delays=parquet("ack_delays.parquet", ACK_DELAY_COLUMNS)
            if (d / "ack_delays.parquet").is_file()
            else None,
        )
        res._summary = _nan_from_null(json.loads((d / "summary.json").read_text()))
        return res

    # -- metrics -----------------------------------------------------------------------

    @property
    def has_queue_samples(self) -> bool:
        return _rows(self.queue_samples) > 0

    @property
    def has_link_samples(self) -> bool:
        return _rows(self.link_samples) > 0

    def summary(self) -> dict[str, Any]:
        """The run summary (``docs/results.md``, "summary.json"); NaN where undefined."""
        if self._summary is None:
            links = self.link_samples if self.has_link_samples else None
            queues = self.queue_samples if self.has_queue_samples else None
            self._summary = summarize(self.flows, self.counters, links, queues, self.ports)
        return dict(self._summary)

    def flows_table(self) -> Any:
        """The flow table as a ``pyarrow.Table`` (columns and types as in ``flows.parquet``;
        ``.to_pandas()`` on it gives a DataFrame when pandas is installed)."""
        return arrow_table(self.flows, FLOW_COLUMNS)

    def size_buckets(self) -> list[dict[str, Any]]:
        """FCT and slowdown statistics per flow-size bucket (``metrics.SIZE_BUCKETS``)."""
        return size_bucket_stats(self.flows)

    # -- writing -----------------------------------------------------------------------

    def write(self, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the result folder atomically and return its path.

        ``out_dir`` must be missing, an empty folder, or (with ``overwrite``) a run folder
        dcnsim wrote earlier; anything else raises :class:`dcnsim.outdir.OutputError` (a
        :class:`~dcnsim.ScenarioError`) before anything is written. Replacing an earlier run
        removes or overwrites only the files its manifest lists: files added since (a
        ``plots/`` folder, notes) are kept. Files are written into a temporary folder and
        renamed into place when complete (``dcnsim.outdir`` documents each step); if anything
        fails, the temporary folder is removed. Stale temporary folders of dead dcnsim
        processes at ``out_dir`` are removed first.
        """
        from dcnsim import outdir

        out = Path(out_dir).absolute()
        outdir.check_run_dir(out, overwrite=overwrite)
        outdir.adopt_legacy_run(out)  # an older dcnsim's run folder: list its files first
        outdir.clean_stale(out.parent, names=[out.name])
        outdir.clean_stale(out, names=[outdir.MANIFEST])
        tmp = outdir.start_run_dir(out)
        try:
            files = self._write_files(tmp)
            outdir.commit_run_dir(tmp, out, files, outdir.fingerprint(self.scenario))
        except BaseException:
            outdir.abandon(tmp)
            raise
        return out

    def _write_files(self, d: Path) -> list[str]:
        """Write the result files into folder ``d``; return their names."""
        names = ["flows.parquet", "flows.csv", "ports.csv"]
        write_table(self.flows, FLOW_COLUMNS, d / "flows.parquet")
        write_table(self.flows, FLOW_COLUMNS, d / "flows.csv")
        write_table(self.ports, PORT_COLUMNS, d / "ports.csv")
        if self.has_queue_samples:
            write_table(self.queue_samples, QUEUE_COLUMNS, d / "queue.parquet")
            names.append("queue.parquet")
        if self.has_link_samples:
            write_table(self.link_samples, LINK_COLUMNS, d / "link.parquet")
            names.append("link.parquet")
        if self.packets is not None:
            write_table(self.packets, PACKET_COLUMNS, d / "packets.parquet")
            names.append("packets.parquet")
        if self.ack_delays is not None:
            cols = [*ACK_DELAY_COLUMNS, *(c for c in self.ack_delays if c not in ACK_DELAY_COLUMNS)]
            write_table(self.ack_delays, cols, d / "ack_delays.parquet")
            names.append("ack_delays.parquet")
        write_json(self.counters, d / "counters.json")
        write_json(self.scenario, d / "scenario.json")
        write_json(self.summary(), d / "summary.json")
        return [*names, "counters.json", "scenario.json", "summary.json"]


def _nan_from_null(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (math.nan if v is None else v) for k, v in d.items()}


def arrow_table(table: Mapping[str, Any], columns: list[str]) -> Any:
    """The given columns of a table (those present, in this order) as a ``pyarrow.Table``."""
    import pyarrow as pa

    cols = [c for c in columns if c in table]
    arrays = []
    for c in cols:
        v = table[c]
        if isinstance(v, np.ndarray) and v.dtype == object:
            arrays.append(pa.array([str(x) for x in v], type=pa.string()))
        else:
            arrays.append(pa.array(np.asarray(v)))
    return pa.Table.from_arrays(arrays, names=cols)


def write_table(table: Mapping[str, Any], columns: list[str], path: Path) -> None:
    """Write the given columns of a table as Parquet or CSV (by the file's suffix)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    t = arrow_table(table, columns)
    if path.suffix == ".parquet":
        pq.write_table(t, path)
    else:
        pacsv.write_csv(t, path, pacsv.WriteOptions(quoting_style="needed"))


def write_json(obj: Any, path: Path) -> None:
    """Write ``obj`` as indented JSON (NaN written as ``null``)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(json_safe(obj), f, indent=2, sort_keys=False)
        f.write("\n")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file via a temporary sibling (``<name>.tmp-<host>-<pid>``) and ``os.replace``."""
    from dcnsim.outdir import tmp_suffix

    tmp = path.with_name(f"{path.name}.tmp-{tmp_suffix()}")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
