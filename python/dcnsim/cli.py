"""The ``dcnsim`` command line (see ``docs/cli.md``).

Exit status: 0 on success; 2 for bad input (invalid scenario, unreadable file, bad ``--set``,
malformed sweep file), reported as ``error: <field>: <message>`` on stderr with no result
written; 1 for any other failure; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from dcnsim.errors import RunError, ScenarioError


def _eprint(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _show_progress(args: argparse.Namespace) -> bool:
    if getattr(args, "quiet", False):
        return False
    return bool(getattr(args, "progress", False)) or sys.stderr.isatty()


def _load_with_overrides(path: str, overrides: Sequence[str]) -> tuple[Any, str | None]:
    """The scenario to hand to run/validate: the path itself, or a dict with --set applied."""
    from dcnsim.scenario import load_scenario, parse_override, set_field

    if not overrides:
        return path, None
    sc = load_scenario(path)
    for ov in overrides:
        field, value = parse_override(ov)
        try:
            set_field(sc, field, value)
        except ScenarioError as e:
            raise ScenarioError(f"--set {field}", e.message) from None
    return sc, str(Path(path).resolve().parent)


def print_summary(s: dict[str, Any], out: TextIO = sys.stdout) -> None:
    """Print the short human-readable summary of a run."""
    lines = [
        f"flows: {s['flows_total']:,} ({s['flows_finished']:,} finished, "
        f"{s['flows_unfinished']:,} unfinished)",
        f"FCT (us): avg {_fmt(s['avg_fct_us'])} | small avg {_fmt(s['small_avg_fct_us'])}, "
        f"p99 {_fmt(s['small_p99_fct_us'])} | large avg {_fmt(s['large_avg_fct_us'])}",
        f"slowdown: avg {_fmt(s['slowdown_avg'], 2)}, p50 {_fmt(s['slowdown_p50'], 2)}, "
        f"p99 {_fmt(s['slowdown_p99'], 2)}, p99.9 {_fmt(s['slowdown_p999'], 2)}",
        f"drops {s['drops_total']:,} | retransmitted {s['retx_bytes_total']:,} B | "
        f"timeouts {s['timeouts_total']:,} | transfer efficiency "
        f"{_fmt(s['transfer_efficiency'], 4)}",
        f"sim end {_fmt(s['sim_end_us'] / 1e3, 3)} ms | {s['events']:,} events in "
        f"{_fmt(s['wall_s'], 2)} s ({_fmt(s['events_per_s'] / 1e6, 2)} M events/s)",
    ]
    if s.get("cut_at_limit"):
        lines.append("note: the run stopped at its time limit with work outstanding")
    elif s.get("stop_reason") == "stalled":
        lines.append("note: the run ended with no event left and flows unfinished")
    for line in lines:
        print(line, file=out)


def cmd_run(args: argparse.Namespace) -> int:
    from dcnsim.api import run
    from dcnsim.outdir import check_run_dir

    scenario, base_dir = _load_with_overrides(args.scenario, args.set or [])
    check_run_dir(args.out, overwrite=args.force)  # before simulating
    from dcnsim.progress import RunBar

    bar = RunBar() if _show_progress(args) else None
    try:
        res = run(scenario, progress=bar, base_dir=base_dir)
    finally:
        if bar:
            bar.close()
    out = res.write(args.out, overwrite=args.force)
    if not args.quiet:
        print_summary(res.summary())
        print(f"results in {out}")
    return 0


def _human(key: str, v: Any) -> str:
    """Render a normalized value (base units: ps, bytes, bit/s) readably, by its field name."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if not isinstance(v, (int, float)):
        return str(v)
    if key.endswith("_ps"):
        return f"{v / 1e6:g}us"
    if key.endswith("rate"):
        return f"{v / 1e9:g}Gbps"
    if key.endswith(("delay", "time_limit", "interval", "rto", "timeout")):
        return f"{v / 1e6:g}us"
    if key in ("buffer", "ecn_k", "mtu", "header", "ctrl_size"):
        return f"{v:g}B" if isinstance(v, float) else f"{v}B"
    return str(v)


