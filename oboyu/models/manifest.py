"""A model folder's manifest (`manifest.json`): what the engine needs to run the model (id,
fingerprint, dimensions, prefixes, max tokens, files with their sha256) and how it was made."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from oboyu.errors import OboyuError

MANIFEST = "manifest.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class ModelInfo:
    name: str
    fingerprint: str  # sha256 of the model's files: vectors from different models never mix
    dimensions: int
    max_tokens: int
    query_prefix: str
    passage_prefix: str

    @property
    def model_id(self) -> str:
        return f"{self.name}@{self.fingerprint[:12]}"

    @classmethod
    def from_manifest(cls, manifest: dict) -> ModelInfo:
        return cls(
            name=manifest["id"],
            # converted models hash all their files (external weights too); the default model, its ONNX file
            fingerprint=manifest.get("fingerprint") or manifest["files"][MODEL_FILE]["sha256"],
            dimensions=int(manifest["dimensions"]),
            max_tokens=int(manifest["max_tokens"]),
            query_prefix=manifest["prefixes"]["query"],
            passage_prefix=manifest["prefixes"]["passage"],
        )


def read_manifest(model_dir: Path) -> dict:
    try:
        return json.loads((Path(model_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OboyuError(f"model at {model_dir} has no readable manifest: {exc}") from exc


def write_manifest(folder: Path, manifest: dict) -> None:
    (Path(folder) / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
