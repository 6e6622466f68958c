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
(e.g. ``protocol-dctcp_load-0.3_seed-1``), written atomically as a run folder with a manifest
(:mod:`dcnsim.outdir`) that records the run's **fingerprint**: a hash of its normalized
scenario and the dcnsim version. On a rerun, a complete run whose fingerprint matches is
skipped, so a killed sweep resumes where it stopped; a complete run whose fingerprint differs
(the base scenario, the ``[set]`` table or a variant was edited, or dcnsim was upgraded) is
rerun and named in the log (``on_change="refuse"``, ``--refuse-changed``, refuses instead and
lists them). ``sweep.json`` records the grid and the runs, and
``sweep_summary.csv``/``.parquet`` hold one row per finished or failed run: ``run``, the grid
values, every summary key, ``status`` and ``error``.

The output folder must be missing, empty or a sweep folder (``sweep.json``), and each run
folder in it missing, empty or dcnsim's; otherwise the sweep is refused before anything runs.

Runs are executed through an :class:`Executor`: anything with a ``map(fn, tasks)`` method that
returns the results of ``fn(task)`` for each task (in any order: each result names its run).
The default, :class:`ProcessExecutor`, runs each task in a worker process it can afford to
lose: a run that raises, panics, aborts, segfaults or is killed (out of memory) is recorded as
failed with a message and the other runs go on. Workers die with their parent, even when it is
killed with SIGKILL (Linux ``PR_SET_PDEATHSIG``, and a parent-pid watch elsewhere). On SIGINT
the sweep stops its workers, writes the table of every finished run and raises
:class:`SweepInterrupted`.

**Dask.** :class:`DaskExecutor` (or a ``distributed.Client`` passed as ``executor``) runs the
tasks on a Dask cluster: an existing one (a client, or a scheduler address) or a local one it
starts. Such an executor is ``remote``: each task carries its resolved scenario and the bytes
of the files it names (:mod:`dcnsim.staging`), :func:`compute_task` runs it on a worker
without writing, and the results travel back to this process, which writes the run folder
exactly as a local sweep does (same checks, atomic commit, fingerprints, resume, failures
recorded). Workers need ``dcnsim`` installed, not the sweep's files or output folder.

To plug in another engine, write a class whose ``map`` ships each task (a picklable
:class:`RunTask`) to a worker that has ``dcnsim`` installed and either calls
:func:`execute_task` there, with the output folder on storage both sides see, or (with a
class attribute ``remote = True``) calls :func:`compute_task` and returns its outcome; then
pass it as ``run_sweep(..., executor=MyExecutor())``. An exception out of its ``map`` marks
the runs it did not report as failed.

**Test hook.** ``DCNSIM_TEST_CRASH="RUN=MODE[,RUN=MODE]"`` in a worker's environment makes
:func:`execute_task` crash on the named runs, so tests can check that a crashing run does not
take the sweep down: ``abort`` (``os.abort()``, SIGABRT as a Rust abort), ``kill`` (SIGKILL, as
the out-of-memory killer sends), ``exit`` (``os._exit(3)``) or ``raise`` (an exception). It is
for tests only.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import itertools
import json
import math
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, TypeVar

from dcnsim.errors import ScenarioError
from dcnsim.outdir import (
    OutputError,
    adopt_legacy_run,
    check_sweep_dir,
    clean_stale,
    fingerprint,
    foreign_entries,
    is_complete_run,
    legacy_run_files,
    read_manifest,
)
from dcnsim.scenario import parse_path, parse_text, set_field

T = TypeVar("T")
R = TypeVar("R")

SWEEP_FILE = "sweep.json"
SUMMARY_CSV = "sweep_summary.csv"
SUMMARY_PARQUET = "sweep_summary.parquet"


