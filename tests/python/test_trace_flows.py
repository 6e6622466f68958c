"""``output.trace_flows`` names flows that exist: an id at or above the workload's flow count
is refused before anything runs (exit status 2, nothing written), not silently traced as
nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dcnsim
from dcnsim import ScenarioError

from conftest import TINY_SCENARIO, run_cli  # 50 flows


def test_an_unknown_flow_id_is_refused_by_the_cli_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "sc.toml").write_text(TINY_SCENARIO + "\n[output]\ntrace_flows = [3, 50]\n")
    r = run_cli(["run", "sc.toml", "--out", "out"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "output.trace_flows" in r.stderr
    assert "flow 50 does not exist (the workload has 50 flows)" in r.stderr
    assert "flows - 1" in r.stderr  # the fix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sc.toml"]


def test_the_last_flow_id_is_accepted_and_only_it_is_traced() -> None:
    with pytest.raises(ScenarioError) as e:
        dcnsim.run(TINY_SCENARIO + "\n[output]\ntrace_flows = [50]\n")
    assert e.value.field == "output.trace_flows"
    res = dcnsim.run(TINY_SCENARIO + "\n[output]\ntrace_flows = [49]\n")
    assert len(res.flows["id"]) == 50
    assert res.packets is not None and len(res.packets["flow"]) > 0
    assert set(np.unique(res.packets["flow"]).tolist()) == {49}
