"""dcnsim: a packet-level datacenter transport simulator.

The simulation runs in a Rust core (``dcnsim._core``); this package loads scenarios, runs them,
computes summary metrics, writes result folders, runs parameter sweeps and plots.

>>> import dcnsim
>>> res = dcnsim.run("scenario.toml")          # doctest: +SKIP
>>> res.summary()["small_p99_fct_us"]          # doctest: +SKIP
>>> res.write("out/run1")                      # doctest: +SKIP
"""

from __future__ import annotations

from dcnsim.api import run, validate
from dcnsim.errors import RunError, ScenarioError
from dcnsim.metrics import percentile, summarize
from dcnsim.results import Results
from dcnsim.scenario import get_field, load_scenario, parse_override, set_field

__version__ = "0.1.0"

__all__ = [
    "Results",
    "RunError",
    "ScenarioError",
    "__version__",
    "get_field",
    "load_scenario",
    "parse_override",
    "percentile",
    "run",
    "set_field",
    "summarize",
    "validate",
]
