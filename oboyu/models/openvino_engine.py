"""OpenVINO as the engine on x86 CPUs: the default model's INT8 graph, spelled in standard QDQ
operators with the same weights and calibrated scales, run by OpenVINO's CPU plugin.

Measured on the project's machine (AMD EPYC, AVX-512 VNNI and BF16, 2 cores): 1.5x the tokens/s
of onnxruntime on the same chunks (docs/decisions.md). Not on every CPU: without VNNI its INT8
products fall back to a generic gemm (with AVX-512 hidden from its kernels on the same cores, 0.3x
its own speed), so each machine times both engines once and OpenVINO embeds only where it is
clearly faster (`OPENVINO_MIN_SPEEDUP`).
Its vectors are not onnxruntime's to the last bit (min cosine about 0.997), so a model run on it
has an identity of its own (`ModelInfo.engine`): an index keeps the engine it was built with, and
the embedding cache never mixes the two. Within one engine a text's vector does not depend on its
batch-mates (tests/test_openvino.py).

Only OpenVINO's runtime is loaded (`import_openvino`): a plain `import openvino` also imports its
model converter, whose import sends a usage event to Google Analytics and writes a client id under
~/intel unless the user has opted out.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from types import ModuleType

import numpy as np

from oboyu.errors import OboyuError
from oboyu.models.manifest import ONNXRUNTIME, OPENVINO

X86 = ("x86_64", "amd64", "i686", "x86")
# OpenVINO embeds only where it beats onnxruntime by this much: its vectors fix an index's identity,
# and onnxruntime starts faster, so a near tie goes to onnxruntime
OPENVINO_MIN_SPEEDUP = 1.1
UNTIMED = "an x86 CPU with OpenVINO installed, not yet timed here"  # the reason that sends the Embedder to probe
# onnxruntime builds that bring an accelerator: with one of them installed, onnxruntime leads
ACCELERATED_ONNXRUNTIME = ("onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-qnn")


def import_openvino() -> ModuleType:
    """OpenVINO's runtime, without its model converter (`openvino.tools.ovc`): importing that
    sends telemetry (openvino-telemetry, on unless opted out), and oboyu never converts with it.
    A None in sys.modules makes its import an ImportError, which openvino's __init__ expects and
    passes over; in a process that imported openvino already, nothing is left to prevent."""
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino.tools.ovc", None)  # type: ignore[arg-type]
    import openvino

    return openvino


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def accelerated_onnxruntime() -> str | None:
    for name in ACCELERATED_ONNXRUNTIME:
        try:
            metadata.version(name)
            return name
        except metadata.PackageNotFoundError:
            continue
    return None


@functools.cache
def onnxruntime_version() -> str:
    """The installed onnxruntime build's version, read without importing it."""
    for name in ("onnxruntime", *ACCELERATED_ONNXRUNTIME):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def choose_engine(manifest: dict, requested: str | None, machine: str, system: str, installed: bool,
                  accelerated: str | None, verdict: dict | None = None) -> tuple[str, str]:
    """The engine a model runs on here, and why: OpenVINO when asked for (`--provider openvino`),
    or by default on an x86 CPU where it is installed, the model has an OpenVINO form and this
    machine's probe (`verdict`, None before it has run) found it right and faster than
    onnxruntime; onnxruntime when another provider is asked for, on Apple silicon and ARM, where
    an accelerated onnxruntime build is installed, and where OpenVINO failed its probe or lost."""
    has_form = OPENVINO in manifest.get("engines", {})
    if requested and requested.strip().lower() == OPENVINO:
        if not has_form:
            raise OboyuError(f"model {manifest['id']} has no OpenVINO form; only the default model has one")
        if not installed:
            raise OboyuError("openvino is not installed; `pip install openvino` installs it")
        return OPENVINO, "asked for (OBOYU_PROVIDER or --provider)"
    if requested:
        return ONNXRUNTIME, "another provider asked for"
    if not has_form:
        return ONNXRUNTIME, "the model has no OpenVINO form"
    if machine.lower() not in X86 or system == "Darwin":
        return ONNXRUNTIME, "not an x86 CPU (OpenVINO leads only there)"
    if accelerated:
        return ONNXRUNTIME, f"{accelerated} is installed"
    if not installed:
        return ONNXRUNTIME, "openvino is not installed (`pip install openvino`: 1.5x the speed on CPUs with VNNI)"
    if verdict is not None and not verdict["ok"]:
        return ONNXRUNTIME, "OpenVINO failed its probe here (provider-checks.json in the cache dir says why)"
    speedup = None if verdict is None else verdict.get("speedup")
    if speedup is None:
        return OPENVINO, UNTIMED
    if speedup < OPENVINO_MIN_SPEEDUP:
        return ONNXRUNTIME, f"onnxruntime is faster here: OpenVINO measured {speedup:.2f}x its speed"
    return OPENVINO, f"measured {speedup:.2f}x onnxruntime's speed here"


