"""Formats of the field: flows.csv read back as a flow list, Arrow tables, HPCC fct.txt and
htsim connection matrices, each checked by a round trip through the simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import dcnsim
from dcnsim import ScenarioError
from dcnsim.formats import (
    cm_to_flow_list,
    flows_to_cm,
    hpcc_ip,
    hpcc_node,
    read_cm,
    read_hpcc_fct,
    write_hpcc_fct,
)
from dcnsim.results import FLOW_COLUMNS
from dcnsim.staging import to_flow_list

from conftest import TINY_SCENARIO

#: The tiny scenario with deadlines, so the deadline column travels too.
WITH_DEADLINES = TINY_SCENARIO + 'deadline = { min = "1ms", max = "5ms" }\n'


def explicit(file: str) -> str:
    """TINY_SCENARIO's network with one explicit workload reading ``file``."""
    head = TINY_SCENARIO.split("[[workload]]")[0]
    return head + f'[[workload]]\npattern = "explicit"\nfile = "{file}"\n'


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dcnsim.Results]:
    d = tmp_path_factory.mktemp("first")
    res = dcnsim.run(WITH_DEADLINES)
    res.write(d / "run")
    return d / "run", res


def same_flows(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    order_a = np.lexsort((a["dst"], a["src"], a["start_us"]))
    order_b = np.lexsort((b["dst"], b["src"], b["start_us"]))
    for c in ("src", "dst", "size_bytes"):
        assert np.array_equal(np.asarray(a[c])[order_a], np.asarray(b[c])[order_b]), c
    ps_a = np.rint(np.asarray(a["start_us"])[order_a] * 1e6)
    ps_b = np.rint(np.asarray(b["start_us"])[order_b] * 1e6)
    assert np.array_equal(ps_a, ps_b)


def test_flows_csv_runs_again_as_an_explicit_flow_list(
    tmp_path: Path, first_run: tuple[Path, dcnsim.Results]
) -> None:
    run_dir, res = first_run
    sc = tmp_path / "again.toml"
    sc.write_text(explicit(str(run_dir / "flows.csv")))
    again = dcnsim.run(sc)
    # the same flows (to the picosecond), the same deadlines, and so the same simulation
    same_flows(res.flows, again.flows)
    assert np.array_equal(
        np.rint(res.flows["deadline_us"] * 1e6), np.rint(again.flows["deadline_us"] * 1e6)
    )
    assert np.isfinite(res.flows["deadline_us"]).all()
    assert np.array_equal(res.flows["fct_us"], again.flows["fct_us"], equal_nan=True)
    # the normalized scenario names the file as given, not the rewritten copy
    w = again.scenario["workload"][0]
    assert w["file"] == str(run_dir / "flows.csv")
    assert w["derived"]["path"] == str(run_dir / "flows.csv") and w["derived"]["flows"] == 50
    assert dcnsim.validate(sc)["workload"][0] == w
    # the run writes flows.csv with the same column names the flow list was read with
    again.write(tmp_path / "again")
    header = (tmp_path / "again" / "flows.csv").read_text().splitlines()[0].split(",")
    assert [h.strip('"') for h in header] == FLOW_COLUMNS


def test_flow_list_rewrite_keeps_line_numbers_and_skips_background_flows() -> None:
    text = (
        b"id,src,dst,size_bytes,start_us,deadline_us,background\n"
        b"0,1,2,1000,0.000001,,false\n"
        b"1,3,4,5000,2.5,100,false\n"
        b"2,5,6,999999,0,,true\n"
    )
    out = to_flow_list(text).decode().splitlines()
    assert out == [
        "src,dst,size,start,deadline",
        "1,2,1000,1ps,",
        "3,4,5000,2500000ps,100000000ps",
        "# background flow: 2,5,6,999999,0,,true",
    ]


def test_a_bad_flows_csv_error_names_the_original_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "flows.csv").write_text(
        "id,src,dst,size_bytes,start_us\n0,0,1,1000,0\n1,0,99,1000,1\n"
    )
    (tmp_path / "s.toml").write_text(explicit("flows.csv"))
    with pytest.raises(ScenarioError) as e:
        dcnsim.validate(tmp_path / "s.toml")
    assert str(tmp_path / "flows.csv") in str(e.value) and "dcnsim-staged" not in str(e.value)
    assert "3" in str(e.value)  # the line of host 99


def test_flows_table_is_arrow_and_matches_the_parquet(
    first_run: tuple[Path, dcnsim.Results],
) -> None:
    import pyarrow.parquet as pq

    run_dir, res = first_run
    t = res.flows_table()
    assert isinstance(t, pa.Table) and t.column_names == FLOW_COLUMNS
    # NaN-aware equality (pyarrow's `equals` takes NaN != NaN; `round_start_us` is NaN outside
    # barrier rounds).
    for other in (
        pq.read_table(run_dir / "flows.parquet"),
        dcnsim.Results.load(run_dir).flows_table(),
    ):
        assert other.schema.equals(t.schema)
        for c in t.column_names:
            np.testing.assert_array_equal(other[c].to_numpy(), t[c].to_numpy(), err_msg=c)
    pd = pytest.importorskip("pandas")
    df = t.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 50
    assert df["size_bytes"].sum() == int(res.flows["size_bytes"].sum())


