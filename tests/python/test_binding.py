"""The ``dcnsim._core`` binding: column hand-over, progress callback, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dcnsim
from dcnsim import ScenarioError, _core

from conftest import TINY_SCENARIO


def test_columns_are_typed_bytes() -> None:
    raw = _core.run(TINY_SCENARIO, "toml", ".")
    dtype, buf = raw["flows"]["size"]
    assert dtype == "<u8" and isinstance(buf, bytes)
    sizes = np.frombuffer(buf, dtype=dtype)
    assert len(sizes) == 50 and (sizes > 0).all()
    assert raw["flows"]["background"][0] == "|b1"
    assert isinstance(raw["ports"]["node_kind"], list)
    assert isinstance(raw["counters"]["drops"], dict)
    assert raw["counters"]["events"] > 0


def test_validate_returns_normalized_scenario() -> None:
    sc = dcnsim.validate(TINY_SCENARIO)
    assert sc["name"] == "tiny" and sc["seed"] == 7
    assert sc["transport"]["protocol"] == "dctcp"
    assert "network" in sc  # defaults filled in


def test_scenario_error_from_core() -> None:
    with pytest.raises(ScenarioError) as ei:
        dcnsim.validate(TINY_SCENARIO.replace('"dctcp"', '"nosuch"'))
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.field == "transport.protocol"
    assert e.message and not e.message.startswith("transport.protocol")
    with pytest.raises(ScenarioError) as ei:
        dcnsim.run({"seed": 1})
    assert ei.value.field  # the missing section is named


def test_progress_callback_and_early_stop() -> None:
    big = TINY_SCENARIO.replace("flows = 50", "flows = 3000")
    seen: list[dict[str, Any]] = []

    def stop_at_first(p: dict[str, Any]) -> bool:
        seen.append(p)
        return False

    res = dcnsim.run(big, progress=stop_at_first, progress_interval=0.0)
    assert len(seen) == 1
    p = seen[0]
    assert set(p) >= {"sim_time_ps", "horizon_ps", "flows_done", "flows_total", "events"}
    assert p["flows_total"] == 3000
    assert res.summary()["flows_finished"] < 3000

    def boom(p: dict[str, Any]) -> None:
        raise RuntimeError("from callback")

    with pytest.raises(RuntimeError, match="from callback"):
        dcnsim.run(big, progress=boom, progress_interval=0.0)

    calls = []
    full = dcnsim.run(big, progress=lambda p: calls.append(p), progress_interval=0.0)
    assert calls and full.summary()["flows_total"] == 3000


def test_a_run_that_reaches_a_resource_limit_raises_naming_the_field() -> None:
    # A 1 Kbps host link whose sender hands it a huge window: the NIC queue limit ends the
    # run with an error naming the field (and the host), not an abort or a partial result.
    # The hosts of ns-2-style simulators: the default host's per-flow NIC limit would keep the
    # flow's NIC bytes near 1 MB.
    doc = (
        TINY_SCENARIO.replace('host_rate = "10Gbps"', 'host_rate = "1Kbps"').replace(
            'protocol = "dctcp"', 'protocol = "tcp"\ninit_cwnd = 100000'
        )
        + '\n[run]\nnic_queue_limit = "1MB"\n'
        + '\n[host]\nnic_qdisc = "fifo"\ntsq = false\ncwnd_validation = false\n'
    )
    with pytest.raises(dcnsim.RunError) as e:
        dcnsim.run(doc)
    assert isinstance(e.value, ScenarioError)
    assert e.value.field == "run.nic_queue_limit"
    assert "host" in str(e.value)


def test_bare_numbers_and_non_finite_values_name_the_field() -> None:
    with pytest.raises(ScenarioError) as e:
        dcnsim.validate(TINY_SCENARIO + "\n[run]\ntime_limit = 10\n")
    assert e.value.field == "run.time_limit" and "unit" in str(e.value)
    sc = dcnsim.validate(TINY_SCENARIO)
    sc["workload"][0]["load"] = float("nan")
    with pytest.raises(ScenarioError) as e:
        dcnsim.validate(sc)
    assert e.value.field == "workload[0].load" and "NaN" in str(e.value)
