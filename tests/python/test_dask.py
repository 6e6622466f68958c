"""Sweeps on a real Dask cluster: a scheduler and two worker processes on loopback.

The cluster is started with the ``dask scheduler`` / ``dask worker`` programs, as on a real
cluster, with workers in a folder of their own (they see neither the sweep file nor the
output folder through a relative path). Each test compares what the cluster produced with
what a local sweep of the same file produces.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dcnsim.sweep import SerialExecutor, run_sweep

from conftest import TINY_SCENARIO

distributed = pytest.importorskip("distributed")

DASK = str(Path(sys.executable).parent / "dask")

SWEEP = """\
base = "base.toml"
[grid]
"transport.protocol" = ["dctcp", "tcp"]
seed = [1, 2]
"""

#: Summary keys that measure the machine, not the simulation.
MACHINE_KEYS = {"wall_s", "events_per_s"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A scheduler and worker processes started with the ``dask`` programs."""

    def __init__(self, root: Path, workers: int = 2, crash: str = "") -> None:
        self.root = root
        self.crash = crash
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        root.mkdir(parents=True, exist_ok=True)
        port = self.address.rsplit(":", 1)[1]
        self.procs.append(
            self._start(
                [DASK, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
                "scheduler.log",
            )
        )
        try:
            for i in range(workers):
                self.add_worker(i)
            self.wait_for(workers)
        except BaseException:  # never leave a scheduler or worker behind
            self.close()
            raise

    def _start(self, cmd: list[str], log: str) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DCNSIM_")}
        if self.crash:  # the test hook of dcnsim.sweep, in the workers only
            env["DCNSIM_TEST_CRASH"] = self.crash
        with open(self.root / log, "wb") as f:
            return subprocess.Popen(cmd, cwd=self.root, stdout=f, stderr=subprocess.STDOUT, env=env)

    def add_worker(self, i: int) -> None:
        w = self._start(
            [
                DASK,
                "worker",
                self.address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                "--local-directory",
                str(self.root / f"w{i}"),
            ],
            f"worker{i}.log",
        )
        self.workers.append(w)
        self.procs.append(w)

    def wait_for(self, n: int, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with distributed.Client(self.address, timeout=5) as c:
                    c.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
                    return
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    logs = "\n".join(p.read_text() for p in self.root.glob("*.log"))
                    raise AssertionError(f"Dask cluster did not come up:\n{logs}") from None
                time.sleep(0.5)

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@contextlib.contextmanager
def cluster(root: Path, workers: int = 2, crash: str = "") -> Iterator[Cluster]:
    c = Cluster(root, workers, crash)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("dask"), crash="seed-13=raise") as c:
        yield c


def sim_rows(out: Path) -> list[dict[str, Any]]:
    rows = pq.read_table(out / "sweep_summary.parquet").to_pylist()
    return [{k: v for k, v in r.items() if k not in MACHINE_KEYS} for r in rows]


def write_sweep(d: Path, sweep: str = SWEEP, base: str = TINY_SCENARIO) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "base.toml").write_text(base)
    (d / "sweep.toml").write_text(sweep)
    return d / "sweep.toml"