def test_hpcc_fct_txt_round_trip(tmp_path: Path, first_run: tuple[Path, dcnsim.Results]) -> None:
    run_dir, res = first_run
    p = write_hpcc_fct(run_dir, tmp_path / "fct.txt")
    lines = p.read_text().splitlines()
    f = res.flows
    done = f["finished"] & ~f["background"]
    assert len(lines) == int(done.sum()) > 0
    # every field of a line, recomputed from the flow table
    i = int(np.flatnonzero(done)[0])
    want = (
        f"{hpcc_ip(int(f['src'][i])):08x} {hpcc_ip(int(f['dst'][i])):08x} "
        f"{10000 + int(f['id'][i])} 100 {int(f['size_bytes'][i])} "
        f"{round(f['start_us'][i] * 1e3)} {round(f['fct_us'][i] * 1e3)} "
        f"{round(f['ideal_fct_us'][i] * 1e3)}"
    )
    assert want in lines
    back = read_hpcc_fct(p)
    ids = back["sport"] - 10000
    assert np.array_equal(back["src"], f["src"][ids]) and np.array_equal(back["dst"], f["dst"][ids])
    assert np.array_equal(back["size_bytes"], f["size_bytes"][ids])
    assert np.abs(back["fct_ns"] - f["fct_us"][ids] * 1e3).max() <= 0.5
    finish = back["start_ns"] + back["fct_ns"]
    assert (np.diff(finish) >= -1).all()  # in order of completion (to the rounding)
    assert hpcc_ip(0) == 0x0B000001 and hpcc_ip(257) == 0x0B010101
    assert all(hpcc_node(hpcc_ip(n)) == n for n in (0, 1, 255, 256, 1000))


def test_htsim_cm_round_trip_through_the_simulator(
    tmp_path: Path, first_run: tuple[Path, dcnsim.Results]
) -> None:
    run_dir, res = first_run
    cm = flows_to_cm(run_dir, tmp_path / "flows.cm")
    text = cm.read_text().splitlines()
    assert text[0] == "Nodes 8" and text[1] == "Connections 50"
    assert all("->" in line and " start " in line and " size " in line for line in text[2:])
    back = read_cm(cm)
    assert back["nodes"] == 8 and list(back["id"]) == list(range(1, 51))
    # the matrix runs as an explicit workload and gives the same flows back
    (tmp_path / "s.toml").write_text(explicit("flows.cm"))
    again = dcnsim.run(tmp_path / "s.toml")
    same_flows(res.flows, again.flows)
    assert again.scenario["workload"][0]["file"] == "flows.cm"
    # written again from that run: the same matrix, byte for byte
    assert flows_to_cm(again, tmp_path / "again.cm").read_bytes() == cm.read_bytes()


def test_htsim_cm_reading_follows_the_format_and_refuses_what_dcnsim_lacks() -> None:
    cm = read_cm(
        b"# a comment\nNodes 4\nConnections 2\nTriggers 0\n"
        b"0->3 start 1.5 size 1000\n2->1 id 7 prio 1 size 64 start 0\n"
    )
    assert cm["nodes"] == 4 and list(cm["id"]) == [1, 7]
    assert list(cm["start_ps"]) == [1_500_000, 0] and list(cm["size_bytes"]) == [1000, 64]
    rows = cm_to_flow_list(b"Nodes 4\nConnections 1\n0->3 start 2 size 10\n").decode()
    assert rows.splitlines() == ["src,dst,size,start", "#", "0,3,10,2000000ps"]
    bad = {
        b"Nodes 4\nConnections 1\n0->3 start 0 size 0\n": "line 3: size 0",
        b"Nodes 4\nConnections 2\n0->3 start 0 size 5\n": "'Connections 2' but 1",
        b"Nodes 4\nConnections 1\n0->3 trigger 1 size 5\n": "line 3: 'trigger'",
        b"Nodes 4\nConnections 1\n0->9 start 0 size 5\n": "node 9",
        b"Nodes 4\nConnections 1\n0->3 size 5\n": "no start",
        b"Nodes 4\nConnections 1\n1->1 start 0 size 5\n": "to itself",
    }
    for text, msg in bad.items():
        with pytest.raises(ScenarioError) as e:
            read_cm(text, "x.cm")
        assert msg in str(e.value), (text, str(e.value))


def test_export_command_writes_new_files_only(
    tmp_path: Path, first_run: tuple[Path, dcnsim.Results], cli: Any
) -> None:
    run_dir, res = first_run
    r = cli(["export", str(run_dir), "--format", "hpcc-fct", "--out", "fct.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "fct.txt").read_text().splitlines()) == int(
        (res.flows["finished"] & ~res.flows["background"]).sum()
    )
    r = cli(["export", str(run_dir), "--format", "htsim-cm", "--out", "f.cm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert read_cm(tmp_path / "f.cm")["nodes"] == 8
    (tmp_path / "mine.txt").write_text("keep")
    r = cli(["export", str(run_dir), "--format", "hpcc-fct", "--out", "mine.txt"], tmp_path)
    assert r.returncode == 2 and "exists" in r.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep"
    assert json.loads((run_dir / "summary.json").read_text())["flows_total"] == 50
