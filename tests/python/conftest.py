"""Shared fixtures: tiny scenarios, a CLI runner, and a synthetic Results builder."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

#: An 8-host single switch with 50 web-search flows: runs in well under a second.
TINY_SCENARIO = """\
name = "tiny"
seed = 7

[topology]
kind = "single_switch"
hosts = 8
host_rate = "10Gbps"
host_delay = "1us"

[network]
buffer = "200KB"
ecn_k = "30KB"

[transport]
protocol = "dctcp"

[[workload]]
pattern = "poisson"
cdf = "websearch"
load = 0.4
flows = 50
"""


@pytest.fixture
def tiny_scenario(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(TINY_SCENARIO)
    return p


def run_cli(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m dcnsim ARGS`` in ``cwd`` (no TTY, so no progress line)."""
    env = dict(os.environ)
    env.pop("DCNSIM_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "dcnsim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


@pytest.fixture
def cli() -> Any:
    return run_cli


def synthetic_core_output(
    size: Sequence[int],
    fct_us: Sequence[float | None],
    ideal_us: Sequence[float],
    sent: Sequence[int],
    retx: Sequence[int] | None = None,
    timeouts: Sequence[int] | None = None,
    background: Sequence[bool] | None = None,
    drops: dict[str, int] | None = None,
    base_rtt_us: Sequence[float] | None = None,
) -> dict[str, Any]:
    """A dict shaped like ``dcnsim._core.run``'s result (arrays instead of bytes)."""
    n = len(size)
    none = np.iinfo(np.uint64).max
    start = np.arange(n, dtype=np.uint64) * 1_000_000
    fct = np.array([none if f is None else round(f * 1e6) for f in fct_us], dtype=np.uint64)
    finish = np.where(fct == none, none, start + fct).astype(np.uint64)
    return {
        "flows": {
            "id": np.arange(n, dtype=np.uint32),
            "src": np.zeros(n, dtype=np.uint32),
            "dst": np.ones(n, dtype=np.uint32),
            "size": np.asarray(size, dtype=np.uint64),
            "start_ps": start,
            "finish_ps": finish,
            "fct_ps": fct,
            "ideal_fct_ps": np.array([round(x * 1e6) for x in ideal_us], dtype=np.uint64),
            "sent_bytes": np.asarray(sent, dtype=np.uint64),
            "retx_bytes": np.asarray(retx if retx is not None else [0] * n, dtype=np.uint64),
            "timeouts": np.asarray(timeouts if timeouts is not None else [0] * n, dtype=np.uint32),
            "background": np.asarray(background if background else [False] * n, dtype=bool),
            "deadline_ps": np.full(n, none, dtype=np.uint64),
            **(
                {"base_rtt_ps": np.array([round(x * 1e6) for x in base_rtt_us], dtype=np.uint64)}
                if base_rtt_us is not None
                else {}
            ),
        },
        "ports": {
            "id": np.array([0, 1], dtype=np.uint32),
            "node": np.array([0, 8], dtype=np.uint32),
            "peer": np.array([8, 0], dtype=np.uint32),
            "rate_bps": np.array([10**10, 10**10], dtype=np.uint64),
            "delay_ps": np.array([10**6, 10**6], dtype=np.uint64),
            "node_kind": ["host", "switch"],
            "peer_kind": ["switch", "host"],
            "tx_bytes": np.array([1_250_000, 0], dtype=np.uint64),
            "drops": np.array([0, 3], dtype=np.uint64),
        },
        "queue_samples": {
            "t_ps": np.zeros(0, np.uint64),
            "port": np.zeros(0, np.uint32),
            "prio": np.zeros(0, np.uint8),
            "bytes": np.zeros(0, np.uint64),
        },
        "link_samples": {
            "t_ps": np.array([10**6, 2 * 10**6], dtype=np.uint64),
            "port": np.array([1, 1], dtype=np.uint32),
            "tx_bytes": np.array([1000, 500], dtype=np.uint64),
            "utilization": np.array([0.8, 0.4]),
        },
        "counters": {
            "events": 1000,
            "drops": drops or {},
            "sim_end_ps": 10**9,
            "wall_s": 0.5,
            "cut_at_limit": False,
        },
        "scenario_json": '{"name": "synthetic"}',
    }
