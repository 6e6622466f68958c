"""docs/results.md documents every column and summary key the package writes."""

from __future__ import annotations

import re

from dcnsim import Results
from dcnsim.results import FLOW_COLUMNS, LINK_COLUMNS, PORT_COLUMNS, QUEUE_COLUMNS

from conftest import REPO, synthetic_core_output


def documented() -> set[str]:
    text = (REPO / "docs" / "results.md").read_text()
    return set(re.findall(r"^\| `([^`]+)` \|", text, flags=re.M))


def test_every_column_is_documented() -> None:
    names = documented()
    for col in FLOW_COLUMNS + PORT_COLUMNS + QUEUE_COLUMNS + LINK_COLUMNS:
        assert col in names, col


def test_every_summary_key_is_documented() -> None:
    names = documented()
    res = Results.from_core(
        synthetic_core_output(
            size=[1], fct_us=[1.0], ideal_us=[1.0], sent=[1], drops={"buffer_overflow": 1}
        )
    )
    for key in res.summary():
        assert key in names or key.startswith("drops_"), key
