"""The demo command, on a scaled-down copy of the demo scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dcnsim.demo as demo


def test_demo_scenario_is_valid() -> None:
    import dcnsim

    sc, _ = demo.demo_scenario()
    norm = dcnsim.validate(sc)
    assert norm["topology"]["kind"] == "leaf_spine"
    assert norm["derived"]["hosts"] == 144


def test_demo_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = demo.demo_scenario

    def small() -> tuple[dict[str, Any], Path]:
        sc, base = real()
        sc["topology"].update(leaves=2, hosts_per_leaf=4, spines=2)
        sc["workload"][0]["flows"] = 60
        return sc, base

    monkeypatch.setattr(demo, "demo_scenario", small)
    assert demo.run_demo(tmp_path / "out", workers=1, quiet=False) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["protocol", "flows"]
    assert lines[2].split()[:2] == ["dctcp", "60"]
    assert lines[3].split()[:2] == ["tcp", "60"]
    plots = sorted(p.name for p in (tmp_path / "out" / "plots").iterdir())
    assert plots == ["comparison.png", "dcnsim-manifest.json", "grid.png", "headline.png"]
    assert (tmp_path / "out" / "sweep_summary.csv").is_file()
