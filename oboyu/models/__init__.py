"""Models: manifests and one staged install, the embedding engine and its providers, rerankers,
the catalogue and loading; `default/` builds the default model (no torch), `convert/` any other."""

import lazy_loader

# the names of __init__.pyi, each imported when first asked for: importing one of the package's
# modules runs this file, and a query must not load every module the package has
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
