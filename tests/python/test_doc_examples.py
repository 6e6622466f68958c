"""The runnable examples of README.md and docs/*.md run as written.

A fenced code block is *runnable* when the line right before its opening fence is an HTML
comment (invisible on a rendered page):

* ``<!-- runnable -->`` before a ``sh`` block: its lines run with ``bash -e``; before a
  ``python`` block: it runs with this Python.
* ``<!-- runnable: file=NAME -->`` before any block: its text is written to ``NAME``, for the
  blocks after it to use (a scenario, a sweep file, a flow list).

The runnable blocks of one document run in order in one scratch folder, in which ``.venv``
links to the virtual environment running the tests (so ``.venv/bin/dcnsim`` works as
written). Each must succeed (exit status 0). Examples are meant to be small enough to run in
seconds; blocks that are not marked (``make demo``, cluster commands) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

MARK = re.compile(r"^<!--\s*runnable(?::\s*file=(?P<file>[^\s>]+))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")


def runnable_blocks(text: str) -> list[tuple[int, str, str | None, str]]:
    """(line, language, file name or None, code) of each marked block, in order."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if m is None:
            i += 1
            continue
        f = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if f is None:
            raise AssertionError(f"line {i + 1}: a runnable mark must precede a code fence")
        end = i + 2
        while end < len(lines) and not lines[end].startswith(f.group("fence")):
            end += 1
        out.append((i + 2, f.group("lang"), m.group("file"), "\n".join(lines[i + 2 : end]) + "\n"))
        i = end + 1
    return out


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_marker_parser() -> None:
    text = (
        "x\n<!-- runnable: file=a.toml -->\n```toml\nk = 1\n```\n"
        "```sh\nnot marked\n```\n<!-- runnable -->\n```sh\necho hi\n```\n"
    )
    assert runnable_blocks(text) == [
        (3, "toml", "a.toml", "k = 1\n"),
        (10, "sh", None, "echo hi\n"),
    ]


def test_readme_has_runnable_examples() -> None:
    blocks = runnable_blocks((REPO / "README.md").read_text())
    assert {lang for _, lang, f, _ in blocks if f is None} == {"sh", "python"}
    assert any("dcnsim sweep" in code for _, _, _, code in blocks)


@pytest.mark.parametrize("doc", [d for d in DOCS if runnable_blocks(d.read_text())], ids=str)
def test_runnable_blocks_run_as_written(doc: Path, tmp_path: Path) -> None:
    (tmp_path / ".venv").symlink_to(Path(sys.executable).resolve().parent.parent)
    if not (tmp_path / ".venv" / "bin" / "dcnsim").exists():  # pragma: no cover
        (tmp_path / ".venv").unlink()
        (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DCNSIM_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for line, lang, name, code in runnable_blocks(doc.read_text()):
        where = f"{doc.name}:{line}"
        if name is not None:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(code)
            continue
        if lang in ("sh", "bash", "shell", "console"):
            cmd = ["bash", "-e", "-c", code]
        elif lang == "python":
            cmd = [sys.executable, "-c", code]
        else:
            raise AssertionError(f"{where}: cannot run a '{lang}' block")
        r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, f"{where} failed:\n{code}\n{r.stdout}\n{r.stderr}"
