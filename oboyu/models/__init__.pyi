"""The names `oboyu.models` exports, for type checkers (`X as X`: re-exported); loaded when first asked for (`__init__.py`)."""

from .catalogue import InstalledModel as InstalledModel
from .catalogue import catalogue as catalogue
from .catalogue import find_installed as find_installed
from .catalogue import installed as installed
from .default.build import DEFAULT_MODEL as DEFAULT_MODEL
from .default.build import ensure_default_model as ensure_default_model
from .embedding import Embedder as Embedder
from .loading import load_default_embedder as load_default_embedder
from .loading import load_embedder as load_embedder
from .loading import load_reranker as load_reranker
from .manifest import ModelInfo as ModelInfo
from .manifest import read_manifest as read_manifest
from .rerank import Reranker as Reranker
