"""Never lose a user's data: output folders, honest resumes, isolated failures, signals.

Each test reproduces one way dcnsim used to lose or misreport data (a user's folder emptied
by ``--out``, a resumed sweep serving stale results, one crashing run taking a sweep down,
orphaned workers, leftover temporaries) and checks the documented guarantee instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pytest

import dcnsim.outdir as outdir
from dcnsim import Results, ScenarioError
from dcnsim.outdir import MANIFEST, OutputError
from dcnsim.sweep import SerialExecutor, is_complete, run_sweep

from conftest import TINY_SCENARIO, synthetic_core_output

LINUX = sys.platform.startswith("linux")


def make(sampled: bool = True, name: str = "synthetic") -> Results:
    raw = synthetic_core_output(
        size=[1000, 200000], fct_us=[10, None], ideal_us=[5, 50], sent=[1, 2]
    )
    if not sampled:
        raw["link_samples"] = {k: v[:0] for k, v in raw["link_samples"].items()}
    raw["scenario_json"] = json.dumps({"name": name})
    return Results.from_core(raw)


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` (relative path -> contents)."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def user_folder(d: Path) -> dict[str, bytes]:
    (d / "docs").mkdir(parents=True)
    (d / "thesis.tex").write_text("chapter one")
    (d / "docs" / "notes.txt").write_text("keep me")
    return snapshot(d)


# -- output folders: run ---------------------------------------------------------------------


def test_run_refuses_a_folder_it_did_not_write(
    tmp_path: Path, tiny_scenario: Path, cli: Any
) -> None:
    mine = tmp_path / "mine"
    before = user_folder(mine)
    r = cli(["run", str(tiny_scenario), "--out", "mine"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert str(mine) in r.stderr and "not a dcnsim run folder" in r.stderr
    assert "flows:" not in r.stdout  # refused before simulating
    assert snapshot(mine) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "tiny.toml"]  # no temporary

    # --out . from inside a folder with the user's files
    r = cli(["run", str(tiny_scenario), "--out", "."], mine)
    assert r.returncode == 2 and "not a dcnsim run folder" in r.stderr, r.stderr
    assert snapshot(mine) == before
    r = cli(["run", str(tiny_scenario), "--out", ".", "--force"], mine)  # --force is no way in
    assert r.returncode == 2, r.stderr
    assert snapshot(mine) == before


def test_run_output_problems_are_exit_2_before_simulating(
    tmp_path: Path, tiny_scenario: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import dcnsim.api
    from dcnsim.cli import main

    def no_simulation(*a: object, **k: object) -> None:
        raise AssertionError("simulated although the output was refused")

    monkeypatch.setattr(dcnsim.api, "run", no_simulation)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "data.csv").write_text("1,2")
    cases = {
        str(tmp_path / "afile"): "exists and is not a folder",
        str(tmp_path / "afile" / "res"): "is a file, not a folder",
        str(tmp_path / "full"): "not a dcnsim run folder",
    }
    for out, why in cases.items():
        assert main(["run", str(tiny_scenario), "--out", out, "--quiet"]) == 2, out
        err = capsys.readouterr().err
        assert err.startswith(f"error: {out}: ") and why in err, err
    assert (tmp_path / "afile").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "full", "tiny.toml"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_parent_is_exit_2(tmp_path: Path, tiny_scenario: Path, cli: Any) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = cli(["run", str(tiny_scenario), "--out", "ro/res"], tmp_path)
        assert r.returncode == 2 and "no write permission" in r.stderr, r.stderr
    finally:
        ro.chmod(0o755)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_place_nobody_can_write_is_exit_2_even_for_root(
    tmp_path: Path, tiny_scenario: Path, cli: Any
) -> None:
    # /proc takes no new entries, whatever the permission bits say (root passes access())
    r = cli(["run", str(tiny_scenario), "--out", "/proc/dcnsim-out/res"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: /proc/dcnsim-out/res: cannot write in /proc ("), r.stderr
    assert "flows:" not in r.stdout


def test_rerun_needs_force_and_keeps_what_the_user_added(
    tmp_path: Path, tiny_scenario: Path, cli: Any
) -> None:
    sampled = ["--set", "output.sample_interval=50us"]
    r = cli(["run", str(tiny_scenario), "--out", "res", "--quiet", *sampled], tmp_path)
    assert r.returncode == 0, r.stderr
    res = tmp_path / "res"
    assert (res / "link.parquet").is_file()
    m = outdir.read_manifest(res)
    assert m is not None and m["state"] == "complete" and "link.parquet" in m["files"]
    assert m["fingerprint"] == outdir.fingerprint(json.loads((res / "scenario.json").read_text()))
    assert cli(["plot", "res"], tmp_path).returncode == 0
    assert cli(["plot", "res"], tmp_path).returncode == 0  # its own plots: replaced
    (res / "plots" / MANIFEST).unlink()  # an older dcnsim's plots (only its PNGs): replaced
    assert cli(["plot", "res"], tmp_path).returncode == 0
    m = outdir.read_manifest(res / "plots")
    assert m is not None and "fct_cdf.png" in m["files"]
    before = user_folder(tmp_path / "mine")
    r = cli(["plot", "res", "--out", "mine"], tmp_path)  # the user's folder: refused
    assert r.returncode == 2 and "not a dcnsim plots folder" in r.stderr, r.stderr
    assert snapshot(tmp_path / "mine") == before
    (res / "notes.md").write_text("my notes")
    plots = snapshot(res / "plots")
    assert plots

    r = cli(["run", str(tiny_scenario), "--out", "res", "--quiet"], tmp_path)
    assert r.returncode == 2 and "--force" in r.stderr, r.stderr

    r = cli(["run", str(tiny_scenario), "--out", "res", "--quiet", "--force"], tmp_path)
    assert r.returncode == 0, r.stderr
    # files of the old run the new one does not write are gone; the user's files are not
    assert not (res / "link.parquet").exists() and not (res / "queue.parquet").exists()
    assert (res / "notes.md").read_text() == "my notes"
    assert snapshot(res / "plots") == plots
    m = outdir.read_manifest(res)
    assert m is not None and "link.parquet" not in m["files"]
    assert sorted(p.name for p in res.iterdir()) == sorted(
        [*m["files"], MANIFEST, "notes.md", "plots"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "res", "tiny.toml"]


def test_write_api_refuses_foreign_and_earlier_folders(tmp_path: Path) -> None:
    before = user_folder(tmp_path / "mine")
    with pytest.raises(OutputError, match="not a dcnsim run folder"):
        make().write(tmp_path / "mine")
    with pytest.raises(ScenarioError):  # OutputError is bad input, like a bad scenario
        make().write(tmp_path / "mine", overwrite=True)
    assert snapshot(tmp_path / "mine") == before
    (tmp_path / "empty").mkdir()
    out = make().write(tmp_path / "empty")  # an empty folder is fine
    assert is_complete(out)
    with pytest.raises(OutputError, match="overwrite=True"):
        make().write(out)
    make(name="second").write(out, overwrite=True)
    assert json.loads((out / "scenario.json").read_text()) == {"name": "second"}


def test_a_write_killed_at_any_step_leaves_old_partial_or_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail the n-th step of a replacement (a rename into the folder or the removal of an
    old file), for every n: the folder is the complete old run, a partial run dcnsim
    recognises (and replaces next time), or the complete new run; the user's file survives;
    the next write completes."""
    real_replace, real_unlink = Path.replace, Path.unlink
    n = 0
    while True:
        d = tmp_path / f"case{n}"
        old = make(sampled=True, name="old").write(d)
        (old / "mine.txt").write_text("user")
        old_files = snapshot(old)
        calls = {"n": 0}

        def step(
            real: Any, target: Any, calls: dict[str, int] = calls, n: int = n, d: Path = d
        ) -> Any:
            def f(self: Path, *a: Any, **k: Any) -> Any:
                if target(self, *a).parent == d and ".tmp-" not in target(self, *a).name:
                    calls["n"] += 1
                    if calls["n"] > n:
                        raise OSError("killed (simulated)")
                return real(self, *a, **k)

            return f

        monkeypatch.setattr(Path, "replace", step(real_replace, lambda s, dst: Path(dst)))
        monkeypatch.setattr(Path, "unlink", step(real_unlink, lambda s: s))
        try:
            make(sampled=False, name="new").write(d, overwrite=True)
            finished = True
        except OSError:
            finished = False
        monkeypatch.undo()
        assert (d / "mine.txt").read_text() == "user"
        m = outdir.read_manifest(d)
        assert m is not None  # always recognisable as dcnsim's
        name = (
            json.loads((d / "scenario.json").read_text())["name"]
            if m["state"] == "complete"
            else None
        )
        if m["state"] == "complete":
            assert name in ("old", "new")
            if name == "old":
                assert snapshot(d) == old_files
            else:
                assert not (d / "link.parquet").exists()
        with pytest.raises(OutputError):
            outdir.check_run_dir(d, overwrite=False)
        make(sampled=False, name="again").write(d, overwrite=True)
        assert is_complete(d) and (d / "mine.txt").read_text() == "user"
        assert [p.name for p in d.iterdir() if "tmp" in p.name] == []
        if finished:
            break
        n += 1
    assert n >= 8  # every rename and unlink of the replacement was a failure point once


