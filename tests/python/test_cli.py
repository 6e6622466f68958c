"""End-to-end through the ``dcnsim`` command line: run, validate, plot, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from dcnsim.results import FLOW_COLUMNS, PORT_COLUMNS

from conftest import TINY_SCENARIO

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_run_writes_all_files(tmp_path: Path, tiny_scenario: Path, cli: Any) -> None:
    r = cli(["run", str(tiny_scenario), "--out", "res"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "flows: 50" in r.stdout
    assert r.stderr == ""  # no progress line when stderr is not a terminal
    out = tmp_path / "res"
    for f in ["flows.parquet", "flows.csv", "ports.csv", "summary.json", "scenario.json"]:
        assert (out / f).is_file(), f
    flows = pq.read_table(out / "flows.parquet")
    assert flows.column_names == FLOW_COLUMNS
    assert flows.num_rows == 50
    assert pacsv.read_csv(out / "flows.csv").column_names == FLOW_COLUMNS
    assert pacsv.read_csv(out / "ports.csv").column_names == PORT_COLUMNS
    s = json.loads((out / "summary.json").read_text())
    assert s["flows_total"] == 50
    assert s["flows_finished"] + s["flows_unfinished"] == 50
    assert s["flows_finished"] > 0
    assert s["slowdown_p50"] >= 0.99
    sc = json.loads((out / "scenario.json").read_text())
    assert sc["name"] == "tiny"
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_run_is_deterministic(tmp_path: Path, tiny_scenario: Path, cli: Any) -> None:
    for d in ["a", "b"]:
        assert cli(["run", str(tiny_scenario), "--out", d, "--quiet"], tmp_path).returncode == 0
    assert (tmp_path / "a/flows.csv").read_bytes() == (tmp_path / "b/flows.csv").read_bytes()


def test_set_override_and_progress_flag(tmp_path: Path, tiny_scenario: Path, cli: Any) -> None:
    r = cli(
        [
            "run",
            str(tiny_scenario),
            "--out",
            "res",
            "--set",
            "transport.protocol=tcp",
            "--progress",
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    sc = json.loads((tmp_path / "res/scenario.json").read_text())
    assert sc["transport"]["protocol"] == "tcp"


def test_validate(tmp_path: Path, tiny_scenario: Path, cli: Any) -> None:
    r = cli(["validate", str(tiny_scenario)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")
    assert "single_switch" in r.stdout
    assert list(tmp_path.iterdir()) == [tiny_scenario]


def test_validate_shows_the_ecn_thresholds_a_protocol_derives(
    tmp_path: Path, tiny_scenario: Path, cli: Any
) -> None:
    # DCTCP with ecn_k = 30 KB: one K for every class.
    r = cli(["validate", str(tiny_scenario)], tmp_path)
    assert "ecn: K per class = 30KB\n" in r.stdout, r.stdout
    # PPT with no thresholds in [network]: PPT Eq. 3 per class. 8 hosts on one 10 Gbps
    # switch, 1 us links: base RTT 4 us + 2 x (1500 + 64) B at 10 Gbps = 6.5024 us, BDP
    # 8,128 B; K = 0.17 x BDP = 1,382 B (HCP, P0-P3) and 0.1 x BDP = 813 B (LCP, P4-P7),
    # the LCP classes marked on the port's occupancy.
    r = cli(
        [
            "validate",
            str(tiny_scenario),
            "--set",
            "transport.protocol=ppt",
            "--set",
            'network={buffer="200KB"}',
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    want = "ecn: K per class = " + ", ".join(["1382B"] * 4 + ["813B"] * 4)
    assert want + "; classes 4, 5, 6, 7 on the port's occupancy" in r.stdout, r.stdout
    # ... and the demotion thresholds PPT derived for the workload (web search: the first
    # three of the PIAS authors' web-search set, 46 / 1084 / 1717 packets of 1460 B).
    assert "transport: thresholds=[67160B, 1582640B, 2506820B]" in r.stdout, r.stdout


BAD_INPUT = [
    ("unknown protocol", 'protocol = "dctcp"', 'protocol = "quic"', "transport.protocol"),
    ("load above 1", "load = 0.4", "load = 1.2", "workload[0].load"),
    ("missing CDF file", 'cdf = "websearch"', 'cdf = "no/such/file.cdf"', "workload[0].cdf"),
    ("unknown field", "seed = 7", "seed = 7\nseeed = 8", "seeed"),
    ("zero rate", 'host_rate = "10Gbps"', 'host_rate = "0Gbps"', "topology.host_rate"),
    ("negative rate", 'host_rate = "10Gbps"', 'host_rate = "-10Gbps"', "topology.host_rate"),
    ("load zero", "load = 0.4", "load = 0.0", "workload[0].load"),
    ("too few hosts", "hosts = 8", "hosts = 1", "topology.hosts"),
    ("cdf not monotone", 'cdf = "websearch"', 'cdf = "decreasing.cdf"', "workload[0].cdf"),
    ("cdf not reaching 1", 'cdf = "short.cdf"', 'cdf = "short.cdf"', "workload[0].cdf"),
    ("flow to missing host", 'pattern = "poisson"', 'pattern = "explicit"', "workload[0].file"),
    ("pause off missing", "seed = 7", "seed = 7\n[[pause]]\nhosts = [1]\n", "pause[0].off"),
    (
        "pause zero off",
        "seed = 7",
        'seed = 7\n[[pause]]\nhosts = [1]\noff = "0us"\n',
        "pause[0].off",
    ),
    (
        "pause missing host",
        "seed = 7",
        'seed = 7\n[[pause]]\nhosts = [8]\noff = "1us"\n',
        "pause[0].hosts",
    ),
    (
        "pause missing flow",
        "seed = 7",
        'seed = 7\n[[pause]]\nflows = [50]\noff = "1us"\n',
        "pause[0].flows",
    ),
    (
        "pause two selectors",
        "seed = 7",
        'seed = 7\n[[pause]]\nflows = [1]\nfraction = 0.5\noff = "1us"\n',
        "pause[0]",
    ),
    (
        "pause fraction",
        "seed = 7",
        'seed = 7\n[[pause]]\nhost_fraction = 2.0\noff = "1us"\n',
        "pause[0].host_fraction",
    ),
]

CDF_FILES = {
    "decreasing.cdf": "1000 0\n2000 0.7\n1500 1\n",
    "short.cdf": "1000 0\n2000 0.5\n3000 0.9\n",
}

EXPLICIT = """\
[[workload]]
pattern = "explicit"
file = "flows.csv"
"""


@pytest.mark.parametrize(("what", "old", "new", "field"), BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_exit_2_and_nothing_written(
    tmp_path: Path, cli: Any, what: str, old: str, new: str, field: str
) -> None:
    text = TINY_SCENARIO.replace(old, new, 1)
    if what == "cdf not reaching 1":
        text = TINY_SCENARIO.replace('cdf = "websearch"', 'cdf = "short.cdf"')
    if what == "flow to missing host":  # host 8 does not exist on an 8-host switch
        text = TINY_SCENARIO.split("[[workload]]")[0] + EXPLICIT
        write(tmp_path, "flows.csv", "src,dst,size,start\n0,1,1000,0\n2,8,5000,3\n")
    assert text != TINY_SCENARIO
    for name, body in CDF_FILES.items():
        write(tmp_path, name, body)
    sc = write(tmp_path, "bad.toml", text)
    inputs = sorted(p.name for p in tmp_path.iterdir())
    for cmd in (["run", str(sc), "--out", "res"], ["validate", str(sc)]):
        r = cli(cmd, tmp_path)
        assert r.returncode == 2, (what, r.stdout, r.stderr)
        assert r.stderr.startswith(f"error: {field}: "), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == inputs  # nothing written


def test_bad_set_and_unreadable_file(tmp_path: Path, tiny_scenario: Path, cli: Any) -> None:
    r = cli(["run", str(tiny_scenario), "--out", "res", "--set", "workload[5].load=0.1"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: --set workload[5].load: ")
    r = cli(["run", str(tiny_scenario), "--out", "res", "--set", "oops"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: --set: ")
    r = cli(["run", "missing.toml", "--out", "res"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: missing.toml: ")
    r = cli(["run", str(tiny_scenario), "--out", "res", "--set", "workload[0].load=-1"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: workload[0].load: ")
    assert not (tmp_path / "res").exists()


def test_plot_run(tmp_path: Path, cli: Any) -> None:
    sc = write(
        tmp_path,
        "s.toml",
        TINY_SCENARIO + '\n[output]\nsample_interval = "20us"\nsample_ports = "all"\n',
    )
    assert cli(["run", str(sc), "--out", "res", "--quiet"], tmp_path).returncode == 0
    assert (tmp_path / "res/queue.parquet").is_file()
    assert (tmp_path / "res/link.parquet").is_file()
    r = cli(["plot", "res", "--out", "png"], tmp_path)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "png").iterdir())
    pngs = ["fct_by_size.png", "fct_cdf.png", "link_util.png", "queue.png"]
    assert names == sorted([*pngs, "dcnsim-manifest.json"])
    for name in pngs:
        assert (tmp_path / "png" / name).read_bytes()[:8] == PNG_MAGIC
    r = cli(["plot", "nowhere"], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: nowhere: ")


def test_repro_runs_only_the_named_variants(tmp_path: Path, cli: Any) -> None:
    repro = Path(__file__).resolve().parents[2] / "repro" / "ppt_fig1_20"
    r = cli(["repro", str(repro), "--reduced", "--variants", "dctcp", "--out", "sub"], tmp_path)
    assert r.returncode == 0, r.stderr
    runs = sorted(p.name for p in (tmp_path / "sub").iterdir() if p.is_dir())
    assert runs == ["variant-dctcp"], runs
    rows = pacsv.read_csv(tmp_path / "sub" / "table.csv").column("variant").to_pylist()
    assert rows == ["dctcp"]
    r = cli(["repro", str(repro), "--variants", "dctcp,nope", "--out", "bad"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("error: --variants: unknown variant 'nope'"), r.stderr
    assert "dctcp, hypothetical, ppt" in r.stderr
    assert not (tmp_path / "bad").exists()
