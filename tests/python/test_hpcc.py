"""HPCC (``protocol = "hpcc"``) through the Python API and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dcnsim
from dcnsim import ScenarioError

from conftest import TINY_SCENARIO

HPCC = TINY_SCENARIO.replace('protocol = "dctcp"', 'protocol = "hpcc"')


def test_hpcc_runs_through_the_api_and_finishes_every_flow() -> None:
    res = dcnsim.run(HPCC)
    s = res.summary()
    assert s["flows_total"] == 50
    assert s["flows_finished"] == 50
    # A flow never beats the ideal FCT of an idle path.
    assert s["slowdown_p50"] >= 0.99


def test_validate_shows_telemetry_and_the_law_defaults() -> None:
    sc = dcnsim.validate(HPCC)
    assert sc["transport"]["protocol"] == "hpcc"
    assert sc["derived"]["int"] is True
    assert "int" not in dcnsim.validate(TINY_SCENARIO)["derived"]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('protocol = "hpcc"\neta = 1.5', "transport.eta"),
        ('protocol = "hpcc"\nw_ai = "0B"', "transport.w_ai"),
        ('protocol = "hpcc"\nmax_stages = 5', "transport.max_stages"),
    ],
)
def test_bad_hpcc_field_is_named(line: str, field: str) -> None:
    with pytest.raises(ScenarioError) as ei:
        dcnsim.validate(HPCC.replace('protocol = "hpcc"', line))
    assert ei.value.field == field


def test_hpcc_from_the_command_line(tmp_path: Path, cli: Any) -> None:
    sc = tmp_path / "hpcc.toml"
    sc.write_text(HPCC)
    r = cli(["run", str(sc), "--out", "res"], tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "res" / "summary.json").read_text())
    assert s["flows_finished"] == 50
    bad = tmp_path / "bad.toml"
    bad.write_text(HPCC.replace('protocol = "hpcc"', 'protocol = "hpcc"\neta = 0'))
    r = cli(["run", str(bad), "--out", "bad"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: transport.eta: "), r.stderr
    assert not (tmp_path / "bad").exists()
