"""Scenario helpers: dotted field paths, --set parsing, input forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcnsim import ScenarioError, get_field, load_scenario, parse_override, set_field
from dcnsim.scenario import parse_path, prepare


def base() -> dict:
    return {
        "seed": 1,
        "transport": {"protocol": "dctcp"},
        "workload": [{"load": 0.5, "cdf": "websearch"}, {"load": 0.1}],
    }


def test_parse_path() -> None:
    assert parse_path("workload[0].load") == ["workload", 0, "load"]
    assert parse_path("seed") == ["seed"]
    assert parse_path("a.b[2][3].c") == ["a", "b", 2, 3, "c"]
    for bad in ["", "a..b", "[0]", "a[x]", "a.b[", "a b"]:
        with pytest.raises(ScenarioError):
            parse_path(bad)


def test_set_field_paths() -> None:
    d = base()
    set_field(d, "workload[0].load", 0.3)
    set_field(d, "workload[1].cdf", "datamining")
    set_field(d, "transport.protocol", "tcp")
    set_field(d, "seed", 9)
    set_field(d, "network.buffer", "200KB")  # missing table is created
    assert d["workload"][0]["load"] == 0.3
    assert d["workload"][1]["cdf"] == "datamining"
    assert d["transport"]["protocol"] == "tcp"
    assert d["seed"] == 9
    assert d["network"] == {"buffer": "200KB"}
    assert get_field(d, "workload[1].load") == 0.1


def test_set_field_errors() -> None:
    d = base()
    with pytest.raises(ScenarioError, match="does not exist"):
        set_field(d, "workload[2].load", 0.3)
    with pytest.raises(ScenarioError, match="not a list"):
        set_field(d, "transport[0]", 1)
    with pytest.raises(ScenarioError, match="not a table"):
        set_field(d, "seed.x", 1)
    with pytest.raises(ScenarioError):
        set_field(d, "flows[0].size", 1)  # list that does not exist


def test_parse_override_values() -> None:
    assert parse_override("workload[0].load=0.3") == ("workload[0].load", 0.3)
    assert parse_override("transport.protocol=tcp") == ("transport.protocol", "tcp")
    assert parse_override('name="a b"') == ("name", "a b")
    assert parse_override("topology.host_rate=40Gbps") == ("topology.host_rate", "40Gbps")
    assert parse_override("seed=3") == ("seed", 3)
    assert parse_override("output.audit=true") == ("output.audit", True)
    assert parse_override("x=[1, 2]") == ("x", [1, 2])
    with pytest.raises(ScenarioError):
        parse_override("novalue")
    with pytest.raises(ScenarioError):
        parse_override("=3")


def test_prepare_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "s.toml"
    p.write_text('seed = 2\n[transport]\nprotocol = "tcp"\n')
    text, fmt, base_dir = prepare(p)
    assert fmt == "toml" and base_dir == str(tmp_path.resolve()) and "seed" in text
    text, fmt, base_dir = prepare(str(p))
    assert base_dir == str(tmp_path.resolve())
    monkeypatch.chdir(tmp_path)
    text, fmt, base_dir = prepare({"seed": 3})
    assert fmt == "json" and json.loads(text) == {"seed": 3}
    assert base_dir == str(tmp_path.resolve())
    text, fmt, base_dir = prepare("seed = 4\n")
    assert fmt == "toml" and text == "seed = 4\n"
    j = tmp_path / "s.json"
    j.write_text('{"seed": 5}')
    assert prepare(j)[1] == "json"
    assert load_scenario(p) == {"seed": 2, "transport": {"protocol": "tcp"}}
    with pytest.raises(ScenarioError, match="file not found"):
        prepare(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = = 1")
    with pytest.raises(ScenarioError, match="invalid TOML"):
        load_scenario(bad)


def test_scenario_error_is_value_error() -> None:
    e = ScenarioError("topology.leaves", "must be positive; use 1 or more")
    assert isinstance(e, ValueError)
    assert e.field == "topology.leaves"
    assert e.message == "must be positive; use 1 or more"
    assert str(e) == "topology.leaves: must be positive; use 1 or more"
    import pickle

    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.field, e2.message) == (e.field, e.message)
