"""Output folders: what dcnsim may write where, and how it replaces its own earlier results.

dcnsim never deletes or overwrites a file it did not write. To know which files it wrote, a
run folder carries a **manifest**, ``dcnsim-manifest.json``::

    {"dcnsim_manifest": 1, "kind": "run", "state": "complete",
     "dcnsim_version": "0.1.0", "fingerprint": "sha256:...",
     "files": ["flows.parquet", "flows.csv", ...]}

``files`` lists every file dcnsim wrote into the folder (the manifest itself aside); anything
else in the folder (a ``plots/`` folder, a user's notes) is not dcnsim's run output and is
never touched by a later write. ``fingerprint`` identifies what was simulated (see
:func:`fingerprint`); sweeps compare it to decide whether a finished run is still current.
``state`` is ``"complete"`` once every listed file is in place, ``"partial"`` while a write is
under way (a folder left ``"partial"`` by a killed process is incomplete, but still known to
be dcnsim's, so the next ``--force`` write or sweep resume replaces it).

Rules for a run folder ``DIR`` (:func:`check_run_dir`, applied before simulating):

* ``DIR`` missing, or an empty folder: written.
* ``DIR`` holds a manifest: replaced only with ``overwrite`` (``--force``); then the files
  listed in the old manifest are removed or overwritten and nothing else. A run folder of a
  dcnsim from before manifests (:func:`legacy_run_files`: only result file names, a
  ``plots/`` folder and dcnsim temporaries in it) counts as one: it first gets the manifest
  it lacks (:func:`adopt_legacy_run`).
* anything else (a file, or a folder with other contents): refused with
  :class:`OutputError` (exit status 2) before anything is written.
* the nearest existing folder on the way to ``DIR`` must be writable (else :class:`OutputError`).

Writing (:func:`commit_run_dir`): the files are written into a temporary folder, then put in
place by ``rename``. A new ``DIR`` is the temporary sibling ``DIR.tmp-<host>-<pid>`` renamed
to ``DIR`` in one step. An existing ``DIR`` (empty, or a run folder being replaced) gets its
temporary folder inside, ``DIR/.dcnsim-tmp-<host>-<pid>``: its manifest is first rewritten as
``partial`` listing the old and the new files, the old files the new run does not write are
removed, each new file is renamed into place (``summary.json`` last), and the manifest is
rewritten as ``complete``. Each step is a rename or an unlink, so a kill at any point leaves
either the complete old folder, a ``partial`` folder dcnsim will replace, or the complete new
folder; user files are never involved.

Temporary folders carry the host name and process id of their writer and a manifest from
their first moment, so :func:`clean_stale` removes only temporary folders dcnsim made (a
manifest inside, or empty) whose process is gone (same host, process id not alive).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dcnsim.errors import ScenarioError

MANIFEST = "dcnsim-manifest.json"
MANIFEST_VERSION = 1
#: Prefix of the temporary folder made inside an existing output folder.
INNER_TMP = ".dcnsim-tmp-"
#: Files dcnsim writes by atomic replacement beside run folders (their stale temporaries,
#: ``<name>.tmp-<host>-<pid>``, are recognised as dcnsim's).
OWN_FILES = frozenset(
    {
        MANIFEST,
        "sweep.json",
        "sweep_summary.csv",
        "sweep_summary.parquet",
        "table.csv",
        "table.md",
        "plot.png",
    }
)


class OutputError(ScenarioError):
    """An output path dcnsim refuses to write (foreign contents, not writable, a file).

    A :class:`~dcnsim.errors.ScenarioError` (so the CLI exits with status 2), raised before
    anything is simulated or written; ``field`` is the path, ``message`` the problem and fix.
    """


def version() -> str:
    from dcnsim import __version__

    return __version__


def host_tag() -> str:
    """This machine's name, reduced to letters, digits and ``_`` (part of temporary names)."""
    return re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname()) or "host"


def tmp_suffix() -> str:
    """``<host>-<pid>`` of this process: the owner part of a temporary name."""
    return f"{host_tag()}-{os.getpid()}"


