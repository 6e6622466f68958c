"""Parameter sweeps: the cartesian product of a grid of field values over a base scenario.

A sweep file (TOML)::

    base = "scenario.toml"                 # relative to the sweep file
    [grid]
    "transport.protocol" = ["dctcp", "tcp"]
    "workload[0].load" = [0.3, 0.5]
    seed = [1, 2]
    [set]                                  # optional: overrides applied to every run
    "topology.leaves" = 3
    [variants.ppt]                         # optional: named sets of overrides, one more
    "transport.protocol" = "ppt"           # grid dimension ("variant") crossed with [grid]
    "network.ecn_port_classes" = [4, 5, 6, 7]
    [variants.dctcp]
    "transport.protocol" = "dctcp"
    [sweep]
    workers = 4                            # optional; default min(cores, runs)

Variants exist because some comparisons change several fields together (a protocol and the
switch settings it needs), which a cartesian grid cannot express. A run's values then start
with ``variant`` (the variant's name), followed by its grid values.

Each run gets its own folder under the output folder, named from its grid values
(e.g. ``protocol-dctcp_load-0.3_seed-1``), written atomically. A run whose folder already
exists is complete (folders only appear by atomic rename) and is skipped, so a killed sweep
resumes where it stopped. ``sweep.json`` records the grid and the runs, and
``sweep_summary.csv``/``.parquet`` hold one row per run: ``run``, the grid values, and every
summary key.

Runs are executed through an :class:`Executor`: anything with a ``map(fn, tasks)`` method that
returns the results of ``fn(task)`` for each task, in order. The default is a local process
pool (:class:`ProcessExecutor`); to plug in a distributed engine, write a class whose ``map``
ships each task (a picklable :class:`RunTask`) to a worker that has ``dcnsim`` installed and
calls :func:`execute_task` there, with the output folder on storage both sides see, then pass
it as ``run_sweep(..., executor=MyExecutor())``.
"""

from __future__ import annotations

import copy
import csv
import io
import itertools
import json
import math
import os
import re
import shutil
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, TypeVar

from dcnsim.errors import ScenarioError
from dcnsim.scenario import parse_path, parse_text, set_field

T = TypeVar("T")
R = TypeVar("R")

SWEEP_FILE = "sweep.json"
SUMMARY_CSV = "sweep_summary.csv"
SUMMARY_PARQUET = "sweep_summary.parquet"


