"""Which onnxruntime execution provider embeds on this machine, and what the machine offers.

The choice follows the platform: CoreML on Apple silicon, CUDA where onnxruntime-gpu offers it,
DirectML on Windows, else the CPU; TensorRT only when asked for. `OBOYU_PROVIDER` (or `oboyu --provider`) overrides
it. A provider other than the CPU is only trusted after it has embedded a probe batch like the CPU
does (see `Embedder.session`); its verdict is remembered per model, graph, provider and
onnxruntime version, so the probe runs once.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import subprocess
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from oboyu.errors import OboyuError, first_line

CPU = "CPUExecutionProvider"
ALIASES = {
    "cpu": CPU,
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
    "dml": "DmlExecutionProvider",
}
GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider")  # where an fp16 variant is worth it
ENV_OVERRIDE = "OBOYU_PROVIDER"


@dataclass(frozen=True)
class Choice:
    provider: str  # the execution provider to try first
    reason: str  # why, for `oboyu doctor` and notices


def provider_name(name: str) -> str:
    """`cuda` → `CUDAExecutionProvider`; full names pass through."""
    return ALIASES.get(name.strip().lower(), name.strip())


def choose(available: Sequence[str], system: str, machine: str, override: str | None = None) -> Choice:
    """The provider for a platform (`platform.system()`, `platform.machine()`) given what
    onnxruntime offers; an override must name an available provider (`openvino` names another
    engine, `openvino_engine`: onnxruntime, used only without it, keeps the platform's choice)."""
    if override and override.strip().lower() == "openvino":
        override = None
    if override:
        wanted = provider_name(override)
        if wanted not in available:
            raise OboyuError(f"provider {override} is not available in this onnxruntime "
                             f"(available: {', '.join(available)})")
        return Choice(wanted, f"asked for ({ENV_OVERRIDE} or --provider)")
    if system == "Darwin" and machine == "arm64" and "CoreMLExecutionProvider" in available:
        return Choice("CoreMLExecutionProvider", "Apple silicon")
    # not TensorRT: onnxruntime-gpu lists it whether or not TensorRT's own libraries are
    # installed (a separate package), and it builds an engine for each new input shape
    if "CUDAExecutionProvider" in available:
        return Choice("CUDAExecutionProvider", "an NVIDIA GPU build of onnxruntime")
    if system == "Windows" and "DmlExecutionProvider" in available:
        return Choice("DmlExecutionProvider", "Windows with DirectML")
    return Choice(CPU, "no accelerator provider for this platform")


def choose_here(override: str | None = None) -> Choice:
    import onnxruntime as ort

    return choose(ort.get_available_providers(), platform.system(), platform.machine(),
                  override if override is not None else os.environ.get(ENV_OVERRIDE))


def session_providers(provider: str) -> list:
    """The provider list a session gets: the chosen one first, the CPU after it for any node the
    accelerator cannot run (CoreML and CUDA leave some INT8 operators to the CPU)."""
    if provider == CPU:
        return [CPU]
    if provider == "TensorrtExecutionProvider":
        return [provider, "CUDAExecutionProvider", CPU]
    if provider == "CoreMLExecutionProvider":
        return [(provider, {"MLComputeUnits": "ALL"}), CPU]
    return [provider, CPU]


# onnxruntime fuses a residual's Add and LayerNormalization into SkipLayerNormalization where it
# knows the shapes; its CPU kernel ran 7x slower than the two (docs/decisions.md), so on the CPU
# the fusion is off: a converted model 1.13x faster, the default model's graph kept as built.
CPU_DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)


def disabled_optimizers(provider: str) -> list[str]:
    """onnxruntime's graph optimizations left out for sessions on `provider`."""
    return list(CPU_DISABLED_OPTIMIZERS) if provider == CPU else []


def cpu_session_options(threads: int | None = None):
    """onnxruntime session options for every model oboyu runs: all graph optimizations, one
    intra-op thread a physical core, threads that spin between operators (the fastest inference
    here) but stop when a run ends: left spinning they take both cores from the work that follows
    (measured: hybrid query p50 27 -> 17 ms, indexing unchanged). `threads`: fewer, for a process
    that shares the machine's cores with others (a cluster's workers)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or physical_cores()
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return options


def physical_cores() -> int:
    """Cores, not hardware threads: a second thread on a core shares its vector units, so
    onnxruntime's intra-op threads gain nothing from it. Bounded by this process's CPU affinity."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cores = _physical_cores_linux() if platform.system() == "Linux" else _sysctl_int("hw.physicalcpu")
    return max(1, min(usable, cores or usable))


def _physical_cores_linux() -> int | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    cores = set()
    for block in text.split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "core id" in fields:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def _sysctl_int(name: str) -> int | None:
    try:
        return int(subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5).stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


