"""The repository stands on its own: documentation links resolve to files inside it, no
file names a path outside it, Dask is a regular dependency, and the cluster guide covers
the three ways of running a sweep on a cluster."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def tracked(pattern: str) -> list[str]:
    r = subprocess.run(
        ["git", "ls-files", pattern], cwd=REPO, capture_output=True, text=True, check=False
    )
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return r.stdout.split()


def test_every_relative_markdown_link_resolves_inside_the_repository() -> None:
    files = tracked("*.md")
    assert "README.md" in files and "docs/metrics.md" in files
    bad = []
    for f in files:
        path = REPO / f
        text = re.sub(r"```.*?```", "", path.read_text(errors="replace"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a web address or an anchor on the same page
            dest = (path.parent / target.split("#")[0]).resolve()
            if not dest.exists() or not dest.is_relative_to(REPO.resolve()):
                bad.append(f"{f}: {target}")
    assert not bad, bad


def test_every_rust_source_file_a_markdown_file_names_exists() -> None:
    """A README or doc that names a Rust file (`transport/receiver/homa.rs`, `tcp.rs`) must
    name one that exists: a module split into a folder leaves such names stale. A name with
    a folder must match the end of a tracked path; a bare file name, some tracked file's."""
    sources = tracked("*.rs")
    names = {s.rsplit("/", 1)[-1] for s in sources}
    bad = []
    for f in tracked("*.md"):
        text = (REPO / f).read_text(errors="replace")
        for ref in set(re.findall(r"`([\w./-]*\w\.rs)`", text)):
            ok = (
                any(s == ref or s.endswith("/" + ref) for s in sources)
                if "/" in ref
                else ref in names
            )
            if not ok:
                bad.append(f"{f}: {ref}")
    assert not bad, sorted(bad)


def test_no_tracked_file_names_a_folder_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|CONVENTIONS\.md|(?<![\w.])/(?:work|root|home)/")
    hits = []
    for f in tracked("*"):
        p = REPO / f
        if p.suffix in {".png", ".parquet", ".pcap", ".gz"} or not p.is_file():
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        if outside.search(text):
            hits.append(f)
    assert not hits, hits


def test_dask_is_a_regular_dependency_the_makefile_installs() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert any(re.match(r"dask\[[^]]*distributed[^]]*\]", d) for d in project["dependencies"])
    makefile = (REPO / "Makefile").read_text()
    assert 'd["project"]["dependencies"]' in makefile  # the venv installs them


def test_the_cluster_guide_covers_several_machines_slurm_and_kubernetes() -> None:
    text = (REPO / "docs" / "cluster.md").read_text()
    for needle in ("dask scheduler", "dask worker", "--scheduler", "SLURMCluster", "Kubernetes"):
        assert needle in text, needle