def test_stale_temporaries_of_dead_processes_are_cleaned(
    tmp_path: Path, tiny_scenario: Path, cli: Any
) -> None:
    # a dcnsim process really killed while writing its temporary folder
    code = (
        "import os, signal\nfrom pathlib import Path\nfrom dcnsim import outdir\n"
        "t = outdir.start_run_dir(Path('res').absolute())\n(t / 'flows.csv').write_text('x')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=False)
    assert p.returncode == -signal.SIGKILL
    killed = [e.name for e in tmp_path.iterdir() if e.name.startswith("res.tmp-")]
    assert len(killed) == 1
    host = outdir.host_tag()
    alive = tmp_path / f"res.tmp-{host}-{os.getpid()}"  # a live writer's: left alone
    alive.mkdir()
    (alive / MANIFEST).write_text(json.dumps(outdir.manifest([], "partial", "")))
    users = tmp_path / f"res.tmp-{host}-{dead_pid()}"  # no manifest, not empty: not ours
    users.mkdir()
    (users / "data.txt").write_text("mine")
    other = tmp_path / f"other.tmp-{host}-{dead_pid()}"  # another target's: left alone
    other.mkdir()

    r = cli(["run", str(tiny_scenario), "--out", "res", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / killed[0]).exists()
    assert alive.is_dir() and (users / "data.txt").read_text() == "mine" and other.is_dir()


# -- output folders: sweep and repro ---------------------------------------------------------

SWEEP = """\
base = "base.toml"
[grid]
"transport.protocol" = ["dctcp", "tcp"]
seed = [1, 2]
[sweep]
workers = 2
"""
RUNS = [
    "protocol-dctcp_seed-1",
    "protocol-dctcp_seed-2",
    "protocol-tcp_seed-1",
    "protocol-tcp_seed-2",
]


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "base.toml").write_text(TINY_SCENARIO)
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p


def test_sweep_and_repro_refuse_foreign_folders(tmp_path: Path, sweep_file: Path, cli: Any) -> None:
    before = user_folder(tmp_path / "mine")
    r = cli(["sweep", "sweep.toml", "--out", "mine"], tmp_path)
    assert r.returncode == 2 and "not a dcnsim sweep folder" in r.stderr, r.stderr
    repro = Path(__file__).resolve().parents[2] / "repro" / "ppt_fig12_13"
    r = cli(["repro", str(repro), "--reduced", "--out", "mine"], tmp_path)
    assert r.returncode == 2 and "not a dcnsim sweep folder" in r.stderr, r.stderr
    assert snapshot(tmp_path / "mine") == before

    run = make().write(tmp_path / "arun")
    r = cli(["sweep", "sweep.toml", "--out", "arun"], tmp_path)
    assert r.returncode == 2 and "run folder, not a sweep" in r.stderr, r.stderr

    # a folder in the sweep's place for a run that is not dcnsim's: refused up front
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "sweep.json").write_text("{}")
    user_folder(tmp_path / "sw" / RUNS[1])
    before = snapshot(tmp_path / "sw")
    r = cli(["sweep", "sweep.toml", "--out", "sw"], tmp_path)
    assert r.returncode == 2 and RUNS[1] in r.stderr, r.stderr
    assert snapshot(tmp_path / "sw") == before
    assert is_complete(run)


