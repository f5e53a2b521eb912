"""Documents: finding files (crawl), decoding them, their text and structure (extract, one
dispatch for every format; the readers of each format in `formats`), passages (chunking), the
words keyword search reads (keywords) and the text a person is shown (viewing)."""

import lazy_loader

# the names of __init__.pyi, each imported when first asked for: importing one of the package's
# modules runs this file, and a query must not load every module the package has
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
