"""One file's failure costs that file: a value the index refuses, or a passage the model fails
on, skips the file that brought it, with the reason, and the run goes on. A failure every file
meets (a full disk, an engine that fails on everything) is the run's, and ends it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np

from oboyu.index.preparing import Prepared, Unindexable
from oboyu.index.records import ChunkRecord, DocumentRecord
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.models.probe import probe_sentences

_log = logging.getLogger(__name__)

UNEMBEDDABLE = "the model failed on its text"  # the engine's error is logged once per group
# what the index says of a value it will not hold: the file that brought it is skipped, not the run
REFUSED_VALUES = (duckdb.DataError, duckdb.ConstraintException, duckdb.InvalidInputException, UnicodeError, OverflowError)

Rows = tuple[DocumentRecord, list[ChunkRecord], np.ndarray]


def write_each_alone_on_refusal(store: Store, items: list[Rows],
                                prepared: list[Prepared]) -> tuple[list[Prepared], list[Unindexable]]:
    """The files written in one transaction; when the index refuses a value in it, each file
    alone, so that the file it refuses is skipped with the reason (returned, to be remembered)
    and the others are kept."""
    try:
        store.write_documents(items)
        return prepared, []
    except REFUSED_VALUES:
        pass  # which file it was is found below
    written: list[Prepared] = []
    refused: list[Unindexable] = []
    for item, p in zip(items, prepared):
        try:
            store.write_documents([item])
            written.append(p)
        except REFUSED_VALUES as exc:  # its old rows, if any, stay: it is tried again next run
            refused.append(Unindexable(p.entry, f"cannot be stored: {type(exc).__name__}: {exc}"))
    return written, refused


def embedded_alone(embedder: Embedder, texts: list[str], failure: Exception) -> np.ndarray:
    """A group the engine failed on, text by text: a row of NaN for each text that fails alone
    (its file is then skipped). When every one fails and so does a text known to be good, the
    failure is the engine's: raised (a group of one bad file's passages is not the engine's)."""
    out = np.full((len(texts), embedder.info.dimensions), np.nan, dtype=np.float32)
    for row, text in enumerate(texts):
        vector = attempt(lambda one: embedder.embed_ids(embedder.token_ids(one)), [text])
        if not isinstance(vector, Exception):
            out[row] = vector[0]
    if np.isnan(out).any(axis=1).all():
        known_good = [embedder.passage_text(probe_sentences()[0])]
        if isinstance(attempt(lambda one: embedder.embed_ids(embedder.token_ids(one)), known_good), Exception):
            raise failure
    failed = int(np.isnan(out).any(axis=1).sum())
    _log.warning(f"the model failed on {failed} passage{'' if failed == 1 else 's'}: {type(failure).__name__}: {failure}")
    return out


def attempt(step: Callable[[Any], Any], texts: Any) -> Any:
    """`step(texts)`, or the exception it raised, to be handled where the texts are known."""
    try:
        return step(texts)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # one file's text must not stop the run: sorted out by embedded_alone
        return exc
