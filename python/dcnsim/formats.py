"""Files of other simulators: HPCC's ``fct.txt`` and htsim's connection matrices (``.cm``).

The layouts are described in ``docs/formats.md``; in short:

* **HPCC ``fct.txt``** (written by :func:`write_hpcc_fct`, read by :func:`read_hpcc_fct`):
  one line per *finished* flow, in order of completion, eight space-separated fields:
  source IP and destination IP as 8 hexadecimal digits, source port, destination port, size
  in bytes, start time in ns, FCT in ns, and the flow's FCT alone in the network in ns. HPCC
  numbers node ``i`` with the IP ``0x0b000001 + (i // 256) * 0x10000 + (i % 256) * 0x100``
  (so the node is ``(ip >> 8) & 0xffff``). dcnsim writes ``ideal_fct_us`` in the last field
  (its own definition, ``docs/results.md``: HPCC's adds per-packet header bytes to the
  size), source port ``10000 + id`` (unique per flow, as HPCC's are per pair) and destination
  port 100 (HPCC's ``flow.txt`` default). Times are rounded to the nanosecond, HPCC's
  resolution. Background (endless) and unfinished flows have no line, as in HPCC.
* **htsim connection matrix** (:func:`write_cm`, :func:`read_cm`): a header of ``Nodes N``
  and ``Connections C`` (and optionally ``Triggers``/``Failures`` counts), then one line per
  connection ``SRC->DST`` followed by ``key value`` pairs: ``start`` in microseconds (a
  decimal), ``size`` in bytes and ``id`` (a non-zero flow id); lines starting with ``#`` are
  comments. dcnsim writes ``start`` with six decimals (exactly the picosecond) and reads
  ``start``, ``size`` and ``id`` (``prio`` is accepted and ignored). Connections started by
  triggers, size 0 (htsim's endless flows), failures and counts that do not match are
  refused with the line number. htsim's own programs truncate ``start`` to whole
  microseconds when they read it; dcnsim keeps the fraction.

A connection matrix can be given directly as the ``file`` of an ``explicit`` workload (it is
recognised by its ``Nodes``/``Connections`` header and rewritten into the flow-list layout,
see :mod:`dcnsim.staging`), and :func:`flows_to_cm` turns a run's flows into one.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dcnsim.errors import ScenarioError

HPCC_DPORT = 100
HPCC_SPORT_BASE = 10000


def hpcc_ip(node: int) -> int:
    """HPCC's IP address of node ``node``."""
    return 0x0B000001 + (node // 256) * 0x10000 + (node % 256) * 0x100


def hpcc_node(ip: int) -> int:
    """The node of an HPCC IP address."""
    return (ip >> 8) & 0xFFFF


def _flows(source: Any) -> Mapping[str, Any]:
    """Flow columns of a :class:`~dcnsim.results.Results`, a result folder or a table."""
    from dcnsim.results import Results

    if isinstance(source, Results):
        return source.flows
    if isinstance(source, (str, os.PathLike)):
        return Results.load(source).flows
    return source


def _ns(us: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(us, dtype=np.float64) * 1e3).astype(np.int64)


def hpcc_fct_lines(source: Any) -> list[str]:
    """The lines of HPCC's ``fct.txt`` for a run's finished, non-background flows."""
    f = _flows(source)
    finished = np.asarray(f["finished"], dtype=bool) & ~np.asarray(f["background"], dtype=bool)
    if "aborted" in f:
        finished &= ~np.asarray(f["aborted"], dtype=bool)
    idx = np.flatnonzero(finished)
    finish = np.asarray(f["finish_us"], dtype=np.float64)[idx]
    idx = idx[np.lexsort((np.asarray(f["id"])[idx], finish))]  # order of completion
    src = np.asarray(f["src"])[idx]
    dst = np.asarray(f["dst"])[idx]
    ids = np.asarray(f["id"])[idx]
    size = np.asarray(f["size_bytes"])[idx]
    start = _ns(np.asarray(f["start_us"])[idx])
    fct = _ns(np.asarray(f["fct_us"])[idx])
    ideal = _ns(np.asarray(f["ideal_fct_us"])[idx])
    return [
        f"{hpcc_ip(int(s)):08x} {hpcc_ip(int(d)):08x} {HPCC_SPORT_BASE + int(i)} {HPCC_DPORT} "
        f"{int(b)} {int(t)} {int(c)} {int(x)}"
        for s, d, i, b, t, c, x in zip(src, dst, ids, size, start, fct, ideal)
    ]


def write_hpcc_fct(source: Any, path: str | os.PathLike[str]) -> Path:
    """Write HPCC's ``fct.txt`` for a run (a Results, a result folder, or its flow table)
    to ``path``, atomically; returns the path."""
    from dcnsim.results import atomic_write_bytes

    p = Path(path)
    lines = hpcc_fct_lines(source)
    atomic_write_bytes(p, ("".join(line + "\n" for line in lines)).encode())
    return p


def read_hpcc_fct(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read an HPCC ``fct.txt``: columns ``src``, ``dst`` (nodes), ``sport``, ``dport``,
    ``size_bytes``, ``start_ns``, ``fct_ns``, ``ideal_fct_ns``."""
    cols: dict[str, list[int]] = {
        k: []
        for k in (
            "src",
            "dst",
            "sport",
            "dport",
            "size_bytes",
            "start_ns",
            "fct_ns",
            "ideal_fct_ns",
        )
    }
    text = Path(path).read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), 1):
        cells = line.split()
        if not cells:
            continue
        if len(cells) < 8:
            raise ScenarioError(str(path), f"line {n}: expected 8 fields, found {len(cells)}")
        try:
            vals = [hpcc_node(int(cells[0], 16)), hpcc_node(int(cells[1], 16))]
            vals += [int(c) for c in cells[2:8]]
        except ValueError:
            raise ScenarioError(str(path), f"line {n}: not an fct.txt line: {line!r}") from None
        for k, v in zip(cols, vals):
            cols[k].append(v)
    return {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}


# -- htsim connection matrices --------------------------------------------------------------

_CONN = re.compile(r"^(\d+)->(\d+)$")


def read_cm(path_or_text: str | os.PathLike[str] | bytes, origin: str = "") -> dict[str, Any]:
    """Read an htsim connection matrix: ``{"nodes": N, "id", "src", "dst", "size_bytes",
    "start_us", "start_ps", "line"}`` (arrays, file order). Raises
    :class:`~dcnsim.ScenarioError` naming the line for what dcnsim cannot represent."""
    if isinstance(path_or_text, bytes):
        text = path_or_text.decode("utf-8")
    else:
        origin = origin or str(path_or_text)
        text = Path(path_or_text).read_text(encoding="utf-8")
    where = origin or "connection matrix"
    header: dict[str, int] = {}
    rows: dict[str, list[Any]] = {
        k: [] for k in ("id", "src", "dst", "size_bytes", "start_us", "start_ps", "line")
    }

    def bad(n: int, msg: str) -> ScenarioError:
        return ScenarioError(where, f"line {n}: {msg}")

    for n, line in enumerate(text.splitlines(), 1):
        tok = line.split()
        if not tok or tok[0].startswith("#"):
            continue
        if tok[0] in ("Nodes", "Connections", "Triggers", "Failures"):
            if len(tok) != 2 or not tok[1].isdigit():
                raise bad(n, f"'{tok[0]}' needs one whole number")
            header[tok[0]] = int(tok[1])
            continue
        if tok[0] in ("trigger", "failure"):
            raise bad(n, f"htsim {tok[0]}s have no dcnsim equivalent; remove them")
        m = _CONN.match(tok[0])
        if m is None:
            raise bad(n, f"expected SRC->DST, found {tok[0]!r}")
        src, dst = int(m.group(1)), int(m.group(2))
        vals: dict[str, str] = {}
        i = 1
        while i < len(tok):
            key = tok[i]
            if key in ("start", "size", "id", "prio"):
                if i + 1 >= len(tok):
                    raise bad(n, f"'{key}' needs a value")
                vals[key] = tok[i + 1]
                i += 2
            elif key in ("trigger", "send_done_trigger", "recv_done_trigger", "addon"):
                raise bad(n, f"'{key}': triggered connections have no dcnsim equivalent")
            else:
                raise bad(n, f"unknown token {key!r}")
        if "start" not in vals:
            raise bad(n, "no start time (dcnsim needs 'start MICROSECONDS')")
        try:
            start_us = float(vals["start"])
            size = int(vals.get("size", "0"))
            fid = int(vals["id"]) if "id" in vals else len(rows["id"]) + 1
        except ValueError:
            raise bad(n, "start must be a number, size and id whole numbers") from None
        if not math.isfinite(start_us) or start_us < 0:
            raise bad(n, f"start {vals['start']} must be a non-negative number of microseconds")
        if size <= 0:
            raise bad(
                n,
                "size 0 is an endless htsim flow; give its size in bytes (or model it with a "
                "'background' workload)",
            )
        if src == dst:
            raise bad(n, f"a connection from node {src} to itself")
        rows["id"].append(fid)
        rows["src"].append(src)
        rows["dst"].append(dst)
        rows["size_bytes"].append(size)
        rows["start_us"].append(start_us)
        rows["start_ps"].append(round(start_us * 1e6))
        rows["line"].append(n)
    for key, what in (("Connections", "connection"), ("Triggers", "trigger"), ("Failures", "")):
        if key not in header:
            continue
        found = len(rows["id"]) if what == "connection" else 0
        if header[key] != found:
            raise ScenarioError(where, f"'{key} {header[key]}' but {found} found in the file")
    nodes = header.get("Nodes")
    top = max(rows["src"] + rows["dst"], default=-1)
    if nodes is not None and top >= nodes:
        raise ScenarioError(where, f"node {top} is not below 'Nodes {nodes}'")
    out: dict[str, Any] = {
        k: np.asarray(v, dtype=np.float64 if k == "start_us" else np.int64) for k, v in rows.items()
    }
    out["nodes"] = nodes if nodes is not None else top + 1
    return out


def is_cm(data: bytes) -> bool:
    """True if ``data`` starts (after comments) with an htsim ``Nodes``/``Connections``
    header."""
    for line in data[:4096].decode("utf-8", errors="replace").splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return s.split()[0] in ("Nodes", "Connections")
    return False


def cm_to_flow_list(data: bytes, origin: str = "") -> bytes:
    """A connection matrix rewritten as a flow list in the core's layout (``src,dst,size,
    start``, start in exact picoseconds), one flow per connection in file order, line for
    line: the first header line becomes the column header, connections become flows, other
    lines comments (so the reader's line numbers are the matrix's)."""
    cm = read_cm(data, origin)
    n_lines = len(data.decode("utf-8").splitlines())
    lines = ["#"] * n_lines
    first = min(cm["line"], default=n_lines + 1)
    for n, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if n < first and line.split() and line.split()[0] in ("Nodes", "Connections"):
            lines[n - 1] = "src,dst,size,start"
            break
    for s, d, b, t, n in zip(cm["src"], cm["dst"], cm["size_bytes"], cm["start_ps"], cm["line"]):
        lines[int(n) - 1] = f"{s},{d},{b},{t}ps"
    return ("\n".join(lines) + "\n").encode()


def cm_text(src: Any, dst: Any, size: Any, start_ps: Any, nodes: int, ids: Any = None) -> str:
    """The text of a connection matrix for these flows (start in picoseconds)."""
    src = np.asarray(src, dtype=np.int64)
    ids = np.arange(1, len(src) + 1) if ids is None else np.asarray(ids, dtype=np.int64)
    out = [f"Nodes {int(nodes)}", f"Connections {len(src)}"]
    for s, d, b, t, i in zip(src, np.asarray(dst), np.asarray(size), np.asarray(start_ps), ids):
        t = int(t)
        out.append(
            f"{int(s)}->{int(d)} id {int(i)} start {t // 10**6}.{t % 10**6:06d} size {int(b)}"
        )
    return "\n".join(out) + "\n"


def write_cm(
    path: str | os.PathLike[str], src: Any, dst: Any, size: Any, start_ps: Any, nodes: int
) -> Path:
    """Write a connection matrix atomically (ids 1, 2, ... in order); returns the path."""
    from dcnsim.results import atomic_write_bytes

    p = Path(path)
    atomic_write_bytes(p, cm_text(src, dst, size, start_ps, nodes).encode())
    return p


def flows_to_cm(source: Any, path: str | os.PathLike[str], nodes: int | None = None) -> Path:
    """Write the non-background flows of a run (a Results, result folder or flow table) as
    an htsim connection matrix, in start order; ``nodes`` defaults to the run's host count
    (from its scenario), else the largest host + 1. Sizes are whole bytes; starts exact to
    the picosecond."""
    from dcnsim.results import Results

    res = None
    if isinstance(source, Results):
        res = source
    elif isinstance(source, (str, os.PathLike)):
        res = Results.load(source)
    f = res.flows if res is not None else source
    keep = ~np.asarray(f["background"], dtype=bool)
    start_ps = np.rint(np.asarray(f["start_us"], dtype=np.float64)[keep] * 1e6).astype(np.int64)
    order = np.argsort(start_ps, kind="stable")
    src = np.asarray(f["src"])[keep][order]
    dst = np.asarray(f["dst"])[keep][order]
    if nodes is None and res is not None:
        hosts = (res.scenario.get("derived") or {}).get("hosts")
        nodes = int(hosts) if isinstance(hosts, int) else None
    if nodes is None:
        nodes = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    return write_cm(
        path, src, dst, np.asarray(f["size_bytes"])[keep][order], start_ps[order], nodes
    )


__all__ = [
    "cm_to_flow_list",
    "flows_to_cm",
    "hpcc_fct_lines",
    "is_cm",
    "read_cm",
    "read_hpcc_fct",
    "write_cm",
    "write_hpcc_fct",
]
