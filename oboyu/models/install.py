"""Installing a model folder, for both the default model's build and the conversion pipeline:
work happens in a hidden folder beside the installed models, and only a model that passed every
check is renamed into place (after its files are on disk), so a failed or killed build installs
nothing. Also: the installed folder's name, weights as ONNX external data (measured by
python -m benchmarks.speed.external_data on INT8 e5-small: the session starts in 0.067 s instead of
0.252 s and peaks at 74 MB RSS instead of 257 MB, the weights being memory-mapped), and the
manifest's file records."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from oboyu.models.manifest import write_manifest

EXTERNAL_SUFFIX = ".data"


def install_folder_name(model_id: str, quantization: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "--", model_id).strip("-.") or "model"
    return f"{slug}-{'fp32' if quantization == 'none' else 'int8-' + quantization}"


def save_with_external_data(model_file: Path, target: Path) -> None:
    """The graph in `target`, every tensor over 1 KB in `target` + .data."""
    import onnx

    save_external(onnx.load(str(model_file)), target)


def save_external(model, target: Path) -> None:
    """Save an onnx ModelProto as `target` (the graph) and `target` + .data (every tensor over
    1 KB), which onnxruntime memory-maps instead of copying."""
    import onnx

    onnx.save_model(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=target.name + EXTERNAL_SUFFIX, size_threshold=1024)


def file_record(path: Path) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"sha256": digest.hexdigest(), "bytes": path.stat().st_size}


def fingerprint(files: dict[str, dict]) -> str:
    """One hash of every file the model is made of: vectors of different builds never mix."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]['sha256']}\n".encode())
    return digest.hexdigest()


def fsync_files(folder: Path) -> None:
    for path in folder.iterdir():
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())


@contextlib.contextmanager
def work_folder(parent: Path, prefix: str, clear_stale: bool = False) -> Iterator[Path]:
    """A hidden scratch folder in `parent` (beside the installed models, so the final rename stays
    on one file system), removed when the block ends; `clear_stale`, for a caller holding the
    install lock: first the folders of this prefix that killed runs left."""
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f"{prefix}*") if clear_stale else ():
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def install_lock(path: Path) -> Iterator[None]:
    """One process at a time installs into a folder (others wait, then find it installed); on
    Windows, without flock, the final rename still keeps the result whole."""
    with open(path, "a+b") as handle:
        try:
            import fcntl
        except ImportError:
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install(staged: Path, final: Path, manifest: dict) -> None:
    """Write the manifest into `staged`, put its files on disk and rename it into place as
    `final`, replacing an older install."""
    write_manifest(staged, manifest)
    fsync_files(staged)
    if final.exists():
        shutil.rmtree(final)
    os.replace(staged, final)
