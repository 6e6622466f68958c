"""pcap export of a run's packet trace (``packets.parquet``), for Wireshark and tshark.

``dcnsim export DIR --format pcap --out FILE`` writes one record per ``dequeue`` event of
the trace: a packet leaving a traced port's queue, stamped with the time its serialization
starts there. A packet traced at several ports appears once per port, as in captures taken on
several interfaces at once. The layout (``docs/formats.md`` has the details):

* the file is a classic pcap file with nanosecond timestamps (magic ``0xa1b23c4d``, written
  little-endian), link type Ethernet, snap length 128; the simulated time in picoseconds is
  rounded down to the nanosecond;
* each record holds only the synthetic headers (its captured length); its original length is
  the simulated wire size plus the 14-byte Ethernet header, so Wireshark shows the real sizes;
* Ethernet: source and destination MAC ``02:00:`` followed by the host id (32 bits,
  big-endian) of the packet's source and destination host, EtherType IPv4;
* IPv4: addresses ``10.a.b.c`` where ``a.b.c`` is the host id (24 bits), total length the
  simulated wire size (the simulated packet is the IP packet), TTL 64, identification the
  low 16 bits of the flow id, the two ECN bits from the packet's codepoint (not ECN-capable
  00, ECN-capable 10, CE 11), DSCP the priority class times 8 (class 0 is DSCP 0), a
  correct header checksum;
* window-based protocols (TCP and its variants, pFabric, HPCC) get a 20-byte TCP header:
  both ports ``1024 + flow mod 64512`` (so both directions of a flow are one conversation),
  sequence number the packet's ``seq`` and acknowledgment number its ``ack``, both modulo
  2^32; flags ACK, plus PSH on data packets; window 65535; checksum 0 (not computed:
  the payload is not in the file);
* every other protocol gets an 8-byte UDP header (same ports, checksum 0) and a 16-byte
  dcnsim header: flow id (32 bits), the transport's packet kind (8 bits), the low 8 bits of
  the packet flags, 16 zero bits, ``seq`` (64 bits), all big-endian.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

#: Protocols whose packets are written with TCP headers (the window-based family).
TCP_PROTOCOLS = frozenset(
    {
        "tcp",
        "dctcp",
        "d2tcp",
        "l2dct",
        "pias",
        "rc3",
        "ppt",
        "swift",
        "ppt_swift",
        "ptcp",
        "ictcp",
        "pfabric",
        "hpcc",
    }
)

PCAP_NS_MAGIC = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
SNAPLEN = 128
PORT_BASE = 1024
PORT_SPAN = 65536 - PORT_BASE
DATA_FLAG = 1
ECN_BITS = (0b00, 0b10, 0b11)  # not ECT, ECT(0), CE


def host_ip(host: int) -> bytes:
    """The IPv4 address of host ``host``: ``10.a.b.c`` with ``a.b.c`` its 24-bit id."""
    return bytes((10, (host >> 16) & 0xFF, (host >> 8) & 0xFF, host & 0xFF))


def host_mac(host: int) -> bytes:
    return b"\x02\x00" + struct.pack(">I", host & 0xFFFFFFFF)


def flow_port(flow: int) -> int:
    return PORT_BASE + flow % PORT_SPAN


def _ip_checksum(header: bytes) -> int:
    s = sum(struct.unpack(">10H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(row: Mapping[str, Any], tcp: bool) -> bytes:
    """The synthetic Ethernet/IPv4/TCP-or-UDP headers of one trace row (``packets.parquet``
    column names)."""
    src, dst, flow = int(row["src"]), int(row["dst"]), int(row["flow"])
    size = int(row["size_bytes"])
    port = flow_port(flow)
    eth = host_mac(dst) + host_mac(src) + b"\x08\x00"
    tos = ((int(row["class"]) * 8) << 2) | ECN_BITS[int(row["ecn"])]
    if tcp:
        flags = 0x10 | (0x08 if int(row["flags"]) & DATA_FLAG else 0)
        l4 = struct.pack(
            ">HHIIBBHHH",
            port,
            port,
            int(row["seq"]) & 0xFFFFFFFF,
            int(row["ack"]) & 0xFFFFFFFF,
            5 << 4,
            flags,
            65535,
            0,
            0,
        )
        proto = 6
    else:
        shim = struct.pack(
            ">IBBHQ",
            flow & 0xFFFFFFFF,
            int(row["kind"]),
            int(row["flags"]) & 0xFF,
            0,
            int(row["seq"]),
        )
        l4 = struct.pack(">HHHH", port, port, max(size - 20, 8 + len(shim)) & 0xFFFF, 0) + shim
        proto = 17
    total = min(max(size, 20 + len(l4)), 0xFFFF)
    ip = struct.pack(
        ">BBHHHBBH4s4s",
        0x45,
        tos,
        total,
        flow & 0xFFFF,
        0,
        64,
        proto,
        0,
        host_ip(src),
        host_ip(dst),
    )
    ip = ip[:10] + struct.pack(">H", _ip_checksum(ip)) + ip[12:]
    return eth + ip + l4


def write_pcap(
    packets: Mapping[str, np.ndarray], protocol: str, path: str | os.PathLike[str]
) -> tuple[Path, int]:
    """Write the ``dequeue`` rows of a packet-trace table as a pcap file (atomically); return
    the path and the number of records."""
    from dcnsim.results import atomic_write_bytes

    tcp = protocol in TCP_PROTOCOLS
    ev = np.asarray(packets["event"]).astype(str)
    rows = np.flatnonzero(ev == "dequeue")
    cols = {k: np.asarray(v) for k, v in packets.items()}
    out = [struct.pack("<IHHiIII", PCAP_NS_MAGIC, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)]
    for i in rows:
        row = {k: v[i] for k, v in cols.items()}
        data = frame(row, tcp)[:SNAPLEN]
        ns = int(row["t_ps"]) // 1000
        sec, nsec = divmod(ns, 1_000_000_000)
        orig = 14 + int(row["size_bytes"])
        out.append(struct.pack("<IIII", sec, nsec, len(data), max(orig, len(data))) + data)
    p = Path(path)
    atomic_write_bytes(p, b"".join(out))
    return p, len(rows)


def export_pcap(run_dir: str | os.PathLike[str], path: str | os.PathLike[str]) -> tuple[Path, int]:
    """Write the pcap of run folder ``run_dir``'s ``packets.parquet``; raises
    :class:`~dcnsim.ScenarioError` naming ``output.trace_ports`` if the run has no trace."""
    import json

    import pyarrow.parquet as pq

    from dcnsim.errors import ScenarioError

    d = Path(run_dir)
    f = d / "packets.parquet"
    if not f.is_file():
        raise ScenarioError(
            "output.trace_ports",
            f"{d} has no packets.parquet: the run traced no packets; give output.trace_ports "
            "and/or output.trace_flows in the scenario and run it again",
        )
    t = pq.read_table(f)
    packets = {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}
    sc = json.loads((d / "scenario.json").read_text())
    protocol = str(sc.get("transport", {}).get("protocol", ""))
    return write_pcap(packets, protocol, path)
