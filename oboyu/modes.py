"""How a query is ranked: one type for the modes, so that a mode is never a bare string past the
edge where a person or a file named it (a command-line option, the settings, an MCP call)."""

from __future__ import annotations

from enum import StrEnum

from oboyu.errors import OboyuError


class Mode(StrEnum):
    HYBRID = "hybrid"  # meaning and words fused, with the files' first passages (the default)
    VECTOR = "vector"  # meaning: the embedding model's cosine
    KEYWORD = "keyword"  # words: BM25 over MeCab words

    @property
    def uses_vectors(self) -> bool:
        """Whether the query needs the embedding model."""
        return self is not Mode.KEYWORD

    @classmethod
    def named(cls, name: str) -> Mode:
        """The mode a person named, or a one-line error that lists the modes."""
        try:
            return cls(name)
        except ValueError:
            raise OboyuError(f"unknown mode {name!r}; use one of {', '.join(MODE_NAMES)}") from None


MODE_NAMES = tuple(mode.value for mode in Mode)