class Executor(Protocol):
    """Runs ``fn`` on every task and yields the results (in task order or as they finish)."""

    def map(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterable[R]: ...


class SerialExecutor:
    """Runs the tasks one after another in this process (no isolation: a crash of a run is
    a crash of the caller)."""

    def map(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        return (fn(t) for t in tasks)


class WorkerLost(RuntimeError):
    """A task whose worker process died (or whose ``fn`` raised) under :class:`ProcessExecutor`
    when no ``on_lost`` was given."""


@dataclass
class _Worker:
    proc: Any
    conn: Any
    task: Any = None
    started: bool = False


class ProcessExecutor:
    """Runs the tasks in ``workers`` local worker processes, each of which may be lost.

    Workers are started with the ``spawn`` method (fresh interpreters: no lock or thread state
    of the parent is inherited) and take one task at a time over a pipe. A worker that dies
    during a task (abort, segfault, SIGKILL by the out-of-memory killer, ``os._exit``) is
    replaced and its task reported through ``on_lost(task, message)``; so is a task whose
    ``fn`` raised. Results are yielded as tasks finish. Workers ignore SIGINT (the parent
    decides), die with their parent (``PR_SET_PDEATHSIG`` on Linux, a parent-pid watch
    elsewhere), and are terminated when the iteration ends early (interrupt, ``close()``).
    """

    def __init__(self, workers: int, on_lost: Callable[[Any, str], Any] | None = None) -> None:
        self.workers = max(1, workers)
        self.on_lost = on_lost

    def _lost(self, task: Any, message: str) -> Any:
        if self.on_lost is not None:
            return self.on_lost(task, message)
        if isinstance(task, RunTask):
            return RunOutcome(task.name, "failed", error=message)
        raise WorkerLost(message)

    def map(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        import multiprocessing
        from multiprocessing.connection import wait

        ctx = multiprocessing.get_context("spawn")
        pending = deque(tasks)
        live: list[_Worker] = []
        try:
            while True:
                for w in live:
                    if w.task is None and pending:
                        _send(w, pending.popleft())
                while pending and len(live) < self.workers:
                    w = _start_worker(ctx, fn)
                    live.append(w)
                    _send(w, pending.popleft())
                busy = [w for w in live if w.task is not None]
                if not busy:
                    break
                ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy]))
                for w in busy:
                    if w.conn not in ready and w.proc.sentinel not in ready:
                        continue
                    msg = None
                    try:
                        if w.conn.poll():
                            msg = w.conn.recv()
                    except (EOFError, OSError):
                        msg = None
                    task, w.task = w.task, None
                    if msg is not None:
                        kind, value = msg
                        yield value if kind == "ok" else self._lost(task, value)
                        continue
                    w.proc.join(timeout=5)
                    live.remove(w)
                    _stop_worker(w, 0)
                    yield self._lost(task, _exit_message(w.proc.exitcode))
        finally:
            for w in live:  # idle ones are asked to leave, busy ones terminated
                if w.task is None:
                    with contextlib.suppress(OSError):
                        w.conn.send(None)
                else:
                    w.proc.terminate()
            for w in live:
                _stop_worker(w, 2.0 if w.task is None else 1.0)


def _start_worker(ctx: Any, fn: Callable[[Any], Any]) -> _Worker:
    parent_conn, child_conn = ctx.Pipe(duplex=True)
    proc = ctx.Process(
        target=_worker_main, args=(child_conn, os.getpid(), fn), daemon=True, name="dcnsim-worker"
    )
    proc.start()
    child_conn.close()
    return _Worker(proc, parent_conn)


def _send(w: _Worker, task: Any) -> None:
    w.task = task
    with contextlib.suppress(OSError):  # a dead worker shows up through its sentinel
        w.conn.send(task)


def _stop_worker(w: _Worker, grace: float) -> None:
    w.proc.join(timeout=grace)
    if w.proc.is_alive():
        w.proc.kill()
        w.proc.join(timeout=5)
    with contextlib.suppress(OSError):
        w.conn.close()


