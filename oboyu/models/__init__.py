"""Models: manifests and one staged install, the embedding engine and its providers, rerankers,
the catalogue and loading; `default/` builds the default model (no torch), `convert/` any other."""

from oboyu.models.catalogue import InstalledModel, catalogue, find_installed, installed
from oboyu.models.default.build import DEFAULT_MODEL, ensure_default_model
from oboyu.models.embedding import Embedder
from oboyu.models.loading import load_default_embedder, load_embedder, load_reranker
from oboyu.models.manifest import ModelInfo, read_manifest
from oboyu.models.rerank import Reranker

__all__ = [
    "DEFAULT_MODEL", "Embedder", "InstalledModel", "ModelInfo", "Reranker", "catalogue", "ensure_default_model",
    "find_installed", "installed", "load_default_embedder", "load_embedder", "load_reranker", "read_manifest",
]