def _facts(table: dict[str, Any], lists: bool = False) -> str:
    """``k=v`` pairs of a table's scalar fields (and its lists of scalars, with ``lists``)."""

    def show(k: str, v: Any) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(str(x) for x in v) + "]"
        return _human(k, v)

    return ", ".join(
        f"{k}={show(k, v)}"
        for k, v in table.items()
        if v is not None
        and not isinstance(v, dict)
        and (not isinstance(v, list) or (lists and not any(isinstance(x, (dict, list)) for x in v)))
    )


def _ecn_facts(net: Any) -> str:
    """The ECN thresholds the switches use, per class (equal ones once), and the classes
    marked on the port's occupancy: what the protocol derived where [network] was silent."""
    if not isinstance(net, dict) or not net.get("ecn_k_per_queue"):
        return ""
    ks = [k for k in net["ecn_k_per_queue"] if k is not None]
    if not ks:
        return ""
    per = _human("ecn_k", ks[0]) if len(set(ks)) == 1 else ", ".join(_human("ecn_k", k) for k in ks)
    out = f"ecn: K per class = {per}"
    port = net.get("ecn_port_classes") or []
    if net.get("ecn_per_port"):
        out += "; every class on the port's occupancy"
    elif port:
        out += f"; classes {', '.join(map(str, port))} on the port's occupancy"
    return out


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from dcnsim.api import validate

    scenario, base_dir = _load_with_overrides(args.scenario, args.set or [])
    sc = validate(scenario, base_dir=base_dir)
    if args.json:
        print(json.dumps(sc, indent=2))
        return 0
    print("ok")
    facts = []
    for key in ("name", "seed"):
        if key in sc:
            facts.append(f"{key}: {sc[key]}")
    for section in ("derived", "topology", "network"):
        table = sc.get(section)
        if isinstance(table, dict) and table:
            facts.append(f"{section}: {_facts(table)}")
    ecn = _ecn_facts(sc.get("network"))
    if ecn:
        facts.append(ecn)
    transport = sc.get("transport", {})
    if isinstance(transport, dict) and "protocol" in transport:
        facts.append(f"protocol: {transport['protocol']}")
        # The protocol's fields: those the scenario gives and those the protocol derived
        # where it was silent (PIAS/PPT demotion thresholds from the workload).
        rest = {k: v for k, v in transport.items() if k != "protocol"}
        if rest:
            facts.append(f"transport: {_facts(rest, lists=True)}")
    for i, w in enumerate(sc.get("workload", []) or []):
        if isinstance(w, dict):
            facts.append(f"workload[{i}]: {_facts(w)}")
    for f in facts:
        print(f"  {f}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from dcnsim.plot import plot
    from dcnsim.sweep import is_sweep_dir

    d = Path(args.dir)
    if not (d / "summary.json").is_file() and not is_sweep_dir(d):
        raise ScenarioError(args.dir, "not a dcnsim run or sweep result folder")
    files = plot(d, args.out)
    for f in files:
        print(f)
    return 0


def _sweep_log(args: argparse.Namespace, bar: Any = None) -> Any:
    if args.quiet:
        return None
    return bar.write if bar is not None else _eprint


@contextlib.contextmanager
def _sweep_bar(args: argparse.Namespace) -> Iterator[Any]:
    """A bar of finished runs when progress is shown (a terminal, or ``--progress``)."""
    if not _show_progress(args):
        yield None
        return
    from dcnsim.progress import SweepBar

    bar = SweepBar()
    try:
        yield bar
    finally:
        bar.close()


@contextlib.contextmanager
def _executor(args: argparse.Namespace) -> Iterator[Any]:
    """The executor ``--engine``/``--scheduler`` ask for (None: local worker processes). A
    scheduler that cannot be reached is an error (status 2) before anything is written."""
    if args.engine == "local":
        if args.scheduler:
            raise ScenarioError("--scheduler", "needs --engine dask")
        yield None
        return
    from dcnsim.sweep import DaskExecutor

    if not args.scheduler:
        yield DaskExecutor(workers=args.workers or None)
        return
    client = DaskExecutor(address=args.scheduler)._connect()[0]
    try:
        yield DaskExecutor(client)
    finally:
        with contextlib.suppress(Exception):
            client.close()


def cmd_sweep(args: argparse.Namespace) -> int:
    from dcnsim.sweep import run_sweep

    if args.workers is not None and args.workers < 1:
        raise ScenarioError("--workers", "must be at least 1")
    with _executor(args) as ex, _sweep_bar(args) as bar:
        rep = run_sweep(
            args.sweep,
            args.out,
            workers=args.workers,
            force=args.force,
            on_change=_on_change(args),
            log=_sweep_log(args, bar),
            executor=ex,
            progress=bar,
        )
    if not args.quiet:
        print(
            f"sweep: {len(rep.ran)} ran, {len(rep.skipped)} skipped, {len(rep.failed)} failed; "
            f"table in {rep.out_dir / 'sweep_summary.csv'}"
        )
    return _report_failures(rep)


def _on_change(args: argparse.Namespace) -> str:
    return "refuse" if getattr(args, "refuse_changed", False) else "rerun"


def _report_failures(rep: Any) -> int:
    """Print each failed run's message, then one last line naming them all; the status."""
    from dcnsim.sweep import _last_line

    for f in rep.failed:
        _eprint(f"error: run {f.name} failed:\n{f.error.rstrip()}")
    if not rep.failed:
        return 0
    names = "; ".join(f"{f.name} ({_last_line(f.error)})" for f in rep.failed)
    _eprint(f"error: {len(rep.failed)} of {len(rep.runs)} runs failed: {names}")
    return 1


def cmd_repro(args: argparse.Namespace) -> int:
    from dcnsim.repro import run_repro

    if args.workers is not None and args.workers < 1:
        raise ScenarioError("--workers", "must be at least 1")
    folder = Path(args.folder)
    out = args.out or str(Path("repro-out") / (folder.name + ("-reduced" if args.reduced else "")))
    with _executor(args) as ex, _sweep_bar(args) as bar:
        res = run_repro(
            folder,
            out,
            reduced=args.reduced,
            workers=args.workers,
            force=args.force,
            log=_sweep_log(args, bar),
            variants=None if args.variants is None else [v for v in args.variants.split(",") if v],
            on_change=_on_change(args),
            executor=ex,
            progress=bar,
        )
    if not args.quiet:
        print((Path(out) / "table.md").read_text())
        for f in res.files:
            print(f)
    return _report_failures(res.report)


def cmd_export(args: argparse.Namespace) -> int:
    from dcnsim.formats import flows_to_cm, write_hpcc_fct
    from dcnsim.outdir import OutputError, check_writable

    d = Path(args.dir)
    if not (d / "summary.json").is_file():
        raise ScenarioError(args.dir, "not a dcnsim run folder (no summary.json)")
    out = Path(args.out)
    if out.exists() or out.is_symlink():
        raise OutputError(str(out), "exists; dcnsim writes only new files: choose another --out")
    check_writable(out)
    if args.format == "hpcc-fct":
        write_hpcc_fct(d, out)
    elif args.format == "pcap":
        from dcnsim.pcap import export_pcap

        export_pcap(d, out)
    else:
        flows_to_cm(d, out)
    print(out)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from dcnsim.demo import run_demo

    return run_demo(args.out, workers=args.workers, quiet=args.quiet)


def cmd_validate_model(args: argparse.Namespace) -> int:
    from dcnsim.results import atomic_write_bytes
    from dcnsim.validation import REPORT_TITLE, report, run_suite

    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        head = out.read_text(errors="replace")[: len(REPORT_TITLE)]
        if head != REPORT_TITLE:
            print(
                f"error: --out {out}: the file exists and was not written by dcnsim "
                f"validate-model (it does not start with '{REPORT_TITLE}'); choose another path",
                file=sys.stderr,
            )
            return 2
    checks = run_suite(reduced=args.reduced, log=None if args.quiet else print)
    text = report(checks, reduced=args.reduced)
    if out is not None:
        atomic_write_bytes(out, text.encode())
        if not args.quiet:
            print(f"wrote {out}")
    failed = [c for c in checks if c.status == "FAIL"]
    for c in failed:
        print(f"FAIL: {c.group}: {c.name}: {c.ours}", file=sys.stderr)
    return 1 if failed else 0


DOCS = "docs/cli.md in the dcnsim source tree"


def _sub(sub: Any, name: str, help: str, section: str) -> argparse.ArgumentParser:
    """A sub-command whose ``--help`` ends with a pointer to its section of the docs."""
    return sub.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog=f"Details: {DOCS}, section {section}.",
    )


