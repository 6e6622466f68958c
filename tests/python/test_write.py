"""Atomic result folders: a failure mid-write leaves nothing (or the previous folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import dcnsim.results as results_mod
from dcnsim import Results

from conftest import synthetic_core_output


def make() -> Results:
    return Results.from_core(
        synthetic_core_output(
            size=[1000, 200000], fct_us=[10, None], ideal_us=[5, 50], sent=[1000, 2000]
        )
    )


def failing_after(monkeypatch: pytest.MonkeyPatch, n_ok: int) -> None:
    real = results_mod.write_table
    calls = {"n": 0}

    def flaky(*args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] > n_ok:
            raise OSError("disk full (simulated)")
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(results_mod, "write_table", flaky)


def test_write_complete(tmp_path: Path) -> None:
    out = make().write(tmp_path / "run")
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "counters.json",
        "dcnsim-manifest.json",
        "flows.csv",
        "flows.parquet",
        "link.parquet",
        "ports.csv",
        "scenario.json",
        "summary.json",
    ]  # no queue.parquet: queues were not sampled
    assert pq.read_table(out / "flows.parquet").column_names == results_mod.FLOW_COLUMNS
    s = json.loads((out / "summary.json").read_text())
    assert s["flows_total"] == 2 and s["large_avg_fct_us"] is None  # NaN -> null
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary left over
    back = Results.load(out)
    assert back.summary()["flows_finished"] == 1
    assert back.flows["size_bytes"].tolist() == [1000, 200000]


def test_failure_mid_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing_after(monkeypatch, 1)  # flows.parquet written, then the CSV fails
    with pytest.raises(OSError, match="simulated"):
        make().write(tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_previous_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = make().write(tmp_path / "run")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    failing_after(monkeypatch, 2)
    with pytest.raises(OSError):
        make().write(out, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched, no temporary
