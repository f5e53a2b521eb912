"""`oboyu mcp`: the Model Context Protocol server, so AI assistants can search and read the index."""

from oboyu.mcp.server import OboyuTools, build_server, serve

__all__ = ["OboyuTools", "build_server", "serve"]
