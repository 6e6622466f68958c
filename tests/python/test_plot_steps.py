"""Queue plots as steps over the sampled intervals; series grouped by one sort."""

from __future__ import annotations

import numpy as np

from dcnsim.plot import _port_labels, _sample_interval_us, _series, _steps


def test_an_absent_sample_is_an_empty_queue_not_a_ramp() -> None:
    # samples every 2 us; the queue was empty at 6..12 us (no rows there)
    t = np.array([2.0, 4.0, 14.0, 16.0])
    v = np.array([5.0, 7.0, 3.0, 1.0])
    ts, vs = _steps(t, v, 2.0)
    assert list(ts) == [2.0, 4.0, 6.0, 14.0, 16.0, 18.0]
    assert list(vs) == [5.0, 7.0, 0.0, 3.0, 1.0, 0.0]


def test_series_are_grouped_and_time_ordered() -> None:
    port = np.array([3, 1, 3, 1, 3], dtype=np.uint32)
    prio = np.array([0, 0, 1, 0, 0], dtype=np.uint8)
    t = np.array([4.0, 2.0, 2.0, 1.0, 2.0])
    v = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    s = _series(port, prio, t, v)
    assert sorted(s) == [(1, 0), (3, 0), (3, 1)]
    assert list(s[(1, 0)][0]) == [1.0, 2.0] and list(s[(1, 0)][1]) == [40.0, 20.0]
    assert list(s[(3, 0)][0]) == [2.0, 4.0] and list(s[(3, 0)][1]) == [50.0, 10.0]
    assert _series(port[:0], prio[:0], t[:0], v[:0]) == {}


def test_interval_and_port_names() -> None:
    assert _sample_interval_us({"output": {"sample_interval": 2_000_000}}, np.zeros(0)) == 2.0
    assert _sample_interval_us({}, np.array([5.0, 1.0, 3.0, 3.0])) == 2.0
    ports = {
        "id": np.array([0, 1]),
        "node": np.array([0, 8]),
        "peer": np.array([8, 0]),
        "node_kind": np.array(["host", "switch"], dtype=object),
        "peer_kind": np.array(["switch", "host"], dtype=object),
    }
    assert _port_labels(ports) == {
        0: "port 0 (host 0 -> switch 8)",
        1: "port 1 (switch 8 -> host 0)",
    }