def test_resume_reruns_runs_whose_scenario_changed(tmp_path: Path, sweep_file: Path) -> None:
    logs: list[str] = []
    out = tmp_path / "sw"
    rep = run_sweep(sweep_file, out, executor=SerialExecutor())
    assert rep.ran == RUNS

    def stamps() -> dict[str, int]:
        return {r: (out / r / "summary.json").stat().st_mtime_ns for r in RUNS}

    first = stamps()
    # a field every run overrides (seed) changes nothing that is simulated: all skipped
    base = tmp_path / "base.toml"
    base.write_text(TINY_SCENARIO.replace("seed = 7", "seed = 9"))
    rep = run_sweep(sweep_file, out, executor=SerialExecutor())
    assert rep.skipped == RUNS and not rep.changed and stamps() == first

    # the base scenario edited: every run is stale; refused on request, rerun by default
    base.write_text(TINY_SCENARIO.replace('ecn_k = "30KB"', 'ecn_k = "60KB"'))
    with pytest.raises(OutputError) as e:
        run_sweep(sweep_file, out, executor=SerialExecutor(), on_change="refuse")
    assert all(r in e.value.message for r in RUNS)
    assert stamps() == first
    rep = run_sweep(sweep_file, out, executor=SerialExecutor(), log=logs.append)
    assert rep.changed == RUNS and rep.ran == RUNS
    assert any("4 finished runs changed" in m for m in logs), logs
    for r in RUNS:
        assert json.loads((out / r / "scenario.json").read_text())["network"]["ecn_k"] == "60KB"

    # the sweep file edited without changing what is simulated: nothing is rerun
    sweep_file.write_text(SWEEP + '[set]\n"workload[0].load" = 0.4\n')  # the base's value
    rep = run_sweep(sweep_file, out, executor=SerialExecutor())
    assert rep.skipped == RUNS and not rep.changed