def fingerprint(scenario: Any) -> str:
    """Hash of a normalized scenario (the document ``dcnsim validate --json`` prints and a
    run saves as ``scenario.json``) together with the dcnsim version.

    Two runs have the same fingerprint when they simulate the same thing with the same
    dcnsim release. Files a scenario refers to (a CDF or flow list) enter through their
    path only, not their contents.
    """
    doc = {"dcnsim_version": version(), "scenario": scenario}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# -- manifests ---------------------------------------------------------------------------


def read_manifest(d: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of folder ``d``, or None when there is none (or it is not dcnsim's)."""
    p = Path(d) / MANIFEST
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or "dcnsim_manifest" not in doc:
        return None
    files = doc.get("files")
    if not isinstance(files, list) or not all(_plain_name(f) for f in files):
        return None
    return doc


def _plain_name(f: Any) -> bool:
    """A file name without a folder part (a manifest may only list its folder's files)."""
    return isinstance(f, str) and f not in ("", ".", "..", MANIFEST) and "/" not in f


def is_complete_run(d: str | os.PathLike[str]) -> bool:
    """A complete run folder: a ``complete`` manifest and its ``summary.json``."""
    m = read_manifest(d)
    return m is not None and m.get("state") == "complete" and (Path(d) / "summary.json").is_file()


def _write_manifest(d: Path, doc: dict[str, Any]) -> None:
    tmp = d / f"{MANIFEST}.tmp-{tmp_suffix()}"
    try:
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        tmp.replace(d / MANIFEST)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def manifest(files: Sequence[str], state: str, fp: str, kind: str = "run") -> dict[str, Any]:
    return {
        "dcnsim_manifest": MANIFEST_VERSION,
        "kind": kind,
        "state": state,
        "dcnsim_version": version(),
        "fingerprint": fp,
        "files": list(files),
    }


# -- run folders written before manifests existed -------------------------------------------

#: The files a run folder held before manifests existed (``docs/results.md``).
LEGACY_RUN_FILES = frozenset(
    {
        "flows.parquet",
        "flows.csv",
        "ports.csv",
        "queue.parquet",
        "link.parquet",
        "counters.json",
        "scenario.json",
        "summary.json",
    }
)


def legacy_run_files(d: str | os.PathLike[str]) -> list[str] | None:
    """The result files of a run folder an older dcnsim wrote (no manifest; nothing in it
    but result file names, a ``plots/`` folder and dcnsim temporaries; ``summary.json`` and
    ``scenario.json`` present), or None if ``d`` is not one."""
    p = Path(d)
    if not p.is_dir() or read_manifest(p) is not None:
        return None
    names = set()
    for e in p.iterdir():
        if _tmp_owner(e) is not None or (e.name == "plots" and e.is_dir()):
            continue
        if e.name not in LEGACY_RUN_FILES or not e.is_file() or e.is_symlink():
            return None
        names.add(e.name)
    if not {"summary.json", "scenario.json"} <= names:
        return None
    return sorted(names)


def adopt_legacy_run(d: str | os.PathLike[str]) -> bool:
    """Give a run folder of an older dcnsim (:func:`legacy_run_files`) its manifest, listing
    its result files, with the fingerprint of its ``scenario.json``; True if it was one."""
    files = legacy_run_files(d)
    if files is None:
        return False
    try:
        scenario = json.loads((Path(d) / "scenario.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        scenario = None
    _write_manifest(Path(d), manifest(files, "complete", fingerprint(scenario)))
    return True


# -- checks before writing ---------------------------------------------------------------


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputError` unless ``path`` (existing or not) can be created/written:
    the nearest existing folder on its way must be a folder this process can create entries
    in. Tried for real (an empty probe folder made and removed at once), since permission
    bits do not tell for root, read-only mounts or special file systems."""
    p = Path(path).absolute()
    probe = p
    while not probe.exists():
        if probe.is_symlink():  # a dangling link
            raise OutputError(str(p), f"{probe} is a broken symbolic link; choose another path")
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(str(p), f"{probe} is a file, not a folder; choose another path")
    trial = probe / f"{INNER_TMP}{tmp_suffix()}"
    try:
        if not os.access(probe, os.W_OK | os.X_OK):
            raise PermissionError("no write permission")
        trial.mkdir()
        trial.rmdir()
    except FileExistsError:  # our own temporary folder is there: the folder is writable
        pass
    except OSError as e:
        why = e.strerror or str(e)
        raise OutputError(str(p), f"cannot write in {probe} ({why}); choose another path") from None


def foreign_entries(d: Path) -> list[str]:
    """Entries of folder ``d`` that are not temporary folders dcnsim made."""
    return sorted(e.name for e in d.iterdir() if _tmp_owner(e) is None)


def check_run_dir(path: str | os.PathLike[str], overwrite: bool = False) -> None:
    """Raise :class:`OutputError` if a run may not be written to ``path`` (rules in the module
    docs): nothing is touched either way."""
    p = Path(path).absolute()
    if p.exists() or p.is_symlink():
        if not p.is_dir():
            raise OutputError(str(p), "exists and is not a folder; choose another --out")
        m = read_manifest(p)
        if m is None and legacy_run_files(p) is not None:
            m = {"kind": "run", "state": "complete"}  # an older dcnsim's run folder
        if m is None:
            foreign = foreign_entries(p)
            if foreign:
                raise OutputError(str(p), _foreign_message(foreign, "run"))
        elif m.get("kind") != "run":
            raise OutputError(
                str(p), f"holds a dcnsim {m.get('kind')} folder, not a run; choose another --out"
            )
        elif not overwrite:
            what = "an earlier run" if m.get("state") == "complete" else "an unfinished run"
            raise OutputError(
                str(p),
                f"holds {what} of dcnsim; pass --force (Python: overwrite=True) to replace its "
                "files (files you added are kept), or choose another --out",
            )
    check_writable(p)


def _foreign_message(entries: list[str], what: str) -> str:
    shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
    return (
        f"exists and is not a dcnsim {what} folder (it holds {len(entries)} "
        f"entr{'y' if len(entries) == 1 else 'ies'}: {shown}); dcnsim writes only into a new "
        f"or empty folder or one of its own {what} folders: choose another --out"
    )


def check_sweep_dir(path: str | os.PathLike[str], marker: str) -> None:
    """Raise :class:`OutputError` unless ``path`` is missing, empty, or a sweep folder
    (holds ``marker``, i.e. ``sweep.json``) that can be written."""
    p = Path(path).absolute()
    if p.exists() or p.is_symlink():
        if not p.is_dir():
            raise OutputError(str(p), "exists and is not a folder; choose another --out")
        if not (p / marker).is_file():
            if read_manifest(p) is not None:
                raise OutputError(
                    str(p), "holds a dcnsim run folder, not a sweep; choose another --out"
                )
            foreign = foreign_entries(p)
            if foreign:
                raise OutputError(str(p), _foreign_message(foreign, "sweep"))
    check_writable(p)


#: The PNG files ``dcnsim plot`` writes (a folder of only these, without a manifest, is the
#: plots folder of a dcnsim from before manifests).
PLOT_FILES = frozenset(
    {
        "fct_cdf.png",
        "fct_by_size.png",
        "queue.png",
        "link_util.png",
        "comparison.png",
        "headline.png",
    }
)


def check_plot_dir(path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputError` unless ``path`` is missing, empty, or a plots folder dcnsim
    wrote (a manifest of kind ``plots``, or only :data:`PLOT_FILES` in it) that can be
    written."""
    p = Path(path).absolute()
    if p.exists() or p.is_symlink():
        if not p.is_dir():
            raise OutputError(str(p), "exists and is not a folder; choose another --out")
        m = read_manifest(p)
        if m is None:
            foreign = [f for f in foreign_entries(p) if f not in PLOT_FILES]
            if foreign:
                raise OutputError(str(p), _foreign_message(foreign, "plots"))
        elif m.get("kind") != "plots":
            raise OutputError(
                str(p), f"holds a dcnsim {m.get('kind')} folder, not plots; choose another --out"
            )
    check_writable(p)


def record_plots(path: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]]) -> None:
    """List the PNG files just written in the manifest of plots folder ``path`` (kept with
    those listed before, so a later plot replaces only dcnsim's own files)."""
    p = Path(path)
    m = read_manifest(p)
    names = list(m["files"]) if m else sorted(f for f in foreign_entries(p) if f in PLOT_FILES)
    names += [Path(f).name for f in files if Path(f).name not in names]
    _write_manifest(p, manifest(names, "complete", "", kind="plots"))


# -- temporary folders ---------------------------------------------------------------------

_TMP_RE = re.compile(r"^(?P<stem>.+)\.tmp-(?:(?P<host>[A-Za-z0-9_]+)-)?(?P<pid>\d+)$")
_INNER_RE = re.compile(r"^\.dcnsim-tmp-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)$")


def _tmp_owner(p: Path) -> tuple[str, int] | None:
    """(host, pid) of a temporary entry dcnsim made, or None if ``p`` is not one.

    A folder counts only if it carries a manifest or is empty; a file only if it is a
    temporary of a file dcnsim writes itself (``<name>.tmp-<host>-<pid>``)."""
    m = _INNER_RE.match(p.name) or _TMP_RE.match(p.name)
    if m is None:
        return None
    if p.is_dir() and not p.is_symlink():
        try:
            ours = read_manifest(p) is not None or not any(p.iterdir())
        except OSError:
            return None
        if not ours:
            return None
    elif not p.is_file() or m.re is not _TMP_RE or m.group("stem") not in OWN_FILES:
        return None
    return (m.group("host") or host_tag(), int(m.group("pid")))


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    try:  # a zombie (exited, not yet reaped) is dead
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def clean_stale(folder: str | os.PathLike[str], names: Iterable[str] | None = None) -> list[Path]:
    """Remove the temporary entries of ``folder`` that dcnsim made and whose process is dead
    (same host, pid not alive); with ``names``, only temporaries of those stems (plus inner
    ``.dcnsim-tmp-*`` folders). Returns what was removed."""
    d = Path(folder)
    if not d.is_dir():
        return []
    wanted = None if names is None else set(names)
    here = host_tag()
    removed = []
    for e in sorted(d.iterdir()):
        m = _TMP_RE.match(e.name)
        if (
            wanted is not None
            and not _INNER_RE.match(e.name)
            and (m is None or m.group("stem") not in wanted)
        ):
            continue
        owner = _tmp_owner(e)
        if owner is None or owner[0] != here or pid_alive(owner[1]):
            continue
        if e.is_dir():
            shutil.rmtree(e, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                e.unlink()
        removed.append(e)
    return removed


# -- committing a run folder ---------------------------------------------------------------


def start_run_dir(out: Path) -> Path:
    """Create and return the temporary folder for writing run folder ``out`` (which passed
    :func:`check_run_dir`); it holds a ``partial`` manifest from the start."""
    if out.is_dir():
        tmp = out / f"{INNER_TMP}{tmp_suffix()}"
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.tmp-{tmp_suffix()}")
    if tmp.exists():  # our own leftover (same pid): only ever a temporary of ours
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        _write_manifest(tmp, manifest([], "partial", ""))
    except BaseException:
        abandon(tmp)
        raise
    return tmp


def commit_run_dir(tmp: Path, out: Path, files: Sequence[str], fp: str) -> None:
    """Put the ``files`` written into ``tmp`` in place as run folder ``out`` (module docs)."""
    files = list(files)
    if "summary.json" in files:  # summary.json lands last
        files.remove("summary.json")
        files.append("summary.json")
    if tmp.parent != out:  # a new folder: one rename
        _write_manifest(tmp, manifest(files, "complete", fp))
        try:
            tmp.rename(out)
        except OSError as e:
            raise OutputError(str(out), f"appeared while the run was written ({e})") from None
        return
    old = read_manifest(out)
    old_files = [f for f in (old or {}).get("files", []) if f not in files]
    _write_manifest(out, manifest(old_files + files, "partial", fp))
    for f in old_files:
        p = out / f
        if p.is_file() or p.is_symlink():
            p.unlink()
    for f in files:
        (tmp / f).replace(out / f)
    _write_manifest(out, manifest(files, "complete", fp))
    shutil.rmtree(tmp, ignore_errors=True)


def abandon(tmp: Path) -> None:
    """Remove a temporary folder after a failed write (the target is left as it was, or
    ``partial`` if the failure came while files were being renamed into place)."""
    shutil.rmtree(tmp, ignore_errors=True)


__all__ = [
    "MANIFEST",
    "OutputError",
    "check_run_dir",
    "check_sweep_dir",
    "check_writable",
    "clean_stale",
    "fingerprint",
    "is_complete_run",
    "read_manifest",
]
