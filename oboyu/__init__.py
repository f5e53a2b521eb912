"""oboyu (覚ゆ): Japanese-first semantic search over the documents on your own machine."""

__version__ = "0.1.0"
