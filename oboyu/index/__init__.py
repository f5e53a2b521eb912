"""The index: records, the DuckDB schema and its migrations, the store (writes and roots), the
plan of an update (disk against index), the indexer, the embedding cache, the lock and the watcher."""

import lazy_loader

# the names of __init__.pyi, each imported when first asked for: importing one of the package's
# modules runs this file, and a query must not load every module the package has
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