class Executor(Protocol):
    """Runs ``fn`` on every task and yields the results in task order."""

    def map(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterable[R]: ...


class SerialExecutor:
    """Runs the tasks one after another in this process."""

    def map(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        return (fn(t) for t in tasks)


class ProcessExecutor:
    """Runs the tasks in a local ``concurrent.futures.ProcessPoolExecutor``.

    Workers are started with the ``spawn`` method: fresh interpreters, so no lock or thread
    state of the parent (numpy, Arrow) is inherited by a fork.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)

    def map(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as pool:
            yield from pool.map(fn, tasks, chunksize=1)


def local_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass
class SweepSpec:
    """A parsed sweep: the base scenario, the grid, and options."""

    base: dict[str, Any]
    base_dir: Path
    grid: dict[str, list[Any]]
    workers: int | None = None
    origin: str = ""
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunTask:
    """One run of a sweep (picklable: this is what an executor ships to a worker)."""

    name: str
    values: dict[str, Any]
    scenario: dict[str, Any]
    base_dir: str
    out_dir: str


@dataclass
class RunOutcome:
    """What happened to one run."""

    name: str
    status: str  # "ran", "skipped" or "failed"
    wall_s: float = 0.0
    error: str = ""
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepReport:
    """The outcome of :func:`run_sweep`."""

    out_dir: Path
    runs: list[RunTask]
    outcomes: list[RunOutcome]
    rows: list[dict[str, Any]]

    @property
    def ran(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == "ran"]

    @property
    def skipped(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == "skipped"]

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


SWEEP_KEYS = ("base", "grid", "set", "variants", "sweep")


def load_sweep(path: str | os.PathLike[str], extra_keys: Sequence[str] = ()) -> SweepSpec:
    """Read and check a sweep file (raises :class:`ScenarioError` when malformed).

    ``extra_keys`` are further top-level keys the caller reads itself (the reproduction
    files of :mod:`dcnsim.repro` add ``title``, ``reduced`` and ``report``).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(str(p), "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(str(p), f"cannot read file: {e}") from None
    data = parse_text(text, "toml", str(p))
    allowed = set(SWEEP_KEYS) | set(extra_keys)
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(
            unknown[0],
            f"unknown field in sweep file (expected one of: {', '.join(sorted(allowed))})",
        )
    base_ref = data.get("base")
    if not isinstance(base_ref, str) or not base_ref:
        raise ScenarioError("base", 'missing; give the base scenario, e.g. base = "scenario.toml"')
    base_path = (p.resolve().parent / base_ref).resolve()
    try:
        base_text = base_path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError("base", f"cannot read base scenario {base_path}: {e}") from None
    fmt = "json" if base_path.suffix.lower() == ".json" else "toml"
    base = parse_text(base_text, fmt, str(base_path))
    opts = data.get("sweep", {})
    if not isinstance(opts, dict):
        raise ScenarioError("sweep", "must be a table ([sweep] workers = N)")
    bad = sorted(set(opts) - {"workers"})
    if bad:
        raise ScenarioError(f"sweep.{bad[0]}", "unknown option (the only one is workers)")
    workers = opts.get("workers")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ScenarioError("sweep.workers", "must be a positive integer")
    variants = _check_variants(data.get("variants"))
    overrides = _check_overrides(data.get("set", {}), "set")
    for k, v in overrides.items():
        try:
            set_field(base, k, v)
        except ScenarioError as e:
            raise ScenarioError(f"set.{k}", e.message) from None
    return SweepSpec(
        base=base,
        base_dir=base_path.parent,
        grid=_check_grid(data.get("grid"), allow_empty=bool(variants)),
        workers=workers,
        origin=str(p),
        variants=variants,
        overrides=overrides,
    )


def _check_overrides(table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ScenarioError(where, 'must be a table of field = value, e.g. "topology.leaves" = 3')
    for key in table:
        try:
            parse_path(key)
        except ScenarioError as e:
            raise ScenarioError(f"{where}.{key}", e.message) from None
    return dict(table)


def _check_variants(variants: Any) -> dict[str, dict[str, Any]]:
    if variants is None:
        return {}
    if not isinstance(variants, dict) or not variants:
        raise ScenarioError("variants", "must be tables [variants.NAME] of field = value")
    out = {}
    for name, table in variants.items():
        if not name or _UNSAFE.search(name.replace("_", "")):
            raise ScenarioError(
                f"variants.{name}", "use letters, digits, '_', '.', '+' or '-' in names"
            )
        out[name] = _check_overrides(table, f"variants.{name}")
    return out


def _check_grid(grid: Any, allow_empty: bool = False) -> dict[str, list[Any]]:
    if allow_empty and (grid is None or grid == {}):
        return {}
    if not isinstance(grid, dict) or not grid:
        raise ScenarioError(
            "grid", 'missing or empty; e.g. [grid] "transport.protocol" = ["dctcp", "tcp"]'
        )
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        try:
            parse_path(key)
        except ScenarioError as e:
            raise ScenarioError(f"grid.{key}", e.message) from None
        if not isinstance(values, list) or not values:
            raise ScenarioError(f"grid.{key}", "must be a non-empty list of values")
        out[key] = values
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9.+\-]+")


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return repr(v)
    if isinstance(v, (int, float, str)):
        return str(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def _short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Readable, unique labels for grid keys: the last field name when unambiguous."""
    last = {k: next(p for p in reversed(parse_path(k)) if isinstance(p, str)) for k in keys}
    counts: dict[str, int] = {}
    for v in last.values():
        counts[v] = counts.get(v, 0) + 1
    return {k: (last[k] if counts[last[k]] == 1 else k) for k in keys}


def run_name(values: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """Folder name of a run: ``label-value`` parts joined by ``_``, sanitized."""
    parts = []
    for key, v in values.items():
        label = _UNSAFE.sub("", labels[key].replace("[", "").replace("]", ""))
        parts.append(f"{label}-{_UNSAFE.sub('_', _fmt_value(v)).strip('_') or 'x'}")
    return "_".join(parts)[:200]


def expand(spec: SweepSpec, out_dir: str | os.PathLike[str]) -> list[RunTask]:
    """The runs of a sweep: each variant (if any) crossed with the cartesian product of the
    grid, in file order."""
    keys = list(spec.grid)
    labels = _short_keys(keys)
    labels["variant"] = "variant"
    out = Path(out_dir).absolute()
    tasks: list[RunTask] = []
    seen: dict[str, int] = {}
    variant_names: list[str | None] = list(spec.variants) or [None]
    for vname, combo in itertools.product(
        variant_names, itertools.product(*(spec.grid[k] for k in keys))
    ):
        values = dict(zip(keys, combo))
        sc = copy.deepcopy(spec.base)
        if vname is not None:
            for k, v in spec.variants[vname].items():
                try:
                    set_field(sc, k, v)
                except ScenarioError as e:
                    raise ScenarioError(f"variants.{vname}.{k}", e.message) from None
            values = {"variant": vname, **values}
        for k, v in values.items():
            if k == "variant":
                continue
            try:
                set_field(sc, k, v)
            except ScenarioError as e:
                raise ScenarioError(f"grid.{k}", e.message) from None
        name = run_name(values, labels)
        if name in seen:  # distinct values that sanitize alike: disambiguate deterministically
            seen[name] += 1
            name = f"{name}-{seen[name]}"
        else:
            seen[name] = 0
        tasks.append(RunTask(name, values, sc, str(spec.base_dir), str(out / name)))
    return tasks


def is_complete(run_dir: str | os.PathLike[str]) -> bool:
    """A run folder is complete when it exists with its summary (it appears atomically)."""
    return (Path(run_dir) / "summary.json").is_file()


def execute_task(task: RunTask) -> RunOutcome:
    """Run one sweep task and write its folder; never raises (failures are reported)."""
    from dcnsim.api import run

    t0 = time.perf_counter()
    try:
        res = run(task.scenario, base_dir=task.base_dir)
        res.write(task.out_dir)
        return RunOutcome(task.name, "ran", time.perf_counter() - t0, summary=res.summary())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # includes pyo3's PanicException (a BaseException)
        detail = str(e) if isinstance(e, ScenarioError) else traceback.format_exc()
        return RunOutcome(task.name, "failed", time.perf_counter() - t0, error=detail)


def _clean_stale(out: Path) -> None:
    """Tidy up after killed runs: drop ``<name>.tmp-<pid>`` folders (incomplete by
    construction) and put back a ``<name>.old-<pid>`` folder whose replacement never landed."""
    if not out.is_dir():
        return
    for p in sorted(out.iterdir()):
        m = re.match(r"^(.*)\.(tmp|old)-\d+$", p.name)
        if not m or not p.is_dir():
            continue
        stem = out / m.group(1)
        if m.group(2) == "old" and not stem.exists() and is_complete(p):
            p.rename(stem)
        else:
            shutil.rmtree(p, ignore_errors=True)


def run_sweep(
    sweep: SweepSpec | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
) -> SweepReport:
    """Run a sweep into ``out_dir``; skip complete runs unless ``force``.

    Every run is validated before any starts, so bad input raises :class:`ScenarioError`
    with nothing written.
    """
    from dcnsim.api import validate

    spec = sweep if isinstance(sweep, SweepSpec) else load_sweep(sweep)
    out = Path(out_dir).absolute()
    tasks = expand(spec, out)
    for t in tasks:
        try:
            validate(t.scenario, base_dir=t.base_dir)
        except ScenarioError as e:
            raise ScenarioError(e.field, f"{e.message} (in run {t.name})") from None

    out.mkdir(parents=True, exist_ok=True)
    _clean_stale(out)
    _write_sweep_json(spec, tasks, out)
    todo = [t for t in tasks if force or not is_complete(t.out_dir)]
    todo_names = {t.name for t in todo}
    outcomes = {t.name: RunOutcome(t.name, "skipped") for t in tasks if t.name not in todo_names}
    say = log or (lambda _msg: None)
    n = len(tasks)
    if outcomes:
        say(f"sweep: {len(outcomes)} of {n} runs already complete, skipping them")
    if todo:
        w = workers or spec.workers or min(local_cores(), len(todo))
        w = max(1, min(w, len(todo)))
        ex = executor or (SerialExecutor() if w == 1 else ProcessExecutor(w))
        say(f"sweep: running {len(todo)} runs on {w} worker{'s' if w > 1 else ''}")
        done = len(outcomes)
        for o in ex.map(execute_task, todo):
            done += 1
            outcomes[o.name] = o
            if o.status == "ran":
                s = o.summary
                say(
                    f"[{done}/{n}] {o.name}: {o.wall_s:.1f} s, avg FCT "
                    f"{_num(s.get('avg_fct_us'))} us, p99 slowdown {_num(s.get('slowdown_p99'))}"
                )
            else:
                say(f"[{done}/{n}] {o.name}: FAILED: {o.error.strip().splitlines()[-1]}")
    ordered = [outcomes[t.name] for t in tasks]
    rows = collect_rows(tasks)
    write_sweep_table(rows, out)
    return SweepReport(out, tasks, ordered, rows)


def _num(v: Any) -> str:
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    return "n/a"


def _write_sweep_json(spec: SweepSpec, tasks: list[RunTask], out: Path) -> None:
    from dcnsim.results import atomic_write_bytes

    doc = {
        "sweep_file": spec.origin,
        "base_dir": str(spec.base_dir),
        "grid": spec.grid,
        "set": spec.overrides,
        "variants": spec.variants,
        "runs": [{"name": t.name, "values": t.values} for t in tasks],
    }
    atomic_write_bytes(out / SWEEP_FILE, (json.dumps(doc, indent=2) + "\n").encode())


def collect_rows(tasks: Sequence[RunTask]) -> list[dict[str, Any]]:
    """One row per complete run: ``run``, the grid values, then its summary keys."""
    rows = []
    for t in tasks:
        p = Path(t.out_dir) / "summary.json"
        if not p.is_file():
            continue
        summary = json.loads(p.read_text())
        row: dict[str, Any] = {"run": t.name}
        row.update(t.values)
        for k, v in summary.items():
            row.setdefault(k, v)
        rows.append(row)
    return rows


def write_sweep_table(rows: list[dict[str, Any]], out: Path) -> None:
    """Write ``sweep_summary.csv`` and ``sweep_summary.parquet`` atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dcnsim.results import atomic_write_bytes

    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if r.get(c) is None else _csv_cell(r.get(c)) for c in columns])
    atomic_write_bytes(out / SUMMARY_CSV, buf.getvalue().encode())

    arrays = []
    for c in columns:
        vals = [r.get(c) for r in rows]
        try:
            arrays.append(pa.array(vals))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else _csv_cell(v) for v in vals]))
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_arrays(arrays, names=columns), sink)
    atomic_write_bytes(out / SUMMARY_PARQUET, sink.getvalue().to_pybytes())


def _csv_cell(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def read_sweep(out_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read a sweep folder: (``sweep.json`` contents, rows of the combined table)."""
    d = Path(out_dir)
    meta = json.loads((d / SWEEP_FILE).read_text())
    rows = []
    for r in meta["runs"]:
        p = d / r["name"] / "summary.json"
        if p.is_file():
            row = {"run": r["name"], **r["values"]}
            for k, v in json.loads(p.read_text()).items():
                row.setdefault(k, v)
            rows.append(row)
    return meta, rows


def is_sweep_dir(path: str | os.PathLike[str]) -> bool:
    return (Path(path) / SWEEP_FILE).is_file()


__all__ = [
    "Executor",
    "ProcessExecutor",
    "RunOutcome",
    "RunTask",
    "SerialExecutor",
    "SweepReport",
    "SweepSpec",
    "execute_task",
    "expand",
    "is_complete",
    "is_sweep_dir",
    "load_sweep",
    "read_sweep",
    "run_sweep",
]
