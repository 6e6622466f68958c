"""Progress bars for the command line (``tqdm``): one run, and the runs of a sweep.

**A run** (:class:`RunBar`) advances in simulated time towards the run's *horizon*: its
``run.time_limit`` when it has one, else the start of its last flow (what the core reports as
``horizon_ps``). The ETA is tqdm's (wall time per simulated microsecond so far). A run whose
flows are all under way still has to finish them after the horizon; the bar then stays full
(it never shows more than its horizon: the count is clamped, and the description turns to
``draining``) and the postfix tells the simulated time and the flows still to finish, since
no honest ETA exists for that phase. Without a horizon (no flows) the bar only counts.

**A sweep** (:class:`SweepBar`) counts finished runs (ran or failed, starting from those
already complete); its ETA is tqdm's from the runs finished in this invocation. Messages
printed while a bar is shown go through :meth:`SweepBar.write` so they do not break it.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm


def run_state(p: dict[str, Any]) -> tuple[float, float | None, str, str]:
    """``(n, total, description, postfix)`` of a run's bar for progress dict ``p`` (the
    core's: ``sim_time_ps``, ``horizon_ps``, ``flows_done``, ``flows_total``, ``events``,
    ``wall_s``); ``n`` is simulated microseconds, never above ``total``."""
    sim_us = p["sim_time_ps"] / 1e6
    horizon = p.get("horizon_ps") or 0
    wall = p.get("wall_s") or 0.0
    rate = p["events"] / wall / 1e6 if wall > 0 else 0.0
    flows = f"flows {p['flows_done']:,}/{p['flows_total']:,}"
    if not horizon:
        return sim_us, None, "sim us", f"{flows}, {rate:.2f} M ev/s"
    total = horizon / 1e6
    if sim_us <= total:
        return sim_us, total, "sim us", f"{flows}, {rate:.2f} M ev/s"
    left = p["flows_total"] - p["flows_done"]
    return (
        total,
        total,
        "draining",
        f"at {sim_us / 1e3:,.3f} ms, {left:,} flows to finish, {rate:.2f} M ev/s",
    )


_RUN_FORMAT = (
    "{desc}: {percentage:3.0f}%|{bar}| {n:,.0f}/{total:,.0f} [{elapsed}<{remaining}{postfix}]"
)
_DRAIN_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n:,.0f}/{total:,.0f} [{elapsed}{postfix}]"
_COUNT_FORMAT = "{desc}: {n:,.0f} [{elapsed}{postfix}]"


class RunBar:
    """The progress callback of one run (``dcnsim.run(..., progress=RunBar())``)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.bar: Any = None

    def __call__(self, p: dict[str, Any]) -> bool:
        n, total, desc, postfix = run_state(p)
        if self.bar is None:
            self.bar = tqdm(
                total=total,
                desc=desc,
                file=self.stream,
                dynamic_ncols=True,
                leave=False,
                mininterval=0,  # the core calls about every 0.25 s
                bar_format=_RUN_FORMAT if total else _COUNT_FORMAT,
            )
        if total and desc == "draining":
            self.bar.bar_format = _DRAIN_FORMAT
        self.bar.set_description_str(desc, refresh=False)
        self.bar.set_postfix_str(postfix, refresh=False)
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)  # feeds tqdm's rate, hence the ETA
        else:
            self.bar.refresh()
        return True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class SweepBar:
    """Finished runs of a sweep: called by :func:`dcnsim.sweep.run_sweep` as
    ``progress(done, total, outcome)`` (``outcome`` None at the start)."""

    def __init__(self, stream: TextIO | None = None, desc: str = "runs") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.desc = desc
        self.bar: Any = None

    def __call__(self, done: int, total: int, outcome: Any = None) -> None:
        if self.bar is None:
            self.bar = tqdm(
                total=total,
                initial=done,
                file=self.stream,
                dynamic_ncols=True,
                desc=self.desc,
                unit="run",
                leave=True,
            )
            return
        if outcome is not None:
            self.bar.set_postfix_str(f"last: {outcome.name} {outcome.status}", refresh=False)
        self.bar.update(min(done, total) - self.bar.n)

    def write(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(msg, file=self.stream)
        else:
            print(msg, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
