"""Files a scenario reads, carried with it: self-contained runs and flow lists in other layouts.

A scenario may name files: a workload's ``cdf`` (a CDF file rather than a shipped name) and
the ``file`` of an ``explicit`` or ``hpcc`` workload, relative to the scenario's folder. Two
things need those files somewhere other than where the scenario names them:

* **Runs on other machines** (:class:`dcnsim.sweep.DaskExecutor`). A task must not depend on
  paths of the machine that built it, so :func:`collect` reads every named file into a
  :class:`FileSet` (field path -> bytes) that travels with the task; on the worker,
  :func:`staged` writes them into a temporary folder and runs the scenario against those
  copies.
* **Flow lists in other layouts.** An htsim connection matrix (:mod:`dcnsim.formats`) given
  as an ``explicit`` workload's ``file`` is rewritten into the reader's layout. And a run's
  ``flows.csv`` as an explicit flow list: The core's flow-list reader takes the
  columns ``src``, ``dst``, ``size``, ``start`` and ``deadline``; a ``flows.csv`` names them
  ``src``, ``dst``, ``size_bytes``, ``start_us`` and ``deadline_us`` (with more columns beside).
  :func:`to_flow_list` rewrites such a file, line for line, into the reader's layout, so a
  results file can be given as ``file`` as it is (see ``docs/workloads.md``).

Either way the run must not show where the copies were: the normalized scenario (and so the
run's fingerprint and ``scenario.json``) names the files as the scenario gave them. The copy of
a file is handed to the core by an absolute path of its own; :func:`restore` then puts back,
in the normalized scenario, the given name (in the ``file``/``cdf`` field) and the path it
resolves to on the machine that built the scenario (elsewhere, e.g. ``derived.path``), and
error messages name the original path too.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcnsim.errors import ScenarioError
from dcnsim.formats import cm_to_flow_list, is_cm

#: Workload fields that may name a file.
FILE_KEYS = ("cdf", "file")
#: Default of ``run.input_file_limit`` (the core's ceiling on a file a workload reads).
DEFAULT_FILE_LIMIT = 10**9

_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


@dataclass
class FileSet:
    """The files a scenario names: ``files`` maps a field path (``workload[0].file``) to
    the file's bytes (already in the core's layout), ``given`` to the name the scenario
    gives and ``resolved`` to the path that name resolves to where the scenario was built."""

    files: dict[str, bytes] = field(default_factory=dict)
    given: dict[str, str] = field(default_factory=dict)
    resolved: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.files)


def _file_refs(doc: Mapping[str, Any]) -> Iterator[tuple[int, str, str]]:
    """(workload index, key, given name) of every workload field that may name a file."""
    workloads = doc.get("workload")
    if not isinstance(workloads, list):
        return
    for i, w in enumerate(workloads):
        if not isinstance(w, dict):
            continue
        for key in FILE_KEYS:
            v = w.get(key)
            if isinstance(v, str) and v:
                yield i, key, v


def file_limit(doc: Mapping[str, Any]) -> int:
    """``run.input_file_limit`` in bytes (its default when absent or not understood: the
    core then reports the field's problem itself)."""
    run = doc.get("run")
    v = run.get("input_file_limit") if isinstance(run, dict) else None
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    if isinstance(v, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]+)\s*", v)
        if m and m.group(2).upper() in _UNITS and m.group(2)[-1] == "B":
            return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    return DEFAULT_FILE_LIMIT


