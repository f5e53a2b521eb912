"""The one exception type the CLI turns into a one-line message."""


class OboyuError(Exception):
    """An error a person can act on; its message is shown as is, without a traceback."""


class IndexBusyError(OboyuError):
    """Another process holds the index file's write lock."""
