"""Scenario input: loading files, dotted-path field access and ``--set`` overrides.

A scenario can be given to :func:`dcnsim.run` as

* a path (``str`` or :class:`os.PathLike`) to a ``.toml`` or ``.json`` file: relative paths
  inside it (CDF files, flow lists) resolve against the file's folder;
* a TOML document as a string (any string containing a newline or ``=`` that is not the name
  of an existing file): relative paths resolve against the current directory;
* a ``dict`` (sent to the core as JSON): relative paths resolve against the current
  directory, or against ``base_dir`` when given.

Field paths are dotted names with list indices, e.g. ``workload[0].load`` or
``transport.protocol`` (see :func:`set_field`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from dcnsim.errors import ScenarioError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)((?:\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")


def parse_path(path: str) -> list[str | int]:
    """Split ``"workload[0].load"`` into ``["workload", 0, "load"]``.

    Raises:
        ScenarioError: if the path is not a dotted name with optional ``[i]`` indices.
    """
    if not path or not isinstance(path, str):
        raise ScenarioError(str(path), "empty field path")
    out: list[str | int] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if not m:
            raise ScenarioError(
                path,
                "not a field path; use dotted names with list indices, e.g. workload[0].load",
            )
        out.append(m.group(1))
        out.extend(int(i) for i in _INDEX.findall(m.group(2)))
    return out


def get_field(scenario: Mapping[str, Any], path: str) -> Any:
    """Return the value at a dotted path (``KeyError``/``IndexError`` if absent)."""
    node: Any = scenario
    for key in parse_path(path):
        node = node[key]
    return node


def set_field(scenario: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set the value at a dotted path in place and return the scenario.

    Missing tables on the way are created (``set_field(d, "network.buffer", "200KB")`` works
    on a scenario without a ``[network]`` table); list indices must exist
    (``workload[1]`` needs at least two workloads).

    Raises:
        ScenarioError: for a malformed path, a missing list element, or a path that goes
            through a value that is not a table/list.
    """
    keys = parse_path(path)
    node: Any = scenario
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        where = _render(keys[: i + 1])
        if isinstance(key, int):
            if not isinstance(node, list):
                raise ScenarioError(path, f"'{_render(keys[:i])}' is not a list")
            if key >= len(node):
                raise ScenarioError(
                    path, f"'{where}' does not exist ('{_render(keys[:i])}' has {len(node)} items)"
                )
            if last:
                node[key] = value
            else:
                node = node[key]
        else:
            if not isinstance(node, dict):
                raise ScenarioError(path, f"'{_render(keys[:i]) or '<top>'}' is not a table")
            if last:
                node[key] = value
            else:
                if key not in node:
                    if isinstance(keys[i + 1], int):
                        raise ScenarioError(path, f"'{where}' does not exist")
                    node[key] = {}
                node = node[key]
    return scenario


def _render(keys: list[str | int]) -> str:
    out = ""
    for k in keys:
        if isinstance(k, int):
            out += f"[{k}]"
        else:
            out += ("." if out else "") + k
    return out


def parse_value(text: str) -> Any:
    """Parse an override value as a TOML value (``0.3``, ``true``, ``[1, 2]``, ``"x"``).

    Anything that is not valid TOML is taken as a bare string, so ``tcp`` and ``40Gbps``
    need no quotes.
    """
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_override(text: str) -> tuple[str, Any]:
    """Parse a ``field=value`` override (the CLI's ``--set``)."""
    field, sep, value = text.partition("=")
    field = field.strip()
    if not sep or not field:
        raise ScenarioError("--set", f"'{text}' is not field=value (e.g. workload[0].load=0.3)")
    parse_path(field)
    return field, parse_value(value.strip())


def load_scenario(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a scenario file (TOML, or JSON if it ends in ``.json``) into a dict.

    The dict is not validated; pass it to :func:`dcnsim.validate` for that. When running a
    dict loaded from a file that refers to other files by relative path, pass
    ``base_dir=path.parent`` to :func:`dcnsim.run`.
    """
    p = Path(path)
    text = _read_text(p)
    return parse_text(text, _format_of(p), str(p))


def parse_text(text: str, fmt: str, origin: str) -> dict[str, Any]:
    """Parse scenario text in ``fmt`` (``"toml"``/``"json"``) into a dict."""
    try:
        if fmt == "json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise ScenarioError(origin, f"invalid {fmt.upper()}: {e}") from None
    if not isinstance(data, dict):
        raise ScenarioError(origin, "a scenario must be a table/object at the top level")
    return data


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(str(p), "file not found") from None
    except IsADirectoryError:
        raise ScenarioError(str(p), "is a directory, not a scenario file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(str(p), f"cannot read file: {e}") from None


def _format_of(p: Path) -> str:
    return "json" if p.suffix.lower() == ".json" else "toml"


def _looks_like_text(s: str) -> bool:
    if "\n" in s or "=" in s:
        try:
            return not Path(s).is_file()
        except (OSError, ValueError):
            return True
    return False


def prepare(
    scenario: ScenarioLike, base_dir: str | os.PathLike[str] | None = None
) -> tuple[str, str, str]:
    """Turn any accepted scenario form into ``(text, format, base_dir)`` for the core."""
    if isinstance(scenario, Mapping):
        try:
            text = json.dumps(scenario)
        except (TypeError, ValueError) as e:
            raise ScenarioError("", f"scenario dict is not JSON-serializable: {e}") from None
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        return text, "json", str(base.resolve())
    if isinstance(scenario, str) and _looks_like_text(scenario):
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        return scenario, "toml", str(base.resolve())
    if isinstance(scenario, (str, os.PathLike)):
        p = Path(scenario)
        text = _read_text(p)
        base = Path(base_dir) if base_dir is not None else p.resolve().parent
        return text, _format_of(p), str(base.resolve())
    raise TypeError(f"scenario must be a path, a TOML string or a dict, not {type(scenario)!r}")