def _exit_message(code: int | None) -> str:
    if code is None:
        return "the worker process stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = {
            "SIGKILL": " (perhaps by the out-of-memory killer)",
            "SIGABRT": " (the simulator aborted)",
            "SIGSEGV": " (a crash in the simulator)",
            "SIGBUS": " (a crash in the simulator)",
        }.get(name, "")
        return f"the worker process running it was killed by {name}{why}"
    return f"the worker process running it exited with status {code}"


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker die when its parent does, even if the parent is killed -9."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass
    if os.getppid() != parent_pid:  # the parent died before the above took effect
        os._exit(1)

    def watch() -> None:  # elsewhere (and as a second line): poll the parent's pid
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="dcnsim-parent-watch", daemon=True).start()


def _worker_main(conn: Any, parent_pid: int, fn: Callable[[Any], Any]) -> None:
    """A worker of :class:`ProcessExecutor`: run tasks from ``conn`` until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            msg = ("ok", fn(task))
        except BaseException:  # reported to the parent as a lost task
            msg = ("error", traceback.format_exc())
        try:
            conn.send(msg)
        except (OSError, ValueError):
            return


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
    fingerprint: str = ""
    #: The files the scenario names (:class:`dcnsim.staging.FileSet`), carried with the task
    #: when it runs on another machine (:class:`DaskExecutor`); None for local runs.
    files: Any = None


@dataclass
class RunOutcome:
    """What happened to one run."""

    name: str
    status: str  # "ran", "skipped" or "failed"
    wall_s: float = 0.0
    error: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    #: The run's :class:`~dcnsim.results.Results` when it ran elsewhere and the caller
    #: writes the folder (:func:`compute_task`); None once written.
    results: Any = field(default=None, repr=False)


@dataclass
class SweepReport:
    """The outcome of :func:`run_sweep`."""

    out_dir: Path
    runs: list[RunTask]
    outcomes: list[RunOutcome]
    rows: list[dict[str, Any]]
    changed: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ran(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == "ran"]

    @property
    def skipped(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == "skipped"]

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def finished(self) -> list[str]:
        """Runs whose folder is complete now (ran now or earlier)."""
        return [r["run"] for r in self.rows]


class SweepInterrupted(KeyboardInterrupt):
    """SIGINT during :func:`run_sweep`: workers stopped, table written; ``report`` tells which
    runs had finished."""

    def __init__(self, report: SweepReport) -> None:
        super().__init__("sweep interrupted")
        self.report = report


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
                    # A copy: a later grid key may write inside this value (a variant's
                    # workload list, then "workload[0].senders"), and runs must not share it.
                    set_field(sc, k, copy.deepcopy(v))
                except ScenarioError as e:
                    raise ScenarioError(f"variants.{vname}.{k}", e.message) from None
            values = {"variant": vname, **values}
        for k, v in values.items():
            if k == "variant":
                continue
            try:
                set_field(sc, k, copy.deepcopy(v))
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
    """A run folder is complete when its manifest says so and its summary is there."""
    return is_complete_run(run_dir)


def _test_crash(name: str) -> None:
    """The test hook of the module docs (``DCNSIM_TEST_CRASH``)."""
    spec = os.environ.get("DCNSIM_TEST_CRASH")
    if not spec:
        return
    for item in spec.split(","):
        run, _, mode = item.partition("=")
        if run.strip() != name:
            continue
        mode = mode.strip()
        if mode == "abort":
            os.abort()
        elif mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif mode == "exit":
            os._exit(3)
        elif mode == "raise":
            raise RuntimeError(f"test hook: run {name} raises")


def execute_task(task: RunTask) -> RunOutcome:
    """Run one sweep task and write its folder; never raises (failures are reported).

    The run folder is replaced if it is a dcnsim run folder (the sweep decided to redo it);
    files the user added to it are kept."""
    from dcnsim.api import run

    t0 = time.perf_counter()
    try:
        _test_crash(task.name)
        res = run(task.scenario, base_dir=task.base_dir)
        res.write(task.out_dir, overwrite=True)
        return RunOutcome(task.name, "ran", time.perf_counter() - t0, summary=res.summary())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # includes pyo3's PanicException (a BaseException)
        detail = str(e) if isinstance(e, ScenarioError) else traceback.format_exc()
        return RunOutcome(task.name, "failed", time.perf_counter() - t0, error=detail)


def compute_task(task: RunTask, blobs: Mapping[str, bytes] | None = None) -> RunOutcome:
    """Run one sweep task without writing anything: the outcome carries the
    :class:`~dcnsim.results.Results` for the caller to write (how a task runs on a Dask
    worker: no shared file system needed). The files the scenario names come with the task
    (``task.files``, or their bytes in ``blobs`` when shipped separately). Never raises for a
    failing run (the failure is reported)."""
    from dcnsim.api import run
    from dcnsim.staging import FileSet

    t0 = time.perf_counter()
    try:
        _test_crash(task.name)
        files = task.files
        if blobs is not None and files is not None:
            files = FileSet(dict(blobs), files.given, files.resolved)
        res = run(task.scenario, base_dir=task.base_dir, files=files)
        summary = res.summary()
        return RunOutcome(task.name, "ran", time.perf_counter() - t0, summary=summary, results=res)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # includes pyo3's PanicException (a BaseException)
        detail = str(e) if isinstance(e, ScenarioError) else traceback.format_exc()
        return RunOutcome(task.name, "failed", time.perf_counter() - t0, error=detail)


def _is_dask_client(x: Any) -> bool:
    return type(x).__name__ == "Client" and type(x).__module__.startswith("distributed")


class DaskExecutor:
    """Runs sweep tasks on a Dask cluster (``distributed``); results come back to the caller.

    Give an existing ``client`` (a ``distributed.Client``), or a scheduler ``address``
    (``tcp://host:8786``) to connect to, or neither to start a local cluster of ``workers``
    single-threaded worker processes for the duration of the sweep (``timeout``: seconds to
    wait for the scheduler; default Dask's ``distributed.comm.timeouts.connect``). Tasks are
    self-contained: each carries its resolved scenario and the bytes of the files it names
    (sent once per distinct file with ``scatter``), so workers need ``dcnsim`` installed but
    no shared file system. The caller (:func:`run_sweep`) writes each run folder on its own
    machine as results arrive, with the same atomicity, resume and failure rules as local
    sweeps (``remote = True`` tells it so).

    A worker lost while running a task (killed, out of memory, a crashed simulator) is
    Dask's to handle: the task is given to another worker, up to Dask's
    ``distributed.scheduler.allowed-failures`` times, after which the run is recorded as
    failed with Dask's message. When the iteration ends early (interrupt), the outstanding
    tasks are cancelled; a cluster this executor started is shut down.
    """

    remote = True

    def __init__(
        self,
        client: Any = None,
        *,
        address: str | None = None,
        workers: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.client = client
        self.address = address
        self.workers = workers
        self.timeout = timeout

    def describe(self) -> str:
        if self.client is not None:
            return f"the Dask cluster at {self.client.scheduler.address}"
        if self.address:
            return f"the Dask cluster at {self.address}"
        w = self.workers or 1
        return f"a local Dask cluster of {w} worker{'s' if w > 1 else ''}"

    def _connect(self) -> tuple[Any, Any]:
        """(client, cluster this executor started or None)."""
        import logging

        from distributed import Client, LocalCluster

        if self.client is not None:
            return self.client, None
        if self.address:
            try:
                kw = {} if self.timeout is None else {"timeout": self.timeout}
                return Client(self.address, **kw), None
            except (OSError, TimeoutError) as e:
                raise ScenarioError(
                    "--scheduler",
                    f"cannot reach a Dask scheduler at {self.address} ({type(e).__name__}: "
                    f"{e}); start one "
                    "(dask scheduler) or give its address as tcp://HOST:PORT",
                ) from None
        cluster = LocalCluster(
            n_workers=max(1, self.workers or 1),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        try:
            return Client(cluster), cluster
        except BaseException:
            cluster.close()
            raise

    def map(self, fn: Callable[..., R], tasks: Sequence[T]) -> Iterator[R]:
        from distributed import as_completed

        client, cluster = self._connect()
        futures: dict[Any, Any] = {}
        try:
            blobs: dict[int, Any] = {}  # id(bytes) -> future of the scattered bytes
            for t in tasks:
                files = getattr(t, "files", None)
                if files:
                    refs = {}
                    for where, data in files.files.items():
                        if id(data) not in blobs:
                            blobs[id(data)] = client.scatter(data, hash=True)
                        refs[where] = blobs[id(data)]
                    light = copy.copy(t)
                    light.files = type(files)({}, files.given, files.resolved)
                    fut = client.submit(fn, light, refs, pure=False)
                else:
                    fut = client.submit(fn, t, pure=False)
                futures[fut] = t
            for fut in as_completed(list(futures)):
                t = futures.pop(fut)
                try:
                    result = fut.result()
                except Exception as e:
                    result = RunOutcome(
                        getattr(t, "name", "?"),
                        "failed",
                        error=f"the Dask cluster could not run it: {type(e).__name__}: {e}",
                    )
                yield result
        finally:
            if futures:
                with contextlib.suppress(Exception):
                    client.cancel(list(futures))
            if cluster is not None:
                with contextlib.suppress(Exception):
                    client.close()
                with contextlib.suppress(Exception):
                    cluster.close()
            elif self.client is None:
                with contextlib.suppress(Exception):
                    client.close()


def _intern_files(tasks: Sequence[RunTask], normalized: Mapping[str, Any]) -> None:
    """Attach to each task the files its scenario names, one bytes object per distinct
    content (so a file shared by every run is held and shipped once)."""
    import hashlib

    from dcnsim.staging import collect

    seen: dict[str, bytes] = {}
    for t in tasks:
        fs = collect(t.scenario, t.base_dir, normalized=normalized[t.name])
        for where, data in fs.files.items():
            key = hashlib.sha256(data).hexdigest()
            fs.files[where] = seen.setdefault(key, data)
        t.files = fs


def _write_remote(task: RunTask, o: RunOutcome) -> RunOutcome:
    """Write the folder of a run computed elsewhere (its outcome carries the results)."""
    res, o.results = o.results, None
    if res is None or o.status != "ran":
        return o
    try:
        res.write(task.out_dir, overwrite=True)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        detail = str(e) if isinstance(e, ScenarioError) else traceback.format_exc()
        return RunOutcome(task.name, "failed", o.wall_s, error=f"writing its folder: {detail}")
    return o


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "failed"


def _check_run_folders(tasks: Sequence[RunTask], out: Path) -> None:
    """Refuse (before anything runs) run folders the sweep could not write: not dcnsim's."""
    bad = []
    for t in tasks:
        d = Path(t.out_dir)
        if not (d.exists() or d.is_symlink()):
            continue
        if not d.is_dir():
            bad.append(t.name)
            continue
        m = read_manifest(d)
        if m is None:
            if foreign_entries(d) and legacy_run_files(d) is None:
                bad.append(t.name)
        elif m.get("kind") != "run":
            bad.append(t.name)
    if bad:
        shown = ", ".join(bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise OutputError(
            str(out),
            f"{len(bad)} run folder(s) in it are not dcnsim run folders (no manifest, and other "
            f"files than a run's results): {shown}; move them away (or choose another --out) "
            "and rerun",
        )


def _recorded(run_dir: str) -> tuple[bool, str | None]:
    """(complete?, recorded fingerprint) of a run folder; a run folder of an older dcnsim
    counts as complete, with the fingerprint of its ``scenario.json``."""
    if is_complete(run_dir):
        return True, (read_manifest(run_dir) or {}).get("fingerprint")
    if legacy_run_files(run_dir) is not None:
        try:
            return True, fingerprint(json.loads((Path(run_dir) / "scenario.json").read_text()))
        except (OSError, ValueError):
            return True, None
    return False, None


def run_sweep(
    sweep: SweepSpec | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    force: bool = False,
    on_change: str = "rerun",
    log: Callable[[str], None] | None = None,
    progress: Callable[[int, int, RunOutcome | None], Any] | None = None,
) -> SweepReport:
    """Run a sweep into ``out_dir``; skip complete, unchanged runs unless ``force``.

    Every run is validated, and the output folder and every run folder checked, before any
    starts, so bad input raises :class:`ScenarioError` (an output problem its subclass
    :class:`~dcnsim.outdir.OutputError`) with nothing written. A complete run whose
    fingerprint differs from the current one is rerun (``on_change="rerun"``, the default)
    or refused with the list of such runs (``on_change="refuse"``: OutputError, nothing run).
    Failed runs are recorded (``status``/``error`` in the table) and the others go on. On
    SIGINT the workers are stopped, the table of the finished runs written and
    :class:`SweepInterrupted` raised.

    ``progress(done, total, outcome)`` is called once before the runs start (``outcome``
    None; ``done`` counts the runs already complete) and after each run finishes or fails,
    as it happens (:class:`dcnsim.progress.SweepBar` draws it).

    ``executor`` may be a ``distributed.Client`` (or a :class:`DaskExecutor`): the runs are
    then computed on its Dask cluster and their folders written here.
    """
    from dcnsim.api import validate

    if _is_dask_client(executor):
        executor = DaskExecutor(executor)
    if on_change not in ("rerun", "refuse"):
        raise ValueError(f"on_change must be 'rerun' or 'refuse', not {on_change!r}")
    spec = sweep if isinstance(sweep, SweepSpec) else load_sweep(sweep)
    out = Path(out_dir).absolute()
    tasks = expand(spec, out)
    normalized: dict[str, Any] = {}
    for t in tasks:
        try:
            normalized[t.name] = validate(t.scenario, base_dir=t.base_dir)
        except ScenarioError as e:
            raise ScenarioError(e.field, f"{e.message} (in run {t.name})") from None
        t.fingerprint = fingerprint(normalized[t.name])
    remote = bool(getattr(executor, "remote", False))
    check_sweep_dir(out, SWEEP_FILE)
    _check_run_folders(tasks, out)

    recorded = {t.name: _recorded(t.out_dir) for t in tasks}
    done_before = {name for name, (done, _) in recorded.items() if done}
    changed = [
        t.name for t in tasks if t.name in done_before and recorded[t.name][1] != t.fingerprint
    ]
    if changed and on_change == "refuse" and not force:
        shown = ", ".join(changed[:10]) + (", ..." if len(changed) > 10 else "")
        raise OutputError(
            str(out),
            f"{len(changed)} finished run(s) were made from another scenario or dcnsim "
            f"version: {shown}; rerun without --refuse-changed to redo them, or choose "
            "another --out",
        )

    out.mkdir(parents=True, exist_ok=True)
    clean_stale(out)
    for t in tasks:  # run folders of an older dcnsim get their manifest (nothing else changes)
        adopt_legacy_run(t.out_dir)
    _write_sweep_json(spec, tasks, out)
    todo = [t for t in tasks if force or t.name not in done_before or t.name in changed]
    todo_names = {t.name for t in todo}
    outcomes = {t.name: RunOutcome(t.name, "skipped") for t in tasks if t.name not in todo_names}
    say = log or (lambda _msg: None)
    n = len(tasks)
    if outcomes:
        say(f"sweep: {len(outcomes)} of {n} runs already complete and unchanged, skipping them")
    if changed and not force:
        shown = ", ".join(changed[:10]) + (", ..." if len(changed) > 10 else "")
        say(
            f"sweep: {len(changed)} finished run{'s' if len(changed) > 1 else ''} changed since "
            f"written (scenario or dcnsim version), rerunning: {shown}"
        )
    interrupted = False
    if todo:
        w = workers or spec.workers or min(local_cores(), len(todo))
        w = max(1, min(w, len(todo)))
        ex = executor or ProcessExecutor(w)
        by_name = {t.name: t for t in todo}
        if remote:
            _intern_files(todo, normalized)
        where = ex.describe() if hasattr(ex, "describe") else f"{w} worker{'s' if w > 1 else ''}"
        say(f"sweep: running {len(todo)} runs on {where}")
        done = len(outcomes)
        if progress is not None:
            progress(done, n, None)
        it = iter(ex.map(compute_task if remote else execute_task, todo))
        try:
            for o in it:
                if remote and o.name in by_name:
                    o = _write_remote(by_name[o.name], o)
                done += 1
                outcomes[o.name] = o
                if progress is not None:
                    progress(done, n, o)
                if o.status == "ran":
                    s = o.summary
                    say(
                        f"[{done}/{n}] {o.name}: {o.wall_s:.1f} s, avg FCT "
                        f"{_num(s.get('avg_fct_us'))} us, p99 slowdown "
                        f"{_num(s.get('slowdown_p99'))}"
                    )
                else:
                    say(f"[{done}/{n}] {o.name}: FAILED: {_last_line(o.error)}")
        except KeyboardInterrupt:
            interrupted = True
        except Exception as e:  # the executor itself broke: the runs it did not report fail
            msg = f"executor failed: {type(e).__name__}: {e}"
            for t in todo:
                if t.name not in outcomes:
                    outcomes[t.name] = RunOutcome(t.name, "failed", error=msg)
                    say(f"[{len(outcomes)}/{n}] {t.name}: FAILED: {msg}")
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
    ordered = [outcomes[t.name] for t in tasks if t.name in outcomes]
    rows = collect_rows(tasks)
    failed = {o.name: o for o in ordered if o.status == "failed"}
    write_sweep_table(_table_rows(tasks, rows, failed), out)
    report = SweepReport(out, tasks, ordered, rows, changed, interrupted)
    if interrupted:
        raise SweepInterrupted(report)
    return report


def _table_rows(
    tasks: Sequence[RunTask], rows: list[dict[str, Any]], failed: Mapping[str, RunOutcome]
) -> list[dict[str, Any]]:
    """The rows of the sweep table: complete runs (``status`` ok) and failed ones, in run
    order. A run that failed now but has an earlier complete folder shows as failed."""
    by_name = {r["run"]: r for r in rows}
    out = []
    for t in tasks:
        if t.name in failed:
            out.append(
                {
                    "run": t.name,
                    **t.values,
                    "status": "failed",
                    "error": _last_line(failed[t.name].error),
                }
            )
        elif t.name in by_name:
            out.append({**by_name[t.name], "status": "ok", "error": ""})
    return out


def _num(v: Any) -> str:
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    return "n/a"


def _write_sweep_json(spec: SweepSpec, tasks: list[RunTask], out: Path) -> None:
    from dcnsim.outdir import version
    from dcnsim.results import atomic_write_bytes

    doc = {
        "dcnsim_version": version(),
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
        if not is_complete(t.out_dir):
            continue
        summary = json.loads((Path(t.out_dir) / "summary.json").read_text())
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
        columns.extend(k for k in r if k not in columns and k not in ("status", "error"))
    if rows:
        columns += ["status", "error"]
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
    """Read a sweep folder: (``sweep.json`` contents, rows of its complete runs)."""
    d = Path(out_dir)
    meta = json.loads((d / SWEEP_FILE).read_text())
    rows = []
    for r in meta["runs"]:
        p = d / r["name"] / "summary.json"
        m = read_manifest(d / r["name"])
        # complete; or written before manifests existed (read, never replaced, by dcnsim)
        if p.is_file() and (m is None or m.get("state") == "complete"):
            row = {"run": r["name"], **r["values"]}
            for k, v in json.loads(p.read_text()).items():
                row.setdefault(k, v)
            rows.append(row)
    return meta, rows


def is_sweep_dir(path: str | os.PathLike[str]) -> bool:
    return (Path(path) / SWEEP_FILE).is_file()


__all__ = [
    "DaskExecutor",
    "Executor",
    "ProcessExecutor",
    "RunOutcome",
    "RunTask",
    "SerialExecutor",
    "SweepInterrupted",
    "SweepReport",
    "SweepSpec",
    "WorkerLost",
    "compute_task",
    "execute_task",
    "expand",
    "is_complete",
    "is_sweep_dir",
    "load_sweep",
    "read_sweep",
    "run_sweep",
]
