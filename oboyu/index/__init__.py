"""The index: records, the DuckDB schema and its migrations, the store (writes and roots), the
plan of an update (disk against index), the indexer, the embedding cache, the lock and the watcher."""

from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.indexer import Indexer
from oboyu.index.lock import IndexLock
from oboyu.index.plan import Plan
from oboyu.index.records import ChunkRecord, DocumentRecord, Move, Root, RootSummary, SearchHit, StoredFile
from oboyu.index.reports import IndexProgress, IndexStats
from oboyu.index.store import Store, open_for_reading

__all__ = [
    "ChunkRecord", "DocumentRecord", "EmbeddingCache", "IndexLock", "IndexProgress", "IndexStats", "Indexer",
    "Move", "Plan", "Root", "RootSummary", "SearchHit", "Store", "StoredFile", "open_for_reading",
]
