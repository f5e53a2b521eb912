"""Step 4: INT8 quantization with onnxruntime: dynamic (weights per channel, activations scaled per
batch at run time; the default) or static QDQ (activation scales calibrated on texts the user
gives: MinMax, Entropy or Percentile); and fp16 for GPU providers."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from oboyu.errors import OboyuError
from oboyu.models.convert.export import probe_batches

METHODS = ("minmax", "entropy", "percentile")
CALIBRATION_BATCH = 8
FLOAT = 1  # onnx.TensorProto.FLOAT: the type of outputs of fused ops that shape inference cannot see


def quantize_dynamic_int8(model: Path, out: Path) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    started = time.perf_counter()
    with _quiet():
        quantize_dynamic(str(model), str(out), per_channel=True, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": FLOAT})
    return {"seconds": round(time.perf_counter() - started, 2), "bytes": out.stat().st_size}


def quantize_static_int8(model: Path, out: Path, batches: list[tuple[np.ndarray, np.ndarray]], method: str) -> dict:
    """QDQ INT8: weights per channel, activations with scales from `batches` (token ids, mask)."""
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static

    if method not in METHODS:
        raise OboyuError(f"unknown calibration method {method!r}; use one of {', '.join(METHODS)}")

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feed = iter(batches)

        def get_next(self):
            batch = next(self.feed, None)
            return None if batch is None else {"input_ids": batch[0], "attention_mask": batch[1]}

    calibrate = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                 "percentile": CalibrationMethod.Percentile}[method]
    started = time.perf_counter()
    with _quiet():
        quantize_static(str(model), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, calibrate_method=calibrate,
                        # the dense layers carry the cost; quantizing adds, norms and softmax costs accuracy
                        op_types_to_quantize=["MatMul", "Gather"],
                        extra_options={"DefaultTensorType": FLOAT, "CalibMaxIntermediateOutputs": 64})
    return {"seconds": round(time.perf_counter() - started, 2), "bytes": out.stat().st_size, "calibration_method": method,
            "calibration_texts": sum(len(ids) for ids, _ in batches)}


def convert_fp16(model: Path, out: Path) -> dict:
    """Float16 weights and activations (inputs and output stay int64 / float32), for GPUs."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    started = time.perf_counter()
    converted = convert_float_to_float16(onnx.load(str(model)), keep_io_types=True)
    onnx.save(converted, str(out))
    return {"seconds": round(time.perf_counter() - started, 2), "bytes": out.stat().st_size}


def calibration_texts(path: Path, limit: int) -> list[str]:
    """Texts from a file or folder the user gives: .txt/.md files (paragraphs) or .jsonl(.gz) with
    a `text` field (the eval set's docs), up to `limit`, spread over the whole corpus."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    texts: list[str] = []
    for file in files:
        texts.extend(_texts_of(file))
    texts = [t for t in texts if len(t.strip()) >= 8]
    if not texts:
        raise OboyuError(f"no calibration text found in {path} (.txt, .md, or .jsonl with a text field)")
    step = max(1, len(texts) // limit)
    return texts[::step][:limit]


def _texts_of(file: Path) -> Iterator[str]:
    name = file.name.lower()
    try:
        if name.endswith((".jsonl", ".jsonl.gz")):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(file, "rt", encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        text = json.loads(line).get("text", "")
                        yield from (p for p in text.split("\n\n") if p.strip())
        elif name.endswith((".txt", ".md")):
            yield from (p for p in file.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip())
    except (OSError, ValueError) as exc:
        raise OboyuError(f"cannot read calibration texts from {file}: {exc}") from exc


def calibration_batches(token_ids: list[list[int]], pad_id: int, method: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Batches of similar lengths; for the histogram methods (entropy, percentile), all of one
    length, as onnxruntime stacks every batch's activations into one array."""
    batches = probe_batches(token_ids, pad_id, CALIBRATION_BATCH)
    if method == "minmax":
        return batches
    if len(batches) > 1 and len(batches[-1][0]) < CALIBRATION_BATCH:
        batches.pop()  # a short last batch would not stack either
    width = max(ids.shape[1] for ids, _ in batches)
    return [(np.pad(ids, ((0, 0), (0, width - ids.shape[1])), constant_values=pad_id),
             np.pad(mask, ((0, 0), (0, width - mask.shape[1])))) for ids, mask in batches]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """onnxruntime.quantization logs each node at INFO and prints progress: keep the terminal for ours."""
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)
