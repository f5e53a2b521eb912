"""The one exception type the CLI turns into a one-line message."""


class OboyuError(Exception):
    """An error a person can act on; its message is shown as is, without a traceback."""


class IndexBusyError(OboyuError):
    """Another process holds the index file's write lock."""


class ArraysUnwritableError(OboyuError):
    """Nowhere to write an index's search arrays (a full disk, read-only folders): searches rank
    in the index file instead."""