CPU_FEATURES = {  # /proc/cpuinfo flag (x86 `flags`, ARM `Features`) → what it means for INT8 inference
    "avx2": "AVX2",
    "avx512f": "AVX-512",
    "avx512_vnni": "AVX-512 VNNI",
    "avx_vnni": "AVX-VNNI",
    "amx_int8": "AMX-INT8",
    "asimd": "NEON",
    "asimddp": "NEON dot product",
    "i8mm": "I8MM",
}


def cpu_description() -> tuple[str, list[str]]:
    """The CPU's model name and the INT8-relevant features it has."""
    if platform.system() == "Linux":
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
        return linux_cpu(text)
    if platform.system() == "Darwin":
        name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True).stdout
        features = ["NEON"] + (["I8MM"] if _sysctl_int("hw.optional.arm.FEAT_I8MM") else [])
        return name.strip() or platform.machine(), features
    return platform.processor() or platform.machine(), []


def linux_cpu(cpuinfo: str) -> tuple[str, list[str]]:
    """The name and INT8 features in a Linux /proc/cpuinfo. An x86 kernel gives `model name` and
    `flags`; an arm64 one `Features` and the implementer and part codes, with no name."""
    first = dict((k.strip(), v.strip()) for k, v in
                 (line.split(":", 1) for line in cpuinfo.split("\n\n")[0].splitlines() if ":" in line))
    flags = set((first.get("flags") or first.get("Features") or "").split())
    name = first.get("model name")
    if not name and "CPU implementer" in first:
        name = f"{platform.machine() or 'ARM'} (implementer {first['CPU implementer']}, part {first.get('CPU part', '?')})"
    return name or platform.processor() or platform.machine(), [n for f, n in CPU_FEATURES.items() if f in flags]


class Verdicts:
    """Which (model, provider, onnxruntime version) passed or failed the probe, kept on disk."""

    def __init__(self, path: Path):
        self.path = path

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def get(self, key: str) -> dict | None:
        return self._read().get(key)

    def put(self, key: str, verdict: dict) -> None:
        """Remember a verdict; a cache dir that cannot be written only means probing again."""
        verdicts = self._read()
        verdicts[key] = verdict
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(verdicts, indent=1), encoding="utf-8")
            os.replace(temporary, self.path)  # readers see the old file or the new, never half
        except OSError:
            temporary.unlink(missing_ok=True)


# onnxruntime's own log: errors only (its warnings are not the user's concern), and nothing while a
# provider is tried, whose failure is said here in one line instead
QUIET, SILENT = 3, 4


def started(make: Callable[[], object], provider: str):
    """What `make` returns (an onnxruntime session) if it really runs on `provider`. onnxruntime,
    when a provider cannot start (a missing CUDA library, say), logs it, prints a banner and
    quietly goes on with the CPU: here its log is held back and the reason is one line."""
    import onnxruntime as ort

    printed = io.StringIO()
    ort.set_default_logger_severity(SILENT)
    try:
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session = make()
    finally:
        ort.set_default_logger_severity(QUIET)
    if provider in session.get_providers():  # type: ignore[attr-defined]
        return session
    raise OboyuError(start_failure(provider, printed.getvalue()))


def start_failure(provider: str, printed: str) -> str:
    """One line on why a provider did not start: this onnxruntime lacks it, or its library does
    not load (the loader's own words), or what onnxruntime printed."""
    import onnxruntime as ort

    if provider not in ort.get_available_providers():
        return f"this onnxruntime ({ort.__version__}) has no {provider}"
    library = _library_problem(provider, Path(ort.__file__).parent / "capi")
    if library:
        return library
    errors = [line.strip() for line in printed.splitlines() if line.startswith("EP Error ")]
    if errors:
        return errors[0].removeprefix("EP Error ").split(" when using ")[0]
    return "onnxruntime could not start it"


def _library_problem(provider: str, folder: Path) -> str | None:
    """Why the provider's own library in `folder` does not load (`libcublasLt.so.13: cannot open
    shared object file` where CUDA is not installed), or None."""
    import ctypes

    name = {"CUDAExecutionProvider": "cuda", "TensorrtExecutionProvider": "tensorrt"}.get(provider)
    for library in sorted(folder.glob(f"*onnxruntime_providers_{name}.*")) if name else []:
        try:
            ctypes.CDLL(str(library))
        except OSError as exc:
            return str(exc).strip().splitlines()[0]
    return None


def provider_problem(provider: str) -> str | None:
    """Why `provider` cannot start here (a missing library, no device), or None: tried on a graph
    of one node, before anything is built for it."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [value],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # the oldest onnxruntime this package allows reads it
    try:
        started(lambda: ort.InferenceSession(model.SerializeToString(), providers=session_providers(provider)), provider)
    except Exception as exc:  # onnxruntime raises its own kinds
        return first_line(exc)
    return None
