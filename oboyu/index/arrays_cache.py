"""Where an index's search arrays (`oboyu.index.arrays`) are kept: one folder a generation beside
the index file (or in the cache folder when the index's folder is read-only), found when made,
brought from the last generation's folder when most rows carry over (`arrays_update`), built from
the DuckDB file otherwise (`arrays_build`); other generations' folders, and half-made ones whose
process is gone, are removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

from oboyu.errors import ArraysUnwritableError, OboyuError
from oboyu.index.arrays import IndexArrays, homes, open_arrays
from oboyu.index.arrays_build import build_arrays, schema_version
from oboyu.index.arrays_update import update_arrays
from oboyu.index.store import Store

BUILDING_FOR_AT_MOST = 24 * 3600  # seconds: on Windows, a build folder older than this was left


def arrays_of(store: Store) -> IndexArrays:
    """The arrays of the store's current generation: opened when made already (by this process or
    another), else brought up to date from an older generation's or made; older generations'
    folders are removed. Beside the index file, or in
    the user's cache folder when the index's folder is read-only."""
    found = made_arrays(store)
    if found is not None:
        return found
    places = homes(store.path)
    failures: list[str] = []
    for base in places:
        try:
            generation = _make(store, base)
        except OSError as error:
            failures.append(f"{base}: {error.strerror or error}")
            continue
        _remove_old(base, keep=generation)
        arrays = open_arrays(base / generation)
        if arrays is None:
            raise OboyuError(f"the index's search arrays in {base / generation} cannot be read; remove that folder")
        return arrays
    raise ArraysUnwritableError("cannot write the index's search arrays (" + "; ".join(failures) +
                                "): free some disk space, or make one of those places a writable folder")


def _make(store: Store, base: Path) -> str:
    """Build the arrays under a temporary name in `base`, then give the folder its generation's."""
    base.mkdir(parents=True, exist_ok=True)
    building = base / f".building-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    building.mkdir()
    try:
        old = _older(base)
        generation = (update_arrays(store, old, building) if old is not None else None) or build_arrays(store, building)
        target = base / generation
        try:
            building.rename(target)  # fails where a folder of that name holds anything
        except OSError:
            made = open_arrays(target)
            if made is None or made.generation != generation:  # a damaged one: made again
                shutil.rmtree(target, ignore_errors=True)
                with contextlib.suppress(OSError):  # else another process put its own there meanwhile
                    building.rename(target)
            # else another process made it first: it stays (a trial's second process removed it, and
            # the first, opening it meanwhile, stopped)
            shutil.rmtree(building, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return generation


def made_arrays(store: Store) -> IndexArrays | None:
    """The arrays of the store's current generation when some process has made them (a one-shot
    query ranks from them then, and never makes them)."""
    generation = store.get_meta("generation") or ""
    for base in homes(store.path) if generation else []:
        found = open_arrays(base / generation)
        if found is not None and found.generation == generation:
            return found
    return None


def last_made_arrays(store: Store) -> IndexArrays | None:
    """The newest arrays of an older generation of this index, made by the same model and schema:
    what a long-lived process that has loaded nothing answers from, as the last loaded state,
    while the current generation's are made (`oboyu.search.preparing`)."""
    for base in homes(store.path):
        found = _older(base) if base.is_dir() else None
        if found is not None and found.model_id == store.model_id() and found.schema == schema_version(store):
            return found
    return None


def arrays_state(store: Store) -> tuple[Path, bool, int] | None:
    """For `oboyu status`: the index's newest arrays folder, whether it is of the current
    generation, and its bytes; None when none is made (a damaged or older-format folder counts as
    none: it is made again)."""
    generation = store.get_meta("generation") or ""
    for base in homes(store.path):
        try:
            folders = [f for f in base.iterdir() if not f.name.startswith(".") and open_arrays(f) is not None]
        except OSError:
            continue
        if folders:
            folder = next((f for f in folders if f.name == generation), max(folders, key=lambda f: f.stat().st_mtime))
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            return folder, folder.name == generation, size
    return None


def _older(base: Path) -> IndexArrays | None:
    """The arrays of another generation in `base` (there is one at most, but for a moment)."""
    try:
        folders = sorted(base.iterdir(), key=lambda f: f.stat().st_mtime, reverse=True)
    except OSError:  # another process removed one meanwhile: made in full
        return None
    for folder in folders:
        if not folder.name.startswith(".") and (found := open_arrays(folder)) is not None:
            return found
    return None


def _remove_old(base: Path, keep: str) -> None:
    """Other generations' folders, and folders left by builds whose process is gone (best effort:
    another process may still have an old one open, which Windows does not let go)."""
    for folder in base.iterdir():
        if folder.name == keep:
            continue
        if folder.name.startswith(".building-") and _still_building(folder):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _still_building(folder: Path) -> bool:
    """Whether the process that builds in this folder may still run. Windows cannot be asked
    without ending the process (os.kill): there a folder untouched for a day is taken as left."""
    pid = folder.name.split("-")[1]
    if not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return True
    if sys.platform == "win32":
        try:
            return time.time() - folder.stat().st_mtime < BUILDING_FOR_AT_MOST
        except OSError:
            return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, under another user
    return True