def choose_engine_here(manifest: dict, requested: str | None = None) -> tuple[str, str]:
    from oboyu.models.providers import ENV_OVERRIDE

    wanted = requested if requested is not None else os.environ.get(ENV_OVERRIDE)
    installed = openvino_installed()
    verdict = ProbeVerdicts(manifest).get() if installed and OPENVINO in manifest.get("engines", {}) else None
    return choose_engine(manifest, wanted, platform.machine(), platform.system(), installed,
                         accelerated_onnxruntime(), verdict)


class ProbeVerdicts:
    """OpenVINO's probe verdicts for one model, kept with the accelerators' (provider-checks.json
    in the cache dir), per OpenVINO and onnxruntime version, padding and CPU (a cache dir on a
    network home is shared by machines whose CPUs choose differently): whether its vectors are
    right here, and its speed against onnxruntime's (`speedup`)."""

    def __init__(self, manifest: dict):
        from oboyu.models.manifest import ModelInfo
        from oboyu.models.providers import Verdicts, cpu_description
        from oboyu.paths import cache_dir

        self.store = Verdicts(cache_dir() / "provider-checks.json")
        model_id = ModelInfo.from_manifest(manifest, OPENVINO).model_id
        cpu, features = cpu_description()
        self.key = (f"{model_id} openvino-{metadata.version('openvino')} onnxruntime-{onnxruntime_version()} "
                    f"pad{OpenVinoSession.pad_multiple} streams on {cpu} ({', '.join(features)})")

    def get(self) -> dict | None:
        return self.store.get(self.key)

    def put(self, verdict: dict) -> None:
        self.store.put(self.key, verdict)


def probe_summary(manifest: dict) -> str:
    """What this machine's probe found for OpenVINO, in a line (`oboyu doctor`)."""
    if OPENVINO not in manifest.get("engines", {}):
        return "the model has no OpenVINO form"
    if not openvino_installed():
        return "not installed"
    verdict = ProbeVerdicts(manifest).get()
    if verdict is None or (verdict["ok"] and "speedup" not in verdict):
        return "not yet probed here (the first `oboyu index` does it)"
    if not verdict["ok"]:
        return f"failed its probe here: {verdict['reason']}"
    chosen = "new indexes use it" if verdict["speedup"] >= OPENVINO_MIN_SPEEDUP else "new indexes use onnxruntime"
    return f"measured {verdict['speedup']:.2f}x onnxruntime's speed here; {chosen}"


def speedup_over(candidate: Callable[[], object], reference: Callable[[], object], rounds: int = 2) -> float:
    """How many times faster `candidate` runs than `reference`. Each runs once first (OpenVINO
    compiles kernels for each new shape on first sight), then both in interleaved rounds, the
    best of each kept, so that a busy moment of the machine does not decide."""
    candidate()
    reference()
    best = {candidate: math.inf, reference: math.inf}
    for _ in range(rounds):
        for run in best:
            started = time.perf_counter()
            run()
            best[run] = min(best[run], time.perf_counter() - started)
    return best[reference] / best[candidate]


