"""Packet traces (packets.parquet) and their pcap export, read back with dpkt.

The tiny case is computed by hand: two hosts on one switch, 10 Gbps links with 1 us of
propagation, one DCTCP flow of exactly three full packets (3 x 1460 B of payload, 1500 B on
the wire). A 1500 B packet takes 1.2 us to serialize, so the sender's NIC starts the packets
at 0, 1.2 and 2.4 us, and the switch port towards the receiver gets (and, idle, starts at
once) each of them one serialization and one propagation delay later: 2.2, 3.4, 4.6 us.
"""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import dpkt
import numpy as np
import pytest

import dcnsim
from dcnsim import ScenarioError
from dcnsim.pcap import flow_port, host_ip

from conftest import TINY_SCENARIO, run_cli

US = 1_000_000  # ps

TWO_HOSTS = """\
name = "trace"
seed = 1

[topology]
kind = "single_switch"
hosts = 2
host_rate = "10Gbps"
host_delay = "1us"

[network]
buffer = "200KB"
ecn_k = "30KB"

[transport]
protocol = "dctcp"

[[workload]]
pattern = "explicit"
file = "flows.csv"

[output]
trace_flows = [0]
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dcnsim.Results]:
    d = tmp_path_factory.mktemp("trace")
    (d / "flows.csv").write_text("src,dst,size,start\n0,1,4380,0\n")
    (d / "sc.toml").write_text(TWO_HOSTS)
    res = dcnsim.run(d / "sc.toml")
    res.write(d / "run")
    return d / "run", res


def _ports(res: dcnsim.Results) -> dict[tuple[int, int], int]:
    p = res.ports
    return {(int(n), int(q)): int(i) for i, n, q in zip(p["id"], p["node"], p["peer"])}


def test_three_packet_flow_has_hand_computed_enqueue_dequeue_times(
    tiny_run: tuple[Path, dcnsim.Results],
) -> None:
    _, res = tiny_run
    pk = res.packets
    assert pk is not None
    ports = _ports(res)
    nic, sw = ports[(0, 2)], ports[(2, 1)]  # host 0's NIC; the switch's port to host 1
    data = (pk["flags"] & 1) == 1

    def events(port: int, ev: str) -> list[tuple[int, int, int]]:
        m = data & (pk["port"] == port) & (pk["event"] == ev)
        return list(
            zip(pk["t_ps"][m].tolist(), pk["seq"][m].tolist(), pk["queue_bytes"][m].tolist())
        )

    assert events(nic, "enqueue") == [(0, 0, 1500), (0, 1460, 1500), (0, 2920, 3000)]
    assert events(nic, "dequeue") == [
        (0, 0, 0),
        (12 * US // 10, 1460, 1500),
        (24 * US // 10, 2920, 0),
    ]
    arrivals = [22 * US // 10, 34 * US // 10, 46 * US // 10]
    assert events(sw, "enqueue") == [(t, s, 1500) for t, s in zip(arrivals, (0, 1460, 2920))]
    assert events(sw, "dequeue") == [(t, s, 0) for t, s in zip(arrivals, (0, 1460, 2920))]
    assert set(pk["size_bytes"][data].tolist()) == {1500}
    assert set(pk["payload_bytes"][data].tolist()) == {1460}
    assert not np.isin(pk["event"], ["drop", "mark", "trim"]).any()
    assert set(pk["ecn"][data].tolist()) == {1}  # DCTCP's data is ECN-capable, unmarked
    # Only flow 0 is traced, and its ACKs (host 1 -> host 0) are in the trace too.
    assert set(pk["flow"].tolist()) == {0}
    acks = ~data & (pk["event"] == "dequeue")
    assert acks.any() and set(pk["src"][acks].tolist()) == {1}
    assert res.counters["trace_events"] == len(pk["t_ps"])
    assert res.counters["trace_events_lost"] == 0


def test_packets_parquet_reads_back_as_written(tiny_run: tuple[Path, dcnsim.Results]) -> None:
    d, res = tiny_run
    back = dcnsim.Results.load(d)
    assert back.packets is not None
    for c, v in res.packets.items():
        assert np.array_equal(np.asarray(back.packets[c]), np.asarray(v)), c


def test_pcap_export_matches_packets_parquet_record_by_record(
    tiny_run: tuple[Path, dcnsim.Results], tmp_path: Path
) -> None:
    d, res = tiny_run
    out = tmp_path / "trace.pcap"
    r = run_cli(["export", str(d), "--format", "pcap", "--out", str(out)], tmp_path)
    assert r.returncode == 0, r.stderr
    raw = out.read_bytes()
    assert raw[:4] == bytes.fromhex("4d3cb2a1")  # nanosecond pcap, little-endian
    rd = dpkt.pcap.Reader(io.BytesIO(raw))
    assert rd.datalink() == dpkt.pcap.DLT_EN10MB
    recs = list(rd)
    pk = res.packets
    deq = np.flatnonzero(pk["event"] == "dequeue")
    assert len(recs) == len(deq) > 6
    for (ts, buf), i in zip(recs, deq):
        assert int(ts * 10**9) == int(pk["t_ps"][i]) // 1000
        eth = dpkt.ethernet.Ethernet(buf)
        ip = eth.data
        assert isinstance(ip, dpkt.ip.IP)
        assert ip.src == host_ip(int(pk["src"][i])) and ip.dst == host_ip(int(pk["dst"][i]))
        assert ip.len == int(pk["size_bytes"][i])
        assert ip.tos & 3 == (0b10 if pk["ecn"][i] == 1 else 0b00)
        tcp = ip.data
        assert isinstance(tcp, dpkt.tcp.TCP)
        assert tcp.sport == tcp.dport == flow_port(int(pk["flow"][i]))
        assert tcp.seq == int(pk["seq"][i]) % 2**32
        assert tcp.ack == int(pk["ack"][i]) % 2**32
        assert bool(tcp.flags & dpkt.tcp.TH_PUSH) == bool(pk["flags"][i] & 1)
    # Every IPv4 header checksum verifies: the ones'-complement sum of the header is 0xffff.
    for _, buf in recs:
        words = sum(int.from_bytes(buf[14 + k : 16 + k], "big") for k in range(0, 20, 2))
        while words >> 16:
            words = (words & 0xFFFF) + (words >> 16)
        assert words == 0xFFFF
    # The hand-computed data times again, as Wireshark would show them (ns).
    data_ns = [int(ts * 10**9) for ts, b in recs if dpkt.ethernet.Ethernet(b).data.len == 1500]
    assert data_ns == [0, 1200, 2200, 2400, 3400, 4600]
    assert socket.inet_ntoa(host_ip(1)) == "10.0.0.1"


def test_tracing_changes_no_result_and_balances_with_ports_csv() -> None:
    plain = dcnsim.run(TINY_SCENARIO)
    traced = dcnsim.run(TINY_SCENARIO + '\n[output]\ntrace_ports = "all"\n')
    for c in ("fct_us", "sent_bytes", "retx_bytes"):
        assert np.array_equal(plain.flows[c], traced.flows[c], equal_nan=True), c
    pk = traced.packets
    assert pk is not None and plain.packets is None
    for i, tx, drops in zip(traced.ports["id"], traced.ports["tx_bytes"], traced.ports["drops"]):
        m = pk["port"] == i
        deq = m & (pk["event"] == "dequeue")
        assert int(pk["size_bytes"][deq].sum()) == int(tx)
        assert int((m & (pk["event"] == "drop")).sum()) == int(drops)
        # Every accepted packet left (the run drained the network).
        assert int((m & (pk["event"] == "enqueue")).sum()) == int(deq.sum())
    # Each event's queue_bytes: enqueues add, dequeues subtract the packet's size.
    for i in np.unique(pk["port"]):
        m = (pk["port"] == i) & np.isin(pk["event"], ["enqueue", "dequeue"])
        sign = np.where(pk["event"][m] == "enqueue", 1, -1)
        q = np.cumsum(sign * pk["size_bytes"][m].astype(np.int64))
        assert np.array_equal(q, pk["queue_bytes"][m].astype(np.int64))


def test_trace_limit_stops_recording_with_a_warning_naming_the_field() -> None:
    text = TINY_SCENARIO + '\n[output]\ntrace_ports = "switch"\ntrace_limit = 100\n'
    with pytest.warns(UserWarning, match=r"output\.trace_limit"):
        res = dcnsim.run(text)
    assert res.packets is not None and len(res.packets["t_ps"]) == 100
    assert res.counters["trace_events_lost"] > 0


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("trace_limit = 0", "output.trace_limit"),
        ("trace_limit = 100000000000", "output.trace_limit"),
        ("trace_ports = [999]", "output.trace_ports"),
        ('trace_ports = "spine"', "output.trace_ports"),
    ],
)
def test_bad_trace_fields_name_the_field(extra: str, field: str) -> None:
    with pytest.raises(ScenarioError) as e:
        dcnsim.run(TINY_SCENARIO + f"\n[output]\n{extra}\n")
    assert e.value.field == field


def test_pcap_export_of_an_untraced_run_says_how_to_trace(tmp_path: Path) -> None:
    dcnsim.run(TINY_SCENARIO).write(tmp_path / "run")
    r = run_cli(
        ["export", str(tmp_path / "run"), "--format", "pcap", "--out", str(tmp_path / "x.pcap")],
        tmp_path,
    )
    assert r.returncode == 2
    assert "trace_ports" in r.stderr
    assert not (tmp_path / "x.pcap").exists()
    assert json.loads((tmp_path / "run" / "counters.json").read_text()).get("trace_events") is None


NDP_INCAST = """\
name = "ndp-incast"
seed = 3

