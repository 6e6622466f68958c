"""The Python API: :func:`run` and :func:`validate` on top of the ``dcnsim._core`` binding."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from dcnsim.errors import ScenarioError
from dcnsim.results import Results
from dcnsim.scenario import ScenarioLike, parse_text, prepare
from dcnsim.staging import FileSet, collect, restore, restore_message, staged

#: A progress callback receives a dict with ``sim_time_ps``, ``horizon_ps``, ``flows_done``,
#: ``flows_total``, ``events`` and ``wall_s``; returning ``False`` stops the run early.
ProgressFn = Callable[[dict[str, Any]], Any]


def _core() -> Any:
    from dcnsim import _core

    return _core


@contextlib.contextmanager
def _prepared(
    scenario: ScenarioLike, base_dir: str | os.PathLike[str] | None, files: FileSet | None
) -> Iterator[tuple[str, str, str, Callable[[Any], Any]]]:
    """``(text, format, base_dir, fix)`` for the core. Files carried with the scenario
    (``files``), and ``flows.csv`` files given as explicit flow lists, are handed over as
    staged copies (:mod:`dcnsim.staging`); ``fix`` puts the original names back into the
    normalized scenario, and errors out of the block name the original paths."""
    text, fmt, base = prepare(scenario, base_dir)
    doc = None
    if files is None and "explicit" in text:
        try:
            doc = parse_text(text, fmt, "scenario")
        except ScenarioError:  # the core reports it with its own message
            doc = None
        files = collect(doc, base, every=False) if doc is not None else None
    if not files:
        yield text, fmt, base, lambda sc: sc
        return
    if doc is None:
        doc = parse_text(text, fmt, "scenario")
    with staged(doc, files) as (sc, where_of):
        try:
            yield json.dumps(sc), "json", base, lambda n: restore(n, files, where_of)
        except ScenarioError as e:
            e.message = restore_message(e.message, files, where_of)
            e.args = (e.field, e.message)
            raise


def validate(
    scenario: ScenarioLike,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    files: FileSet | None = None,
) -> dict[str, Any]:
    """Validate a scenario and return it normalized (every default filled in).

    ``files`` (see :func:`run`) supplies the files the scenario names.

    Raises:
        dcnsim.ScenarioError: if the scenario is invalid or cannot be read.
    """
    with _prepared(scenario, base_dir, files) as (text, fmt, base, fix):
        return fix(json.loads(_core().validate(text, fmt, base)))


def run(
    scenario: ScenarioLike,
    *,
    progress: ProgressFn | None = None,
    progress_interval: float = 0.25,
    base_dir: str | os.PathLike[str] | None = None,
    files: FileSet | None = None,
) -> Results:
    """Run a scenario and return its :class:`~dcnsim.results.Results`.

    Args:
        scenario: a path to a ``.toml``/``.json`` file, a TOML string, or a dict.
        progress: called about every ``progress_interval`` seconds of wall time (with the
            GIL held) with a progress dict; return ``False`` from it to stop the run early.
        progress_interval: seconds of wall time between progress calls.
        base_dir: folder relative paths in the scenario resolve against (default: the
            scenario file's folder, or the current directory for dicts and strings).
        files: the contents of the files the scenario names, read where it was built
            (:func:`dcnsim.staging.collect`); the run reads these rather than the paths,
            which need not exist here (how a sweep task runs on another machine).

    Raises:
        dcnsim.ScenarioError: if the scenario is invalid or cannot be read.
    """
    with _prepared(scenario, base_dir, files) as (text, fmt, base, fix):
        raw = _core().run(text, fmt, base, progress, progress_interval)
        res = Results.from_core(raw)
        res.scenario = fix(res.scenario)
        return res
