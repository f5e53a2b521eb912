"""The one exception type the CLI turns into a one-line message."""


class OboyuError(Exception):
    """An error a person can act on; its message is shown as is, without a traceback."""


class IndexBusyError(OboyuError):
    """Another process holds the index file's write lock."""


class ArraysUnwritableError(OboyuError):
    """Nowhere to write an index's search arrays (a full disk, read-only folders): searches rank
    in the index file instead."""


def first_line(exc: BaseException) -> str:
    """An exception as one line for a notice: its message's first line, else its type's name."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
