"""Models: the curated catalogue (one manifest per model in `oboyu/models/manifests/`, shipped
inside the package, so every kind of install finds it) and the models installed in the cache dir,
by id or index model id."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from oboyu.errors import OboyuError
from oboyu.models.manifest import MANIFEST, MODEL_FILE, ModelInfo, split_engine
from oboyu.paths import models_dir


def catalogue() -> list[dict]:
    folder = resources.files("oboyu.models").joinpath("manifests")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def catalogue_entry(model_id: str) -> dict | None:
    return next((e for e in catalogue() if e["id"] == model_id), None)


@dataclass(frozen=True)
class InstalledModel:
    folder: Path
    manifest: dict

    @property
    def id(self) -> str:
        return self.manifest["id"]

    @property
    def kind(self) -> str:
        return self.manifest.get("kind", "embedder")  # embedder | reranker

    @property
    def index_id(self) -> str:
        """`id@fingerprint`, as an index records its model."""
        fingerprint = self.manifest.get("fingerprint") or self.manifest["files"][MODEL_FILE]["sha256"]
        return f"{self.id}@{fingerprint[:12]}"

    @cached_property
    def info(self) -> ModelInfo:
        return ModelInfo.from_manifest(self.manifest)


def installed(root: Path | None = None) -> list[InstalledModel]:
    """Every complete model in the models dir (half-built folders start with a dot)."""
    root = root or models_dir()
    models = []
    for folder in sorted(root.glob("[!.]*")):
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            models.append(InstalledModel(folder, manifest))
        except (OSError, ValueError):
            continue
    return models


def _named(name: str, models: list[InstalledModel]) -> list[InstalledModel]:
    """The model an index model id (`id@fingerprint`, any engine) or folder name names, else every install of an id."""
    name = split_engine(name)[0]
    exact = [m for m in models if name in (m.index_id, m.folder.name)]
    return exact or [m for m in models if m.id == name]


def find_installed(name: str, root: Path | None = None) -> InstalledModel | None:
    """By index model id, folder name or id (then the newest install of that id)."""
    matching = _named(name, installed(root))
    return max(matching, key=lambda m: (m.folder / MANIFEST).stat().st_mtime) if matching else None


def rerankers(root: Path | None = None) -> list[InstalledModel]:
    """Installed cross-encoders, the newest first."""
    found = [m for m in installed(root) if m.kind == "reranker"]
    return sorted(found, key=lambda m: (m.folder / MANIFEST).stat().st_mtime, reverse=True)


def remove_installed(name: str, root: Path | None = None) -> list[Path]:
    """Delete every installed variant of `name` (an id) or the one folder it names."""
    chosen = _named(name, installed(root))
    if not chosen:
        raise OboyuError(f"no installed model {name}; `oboyu models list` shows them")
    for model in chosen:
        shutil.rmtree(model.folder)
    return [m.folder for m in chosen]
