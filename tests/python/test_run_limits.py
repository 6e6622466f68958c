"""A run that cannot finish within ``run.max_live_packets`` ends with a clear error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dcnsim

from conftest import TINY_SCENARIO

# The tiny scenario holds more than one packet alive at its first check (65,536 events),
# so a limit of 1 stops it there.
LIMITED = TINY_SCENARIO + "\n[run]\nmax_live_packets = 1\n"


def test_api_raises_run_error_naming_the_field() -> None:
    with pytest.raises(dcnsim.RunError) as e:
        dcnsim.run(LIMITED)
    assert e.value.field == "run.max_live_packets"
    assert "above the limit of 1" in e.value.message
    # Without the limit the same scenario runs to the end.
    assert len(dcnsim.run(TINY_SCENARIO).flows["id"]) == 50


def test_cli_exits_3_with_one_line_and_writes_nothing(tmp_path: Path, cli: Any) -> None:
    sc = tmp_path / "limited.toml"
    sc.write_text(LIMITED)
    r = cli(["run", str(sc), "--out", "res"], tmp_path)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: run.max_live_packets: "), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "res").exists()