def _read_capped(path: Path, limit: int, where: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ScenarioError(where, f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise ScenarioError(
            where,
            f"{path} is longer than run.input_file_limit ({limit} bytes); raise the limit or "
            "use a shorter file",
        )
    return data


# -- flows.csv as an explicit flow list ----------------------------------------------------

#: The columns of ``flows.csv`` a flow list takes, and the reader's names for them.
FLOWS_CSV_COLUMNS = {
    "src": "src",
    "dst": "dst",
    "size_bytes": "size",
    "start_us": "start",
    "deadline_us": "deadline",
}


def _header(text: str) -> tuple[int, list[str]] | None:
    for i, line in enumerate(text.splitlines()):
        s = line.strip()
        if s and not s.startswith("#"):
            return i, [c.strip().strip('"').lower() for c in s.split(",")]
    return None


def is_flows_csv(data: bytes) -> bool:
    """True if ``data`` is a CSV whose header has ``flows.csv``'s ``size_bytes`` and
    ``start_us`` columns (a run's flow table rather than a flow list in the reader's layout)."""
    head = data[:4096].decode("utf-8", errors="replace")
    h = _header(head)
    return h is not None and {"size_bytes", "start_us", "src", "dst"} <= set(h[1])


def _us_to_ps_cell(cell: str) -> str:
    """A microsecond cell of ``flows.csv`` as an exact picosecond time (``"<n>ps"``); an
    empty or NaN cell stays empty."""
    c = cell.strip()
    if not c or c.lower() in ("nan", "null"):
        return ""
    try:
        v = float(c)
    except ValueError:
        return c  # the reader names the bad cell and its line
    return f"{round(v * 1e6)}ps"


def to_flow_list(data: bytes) -> bytes:
    """Rewrite a ``flows.csv`` into the flow-list layout the core reads, line for line.

    Kept: ``src``, ``dst``, ``size_bytes`` (as ``size``), ``start_us`` (as ``start``) and
    ``deadline_us`` (as ``deadline``, empty for none); times become exact picoseconds
    (``flows.csv`` holds microseconds as decimals, which are read back to the picosecond).
    Background flows (``background`` true) are long-lived flows of a ``background`` workload,
    not list entries: their lines become comments. Other lines keep their numbers, so the
    reader's errors point at the right line of the original file."""
    text = data.decode("utf-8")
    h = _header(text)
    if h is None:
        return data
    header_at, names = h
    keep = [(i, FLOWS_CSV_COLUMNS[n]) for i, n in enumerate(names) if n in FLOWS_CSV_COLUMNS]
    bg = names.index("background") if "background" in names else None
    out = []
    for n, line in enumerate(text.splitlines()):
        s = line.strip()
        if n < header_at or not s or s.startswith("#"):
            out.append(line)
            continue
        if n == header_at:
            out.append(",".join(new for _, new in keep))
            continue
        cells = [c.strip().strip('"') for c in s.split(",")]
        if len(cells) != len(names):  # left for the reader to report with its line number
            out.append(",".join(cells[i] if i < len(cells) else "" for i, _ in keep))
            continue
        if bg is not None and cells[bg].strip().lower() in ("true", "1"):
            out.append("# background flow: " + s)
            continue
        row = []
        for i, new in keep:
            c = cells[i].strip()
            row.append(_us_to_ps_cell(c) if new in ("start", "deadline") else c)
        out.append(",".join(row))
    return ("\n".join(out) + "\n").encode()


# -- collecting, staging, restoring ---------------------------------------------------------


def collect(
    doc: Mapping[str, Any],
    base_dir: str | os.PathLike[str],
    normalized: Mapping[str, Any] | None = None,
    every: bool = True,
) -> FileSet:
    """Read the files scenario ``doc`` names (relative to ``base_dir``) into a :class:`FileSet`.

    A ``cdf`` is taken only when ``normalized`` (the scenario as validated) shows it was read
    from a file (a shipped CDF name stays a name, even if a file of that name exists). With
    ``every=False`` only the ``flows.csv`` files given as an ``explicit`` list are taken (what
    a local run needs rewritten)."""
    base = str(Path(base_dir).resolve())
    limit = file_limit(doc)
    fs = FileSet()
    workloads = doc.get("workload") or []
    for i, key, given in _file_refs(doc):
        path = Path(_join(base, given))
        if not path.is_file():
            continue
        where = f"workload[{i}].{key}"
        if key == "cdf" and not _cdf_from_file(normalized, i):
            continue
        explicit = key == "file" and workloads[i].get("pattern") == "explicit"
        if not every:
            if not explicit:
                continue
            with open(path, "rb") as f:
                head = f.read(4096)
            if not (is_flows_csv(head) or is_cm(head)):
                continue
        data = _read_capped(path, limit, where)
        try:
            if explicit and is_flows_csv(data):
                data = to_flow_list(data)
            elif explicit and is_cm(data):
                try:
                    data = cm_to_flow_list(data, str(path))
                except ScenarioError as e:
                    raise ScenarioError(where, f"{e.field}: {e.message}") from None
        except UnicodeDecodeError:
            raise ScenarioError(where, f"{path} is not UTF-8 text") from None
        fs.files[where] = data
        fs.given[where] = given
        fs.resolved[where] = _join(base, given)
    return fs


def _join(base: str, given: str) -> str:
    """``given`` resolved against ``base`` as the core does it (kept as text: ``./x`` stays
    ``base/./x``, as the core shows it in ``derived``)."""
    if given.startswith("/"):
        return given
    return base.rstrip("/") + "/" + given


def _cdf_from_file(normalized: Mapping[str, Any] | None, i: int) -> bool:
    """Whether workload ``i`` of a normalized scenario read its CDF from a file (only file
    CDFs carry ``cdf_format``)."""
    ws = normalized.get("workload") if normalized is not None else None
    return (
        isinstance(ws, list) and i < len(ws) and isinstance(ws[i], dict) and "cdf_format" in ws[i]
    )


@contextlib.contextmanager
def staged(doc: Mapping[str, Any], fs: FileSet) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """Write the files of ``fs`` into a temporary folder; yield a copy of ``doc`` whose file
    fields name those copies (absolute paths) and the map copy path -> field path. The folder
    is removed on exit."""
    sc = copy.deepcopy(dict(doc))
    if not fs:
        yield sc, {}
        return
    tmp = tempfile.mkdtemp(prefix="dcnsim-staged-")
    try:
        where_of: dict[str, str] = {}
        for n, (where, data) in enumerate(sorted(fs.files.items())):
            m = re.fullmatch(r"workload\[(\d+)\]\.(\w+)", where)
            if m is None:  # pragma: no cover - built by collect()
                continue
            name = Path(fs.given[where]).name or "file"
            p = Path(tmp) / f"{n}-{name}"
            p.write_bytes(data)
            sc["workload"][int(m.group(1))][m.group(2)] = str(p)
            where_of[str(p)] = where
        yield sc, where_of
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def restore(normalized: Any, fs: FileSet, where_of: Mapping[str, str]) -> Any:
    """Put the original names back into a normalized scenario made from staged copies (in
    place; also returned): in a ``file``/``cdf`` field the name the scenario gave, elsewhere
    the path it resolves to where the scenario was built."""
    if not where_of:
        return normalized

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, str) and v in where_of:
                    w = where_of[v]
                    node[k] = fs.given[w] if k in FILE_KEYS else fs.resolved[w]
                else:
                    walk(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str) and v in where_of:
                    node[i] = fs.resolved[where_of[v]]
                else:
                    walk(v)
        return node

    return walk(normalized)


def restore_message(text: str, fs: FileSet, where_of: Mapping[str, str]) -> str:
    """An error message with every copy's path replaced by the original path."""
    for p, w in where_of.items():
        text = text.replace(p, fs.resolved[w])
    return text


__all__ = [
    "FileSet",
    "collect",
    "is_flows_csv",
    "restore",
    "staged",
    "to_flow_list",
]
