"""Where each document's text was cut into chunks, kept beside the embedding cache's vectors: a
re-index of unchanged text (a deleted index, `--full`) needs neither the chunker's token counts
nor the fast tokenizer they load (0.7 s to load, 0.25 s to free, 0.6 s to count 150 files of
manual pages: a third of a warm re-index; docs/decisions.md).

Keyed by the extracted text and its blocks, the model (its tokenizer counts the tokens) and the
chunker: its sizes and the source of the code that cuts (chunking, and the embedder's counting),
so that a change to either makes new keys instead of old cuts."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from oboyu.documents import chunking
from oboyu.documents.chunking import Chunk, Chunker
from oboyu.documents.extracted import Extracted
from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.models import embedding


@functools.cache
def _code_version() -> str:
    digest = hashlib.blake2b(digest_size=8)
    for module in (chunking, embedding):
        try:
            digest.update(Path(module.__file__ or "").read_bytes())
        except OSError:  # no source beside the code: every run cuts anew
            return "unknown"
    return digest.hexdigest()


class ChunkCache:
    def __init__(self, cache: EmbeddingCache, model_id: str, chunker: Chunker):
        self.cache = cache
        version = _code_version()
        self.fingerprint = None if version == "unknown" else f"{model_id} {chunker.target} {chunker.max} {version}"

    def key(self, doc: Extracted) -> bytes:
        digest = hashlib.blake2b(f"{self.fingerprint}\0".encode(), digest_size=16)
        digest.update(doc.text.encode("utf-8", "surrogatepass"))
        for b in doc.blocks:
            digest.update(f"\0{b.start_char} {b.end_char} {b.start_line} {b.end_line} {b.heading_level} {b.kind} {b.exact} "
                          f"{b.text}".encode("utf-8", "surrogatepass"))
        return digest.digest()

    def get(self, doc: Extracted) -> list[Chunk] | None:
        """The chunks the chunker made of this text before, or None."""
        if self.fingerprint is None:
            return None
        found = self.cache.get_chunks(self.key(doc))
        if found is None:
            return None
        headings, rows = json.loads(found)
        return [Chunk(ordinal, doc.text[start:end], headings[heading], first, last, start, end, tokens)
                for ordinal, (heading, first, last, start, end, tokens) in enumerate(rows)]

    def put(self, doc: Extracted, chunks: list[Chunk]) -> None:
        if self.fingerprint is None:
            return
        headings = list(dict.fromkeys(c.heading for c in chunks))
        number = {heading: i for i, heading in enumerate(headings)}
        rows = [(number[c.heading], c.start_line, c.end_line, c.start_char, c.end_char, c.tokens) for c in chunks]
        self.cache.put_chunks(self.key(doc), json.dumps([headings, rows], ensure_ascii=False, separators=(",", ":")))
