"""A model folder's manifest (`manifest.json`): what the engine needs to run the model (id,
fingerprint, dimensions, prefixes, max tokens, files with their sha256) and how it was made."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from oboyu.errors import OboyuError

MANIFEST = "manifest.json"
MODEL_FILE = "model.onnx"
# the default model's graph for GPUs (oboyu.models.default.gpu); the folder's number goes up when
# its recipe changes, so that a graph of an older recipe is never used
DEFAULT_GPU_GRAPH = f"gpu-1/{MODEL_FILE}"
TOKENIZER_FILE = "tokenizer.json"
ONNXRUNTIME, OPENVINO = "onnxruntime", "openvino"  # the engines a model can run on


@dataclass(frozen=True)
class ModelInfo:
    name: str
    fingerprint: str  # sha256 of the model's files: vectors from different models never mix
    dimensions: int
    max_tokens: int
    query_prefix: str
    passage_prefix: str
    engine: str = ONNXRUNTIME

    @property
    def model_id(self) -> str:
        """`id@fingerprint`, as an index records the model its vectors came from; `+openvino`
        after it when OpenVINO made them (the same weights and scales, but not the same
        arithmetic: their vectors never mix with onnxruntime's)."""
        suffix = "" if self.engine == ONNXRUNTIME else f"+{self.engine}"
        return f"{self.name}@{self.fingerprint[:12]}{suffix}"

    @property
    def vectors_key(self) -> str:
        """What the embedding cache keys this model's vectors by."""
        return self.fingerprint if self.engine == ONNXRUNTIME else f"{self.fingerprint}+{self.engine}"

    @classmethod
    def from_manifest(cls, manifest: dict, engine: str = ONNXRUNTIME) -> ModelInfo:
        if engine != ONNXRUNTIME and engine not in manifest.get("engines", {}):
            raise OboyuError(f"model {manifest['id']} has no {engine} form; `oboyu models list` shows what it has")
        return cls(
            name=manifest["id"],
            # converted models hash all their files (external weights too); the default model, its ONNX file
            fingerprint=manifest.get("fingerprint") or manifest["files"][MODEL_FILE]["sha256"],
            dimensions=int(manifest["dimensions"]),
            max_tokens=int(manifest["max_tokens"]),
            query_prefix=manifest["prefixes"]["query"],
            passage_prefix=manifest["prefixes"]["passage"],
            engine=engine,
        )


def split_engine(model_id: str) -> tuple[str, str]:
    """`id@fingerprint+openvino` → (`id@fingerprint`, `openvino`); no suffix is onnxruntime."""
    base, plus, engine = model_id.rpartition("+")
    return (base, engine) if plus and engine == OPENVINO else (model_id, ONNXRUNTIME)


def read_manifest(model_dir: Path) -> dict:
    try:
        return json.loads((Path(model_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OboyuError(f"model at {model_dir} has no readable manifest: {exc}") from exc


def write_manifest(folder: Path, manifest: dict) -> None:
    (Path(folder) / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