[topology]
kind = "single_switch"
hosts = 9
host_rate = "10Gbps"
host_delay = "1us"

[network]
mtu = "9000B"
buffer = "100KB"
queue_policy = "ndp_trim"

[transport]
protocol = "ndp"

[[workload]]
pattern = "incast"
receiver = 8
senders = 8
size = "200KB"
rounds = 1

[output]
trace_ports = "switch"
"""


def test_trims_and_drops_in_the_trace_match_the_run_counters() -> None:
    res = dcnsim.run(NDP_INCAST)
    pk = res.packets
    assert pk is not None
    ev = pk["event"]
    trims = ev == "trim"
    assert trims.sum() == res.counters["trims"] > 0
    assert (ev == "drop").sum() == sum(res.counters["drops"].values())
    # A trim row carries the trimmed packet: the TRIMMED flag (4) set, no payload; the
    # packet is the arriving one (the row before is its enqueue at the same time and port) or
    # the data queue's tail (NDP's coin), enqueued untrimmed at that port earlier.
    assert np.all(pk["flags"][trims] & 4 == 4)
    assert np.all(pk["payload_bytes"][trims] == 0)
    kinds = {"arriving": 0, "tail": 0}
    for i in np.flatnonzero(trims):
        same = [pk[c][i - 1] == pk[c][i] for c in ("port", "flow", "seq")]
        if ev[i - 1] == "enqueue" and all(same) and pk["t_ps"][i - 1] == pk["t_ps"][i]:
            kinds["arriving"] += 1
            continue
        before = np.flatnonzero(
            (np.arange(len(ev)) < i)
            & (ev == "enqueue")
            & (pk["port"] == pk["port"][i])
            & (pk["flow"] == pk["flow"][i])
            & (pk["seq"] == pk["seq"][i])
            & ((pk["flags"] & 4) == 0)
        )
        assert len(before) > 0, i
        kinds["tail"] += 1
    assert kinds["arriving"] > 0 and kinds["tail"] > 0
    # The pcap carries UDP for a receiver-driven protocol, with the flow id in its header.
    # (written and read in memory)
    import tempfile

    from dcnsim.pcap import write_pcap

    with tempfile.TemporaryDirectory() as t:
        path, n = write_pcap(pk, "ndp", Path(t) / "ndp.pcap")
        recs = list(dpkt.pcap.Reader(io.BytesIO(path.read_bytes())))
    deq = np.flatnonzero(ev == "dequeue")
    assert n == len(recs) == len(deq)
    for (_, buf), i in zip(recs[:200], deq[:200]):
        udp = dpkt.ethernet.Ethernet(buf).data.data
        assert isinstance(udp, dpkt.udp.UDP)
        assert int.from_bytes(bytes(udp.data)[:4], "big") == int(pk["flow"][i])
        assert int.from_bytes(bytes(udp.data)[8:16], "big") == int(pk["seq"][i])
