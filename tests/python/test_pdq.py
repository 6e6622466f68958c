"""PDQ (``protocol = "pdq"``) through the Python API and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dcnsim
from dcnsim import ScenarioError

from conftest import TINY_SCENARIO

PDQ = TINY_SCENARIO.replace('protocol = "dctcp"', 'protocol = "pdq"')


def test_pdq_runs_through_the_api_and_finishes_every_flow() -> None:
    s = dcnsim.run(PDQ).summary()
    assert s["flows_total"] == 50
    assert s["flows_finished"] == 50
    # A flow never beats the ideal FCT of an idle path.
    assert s["slowdown_p50"] >= 0.99


def test_validate_shows_the_switch_side() -> None:
    sc = dcnsim.validate(PDQ)
    assert sc["transport"]["protocol"] == "pdq"
    assert sc["derived"]["pdq"] is True
    assert "pdq" not in dcnsim.validate(TINY_SCENARIO)["derived"]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('protocol = "pdq"\nkappa = 0', "transport.kappa"),
        ('protocol = "pdq"\nk = -1.0', "transport.k"),
        ('protocol = "pdq"\nrto = "0us"', "transport.rto"),
        ('protocol = "pdq"\nprobe = 1', "transport.probe"),
    ],
)
def test_bad_pdq_field_is_named(line: str, field: str) -> None:
    with pytest.raises(ScenarioError) as ei:
        dcnsim.validate(PDQ.replace('protocol = "pdq"', line))
    assert ei.value.field == field


def test_pdq_from_the_command_line(tmp_path: Path, cli: Any) -> None:
    sc = tmp_path / "pdq.toml"
    sc.write_text(PDQ)
    r = cli(["run", str(sc), "--out", "res"], tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "res" / "summary.json").read_text())
    assert s["flows_finished"] == 50
    bad = tmp_path / "bad.toml"
    bad.write_text(PDQ.replace('protocol = "pdq"', 'protocol = "pdq"\nx = -1.0'))
    r = cli(["run", str(bad), "--out", "bad"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: transport.x: "), r.stderr
    assert not (tmp_path / "bad").exists()