def _add_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="where the runs execute: local worker processes (default), or a Dask cluster "
        "(docs/cluster.md)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: the scheduler of an existing cluster (tcp://HOST:PORT); "
        "without it a local Dask cluster of --workers processes is started",
    )


def build_parser() -> argparse.ArgumentParser:
    from dcnsim import __version__

    p = argparse.ArgumentParser(
        prog="dcnsim",
        description="Packet-level datacenter transport simulator.",
        epilog=f"Run 'dcnsim COMMAND --help' for a command's options; details in {DOCS}.",
    )
    p.add_argument(
        "--version", action="version", version=f"dcnsim {__version__}", help="print the version"
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = _sub(sub, "run", "run one scenario and write its result folder", "'dcnsim run'")
    r.add_argument(
        "scenario",
        metavar="SCENARIO",
        help="scenario file (.toml or .json; fields in docs/scenario.md)",
    )
    r.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="result folder: new, empty, or (with --force) an earlier run folder",
    )
    r.add_argument(
        "--force",
        action="store_true",
        help="replace the files of an earlier run folder DIR (files you added are kept)",
    )
    r.add_argument(
        "--set",
        action="append",
        metavar="FIELD=VALUE",
        help="override a scenario field, e.g. --set workload[0].load=0.3 (repeatable)",
    )
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    r.add_argument(
        "--progress", action="store_true", help="show the progress bar even if not a terminal"
    )
    r.set_defaults(func=cmd_run)

    v = _sub(sub, "validate", "check a scenario and print its key facts", "'dcnsim validate'")
    v.add_argument("scenario", metavar="SCENARIO", help="scenario file (.toml or .json)")
    v.add_argument(
        "--set",
        action="append",
        metavar="FIELD=VALUE",
        help="override a scenario field before checking (repeatable)",
    )
    v.add_argument("--json", action="store_true", help="print the normalized scenario as JSON")
    v.set_defaults(func=cmd_validate)

    pl = _sub(sub, "plot", "plot a run or sweep result folder", "'dcnsim plot'")
    pl.add_argument("dir", metavar="DIR", help="a run folder (dcnsim run) or sweep folder")
    pl.add_argument("--out", metavar="PNGDIR", help="where to write PNGs (default DIR/plots)")
    pl.set_defaults(func=cmd_plot)

    s = _sub(sub, "sweep", "run a parameter sweep", "'dcnsim sweep'")
    s.add_argument("sweep", metavar="SWEEP", help="sweep file (.toml: base, [grid], ...)")
    s.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="sweep folder: new, empty, or an earlier sweep folder to resume",
    )
    s.add_argument(
        "--workers",
        type=int,
        help="parallel runs (default min(cores, runs)); with --engine dask and no "
        "--scheduler, the local cluster's worker processes",
    )
    s.add_argument("--force", action="store_true", help="redo runs that are already complete")
    s.add_argument(
        "--refuse-changed",
        action="store_true",
        help="refuse (list them) rather than rerun finished runs whose scenario changed",
    )
    _add_engine(s)
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")
    s.add_argument(
        "--progress", action="store_true", help="show the progress bar even if not a terminal"
    )
    s.set_defaults(func=cmd_sweep)

    rp = _sub(sub, "repro", "run a paper reproduction folder (repro/NAME)", "'dcnsim repro'")
    rp.add_argument("folder", metavar="FOLDER", help="reproduction folder holding repro.toml")
    rp.add_argument("--out", metavar="DIR", help="output folder (default repro-out/NAME[-reduced])")
    rp.add_argument("--reduced", action="store_true", help="the small variant the tests run")
    rp.add_argument("--workers", type=int, help="parallel runs (default min(cores, runs))")
    rp.add_argument("--force", action="store_true", help="redo runs that are already complete")
    rp.add_argument(
        "--refuse-changed",
        action="store_true",
        help="refuse (list them) rather than rerun finished runs whose scenario changed",
    )
    rp.add_argument(
        "--variants",
        metavar="NAME[,NAME]",
        help="run only these [variants.NAME] (e.g. the rows a change affects)",
    )
    _add_engine(rp)
    rp.add_argument("--quiet", action="store_true", help="print nothing but errors")
    rp.add_argument(
        "--progress", action="store_true", help="show the progress bar even if not a terminal"
    )
    rp.set_defaults(func=cmd_repro)

    ex = _sub(
        sub,
        "export",
        "write a run's flows in another simulator's format, or its packet trace as pcap",
        "'dcnsim export'",
    )
    ex.add_argument("dir", metavar="DIR", help="a run folder (dcnsim run)")
    ex.add_argument(
        "--format",
        required=True,
        choices=("hpcc-fct", "htsim-cm", "pcap"),
        help="hpcc-fct: HPCC's fct.txt (finished flows); htsim-cm: an htsim connection "
        "matrix; pcap: the packet trace (packets.parquet) as a pcap file with nanosecond "
        "timestamps for Wireshark/tshark (docs/formats.md)",
    )
    ex.add_argument("--out", required=True, metavar="FILE", help="the file to write (new)")
    ex.set_defaults(func=cmd_export)

    d = _sub(
        sub,
        "demo",
        "DCTCP vs TCP on a 144-host leaf-spine, web search load 0.5",
        "'dcnsim demo'",
    )
    d.add_argument("--out", default="demo-out", metavar="DIR", help="output folder")
    d.add_argument("--workers", type=int, help="parallel runs (default min(cores, 2))")
    d.add_argument("--quiet", action="store_true", help="print nothing but errors")
    d.set_defaults(func=cmd_demo)

    vm = _sub(
        sub,
        "validate-model",
        "run the validation suite against theory and write its report (docs/validation.md)",
        "'dcnsim validate-model'",
    )
    vm.add_argument(
        "--out", metavar="FILE", help="write the report here (only over an earlier report)"
    )
    vm.add_argument("--reduced", action="store_true", help="the small set the tests run")
    vm.add_argument("--quiet", action="store_true", help="print only failures")
    vm.set_defaults(func=cmd_validate_model)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dcnsim`` script; returns the exit status."""
    from dcnsim.sweep import SweepInterrupted

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except SweepInterrupted as e:
        rep = e.report
        for f in rep.failed:
            _eprint(f"error: run {f.name} failed:\n{f.error.rstrip()}")
        _eprint(
            f"interrupted: {len(rep.finished)} of {len(rep.runs)} runs finished "
            f"({len(rep.ran)} in this invocation, {len(rep.failed)} failed); table of the "
            f"finished runs in {rep.out_dir / 'sweep_summary.csv'}"
        )
        return 130
    except RunError as e:  # a ScenarioError too: caught first
        _eprint(f"error: {e.field}: {e.message}")
        return 3
    except ScenarioError as e:
        _eprint(f"error: {e.field}: {e.message}" if e.field else f"error: {e.message}")
        return 2
    except KeyboardInterrupt:
        _eprint("interrupted")
        return 130
    except BaseException as e:  # includes pyo3's PanicException (a BaseException)
        if isinstance(e, (SystemExit, GeneratorExit)):
            raise
        if os.environ.get("DCNSIM_DEBUG"):
            traceback.print_exc()
        _eprint(f"error: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
