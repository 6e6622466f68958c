"""PASE's arbitration overhead reaches the result tables: ports.csv `arb_msgs` and the
summary's `arb_msgs_sent` / `arb_msgs_per_s` (docs/results.md)."""

from __future__ import annotations

import pytest

import dcnsim


def scenario(transport: dict) -> dict:
    return {
        "seed": 2,
        "topology": {
            "kind": "three_tier",
            "tors": 4,
            "hosts_per_tor": 4,
            "aggs": 2,
            "cores": 1,
            "host_rate": "1Gbps",
            "tor_rate": "10Gbps",
            "core_rate": "10Gbps",
        },
        "transport": transport,
        "workload": [{"pattern": "left_right", "cdf": "uniform_pase", "load": 0.3, "flows": 60}],
    }


def test_arbitration_messages_are_reported_per_link_and_in_the_summary() -> None:
    pase = dcnsim.run(scenario({"protocol": "pase", "delegation": False}))
    s = pase.summary()
    ports = pase.ports
    kinds = list(zip(ports["node_kind"], ports["peer_kind"], strict=True))
    # Every flow leaves its pod: the aggregation-to-core arbitrators are asked (delegation off).
    agg_core = sum(
        int(m) for m, k in zip(ports["arb_msgs"], kinds, strict=True) if k == ("agg", "core")
    )
    assert agg_core > 0
    assert int(ports["arb_msgs"].sum()) > agg_core
    # Each processed request was sent as a packet; answers and releases add to the sent count.
    assert s["arb_msgs_sent"] > int(ports["arb_msgs"].sum())
    assert s["arb_msgs_per_s"] == pytest.approx(s["arb_msgs_sent"] / (s["sim_end_us"] / 1e6))
    dctcp = dcnsim.run(scenario({"protocol": "dctcp"}))
    assert dctcp.summary()["arb_msgs_sent"] == 0
    assert int(dctcp.ports["arb_msgs"].sum()) == 0
