"""The whole conversion: fetch, tokenizer, export, optimize, quantize, validate, install.

`convert()` is what `oboyu models pull/convert` and `scripts/onnx_conversion/convert.py` run. Work
happens in a hidden folder beside the installed models; only a model that passed every check is
renamed into place (`oboyu.models.install`), so a failed or killed conversion installs nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oboyu import __version__
from oboyu.errors import OboyuError
from oboyu.models.convert import export, optimize, quantize, validate
from oboyu.models.convert.source import SourceModel, fetch
from oboyu.models.convert.tokenizer_files import check_tokenizer, write_runtime_tokenizer
from oboyu.models.embedding import Embedder
from oboyu.models.install import file_record, fingerprint, install, install_folder_name, save_with_external_data, work_folder
from oboyu.models.manifest import MODEL_FILE, TOKENIZER_FILE
from oboyu.models.probe import probe_texts
from oboyu.paths import models_dir

FORMAT = 1  # of converted models' manifests
QUANTIZATIONS = ("dynamic", "static", "none")
PROBE_TEXTS = 64
PROBE_MAX_TOKENS = 256  # the engine's chunks are at most this long


@dataclass
class Options:
    quantization: str = "dynamic"  # dynamic | static (QDQ, calibrated) | none (fp32)
    calibration: Path | None = None  # texts for static quantization; the probe texts when None
    calibration_method: str = "minmax"
    calibration_texts: int = 128
    fp16: bool = False  # also install a float16 variant for GPU providers
    eval_set: Path | None = None  # a folder like ../shared/eval/dev/manpages-ja, for Recall@10
    min_cosine: float = validate.MIN_MEAN_COSINE
    optimize: bool = True
    name: str | None = None  # the installed model's id (default: the hub id or the folder's name)


def convert(spec: str, revision: str | None = None, options: Options | None = None,
            progress: Callable[[str], None] = lambda _msg: None, catalogue_entry: dict | None = None,
            root: Path | None = None) -> dict:
    """Convert and install; returns the installed manifest (with `path`)."""
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # errors only: the optimizer's leftovers are not the user's concern
    options = options or Options()
    if options.quantization not in QUANTIZATIONS:
        raise OboyuError(f"unknown quantization {options.quantization!r}; use one of {', '.join(QUANTIZATIONS)}")
    started = time.perf_counter()
    timings: dict[str, float] = {}

    def step(name: str, message: str):
        progress(message)
        timings[name] = time.perf_counter()

    def done(name: str) -> None:
        timings[name] = round(time.perf_counter() - timings[name], 2)

    step("fetch", f"reading {spec}" if Path(spec).expanduser().is_dir() else f"fetching {spec}")
    source = fetch(spec, revision, catalogue_entry)
    done("fetch")
    rerank = source.task == "rerank"
    if rerank and options.quantization == "static":
        raise OboyuError("static quantization of rerankers is not supported; use --quantization dynamic or none")
    root = root or models_dir()
    with work_folder(root, ".convert-") as work:
        step("tokenizer", f"{source.describe()}; checking the tokenizer")
        tokenizer_file = write_runtime_tokenizer(source, work)
        base = _manifest(source, options)
        staging = Embedder(work, manifest=base)  # the runtime tokenizer, as the engine will run it
        texts = probe_texts(PROBE_TEXTS, min(source.max_tokens, PROBE_MAX_TOKENS) - 8, staging.count_tokens)
        prefixed = [(source.passage_prefix if i % 2 else source.query_prefix) + t for i, t in enumerate(texts)]
        tokenizer_report = check_tokenizer(source, staging.tokenizer, prefixed)
        done("tokenizer")
        if rerank:  # pairs, cut to the model's length as the reranker cuts them: each probe text asks about the next
            from oboyu.models.rerank import Reranker

            pairs = Reranker(work, base).tokenizer.encode_batch(list(zip(texts, texts[1:] + texts[:1])))
            batches: Sequence[tuple[np.ndarray, ...]] = export.pair_batches(pairs, staging.pad_id)
        else:
            batches = export.probe_batches([e.ids for e in staging.tokenizer.encode_batch(prefixed)], staging.pad_id)

        step("export", "exporting to ONNX and comparing with PyTorch")
        encoder = export.TorchEncoder(source)
        fp32 = _variant(work, "fp32", tokenizer_file)
        export_report = export.export_onnx(encoder, fp32 / MODEL_FILE)
        export_report["against_pytorch"] = export.compare_with_torch(encoder, fp32 / MODEL_FILE, batches)
        done("export")
        best_fp32 = fp32
        optimize_report: dict = {"applied": False}
        if options.optimize:
            step("optimize", "optimizing (onnxruntime transformer fusions)")
            optimized = _variant(work, "optimized", tokenizer_file)
            optimize_report = optimize.optimize(source, fp32 / MODEL_FILE, optimized / MODEL_FILE)
            try:
                optimize_report["against_pytorch"] = export.compare_with_torch(encoder, optimized / MODEL_FILE, batches)
                optimize_report["applied"] = True
                best_fp32 = optimized
            except OboyuError as exc:  # a fusion that changes results is not used
                optimize_report["applied"] = False
                optimize_report["reason"] = str(exc)
            done("optimize")
        del encoder

        quantize_report: dict = {"method": options.quantization}
        chosen = best_fp32
        if options.quantization != "none":
            step("quantize", f"quantizing to INT8 ({options.quantization})")
            chosen = _variant(work, "int8", tokenizer_file)
            if options.quantization == "dynamic":
                quantize_report.update(quantize.quantize_dynamic_int8(best_fp32 / MODEL_FILE, chosen / MODEL_FILE))
            else:
                calibration = _calibration_batches(staging, options, texts)
                quantize_report.update(quantize.quantize_static_int8(best_fp32 / MODEL_FILE, chosen / MODEL_FILE,
                                                                     calibration, options.calibration_method))
                quantize_report["calibration"] = str(options.calibration) if options.calibration else "probe texts"
            done("quantize")
        fp16_report = None
        if options.fp16:
            step("fp16", "converting to float16")
            fp16 = _variant(work, "fp16", tokenizer_file)
            fp16_report = quantize.convert_fp16(best_fp32 / MODEL_FILE, fp16 / MODEL_FILE)
            done("fp16")

        step("validate", "validating against fp32" + (f" and on {options.eval_set}" if options.eval_set else ""))
        retrieval = validate.eval_set(options.eval_set) if options.eval_set else validate.probe_set(
            probe_texts(240, 120, lambda ts: [len(t) // 2 for t in ts], seed=5))
        if rerank:
            validation = validate.compare_rerankers(Reranker(best_fp32, base), Reranker(chosen, base), retrieval)
            failure = validate.reranker_gate_failure(validation, options.min_cosine)
        else:
            reference = Embedder(best_fp32, manifest=base)  # the same vectors as fp32 (checked), faster
            validation = validate.compare(reference, Embedder(chosen, manifest=base), texts, retrieval)
            failure = validate.gate_failure(validation, options.min_cosine)
        done("validate")
        if failure:
            raise OboyuError(f"{source.model_id} ({options.quantization}) failed the gate: {failure}; not installed")

        step("install", "installing")
        manifest = base | {
            "precision": "fp32" if options.quantization == "none" else f"int8 {options.quantization}",
            "tokenizer_check": tokenizer_report,
            "export": export_report,
            "optimization": optimize_report,
            "quantization": quantize_report,
            "validation": validation,
        }
        final = root / install_folder_name(manifest["id"], options.quantization)
        staged = work / "install"  # in the work folder, beside `final`: renamed whole, or removed with work
        staged.mkdir()
        save_with_external_data(chosen / MODEL_FILE, staged / MODEL_FILE)
        shutil.copyfile(tokenizer_file, staged / TOKENIZER_FILE)
        if fp16_report is not None:
            save_with_external_data(fp16 / MODEL_FILE, staged / "model.fp16.onnx")
            manifest["variants"] = {"fp16": {"file": "model.fp16.onnx"} | fp16_report}
        manifest["files"] = {p.name: file_record(p) for p in sorted(staged.iterdir())}
        manifest["fingerprint"] = fingerprint(manifest["files"])
        done("install")
        manifest["timings"] = timings | {"total": round(time.perf_counter() - started, 2)}
        install(staged, final, manifest)
        progress(f"installed {manifest['id']} at {final} in {manifest['timings']['total']:.1f}s")
        return manifest | {"path": str(final)}


def _manifest(source: SourceModel, options: Options) -> dict:
    """What the engine needs to run the model (files and fingerprint are added at install)."""
    from oboyu.models.convert.tokenizer_files import special_token

    config = json.loads((source.folder / "tokenizer_config.json").read_text(encoding="utf-8")) \
        if (source.folder / "tokenizer_config.json").is_file() else {}
    return {
        "format": FORMAT,
        "id": options.name or source.model_id,
        "kind": "reranker" if source.task == "rerank" else "embedder",
        "source": {"id": source.model_id, "revision": source.revision, "folder": str(source.folder)},
        "architecture": source.describe(),
        "dimensions": 1 if source.task == "rerank" else source.hidden,  # a reranker gives one score
        "max_tokens": source.max_tokens,
        "pooling": "none" if source.task == "rerank" else source.pooling,
        "normalized": True,
        "prefixes": {"query": source.query_prefix, "passage": source.passage_prefix},
        "word_segmenter": source.word_segmenter,
        "pad_token": special_token(config, "pad_token", None),
        "files": {MODEL_FILE: {"sha256": "unset"}},  # staging only: replaced at install
        "oboyu_version": __version__,
    }


def _variant(work: Path, name: str, tokenizer_file: Path) -> Path:
    """A folder the engine can load: the variant's model.onnx beside the tokenizer."""
    folder = work / name
    folder.mkdir()
    os.link(tokenizer_file, folder / TOKENIZER_FILE)
    return folder


def _calibration_batches(staging: Embedder, options: Options, probe: list[str]):
    texts = quantize.calibration_texts(options.calibration, options.calibration_texts) if options.calibration else probe
    limit = min(staging.info.max_tokens, PROBE_MAX_TOKENS)
    ids = [staging.truncate(e.ids, limit) for e in staging.tokenizer.encode_batch(
        [(staging.info.passage_prefix if i % 2 else staging.info.query_prefix) + t for i, t in enumerate(texts)])]
    return quantize.calibration_batches(ids, staging.pad_id, options.calibration_method)
