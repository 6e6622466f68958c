"""Sweeps: cartesian product, run folders, combined table, skip and resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dcnsim import ScenarioError
from dcnsim.sweep import SerialExecutor, expand, load_sweep, run_sweep

from conftest import TINY_SCENARIO

SWEEP = """\
base = "base.toml"
[grid]
"transport.protocol" = ["dctcp", "tcp"]
seed = [1, 2]
[sweep]
workers = 2
"""

RUNS = [
    "protocol-dctcp_seed-1",
    "protocol-dctcp_seed-2",
    "protocol-tcp_seed-1",
    "protocol-tcp_seed-2",
]


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "base.toml").write_text(TINY_SCENARIO)
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p


def mtimes(out: Path) -> dict[str, int]:
    return {r: (out / r / "summary.json").stat().st_mtime_ns for r in RUNS}


def test_sweep_run_skip_resume(tmp_path: Path, sweep_file: Path, cli: Any) -> None:
    r = cli(["sweep", str(sweep_file), "--out", "sw"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "4 ran, 0 skipped" in r.stdout
    out = tmp_path / "sw"
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == RUNS
    table = pq.read_table(out / "sweep_summary.parquet").to_pylist()
    assert [row["run"] for row in table] == RUNS
    assert [row["transport.protocol"] for row in table] == ["dctcp", "dctcp", "tcp", "tcp"]
    assert [row["seed"] for row in table] == [1, 2, 1, 2]
    assert all(row["flows_total"] == 50 for row in table)
    csv_lines = (out / "sweep_summary.csv").read_text().splitlines()
    assert len(csv_lines) == 5
    assert csv_lines[0].startswith("run,transport.protocol,seed,flows_total,")
    before = mtimes(out)

    r = cli(["sweep", str(sweep_file), "--out", "sw"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "0 ran, 4 skipped" in r.stdout
    assert mtimes(out) == before

    # a killed sweep: one run folder missing, a half-written temporary left behind
    import shutil

    from test_safety import dead_pid

    shutil.rmtree(out / RUNS[2])
    stale = out / f"{RUNS[2]}.tmp-{dead_pid()}"
    stale.mkdir()
    r = cli(["sweep", str(sweep_file), "--out", "sw"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "1 ran, 3 skipped" in r.stdout
    after = mtimes(out)
    assert {k for k in RUNS if after[k] != before[k]} == {RUNS[2]}
    assert not stale.exists()
    assert len(pq.read_table(out / "sweep_summary.parquet")) == 4

    r = cli(["plot", "sw"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        "comparison.png",
        "dcnsim-manifest.json",
        "grid.png",
        "headline.png",
    ]


def test_sweep_api_serial_executor(tmp_path: Path, sweep_file: Path) -> None:
    calls: list[str] = []

    class Recording(SerialExecutor):
        def map(self, fn, tasks):  # type: ignore[no-untyped-def]
            calls.extend(t.name for t in tasks)
            return super().map(fn, tasks)

    rep = run_sweep(sweep_file, tmp_path / "sw", executor=Recording())
    assert calls == RUNS and rep.ran == RUNS and not rep.failed
    rep = run_sweep(sweep_file, tmp_path / "sw", executor=Recording())
    assert rep.skipped == RUNS and calls == RUNS


def test_bad_sweeps_exit_2_and_write_nothing(tmp_path: Path, sweep_file: Path, cli: Any) -> None:
    cases = {
        "nobase.toml": "[grid]\nseed = [1]\n",
        "emptygrid.toml": 'base = "base.toml"\n[grid]\n',
        "notlist.toml": 'base = "base.toml"\n[grid]\nseed = 3\n',
        "badpath.toml": 'base = "base.toml"\n[grid]\n"workload[4].load" = [0.1]\n',
        "badvalue.toml": 'base = "base.toml"\n[grid]\n"workload[0].load" = [0.3, 1.5]\n',
        "missingbase.toml": 'base = "nope.toml"\n[grid]\nseed = [1]\n',
        "syntax.toml": "base = \n",
        "extra.toml": 'base = "base.toml"\nbogus = 1\n[grid]\nseed = [1]\n',
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        r = cli(["sweep", name, "--out", "sw"], tmp_path)
        assert r.returncode == 2, (name, r.stderr)
        assert r.stderr.startswith("error: "), r.stderr
        assert not (tmp_path / "sw").exists(), name
    with pytest.raises(ScenarioError):
        load_sweep(tmp_path / "nobase.toml")


def test_expand_grid_writes_inside_a_variants_value_without_sharing_it(tmp_path: Path) -> None:
    # A variant replaces the workload list and a grid key then sets a field inside it: each
    # run must get its own copy (one shared list would leave every run with the last value).
    (tmp_path / "base.toml").write_text(TINY_SCENARIO)
    p = tmp_path / "sweep.toml"
    p.write_text(
        """\
base = "base.toml"
[grid]
"workload[0].senders" = [2, 3]
[variants.alone]
"workload" = [{ pattern = "incast", receiver = 0, senders = 1, size = "2KB" }]
"""
    )
    tasks = expand(load_sweep(p), tmp_path / "out")
    assert [t.scenario["workload"][0]["senders"] for t in tasks] == [2, 3]
    assert [t.values["workload[0].senders"] for t in tasks] == [2, 3]
