"""The Python API: :func:`run` and :func:`validate` on top of the ``dcnsim._core`` binding."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from dcnsim.results import Results
from dcnsim.scenario import ScenarioLike, prepare

#: A progress callback receives a dict with ``sim_time_ps``, ``horizon_ps``, ``flows_done``,
#: ``flows_total``, ``events`` and ``wall_s``; returning ``False`` stops the run early.
ProgressFn = Callable[[dict[str, Any]], Any]


def _core() -> Any:
    from dcnsim import _core

    return _core


def validate(
    scenario: ScenarioLike, *, base_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Validate a scenario and return it normalized (every default filled in).

    Raises:
        dcnsim.ScenarioError: if the scenario is invalid or cannot be read.
    """
    text, fmt, base = prepare(scenario, base_dir)
    return json.loads(_core().validate(text, fmt, base))


def run(
    scenario: ScenarioLike,
    *,
    progress: ProgressFn | None = None,
    progress_interval: float = 0.25,
    base_dir: str | os.PathLike[str] | None = None,
) -> Results:
    """Run a scenario and return its :class:`~dcnsim.results.Results`.

    Args:
        scenario: a path to a ``.toml``/``.json`` file, a TOML string, or a dict.
        progress: called about every ``progress_interval`` seconds of wall time (with the
            GIL held) with a progress dict; return ``False`` from it to stop the run early.
        progress_interval: seconds of wall time between progress calls.
        base_dir: folder relative paths in the scenario resolve against (default: the
            scenario file's folder, or the current directory for dicts and strings).

    Raises:
        dcnsim.ScenarioError: if the scenario is invalid or cannot be read.
    """
    text, fmt, base = prepare(scenario, base_dir)
    raw = _core().run(text, fmt, base, progress, progress_interval)
    return Results.from_core(raw)
