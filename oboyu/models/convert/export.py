"""Step 2: export the PyTorch model to ONNX (dynamic batch and sequence axes, pooling and L2
normalisation inside the graph) and prove it computes what PyTorch computes.

Needs the `convert` extra (torch, transformers); nothing at index or query time imports this.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from oboyu.errors import OboyuError
from oboyu.models.convert.source import SourceModel
from oboyu.models.embedding import pad_batch

OPSET = 17  # LayerNormalization is a standard op from 17
MIN_MEAN_COSINE = 0.9999  # ONNX fp32 against PyTorch fp32


def _torch():
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise OboyuError("converting a model needs PyTorch and transformers in oboyu's environment: pip install "
                         "torch==2.13.0 'oboyu[convert]' (torch first: a bare torch pulls CUDA packages); installed "
                         "as a tool: uv tool install 'oboyu[convert]' --with torch==2.13.0") from exc
    transformers.logging.set_verbosity_error()
    return torch, transformers


class TorchEncoder:
    """The model in PyTorch as sentence-transformers runs it: encoder, pooling, L2 normalisation;
    or, for a reranker, the cross-encoder's one score a pair."""

    def __init__(self, source: SourceModel, threads: int | None = None):
        torch, transformers = _torch()
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.rerank = source.task == "rerank"
        token_types = source.architecture != "modernbert"
        if self.rerank:
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                str(source.folder), attn_implementation="eager", dtype=torch.float32)
            self.pair_types = token_types and getattr(model.config, "type_vocab_size", 1) > 1
            self.module = _Scored(torch, model, self.pair_types).eval()
        else:
            model = transformers.AutoModel.from_pretrained(str(source.folder), attn_implementation="eager",
                                                           dtype=torch.float32)
            self.pair_types = False
            self.module = _Pooled(torch, model, source.pooling, token_types).eval()
        self.input_names = ["input_ids", "attention_mask"] + (["token_type_ids"] if self.pair_types else [])
        self.output_name = "score" if self.rerank else "sentence_embedding"

    def run(self, *inputs: np.ndarray) -> np.ndarray:
        with self.torch.inference_mode():
            return self.module(*(self.torch.from_numpy(a) for a in inputs[: len(self.input_names)])).numpy()


def _Pooled(torch, model, pooling: str, token_types: bool):
    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            extra = {"token_type_ids": torch.zeros_like(input_ids)} if token_types else {}
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
            if pooling == "cls":
                pooled = hidden[:, 0]
            elif pooling == "lasttoken":
                last = attention_mask.sum(dim=1) - 1
                pooled = hidden[torch.arange(hidden.shape[0]), last]
            else:
                weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=-1)

    return Pooled()


def _Scored(torch, model, token_types: bool):
    class Scored(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            extra = {"token_type_ids": token_type_ids} if token_types else {}
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits[:, 0]

    return Scored()


def export_onnx(encoder: TorchEncoder, out: Path) -> dict:
    """Write the fp32 ONNX model to `out` and check it with onnx.checker."""
    import onnx

    torch = encoder.torch
    started = time.perf_counter()
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11], [5, 6, 7, 8, 0, 0, 0]])  # padded: the mask path is traced
    mask = (torch.arange(7) < torch.tensor([[7], [4]])).long()
    ids = ids % encoder.module.model.config.vocab_size
    example = (ids, mask, (torch.arange(7) >= 4).long().expand(2, 7).contiguous())[: len(encoder.input_names)]
    axes = {name: {0: "batch", 1: "sequence"} for name in encoder.input_names} | {encoder.output_name: {0: "batch"}}
    with warnings.catch_warnings():
        # the tracer warns of shape-dependent branches; compare_with_torch checks other shapes for real
        warnings.simplefilter("ignore")
        torch.onnx.export(encoder.module, example, str(out), input_names=encoder.input_names,
                          output_names=[encoder.output_name], dynamic_axes=axes, opset_version=OPSET, dynamo=False,
                          do_constant_folding=True)
    onnx.checker.check_model(str(out))
    return {"seconds": round(time.perf_counter() - started, 2), "opset": OPSET, "bytes": out.stat().st_size}


def compare_with_torch(encoder: TorchEncoder, onnx_file: Path, batches: Sequence[tuple[np.ndarray, ...]]) -> dict:
    """Max abs difference and cosine of the ONNX model's vectors against PyTorch's (for a
    reranker: of its scores, and their correlation)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    diffs, cosines, theirs_all, ours_all = [], [], [], []
    for batch in batches:
        theirs = encoder.run(*batch)
        (ours,) = session.run(None, dict(zip(encoder.input_names, batch)))
        diffs.append(float(np.abs(ours - theirs).max()))
        if encoder.rerank:
            theirs_all.extend(theirs.tolist())
            ours_all.extend(ours.tolist())
        else:
            cosines.extend((ours * theirs).sum(axis=1).tolist())
    if encoder.rerank:
        report = {"max_abs_diff": max(diffs), "score_correlation": correlation(ours_all, theirs_all),
                  "pairs": len(ours_all)}
        agreement, what = report["score_correlation"], "score correlation"
    else:
        report = {"max_abs_diff": max(diffs), "mean_cosine": float(np.mean(cosines)),
                  "min_cosine": float(min(cosines)), "texts": len(cosines)}
        agreement, what = report["mean_cosine"], "mean cosine"
    if agreement < MIN_MEAN_COSINE:
        raise OboyuError(f"the exported ONNX model differs from PyTorch: {what} {agreement:.6f} "
                         f"< {MIN_MEAN_COSINE}; not installed")
    return report


def correlation(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's r; 1.0 for two constant series that are equal."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.std() == 0 or y.std() == 0:
        return 1.0 if np.allclose(x, y) else 0.0
    return float(np.corrcoef(x, y)[0, 1])


def probe_batches(token_ids: list[list[int]], pad_id: int, size: int = 8) -> list[tuple[np.ndarray, np.ndarray]]:
    """Token id lists as padded batches (sorted by length, as the engine batches them)."""
    ordered = sorted(token_ids, key=len)
    return [pad_batch(ordered[i : i + size], pad_id) for i in range(0, len(ordered), size)]


def pair_batches(encodings: Sequence, pad_id: int, size: int = 8) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Encoded query-passage pairs as padded batches with their token types (for a reranker)."""
    ordered = sorted(encodings, key=lambda e: len(e.ids))
    batches = []
    for start in range(0, len(ordered), size):
        group = ordered[start : start + size]
        ids, mask = pad_batch([e.ids for e in group], pad_id)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(group):
            types[row, : len(encoding.type_ids)] = encoding.type_ids
        batches.append((ids, mask, types))
    return batches