def open_session(model_dir: Path, manifest: dict, threads: int) -> OpenVinoSession:
    """The model's OpenVINO form compiled for this CPU (through the compiled-model cache)."""
    from oboyu.paths import cache_dir

    return OpenVinoSession(model_dir / manifest["engines"][OPENVINO]["file"], threads, cache_dir() / "openvino")


class OpenVinoSession:
    """An OpenVINO compiled model behind onnxruntime's `run(outputs, feeds)`. An infer request is
    not thread-safe, so each thread gets its own (a watcher indexes while the app embeds).

    Compiled for throughput: a stream per core, each batch on one stream, `run_all` keeping every
    stream busy (1.2x the tokens/s of one batch at a time on all cores, measured on the project's
    2-core machine, and the same vectors to the bit).

    Batches are padded to a multiple of `pad_multiple` tokens. The CPU plugin's bf16 kernels
    give a text another vector (max abs 0.012) when its padded length is not a multiple of 16,
    and the same vector, to the bit, at every multiple of 16 (measured on AVX-512 BF16). Padded
    so, a text's vector does not depend on its batch-mates. The probe checks that on each
    machine (`Embedder.openvino_problem`): a CPU whose kernels want another multiple keeps
    onnxruntime."""

    pad_multiple = 16

    def __init__(self, model_file: Path, threads: int, cache: Path | None):
        try:
            openvino = import_openvino()
        except ImportError as exc:
            raise OboyuError("openvino is not installed; `pip install openvino` installs it, "
                             "or `--provider cpu` uses onnxruntime") from exc
        config = {"INFERENCE_NUM_THREADS": str(threads), "PERFORMANCE_HINT": "THROUGHPUT"}
        if cache is not None:
            # the compiled form kept on disk: a new process starts in 0.12 s instead of 0.8 s
            try:
                cache.mkdir(parents=True, exist_ok=True)
                config["CACHE_DIR"] = str(cache)
            except OSError:
                pass
        try:
            self.compiled = openvino.Core().compile_model(str(model_file), "CPU", config)
        except RuntimeError as exc:
            if "CACHE_DIR" not in config:
                raise OboyuError(f"OpenVINO cannot load {model_file.name}: {_reason(exc)}; "
                                 "`--provider cpu` uses onnxruntime") from exc
            # the compiled form on disk may be another process's, half-written: compiled anew
            config.pop("CACHE_DIR")
            try:
                self.compiled = openvino.Core().compile_model(str(model_file), "CPU", config)
            except RuntimeError:
                raise OboyuError(f"OpenVINO cannot load {model_file.name}: {_reason(exc)}; "
                                 "`--provider cpu` uses onnxruntime") from exc
        self.precision = str(self.compiled.get_property("INFERENCE_PRECISION_HINT")).removeprefix("<Type: '").rstrip("'>")
        self.streams = int(self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        self._local = threading.local()

    def run(self, _outputs, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """One batch, on one stream: onnxruntime's interface, for callers with a single batch."""
        return self.run_all([feeds])

    def run_all(self, feeds: Iterable[dict[str, np.ndarray]]) -> list[np.ndarray]:
        """Each batch's output, in order; the batches run side by side, one a stream, and the
        next is drawn from `feeds` while the others run."""
        jobs = getattr(self._local, "jobs", None)
        if jobs is None:
            jobs = self._local.jobs = import_openvino().AsyncInferQueue(self.compiled, self.streams)
        outputs: dict[int, np.ndarray] = {}

        def keep(request, number: int) -> None:  # copied: the request's buffer is reused for its next batch
            outputs[number] = np.array(request.get_output_tensor(0).data, dtype=np.float32)

        jobs.set_callback(keep)
        count = 0
        for count, feed in enumerate(feeds, 1):
            jobs.start_async(feed, count - 1)
        jobs.wait_all()
        return [outputs[i] for i in range(count)]


def _reason(exc: Exception) -> str:
    """OpenVINO's message without the line that says where in its C++ it was raised."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith("Exception from src/")] or lines
    return said[0] if said else type(exc).__name__