def test_dask_sweep_gives_the_local_table_and_resumes(
    tmp_path: Path, dask_cluster: Cluster, cli: Any
) -> None:
    sweep = write_sweep(tmp_path / "in")
    local = run_sweep(sweep, tmp_path / "local", executor=SerialExecutor())
    assert len(local.ran) == 4 and not local.failed

    args = ["sweep", str(sweep), "--out", "remote", "--engine", "dask"]
    r = cli([*args, "--scheduler", dask_cluster.address], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "4 ran, 0 skipped, 0 failed" in r.stdout
    assert f"on the Dask cluster at {dask_cluster.address}" in r.stderr
    assert sim_rows(tmp_path / "remote") == sim_rows(tmp_path / "local")
    for run in local.ran:  # the folders hold the same simulation (scenario and flows)
        for f in ("scenario.json", "flows.csv", "ports.csv"):
            assert (tmp_path / "remote" / run / f).read_bytes() == (
                tmp_path / "local" / run / f
            ).read_bytes(), (run, f)

    # the folders the client wrote carry the local fingerprints: a local rerun of the same
    # folder skips everything
    rep = run_sweep(sweep, tmp_path / "remote", executor=SerialExecutor())
    assert len(rep.skipped) == 4 and not rep.ran


def test_a_client_as_executor_ships_the_files_a_scenario_names(
    tmp_path: Path, dask_cluster: Cluster
) -> None:
    """A CDF file and a flow list named relative to the scenario reach the workers as bytes
    (the workers run in another folder), and the results match a local run."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "data").mkdir()
    (d / "data" / "sizes.cdf").write_text("1000 0\n20000 0.5\n100000 1\n")
    (d / "data" / "flows.csv").write_text("src,dst,size,start\n0,1,30000,0\n2,1,30000,5\n")
    base = TINY_SCENARIO.replace('cdf = "websearch"', 'cdf = "data/sizes.cdf"') + (
        '\n[[workload]]\npattern = "explicit"\nfile = "data/flows.csv"\n'
    )
    sweep = write_sweep(d, 'base = "base.toml"\n[grid]\nseed = [1, 2]\n', base)
    local = run_sweep(sweep, tmp_path / "local", executor=SerialExecutor())
    assert not local.failed
    with distributed.Client(dask_cluster.address) as client:
        rep = run_sweep(sweep, tmp_path / "remote", executor=client)
        assert sorted(rep.ran) == sorted(local.ran) and not rep.failed
        assert sim_rows(tmp_path / "remote") == sim_rows(tmp_path / "local")
        assert all(r["flows_total"] == 52 for r in sim_rows(tmp_path / "remote"))
        # the normalized scenario names the files as the sweep's machine sees them
        for run in rep.ran:
            assert (tmp_path / "remote" / run / "scenario.json").read_bytes() == (
                tmp_path / "local" / run / "scenario.json"
            ).read_bytes()
        again = run_sweep(sweep, tmp_path / "remote", executor=client)
        assert len(again.skipped) == 2 and not again.ran


def test_a_failing_run_on_a_worker_is_recorded_and_the_others_finish(
    tmp_path: Path, dask_cluster: Cluster
) -> None:
    """The workers' environment makes run seed-13 raise (the test hook of dcnsim.sweep)."""
    sweep = write_sweep(tmp_path / "in", 'base = "base.toml"\n[grid]\nseed = [12, 13]\n')
    with distributed.Client(dask_cluster.address) as client:
        rep = run_sweep(sweep, tmp_path / "out", executor=client)
    assert rep.ran == ["seed-12"] and [f.name for f in rep.failed] == ["seed-13"]
    assert "test hook: run seed-13 raises" in rep.failed[0].error
    rows = pq.read_table(tmp_path / "out" / "sweep_summary.parquet").to_pylist()
    assert [(r["run"], r["status"]) for r in rows] == [("seed-12", "ok"), ("seed-13", "failed")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["seed-12"]


def test_a_worker_killed_mid_sweep_does_not_stop_the_sweep(
    tmp_path: Path, dask_cluster: Cluster
) -> None:
    """A third worker joins; it is killed (SIGKILL) as soon as the first run is reported,
    while it holds a task: that task goes to another worker and every run finishes, with
    the local table."""
    sweep = write_sweep(
        tmp_path / "in",
        SWEEP.replace("seed = [1, 2]", "seed = [1, 2, 3]"),
        TINY_SCENARIO.replace("flows = 50", "flows = 150"),
    )
    local = run_sweep(sweep, tmp_path / "local", executor=SerialExecutor())
    assert len(local.ran) == 6
    dask_cluster.add_worker(len(dask_cluster.workers))
    victim = dask_cluster.workers[-1]
    dask_cluster.wait_for(3)
    held: list[int] = []
    with distributed.Client(dask_cluster.address) as client:
        pids = client.run(os.getpid)
        addr = next(a for a, pid in pids.items() if pid == victim.pid)

        def log(msg: str) -> None:
            if msg.startswith("[") and not held:
                held.append(len(client.processing(workers=[addr])[addr]))
                os.kill(victim.pid, signal.SIGKILL)

        rep = run_sweep(sweep, tmp_path / "remote", executor=client, log=log)
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert held and held[0] >= 1  # it was working on a run when killed
    assert sorted(rep.ran) == sorted(local.ran) and not rep.failed
    assert sim_rows(tmp_path / "remote") == sim_rows(tmp_path / "local")


def test_engine_dask_without_scheduler_starts_a_local_cluster(tmp_path: Path, cli: Any) -> None:
    sweep = write_sweep(tmp_path / "in", 'base = "base.toml"\n[grid]\nseed = [1, 2]\n')
    r = cli(["sweep", str(sweep), "--out", "o", "--engine", "dask", "--workers", "1"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "on a local Dask cluster of 1 worker" in r.stderr
    assert "2 ran, 0 skipped, 0 failed" in r.stdout
    local = run_sweep(sweep, tmp_path / "local", executor=SerialExecutor())
    assert sim_rows(tmp_path / "o") == sim_rows(tmp_path / "local") and len(local.ran) == 2


def test_an_unreachable_scheduler_is_exit_2_with_nothing_written(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "2s")
    sweep = write_sweep(tmp_path / "in")
    addr = f"tcp://127.0.0.1:{_free_port()}"
    r = cli(["sweep", str(sweep), "--out", "o", "--engine", "dask", "--scheduler", addr], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "--scheduler" in r.stderr and addr in r.stderr
    assert not (tmp_path / "o").exists()
    r = cli(["sweep", str(sweep), "--out", "o", "--scheduler", addr], tmp_path)
    assert r.returncode == 2 and "needs --engine dask" in r.stderr


def test_repro_on_the_cluster_gives_the_local_table(
    tmp_path: Path, dask_cluster: Cluster, cli: Any
) -> None:
    """``dcnsim repro ... --engine dask --scheduler ADDRESS``: the reduced reproduction run on
    the cluster's workers writes the table a local run writes."""
    repro = Path(__file__).resolve().parents[2] / "repro" / "ppt_fig1_20"
    args = ["repro", str(repro), "--reduced", "--variants", "dctcp"]
    r = cli([*args, "--out", "local"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = cli(
        [*args, "--out", "remote", "--engine", "dask", "--scheduler", dask_cluster.address],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert f"on the Dask cluster at {dask_cluster.address}" in r.stderr
    table = (tmp_path / "local" / "table.csv").read_text()
    assert table.startswith("variant,") and "\ndctcp," in table
    assert (tmp_path / "remote" / "table.csv").read_text() == table
    assert sim_rows(tmp_path / "remote") == sim_rows(tmp_path / "local")