def test_run_folders_of_an_older_dcnsim_are_adopted_not_refused(
    tmp_path: Path, sweep_file: Path
) -> None:
    out = tmp_path / "sw"
    run_sweep(sweep_file, out, executor=SerialExecutor())
    for r in RUNS:  # as a dcnsim without manifests left them, one with plots
        (out / r / MANIFEST).unlink()
    (out / RUNS[0] / "plots").mkdir()
    (out / RUNS[0] / "plots" / "fct_cdf.png").write_bytes(b"png")
    before = snapshot(out / RUNS[0])
    rep = run_sweep(sweep_file, out, executor=SerialExecutor())
    assert rep.skipped == RUNS and not rep.changed  # same scenarios: nothing rerun
    m = outdir.read_manifest(out / RUNS[0])
    assert m is not None and set(m["files"]) == {k for k in before if "/" not in k}
    assert set(m["files"]) <= outdir.LEGACY_RUN_FILES and "summary.json" in m["files"]
    assert {k: v for k, v in snapshot(out / RUNS[0]).items() if k != MANIFEST} == before

    for r in RUNS:
        (out / r / MANIFEST).unlink()
    (out / RUNS[1] / "notes.txt").write_text("not a result file")  # then it is not adopted
    with pytest.raises(OutputError, match=RUNS[1]):
        run_sweep(sweep_file, out, executor=SerialExecutor())
    assert all(outdir.read_manifest(out / r) is None for r in RUNS)  # refused: nothing written
    (out / RUNS[1] / "notes.txt").unlink()
    (tmp_path / "base.toml").write_text(TINY_SCENARIO.replace('ecn_k = "30KB"', 'ecn_k = "60KB"'))
    rep = run_sweep(sweep_file, out, executor=SerialExecutor())
    assert rep.changed == RUNS and rep.ran == RUNS
    assert (out / RUNS[0] / "plots" / "fct_cdf.png").read_bytes() == b"png"

    (out / RUNS[0] / MANIFEST).unlink()
    with pytest.raises(OutputError, match="overwrite=True"):
        make().write(out / RUNS[0])
    make().write(out / RUNS[0], overwrite=True)
    assert (out / RUNS[0] / "plots" / "fct_cdf.png").read_bytes() == b"png"
    assert json.loads((out / RUNS[0] / "scenario.json").read_text()) == {"name": "synthetic"}


