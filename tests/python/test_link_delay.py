"""``[[link_delay]]`` through the Python front end: a wrong table is refused before anything
runs, naming the field (exit status 2, nothing written); a valid one is echoed in the
normalized scenario and changes the run (a longer delay lengthens the FCTs of the flows
crossing the link), while ``ports.csv``'s delay stays the topology's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dcnsim
from dcnsim import ScenarioError

from conftest import TINY_SCENARIO, run_cli  # single_switch: hosts h0-h7 on switch sw0

GOOD = '\n[[link_delay]]\na = "sw0"\nb = "h3"\nstart = "0us"\ndelay = "50us"\n'


@pytest.mark.parametrize(
    ("table", "field", "said"),
    [
        ('a = "sw9"\nb = "h3"\nstart = "0us"\ndelay = "5us"', "link_delay[0].a", "no node named"),
        ('a = "h2"\nb = "h3"\nstart = "0us"\ndelay = "5us"', "link_delay[0]", "no link joins"),
        ('a = "sw0"\nb = "h3"\nstart = "0us"\ndelay = "-5us"', "link_delay[0].delay", "negative"),
        ('a = "sw0"\nb = "h3"\nstart = "0us"\ndelay = "5s"', "link_delay[0].delay", "1 s"),
        (
            'a = "sw0"\nb = "h3"\nstart = "1ms"\nend = "1ms"\ndelay = "5us"',
            "link_delay[0].end",
            "not after start",
        ),
    ],
)
def test_a_wrong_table_is_refused_by_the_cli_naming_the_field_and_nothing_is_written(
    tmp_path: Path, table: str, field: str, said: str
) -> None:
    (tmp_path / "sc.toml").write_text(TINY_SCENARIO + "\n[[link_delay]]\n" + table + "\n")
    r = run_cli(["run", "sc.toml", "--out", "out"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert field in r.stderr and said in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sc.toml"]


def test_a_longer_delay_to_one_host_lengthens_only_the_flows_it_carries() -> None:
    with pytest.raises(ScenarioError) as e:
        dcnsim.run(TINY_SCENARIO + GOOD.replace('"h3"', '"h8"'))
    assert e.value.field == "link_delay[0].b"
    base = dcnsim.run(TINY_SCENARIO)
    res = dcnsim.run(TINY_SCENARIO + GOOD)
    assert res.scenario["link_delay"][0]["b"] == "h3"
    to3 = np.asarray(base.flows["dst"]) == 3
    from3 = np.asarray(base.flows["src"]) == 3
    assert to3.any() and (~(to3 | from3)).any()
    fct0, fct = np.asarray(base.flows["fct_us"]), np.asarray(res.flows["fct_us"])
    # Both directions of sw0 - h3 are 49 us longer: a flow to h3 needs at least 49 us more
    # (its last packet crosses the link after the change).
    assert (fct[to3] >= fct0[to3] + 49).all()
    assert np.asarray(res.ports["delay_us"]).max() == 1.0
