"""Exceptions raised by dcnsim.

`ScenarioError` is the one error class for bad input: a scenario the core rejects (unknown
field, unknown protocol, load out of range, missing CDF file, ...), an unreadable scenario
file, a bad ``--set`` override or a malformed sweep file. The CLI prints it as
``error: <field>: <message>`` and exits with status 2.

`RunError` is raised when a valid scenario's run cannot finish within the limits the
scenario sets (``run.max_live_packets``); the CLI exits with status 3.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """Bad input, with the offending field (dotted path, e.g. ``topology.leaves``).

    Attributes:
        field: where the problem is: a dotted scenario path, a file path, or ``""``.
        message: what is wrong and how to fix it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class RunError(ScenarioError, RuntimeError):
    """A valid scenario whose run could not finish: it stopped at a resource limit the
    scenario sets (``run.max_live_packets``: more packets alive at once than allowed, a run
    that is not making progress; ``run.nic_queue_limit``; the samples ``run.memory_limit``
    leaves room for, named ``output.sample_interval``). A subclass of ``ScenarioError`` (the
    field names the limit to change) and of ``RuntimeError``. The CLI prints it as
    ``error: <field>: <message>`` and exits with status 3; nothing is written.

    Attributes:
        field: the scenario field whose limit stopped the run.
        message: what happened and what to do about it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"
