"""A model sent to another machine (a cluster's workers): which files make it, and unpacking them
there into the cache folder, checked against the manifest's sha256 once and then by a stamp of
their sizes and times, the manifest against the fingerprint. How the bytes travel is the
caller's (Ray's object store, for `index.cluster`)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from oboyu.errors import OboyuError
from oboyu.models.install import install_lock, work_folder
from oboyu.models.manifest import MANIFEST, ModelInfo, split_engine
from oboyu.paths import cache_dir

STAMP = ".checked"


def model_files(manifest: dict) -> list[str]:
    """The names of the files a model folder needs: its manifest's files and the manifest."""
    return [*manifest["files"], MANIFEST]


def unpack_model(model_id: str, manifest: dict, fetch: Callable[[str], bytes]) -> Path:
    """The model in this machine's cache folder: unpacked once per machine (processes starting
    there take turns, the first unpacks, fetching each file's bytes by its name), checked, and
    found again by the others without hashing."""
    info = ModelInfo.from_manifest(manifest, split_engine(model_id)[1])
    if info.model_id != model_id:
        raise OboyuError(f"the model's manifest says {info.model_id}, the indexer {model_id}")
    parent = cache_dir() / "cluster-models"
    folder = parent / info.fingerprint[:32]
    parent.mkdir(parents=True, exist_ok=True)
    with install_lock(parent / f".{folder.name}.lock"):
        if _stamped(folder, manifest) or _matches(folder, manifest):
            return folder
        shutil.rmtree(folder, ignore_errors=True)  # a damaged copy
        with work_folder(parent, ".receiving-", clear_stale=True) as work:  # and a killed worker's unpacking
            for name in model_files(manifest):
                (work / name).write_bytes(fetch(name))
            if not _matches(work, manifest):
                raise OboyuError(f"the model {model_id} arrived damaged (a file's sha256 differs)")
            os.rename(work, folder)
    return folder


def _matches(folder: Path, manifest: dict) -> bool:
    """Every file the manifest lists is in `folder` with its sha256, the manifest with it; stamped
    when so, with each file's size and time."""
    try:
        for name, record in manifest["files"].items():
            digest = hashlib.sha256()
            with open(folder / name, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            if digest.hexdigest() != record["sha256"]:
                return False
        if json.loads((folder / MANIFEST).read_text(encoding="utf-8")) != manifest:
            return False
        (folder / STAMP).write_text(json.dumps(_file_stats(folder, manifest)), encoding="utf-8")
        return True
    except (OSError, ValueError):
        return False


def _stamped(folder: Path, manifest: dict) -> bool:
    """The folder was checked and no file of it has changed since (hashing a large model for each
    worker of a many-core machine would hold up their start)."""
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
        return stamp == _file_stats(folder, manifest) and json.loads((folder / MANIFEST).read_text(encoding="utf-8")) == manifest
    except (OSError, ValueError):
        return False


def _file_stats(folder: Path, manifest: dict) -> dict[str, list[int]]:
    stats = {}
    for name in [*manifest["files"], MANIFEST]:
        info = (folder / name).stat()
        stats[name] = [info.st_size, info.st_mtime_ns]
    return stats