def test_resume_changed_cli(tmp_path: Path, sweep_file: Path, cli: Any) -> None:
    sweep_file.write_text(
        'base = "base.toml"\n[grid]\nseed = [1, 2]\n[variants.a]\n"network.ecn_k" = "30KB"\n'
        '[variants.b]\n"network.ecn_k" = "40KB"\n'
    )
    assert cli(["sweep", "sweep.toml", "--out", "sw", "--workers", "1"], tmp_path).returncode == 0
    sweep_file.write_text(sweep_file.read_text().replace("40KB", "50KB"))  # variant b edited
    r = cli(["sweep", "sweep.toml", "--out", "sw", "--refuse-changed"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "variant-b_seed-1, variant-b_seed-2" in r.stderr and "variant-a" not in r.stderr
    r = cli(["sweep", "sweep.toml", "--out", "sw", "--workers", "1"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "2 ran, 2 skipped" in r.stdout
    assert "changed since written" in r.stderr and "variant-b_seed-1" in r.stderr


# -- failures and signals ---------------------------------------------------------------------


def test_a_crashing_run_does_not_take_the_sweep_down(
    tmp_path: Path, sweep_file: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DCNSIM_TEST_CRASH", f"{RUNS[1]}=abort,{RUNS[2]}=kill,{RUNS[3]}=raise")
    r = cli(["sweep", "sweep.toml", "--out", "sw"], tmp_path)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: 3 of 4 runs failed: ")
    assert all(n in last for n in RUNS[1:]) and RUNS[0] not in last
    rows = pacsv.read_csv(tmp_path / "sw" / "sweep_summary.csv").to_pylist()
    assert [row["run"] for row in rows] == RUNS
    assert [row["status"] for row in rows] == ["ok", "failed", "failed", "failed"]
    assert rows[0]["flows_total"] == 50 and rows[1]["flows_total"] is None
    assert "SIGABRT" in rows[1]["error"] and "SIGKILL" in rows[2]["error"]
    assert "RuntimeError: test hook" in rows[3]["error"]
    assert is_complete(tmp_path / "sw" / RUNS[0])
    assert not any((tmp_path / "sw" / n).exists() for n in RUNS[1:])

    monkeypatch.delenv("DCNSIM_TEST_CRASH")
    r = cli(["sweep", "sweep.toml", "--out", "sw"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "3 ran, 1 skipped, 0 failed" in r.stdout
    rows = pacsv.read_csv(tmp_path / "sw" / "sweep_summary.csv").to_pylist()
    assert [row["status"] for row in rows] == ["ok"] * 4


def _children(pid: int) -> list[int]:
    out = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        out += [int(x) for x in (t / "children").read_text().split()]
    return out


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _workers(pid: int, n: int, timeout: float = 60) -> list[int]:
    """Wait until process ``pid`` has ``n`` worker children; their pids."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = [
            c for c in _children(pid) if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()
        ]
        if len(kids) >= n:
            return kids
        time.sleep(0.1)
    raise AssertionError(f"no {n} workers appeared")


def _long_sweep(tmp_path: Path, flows: str) -> None:
    (tmp_path / "base.toml").write_text(TINY_SCENARIO)
    (tmp_path / "sweep.toml").write_text(
        f'base = "base.toml"\n[grid]\n"workload[0].flows" = {flows}\nseed = [1, 2]\n'
        "[sweep]\nworkers = 2\n"
    )


def _start(tmp_path: Path, pipes: bool = True) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "DCNSIM_TEST_CRASH"}
    return subprocess.Popen(
        [sys.executable, "-m", "dcnsim", "sweep", "sweep.toml", "--out", "sw"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE if pipes else subprocess.DEVNULL,
        stderr=subprocess.PIPE if pipes else subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        # A shell without job control starts background commands with SIGINT ignored, and
        # an ignored signal stays ignored across exec: give the sweep the default disposition
        # (Python's KeyboardInterrupt), as a terminal would, whatever started pytest.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_workers_die_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    _long_sweep(tmp_path, "[20000]")  # each run takes well over 10 s
    p = _start(tmp_path, pipes=False)  # (a pipe would wait for orphans to close it)
    try:
        workers = _workers(p.pid, 2)
        time.sleep(1.0)  # into the simulation
        assert not any(_gone(w) for w in workers)
    finally:
        p.kill()
        p.wait()
    end = time.monotonic() + 5
    while time.monotonic() < end and not all(_gone(w) for w in workers):
        time.sleep(0.05)
    try:
        assert all(_gone(w) for w in workers), "workers outlived their parent"
    finally:
        for w in workers:  # never leave an orphan behind, even when the test fails
            if not _gone(w):
                os.kill(w, signal.SIGKILL)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_sigint_stops_promptly_and_reports_every_finished_run(tmp_path: Path) -> None:
    _long_sweep(tmp_path, "[50, 20000]")  # two tiny runs first, then two long ones
    p = _start(tmp_path)
    out = tmp_path / "sw"
    try:
        end = time.monotonic() + 60
        tiny = [out / "flows-50_seed-1", out / "flows-50_seed-2"]
        while time.monotonic() < end and not all(is_complete(d) for d in tiny):
            time.sleep(0.1)
        workers = _workers(p.pid, 2)
        time.sleep(1.0)  # the long runs are under way
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, stderr = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, stderr
    assert took < 5, took  # a long run alone needs well over 10 s
    assert stderr.strip().splitlines()[-1].startswith("interrupted: 2 of 4 runs finished"), stderr
    rows = pacsv.read_csv(out / "sweep_summary.csv").to_pylist()
    assert [r["run"] for r in rows] == ["flows-50_seed-1", "flows-50_seed-2"]
    assert all(_gone(w) for w in workers)
    assert sorted(e.name for e in out.iterdir()) == [
        "flows-50_seed-1",
        "flows-50_seed-2",
        "sweep.json",
        "sweep_summary.csv",
        "sweep_summary.parquet",
    ]


def test_executor_errors_fail_the_unreported_runs(tmp_path: Path, sweep_file: Path) -> None:
    class Broken:
        def map(self, fn, tasks):  # type: ignore[no-untyped-def]
            yield fn(tasks[0])
            raise RuntimeError("the cluster went away")

    rep = run_sweep(sweep_file, tmp_path / "sw", executor=Broken())
    assert rep.ran == RUNS[:1]
    assert [f.name for f in rep.failed] == RUNS[1:]
    assert all("the cluster went away" in f.error for f in rep.failed)
    rows = pacsv.read_csv(tmp_path / "sw" / "sweep_summary.csv").to_pylist()
    assert [r["status"] for r in rows] == ["ok", "failed", "failed", "failed"]
