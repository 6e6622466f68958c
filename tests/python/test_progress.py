"""Progress bars, ``--version`` and the help of every command-line argument."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path
from typing import Any

import dcnsim
from dcnsim.cli import build_parser
from dcnsim.progress import RunBar, SweepBar, run_state
from dcnsim.sweep import RunOutcome, SerialExecutor, run_sweep

from conftest import TINY_SCENARIO


def progress(sim_us: float, horizon_us: float, done: int = 0, total: int = 10) -> dict[str, Any]:
    return {
        "sim_time_ps": int(sim_us * 1e6),
        "horizon_ps": int(horizon_us * 1e6),
        "flows_done": done,
        "flows_total": total,
        "events": 1000,
        "wall_s": 0.5,
    }


def shown_counts(text: str) -> list[tuple[float, float]]:
    """(n, total) pairs of every bar drawn in ``text``."""
    return [
        (float(a.replace(",", "")), float(b.replace(",", "")))
        for a, b in re.findall(r"\| ([\d,.]+)/([\d,.]+) \[", text)
    ]


def test_run_bar_never_shows_more_than_its_horizon() -> None:
    # the core's horizon is the last flow's start: runs go on past it to finish their flows
    for sim in (0, 400, 1000, 1000.5, 2500, 10**6):
        n, total, desc, post = run_state(progress(sim, 1000, done=3))
        assert total == 1000 and n <= total
        assert n == min(sim, 1000)
        assert (desc == "draining") == (sim > 1000)
        if sim > 1000:
            assert "7 flows to finish" in post and f"{sim / 1e3:,.3f} ms" in post

    out = io.StringIO()
    bar = RunBar(out)
    for sim in (100, 600, 1000, 3000, 9000):
        assert bar(progress(sim, 1000, done=sim // 1000)) is True
    bar.close()
    drawn = shown_counts(out.getvalue())
    assert drawn, out.getvalue()
    assert all(n <= total == 1000 for n, total in drawn)
    assert max(n for n, _ in drawn) == 1000
    percents = [int(x) for x in re.findall(r"(\d+)%", out.getvalue())]
    assert max(percents) == 100 and len(percents) == 6  # drawn at creation and on each call
    assert "draining" in out.getvalue()


def test_run_bar_without_horizon_only_counts() -> None:
    n, total, _, _ = run_state(progress(5, 0))
    assert total is None and n == 5
    out = io.StringIO()
    bar = RunBar(out)
    bar(progress(5, 0))
    bar.close()
    assert "%" not in out.getvalue()


def test_sweep_bar_counts_runs_as_they_finish(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(TINY_SCENARIO)
    (tmp_path / "sweep.toml").write_text('base = "base.toml"\n[grid]\nseed = [1, 2, 3]\n')
    calls: list[tuple[int, int, str | None]] = []

    def record(done: int, total: int, o: RunOutcome | None) -> None:
        calls.append((done, total, None if o is None else o.name))

    run_sweep(tmp_path / "sweep.toml", tmp_path / "o", executor=SerialExecutor(), progress=record)
    assert calls == [(0, 3, None), (1, 3, "seed-1"), (2, 3, "seed-2"), (3, 3, "seed-3")]

    # a resumed sweep starts from the runs already complete
    (tmp_path / "sweep.toml").write_text('base = "base.toml"\n[grid]\nseed = [1, 2, 3, 4]\n')
    calls.clear()
    run_sweep(tmp_path / "sweep.toml", tmp_path / "o", executor=SerialExecutor(), progress=record)
    assert calls == [(3, 4, None), (4, 4, "seed-4")]

    out = io.StringIO()
    bar = SweepBar(out)
    bar(1, 4, None)
    bar.write("a log line")
    bar(2, 4, RunOutcome("x", "ran"))
    bar(4, 4, RunOutcome("y", "failed"))
    bar.close()
    text = out.getvalue()
    assert "a log line" in text and "4/4" in text and "last: y failed" in text


def test_sweep_progress_on_the_command_line(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "base.toml").write_text(TINY_SCENARIO)
    (tmp_path / "sweep.toml").write_text('base = "base.toml"\n[grid]\nseed = [1, 2]\n')
    r = cli(["sweep", "sweep.toml", "--out", "o", "--progress", "--workers", "1"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "2/2" in r.stderr and "[1/2] seed-1" in r.stderr
    r = cli(["run", "base.toml", "--out", "r", "--progress"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert all(n <= total for n, total in shown_counts(r.stderr))


def test_version(cli: Any, tmp_path: Path) -> None:
    r = cli(["--version"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"dcnsim {dcnsim.__version__}"


def _actions(p: argparse.ArgumentParser, where: str = "dcnsim") -> list[tuple[str, Any]]:
    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                out.extend(_actions(sp, f"{where} {name}"))
            out.extend((f"{where} {c.dest}", c) for c in a._choices_actions)
        else:
            out.append((f"{where} {'/'.join(a.option_strings) or a.dest}", a))
    return out


def test_every_argument_has_help_and_every_command_points_to_the_docs() -> None:
    p = build_parser()
    actions = _actions(p)
    assert len(actions) > 40
    missing = [name for name, a in actions if not (a.help or "").strip()]
    assert missing == []
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    for name, sp in sub.choices.items():
        assert "docs/cli.md" in (sp.epilog or ""), name
        assert "docs/cli.md" in sp.format_help().replace("\n", " "), name


def test_repro_progress_on_the_command_line_has_an_eta(tmp_path: Path, cli: Any) -> None:
    repro = Path(__file__).resolve().parents[2] / "repro" / "ppt_fig1_20"
    args = ["repro", str(repro), "--reduced", "--variants", "dctcp", "--out", "o"]
    r = cli([*args, "--progress", "--workers", "1"], tmp_path)
    assert r.returncode == 0, r.stderr
    drawn = shown_counts(r.stderr)
    assert (1.0, 1.0) in drawn and all(n <= total for n, total in drawn)
    assert "[1/1] variant-dctcp" in r.stderr
    # elapsed<remaining: the estimate of the time left
    assert re.search(r"\| 0/1 \[\d\d:\d\d<\?", r.stderr), r.stderr
    assert re.search(r"\| 1/1 \[\d\d:\d\d<\d\d:\d\d", r.stderr), r.stderr
