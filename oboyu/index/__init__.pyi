"""The names `oboyu.index` exports, for type checkers (`X as X`: re-exported); loaded when first asked for (`__init__.py`)."""

from .embedding_cache import EmbeddingCache as EmbeddingCache
from .indexer import Indexer as Indexer
from .lock import IndexLock as IndexLock
from .plan import Plan as Plan
from .records import ChunkRecord as ChunkRecord
from .records import DocumentRecord as DocumentRecord
from .records import Move as Move
from .records import Root as Root
from .records import RootSummary as RootSummary
from .records import SearchHit as SearchHit
from .records import StoredFile as StoredFile
from .reports import IndexProgress as IndexProgress
from .reports import IndexStats as IndexStats
from .store import Store as Store
from .store import open_for_reading as open_for_reading
